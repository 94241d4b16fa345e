/*
 * chacha20_alt.h — Mbed TLS 3.6's ChaCha20 context when it is built with
 * MBEDTLS_CHACHA20_ALT (cross/build-deps copies this file next to
 * mbedtls/chacha20.h): the functions are outpost's, in
 * agent/crypto/chacha20accel.c, which processes four blocks at a time in
 * vector registers.
 */
#ifndef OUTPOST_MBEDTLS_CHACHA20_ALT_H
#define OUTPOST_MBEDTLS_CHACHA20_ALT_H

#include <stddef.h>
#include <stdint.h>

typedef struct mbedtls_chacha20_context {
    uint32_t state[16];          /* constant, key, block counter, nonce */
    unsigned char keystream[64]; /* the keystream of the last partial block */
    size_t keystream_used;       /* bytes of it used (64: none left) */
} mbedtls_chacha20_context;

#endif
