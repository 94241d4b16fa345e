/*
 * chacha20accel.h — the ChaCha20 stream cipher (RFC 8439) on the CPU's
 * vector unit, four blocks at a time: SSE2 on x86-64 and NEON on ARMv8,
 * both part of those architectures' baseline, so no CPU check is needed;
 * the portable C code elsewhere.
 *
 * Why: over HTTPS, mbedTLS negotiates ChaCha20-Poly1305 first (its
 * preference, and the faster of its two AEADs: its AES-GCM works byte by
 * byte), and its portable ChaCha20 took half of a large download's CPU.
 * The release builds (scripts/release) link an mbedTLS built by
 * cross/build-deps with MBEDTLS_CHACHA20_ALT and cross/mbedtls/chacha20_alt.h:
 * this module then defines mbedTLS's ChaCha20 functions (compiled with
 * OUTPOST_CHACHA20_ALT). The Debian build links Debian's mbedTLS, which has
 * its own; there this module is only reachable through its tests.
 */
#ifndef OUTPOST_CRYPTO_CHACHA20ACCEL_H
#define OUTPOST_CRYPTO_CHACHA20ACCEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    CHACHA20ACCEL_PORTABLE = 1,
    CHACHA20ACCEL_SSE2, /* x86-64 */
    CHACHA20ACCEL_NEON, /* ARMv8 (AArch64) */
} chacha20accel_impl;

/* The fastest implementation this build has (the vector one where the
 * architecture has one). */
chacha20accel_impl chacha20accel_active(void);

/* Whether impl is compiled into this build (the portable code always is). */
bool chacha20accel_available(chacha20accel_impl impl);

/* "portable", "sse2", "neon". */
const char *chacha20accel_name(chacha20accel_impl impl);

/* Fills state[16] from the key, the block counter and the 96-bit nonce as
 * RFC 8439 section 2.3 lays them out. */
void chacha20accel_init_state(uint32_t state[16], const unsigned char key[32], uint32_t counter,
                              const unsigned char nonce[12]);

/* XORs the keystream of nblocks 64-byte blocks into in, writing out (in and
 * out may be the same buffer, not otherwise overlapping). The first block
 * is state's counter (state[12]); the counter of the next block is
 * state[12] + nblocks (modulo 2^32, as mbedTLS counts), which the caller
 * stores: state is not changed. impl must be available. */
void chacha20accel_xor_blocks(chacha20accel_impl impl, const uint32_t state[16], const unsigned char *in,
                              unsigned char *out, size_t nblocks);

#endif
