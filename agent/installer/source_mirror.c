/*
 * source_mirror.c — the fleet mirror as the installer's source: manifest
 * fetch and rules, rollout, and the offer download.c fetches.
 */
#include "installer/source_mirror.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"
#include "base/text.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/timefmt.h"
#include "installer/mirror_trust.h"
#include "installer/version.h"
#include "mirror/root.h"
#include "mirror/rollout.h"
#include "mirror/signkey.h"
#include "platform/platform.h"

#define SECTION "mirror"

void source_mirror_offer_free(mirror_offer *offer)
{
    if (!offer)
        return;
    manifest_free(&offer->m);
    free(offer->manifest_url);
    free(offer->installer_url);
    free(offer->fetch_url);
    memset(offer, 0, sizeof *offer);
}

/* "<url>/manifest.json", or url itself when it names a .json file. */
static char *manifest_url_of(const char *url)
{
    size_t n = strlen(url);
    if (n > 5 && text_equal_nocase(url + n - 5, ".json"))
        return text_dup(url);
    bool slash = n > 0 && url[n - 1] == '/';
    char *out = malloc(n + 16);
    if (out)
        snprintf(out, n + 16, "%s%smanifest.json", url, slash ? "" : "/");
    return out;
}

/* The manifest's directory joined with a relative path. */
static char *resolve(const char *manifest_url, const char *path)
{
    const char *slash = strrchr(manifest_url, '/');
    size_t dir = slash ? (size_t)(slash - manifest_url) + 1 : 0;
    size_t n = dir + strlen(path) + 1;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%.*s%s", (int)dir, manifest_url, path);
    return out;
}

/* A root file's bytes, kept up to ROOT_MAX_BYTES + 1 (root_open_next refuses it by size). */
static http_stream_action root_headers(void *user, const http_stream_headers *headers)
{
    (void)user;
    (void)headers;
    return HTTP_STREAM_CONTINUE;
}

static http_stream_action root_data(void *user, const void *data, size_t len)
{
    dynbuf *body = user;
    size_t room = ROOT_MAX_BYTES + 1 - body->len;
    size_t keep = len < room ? len : room;
    if (keep && !dynbuf_append(body, data, keep))
        return HTTP_STREAM_STOP;
    return keep < len ? HTTP_STREAM_STOP : HTTP_STREAM_CONTINUE;
}

/* mirror_trust's window on the network: one root file beside the manifest (user: the http_client). */
static error_code fetch_root(void *user, const char *url, char **data, size_t *len, error_info *err)
{
    dynbuf body;
    dynbuf_init(&body, ROOT_MAX_BYTES + 1, false);
    http_url_request req = {.url = url};
    http_stream_callbacks cb = {root_headers, root_data, &body};
    http_stream_result res;
    error_code rc = http_url_get(user, &req, &cb, &res, err);
    /* Absent ends the walk. S3 and its kin answer 403 for an object that is not there when the
     * bucket cannot be listed; ending the walk there is safe: the manifest must still verify
     * with the root trusted so far, and a mirror can always withhold a root. */
    if (rc == ERR_HTTP && (res.status == 404 || res.status == 410 || res.status == 403))
        rc = ERR_NOT_FOUND;
    if (rc == ERR_OK && body.status == DYNBUF_NOMEM)
        rc = error_set(err, ERR_NOMEM, "out of memory reading %s", url);
    if (rc == ERR_OK) {
        *len = 0;
        *data = dynbuf_take(&body, len);
        if (!*data && !(*data = text_dup(""))) /* an empty body */
            rc = error_set(err, ERR_NOMEM, "out of memory");
    }
    dynbuf_free(&body);
    return rc;
}

/* The highest seq seen: a decimal string (exact), or a number an older outpost wrote; -1 when none. */
static int64_t stored_seq(const cJSON *section)
{
    return jsonx_int64(NULL, section, "highest_seq", true, -1);
}

/*
 * The stored seq is kept with the manifest key ids it was accepted under;
 * when the trusted keys differ (a new root, or a rotated public_keys), the
 * seq and the kept copy's validators are forgotten: a leaked key's
 * fast-forward must not freeze the fleet once that key is gone (8.1).
 */
