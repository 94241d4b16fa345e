/*
 * sha256accel.c — SHA-256 block functions: x86 SHA extensions and ARMv8
 * crypto extensions through compiler intrinsics (compiled for those
 * instructions function by function, so the rest of the program still runs
 * on CPUs without them), and the portable FIPS 180-4 code. Which one runs is
 * decided once, from the CPU (platform_cpu_has_sha256) and
 * OUTPOST_SHA256_PORTABLE. With OUTPOST_SHA256_ALT, mbedTLS's block hook.
 */
#include "crypto/sha256accel.h"

#include <stdatomic.h>
#include <string.h>

#include "platform/platform.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_X86_SHA 1
#include <immintrin.h>
#endif
#if defined(__GNUC__) && defined(__aarch64__)
#define HAVE_ARMV8_SHA 1
#include <arm_neon.h>
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* ---- portable (FIPS 180-4, section 6.2.2) ---------------------------------- */

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void blocks_portable(uint32_t state[8], const unsigned char *data, size_t nblocks)
{
    for (; nblocks > 0; nblocks--, data += 64) {
        uint32_t w[64];
        for (int t = 0; t < 16; t++)
            w[t] = (uint32_t)data[4 * t] << 24 | (uint32_t)data[4 * t + 1] << 16 | (uint32_t)data[4 * t + 2] << 8 |
                   (uint32_t)data[4 * t + 3];
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = ROTR(w[t - 15], 7) ^ ROTR(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = ROTR(w[t - 2], 17) ^ ROTR(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int t = 0; t < 64; t++) {
            uint32_t t1 = h + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
            uint32_t t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        state[0] += a;
        state[1] += b;
        state[2] += c;
        state[3] += d;
        state[4] += e;
        state[5] += f;
        state[6] += g;
        state[7] += h;
    }
}

/* ---- x86 SHA extensions ----------------------------------------------------- */

#ifdef HAVE_X86_SHA
/* SHA256RNDS2 works on the state as two registers, ABEF and CDGH; each
 * 4-round group adds K to four message words, and SHA256MSG1/MSG2 extend the
 * schedule: W[t..t+3] from W[t-16..t-1]. */
__attribute__((target("sha,sse4.1"))) static void blocks_x86(uint32_t state[8], const unsigned char *data,
                                                             size_t nblocks)
{
    const __m128i byteswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[0]), 0xB1); /* CDAB */
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[4]), 0x1B);  /* EFGH */
    __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);                                           /* ABEF */
    s1 = _mm_blend_epi16(s1, tmp, 0xF0);                                                /* CDGH */

    for (; nblocks > 0; nblocks--, data += 64) {
        __m128i abef = s0, cdgh = s1, m[4];
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            __m128i w;
            if (i < 4) {
                w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * i)), byteswap);
            } else {
                /* m[i&3] holds group i-4, m[(i+1)&3] i-3, m[(i+2)&3] i-2, m[(i+3)&3] i-1. */
                w = _mm_sha256msg1_epu32(m[i & 3], m[(i + 1) & 3]);
                w = _mm_add_epi32(w, _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4));
                w = _mm_sha256msg2_epu32(w, m[(i + 3) & 3]);
            }
            m[i & 3] = w;
            __m128i wk = _mm_add_epi32(w, _mm_loadu_si128((const __m128i *)&K[4 * i]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, wk);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(wk, 0x0E));
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }

    tmp = _mm_shuffle_epi32(s0, 0x1B);   /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);    /* DCHG */
    s0 = _mm_blend_epi16(tmp, s1, 0xF0); /* DCBA */
    s1 = _mm_alignr_epi8(s1, tmp, 8);    /* HGFE */
    _mm_storeu_si128((__m128i *)&state[0], s0);
    _mm_storeu_si128((__m128i *)&state[4], s1);
}
#endif

/* ---- ARMv8 crypto extensions ------------------------------------------------ */

#ifdef HAVE_ARMV8_SHA
/* SHA256H/SHA256H2 run four rounds on ABCD and EFGH; SHA256SU0/SU1 extend
 * the schedule four words at a time. */
