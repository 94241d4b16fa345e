/*
 * gcmaccel.c — AES-GCM: counter mode and GHASH on AES-NI + PCLMULQDQ
 * (x86-64) or ARMv8 AES + PMULL (AArch64), compiled for those instructions
 * function by function (so the
 * rest of the program still runs on CPUs without them), eight blocks per
 * pass with one GHASH reduction for the eight; and the portable code
 * (mbedTLS's AES a block at a time, Shoup's 4-bit table GHASH). Which one
 * runs is decided once, from the CPU (platform_cpu_has_aes_clmul) and
 * OUTPOST_GCM_PORTABLE. With OUTPOST_GCM_ALT, mbedTLS's GCM functions.
 */
#include "crypto/gcmaccel.h"

#include <stdatomic.h>
#include <string.h>

#include <mbedtls/gcm.h>
#include <mbedtls/platform_util.h>

#include "platform/platform.h"

/* The vector helpers are always inlined: a call out of line passes its
 * vectors through the stack on Windows x64 (by reference) and leaves the
 * copies there; H was found so in the -Os release build under wine. */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_X86_AESNI 1
#include <immintrin.h>
#define X86 __attribute__((target("aes,pclmul,ssse3,sse4.1")))
#endif
#if defined(__GNUC__) && defined(__aarch64__)
#define HAVE_ARMV8_AES 1
#include <arm_neon.h>
#define ARMV8 __attribute__((target("arch=armv8-a+crypto")))
#endif

