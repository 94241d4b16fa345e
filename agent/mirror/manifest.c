/*
 * manifest.c — the signed manifest: envelope, signatures, payload, rules.
 *
 * Order matters: nothing in the payload is looked at before a pinned key has
 * verified its signature, so a forged manifest can only ever produce a
 * signature error, never exercise the payload parser or the rules.
 */
#include "mirror/manifest.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <mbedtls/base64.h>

#include "base/text.h"
#include "core/jsonx.h"
#include "core/timefmt.h"
#include "mirror/rollout.h"

#define MAX_SIGNATURES 16

static const char *const verdict_names[] = {
    "ok",      "too-large", "malformed", "unknown-key",  "bad-signature", "bad-payload",    "schema",
    "expired", "future",    "old-seq",   "seq-conflict", "wrong-channel", "wrong-platform",
};

const char *manifest_verdict_name(manifest_verdict verdict)
{
    size_t i = (size_t)verdict;
    return i < sizeof verdict_names / sizeof verdict_names[0] ? verdict_names[i] : "unknown";
}

error_code manifest_verdict_code(manifest_verdict verdict)
{
    switch (verdict) {
    case MANIFEST_OK: return ERR_OK;
    case MANIFEST_EXPIRED:
    case MANIFEST_FUTURE:
    case MANIFEST_OLD_SEQ: return ERR_TEMPORARY;
    default: return ERR_REJECTED;
    }
}

void manifest_free(manifest *m)
{
    if (!m)
        return;
    free(m->channel);
    free(m->platform);
    free(m->version);
    free(m->file_name);
    free(m->path);
    free(m->signer_subject);
    free(m->rollout_salt);
    memset(m, 0, sizeof *m);
}

static MUST_CHECK error_code refuse(manifest_verdict *verdict, manifest_verdict v, error_info *err, const char *fmt,
                                    ...) OUTPOST_PRINTF(4, 5);

static MUST_CHECK error_code refuse(manifest_verdict *verdict, manifest_verdict v, error_info *err, const char *fmt,
                                    ...)
{
    char message[ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    *verdict = v;
    return error_set(err, manifest_verdict_code(v), "%s", message);
}

/* Decodes base64 text into a malloc'd buffer. */
static uint8_t *base64_decode(const char *text, size_t *out_len)
{
    size_t len = strlen(text), need = 0;
    int rc = mbedtls_base64_decode(NULL, 0, &need, (const unsigned char *)text, len);
    if (rc != 0 && rc != MBEDTLS_ERR_BASE64_BUFFER_TOO_SMALL)
        return NULL;
    uint8_t *buf = malloc(need ? need : 1);
    if (!buf)
        return NULL;
    if (mbedtls_base64_decode(buf, need, out_len, (const unsigned char *)text, len) != 0) {
        free(buf);
        return NULL;
    }
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

/* "outpost-manifest-v1\n" + payload, the bytes a signature covers. */
static uint8_t *signed_bytes(const void *payload, size_t len, size_t *total)
{
    size_t prefix = sizeof MANIFEST_CONTEXT - 1;
    uint8_t *buf = malloc(prefix + len + 1);
    if (!buf)
        return NULL;
    memcpy(buf, MANIFEST_CONTEXT, prefix);
    memcpy(buf + prefix, payload, len);
    *total = prefix + len;
    return buf;
}

static bool is_hex64(const char *s)
{
    if (!s || strlen(s) != 64)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

static void lower_copy(char dst[65], const char *src)
{
    for (size_t i = 0; i < 64; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[64] = '\0';
}

/* A path relative to the manifest's URL: no scheme, no leading slash, no
 * "..", no backslash, query or fragment; letters, digits and ._-/ only. */
static bool path_is_safe(const char *p)
{
    if (!p || !p[0] || p[0] == '/' || strlen(p) > 512)
        return false;
    for (const char *c = p; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-' && *c != '/')
            return false;
    const char *seg = p;
    while (seg) {
        const char *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return false;
        seg = slash ? slash + 1 : NULL;
    }
    return true;
}

/* ---- Envelope and signatures --------------------------------------------------- */

/* Finds a signature by one of keys that verifies; *known tells whether any
 * signature named a pinned key at all. */
static bool verify_signatures(const cJSON *signatures, const uint8_t *covered, size_t covered_len, signkey *const *keys,
                              size_t key_count, bool *known, char keyid_out[SIGNKEY_ID_SIZE])
{
    *known = false;
    const cJSON *sig;
    int seen = 0;
    cJSON_ArrayForEach(sig, signatures)
    {
        if (++seen > MAX_SIGNATURES)
            break;
        const char *keyid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sig, "keyid"));
        const char *value = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sig, "sig"));
        if (!keyid || !value)
            continue;
        for (size_t k = 0; k < key_count; k++) {
            if (!text_equal_nocase(keyid, signkey_id(keys[k])))
                continue;
            *known = true;
            size_t sig_len = 0;
            uint8_t *der = base64_decode(value, &sig_len);
            bool ok = der && signkey_verify(keys[k], covered, covered_len, der, sig_len);
            free(der);
            if (ok) {
                snprintf(keyid_out, SIGNKEY_ID_SIZE, "%s", signkey_id(keys[k]));
                return true;
            }
        }
    }
    return false;
}

/* ---- Payload ----------------------------------------------------------------------- */

static bool payload_integer(const cJSON *o, const char *name, int64_t min, int64_t *out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(item))
        return false;
    double d = item->valuedouble;
    if (!(d >= (double)min && d <= 9007199254740992.0) || d != floor(d))
        return false;
    *out = (int64_t)d;
    return true;
}

