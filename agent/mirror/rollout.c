/*
 * rollout.c — the rollout bucket: SHA-256(salt ‖ machine id), first 4 bytes
 * big-endian, compared with percent / 100.
 */
#include "mirror/rollout.h"

#include <ctype.h>
#include <string.h>

#include <mbedtls/md.h>

#include "base/text.h"

#define ROLLOUT_MAX_SALT 64

bool rollout_hex_is_valid(const char *s, size_t max_bytes)
{
    if (!s)
        return false;
    size_t n = strlen(s);
    if (n == 0 || n % 2 != 0 || n / 2 > max_bytes)
        return false;
    return text_is_hex(s, n, false);
}

error_code rollout_bucket(const char *salt_hex, const char *machine_id, uint32_t *bucket, error_info *err)
{
    if (!rollout_hex_is_valid(salt_hex, ROLLOUT_MAX_SALT))
        return error_set(err, ERR_REJECTED,
                         "rollout salt is not hexadecimal (an even number of digits, at most %d bytes)",
                         ROLLOUT_MAX_SALT);
    const char *id = machine_id ? machine_id : "";
    size_t len = strlen(id);
    while (len > 0 && isspace((unsigned char)*id)) {
        id++;
        len--;
    }
    while (len > 0 && isspace((unsigned char)id[len - 1]))
        len--;
    if (len == 0)
        return error_set(err, ERR_CONFIG, "the machine id is empty; set `mirror.machine_id` in the configuration");

    uint8_t salt[ROLLOUT_MAX_SALT];
    size_t salt_len = strlen(salt_hex) / 2;
    if (!text_unhex(salt_hex, salt, salt_len))
        return error_set(err, ERR_REJECTED, "rollout salt is not hexadecimal");

    const mbedtls_md_info_t *info = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    mbedtls_md_context_t md;
    mbedtls_md_init(&md);
    uint8_t digest[32];
    int ok = info && mbedtls_md_setup(&md, info, 0) == 0 && mbedtls_md_starts(&md) == 0 &&
             mbedtls_md_update(&md, salt, salt_len) == 0 && mbedtls_md_update(&md, (const uint8_t *)id, len) == 0 &&
             mbedtls_md_finish(&md, digest) == 0;
    mbedtls_md_free(&md);
    if (!ok)
        return error_set(err, ERR_INTERNAL, "SHA-256 of the rollout salt failed");
    *bucket = (uint32_t)digest[0] << 24 | (uint32_t)digest[1] << 16 | (uint32_t)digest[2] << 8 | (uint32_t)digest[3];
    return ERR_OK;
}

bool rollout_bucket_eligible(uint32_t bucket, double percent)
{
    /* Exact in double: bucket < 2^32 and the division by a power of two. */
    return (double)bucket / 4294967296.0 < percent / 100.0;
}

error_code rollout_eligible(const char *salt_hex, const char *machine_id, double percent, bool *eligible,
                            uint32_t *bucket, error_info *err)
{
    uint32_t b = 0;
    error_code rc = rollout_bucket(salt_hex, machine_id, &b, err);
    if (rc != ERR_OK)
        return rc;
    if (bucket)
        *bucket = b;
    *eligible = rollout_bucket_eligible(b, percent);
    return ERR_OK;
}
