/*
 * sha256.h — streaming SHA-256 (init/update/finish) over sha256accel's block
 * function, for bulk file hashing: the CPU's SHA instructions in every build,
 * including the Debian one, whose mbedTLS hashes in portable C.
 *
 * The context is plain data owned by the caller (no heap, nothing to free);
 * the block function is sha256accel_active()'s, chosen at sha256_init.
 */
#ifndef OUTPOST_CRYPTO_SHA256_H
#define OUTPOST_CRYPTO_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "crypto/sha256accel.h"

typedef struct {
    uint32_t state[8];
    uint64_t total;        /* bytes hashed so far */
    unsigned char buf[64]; /* the partial block: total % 64 bytes */
    sha256accel_impl impl;
} sha256_ctx;

/* Starts a hash on sha256accel_active()'s block function. */
void sha256_init(sha256_ctx *ctx);

/* Starts a hash on impl's block function (which must be available). */
void sha256_init_with(sha256_ctx *ctx, sha256accel_impl impl);

void sha256_update(sha256_ctx *ctx, const void *data, size_t len);

/* Pads per FIPS 180-4 and writes the digest; ctx must be re-initialised
 * before further use. */
void sha256_finish(sha256_ctx *ctx, unsigned char digest[32]);

#endif