static uint32_t get_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void put_be64(unsigned char *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* The AES key schedule Mbed TLS expanded (mbedtls_aes_setkey_enc: in the
 * byte order AES-NI and ARMv8 AES read, with or without its own AES-NI),
 * and its number of rounds. Mbed TLS 3.6 keeps both private and offers no
 * accessor; this hook goes if the library's own GCM is fast enough. */
static const unsigned char *round_keys(const gcmaccel_context *ctx)
{
    return (const unsigned char *)(ctx->aes.MBEDTLS_PRIVATE(buf) + ctx->aes.MBEDTLS_PRIVATE(rk_offset));
}

static int rounds(const gcmaccel_context *ctx)
{
    return ctx->aes.MBEDTLS_PRIVATE(nr);
}

/* ---- portable GHASH (Shoup's 4-bit tables, as mbedTLS's gcm.c) -------------- */

static const uint64_t LAST4[16] = {0x0000, 0x1c20, 0x3840, 0x2460, 0x7080, 0x6ca0, 0x48c0, 0x54e0,
                                   0xe100, 0xfd20, 0xd940, 0xc560, 0x9180, 0x8da0, 0xa9c0, 0xb5e0};

/* hl/hh[i]: i (a 4-bit value, bit-reflected as GCM numbers bits) times H. */
static void table_init(gcmaccel_context *ctx, const unsigned char h[16])
{
    uint64_t vh = (uint64_t)get_be32(h) << 32 | get_be32(h + 4);
    uint64_t vl = (uint64_t)get_be32(h + 8) << 32 | get_be32(h + 12);
    ctx->hl[8] = vl;
    ctx->hh[8] = vh;
    ctx->hl[0] = 0;
    ctx->hh[0] = 0;
    for (int i = 4; i > 0; i >>= 1) {
        uint32_t t = (uint32_t)(vl & 1) * 0xe1000000U;
        vl = (vh << 63) | (vl >> 1);
        vh = (vh >> 1) ^ ((uint64_t)t << 32);
        ctx->hl[i] = vl;
        ctx->hh[i] = vh;
    }
    for (int i = 2; i <= 8; i *= 2) {
        for (int j = 1; j < i; j++) {
            ctx->hh[i + j] = ctx->hh[i] ^ ctx->hh[j];
            ctx->hl[i + j] = ctx->hl[i] ^ ctx->hl[j];
        }
    }
}

/* x = x * H */
static void table_mult(const gcmaccel_context *ctx, unsigned char x[16])
{
    unsigned lo = x[15] & 0xf;
    uint64_t zh = ctx->hh[lo], zl = ctx->hl[lo];
    for (int i = 15; i >= 0; i--) {
        lo = x[i] & 0xf;
        unsigned hi = (x[i] >> 4) & 0xf;
        if (i != 15) {
            unsigned rem = (unsigned)zl & 0xf;
            zl = (zh << 60) | (zl >> 4);
            zh = (zh >> 4) ^ (LAST4[rem] << 48);
            zh ^= ctx->hh[lo];
            zl ^= ctx->hl[lo];
        }
        unsigned rem = (unsigned)zl & 0xf;
        zl = (zh << 60) | (zl >> 4);
        zh = (zh >> 4) ^ (LAST4[rem] << 48);
        zh ^= ctx->hh[hi];
        zl ^= ctx->hl[hi];
    }
    put_be64(x, zh);
    put_be64(x + 8, zl);
}

static void ghash_portable(const gcmaccel_context *ctx, unsigned char acc[16], const unsigned char *data,
                           size_t nblocks)
{
    for (; nblocks > 0; nblocks--, data += 16) {
        for (int i = 0; i < 16; i++)
            acc[i] ^= data[i];
        table_mult(ctx, acc);
    }
}

/* Counter mode over nblocks whole blocks, GHASH of the ciphertext into
 * ctx->buf, ctx->y's counter advanced. */
static int ctr_portable(gcmaccel_context *ctx, const unsigned char *in, unsigned char *out, size_t nblocks)
{
    unsigned char ectr[16];
    for (; nblocks > 0; nblocks--, in += 16, out += 16) {
        put_be32(ctx->y + 12, get_be32(ctx->y + 12) + 1);
        int ret = mbedtls_aes_crypt_ecb(&ctx->aes, MBEDTLS_AES_ENCRYPT, ctx->y, ectr);
        if (ret != 0)
            return ret;
        for (int i = 0; i < 16; i++) {
            unsigned char c = in[i] ^ ectr[i];
            ctx->buf[i] ^= ctx->mode == MBEDTLS_GCM_DECRYPT ? in[i] : c;
            out[i] = c;
        }
        table_mult(ctx, ctx->buf);
    }
    mbedtls_platform_zeroize(ectr, sizeof ectr);
    return 0;
}

/* ---- x86-64: AES-NI and PCLMULQDQ ---------------------------------------------
 *
 * GHASH works on byte-reversed blocks (PSHUFB), where a carry-less product
 * shifted left by one bit and reduced modulo x^128 + x^7 + x^2 + x + 1 is
 * GCM's product (Gueron and Kounavis, Intel's carry-less multiplication
 * white paper, algorithm 5). The reduction is linear, so eight products
 * (Y + X1)·H^8 + X2·H^7 + ... + X8·H are summed unreduced and reduced once. */

#ifdef HAVE_X86_AESNI
X86 ALWAYS_INLINE __m128i reflect(__m128i x)
{
    return _mm_shuffle_epi8(x, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

/* lo, mid, hi += the 256-bit carry-less product a·b (mid: the middle
 * 128 bits, not yet shifted into place). */
X86 ALWAYS_INLINE void mul_acc(__m128i a, __m128i b, __m128i *lo, __m128i *mid, __m128i *hi)
{
    *lo = _mm_xor_si128(*lo, _mm_clmulepi64_si128(a, b, 0x00));
    *hi = _mm_xor_si128(*hi, _mm_clmulepi64_si128(a, b, 0x11));
    *mid = _mm_xor_si128(*mid, _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x10), _mm_clmulepi64_si128(a, b, 0x01)));
}

X86 ALWAYS_INLINE __m128i reduce(__m128i lo, __m128i mid, __m128i hi)
{
    __m128i t3 = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
    __m128i t6 = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
    /* The 256-bit t6:t3 shifted left by one bit (the reflection's offset). */
    __m128i t7 = _mm_srli_epi32(t3, 31);
    __m128i t8 = _mm_srli_epi32(t6, 31);
    t3 = _mm_slli_epi32(t3, 1);
    t6 = _mm_slli_epi32(t6, 1);
    __m128i t9 = _mm_srli_si128(t7, 12);
    t8 = _mm_slli_si128(t8, 4);
    t7 = _mm_slli_si128(t7, 4);
    t3 = _mm_or_si128(t3, t7);
    t6 = _mm_or_si128(_mm_or_si128(t6, t8), t9);
    /* Reduction: the low half folded into the high one. */
    t7 = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi32(t3, 31), _mm_slli_epi32(t3, 30)), _mm_slli_epi32(t3, 25));
    t8 = _mm_srli_si128(t7, 4);
    t7 = _mm_slli_si128(t7, 12);
    t3 = _mm_xor_si128(t3, t7);
    __m128i t2 = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi32(t3, 1), _mm_srli_epi32(t3, 2)), _mm_srli_epi32(t3, 7));
    t2 = _mm_xor_si128(t2, t8);
    t3 = _mm_xor_si128(t3, t2);
    return _mm_xor_si128(t6, t3);
}

X86 ALWAYS_INLINE __m128i gfmul(__m128i a, __m128i b)
{
    __m128i lo = _mm_setzero_si128(), mid = lo, hi = lo;
    mul_acc(a, b, &lo, &mid, &hi);
    return reduce(lo, mid, hi);
}

X86 static void hpow_init_x86(gcmaccel_context *ctx, const unsigned char h[16])
{
    __m128i h1 = reflect(_mm_loadu_si128((const __m128i *)(const void *)h)), p = h1;
    for (int i = 0; i < 8; i++) {
        _mm_storeu_si128((__m128i *)(void *)ctx->hpow[i], p);
        p = gfmul(p, h1);
    }
}

X86 static void ghash_x86(const gcmaccel_context *ctx, unsigned char acc[16], const unsigned char *data, size_t nblocks)
{
    __m128i h1 = _mm_loadu_si128((const __m128i *)(const void *)ctx->hpow[0]);
    __m128i y = reflect(_mm_loadu_si128((const __m128i *)(const void *)acc));
    for (; nblocks > 0; nblocks--, data += 16)
        y = gfmul(_mm_xor_si128(y, reflect(_mm_loadu_si128((const __m128i *)(const void *)data))), h1);
    _mm_storeu_si128((__m128i *)(void *)acc, reflect(y));
    mbedtls_platform_zeroize(&h1, sizeof h1); /* H, not left on the stack */
}

