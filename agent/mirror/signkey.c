/*
 * signkey.c — ECDSA P-256 keys for the fleet mirror over mbedtls_pk.
 *
 * Mbed TLS 3.6 (every build's: cmake/mbedtls.cmake). Signing goes through
 * mbedtls_ecdsa_write_signature (under mbedtls_pk_sign), which is
 * deterministic (RFC 6979) with MBEDTLS_ECDSA_DETERMINISTIC, as the default
 * configuration has it; the RNG only blinds.
 */
#include "mirror/signkey.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/ecdsa.h>
#include <mbedtls/ecp.h>
#include <mbedtls/md.h>
#include <mbedtls/pk.h>

#include "base/dynbuf.h"
#include "base/text.h"
#include "platform/platform.h"

#if !defined(MBEDTLS_ECDSA_DETERMINISTIC)
#error "outpost's mirror signatures need MBEDTLS_ECDSA_DETERMINISTIC (RFC 6979)"
#endif

#define PEM_BUFFER 4096

struct signkey {
    mbedtls_pk_context pk;
    bool private_key;
    char id[SIGNKEY_ID_SIZE];
};

static int random_source(void *unused, unsigned char *buf, size_t len)
{
    (void)unused;
    return platform_random_bytes(buf, len, NULL) == ERR_OK ? 0 : MBEDTLS_ERR_ECP_RANDOM_FAILED;
}

void signkey_sha256_hex(const void *data, size_t len, char hex[SIGNKEY_ID_SIZE])
{
    uint8_t digest[32];
    const mbedtls_md_info_t *info = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    if (!info || mbedtls_md(info, data, len, digest) != 0)
        memset(digest, 0, sizeof digest);
    text_hex(digest, sizeof digest, hex);
}

static signkey *key_new(void)
{
    signkey *key = calloc(1, sizeof *key);
    if (key)
        mbedtls_pk_init(&key->pk);
    return key;
}

void signkey_free(signkey *key)
{
    if (!key)
        return;
    mbedtls_pk_free(&key->pk);
    volatile unsigned char *p = (volatile unsigned char *)key;
    for (size_t i = 0; i < sizeof *key; i++)
        p[i] = 0;
    free(key);
}

/* Checks the type and curve, and computes the key id. */
static MUST_CHECK error_code key_finish(signkey *key, const char *source, error_info *err)
{
    if (mbedtls_pk_get_type(&key->pk) != MBEDTLS_PK_ECKEY ||
        mbedtls_ecp_keypair_get_group_id(mbedtls_pk_ec(key->pk)) != MBEDTLS_ECP_DP_SECP256R1)
        return error_set(err, ERR_CONFIG, "%s is not an ECDSA P-256 key (make one with `outpost keygen -o FILE`)",
                         source);
    unsigned char der[512];
    int n = mbedtls_pk_write_pubkey_der(&key->pk, der, sizeof der);
    if (n <= 0)
        return error_set(err, ERR_CONFIG, "%s: cannot encode its public key", source);
    /* mbedtls writes DER at the end of the buffer. */
    signkey_sha256_hex(der + sizeof der - (size_t)n, (size_t)n, key->id);
    return ERR_OK;
}

error_code signkey_generate(signkey **out, error_info *err)
{
    signkey *key = key_new();
    if (!key)
        return error_set(err, ERR_NOMEM, "out of memory making a signing key");
    int rc = mbedtls_pk_setup(&key->pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
    if (rc == 0)
        rc = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(key->pk), random_source, NULL);
    if (rc != 0) {
        signkey_free(key);
        return error_set(err, ERR_INTERNAL,
                         "cannot generate an ECDSA P-256 key (mbedtls -0x%04x); is the system's random "
                         "source available?",
                         (unsigned)-rc);
    }
    key->private_key = true;
    error_code code = key_finish(key, "the new key", err);
    if (code != ERR_OK) {
        signkey_free(key);
        return code;
    }
    *out = key;
    return ERR_OK;
}

