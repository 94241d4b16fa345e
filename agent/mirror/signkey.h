/*
 * signkey.h — the mirror's signing and verifying keys (PRODUCT.md section 8):
 * ECDSA P-256 through mbedtls_pk, deterministic signatures (RFC 6979), and
 * the key id every signature names: the lower-case hex SHA-256 of the public
 * key's DER SubjectPublicKeyInfo.
 *
 * A signkey holds either a private key (keygen, publish) or a public key
 * only (an endpoint's mirror.public_keys). Any other key type or curve is
 * refused where it is loaded, so a signature is always 64-byte P-256.
 */
#ifndef OUTPOST_SIGNKEY_H
#define OUTPOST_SIGNKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct signkey signkey;

#define SIGNKEY_ID_SIZE 65  /* 64 hex digits and the NUL */
#define SIGNKEY_SIG_MAX 160 /* a DER ECDSA P-256 signature is at most 72 bytes */

/* A fresh P-256 key from the platform's secure random source. Free with signkey_free. */
MUST_CHECK error_code signkey_generate(signkey **out, error_info *err);

/*
 * A private key from PEM text (SEC1 or PKCS#8, unencrypted). source names it
 * in errors. ERR_CONFIG when it is not an ECDSA P-256 private key.
 */
MUST_CHECK error_code signkey_parse_private(const char *pem, size_t len, const char *source, signkey **out,
                                            error_info *err);

/*
 * The private key in file path (publish.signing_key_file): refused
 * (ERR_CONFIG) when group or others may read it (as the API key file is),
 * when it does not exist, or when it is not a P-256 private key.
 */
MUST_CHECK error_code signkey_load_private_file(const char *path, signkey **out, error_info *err);

/*
 * A public key from a mirror.public_keys entry: PEM text ("-----BEGIN
 * PUBLIC KEY-----...") or the path of a file holding it. ERR_CONFIG naming
 * the entry when it cannot be read or is not a P-256 public key.
 */
MUST_CHECK error_code signkey_parse_public(const char *pem_or_path, signkey **out, error_info *err);

/* The key id (64 lower-case hex digits); valid while key lives. */
const char *signkey_id(const signkey *key);

/*
 * The ids of keys, sorted and comma-separated, into out (size bytes; cut
 * short when too small): one text for a set of keys, whatever their order.
 */
void signkey_ids_joined(signkey *const *keys, size_t count, char *out, size_t size);

/* Whether key holds a private key (it can sign). */
bool signkey_can_sign(const signkey *key);

/* PEM of the private key (SEC1 "EC PRIVATE KEY") / of the public key
 * (SubjectPublicKeyInfo "PUBLIC KEY"). malloc'd; the caller frees the
 * private one with signkey_pem_free, which wipes it. */
MUST_CHECK error_code signkey_private_pem(const signkey *key, char **pem, error_info *err);
MUST_CHECK error_code signkey_public_pem(const signkey *key, char **pem, error_info *err);
void signkey_pem_free(char *pem);

/*
 * DER ECDSA signature (SHA-256) of data into sig (SIGNKEY_SIG_MAX bytes);
 * deterministic: the same key and data always give the same bytes.
 */
MUST_CHECK error_code signkey_sign(const signkey *key, const void *data, size_t len, uint8_t *sig, size_t *sig_len,
                                   error_info *err);

/* Whether sig is key's valid DER ECDSA/SHA-256 signature of data. */
bool signkey_verify(const signkey *key, const void *data, size_t len, const uint8_t *sig, size_t sig_len);

/* Lower-case hex SHA-256 of data into hex (65 bytes). */
void signkey_sha256_hex(const void *data, size_t len, char hex[SIGNKEY_ID_SIZE]);

/* Frees (and wipes) key; NULL is ignored. */
void signkey_free(signkey *key);

#endif