X86 static void load_round_keys(const gcmaccel_context *ctx, __m128i rk[15])
{
    const unsigned char *bytes = round_keys(ctx);
    for (int i = 0; i <= rounds(ctx); i++)
        rk[i] = _mm_loadu_si128((const __m128i *)(const void *)(bytes + 16 * i));
}

X86 static void encrypt_block_x86(const gcmaccel_context *ctx, const unsigned char in[16], unsigned char out[16])
{
    __m128i rk[15] = {0};
    load_round_keys(ctx, rk);
    int nr = rounds(ctx);
    __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)in), rk[0]);
    for (int r = 1; r < nr; r++)
        b = _mm_aesenc_si128(b, rk[r]);
    _mm_storeu_si128((__m128i *)(void *)out, _mm_aesenclast_si128(b, rk[nr]));
    mbedtls_platform_zeroize(rk, sizeof rk); /* the round keys, not left on the stack */
}

X86 static void ctr_x86(gcmaccel_context *ctx, const unsigned char *in, unsigned char *out, size_t nblocks)
{
    __m128i rk[15] = {0};
    load_round_keys(ctx, rk);
    int nr = rounds(ctx);
    /* The powers of H are read from ctx where they are used, not copied
     * into locals: with the round keys they are more than x86-64's sixteen
     * vector registers, and the compiler spilled the copies to stack slots
     * no zeroize reaches (test_gcmaccel's stack probe found them). */
#define HPOW(i) _mm_loadu_si128((const __m128i *)(const void *)ctx->hpow[i])
    const __m128i base = _mm_loadu_si128((const __m128i *)(const void *)ctx->y);
    uint32_t ctr = get_be32(ctx->y + 12);
    __m128i y = reflect(_mm_loadu_si128((const __m128i *)(const void *)ctx->buf));
    const int decrypt = ctx->mode == MBEDTLS_GCM_DECRYPT;

    for (; nblocks >= 8; nblocks -= 8, in += 128, out += 128) {
        __m128i b[8], x[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            b[i] = _mm_insert_epi32(base, (int)__builtin_bswap32(ctr + 1 + (uint32_t)i), 3);
            b[i] = _mm_xor_si128(b[i], rk[0]);
        }
        ctr += 8;
        for (int r = 1; r < nr; r++)
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++)
                b[i] = _mm_aesenc_si128(b[i], rk[r]);
                /* All of the input is read before any output is written: the two
                 * may be one buffer. */
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            x[i] = _mm_loadu_si128((const __m128i *)(const void *)(in + 16 * i));
        __m128i lo = _mm_setzero_si128(), mid = lo, hi = lo;
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            __m128i c = _mm_xor_si128(_mm_aesenclast_si128(b[i], rk[nr]), x[i]);
            _mm_storeu_si128((__m128i *)(void *)(out + 16 * i), c);
            __m128i g = reflect(decrypt ? x[i] : c);
            if (i == 0)
                g = _mm_xor_si128(g, y);
            mul_acc(g, HPOW(7 - i), &lo, &mid, &hi);
        }
        y = reduce(lo, mid, hi);
    }
    for (; nblocks > 0; nblocks--, in += 16, out += 16) {
        __m128i b = _mm_xor_si128(_mm_insert_epi32(base, (int)__builtin_bswap32(++ctr), 3), rk[0]);
        for (int r = 1; r < nr; r++)
            b = _mm_aesenc_si128(b, rk[r]);
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)in);
        __m128i c = _mm_xor_si128(_mm_aesenclast_si128(b, rk[nr]), x);
        _mm_storeu_si128((__m128i *)(void *)out, c);
        y = gfmul(_mm_xor_si128(y, reflect(decrypt ? x : c)), HPOW(0));
    }
#undef HPOW
    _mm_storeu_si128((__m128i *)(void *)ctx->buf, reflect(y));
    put_be32(ctx->y + 12, ctr);
    mbedtls_platform_zeroize(rk, sizeof rk); /* the round keys, not left on the stack */
}
#endif

/* ---- ARMv8: AES and PMULL ---------------------------------------------------------
 *
 * The same algorithm as the x86-64 code, instruction for instruction: AESE
 * (AddRoundKey, SubBytes, ShiftRows) and AESMC (MixColumns) for the rounds,
 * PMULL for the carry-less products, EXT for SSE's whole-register byte
 * shifts. AArch64 is little-endian here as x86 is, so the byte layouts match. */

#ifdef HAVE_ARMV8_AES
ARMV8 ALWAYS_INLINE uint8x16_t reflect_a(uint8x16_t x)
{
    uint8x16_t r = vrev64q_u8(x);
    return vextq_u8(r, r, 8);
}

