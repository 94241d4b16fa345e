/*
 * gcmaccel.h — AES-GCM (NIST SP 800-38D) on the CPU's AES and carry-less
 * multiply instructions (x86-64 AES-NI + PCLMULQDQ, eight blocks in flight
 * and one GHASH reduction per eight blocks) when the CPU has them, portable
 * code otherwise (mbedTLS's AES, a 4-bit table GHASH); chosen once per
 * process, at first use.
 *
 * Why: Mbed TLS 2.28's GCM worked a block at a time (about 130 MB/s here
 * even with its AES-NI), so the release builds negotiated
 * ChaCha20-Poly1305; an HTTPS download's record decryption was then its
 * bottleneck. Every build links the Mbed TLS that cross/build-deps builds
 * with MBEDTLS_GCM_ALT and cross/mbedtls/gcm_alt.h: this module then
 * defines Mbed TLS's mbedtls_gcm_* functions (compiled with
 * OUTPOST_GCM_ALT), which the TLS record layer and PSA's AEAD reach
 * through mbedtls_cipher. (Whether 3.6's own GCM, which has AES-NI and
 * PCLMULQDQ code, makes this unnecessary is measured separately.)
 *
 * OUTPOST_GCM_PORTABLE=1 in the environment forces the portable code (to
 * test the fallback, or to rule the CPU path out).
 *
 * The functions follow mbedtls_gcm_*'s contract in 3.6 and return its
 * error codes (0, MBEDTLS_ERR_GCM_BAD_INPUT, MBEDTLS_ERR_GCM_AUTH_FAILED,
 * MBEDTLS_ERR_GCM_BUFFER_TOO_SMALL): they are Mbed TLS's GCM.
 */
#ifndef OUTPOST_CRYPTO_GCMACCEL_H
#define OUTPOST_CRYPTO_GCMACCEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mbedtls/aes.h>

#include "base/error.h"

typedef enum {
    GCMACCEL_PORTABLE = 1,
    GCMACCEL_X86_AESNI, /* AES-NI + PCLMULQDQ (x86-64) */
    GCMACCEL_ARMV8,     /* ARMv8 AES + PMULL (AArch64) */
} gcmaccel_impl;

/* The implementation this process uses (portable when forced or when the
 * CPU has no AES and carry-less multiply instructions). */
gcmaccel_impl gcmaccel_active(void);

/* What gcmaccel_active() decides: the CPU's implementation when the CPU has
 * one (cpu_has) and the environment value forced_portable (may be NULL) is
 * not "1"; the portable code otherwise. */
gcmaccel_impl gcmaccel_choose(bool cpu_has, const char *forced_portable);

/* Whether impl can run on this CPU (the portable code always can). */
bool gcmaccel_available(gcmaccel_impl impl);

/* "portable", "x86-aesni-pclmul", "armv8-aes-pmull". */
const char *gcmaccel_name(gcmaccel_impl impl);

/* One GCM key and one message's state. Owned by the caller (any storage);
 * gcmaccel_free wipes it. Not to be copied once keyed. */
typedef struct gcmaccel_context {
    mbedtls_aes_context aes;     /* the key schedule (AES-NI reads its round keys) */
    uint64_t hl[16], hh[16];     /* portable GHASH: multiples of H, 4 bits at a time */
    unsigned char hpow[8][16];   /* x86: H^1..H^8, byte-reflected */
    uint64_t len, add_len;       /* bytes of text and of additional data so far */
    unsigned char base_ectr[16]; /* E(K, J0): masks the tag */
    unsigned char y[16];         /* the counter block last used */
    unsigned char ectr[16];      /* its key stream, while a block is only partly done */
    unsigned char buf[16];       /* the GHASH accumulator */
    unsigned pending;            /* bytes XORed into buf since its last multiplication (0-15) */
    int mode;                    /* MBEDTLS_GCM_ENCRYPT or MBEDTLS_GCM_DECRYPT */
    int impl;                    /* gcmaccel_impl, fixed by gcmaccel_init */
    int keyed;
} gcmaccel_context;

/* Prepares ctx to run on impl (which must be available). */
void gcmaccel_init(gcmaccel_context *ctx, gcmaccel_impl impl);

/* Sets the AES key: keybits 128, 192 or 256. */
MUST_CHECK int gcmaccel_setkey(gcmaccel_context *ctx, const unsigned char *key, unsigned int keybits);

/* Starts a message: mode MBEDTLS_GCM_ENCRYPT or _DECRYPT, the IV (any
 * length but 0). */
MUST_CHECK int gcmaccel_starts(gcmaccel_context *ctx, int mode, const unsigned char *iv, size_t iv_len);

/* Takes add_len bytes of additional data; any number of calls, in any
 * lengths, all before the first gcmaccel_update. */
MUST_CHECK int gcmaccel_update_ad(gcmaccel_context *ctx, const unsigned char *add, size_t add_len);

/* Encrypts or decrypts length bytes (any length, in any number of calls)
 * into output (output_size bytes; at least length), and sets
 * *output_length to length. output may be input, or before it, not after
 * it within length. */
MUST_CHECK int gcmaccel_update(gcmaccel_context *ctx, const unsigned char *input, size_t length, unsigned char *output,
                               size_t output_size, size_t *output_length);

/* Ends the message: writes the first tag_len (4 to 16) bytes of the tag.
 * GCM keeps no text back: *output_length is 0 (output may be NULL). */
MUST_CHECK int gcmaccel_finish(gcmaccel_context *ctx, unsigned char *output, size_t output_size, size_t *output_length,
                               unsigned char *tag, size_t tag_len);

/* starts, update and finish in one call. */
MUST_CHECK int gcmaccel_crypt_and_tag(gcmaccel_context *ctx, int mode, size_t length, const unsigned char *iv,
                                      size_t iv_len, const unsigned char *add, size_t add_len,
                                      const unsigned char *input, unsigned char *output, size_t tag_len,
                                      unsigned char *tag);

/* Decrypts and checks the tag (in constant time); on a mismatch output is
 * zeroed and MBEDTLS_ERR_GCM_AUTH_FAILED returned. */
MUST_CHECK int gcmaccel_auth_decrypt(gcmaccel_context *ctx, size_t length, const unsigned char *iv, size_t iv_len,
                                     const unsigned char *add, size_t add_len, const unsigned char *tag, size_t tag_len,
                                     const unsigned char *input, unsigned char *output);

/* Wipes ctx (NULL is fine). */
void gcmaccel_free(gcmaccel_context *ctx);

#endif
