/*
 * envelope.c — the manifest's and the roots' signed envelope: reading its
 * shape, counting the signatures that verify, adding one, writing it.
 */
#include "mirror/envelope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <mbedtls/base64.h>

#include "base/text.h"

/* Decodes base64 text into a malloc'd buffer (NUL after the bytes). */
static uint8_t *base64_decode(const char *text, size_t *out_len)
{
    size_t len = strlen(text), need = 0;
    int rc = mbedtls_base64_decode(NULL, 0, &need, (const unsigned char *)text, len);
    if (rc != 0 && rc != MBEDTLS_ERR_BASE64_BUFFER_TOO_SMALL)
        return NULL;
    uint8_t *buf = malloc(need + 1);
    if (!buf)
        return NULL;
    if (mbedtls_base64_decode(buf, need + 1, out_len, (const unsigned char *)text, len) != 0) {
        free(buf);
        return NULL;
    }
    buf[*out_len] = 0;
    return buf;
}

static char *base64_encode(const uint8_t *data, size_t len)
{
    size_t need = 0;
    mbedtls_base64_encode(NULL, 0, &need, data, len);
    char *text = malloc(need + 1);
    size_t written = 0;
    if (!text || mbedtls_base64_encode((unsigned char *)text, need + 1, &written, data, len) != 0) {
        free(text);
        return NULL;
    }
    text[written] = '\0';
    return text;
}

/* context + payload, the bytes a signature covers. */
static uint8_t *covered_bytes(const envelope *env, const char *context, size_t *total)
{
    size_t prefix = strlen(context);
    uint8_t *buf = malloc(prefix + env->payload_len + 1);
    if (!buf)
        return NULL;
    memcpy(buf, context, prefix);
    if (env->payload_len)
        memcpy(buf + prefix, env->payload, env->payload_len);
    *total = prefix + env->payload_len;
    return buf;
}

void envelope_free(envelope *env)
{
    if (!env)
        return;
    free(env->payload);
    for (size_t i = 0; i < env->sig_count; i++)
        free(env->sigs[i].sig);
    memset(env, 0, sizeof *env);
}

error_code envelope_init(envelope *env, const void *payload, size_t len, error_info *err)
{
    memset(env, 0, sizeof *env);
    env->payload = malloc(len + 1);
    if (!env->payload)
        return error_set(err, ERR_NOMEM, "out of memory");
    if (len)
        memcpy(env->payload, payload, len);
    env->payload[len] = 0;
    env->payload_len = len;
    return ERR_OK;
}

error_code envelope_open(const void *data, size_t len, envelope *env, error_info *err)
{
    memset(env, 0, sizeof *env);
    cJSON *o = len ? cJSON_ParseWithLength(data, len) : NULL;
    const char *payload_b64 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "payload"));
    const cJSON *signatures = cJSON_GetObjectItemCaseSensitive(o, "signatures");
    if (!cJSON_IsObject(o) || !payload_b64 || !cJSON_IsArray(signatures)) {
        cJSON_Delete(o);
        return error_set(err, ERR_PROTOCOL,
                         "%s (expected a JSON object with `payload` and `signatures`); the URL may serve an error "
                         "page or another file",
                         len == 0 ? "an empty answer"
                         : !o     ? "not JSON, or truncated JSON"
                                  : "not a signed envelope");
    }
    env->payload = base64_decode(payload_b64, &env->payload_len);
    if (!env->payload) {
        cJSON_Delete(o);
        return error_set(err, ERR_PROTOCOL, "the envelope's `payload` is not base64");
    }
    const cJSON *entry;
    cJSON_ArrayForEach(entry, signatures)
    {
        if (env->sig_count == ENVELOPE_MAX_SIGNATURES)
            break;
        const char *keyid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "keyid"));
        const char *value = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "sig"));
        if (!keyid || !value || strlen(keyid) >= SIGNKEY_ID_SIZE)
            continue;
        envelope_signature *s = &env->sigs[env->sig_count];
        s->sig = base64_decode(value, &s->sig_len);
        if (!s->sig)
            continue;
        snprintf(s->keyid, sizeof s->keyid, "%s", keyid);
        env->sig_count++;
    }
    cJSON_Delete(o);
    return ERR_OK;
}

