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

#include "base/text.h"
#include "core/jsonx.h"
#include "core/timefmt.h"
#include "mirror/envelope.h"
#include "mirror/rollout.h"

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
    case MANIFEST_OLD_SEQ:
    case MANIFEST_MALFORMED: return ERR_TEMPORARY;
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

static bool is_hex64(const char *s)
{
    return text_is_hex(s, 64, false);
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

/* ---- Payload ----------------------------------------------------------------------- */

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
    NEED(jsonx_exact_integer(p, "seq", 1, &m->seq), "seq");
    NEED(payload_time(p, "issued_at", &m->issued_at), "issued_at");
    NEED(payload_time(p, "expires_at", &m->expires_at), "expires_at");
    NEED((s = jsonx_nonempty(NULL, p, "channel")) && (m->channel = text_dup(s)), "channel");
    NEED((s = jsonx_nonempty(NULL, p, "platform")) && (m->platform = text_dup(s)), "platform");
    NEED((s = jsonx_nonempty(NULL, p, "version")) && strlen(s) <= 64 && (m->version = text_dup(s)), "version");
    NEED((s = jsonx_nonempty(NULL, p, "file_name")) && strlen(s) <= 255 && (m->file_name = text_dup(s)), "file_name");
    NEED(jsonx_exact_integer(p, "length", 1, &m->length), "length");
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
    return manifest_open_threshold(data, len, keys, key_count, 1, m, verdict, err);
}

error_code manifest_open_threshold(const void *data, size_t len, signkey *const *keys, size_t key_count,
                                   size_t threshold, manifest *m, manifest_verdict *verdict, error_info *err)
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

    envelope env;
    error_info why;
    if (envelope_open(data, len, &env, &why) != ERR_OK) {
        /* An error page or a cut-off answer: a transport failure, not a forgery
         * (manifest_verdict_code); the caller says what came back. */
        return refuse(verdict, MANIFEST_MALFORMED, err, "not a signed manifest: %s", why.message);
    }
    if (threshold == 0)
        threshold = 1;
    bool known = false;
    size_t verified = envelope_count(&env, MANIFEST_CONTEXT, keys, key_count, &known, m->keyid);
    if (verified < threshold) {
        envelope_free(&env);
        if (verified > 0)
            return refuse(verdict, MANIFEST_BAD_SIGNATURE, err,
                          "the manifest carries valid signatures by %zu of the root's manifest keys, and the root "
                          "asks for %zu; do not use this mirror until the publisher signs it with enough keys",
                          verified, threshold);
        if (!known)
            return refuse(verdict, MANIFEST_UNKNOWN_KEY, err,
                          "the manifest is not signed by any key in `mirror.public_keys`; if the publisher rotated its "
                          "key, add the new public key to the configuration");
        return refuse(verdict, MANIFEST_BAD_SIGNATURE, err,
                      "the manifest's signature does not verify: it was changed after signing; do not use this mirror "
                      "until the publisher re-runs publish");
    }
    uint8_t *payload = env.payload;
    size_t payload_len = env.payload_len;
    env.payload = NULL;
    envelope_free(&env);

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
    /* Integers written exactly: cJSON prints a number above 10^15 rounded to 15 digits. */
    char seq_text[24], length_text[24];
    snprintf(seq_text, sizeof seq_text, "%lld", (long long)m->seq);
    snprintf(length_text, sizeof length_text, "%lld", (long long)m->length);
    cJSON *o = cJSON_CreateObject();
    cJSON *signer = NULL, *rollout = NULL;
    bool ok = o && cJSON_AddNumberToObject(o, "schema", MANIFEST_SCHEMA) && cJSON_AddRawToObject(o, "seq", seq_text) &&
              cJSON_AddStringToObject(o, "issued_at", issued) && cJSON_AddStringToObject(o, "expires_at", expires) &&
              cJSON_AddStringToObject(o, "channel", m->channel) &&
              cJSON_AddStringToObject(o, "platform", m->platform) &&
              cJSON_AddStringToObject(o, "version", m->version) &&
              cJSON_AddStringToObject(o, "file_name", m->file_name) && cJSON_AddRawToObject(o, "length", length_text) &&
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
                         char **envelope_text, size_t *len, error_info *err)
{
    envelope env;
    error_code rc = envelope_init(&env, payload, payload_len, err);
    for (size_t k = 0; rc == ERR_OK && k < key_count; k++)
        rc = envelope_add_signature(&env, MANIFEST_CONTEXT, keys[k], err);
    if (rc == ERR_OK)
        rc = envelope_write(&env, envelope_text, len, err);
    envelope_free(&env);
    return rc;
}
