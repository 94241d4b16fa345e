/*
 * authenticode_int.h — the part of authenticode.h that only the folder's
 * own files see: what the format readers (pe.c, msi.c) and the signature's
 * parts (cms.c, chain.c, timestamp.c) share with authenticode.c, one
 * verification's state, and the blob check the fuzzer and unit tests
 * drive. As curl keeps vtls_int.h beside vtls.h: callers outside
 * authenticode/ include authenticode.h, and scripts/check-layering refuses
 * an *_int.h included from outside its folder.
 */
#ifndef OUTPOST_AUTHENTICODE_INT_H
#define OUTPOST_AUTHENTICODE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mbedtls/md.h>
#include <mbedtls/x509_crl.h>
#include <mbedtls/x509_crt.h>

#include "authenticode/authenticode.h"
#include "base/error.h"

/* Little-endian fields of PE headers and compound files (pe.c, olecf.c,
 * msi.c); p must hold the field's bytes. */
static inline uint16_t get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t get_le64(const uint8_t *p)
{
    return (uint64_t)get_le32(p) | ((uint64_t)get_le32(p + 4) << 32);
}

/*
 * Records a verdict and its reason (printf-style) in *result and returns
 * ERR_REJECTED, so a format reader can write `return authenticode_reject(...)`.
 * authenticode_verify_* turn ERR_REJECTED back into ERR_OK plus the verdict.
 */
MUST_CHECK error_code authenticode_reject(authenticode_result *result, authenticode_verdict verdict, const char *fmt,
                                          ...) OUTPOST_PRINTF(3, 4);

/*
 * Appends one printf-style note to notes (size bytes, a C string), "; "
 * between notes, cut to fit: what could not be read, and was passed over.
 */
void authenticode_note(char *notes, size_t size, const char *fmt, ...) OUTPOST_PRINTF(3, 4);

/*
 * One verification (authenticode_verify_stream, authenticode_check_blob):
 * the policy's trust loaded once, the signature being judged, and the
 * file's digests computed once for all its signatures.
 */
typedef struct verify_ctx {
    const authenticode_policy *policy;
    authenticode_result *result; /* the signature being judged (see signatures_judge) */
    mbedtls_x509_crt trusted;    /* trusted_ca_file */
    mbedtls_x509_crt ts_trusted; /* timestamp_ca_file; empty (raw.len 0) when not given */
    mbedtls_x509_crl crls;       /* crl_files; empty (raw.len 0) when none */
    char ca_notes[512];          /* certificates of the CA files that could not be read */
    bool ca_file_unreadable;     /* one of them is in a named file (not "system") */
    int64_t now;                 /* judging time without a timestamp */
    bool trust_digest;           /* authenticode_check_blob: skip the image digest */
    unsigned char digests[MBEDTLS_MD_SHA512 + 1][MBEDTLS_MD_MAX_SIZE]; /* the file's digest per
                                                                          algorithm, computed once */
    bool have_digest[MBEDTLS_MD_SHA512 + 1];
} verify_ctx;

/*
 * Reads exactly len bytes at offset of f into buf (platform_read_at: 64-bit
 * offsets on every platform). ERR_IO when the file is shorter or unreadable
 * (the message names the offset).
 */
MUST_CHECK error_code authenticode_read_at(FILE *f, uint64_t offset, void *buf, size_t len, error_info *err);

/*
 * For the fuzzer and unit tests only, never to accept a file: runs every
 * check of a PKCS#7 signature blob (DER) as if it had been found in a PE
 * image whose digest matches the signed one, so malformed signatures can be
 * exercised without building an image around them. Same contract as
 * authenticode_verify_stream.
 */
MUST_CHECK error_code authenticode_check_blob(const uint8_t *der, size_t der_len, const authenticode_policy *policy,
                                              authenticode_result *result, error_info *err);

#endif