static bool payload_time(const cJSON *o, const char *name, int64_t *out)
{
    const char *s = jsonx_nonempty(NULL, o, name);
    return s && timefmt_parse_iso8601(s, out);
}

/* Fills m from the payload JSON; *bad names the first field that is wrong. */
static bool parse_payload(const cJSON *p, manifest *m, const char **bad)
{
#define NEED(cond, field)                                                                                              \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            *bad = field;                                                                                              \
            return false;                                                                                              \
        }                                                                                                              \
    } while (0)
    NEED(cJSON_IsObject(p), "payload");
    const char *s;
    NEED(payload_integer(p, "seq", 0, &m->seq), "seq");
    NEED(payload_time(p, "issued_at", &m->issued_at), "issued_at");
    NEED(payload_time(p, "expires_at", &m->expires_at), "expires_at");
    NEED((s = jsonx_nonempty(NULL, p, "channel")) && (m->channel = text_dup(s)), "channel");
    NEED((s = jsonx_nonempty(NULL, p, "platform")) && (m->platform = text_dup(s)), "platform");
    NEED((s = jsonx_nonempty(NULL, p, "version")) && strlen(s) <= 64 && (m->version = text_dup(s)), "version");
    NEED((s = jsonx_nonempty(NULL, p, "file_name")) && strlen(s) <= 255 && (m->file_name = text_dup(s)), "file_name");
    NEED(payload_integer(p, "length", 1, &m->length), "length");
    s = jsonx_nonempty(NULL, p, "sha256");
    NEED(is_hex64(s), "sha256");
    lower_copy(m->sha256, s);
    s = jsonx_nonempty(NULL, p, "path");
    NEED(path_is_safe(s) && (m->path = text_dup(s)), "path");

    const cJSON *signer = cJSON_GetObjectItemCaseSensitive(p, "signer");
    NEED(signer && (cJSON_IsNull(signer) || cJSON_IsObject(signer)), "signer");
    if (cJSON_IsObject(signer)) {
        m->signed_installer = true;
        s = jsonx_nonempty(NULL, signer, "cert_sha256");
        NEED(is_hex64(s), "signer.cert_sha256");
        lower_copy(m->signer_cert_sha256, s);
        const char *subject = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(signer, "subject"));
        NEED(subject && (m->signer_subject = text_dup(subject)), "signer.subject");
    }

    const cJSON *rollout = cJSON_GetObjectItemCaseSensitive(p, "rollout");
    NEED(cJSON_IsObject(rollout), "rollout");
    const cJSON *percent = cJSON_GetObjectItemCaseSensitive(rollout, "percent");
    NEED(cJSON_IsNumber(percent) && percent->valuedouble >= 0 && percent->valuedouble <= 100, "rollout.percent");
    m->rollout_percent = percent->valuedouble;
    s = jsonx_nonempty(NULL, rollout, "salt");
    NEED(rollout_hex_is_valid(s, 64) && (m->rollout_salt = text_dup(s)), "rollout.salt");

    const cJSON *downgrade = cJSON_GetObjectItemCaseSensitive(p, "allow_downgrade");
    NEED(!downgrade || cJSON_IsBool(downgrade), "allow_downgrade");
    m->allow_downgrade = cJSON_IsTrue(downgrade);
    return true;
