/*
 * root.c — the mirror's root of trust: a root's payload, the N -> N+1 rule,
 * expiry, and writing a new root for the offline ceremony.
 *
 * Order matters as in manifest.c: a root reached from a trusted one is
 * parsed only after a threshold of the trusted root's keys has verified it.
 */
#include "mirror/root.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/text.h"
#include "core/jsonx.h"
#include "core/timefmt.h"

void root_free(root *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->root_key_count; i++)
        signkey_free(r->root_keys[i]);
    for (size_t i = 0; i < r->manifest_key_count; i++)
        signkey_free(r->manifest_keys[i]);
    memset(r, 0, sizeof *r);
}

/* A list of {"keyid", "public_key"}: each key P-256, its id right, none twice. */
static MUST_CHECK error_code parse_keys(const cJSON *p, const char *name, signkey **keys, size_t *count,
                                        const char *source, error_info *err)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, name);
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1 || cJSON_GetArraySize(list) > ROOT_MAX_KEYS)
        return error_set(err, ERR_REJECTED, "%s: `%s` must list 1 to %d keys", source, name, ROOT_MAX_KEYS);
    const cJSON *entry;
    cJSON_ArrayForEach(entry, list)
    {
        const char *keyid = jsonx_nonempty(NULL, entry, "keyid");
        const char *pem = jsonx_nonempty(NULL, entry, "public_key");
        signkey *key = NULL;
        if (!keyid || !pem || !strstr(pem, "-----BEGIN") || signkey_parse_public(pem, &key, NULL) != ERR_OK)
            return error_set(err, ERR_REJECTED,
                             "%s: an entry of `%s` is not {\"keyid\", \"public_key\"} with a PEM "
                             "P-256 public key",
                             source, name);
        if (!text_equal_nocase(keyid, signkey_id(key))) {
            signkey_free(key);
            return error_set(err, ERR_REJECTED, "%s: `%s` names key id %.64s for a key whose id is another", source,
                             name, keyid);
        }
        for (size_t i = 0; i < *count; i++)
            if (strcmp(signkey_id(keys[i]), signkey_id(key)) == 0) {
                signkey_free(key);
                return error_set(err, ERR_REJECTED, "%s: `%s` lists key %.16s… twice", source, name, keyid);
            }
        keys[(*count)++] = key;
    }
    return ERR_OK;
}

static MUST_CHECK error_code parse_threshold(const cJSON *p, const char *name, size_t key_count, size_t *out,
                                             const char *source, error_info *err)
{
    int64_t n = 0;
    if (!jsonx_exact_integer(p, name, 1, &n) || (size_t)n > key_count)
        return error_set(err, ERR_REJECTED, "%s: `%s` must be an integer from 1 to the number of keys (%zu)", source,
                         name, key_count);
    *out = (size_t)n;
    return ERR_OK;
}

/* The payload bytes into r (no signature is looked at). */
static MUST_CHECK error_code parse_payload(const uint8_t *payload, size_t len, const char *source, root *r,
                                           error_info *err)
{
    memset(r, 0, sizeof *r);
    cJSON *p = cJSON_ParseWithLength((const char *)payload, len);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(p, "schema");
    error_code rc = ERR_OK;
    const char *expires = NULL;
    if (!cJSON_IsObject(p) || !cJSON_IsNumber(schema))
        rc = error_set(err, ERR_REJECTED, "%s: the signed payload is not a root (a JSON object with a `schema`)",
                       source);
    else if (floor(schema->valuedouble) != ROOT_SCHEMA)
        rc = error_set(err, ERR_REJECTED, "%s: root schema %g is not one this outpost knows; update outpost", source,
                       schema->valuedouble);
    else if (!jsonx_exact_integer(p, "version", 1, &r->version))
        rc = error_set(err, ERR_REJECTED, "%s: the root's `version` is missing or not an integer from 1", source);
    else if (!(expires = jsonx_nonempty(NULL, p, "expires_at")) || !timefmt_parse_iso8601(expires, &r->expires_at))
        rc = error_set(err, ERR_REJECTED, "%s: the root's `expires_at` is missing or not a UTC time", source);
    if (rc == ERR_OK)
        rc = parse_keys(p, "root_keys", r->root_keys, &r->root_key_count, source, err);
    if (rc == ERR_OK)
        rc = parse_threshold(p, "root_threshold", r->root_key_count, &r->root_threshold, source, err);
    if (rc == ERR_OK)
        rc = parse_keys(p, "manifest_keys", r->manifest_keys, &r->manifest_key_count, source, err);
    if (rc == ERR_OK)
        rc = parse_threshold(p, "manifest_threshold", r->manifest_key_count, &r->manifest_threshold, source, err);
    cJSON_Delete(p);
    if (rc != ERR_OK)
        root_free(r);
    else
        signkey_sha256_hex(payload, len, r->id);
    return rc;
}

