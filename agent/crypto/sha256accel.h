/*
 * sha256accel.h — SHA-256's block function on the CPU's SHA instructions
 * (x86 SHA extensions, ARMv8 crypto extensions) when the CPU has them, the
 * portable C code otherwise; chosen once per process, at first use.
 *
 * The release builds (scripts/release) link an mbedTLS built by
 * cross/build-deps with MBEDTLS_SHA256_PROCESS_ALT: mbedTLS then calls
 * mbedtls_internal_sha256_process for every 64-byte block, and this module
 * defines it (compiled with OUTPOST_SHA256_ALT). The Debian build links
 * Debian's mbedTLS, which has no such hook: there mbedTLS's own portable
 * code hashes, and this module is only reachable through its tests.
 *
 * OUTPOST_SHA256_PORTABLE=1 in the environment forces the portable code
 * (to test the fallback, or to rule the CPU path out).
 */
#ifndef OUTPOST_CRYPTO_SHA256ACCEL_H
#define OUTPOST_CRYPTO_SHA256ACCEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    SHA256ACCEL_PORTABLE = 1,
    SHA256ACCEL_X86_SHA, /* SHA-NI */
    SHA256ACCEL_ARMV8,   /* ARMv8 crypto extensions (SHA256H, SHA256SU0...) */
} sha256accel_impl;

/* The implementation this process uses (portable when forced or when the
 * CPU has no SHA instructions). */
sha256accel_impl sha256accel_active(void);

/* What sha256accel_active() decides: the CPU's implementation when the CPU
 * has one (cpu_has) and the environment value `forced_portable` (may be
 * NULL) is not "1"; the portable code otherwise. */
sha256accel_impl sha256accel_choose(bool cpu_has, const char *forced_portable);

/* Whether impl can run on this CPU (the portable code always can). */
bool sha256accel_available(sha256accel_impl impl);

/* "portable", "x86-sha", "armv8-sha2". */
const char *sha256accel_name(sha256accel_impl impl);

/* Runs the block function of impl (which must be available) over nblocks
 * 64-byte blocks at data, updating state[8] (big-endian words A..H as
 * FIPS 180-4 numbers them). No padding: callers pad. */
void sha256accel_blocks(sha256accel_impl impl, uint32_t state[8], const unsigned char *data, size_t nblocks);

#endif