#undef NEED
}

error_code manifest_open(const void *data, size_t len, signkey *const *keys, size_t key_count, manifest *m,
                         manifest_verdict *verdict, error_info *err)
{
    memset(m, 0, sizeof *m);
    *verdict = MANIFEST_OK;
    char size_text[32];
    snprintf(size_text, sizeof size_text, "%zu", len);
    if (len > MANIFEST_MAX_BYTES)
        return refuse(verdict, MANIFEST_TOO_LARGE, err,
                      "manifest is larger than 64 KiB (%s bytes); it is not one outpost publish wrote", size_text);
    if (key_count == 0)
        return error_set(err, ERR_CONFIG,
                         "no public key is configured to verify the mirror with; add the publisher's "
                         "key (what `outpost keygen` printed) to `mirror.public_keys`");

    cJSON *envelope = cJSON_ParseWithLength(data, len);
    const char *payload_b64 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(envelope, "payload"));
    const cJSON *signatures = cJSON_GetObjectItemCaseSensitive(envelope, "signatures");
    if (!cJSON_IsObject(envelope) || !payload_b64 || !cJSON_IsArray(signatures)) {
        cJSON_Delete(envelope);
        return refuse(verdict, MANIFEST_MALFORMED, err,
                      "not a signed manifest (expected a JSON object with `payload` and `signatures`); the URL may "
                      "serve an error page or another file");
    }
    size_t payload_len = 0;
    uint8_t *payload = base64_decode(payload_b64, &payload_len);
    size_t covered_len = 0;
    uint8_t *covered = payload ? signed_bytes(payload, payload_len, &covered_len) : NULL;
    bool known = false;
    bool verified = covered && verify_signatures(signatures, covered, covered_len, keys, key_count, &known, m->keyid);
    cJSON_Delete(envelope);
    free(covered);
    if (!payload) {
        return refuse(verdict, MANIFEST_MALFORMED, err, "the manifest's `payload` is not base64");
    }
    if (!verified) {
        free(payload);
        if (!known)
            return refuse(verdict, MANIFEST_UNKNOWN_KEY, err,
                          "the manifest is not signed by any key in `mirror.public_keys`; if the publisher rotated its "
                          "key, add the new public key to the configuration");
        return refuse(verdict, MANIFEST_BAD_SIGNATURE, err,
                      "the manifest's signature does not verify: it was changed after signing; do not use this mirror "
                      "until the publisher re-runs publish");
    }

    /* Signed by a pinned key: now, and only now, the payload is read. */
    signkey_sha256_hex(payload, payload_len, m->payload_sha256);
    char keyid[SIGNKEY_ID_SIZE], payload_sha[65];
    memcpy(keyid, m->keyid, sizeof keyid);
    memcpy(payload_sha, m->payload_sha256, sizeof payload_sha);
    cJSON *p = cJSON_ParseWithLength((const char *)payload, payload_len);
    free(payload);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(p, "schema");
    if (!cJSON_IsObject(p) || !cJSON_IsNumber(schema)) {
        cJSON_Delete(p);
        return refuse(verdict, MANIFEST_BAD_PAYLOAD, err, "the signed payload is not a JSON object with a `schema`");
    }
    if (floor(schema->valuedouble) != MANIFEST_SCHEMA) {
        char text[32];
        snprintf(text, sizeof text, "%g", schema->valuedouble);
        cJSON_Delete(p);
        return refuse(verdict, MANIFEST_UNKNOWN_SCHEMA, err,
                      "the manifest has schema %s, which this outpost does not know; update outpost on this endpoint",
                      text);
    }
    const char *bad = NULL;
    m->schema = MANIFEST_SCHEMA;
    bool ok = parse_payload(p, m, &bad);
    cJSON_Delete(p);
    if (!ok) {
        manifest_free(m);
        return refuse(verdict, MANIFEST_BAD_PAYLOAD, err, "the signed payload's `%s` is missing or invalid", bad);
    }
    memcpy(m->keyid, keyid, sizeof keyid);
    memcpy(m->payload_sha256, payload_sha, sizeof payload_sha);
    return ERR_OK;
}