__attribute__((target("arch=armv8-a+crypto"))) static void blocks_armv8(uint32_t state[8], const unsigned char *data,
                                                                        size_t nblocks)
{
    uint32x4_t s0 = vld1q_u32(&state[0]), s1 = vld1q_u32(&state[4]);
    for (; nblocks > 0; nblocks--, data += 64) {
        uint32x4_t abcd = s0, efgh = s1, m[4];
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            uint32x4_t w;
            if (i < 4)
                w = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(data + 16 * i)));
            else
                w = vsha256su1q_u32(vsha256su0q_u32(m[i & 3], m[(i + 1) & 3]), m[(i + 2) & 3], m[(i + 3) & 3]);
            m[i & 3] = w;
            uint32x4_t wk = vaddq_u32(w, vld1q_u32(&K[4 * i]));
            uint32x4_t prev = s0;
            s0 = vsha256hq_u32(s0, s1, wk);
            s1 = vsha256h2q_u32(s1, prev, wk);
        }
        s0 = vaddq_u32(s0, abcd);
        s1 = vaddq_u32(s1, efgh);
    }
    vst1q_u32(&state[0], s0);
    vst1q_u32(&state[4], s1);
}
#endif

/* ---- choosing ----------------------------------------------------------------- */

static sha256accel_impl cpu_impl(void)
{
#if defined(HAVE_X86_SHA)
    return SHA256ACCEL_X86_SHA;
#elif defined(HAVE_ARMV8_SHA)
    return SHA256ACCEL_ARMV8;
#else
    return SHA256ACCEL_PORTABLE;
#endif
}

sha256accel_impl sha256accel_choose(bool cpu_has, const char *forced_portable)
{
    if (forced_portable && strcmp(forced_portable, "1") == 0)
        return SHA256ACCEL_PORTABLE;
    return cpu_has ? cpu_impl() : SHA256ACCEL_PORTABLE;
}

bool sha256accel_available(sha256accel_impl impl)
{
    if (impl == SHA256ACCEL_PORTABLE)
        return true;
    return impl == cpu_impl() && platform_cpu_has_sha256();
}

/* 0 until the first call decides; a race only decides twice, alike. */
static atomic_int active;

sha256accel_impl sha256accel_active(void)
{
    int impl = atomic_load_explicit(&active, memory_order_relaxed);
    if (impl == 0) {
        impl = (int)sha256accel_choose(platform_cpu_has_sha256(), platform_getenv("OUTPOST_SHA256_PORTABLE"));
        atomic_store_explicit(&active, impl, memory_order_relaxed);
    }
    return (sha256accel_impl)impl;
}

const char *sha256accel_name(sha256accel_impl impl)
{
    switch (impl) {
    case SHA256ACCEL_X86_SHA: return "x86-sha";
    case SHA256ACCEL_ARMV8: return "armv8-sha2";
    case SHA256ACCEL_PORTABLE: break;
    }
    return "portable";
}

void sha256accel_blocks(sha256accel_impl impl, uint32_t state[8], const unsigned char *data, size_t nblocks)
{
    switch (impl) {
#ifdef HAVE_X86_SHA
    case SHA256ACCEL_X86_SHA: blocks_x86(state, data, nblocks); return;
#endif
#ifdef HAVE_ARMV8_SHA
    case SHA256ACCEL_ARMV8: blocks_armv8(state, data, nblocks); return;
#endif
    default: blocks_portable(state, data, nblocks); return;
    }
}

#ifdef OUTPOST_SHA256_ALT
#include <mbedtls/sha256.h>

/* Mbed TLS 3.6's MBEDTLS_SHA256_PROCESS_ALT hook: one 64-byte block. The
 * hash state is the context's, which 3.6 keeps private (the hook is its
 * own code's to fill, it offers no accessor). */
int mbedtls_internal_sha256_process(mbedtls_sha256_context *ctx, const unsigned char data[64])
{
    sha256accel_blocks(sha256accel_active(), ctx->MBEDTLS_PRIVATE(state), data, 1);
    return 0;
}
#endif