ARMV8 ALWAYS_INLINE uint8x16_t pmull_lo(uint8x16_t a, uint8x16_t b)
{
    return vreinterpretq_u8_p128(vmull_p64((poly64_t)vgetq_lane_u64(vreinterpretq_u64_u8(a), 0),
                                           (poly64_t)vgetq_lane_u64(vreinterpretq_u64_u8(b), 0)));
}

ARMV8 ALWAYS_INLINE uint8x16_t pmull_hi(uint8x16_t a, uint8x16_t b)
{
    return vreinterpretq_u8_p128(vmull_high_p64(vreinterpretq_p64_u8(a), vreinterpretq_p64_u8(b)));
}

ARMV8 ALWAYS_INLINE void mul_acc_a(uint8x16_t a, uint8x16_t b, uint8x16_t *lo, uint8x16_t *mid, uint8x16_t *hi)
{
    uint8x16_t a_swapped = vextq_u8(a, a, 8); /* a's halves exchanged: hi·lo and lo·hi as two low products */
    *lo = veorq_u8(*lo, pmull_lo(a, b));
    *hi = veorq_u8(*hi, pmull_hi(a, b));
    *mid = veorq_u8(*mid, veorq_u8(pmull_lo(a_swapped, b), pmull_hi(a_swapped, b)));
}

#define SHL_BYTES(x, n) vextq_u8(vdupq_n_u8(0), (x), 16 - (n)) /* _mm_slli_si128 */
#define SHR_BYTES(x, n) vextq_u8((x), vdupq_n_u8(0), (n))      /* _mm_srli_si128 */
#define U32(x) vreinterpretq_u32_u8(x)
#define U8(x) vreinterpretq_u8_u32(x)

ARMV8 ALWAYS_INLINE uint8x16_t reduce_a(uint8x16_t lo, uint8x16_t mid, uint8x16_t hi)
{
    uint8x16_t t3 = veorq_u8(lo, SHL_BYTES(mid, 8));
    uint8x16_t t6 = veorq_u8(hi, SHR_BYTES(mid, 8));
    uint8x16_t t7 = U8(vshrq_n_u32(U32(t3), 31));
    uint8x16_t t8 = U8(vshrq_n_u32(U32(t6), 31));
    t3 = U8(vshlq_n_u32(U32(t3), 1));
    t6 = U8(vshlq_n_u32(U32(t6), 1));
    uint8x16_t t9 = SHR_BYTES(t7, 12);
    t8 = SHL_BYTES(t8, 4);
    t7 = SHL_BYTES(t7, 4);
    t3 = vorrq_u8(t3, t7);
    t6 = vorrq_u8(vorrq_u8(t6, t8), t9);
    t7 = veorq_u8(veorq_u8(U8(vshlq_n_u32(U32(t3), 31)), U8(vshlq_n_u32(U32(t3), 30))), U8(vshlq_n_u32(U32(t3), 25)));
    t8 = SHR_BYTES(t7, 4);
    t7 = SHL_BYTES(t7, 12);
    t3 = veorq_u8(t3, t7);
    uint8x16_t t2 =
        veorq_u8(veorq_u8(U8(vshrq_n_u32(U32(t3), 1)), U8(vshrq_n_u32(U32(t3), 2))), U8(vshrq_n_u32(U32(t3), 7)));
    t2 = veorq_u8(t2, t8);
    t3 = veorq_u8(t3, t2);
    return veorq_u8(t6, t3);
}

ARMV8 ALWAYS_INLINE uint8x16_t gfmul_a(uint8x16_t a, uint8x16_t b)
{
    uint8x16_t lo = vdupq_n_u8(0), mid = lo, hi = lo;
    mul_acc_a(a, b, &lo, &mid, &hi);
    return reduce_a(lo, mid, hi);
}

ARMV8 static void hpow_init_armv8(gcmaccel_context *ctx, const unsigned char h[16])
{
    uint8x16_t h1 = reflect_a(vld1q_u8(h)), p = h1;
    for (int i = 0; i < 8; i++) {
        vst1q_u8(ctx->hpow[i], p);
        p = gfmul_a(p, h1);
    }
}

ARMV8 static void ghash_armv8(const gcmaccel_context *ctx, unsigned char acc[16], const unsigned char *data,
                              size_t nblocks)
{
    uint8x16_t h1 = vld1q_u8(ctx->hpow[0]);
    uint8x16_t y = reflect_a(vld1q_u8(acc));
    for (; nblocks > 0; nblocks--, data += 16)
        y = gfmul_a(veorq_u8(y, reflect_a(vld1q_u8(data))), h1);
    vst1q_u8(acc, reflect_a(y));
    mbedtls_platform_zeroize(&h1, sizeof h1); /* H, not left on the stack */
}

ARMV8 ALWAYS_INLINE uint8x16_t aes_a(const uint8x16_t rk[15], int nr, uint8x16_t b)
{
    for (int r = 0; r < nr - 1; r++)
        b = vaesmcq_u8(vaeseq_u8(b, rk[r]));
    return veorq_u8(vaeseq_u8(b, rk[nr - 1]), rk[nr]);
}