/* ---- Rules ---------------------------------------------------------------------------- */

error_code manifest_check(const manifest *m, const manifest_expect *e, manifest_verdict *verdict, error_info *err)
{
    *verdict = MANIFEST_OK;
    char a[TIMEFMT_ISO8601_SIZE], b[64];
    if (e->now_s >= m->expires_at) {
        timefmt_iso8601(m->expires_at, a);
        return refuse(verdict, MANIFEST_EXPIRED, err,
                      "the manifest expired at %s (the mirror is stale); re-run publish on the publishing host", a);
    }
    if (m->issued_at > e->now_s + MANIFEST_FUTURE_SKEW_S) {
        timefmt_iso8601(m->issued_at, a);
        timefmt_iso8601(e->now_s, b);
        return refuse(verdict, MANIFEST_FUTURE, err,
                      "the manifest was issued at %s, in the future (this machine's clock says %s); check the clock of "
                      "this machine and of the publishing host",
                      a, b);
    }
    if (e->highest_seq >= 0 && m->seq < e->highest_seq) {
        snprintf(a, sizeof a, "%lld", (long long)m->seq);
        snprintf(b, sizeof b, "%lld", (long long)e->highest_seq);
        return refuse(verdict, MANIFEST_OLD_SEQ, err,
                      "mirror serving an old copy: seq %s is older than seq %s seen before; wait for the mirror to "
                      "catch up, or check how it is copied",
                      a, b);
    }
    if (e->highest_seq >= 0 && m->seq == e->highest_seq && e->highest_payload_sha256 &&
        strcmp(e->highest_payload_sha256, m->payload_sha256) != 0) {
        snprintf(a, sizeof a, "%lld", (long long)m->seq);
        return refuse(verdict, MANIFEST_SEQ_CONFLICT, err,
                      "the manifest's seq %s was seen before with other contents; two different manifests carry one "
                      "seq, so the signing key may be misused: ask the publisher",
                      a);
    }
    if (strcmp(m->channel, e->channel) != 0)
        return refuse(verdict, MANIFEST_WRONG_CHANNEL, err,
                      "the manifest is for channel \"%s\", this endpoint follows \"%s\" (`mirror.channel`); point "
                      "`mirror.urls` at that channel's mirror",
                      m->channel, e->channel);
    if (strcmp(m->platform, e->platform) != 0)
        return refuse(verdict, MANIFEST_WRONG_PLATFORM, err,
                      "the manifest is for platform \"%s\", this endpoint wants \"%s\" (`installer.platform`); point "
                      "`mirror.urls` at that platform's mirror",
                      m->platform, e->platform);
    return ERR_OK;
}

/* ---- Publisher side --------------------------------------------------------------------- */