static void forget_on_key_change(state *s, const mirror_trust *trust)
{
    cJSON *section = state_section(s, SECTION);
    const char *kept = jsonx_string(NULL, section, "seq_keyids");
    /* An older outpost kept no key ids, and wrote the seq as a JSON number,
     * which cJSON rounds to 15 digits: such a number from 10^15 up is not
     * the seq that was seen (the fast-forward of issue 26 left one), so it
     * is forgotten too; a smaller one is kept under the keys trusted now. */
    const cJSON *legacy = cJSON_GetObjectItemCaseSensitive(section, "highest_seq");
    bool rounded = !kept && cJSON_IsNumber(legacy) && legacy->valuedouble >= 1e15;
    if ((kept && strcmp(kept, trust->keyids) != 0) || rounded) {
        log_info("the mirror's manifest keys changed; the highest seq seen (%lld) is forgotten",
                 (long long)stored_seq(section));
        cJSON_DeleteItemFromObjectCaseSensitive(section, "highest_seq");
        cJSON_DeleteItemFromObjectCaseSensitive(section, "highest_payload_sha256");
        cJSON_DeleteItemFromObjectCaseSensitive(section, "etag");
        cJSON_DeleteItemFromObjectCaseSensitive(section, "last_modified");
        cJSON_DeleteItemFromObjectCaseSensitive(section, "url");
    }
    jsonx_set(section, "seq_keyids", cJSON_CreateString(trust->keyids));
}

/* What status.json shows under installer.mirror. */
static void record_status(state *s, const char *url, const manifest *m, bool accepted, bool eligible,
                          manifest_verdict verdict, const char *refusal)
{
    cJSON *section = state_section(s, SECTION);
    cJSON *st = cJSON_CreateObject();
    if (!section || !st) {
        cJSON_Delete(st);
        return;
    }
    char t[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, t);
    cJSON_AddStringToObject(st, "url", url ? url : "");
    cJSON_AddStringToObject(st, "checked_at", t);
    if (m && m->version) {
        char seq_text[24]; /* written exactly: cJSON prints a number above 10^15 rounded */
        snprintf(seq_text, sizeof seq_text, "%lld", (long long)m->seq);
        cJSON_AddRawToObject(st, "seq", seq_text);
        timefmt_iso8601(m->expires_at, t);
        cJSON_AddStringToObject(st, "expires_at", t);
        cJSON_AddNumberToObject(st, "rollout_percent", m->rollout_percent);
        cJSON_AddStringToObject(st, "version", m->version);
    }
    if (accepted) {
        cJSON_AddBoolToObject(st, "eligible", eligible);
    } else {
        cJSON_AddStringToObject(st, "refused", manifest_verdict_name(verdict));
        if (verdict == MANIFEST_EXPIRED && m && m->version)
            cJSON_AddStringToObject(st, "stale_since", t);
        cJSON_AddStringToObject(st, "error", refusal ? refusal : "");
    }
    jsonx_set(section, "status", st);
}

/* The trusted root's version and expiry, for status.json (installer.mirror.root) and its verdict, and the
 * lineage it belongs to (mirror_trust.h), an array of root ids oldest first. */
static void record_root(state *s, const mirror_trust *trust)
{
    cJSON *section = state_section(s, SECTION);
    cJSON_DeleteItemFromObjectCaseSensitive(section, "root_origin"); /* the file hash kept before lineages */
    if (!trust->has_root) {
        cJSON_DeleteItemFromObjectCaseSensitive(section, "root");
        cJSON_DeleteItemFromObjectCaseSensitive(section, "root_chain");
        return;
    }
    cJSON *r = cJSON_CreateObject();
    char at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(trust->root.expires_at, at);
    if (r) {
        cJSON_AddNumberToObject(r, "version", (double)trust->root.version);
        cJSON_AddStringToObject(r, "expires_at", at);
    }
    jsonx_set(section, "root", r);
    cJSON *chain = cJSON_CreateArray();
    for (const char *p = trust->lineage; chain && p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char id[SIGNKEY_ID_SIZE];
        snprintf(id, sizeof id, "%.*s", (int)len, p);
        cJSON_AddItemToArray(chain, cJSON_CreateString(id));
        p = comma ? comma + 1 : p + len;
    }
    jsonx_set(section, "root_chain", chain);
}