ARMV8 static void load_round_keys_a(const gcmaccel_context *ctx, uint8x16_t rk[15])
{
    const unsigned char *bytes = round_keys(ctx);
    for (int i = 0; i <= rounds(ctx); i++)
        rk[i] = vld1q_u8(bytes + 16 * i);
}

ARMV8 static void encrypt_block_armv8(const gcmaccel_context *ctx, const unsigned char in[16], unsigned char out[16])
{
    uint8x16_t rk[15];
    memset(rk, 0, sizeof rk);
    load_round_keys_a(ctx, rk);
    vst1q_u8(out, aes_a(rk, rounds(ctx), vld1q_u8(in)));
    mbedtls_platform_zeroize(rk, sizeof rk); /* the round keys, not left on the stack */
}

ARMV8 static void ctr_armv8(gcmaccel_context *ctx, const unsigned char *in, unsigned char *out, size_t nblocks)
{
    uint8x16_t rk[15];
    memset(rk, 0, sizeof rk);
    load_round_keys_a(ctx, rk);
    int nr = rounds(ctx);
    /* The powers of H are read from ctx where they are used, as on x86-64:
     * copied into locals, some were spilled where no zeroize reaches. */
#define HPOW(i) vld1q_u8(ctx->hpow[i])
    const uint32x4_t base = vreinterpretq_u32_u8(vld1q_u8(ctx->y));
    uint32_t ctr = get_be32(ctx->y + 12);
    uint8x16_t y = reflect_a(vld1q_u8(ctx->buf));
    const int decrypt = ctx->mode == MBEDTLS_GCM_DECRYPT;

    for (; nblocks >= 8; nblocks -= 8, in += 128, out += 128) {
        uint8x16_t b[8], x[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            b[i] = vreinterpretq_u8_u32(vsetq_lane_u32(__builtin_bswap32(ctr + 1 + (uint32_t)i), base, 3));
        ctr += 8;
        for (int r = 0; r < nr - 1; r++)
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++)
                b[i] = vaesmcq_u8(vaeseq_u8(b[i], rk[r]));
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            x[i] = vld1q_u8(in + 16 * i);
        uint8x16_t lo = vdupq_n_u8(0), mid = lo, hi = lo;
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            uint8x16_t c = veorq_u8(veorq_u8(vaeseq_u8(b[i], rk[nr - 1]), rk[nr]), x[i]);
            vst1q_u8(out + 16 * i, c);
            uint8x16_t g = reflect_a(decrypt ? x[i] : c);
            if (i == 0)
                g = veorq_u8(g, y);
            mul_acc_a(g, HPOW(7 - i), &lo, &mid, &hi);
        }
        y = reduce_a(lo, mid, hi);
    }
    for (; nblocks > 0; nblocks--, in += 16, out += 16) {
        uint8x16_t b = vreinterpretq_u8_u32(vsetq_lane_u32(__builtin_bswap32(++ctr), base, 3));
        uint8x16_t x = vld1q_u8(in);
        uint8x16_t c = veorq_u8(aes_a(rk, nr, b), x);
        vst1q_u8(out, c);
        y = gfmul_a(veorq_u8(y, reflect_a(decrypt ? x : c)), HPOW(0));
    }
#undef HPOW
    vst1q_u8(ctx->buf, reflect_a(y));
    put_be32(ctx->y + 12, ctr);
    mbedtls_platform_zeroize(rk, sizeof rk); /* the round keys, not left on the stack */
}
#endif

/* ---- dispatch ---------------------------------------------------------------- */

static int encrypt_block(gcmaccel_context *ctx, const unsigned char in[16], unsigned char out[16])
{
#ifdef HAVE_X86_AESNI
    if (ctx->impl == GCMACCEL_X86_AESNI) {
        encrypt_block_x86(ctx, in, out);
        return 0;
    }
#endif
#ifdef HAVE_ARMV8_AES
    if (ctx->impl == GCMACCEL_ARMV8) {
        encrypt_block_armv8(ctx, in, out);
        return 0;
    }
#endif
    return mbedtls_aes_crypt_ecb(&ctx->aes, MBEDTLS_AES_ENCRYPT, in, out);
}

/* acc = GHASH of acc and data, the last partial block padded with zeros. */
static void ghash(const gcmaccel_context *ctx, unsigned char acc[16], const unsigned char *data, size_t len)
{
    size_t nblocks = len / 16, rest = len % 16;
    unsigned char last[16] = {0};
    if (rest > 0)
        memcpy(last, data + 16 * nblocks, rest);
#ifdef HAVE_X86_AESNI
    if (ctx->impl == GCMACCEL_X86_AESNI) {
        ghash_x86(ctx, acc, data, nblocks);
        if (rest > 0)
            ghash_x86(ctx, acc, last, 1);
        return;
    }
#endif
#ifdef HAVE_ARMV8_AES
    if (ctx->impl == GCMACCEL_ARMV8) {
        ghash_armv8(ctx, acc, data, nblocks);
        if (rest > 0)
            ghash_armv8(ctx, acc, last, 1);
        return;
    }
#endif
    ghash_portable(ctx, acc, data, nblocks);
    if (rest > 0)
        ghash_portable(ctx, acc, last, 1);
}

