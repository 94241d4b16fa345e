/*
 * chacha20accel.c — ChaCha20 keystream (RFC 8439): the portable block
 * function, and four blocks at a time in SSE2 (x86-64) or NEON (AArch64)
 * registers, one register per state word holding that word of four
 * consecutive blocks. With OUTPOST_CHACHA20_ALT, mbedTLS's ChaCha20
 * functions (MBEDTLS_CHACHA20_ALT) on top of them.
 */
#include "crypto/chacha20accel.h"

#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_SSE2 1
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && defined(__aarch64__)
#define HAVE_NEON 1
#include <arm_neon.h>
#endif

static uint32_t load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Words 0 to 11: the constant and the key. */
static void set_key(uint32_t state[16], const unsigned char key[32])
{
    state[0] = 0x61707865; /* "expand 32-byte k" */
    state[1] = 0x3320646e;
    state[2] = 0x79622d32;
    state[3] = 0x6b206574;
    for (int i = 0; i < 8; i++)
        state[4 + i] = load_le32(key + 4 * i);
}

/* Words 12 to 15: the block counter and the nonce. */
static void set_nonce(uint32_t state[16], uint32_t counter, const unsigned char nonce[12])
{
    state[12] = counter;
    for (int i = 0; i < 3; i++)
        state[13 + i] = load_le32(nonce + 4 * i);
}

void chacha20accel_init_state(uint32_t state[16], const unsigned char key[32], uint32_t counter,
                              const unsigned char nonce[12])
{
    set_key(state, key);
    set_nonce(state, counter, nonce);
}

/* ---- portable (RFC 8439 section 2.3) --------------------------------------- */

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define QR(a, b, c, d)                                                                                                 \
    do {                                                                                                               \
        a += b, d ^= a, d = ROTL(d, 16);                                                                               \
        c += d, b ^= c, b = ROTL(b, 12);                                                                               \
        a += b, d ^= a, d = ROTL(d, 8);                                                                                \
        c += d, b ^= c, b = ROTL(b, 7);                                                                                \
    } while (0)

static void block_portable(const uint32_t state[16], uint32_t counter, unsigned char keystream[64])
{
    uint32_t x[16];
    memcpy(x, state, sizeof x);
    x[12] = counter;
    for (int round = 0; round < 10; round++) {
        QR(x[0], x[4], x[8], x[12]);
        QR(x[1], x[5], x[9], x[13]);
        QR(x[2], x[6], x[10], x[14]);
        QR(x[3], x[7], x[11], x[15]);
        QR(x[0], x[5], x[10], x[15]);
        QR(x[1], x[6], x[11], x[12]);
        QR(x[2], x[7], x[8], x[13]);
        QR(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++) {
        uint32_t v = x[i] + (i == 12 ? counter : state[i]);
        keystream[4 * i] = (unsigned char)v;
        keystream[4 * i + 1] = (unsigned char)(v >> 8);
        keystream[4 * i + 2] = (unsigned char)(v >> 16);
        keystream[4 * i + 3] = (unsigned char)(v >> 24);
    }
}

static void xor_portable(const uint32_t state[16], uint32_t counter, const unsigned char *in, unsigned char *out,
                         size_t nblocks)
{
    unsigned char keystream[64];
    for (; nblocks > 0; nblocks--, counter++, in += 64, out += 64) {
        block_portable(state, counter, keystream);
        for (int i = 0; i < 64; i++)
            out[i] = in[i] ^ keystream[i];
    }
    memset(keystream, 0, sizeof keystream);
}

/* ---- SSE2: four blocks per pass ----------------------------------------------- */

#ifdef HAVE_SSE2
#define ROTL4(x, n) _mm_or_si128(_mm_slli_epi32(x, n), _mm_srli_epi32(x, 32 - (n)))
#define QR4(a, b, c, d)                                                                                                \
    do {                                                                                                               \
        a = _mm_add_epi32(a, b), d = _mm_xor_si128(d, a), d = ROTL4(d, 16);                                            \
        c = _mm_add_epi32(c, d), b = _mm_xor_si128(b, c), b = ROTL4(b, 12);                                            \
        a = _mm_add_epi32(a, b), d = _mm_xor_si128(d, a), d = ROTL4(d, 8);                                             \
        c = _mm_add_epi32(c, d), b = _mm_xor_si128(b, c), b = ROTL4(b, 7);                                             \
    } while (0)

/* XORs one 16-byte quarter of each of the four blocks: words w..w+3 of
 * blocks 0..3 are in x[w..w+3], one block per lane. */
static void store4_sse2(const __m128i x[16], int w, const unsigned char *in, unsigned char *out)
{
    __m128i t0 = _mm_unpacklo_epi32(x[w], x[w + 1]);     /* w0 w1 of blocks 0, 1 */
    __m128i t1 = _mm_unpacklo_epi32(x[w + 2], x[w + 3]); /* w2 w3 of blocks 0, 1 */
    __m128i t2 = _mm_unpackhi_epi32(x[w], x[w + 1]);     /* w0 w1 of blocks 2, 3 */
    __m128i t3 = _mm_unpackhi_epi32(x[w + 2], x[w + 3]); /* w2 w3 of blocks 2, 3 */
    __m128i b[4] = {_mm_unpacklo_epi64(t0, t1), _mm_unpackhi_epi64(t0, t1), _mm_unpacklo_epi64(t2, t3),
                    _mm_unpackhi_epi64(t2, t3)};
    for (int k = 0; k < 4; k++) {
        size_t at = (size_t)64 * k + (size_t)4 * w;
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(in + at));
        _mm_storeu_si128((__m128i *)(void *)(out + at), _mm_xor_si128(v, b[k]));
    }
}