error_code signkey_parse_private(const char *pem, size_t len, const char *source, signkey **out, error_info *err)
{
    signkey *key = key_new();
    if (!key)
        return error_set(err, ERR_NOMEM, "out of memory reading %s", source);
    /* mbedtls wants the PEM's terminating NUL counted in the length. */
    char *copy = text_dup_n(pem, len);
    if (!copy) {
        signkey_free(key);
        return error_set(err, ERR_NOMEM, "out of memory reading %s", source);
    }
    int rc = mbedtls_pk_parse_key(&key->pk, (const unsigned char *)copy, len + 1, NULL, 0, random_source, NULL);
    dynbuf_wipe(copy, len);
    free(copy);
    if (rc != 0) {
        signkey_free(key);
        return error_set(err, ERR_CONFIG,
                         "%s is not an unencrypted PEM private key (mbedtls -0x%04x); make one with "
                         "`outpost keygen -o FILE`",
                         source, (unsigned)-rc);
    }
    key->private_key = true;
    error_code code = key_finish(key, source, err);
    if (code != ERR_OK) {
        signkey_free(key);
        return code;
    }
    *out = key;
    return ERR_OK;
}

error_code signkey_load_private_file(const char *path, signkey **out, error_info *err)
{
    char *text = NULL;
    size_t len = 0;
    error_code rc = platform_read_trusted_file("signing key file", path, true, 64 * 1024, &text, &len, err);
    if (rc == ERR_NOT_FOUND)
        return error_set(err, ERR_CONFIG, "signing key file %s does not exist; make one with `outpost keygen -o %s`",
                         path, path);
    if (rc != ERR_OK) {
        err->code = ERR_CONFIG;
        return rc; /* the message names the signing key file */
    }
    char source[600];
    snprintf(source, sizeof source, "signing key file %s", path);
    rc = signkey_parse_private(text, len, source, out, err);
    dynbuf_wipe(text, len);
    free(text);
    return rc;
}

error_code signkey_parse_public(const char *pem_or_path, signkey **out, error_info *err)
{
    char *file_text = NULL;
    size_t len = 0;
    const char *pem = pem_or_path;
    bool inline_pem = strstr(pem_or_path, "-----BEGIN") != NULL;
    char source[300];
    if (inline_pem) {
        snprintf(source, sizeof source, "mirror.public_keys entry \"%.40s...\"", pem_or_path);
        len = strlen(pem);
    } else {
        snprintf(source, sizeof source, "mirror.public_keys file %s", pem_or_path);
        error_code rc =
            platform_read_trusted_file("public key file", pem_or_path, false, 64 * 1024, &file_text, &len, err);
        if (rc != ERR_OK) {
            err->code = ERR_CONFIG;
            return error_prefix(err, "%s (a PEM public key or the path of a file holding one)", source);
        }
        pem = file_text;
    }
    signkey *key = key_new();
    char *copy = key ? text_dup_n(pem, len) : NULL;
    free(file_text);
    if (!copy) {
        signkey_free(key);
        return error_set(err, ERR_NOMEM, "out of memory reading %s", source);
    }
    int rc = mbedtls_pk_parse_public_key(&key->pk, (const unsigned char *)copy, len + 1);
    /* A PEM pasted as one line lost the line breaks mbedTLS needs. */
    const char *body = strstr(copy, "-----BEGIN");
    bool one_line = rc != 0 && body && !strchr(body, '\n');
    free(copy);
    if (one_line) {
        signkey_free(key);
        return error_set(err, ERR_CONFIG,
                         "%s is a PEM key on one line: a PEM needs its line breaks; in JSON write them as \\n "
                         "(\"-----BEGIN PUBLIC KEY-----\\nMFkw...\\n-----END PUBLIC KEY-----\\n\"), or put the key "
                         "in a file (keygen --public-out) and give its path",
                         source);
    }
    if (rc != 0) {
        signkey_free(key);
        return error_set(err, ERR_CONFIG,
                         "%s is not a PEM public key (mbedtls -0x%04x); paste what `outpost keygen` "
                         "printed",
                         source, (unsigned)-rc);
    }
    error_code code = key_finish(key, source, err);
    if (code != ERR_OK) {
        signkey_free(key);
        return code;
    }
    *out = key;
    return ERR_OK;
}