/* state "mirror".root_chain as mirror_trust_load takes it (comma-separated); NULL when none was recorded. */
static char *kept_lineage(state *s)
{
    const cJSON *chain = cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), "root_chain");
    if (!cJSON_IsArray(chain))
        return NULL;
    dynbuf b;
    dynbuf_init(&b, 0, false);
    const cJSON *id;
    cJSON_ArrayForEach(id, chain)
    {
        if (cJSON_IsString(id) && strlen(id->valuestring) == SIGNKEY_ID_SIZE - 1 && !strchr(id->valuestring, ','))
            dynbuf_printf(&b, "%s%s", b.len ? "," : "", id->valuestring);
    }
    /* Out of memory: unknown, as for a state from before lineages. */
    if (!dynbuf_ok(&b))
        dynbuf_free(&b);
    return dynbuf_take(&b, NULL);
}

/* Opens and judges one manifest's bytes. m is filled when it opened. */
static MUST_CHECK error_code judge(const config *cfg, state *s, const char *bytes, size_t len,
                                   const mirror_trust *trust, int64_t now_s, manifest *m, manifest_verdict *verdict,
                                   error_info *err)
{
    size_t key_count = 0, threshold = 1;
    signkey *const *keys = mirror_trust_manifest_keys(trust, &key_count, &threshold);
    error_code rc = manifest_open_threshold(bytes, len, keys, key_count, threshold, m, verdict, err);
    if (rc != ERR_OK && (*verdict == MANIFEST_MALFORMED || *verdict == MANIFEST_TOO_LARGE) &&
        (len == 0 || bytes[0] != '{' || !memchr(bytes, '}', len))) {
        /* An error page, an empty or a cut answer is not tampering
         * (PRODUCT.md section 8): say what came back, and try later. */
        char what[80];
        size_t n = 0;
        for (size_t i = 0; i < len && n < 48; i++)
            what[n++] = bytes[i] >= 0x20 && bytes[i] < 0x7f ? bytes[i] : ' ';
        what[n] = '\0';
        if (len == 0)
            error_prefix(err, "an empty answer");
        else
            error_prefix(err, "%zu bytes starting \"%s\"%s", len, what, len > n ? "..." : "");
        if (err)
            err->code = ERR_TEMPORARY;
        return ERR_TEMPORARY;
    }
    if (rc != ERR_OK && trust->has_root && *verdict == MANIFEST_UNKNOWN_KEY)
        error_set(err, rc,
                  "the manifest is not signed by any manifest key of mirror root version %lld; if the publisher "
                  "rotated its key, the root's key holders must publish a root that lists the new key "
                  "(`outpost root next`)",
                  (long long)trust->root.version);
    if (rc != ERR_OK)
        return rc;
    const cJSON *section = state_section(s, SECTION);
    manifest_expect e = {
        .now_s = now_s,
        .channel = cfg->mirror.channel,
        .platform = cfg->installer.platform,
        .highest_seq = stored_seq(section),
        .highest_payload_sha256 = jsonx_string(NULL, section, "highest_payload_sha256"),
    };
    rc = manifest_check(m, &e, verdict, err);
    if (rc == ERR_OK && !version_is_valid(m->version, err)) {
        *verdict = MANIFEST_BAD_PAYLOAD;
        rc = error_prefix(err, "the manifest's version");
    }
    return rc;
}

/* Keeps the accepted manifest (bytes and validators) for the next conditional GET. */
static void keep_copy(const config *cfg, state *s, const char *url, const http_url_body *res, const manifest *m)
{
    cJSON *section = state_section(s, SECTION);
    if (m->seq >= stored_seq(section)) {
        char seq[24]; /* a string: exact, where a JSON number in cJSON is a double */
        snprintf(seq, sizeof seq, "%lld", (long long)m->seq);
        jsonx_set(section, "highest_seq", cJSON_CreateString(seq));
        jsonx_set(section, "highest_payload_sha256", cJSON_CreateString(m->payload_sha256));
    }
    if (!res || res->status != 200)
        return;
    char *dir = platform_path_join(cfg->state_dir, "mirror");
    char *path = dir ? platform_path_join(dir, "manifest.json") : NULL;
    if (path && platform_mkdirs(dir, NULL) == ERR_OK &&
        platform_write_atomic(path, res->body, res->body_len, NULL) == ERR_OK) {
        jsonx_set(section, "url", cJSON_CreateString(url));
        jsonx_set(section, "etag", res->etag ? cJSON_CreateString(res->etag) : cJSON_CreateNull());
        jsonx_set(section, "last_modified",
                  res->last_modified ? cJSON_CreateString(res->last_modified) : cJSON_CreateNull());
    }
    free(dir);
    free(path);
}