static MUST_CHECK error_code open_envelope(const void *data, size_t len, const char *source, envelope *env,
                                           error_info *err)
{
    if (len > ROOT_MAX_BYTES)
        return error_set(err, ERR_REJECTED, "%s: a root is at most 64 KiB, this is %zu bytes", source, len);
    error_code rc = envelope_open(data, len, env, err);
    if (rc != ERR_OK) {
        err->code = ERR_REJECTED;
        return error_prefix(err, "%s: not a signed root", source);
    }
    return ERR_OK;
}

/* ERR_OK when env carries threshold valid signatures by keys. whose: "version 3's root keys". */
static MUST_CHECK error_code need_signatures(const envelope *env, signkey *const *keys, size_t count, size_t threshold,
                                             const char *source, const char *whose, error_info *err)
{
    size_t valid = envelope_count(env, ROOT_CONTEXT, keys, count, NULL, NULL);
    if (valid >= threshold)
        return ERR_OK;
    return error_set(err, ERR_REJECTED,
                     "%s: signed by %zu of %s, %zu needed; the root was not signed by enough key holders (`outpost "
                     "root sign`), or it was changed after signing",
                     source, valid, whose, threshold);
}

error_code root_read_unverified(const void *data, size_t len, const char *source, root *r, error_info *err)
{
    memset(r, 0, sizeof *r);
    envelope env;
    error_code rc = open_envelope(data, len, source, &env, err);
    if (rc == ERR_OK)
        rc = parse_payload(env.payload, env.payload_len, source, r, err);
    envelope_free(&env);
    return rc;
}

error_code root_open_trusted(const void *data, size_t len, const char *source, root *r, error_info *err)
{
    memset(r, 0, sizeof *r);
    envelope env;
    error_code rc = open_envelope(data, len, source, &env, err);
    if (rc == ERR_OK)
        rc = parse_payload(env.payload, env.payload_len, source, r, err);
    if (rc == ERR_OK) {
        char whose[64];
        snprintf(whose, sizeof whose, "its own %zu root keys", r->root_key_count);
        rc = need_signatures(&env, r->root_keys, r->root_key_count, r->root_threshold, source, whose, err);
        if (rc != ERR_OK)
            root_free(r);
    }
    envelope_free(&env);
    return rc;
}

error_code root_open_next(const root *trusted, const void *data, size_t len, const char *source, root *next,
                          error_info *err)
{
    memset(next, 0, sizeof *next);
    envelope env;
    error_code rc = open_envelope(data, len, source, &env, err);
    char whose[96];
    snprintf(whose, sizeof whose, "version %lld's %zu root keys", (long long)trusted->version, trusted->root_key_count);
    /* The trusted root's keys first: an unendorsed file is never parsed. */
    if (rc == ERR_OK)
        rc = need_signatures(&env, trusted->root_keys, trusted->root_key_count, trusted->root_threshold, source, whose,
                             err);
    if (rc == ERR_OK)
        rc = parse_payload(env.payload, env.payload_len, source, next, err);
    if (rc == ERR_OK && next->version != trusted->version + 1) {
        rc = error_set(err, ERR_REJECTED, "%s: says version %lld where version %lld must follow version %lld", source,
                       (long long)next->version, (long long)trusted->version + 1, (long long)trusted->version);
        root_free(next);
    }
    if (rc == ERR_OK) {
        snprintf(whose, sizeof whose, "its own %zu root keys", next->root_key_count);
        rc = need_signatures(&env, next->root_keys, next->root_key_count, next->root_threshold, source, whose, err);
        if (rc != ERR_OK)
            root_free(next);
    }
    envelope_free(&env);
    return rc;
}

