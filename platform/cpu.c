/*
 * cpu.c — whether the CPU has the instructions crypto/'s accelerators use
 * (platform_cpu_has_sha256, platform_cpu_has_aes_clmul), one file for both
 * sides: CPUID on x86 whatever the system (Windows has no feature flag for
 * SHA-NI), the kernel's HWCAP on Linux/AArch64, IsProcessorFeaturePresent
 * on Windows/AArch64.
 */
#include "platform/platform.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#elif defined(__aarch64__) && defined(_WIN32)
#include <windows.h>
#endif

bool platform_cpu_has_sha256(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return false;
    bool ssse3 = (ecx & bit_SSSE3) != 0, sse41 = (ecx & bit_SSE4_1) != 0;
    if (__get_cpuid_max(0, NULL) < 7 || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
        return false;
    return ssse3 && sse41 && (ebx & (1u << 29)) != 0; /* leaf 7 EBX bit 29: SHA */
#elif defined(__aarch64__) && defined(__linux__)
    return (getauxval(AT_HWCAP) & HWCAP_SHA2) != 0;
#elif defined(__aarch64__) && defined(_WIN32)
    return IsProcessorFeaturePresent(PF_ARM_V8_CRYPTO_INSTRUCTIONS_AVAILABLE) != 0;
#else
    return false;
#endif
}

bool platform_cpu_has_aes_clmul(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return false;
    return (ecx & bit_AES) != 0 && (ecx & bit_PCLMUL) != 0 && (ecx & bit_SSSE3) != 0 && (ecx & bit_SSE4_1) != 0;
#elif defined(__aarch64__) && defined(__linux__)
    unsigned long hwcap = getauxval(AT_HWCAP);
    return (hwcap & HWCAP_AES) != 0 && (hwcap & HWCAP_PMULL) != 0;
#elif defined(__aarch64__) && defined(_WIN32)
    return IsProcessorFeaturePresent(PF_ARM_V8_CRYPTO_INSTRUCTIONS_AVAILABLE) != 0;
#else
    return false;
#endif
}