size_t envelope_count(const envelope *env, const char *context, signkey *const *keys, size_t key_count, bool *named,
                      char first_keyid[SIGNKEY_ID_SIZE])
{
    if (named)
        *named = false;
    size_t covered_len = 0;
    uint8_t *covered = covered_bytes(env, context, &covered_len);
    if (!covered)
        return 0;
    size_t count = 0;
    for (size_t k = 0; k < key_count; k++) {
        bool repeated = false;
        for (size_t j = 0; j < k && !repeated; j++)
            repeated = strcmp(signkey_id(keys[j]), signkey_id(keys[k])) == 0;
        if (repeated)
            continue;
        for (size_t i = 0; i < env->sig_count; i++) {
            if (!text_equal_nocase(env->sigs[i].keyid, signkey_id(keys[k])))
                continue;
            if (named)
                *named = true;
            if (signkey_verify(keys[k], covered, covered_len, env->sigs[i].sig, env->sigs[i].sig_len)) {
                if (count == 0 && first_keyid)
                    snprintf(first_keyid, SIGNKEY_ID_SIZE, "%s", signkey_id(keys[k]));
                count++;
                break; /* one key counts once, however often it signed */
            }
        }
    }
    free(covered);
    return count;
}

error_code envelope_add_signature(envelope *env, const char *context, const signkey *key, error_info *err)
{
    size_t covered_len = 0;
    uint8_t *covered = covered_bytes(env, context, &covered_len);
    if (!covered)
        return error_set(err, ERR_NOMEM, "out of memory");
    uint8_t sig[SIGNKEY_SIG_MAX];
    size_t sig_len = 0;
    error_code rc = signkey_sign(key, covered, covered_len, sig, &sig_len, err);
    free(covered);
    if (rc != ERR_OK)
        return rc;
    size_t slot = env->sig_count;
    for (size_t i = 0; i < env->sig_count; i++)
        if (text_equal_nocase(env->sigs[i].keyid, signkey_id(key)))
            slot = i;
    if (slot == ENVELOPE_MAX_SIGNATURES)
        return error_set(err, ERR_USAGE, "the envelope already carries %d signatures", ENVELOPE_MAX_SIGNATURES);
    uint8_t *copy = malloc(sig_len);
    if (!copy)
        return error_set(err, ERR_NOMEM, "out of memory");
    memcpy(copy, sig, sig_len);
    envelope_signature *s = &env->sigs[slot];
    free(s->sig);
    s->sig = copy;
    s->sig_len = sig_len;
    snprintf(s->keyid, sizeof s->keyid, "%s", signkey_id(key));
    if (slot == env->sig_count)
        env->sig_count++;
    return ERR_OK;
}

error_code envelope_write(const envelope *env, char **text, size_t *len, error_info *err)
{
    char *payload_b64 = base64_encode(env->payload, env->payload_len);
    cJSON *o = cJSON_CreateObject();
    cJSON *sigs = NULL;
    bool ok = payload_b64 && o && cJSON_AddStringToObject(o, "payload", payload_b64) &&
              (sigs = cJSON_AddArrayToObject(o, "signatures"));
    for (size_t i = 0; ok && i < env->sig_count; i++) {
        char *sig_b64 = base64_encode(env->sigs[i].sig, env->sigs[i].sig_len);
        cJSON *entry = sig_b64 ? cJSON_CreateObject() : NULL;
        if (entry && !cJSON_AddItemToArray(sigs, entry)) {
            cJSON_Delete(entry);
            entry = NULL;
        }
        ok = entry && cJSON_AddStringToObject(entry, "keyid", env->sigs[i].keyid) &&
             cJSON_AddStringToObject(entry, "sig", sig_b64);
        free(sig_b64);
    }
    char *out = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    free(payload_b64);
    if (!out)
        return error_set(err, ERR_NOMEM, "out of memory writing a signed envelope");
    *text = out;
    *len = strlen(out);
    return ERR_OK;
}