error_code manifest_payload_json(const manifest *m, char **json, error_info *err)
{
    char issued[TIMEFMT_ISO8601_SIZE], expires[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(m->issued_at, issued);
    timefmt_iso8601(m->expires_at, expires);
    cJSON *o = cJSON_CreateObject();
    cJSON *signer = NULL, *rollout = NULL;
    bool ok = o && cJSON_AddNumberToObject(o, "schema", MANIFEST_SCHEMA) &&
              cJSON_AddNumberToObject(o, "seq", (double)m->seq) && cJSON_AddStringToObject(o, "issued_at", issued) &&
              cJSON_AddStringToObject(o, "expires_at", expires) && cJSON_AddStringToObject(o, "channel", m->channel) &&
              cJSON_AddStringToObject(o, "platform", m->platform) &&
              cJSON_AddStringToObject(o, "version", m->version) &&
              cJSON_AddStringToObject(o, "file_name", m->file_name) &&
              cJSON_AddNumberToObject(o, "length", (double)m->length) &&
              cJSON_AddStringToObject(o, "sha256", m->sha256) && cJSON_AddStringToObject(o, "path", m->path);
    if (ok && m->signed_installer)
        ok = (signer = cJSON_AddObjectToObject(o, "signer")) &&
             cJSON_AddStringToObject(signer, "subject", m->signer_subject ? m->signer_subject : "") &&
             cJSON_AddStringToObject(signer, "cert_sha256", m->signer_cert_sha256);
    else if (ok)
        ok = cJSON_AddNullToObject(o, "signer") != NULL;
    ok = ok && (rollout = cJSON_AddObjectToObject(o, "rollout")) &&
         cJSON_AddNumberToObject(rollout, "percent", m->rollout_percent) &&
         cJSON_AddStringToObject(rollout, "salt", m->rollout_salt) &&
         cJSON_AddBoolToObject(o, "allow_downgrade", m->allow_downgrade);
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return error_set(err, ERR_NOMEM, "out of memory writing the manifest");
    *json = text;
    return ERR_OK;
}

error_code manifest_sign(const void *payload, size_t payload_len, signkey *const *keys, size_t key_count,
                         char **envelope, size_t *len, error_info *err)
{
    size_t covered_len = 0;
    uint8_t *covered = signed_bytes(payload, payload_len, &covered_len);
    char *payload_b64 = base64_encode(payload, payload_len);
    cJSON *o = cJSON_CreateObject();
    cJSON *sigs = NULL;
    error_code rc = ERR_OK;
    if (!covered || !payload_b64 || !o || !cJSON_AddStringToObject(o, "payload", payload_b64) ||
        !(sigs = cJSON_AddArrayToObject(o, "signatures")))
        rc = error_set(err, ERR_NOMEM, "out of memory signing the manifest");
    for (size_t k = 0; rc == ERR_OK && k < key_count; k++) {
        uint8_t sig[SIGNKEY_SIG_MAX];
        size_t sig_len = 0;
        rc = signkey_sign(keys[k], covered, covered_len, sig, &sig_len, err);
        char *sig_b64 = rc == ERR_OK ? base64_encode(sig, sig_len) : NULL;
        cJSON *entry = sig_b64 ? cJSON_CreateObject() : NULL;
        if (rc == ERR_OK && (!entry || !cJSON_AddItemToArray(sigs, entry) ||
                             !cJSON_AddStringToObject(entry, "keyid", signkey_id(keys[k])) ||
                             !cJSON_AddStringToObject(entry, "sig", sig_b64)))
            rc = error_set(err, ERR_NOMEM, "out of memory signing the manifest");
        free(sig_b64);
    }
    char *text = rc == ERR_OK ? cJSON_PrintUnformatted(o) : NULL;
    if (rc == ERR_OK && !text)
        rc = error_set(err, ERR_NOMEM, "out of memory signing the manifest");
    cJSON_Delete(o);
    free(covered);
    free(payload_b64);
    if (rc == ERR_OK) {
        *envelope = text;
        *len = strlen(text);
    }
    return rc;
}