/* The kept copy's bytes when it came from url; NULL otherwise. */
static char *kept_copy(const config *cfg, state *s, const char *url, size_t *len)
{
    const cJSON *section = state_section(s, SECTION);
    const char *kept_url = jsonx_string(NULL, section, "url");
    if (!kept_url || strcmp(kept_url, url) != 0)
        return NULL;
    char *dir = platform_path_join(cfg->state_dir, "mirror");
    char *path = dir ? platform_path_join(dir, "manifest.json") : NULL;
    char *data = NULL;
    if (!path || platform_read_file(path, MANIFEST_MAX_BYTES, &data, len, NULL) != ERR_OK)
        data = NULL;
    free(dir);
    free(path);
    return data;
}

static MUST_CHECK error_code machine_identity(const config *cfg, char *buf, size_t size, error_info *err)
{
    if (cfg->mirror.machine_id) {
        snprintf(buf, size, "%s", cfg->mirror.machine_id);
        return ERR_OK;
    }
    error_code rc = platform_machine_id(buf, size, err);
    if (rc != ERR_OK) {
        err->code = ERR_CONFIG;
        return error_prefix(err, "rollout needs a machine id; set `mirror.machine_id`");
    }
    return ERR_OK;
}

/* The most serious failure among mirror.urls so far: a refusal (4) before a transport failure (75). */
static void note_worst(error_code *worst, error_info *worst_err, error_code code, const error_info *here)
{
    if (*worst == ERR_OK ||
        error_worse_exit(error_exit_code(*worst), error_exit_code(code)) != error_exit_code(*worst)) {
        *worst = code;
        *worst_err = *here;
    }
}

/* One URL's roots (8.1), walked before its manifest is judged by the newest root's keys, then the trusted root's
 * expiry. A failure is recorded in the state's mirror status as refused "root". */
static MUST_CHECK error_code walk_roots(http_client *http, const config *cfg, state *s, mirror_trust *trust,
                                        const char *url, const char *shown, int64_t now_s, error_info *here)
{
    error_code code = mirror_trust_walk(cfg, trust, url, fetch_root, http, true, here);
    if (code == ERR_OK)
        code = mirror_trust_check_expiry(trust, now_s, here);
    record_root(s, trust);
    if (code != ERR_OK) {
        record_status(s, shown, NULL, false, false, MANIFEST_OK, here->message);
        jsonx_set(cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), "status"), "refused",
                  cJSON_CreateString("root"));
    }
    return code;
}

/*
 * One URL's manifest: fetched (conditionally when a copy from that URL is
 * kept: a 304 judges the kept bytes) and judged. ERR_OK fills *offer and
 * takes *shown; a refusal is recorded in the state's mirror status.
 */
static MUST_CHECK error_code read_manifest(http_client *http, const config *cfg, state *s, const mirror_trust *trust,
                                           const char *url, char **shown, int64_t now_s, mirror_offer *offer,
                                           error_info *here)
{
    const cJSON *section = state_section(s, SECTION);
    size_t kept_len = 0;
    char *kept = kept_copy(cfg, s, *shown, &kept_len);
    http_url_request req = {
        .url = url,
        .if_none_match = kept ? jsonx_string(NULL, section, "etag") : NULL,
        .if_modified_since = kept ? jsonx_string(NULL, section, "last_modified") : NULL,
    };
    http_url_body res;
    error_code code = http_url_read(http, &req, MANIFEST_MAX_BYTES, &res, here);
    manifest m;
    memset(&m, 0, sizeof m);
    manifest_verdict verdict = MANIFEST_OK;
    if (code == ERR_OK && res.status == 304 && !kept)
        code = error_set(here, ERR_HTTP, "answered 304 Not Modified to a request that was not conditional");
    if (code == ERR_OK) {
        const char *bytes = res.status == 304 ? kept : res.body;
        size_t len = res.status == 304 ? kept_len : res.body_len;
        if (res.too_large)
            len = MANIFEST_MAX_BYTES + 1; /* manifest_open refuses it by size */
        code = judge(cfg, s, bytes ? bytes : "", bytes ? len : 0, trust, now_s, &m, &verdict, here);
        if (code != ERR_OK && verdict != MANIFEST_OK) {
            error_prefix(here, "mirror %s", *shown);
            char fix[ERROR_MESSAGE_MAX];
            snprintf(fix, sizeof fix, "%s", here->message);
            record_status(s, *shown, &m, false, false, verdict, fix);
        } else if (code != ERR_OK) {
            error_prefix(here, "mirror %s", *shown);
        }
    } else {
        error_prefix(here, "mirror");
        record_status(s, *shown, NULL, false, false, MANIFEST_OK, here->message);
    }
    if (code == ERR_OK) {
        keep_copy(cfg, s, *shown, &res, &m);
        offer->m = m;
        offer->manifest_url = *shown;
        offer->installer_url = resolve(*shown, m.path);
        offer->fetch_url = resolve(url, m.path);
        offer->not_modified = res.status == 304;
        *shown = NULL;
    } else {
        manifest_free(&m);
    }
    http_url_body_free(&res);
    free(kept);
    return code;
}

