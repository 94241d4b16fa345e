/*
 * gcm_alt.h — Mbed TLS 3.6's GCM context when it is built with
 * MBEDTLS_GCM_ALT (cross/build-deps copies this file next to mbedtls/gcm.h):
 * the functions are outpost's, in agent/crypto/gcmaccel.c (AES-NI and
 * PCLMULQDQ several blocks at a time where the CPU has them). Mbed TLS only
 * allocates the context and passes it on; its fields are gcmaccel.h's
 * gcmaccel_context, which gcmaccel.c checks fits in here.
 */
#ifndef OUTPOST_MBEDTLS_GCM_ALT_H
#define OUTPOST_MBEDTLS_GCM_ALT_H

#include <stdint.h>

typedef struct mbedtls_gcm_context {
    uint64_t opaque[160]; /* a gcmaccel_context */
} mbedtls_gcm_context;

#endif