error_code root_check_expiry(const root *r, int64_t now_s, error_info *err)
{
    if (now_s < r->expires_at)
        return ERR_OK;
    char at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(r->expires_at, at);
    return error_set(err, ERR_TEMPORARY,
                     "mirror root expired at %s (version %lld): nothing is installed until the root's key holders "
                     "sign and publish a new root version",
                     at, (long long)r->version);
}

void root_manifest_keyids(const root *r, char *out, size_t size)
{
    signkey_ids_joined(r->manifest_keys, r->manifest_key_count, out, size);
}

/* ---- Writing a root ---- */

static MUST_CHECK error_code add_keys(cJSON *o, const char *name, signkey *const *keys, size_t count, error_info *err)
{
    cJSON *list = cJSON_AddArrayToObject(o, name);
    if (!list)
        return error_set(err, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < count; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(signkey_id(keys[i]), signkey_id(keys[j])) == 0)
                return error_set(err, ERR_USAGE, "key %s is given twice for `%s`", signkey_id(keys[i]), name);
        char *pem = NULL;
        error_code rc = signkey_public_pem(keys[i], &pem, err);
        if (rc != ERR_OK)
            return rc;
        cJSON *entry = cJSON_CreateObject();
        bool ok = entry && cJSON_AddItemToArray(list, entry);
        if (!ok)
            cJSON_Delete(entry);
        ok = ok && cJSON_AddStringToObject(entry, "keyid", signkey_id(keys[i])) &&
             cJSON_AddStringToObject(entry, "public_key", pem);
        free(pem);
        if (!ok)
            return error_set(err, ERR_NOMEM, "out of memory");
    }
    return ERR_OK;
}

error_code root_write_unsigned(const root_spec *spec, char **text, size_t *len, error_info *err)
{
    if (spec->root_key_count < 1 || spec->root_key_count > ROOT_MAX_KEYS || spec->manifest_key_count < 1 ||
        spec->manifest_key_count > ROOT_MAX_KEYS)
        return error_set(err, ERR_USAGE, "a root lists 1 to %d root keys and 1 to %d manifest keys", ROOT_MAX_KEYS,
                         ROOT_MAX_KEYS);
    if (spec->root_threshold < 1 || spec->root_threshold > spec->root_key_count)
        return error_set(err, ERR_USAGE, "the root threshold must be from 1 to the number of root keys (%zu)",
                         spec->root_key_count);
    if (spec->manifest_threshold < 1 || spec->manifest_threshold > spec->manifest_key_count)
        return error_set(err, ERR_USAGE, "the manifest threshold must be from 1 to the number of manifest keys (%zu)",
                         spec->manifest_key_count);
    char expires[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(spec->expires_at, expires);
    cJSON *o = cJSON_CreateObject();
    error_code rc = o && cJSON_AddNumberToObject(o, "schema", ROOT_SCHEMA) &&
                            cJSON_AddNumberToObject(o, "version", (double)spec->version) &&
                            cJSON_AddStringToObject(o, "expires_at", expires)
                        ? ERR_OK
                        : error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK)
        rc = add_keys(o, "root_keys", spec->root_keys, spec->root_key_count, err);
    if (rc == ERR_OK && !cJSON_AddNumberToObject(o, "root_threshold", (double)spec->root_threshold))
        rc = error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK)
        rc = add_keys(o, "manifest_keys", spec->manifest_keys, spec->manifest_key_count, err);
    if (rc == ERR_OK && !cJSON_AddNumberToObject(o, "manifest_threshold", (double)spec->manifest_threshold))
        rc = error_set(err, ERR_NOMEM, "out of memory");
    char *payload = rc == ERR_OK ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (rc == ERR_OK && !payload)
        rc = error_set(err, ERR_NOMEM, "out of memory");
    envelope env;
    memset(&env, 0, sizeof env);
    if (rc == ERR_OK)
        rc = envelope_init(&env, payload, strlen(payload), err);
    if (rc == ERR_OK)
        rc = envelope_write(&env, text, len, err);
    envelope_free(&env);
    free(payload);
    return rc;
}