/* No mirror passed: the most serious failure, said as PRODUCT.md section 1 has it. */
static MUST_CHECK error_code none_passed(error_code worst, error_info *worst_err, error_info *err)
{
    /* What retrying can fix is 75 (a network failure, a timeout, 429/5xx,
     * a slow, stalled or withheld answer, a refused redirect); what it
     * cannot is 1 (a host name that does not resolve, 401/403/404 or a
     * missing file, a TLS name or CA failure): the URL needs fixing.
     * Refusals keep their own code. */
    bool fixable = worst == ERR_HTTP || worst == ERR_NOT_FOUND || worst == ERR_TLS || worst == ERR_NETWORK;
    bool temporary = worst == ERR_TEMPORARY || worst == ERR_PROTOCOL || worst == ERR_IO;
    if (fixable || temporary) {
        if (temporary)
            worst_err->code = worst = ERR_TEMPORARY;
        size_t n = strlen(worst_err->message);
        snprintf(worst_err->message + n, sizeof worst_err->message - n, "%s",
                 fixable ? "; no mirror in `mirror.urls` could be read: check the URLs in `mirror.urls`"
                         : "; no mirror in `mirror.urls` could be read: try again later, or check the URLs and "
                           "the network");
    }
    if (err)
        *err = *worst_err;
    return worst;
}

/* Whether this machine is inside the accepted offer's rollout; recorded as the mirror status status.json shows. */
static MUST_CHECK error_code judge_rollout(const config *cfg, state *s, mirror_offer *offer, error_info *err)
{
    char id[256];
    error_code rc = machine_identity(cfg, id, sizeof id, err);
    if (rc == ERR_OK)
        rc = rollout_eligible(offer->m.rollout_salt, id, offer->m.rollout_percent, &offer->eligible, &offer->bucket,
                              err);
    if (rc == ERR_OK)
        record_status(s, offer->manifest_url, &offer->m, true, offer->eligible, MANIFEST_OK, NULL);
    return rc;
}