static int ctr_blocks(gcmaccel_context *ctx, const unsigned char *in, unsigned char *out, size_t nblocks)
{
#ifdef HAVE_X86_AESNI
    if (ctx->impl == GCMACCEL_X86_AESNI) {
        ctr_x86(ctx, in, out, nblocks);
        return 0;
    }
#endif
#ifdef HAVE_ARMV8_AES
    if (ctx->impl == GCMACCEL_ARMV8) {
        ctr_armv8(ctx, in, out, nblocks);
        return 0;
    }
#endif
    return ctr_portable(ctx, in, out, nblocks);
}

/* ---- GCM (SP 800-38D; the checks, limits and calls of Mbed TLS 3.6's gcm.c) -- */

void gcmaccel_init(gcmaccel_context *ctx, gcmaccel_impl impl)
{
    memset(ctx, 0, sizeof *ctx);
    mbedtls_aes_init(&ctx->aes);
    ctx->impl = gcmaccel_available(impl) ? (int)impl : GCMACCEL_PORTABLE;
}

int gcmaccel_setkey(gcmaccel_context *ctx, const unsigned char *key, unsigned int keybits)
{
    if (!ctx || !key || (keybits != 128 && keybits != 192 && keybits != 256))
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    ctx->keyed = 0;
    int ret = mbedtls_aes_setkey_enc(&ctx->aes, key, keybits);
    if (ret != 0)
        return ret;
    unsigned char h[16] = {0};
    ret = encrypt_block(ctx, h, h);
    if (ret != 0)
        return ret;
    table_init(ctx, h);
#ifdef HAVE_X86_AESNI
    if (ctx->impl == GCMACCEL_X86_AESNI)
        hpow_init_x86(ctx, h);
#endif
#ifdef HAVE_ARMV8_AES
    if (ctx->impl == GCMACCEL_ARMV8)
        hpow_init_armv8(ctx, h);
#endif
    mbedtls_platform_zeroize(h, sizeof h);
    ctx->keyed = 1;
    return 0;
}

/* acc = acc * H: closes a block of which only a part was XORed in. */
static void ghash_close(const gcmaccel_context *ctx, unsigned char acc[16])
{
    static const unsigned char zero[16] = {0};
    ghash(ctx, acc, zero, sizeof zero);
}

int gcmaccel_starts(gcmaccel_context *ctx, int mode, const unsigned char *iv, size_t iv_len)
{
    if (!ctx || !ctx->keyed || !iv || (mode != MBEDTLS_GCM_ENCRYPT && mode != MBEDTLS_GCM_DECRYPT))
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    /* The IV is limited to 2^64 bits and is not empty. */
    if (iv_len == 0 || (uint64_t)iv_len >> 61 != 0)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    memset(ctx->y, 0, sizeof ctx->y);
    memset(ctx->buf, 0, sizeof ctx->buf);
    mbedtls_platform_zeroize(ctx->ectr, sizeof ctx->ectr);
    ctx->mode = mode;
    ctx->len = 0;
    ctx->add_len = 0;
    ctx->pending = 0;
    if (iv_len == 12) {
        memcpy(ctx->y, iv, 12);
        ctx->y[15] = 1;
    } else {
        unsigned char lengths[16] = {0};
        put_be64(lengths + 8, (uint64_t)iv_len * 8);
        ghash(ctx, ctx->y, iv, iv_len);
        ghash(ctx, ctx->y, lengths, sizeof lengths);
    }
    return encrypt_block(ctx, ctx->y, ctx->base_ectr);
}

int gcmaccel_update_ad(gcmaccel_context *ctx, const unsigned char *add, size_t add_len)
{
    if (!ctx || !ctx->keyed || (add_len > 0 && !add))
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    /* Additional data is limited to 2^64 bits and comes before the text. */
    if (ctx->len > 0 || ctx->add_len + add_len < ctx->add_len || (uint64_t)(ctx->add_len + add_len) >> 61 != 0)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    ctx->add_len += add_len;
    /* A block an earlier call began: XORed in byte by byte, closed when full. */
    while (ctx->pending > 0 && add_len > 0) {
        ctx->buf[ctx->pending++] ^= *add++;
        add_len--;
        if (ctx->pending == 16) {
            ghash_close(ctx, ctx->buf);
            ctx->pending = 0;
        }
    }
    size_t whole = add_len - add_len % 16;
    ghash(ctx, ctx->buf, add, whole);
    for (size_t i = whole; i < add_len; i++)
        ctx->buf[ctx->pending++] ^= add[i];
    return 0;
}

/* The next counter block's key stream, into ctx->ectr. */
static int next_keystream(gcmaccel_context *ctx)
{
    put_be32(ctx->y + 12, get_be32(ctx->y + 12) + 1);
    return encrypt_block(ctx, ctx->y, ctx->ectr);
}

/* length (< 16, within one block) bytes of a block already begun (or begun
 * here: pending 0) with ctx->ectr's key stream. */
