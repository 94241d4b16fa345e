/*
 * source_mirror.c — the fleet mirror as the installer's source: manifest
 * fetch and rules, rollout, the capped and hashed installer download.
 */
#include "installer/source_mirror.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <mbedtls/md.h>

#include "base/text.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/timefmt.h"
#include "installer/version.h"
#include "mirror/rollout.h"
#include "mirror/signkey.h"
#include "net/fetch.h"
#include "platform/platform.h"

#define SECTION "mirror"

void source_mirror_offer_free(mirror_offer *offer)
{
    if (!offer)
        return;
    manifest_free(&offer->m);
    free(offer->manifest_url);
    free(offer->installer_url);
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

static MUST_CHECK error_code load_keys(const config *cfg, signkey ***keys, size_t *count, error_info *err)
{
    if (cfg->mirror.public_key_count == 0)
        return error_set(err, ERR_CONFIG,
                         "%s: `mirror.public_keys` is empty; add the publisher's public key (what "
                         "`outpost keygen` printed on the publishing host)",
                         cfg->path ? cfg->path : "configuration");
    signkey **list = calloc(cfg->mirror.public_key_count, sizeof *list);
    if (!list)
        return error_set(err, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < cfg->mirror.public_key_count; i++) {
        error_code rc = signkey_parse_public(cfg->mirror.public_keys[i], &list[i], err);
        if (rc != ERR_OK) {
            for (size_t j = 0; j < i; j++)
                signkey_free(list[j]);
            free(list);
            error_prefix(err, "`mirror.public_keys[%zu]`", i);
            return rc;
        }
    }
    *keys = list;
    *count = cfg->mirror.public_key_count;
    return ERR_OK;
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
        cJSON_AddNumberToObject(st, "seq", (double)m->seq);
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

/* Opens and judges one manifest's bytes. m is filled when it opened. */
static MUST_CHECK error_code judge(const config *cfg, state *s, const char *bytes, size_t len, signkey *const *keys,
                                   size_t key_count, int64_t now_s, manifest *m, manifest_verdict *verdict,
                                   error_info *err)
{
    error_code rc = manifest_open(bytes, len, keys, key_count, m, verdict, err);
    if (rc != ERR_OK)
        return rc;
    const cJSON *section = state_section(s, SECTION);
    const cJSON *highest = cJSON_GetObjectItemCaseSensitive(section, "highest_seq");
    manifest_expect e = {
        .now_s = now_s,
        .channel = cfg->mirror.channel,
        .platform = cfg->installer.platform,
        .highest_seq = cJSON_IsNumber(highest) ? (int64_t)highest->valuedouble : -1,
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
static void keep_copy(const config *cfg, state *s, const char *url, const fetch_result *res, const manifest *m)
{
    cJSON *section = state_section(s, SECTION);
    const cJSON *highest = cJSON_GetObjectItemCaseSensitive(section, "highest_seq");
    if (!cJSON_IsNumber(highest) || m->seq >= (int64_t)highest->valuedouble) {
        jsonx_set(section, "highest_seq", cJSON_CreateNumber((double)m->seq));
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

error_code source_mirror_fetch(const config *cfg, state *s, int64_t now_s, mirror_offer *offer, error_info *err)
{
    memset(offer, 0, sizeof *offer);
    signkey **keys = NULL;
    size_t key_count = 0;
    error_code rc = load_keys(cfg, &keys, &key_count, err);
    if (rc != ERR_OK)
        return rc;
    error_code worst = ERR_OK;
    error_info worst_err;
    error_clear(&worst_err);
    bool accepted = false;
    for (size_t i = 0; i < cfg->mirror.url_count && !accepted; i++) {
        char *url = manifest_url_of(cfg->mirror.urls[i]);
        if (!url) {
            rc = error_set(err, ERR_NOMEM, "out of memory");
            break;
        }
        const cJSON *section = state_section(s, SECTION);
        size_t kept_len = 0;
        char *kept = kept_copy(cfg, s, url, &kept_len);
        fetch_request req = {
            .url = url,
            .if_none_match = kept ? jsonx_string(NULL, section, "etag") : NULL,
            .if_modified_since = kept ? jsonx_string(NULL, section, "last_modified") : NULL,
            .max_bytes = MANIFEST_MAX_BYTES,
        };
        fetch_result res;
        error_info here;
        error_clear(&here);
        error_code code = fetch_get(cfg, &req, &res, &here);
        manifest m;
        memset(&m, 0, sizeof m);
        manifest_verdict verdict = MANIFEST_OK;
        if (code == ERR_OK && res.status == 304 && !kept)
            code = error_set(&here, ERR_HTTP, "answered 304 Not Modified to a request that was not conditional");
        if (code == ERR_OK) {
            const char *bytes = res.status == 304 ? kept : res.body;
            size_t len = res.status == 304 ? kept_len : res.body_len;
            if (res.too_large)
                len = MANIFEST_MAX_BYTES + 1; /* manifest_open refuses it by size */
            code = judge(cfg, s, bytes ? bytes : "", bytes ? len : 0, keys, key_count, now_s, &m, &verdict, &here);
            if (code != ERR_OK && verdict != MANIFEST_OK) {
                error_prefix(&here, "mirror %s", url);
                char fix[ERROR_MESSAGE_MAX];
                snprintf(fix, sizeof fix, "%s", here.message);
                record_status(s, url, &m, false, false, verdict, fix);
            } else if (code != ERR_OK) {
                error_prefix(&here, "mirror %s", url);
            }
        } else {
            error_prefix(&here, "mirror");
            record_status(s, url, NULL, false, false, MANIFEST_OK, here.message);
        }
        if (code == ERR_OK) {
            keep_copy(cfg, s, url, &res, &m);
            offer->m = m;
            offer->manifest_url = url;
            offer->installer_url = resolve(url, m.path);
            offer->not_modified = res.status == 304;
            accepted = true;
            url = NULL;
        } else {
            manifest_free(&m);
            log_trace("%s", here.message);
            if (i + 1 < cfg->mirror.url_count)
                log_warn("%s; trying the next mirror", here.message);
            if (worst == ERR_OK ||
                error_worse_exit(error_exit_code(worst), error_exit_code(code)) != error_exit_code(worst)) {
                worst = code;
                worst_err = here;
            }
        }
        fetch_result_free(&res);
        free(kept);
        free(url);
    }
    for (size_t k = 0; k < key_count; k++)
        signkey_free(keys[k]);
    free(keys);
    if (rc != ERR_OK)
        return rc;
    if (!accepted) {
        /* A fetch failure (404, network) means "try later"; refusals keep their own code. */
        bool transport = worst == ERR_HTTP || worst == ERR_NOT_FOUND || worst == ERR_IO || worst == ERR_TLS ||
                         worst == ERR_TEMPORARY;
        if (transport) {
            worst_err.code = worst = ERR_TEMPORARY;
            size_t n = strlen(worst_err.message);
            snprintf(worst_err.message + n, sizeof worst_err.message - n,
                     "; no mirror in `mirror.urls` could be read: try again later, or check the URLs and the network");
        }
        if (err)
            *err = worst_err;
        return worst;
    }
    if (!offer->installer_url) {
        source_mirror_offer_free(offer);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    char id[256];
    rc = machine_identity(cfg, id, sizeof id, err);
    if (rc == ERR_OK)
        rc = rollout_eligible(offer->m.rollout_salt, id, offer->m.rollout_percent, &offer->eligible, &offer->bucket,
                              err);
    if (rc != ERR_OK) {
        source_mirror_offer_free(offer);
        return rc;
    }
    record_status(s, offer->manifest_url, &offer->m, true, offer->eligible, MANIFEST_OK, NULL);
    return ERR_OK;
}

/* ---- The installer ------------------------------------------------------------------- */

typedef struct download_sink {
    FILE *out;
    const char *path;
    mbedtls_md_context_t md;
    int64_t limit;
    int64_t from;    /* bytes kept from an earlier attempt, asked for with Range */
    int64_t written; /* bytes in the file, kept prefix included */
    bool restarted;  /* the server sent the whole file: the prefix was dropped */
    bool too_long;
    bool write_failed;
    bool open_failed;
    bool range_refused; /* a range request answered with an error (416, a wrong range) */
} download_sink;

static bool sink_restart(download_sink *k)
{
    /* The whole file comes again: start the part file and the hash over. */
    if (k->out)
        fclose(k->out);
    k->out = platform_fopen_private(k->path, "wb");
    if (!k->out) {
        k->open_failed = true;
        return false;
    }
    k->written = 0;
    k->restarted = k->from > 0;
    return mbedtls_md_starts(&k->md) == 0;
}

static bool sink_start(void *user, const fetch_result *res)
{
    download_sink *k = user;
    if (res->status == 206 && res->range_start == k->from)
        return true;
    return sink_restart(k);
}

static bool sink_data(void *user, const void *data, size_t len)
{
    download_sink *k = user;
    if (k->written + (int64_t)len > k->limit) {
        k->too_long = true;
        return false;
    }
    if (fwrite(data, 1, len, k->out) != len) {
        k->write_failed = true;
        return false;
    }
    mbedtls_md_update(&k->md, data, len);
    k->written += (int64_t)len;
    return true;
}

/* Hashes the first k->from bytes of the part file an earlier attempt left,
 * and opens it for appending. False (the partial is dropped and the
 * download starts over) when it cannot be read back. */
static bool sink_reopen(download_sink *k)
{
    FILE *in = platform_fopen(k->path, "rb");
    unsigned char *buf = in ? malloc(256 * 1024) : NULL;
    int64_t left = k->from;
    while (buf && left > 0) {
        size_t want = left < 256 * 1024 ? (size_t)left : 256 * 1024;
        size_t n = fread(buf, 1, want, in);
        if (n != want)
            break;
        mbedtls_md_update(&k->md, buf, n);
        left -= (int64_t)n;
    }
    free(buf);
    if (in)
        fclose(in);
    if (left != 0)
        return false;
    k->out = platform_fopen_private(k->path, "ab");
    k->written = k->from;
    return k->out != NULL;
}

/* Removes the part files of other installers: only one partial is kept. */
static void drop_other_partials(const char *dir, const char *keep)
{
    char **names = NULL;
    size_t count = 0;
    if (platform_list_dir(dir, &names, &count, NULL) != ERR_OK)
        return;
    for (size_t i = 0; i < count; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(names[i], "mirror-", 7) != 0 || n < 5 || strcmp(names[i] + n - 5, ".part") != 0 ||
            strcmp(names[i], keep) == 0)
            continue;
        char *path = platform_path_join(dir, names[i]);
        if (path)
            ERROR_IGNORE(platform_remove_file(path, NULL));
        free(path);
    }
    platform_free_names(names, count);
}

/* One GET of the installer into k (from k->from on). */
static MUST_CHECK error_code download_attempt(const config *cfg, const mirror_offer *offer, download_sink *k,
                                              error_info *err)
{
    const manifest *m = &offer->m;
    error_code rc = ERR_OK;
    k->restarted = k->too_long = k->write_failed = k->open_failed = k->range_refused = false;
    if (mbedtls_md_starts(&k->md) != 0)
        return error_set(err, ERR_INTERNAL, "SHA-256 setup failed");
    if (k->from > 0 && !sink_reopen(k)) {
        log_info("the partial mirror download %s cannot be read back; starting over", k->path);
        k->from = 0;
        if (mbedtls_md_starts(&k->md) != 0)
            return error_set(err, ERR_INTERNAL, "SHA-256 setup failed");
    }
    if (k->from == 0 && !k->out && !sink_restart(k))
        return error_set(err, ERR_IO, "cannot create %s; check the state directory", k->path);
    if (k->from > 0)
        log_info("resuming the mirror download at %lld of %lld bytes", (long long)k->from, (long long)m->length);
    fetch_result res;
    fetch_request req = {
        .url = offer->installer_url, .on_data = sink_data, .on_start = sink_start, .user = k, .range_from = k->from};
    rc = fetch_get(cfg, &req, &res, err);
    if (rc == ERR_OK && res.status != 200 && res.status != 206)
        rc = error_set(err, ERR_HTTP, "%s: HTTP %ld", offer->installer_url, res.status);
    k->range_refused = rc == ERR_HTTP && k->from > 0;
    if (rc != ERR_OK && rc != ERR_REJECTED && rc != ERR_NOMEM) {
        /* The manifest is there but its installer cannot be fetched: try later. */
        rc = ERR_TEMPORARY;
        if (err) {
            err->code = rc;
            error_prefix(err, "mirror installer");
        }
    }
    fetch_result_free(&res);
    if (k->open_failed)
        rc = error_set(err, ERR_IO, "cannot create %s; check the state directory", k->path);
    else if (k->write_failed)
        rc = error_set(err, ERR_DISK_FULL, "cannot write %s (disk full?)", k->path);
    else if (rc == ERR_OK && k->too_long)
        rc = error_set(err, ERR_REJECTED,
                       "mirror installer %s is longer than the %lld bytes its manifest says; it was not kept: the "
                       "mirror's copy is not the one published, ask the publisher to re-run publish",
                       offer->installer_url, (long long)m->length);
    if (k->out) {
        /* Flushed whatever the outcome, so that the next attempt or run can
         * trust the part file's length. */
        error_code sync = platform_fsync_file(k->out, NULL);
        if (fclose(k->out) != 0 || sync != ERR_OK) {
            if (rc == ERR_OK || rc == ERR_TEMPORARY)
                rc = error_set(err, ERR_IO, "cannot write %s", k->path);
        }
        k->out = NULL;
    }
    return rc;
}

/* Compares the finished file with the manifest: its length and SHA-256. */
static MUST_CHECK error_code download_check(const mirror_offer *offer, download_sink *k, error_info *err)
{
    const manifest *m = &offer->m;
    if (k->written != m->length)
        return error_set(err, ERR_REJECTED,
                         "mirror installer %s has %lld bytes, its manifest says %lld; it was not kept: the mirror's "
                         "copy is truncated or not the one published, copy installers/ again",
                         offer->installer_url, (long long)k->written, (long long)m->length);
    uint8_t digest[32];
    char hex[65];
    mbedtls_md_finish(&k->md, digest);
    text_hex(digest, sizeof digest, hex);
    if (strcmp(hex, m->sha256) != 0)
        return error_set(err, ERR_REJECTED,
                         "mirror installer %s has SHA-256 %s, its signed manifest says %s; it was not kept: the file "
                         "was changed or swapped on the mirror, do not use it and ask the publisher",
                         offer->installer_url, hex, m->sha256);
    return ERR_OK;
}

error_code source_mirror_download(const config *cfg, const mirror_offer *offer, char **path_out, error_info *err)
{
    const manifest *m = &offer->m;
    char *dir = platform_path_join(cfg->state_dir, "downloads");
    char name[96];
    snprintf(name, sizeof name, "mirror-%s.part", m->sha256);
    char *path = dir ? platform_path_join(dir, name) : NULL;
    if (!path) {
        free(dir);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    error_code rc = platform_mkdirs(dir, err);
    if (rc == ERR_OK)
        drop_other_partials(dir, name);
    free(dir);
    download_sink sink = {.limit = m->length, .path = path};
    mbedtls_md_init(&sink.md);
    if (rc == ERR_OK && mbedtls_md_setup(&sink.md, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), 0) != 0)
        rc = error_set(err, ERR_INTERNAL, "SHA-256 setup failed");
    /* A partial left by an earlier attempt or run is resumed: the file is
     * named by its SHA-256, so the bytes it must hold never change, and the
     * hash over the whole file catches a prefix that does not belong. */
    uint64_t have = 0;
    if (rc == ERR_OK && platform_path_stat(path, &have) == PLATFORM_PATH_FILE && have > 0 && have < (uint64_t)m->length)
        sink.from = (int64_t)have;
    bool retried_whole = false;
    for (int attempt = 1; rc == ERR_OK; attempt++) {
        int64_t before = sink.from;
        rc = download_attempt(cfg, offer, &sink, err);
        if (rc == ERR_OK) {
            bool resumed = sink.from > 0 && !sink.restarted;
            rc = download_check(offer, &sink, err);
            if (rc == ERR_REJECTED && resumed && !retried_whole) {
                /* The kept prefix did not belong (a power cut can leave
                 * zeros behind a file's length): once more, whole. */
                log_info("the resumed mirror download does not match its manifest; downloading it again whole");
                retried_whole = true;
                sink.from = 0;
                ERROR_IGNORE(platform_remove_file(path, NULL));
                rc = ERR_OK;
                continue;
            }
            break;
        }
        if (sink.range_refused && !retried_whole) {
            /* 416 or another range: whatever the server holds now, ask for all of it. */
            log_info("the mirror refused to resume the download; downloading it again whole");
            retried_whole = true;
            sink.from = 0;
            ERROR_IGNORE(platform_remove_file(path, NULL));
            rc = ERR_OK;
            continue;
        }
        /* A transfer that broke keeps what arrived; it is resumed at once
         * while attempts make progress, and by the next run otherwise. */
        if (rc != ERR_TEMPORARY || sink.written <= 0)
            break;
        sink.from = sink.written < m->length ? sink.written : 0;
        if (attempt >= 3 || sink.written <= before)
            break;
        log_info("mirror download interrupted at %lld of %lld bytes; resuming", (long long)sink.written,
                 (long long)m->length);
        rc = ERR_OK;
    }
    mbedtls_md_free(&sink.md);
    if (rc != ERR_OK) {
        if (rc != ERR_TEMPORARY)
            ERROR_IGNORE(platform_remove_file(path, NULL));
        free(path);
        return rc;
    }
    *path_out = path;
    return ERR_OK;
}

void source_mirror_record_refusal(state *s, const char *message)
{
    cJSON *st = cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), "status");
    if (!cJSON_IsObject(st))
        return;
    jsonx_set(st, "refused", cJSON_CreateString("installer"));
    jsonx_set(st, "error", cJSON_CreateString(message ? message : ""));
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
    jsonx_set(installer, "mirror", st ? cJSON_Duplicate(st, 1) : cJSON_CreateNull());
}
