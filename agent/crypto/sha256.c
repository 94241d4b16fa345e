/*
 * sha256.c — streaming SHA-256 on sha256accel's block function: buffering
 * of partial blocks, and padding and length per FIPS 180-4 section 5.1.1.
 */
#include "crypto/sha256.h"

#include <string.h>

void sha256_init_with(sha256_ctx *ctx, sha256accel_impl impl)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(ctx->state, h0, sizeof h0);
    ctx->total = 0;
    ctx->impl = impl;
}

void sha256_init(sha256_ctx *ctx)
{
    sha256_init_with(ctx, sha256accel_active());
}

void sha256_update(sha256_ctx *ctx, const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t have = (size_t)(ctx->total % 64);
    ctx->total += len;
    if (have) {
        size_t take = 64 - have < len ? 64 - have : len;
        memcpy(ctx->buf + have, p, take);
        p += take;
        len -= take;
        if (have + take < 64)
            return;
        sha256accel_blocks(ctx->impl, ctx->state, ctx->buf, 1);
    }
    /* Whole blocks straight from the caller's buffer: no copy on the bulk path. */
    size_t full = len / 64;
    if (full)
        sha256accel_blocks(ctx->impl, ctx->state, p, full);
    memcpy(ctx->buf, p + 64 * full, len - 64 * full);
}

void sha256_finish(sha256_ctx *ctx, unsigned char digest[32])
{
    uint64_t bits = ctx->total * 8;
    size_t have = (size_t)(ctx->total % 64);
    ctx->buf[have++] = 0x80;
    if (have > 56) {
        memset(ctx->buf + have, 0, 64 - have);
        sha256accel_blocks(ctx->impl, ctx->state, ctx->buf, 1);
        have = 0;
    }
    memset(ctx->buf + have, 0, 56 - have);
    for (int i = 0; i < 8; i++)
        ctx->buf[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256accel_blocks(ctx->impl, ctx->state, ctx->buf, 1);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (unsigned char)(ctx->state[i] >> 24);
        digest[4 * i + 1] = (unsigned char)(ctx->state[i] >> 16);
        digest[4 * i + 2] = (unsigned char)(ctx->state[i] >> 8);
        digest[4 * i + 3] = (unsigned char)ctx->state[i];
    }
}