static void crypt_partial(gcmaccel_context *ctx, const unsigned char *input, unsigned char *output, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        unsigned char in = input[i], c = in ^ ctx->ectr[ctx->pending];
        ctx->buf[ctx->pending++] ^= ctx->mode == MBEDTLS_GCM_DECRYPT ? in : c;
        output[i] = c;
    }
    if (ctx->pending == 16) {
        ghash_close(ctx, ctx->buf);
        ctx->pending = 0;
    }
}

int gcmaccel_update(gcmaccel_context *ctx, const unsigned char *input, size_t length, unsigned char *output,
                    size_t output_size, size_t *output_length)
{
    if (!ctx || !ctx->keyed || !output_length || (length > 0 && (!input || !output)))
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    *output_length = 0;
    if (output_size < length)
        return MBEDTLS_ERR_GCM_BUFFER_TOO_SMALL;
    if (output > input && (size_t)(output - input) < length)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    /* At most 2^39 - 256 bits, ie 2^36 - 32 bytes, of text. */
    if (ctx->len + length < ctx->len || (uint64_t)ctx->len + length > 0xFFFFFFFE0ull)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    if (length == 0)
        return 0;
    if (ctx->len == 0 && ctx->pending > 0) { /* the additional data's last block */
        ghash_close(ctx, ctx->buf);
        ctx->pending = 0;
    }
    ctx->len += length;
    size_t total = length;
    int ret = 0;
    if (ctx->pending > 0) { /* finish the block an earlier call began */
        size_t n = 16 - ctx->pending < length ? 16 - ctx->pending : length;
        crypt_partial(ctx, input, output, n);
        input += n;
        output += n;
        length -= n;
    }
    size_t nblocks = length / 16, rest = length % 16;
    ret = ctr_blocks(ctx, input, output, nblocks);
    if (ret == 0 && rest > 0) {
        ret = next_keystream(ctx);
        if (ret == 0)
            crypt_partial(ctx, input + 16 * nblocks, output + 16 * nblocks, rest);
    }
    if (ret == 0)
        *output_length = total;
    return ret;
}

int gcmaccel_finish(gcmaccel_context *ctx, unsigned char *output, size_t output_size, size_t *output_length,
                    unsigned char *tag, size_t tag_len)
{
    (void)output;
    (void)output_size; /* GCM keeps no text back: nothing is left to write */
    if (!ctx || !ctx->keyed || !output_length || !tag || tag_len > 16 || tag_len < 4)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    *output_length = 0;
    if (ctx->pending > 0) {
        ghash_close(ctx, ctx->buf);
        ctx->pending = 0;
    }
    mbedtls_platform_zeroize(ctx->ectr, sizeof ctx->ectr);
    memcpy(tag, ctx->base_ectr, tag_len);
    if (ctx->len > 0 || ctx->add_len > 0) {
        unsigned char lengths[16];
        put_be64(lengths, ctx->add_len * 8);
        put_be64(lengths + 8, ctx->len * 8);
        ghash(ctx, ctx->buf, lengths, sizeof lengths);
        for (size_t i = 0; i < tag_len; i++)
            tag[i] ^= ctx->buf[i];
    }
    return 0;
}

int gcmaccel_crypt_and_tag(gcmaccel_context *ctx, int mode, size_t length, const unsigned char *iv, size_t iv_len,
                           const unsigned char *add, size_t add_len, const unsigned char *input, unsigned char *output,
                           size_t tag_len, unsigned char *tag)
{
    size_t olen = 0;
    int ret = gcmaccel_starts(ctx, mode, iv, iv_len);
    if (ret == 0)
        ret = gcmaccel_update_ad(ctx, add, add_len);
    if (ret == 0)
        ret = gcmaccel_update(ctx, input, length, output, length, &olen);
    if (ret == 0)
        ret = gcmaccel_finish(ctx, NULL, 0, &olen, tag, tag_len);
    return ret;
}

int gcmaccel_auth_decrypt(gcmaccel_context *ctx, size_t length, const unsigned char *iv, size_t iv_len,
                          const unsigned char *add, size_t add_len, const unsigned char *tag, size_t tag_len,
                          const unsigned char *input, unsigned char *output)
{
    if (!tag)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    unsigned char check[16];
    int ret = gcmaccel_crypt_and_tag(ctx, MBEDTLS_GCM_DECRYPT, length, iv, iv_len, add, add_len, input, output, tag_len,
                                     check);
    if (ret != 0)
        return ret;
    /* In constant time: how much of a forged tag was right stays unknown. */
    unsigned diff = 0;
    for (size_t i = 0; i < tag_len; i++)
        diff |= (unsigned)(tag[i] ^ check[i]);
    if (diff != 0) {
        mbedtls_platform_zeroize(output, length);
        return MBEDTLS_ERR_GCM_AUTH_FAILED;
    }
    return 0;
}

void gcmaccel_free(gcmaccel_context *ctx)
{
    if (!ctx)
        return;
    mbedtls_aes_free(&ctx->aes);
    mbedtls_platform_zeroize(ctx, sizeof *ctx);
}

/* ---- choosing ------------------------------------------------------------------- */