error_code source_mirror_fetch(http_client *http, const config *cfg, state *s, int64_t now_s, mirror_offer *offer,
                               error_info *err)
{
    memset(offer, 0, sizeof *offer);
    mirror_trust trust;
    char *lineage = kept_lineage(s);
    error_code rc = mirror_trust_load(cfg, lineage, &trust, err);
    free(lineage);
    if (rc != ERR_OK) {
        mirror_trust_free(&trust);
        return rc;
    }
    error_code worst = ERR_OK;
    error_info worst_err;
    error_clear(&worst_err);
    bool accepted = false;
    for (size_t i = 0; i < cfg->mirror.url_count && !accepted; i++) {
        bool more = i + 1 < cfg->mirror.url_count;
        char *url = manifest_url_of(cfg->mirror.urls[i]);
        /* What is shown and recorded: never the URL's user:password@. */
        char *shown = url ? text_url_redact(url) : NULL;
        if (!url || !shown) {
            free(url);
            rc = error_set(err, ERR_NOMEM, "out of memory");
            break;
        }
        error_info here;
        error_clear(&here);
        error_code code = walk_roots(http, cfg, s, &trust, url, shown, now_s, &here);
        bool root_failed = code != ERR_OK;
        if (code == ERR_OK) {
            forget_on_key_change(s, &trust);
            code = read_manifest(http, cfg, s, &trust, url, &shown, now_s, offer, &here);
            accepted = code == ERR_OK;
        }
        if (code != ERR_OK) {
            log_trace("%s", here.message);
            if (more && !(root_failed && code == ERR_REJECTED))
                log_warn("%s; trying the next mirror", here.message);
            note_worst(&worst, &worst_err, code, &here);
        }
        free(url);
        free(shown);
        /* PRODUCT.md 8.1: a root that fails verification stops the run (a
         * forged root is tampering, not a mirror to route around); one that
         * could not be fetched or has expired lets the next mirror try. */
        if (root_failed && code == ERR_REJECTED)
            break;
    }
    mirror_trust_free(&trust);
    if (rc != ERR_OK)
        return rc;
    if (!accepted)
        return none_passed(worst, &worst_err, err);
    if (!offer->installer_url || !offer->fetch_url) {
        source_mirror_offer_free(offer);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    rc = judge_rollout(cfg, s, offer, err);
    if (rc != ERR_OK)
        source_mirror_offer_free(offer);
    return rc;
}

/* ---- The installer ------------------------------------------------------------------- */

error_code source_mirror_download(http_client *http, const config *cfg, const mirror_offer *offer, bool progress,
                                  download_result *result, error_info *err)
{
    const manifest *m = &offer->m;
    download_offer known = {
        .version = m->version,
        .file_name = m->file_name,
        .total_length = m->length,
        .url = offer->fetch_url,
        .sha256 = m->sha256,
        .signer_sha256 = m->signed_installer ? m->signer_cert_sha256 : NULL,
    };
    download_request req = {
        .state_dir = cfg->state_dir,
        .offer = &known,
        .max_bytes_per_second = cfg->installer.max_bytes_per_second,
        .progress = progress,
    };
    error_code rc = download_run(http, &req, result, err);
    if (rc != ERR_OK && rc != ERR_REJECTED && rc != ERR_NOMEM && rc != ERR_DISK_FULL && rc != ERR_IO) {
        /* The manifest is there but its installer cannot be fetched now: try later. */
        rc = ERR_TEMPORARY;
        if (err)
            err->code = rc;
    }
    if (rc != ERR_OK)
        error_prefix(err, "mirror installer");
    return rc;
}

void source_mirror_record_refusal(state *s, const char *message)
{
    cJSON *st = cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), "status");
    if (!cJSON_IsObject(st))
        return;
    jsonx_set(st, "refused", cJSON_CreateString("installer"));
    jsonx_set(st, "error", cJSON_CreateString(message ? message : ""));
}

error_code source_mirror_trust_reset(const config *cfg, state *s, int64_t now_s, int64_t *forgotten,
                                     char reset_at[TIMEFMT_ISO8601_SIZE], error_info *err)
{
    error_code rc = mirror_trust_reset(cfg, forgotten, err);
    if (rc != ERR_OK)
        return rc;
    cJSON *section = state_section(s, SECTION);
    cJSON_DeleteItemFromObjectCaseSensitive(section, "root_chain");
    cJSON_DeleteItemFromObjectCaseSensitive(section, "root_origin");
    cJSON_DeleteItemFromObjectCaseSensitive(section, "root");
    timefmt_iso8601(now_s, reset_at);
    if (!jsonx_set(section, "trust_reset_at", cJSON_CreateString(reset_at)))
        return error_set(err, ERR_NOMEM, "out of memory");
    return ERR_OK;
}

void source_status_annotate(const config *cfg, state *s, cJSON *installer)
{
    if (!cJSON_IsObject(installer))
        return;
    bool mirror = cfg->mirror.url_count > 0;
    jsonx_set(installer, "source", cJSON_CreateString(mirror ? "mirror" : "api"));
    if (!mirror)
        return;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), "status");
    const cJSON *reset = cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), "trust_reset_at");
    cJSON *shown = st ? cJSON_Duplicate(st, 1) : cJSON_IsString(reset) ? cJSON_CreateObject() : cJSON_CreateNull();
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), "root");
    if (cJSON_IsObject(shown) && cJSON_IsObject(r))
        jsonx_set(shown, "root", cJSON_Duplicate(r, 1));
    if (cJSON_IsObject(shown) && cJSON_IsString(reset))
        jsonx_set(shown, "trust_reset_at", cJSON_Duplicate(reset, 1));
    jsonx_set(installer, "mirror", shown);
}