static void xor4_sse2(const uint32_t state[16], uint32_t counter, const unsigned char *in, unsigned char *out)
{
    __m128i s[16], x[16];
    for (int i = 0; i < 16; i++)
        s[i] = _mm_set1_epi32((int)state[i]);
    s[12] = _mm_add_epi32(_mm_set1_epi32((int)counter), _mm_set_epi32(3, 2, 1, 0));
    memcpy(x, s, sizeof x);
    for (int round = 0; round < 10; round++) {
        QR4(x[0], x[4], x[8], x[12]);
        QR4(x[1], x[5], x[9], x[13]);
        QR4(x[2], x[6], x[10], x[14]);
        QR4(x[3], x[7], x[11], x[15]);
        QR4(x[0], x[5], x[10], x[15]);
        QR4(x[1], x[6], x[11], x[12]);
        QR4(x[2], x[7], x[8], x[13]);
        QR4(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++)
        x[i] = _mm_add_epi32(x[i], s[i]);
    for (int w = 0; w < 16; w += 4)
        store4_sse2(x, w, in, out);
}
#endif

/* ---- NEON: four blocks per pass ------------------------------------------------ */

#ifdef HAVE_NEON
#define ROTL4N(x, n) vsriq_n_u32(vshlq_n_u32(x, n), x, 32 - (n))
#define ROTL4N16(x) vreinterpretq_u32_u16(vrev32q_u16(vreinterpretq_u16_u32(x)))
#define QR4N(a, b, c, d)                                                                                               \
    do {                                                                                                               \
        a = vaddq_u32(a, b), d = veorq_u32(d, a), d = ROTL4N16(d);                                                     \
        c = vaddq_u32(c, d), b = veorq_u32(b, c), b = ROTL4N(b, 12);                                                   \
        a = vaddq_u32(a, b), d = veorq_u32(d, a), d = ROTL4N(d, 8);                                                    \
        c = vaddq_u32(c, d), b = veorq_u32(b, c), b = ROTL4N(b, 7);                                                    \
    } while (0)

static void store4_neon(const uint32x4_t x[16], int w, const unsigned char *in, unsigned char *out)
{
    uint32x4x2_t lo = vzipq_u32(x[w], x[w + 1]);     /* w0 w1 of blocks 0, 1 | of blocks 2, 3 */
    uint32x4x2_t hi = vzipq_u32(x[w + 2], x[w + 3]); /* w2 w3 likewise */
    uint32x4_t b[4] = {vcombine_u32(vget_low_u32(lo.val[0]), vget_low_u32(hi.val[0])),
                       vcombine_u32(vget_high_u32(lo.val[0]), vget_high_u32(hi.val[0])),
                       vcombine_u32(vget_low_u32(lo.val[1]), vget_low_u32(hi.val[1])),
                       vcombine_u32(vget_high_u32(lo.val[1]), vget_high_u32(hi.val[1]))};
    for (int k = 0; k < 4; k++) {
        size_t at = (size_t)64 * k + (size_t)4 * w;
        uint8x16_t v = vld1q_u8(in + at);
        vst1q_u8(out + at, veorq_u8(v, vreinterpretq_u8_u32(b[k])));
    }
}

static void xor4_neon(const uint32_t state[16], uint32_t counter, const unsigned char *in, unsigned char *out)
{
    static const uint32_t lanes[4] = {0, 1, 2, 3};
    uint32x4_t s[16], x[16];
    for (int i = 0; i < 16; i++)
        s[i] = vdupq_n_u32(state[i]);
    s[12] = vaddq_u32(vdupq_n_u32(counter), vld1q_u32(lanes));
    memcpy(x, s, sizeof x);
    for (int round = 0; round < 10; round++) {
        QR4N(x[0], x[4], x[8], x[12]);
        QR4N(x[1], x[5], x[9], x[13]);
        QR4N(x[2], x[6], x[10], x[14]);
        QR4N(x[3], x[7], x[11], x[15]);
        QR4N(x[0], x[5], x[10], x[15]);
        QR4N(x[1], x[6], x[11], x[12]);
        QR4N(x[2], x[7], x[8], x[13]);
        QR4N(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++)
        x[i] = vaddq_u32(x[i], s[i]);
    for (int w = 0; w < 16; w += 4)
        store4_neon(x, w, in, out);
}
#endif

/* ---- choice ----------------------------------------------------------------------- */

chacha20accel_impl chacha20accel_active(void)
{
#if defined(HAVE_SSE2)
    return CHACHA20ACCEL_SSE2;
#elif defined(HAVE_NEON)
    return CHACHA20ACCEL_NEON;
#else
    return CHACHA20ACCEL_PORTABLE;
#endif
}

bool chacha20accel_available(chacha20accel_impl impl)
{
    return impl == CHACHA20ACCEL_PORTABLE || impl == chacha20accel_active();
}

const char *chacha20accel_name(chacha20accel_impl impl)
{
    switch (impl) {
    case CHACHA20ACCEL_SSE2: return "sse2";
    case CHACHA20ACCEL_NEON: return "neon";
    default: return "portable";
    }
}

void chacha20accel_xor_blocks(chacha20accel_impl impl, const uint32_t state[16], const unsigned char *in,
                              unsigned char *out, size_t nblocks)
{
    uint32_t counter = state[12];
    size_t quads = impl == CHACHA20ACCEL_PORTABLE ? 0 : nblocks / 4;
    for (size_t q = 0; q < quads; q++, counter += 4, in += 256, out += 256) {
#if defined(HAVE_SSE2)
        xor4_sse2(state, counter, in, out);
#elif defined(HAVE_NEON)
        xor4_neon(state, counter, in, out);
#endif
    }
    xor_portable(state, counter, in, out, nblocks - 4 * quads);
}

/* ---- mbedTLS 2.28's MBEDTLS_CHACHA20_ALT ------------------------------------------ */

#ifdef OUTPOST_CHACHA20_ALT
#include <mbedtls/chacha20.h>
#include <mbedtls/platform_util.h>

/* The context is cross/mbedtls/chacha20_alt.h's: state, the current
 * block's keystream and how much of it is used. */

void mbedtls_chacha20_init(mbedtls_chacha20_context *ctx)
{
    mbedtls_platform_zeroize(ctx, sizeof *ctx);
    ctx->keystream_used = sizeof ctx->keystream;
}

void mbedtls_chacha20_free(mbedtls_chacha20_context *ctx)
{
    if (ctx)
        mbedtls_platform_zeroize(ctx, sizeof *ctx);
}

int mbedtls_chacha20_setkey(mbedtls_chacha20_context *ctx, const unsigned char key[32])
{
    if (!ctx || !key)
        return MBEDTLS_ERR_CHACHA20_BAD_INPUT_DATA;
    set_key(ctx->state, key);
    return 0;
}

int mbedtls_chacha20_starts(mbedtls_chacha20_context *ctx, const unsigned char nonce[12], uint32_t counter)
{
    if (!ctx || !nonce)
        return MBEDTLS_ERR_CHACHA20_BAD_INPUT_DATA;
    set_nonce(ctx->state, counter, nonce);
    mbedtls_platform_zeroize(ctx->keystream, sizeof ctx->keystream);
    ctx->keystream_used = sizeof ctx->keystream;
    return 0;
}

int mbedtls_chacha20_update(mbedtls_chacha20_context *ctx, size_t size, const unsigned char *input,
                            unsigned char *output)
{
    if (!ctx || (size > 0 && (!input || !output)))
        return MBEDTLS_ERR_CHACHA20_BAD_INPUT_DATA;
    while (size > 0 && ctx->keystream_used < sizeof ctx->keystream) {
        *output++ = *input++ ^ ctx->keystream[ctx->keystream_used++];
        size--;
    }
    size_t nblocks = size / 64;
    if (nblocks > 0) {
        chacha20accel_xor_blocks(chacha20accel_active(), ctx->state, input, output, nblocks);
        ctx->state[12] += (uint32_t)nblocks;
        input += 64 * nblocks;
        output += 64 * nblocks;
        size -= 64 * nblocks;
    }
    if (size > 0) {
        /* The keystream of a block of zeros is the keystream itself. */
        memset(ctx->keystream, 0, sizeof ctx->keystream);
        chacha20accel_xor_blocks(CHACHA20ACCEL_PORTABLE, ctx->state, ctx->keystream, ctx->keystream, 1);
        ctx->state[12]++;
        for (size_t i = 0; i < size; i++)
            output[i] = input[i] ^ ctx->keystream[i];
        ctx->keystream_used = size;
    }
    return 0;
}

int mbedtls_chacha20_crypt(const unsigned char key[32], const unsigned char nonce[12], uint32_t counter, size_t size,
                           const unsigned char *input, unsigned char *output)
{
    mbedtls_chacha20_context ctx;
    mbedtls_chacha20_init(&ctx);
    int ret = mbedtls_chacha20_setkey(&ctx, key);
    if (ret == 0)
        ret = mbedtls_chacha20_starts(&ctx, nonce, counter);
    if (ret == 0)
        ret = mbedtls_chacha20_update(&ctx, size, input, output);
    mbedtls_chacha20_free(&ctx);
    return ret;
}
#endif