static gcmaccel_impl cpu_impl(void)
{
#if defined(HAVE_X86_AESNI)
    return GCMACCEL_X86_AESNI;
#elif defined(HAVE_ARMV8_AES)
    return GCMACCEL_ARMV8;
#else
    return GCMACCEL_PORTABLE;
#endif
}

gcmaccel_impl gcmaccel_choose(bool cpu_has, const char *forced_portable)
{
    if (forced_portable && strcmp(forced_portable, "1") == 0)
        return GCMACCEL_PORTABLE;
    return cpu_has ? cpu_impl() : GCMACCEL_PORTABLE;
}

bool gcmaccel_available(gcmaccel_impl impl)
{
    if (impl == GCMACCEL_PORTABLE)
        return true;
    return impl == cpu_impl() && platform_cpu_has_aes_clmul();
}

/* 0 until the first call decides; a race only decides twice, alike. */
static atomic_int active;

gcmaccel_impl gcmaccel_active(void)
{
    int impl = atomic_load_explicit(&active, memory_order_relaxed);
    if (impl == 0) {
        impl = (int)gcmaccel_choose(platform_cpu_has_aes_clmul(), platform_getenv("OUTPOST_GCM_PORTABLE"));
        atomic_store_explicit(&active, impl, memory_order_relaxed);
    }
    return (gcmaccel_impl)impl;
}

const char *gcmaccel_name(gcmaccel_impl impl)
{
    switch (impl) {
    case GCMACCEL_X86_AESNI: return "x86-aesni-pclmul";
    case GCMACCEL_ARMV8: return "armv8-aes-pmull";
    case GCMACCEL_PORTABLE: break;
    }
    return "portable";
}

/* ---- Mbed TLS 3.6's MBEDTLS_GCM_ALT ----------------------------------------------- */

#ifdef OUTPOST_GCM_ALT
/* cross/mbedtls/gcm_alt.h's context is storage for a gcmaccel_context. */
_Static_assert(sizeof(mbedtls_gcm_context) >= sizeof(gcmaccel_context), "gcm_alt.h's context is too small");
_Static_assert(_Alignof(mbedtls_gcm_context) >= _Alignof(gcmaccel_context), "gcm_alt.h's context is misaligned");

static gcmaccel_context *accel(mbedtls_gcm_context *ctx)
{
    return (gcmaccel_context *)(void *)ctx;
}

void mbedtls_gcm_init(mbedtls_gcm_context *ctx)
{
    gcmaccel_init(accel(ctx), gcmaccel_active());
}

int mbedtls_gcm_setkey(mbedtls_gcm_context *ctx, mbedtls_cipher_id_t cipher, const unsigned char *key,
                       unsigned int keybits)
{
    if (!ctx || cipher != MBEDTLS_CIPHER_ID_AES)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    return gcmaccel_setkey(accel(ctx), key, keybits);
}

int mbedtls_gcm_starts(mbedtls_gcm_context *ctx, int mode, const unsigned char *iv, size_t iv_len)
{
    return ctx ? gcmaccel_starts(accel(ctx), mode, iv, iv_len) : MBEDTLS_ERR_GCM_BAD_INPUT;
}

int mbedtls_gcm_update_ad(mbedtls_gcm_context *ctx, const unsigned char *add, size_t add_len)
{
    return ctx ? gcmaccel_update_ad(accel(ctx), add, add_len) : MBEDTLS_ERR_GCM_BAD_INPUT;
}

int mbedtls_gcm_update(mbedtls_gcm_context *ctx, const unsigned char *input, size_t input_length, unsigned char *output,
                       size_t output_size, size_t *output_length)
{
    if (!ctx)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    return gcmaccel_update(accel(ctx), input, input_length, output, output_size, output_length);
}

int mbedtls_gcm_finish(mbedtls_gcm_context *ctx, unsigned char *output, size_t output_size, size_t *output_length,
                       unsigned char *tag, size_t tag_len)
{
    if (!ctx)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    return gcmaccel_finish(accel(ctx), output, output_size, output_length, tag, tag_len);
}

int mbedtls_gcm_crypt_and_tag(mbedtls_gcm_context *ctx, int mode, size_t length, const unsigned char *iv, size_t iv_len,
                              const unsigned char *add, size_t add_len, const unsigned char *input,
                              unsigned char *output, size_t tag_len, unsigned char *tag)
{
    if (!ctx)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    return gcmaccel_crypt_and_tag(accel(ctx), mode, length, iv, iv_len, add, add_len, input, output, tag_len, tag);
}

int mbedtls_gcm_auth_decrypt(mbedtls_gcm_context *ctx, size_t length, const unsigned char *iv, size_t iv_len,
                             const unsigned char *add, size_t add_len, const unsigned char *tag, size_t tag_len,
                             const unsigned char *input, unsigned char *output)
{
    if (!ctx)
        return MBEDTLS_ERR_GCM_BAD_INPUT;
    return gcmaccel_auth_decrypt(accel(ctx), length, iv, iv_len, add, add_len, tag, tag_len, input, output);
}

void mbedtls_gcm_free(mbedtls_gcm_context *ctx)
{
    if (ctx)
        gcmaccel_free(accel(ctx));
}
#endif