const char *signkey_id(const signkey *key)
{
    return key->id;
}

static int compare_ids(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void signkey_ids_joined(signkey *const *keys, size_t count, char *out, size_t size)
{
    if (size)
        out[0] = '\0';
    const char **ids = calloc(count ? count : 1, sizeof *ids);
    if (!ids)
        return;
    for (size_t i = 0; i < count; i++)
        ids[i] = signkey_id(keys[i]);
    qsort(ids, count, sizeof *ids, compare_ids);
    size_t used = 0;
    for (size_t i = 0; i < count && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%s", i ? "," : "", ids[i]);
    free(ids);
}

bool signkey_can_sign(const signkey *key)
{
    return key->private_key;
}

static MUST_CHECK error_code write_pem(const signkey *key, bool private_part, char **pem, error_info *err)
{
    unsigned char *buf = calloc(1, PEM_BUFFER);
    if (!buf)
        return error_set(err, ERR_NOMEM, "out of memory writing a key");
    mbedtls_pk_context *pk = (mbedtls_pk_context *)&key->pk;
    int rc =
        private_part ? mbedtls_pk_write_key_pem(pk, buf, PEM_BUFFER) : mbedtls_pk_write_pubkey_pem(pk, buf, PEM_BUFFER);
    if (rc != 0) {
        signkey_pem_free((char *)buf);
        return error_set(err, ERR_INTERNAL, "cannot write the key as PEM (mbedtls -0x%04x)", (unsigned)-rc);
    }
    *pem = (char *)buf;
    return ERR_OK;
}

error_code signkey_private_pem(const signkey *key, char **pem, error_info *err)
{
    if (!key->private_key)
        return error_set(err, ERR_INTERNAL, "a public key has no private part");
    return write_pem(key, true, pem, err);
}

error_code signkey_public_pem(const signkey *key, char **pem, error_info *err)
{
    return write_pem(key, false, pem, err);
}

void signkey_pem_free(char *pem)
{
    dynbuf_secret_free(pem);
}

error_code signkey_sign(const signkey *key, const void *data, size_t len, uint8_t *sig, size_t *sig_len,
                        error_info *err)
{
    if (!key->private_key)
        return error_set(err, ERR_INTERNAL, "key %s is a public key and cannot sign", key->id);
    uint8_t hash[32];
    const mbedtls_md_info_t *info = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    if (!info || mbedtls_md(info, data, len, hash) != 0)
        return error_set(err, ERR_INTERNAL, "SHA-256 failed while signing");
    mbedtls_pk_context *pk = (mbedtls_pk_context *)&key->pk;
    int rc =
        mbedtls_pk_sign(pk, MBEDTLS_MD_SHA256, hash, sizeof hash, sig, SIGNKEY_SIG_MAX, sig_len, random_source, NULL);
    if (rc != 0)
        return error_set(err, ERR_INTERNAL, "ECDSA signing failed (mbedtls -0x%04x)", (unsigned)-rc);
    return ERR_OK;
}

bool signkey_verify(const signkey *key, const void *data, size_t len, const uint8_t *sig, size_t sig_len)
{
    uint8_t hash[32];
    const mbedtls_md_info_t *info = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    if (!info || mbedtls_md(info, data, len, hash) != 0)
        return false;
    return mbedtls_pk_verify((mbedtls_pk_context *)&key->pk, MBEDTLS_MD_SHA256, hash, sizeof hash, sig, sig_len) == 0;
}
