/*
 * staging.c — what is staged (staging.h): staging/current, the version
 * directories and their manifests, the history, prune and rollback. A
 * candidate verified by intake.c in staging/.tmp-<random>/ is adopted here:
 * the directory is renamed to staging/<version>, and only then is
 * staging/current switched and old versions pruned. A crash at any step
 * leaves either the old staging or the new one; stray .tmp-* and .old-*
 * directories are removed by the next staging.
 *
 * State kept in section "installer" (through installer_state.h):
 * "staged_history", the versions in the order they were staged (oldest
 * first, each once, at most INSTALLER_STATE_HISTORY_MAX), which prune and
 * rollback use to tell "recent" from "old", and "rolled_back_from".
 */
#include "installer/staging.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/jsonx.h"
#include "installer/disposition.h"
#include "installer/installed.h"
#include "installer/installer_state.h"
#include "core/log.h"
#include "platform/platform.h"
#include "base/text.h"
#include "installer/verify.h"
#include "installer/version.h"

#define MANIFEST_MAX_BYTES (1024 * 1024)
#define CURRENT_MAX_BYTES 256

/* ---- Paths and small helpers ----------------------------------------------- */

static char *staging_root(const config *cfg)
{
    return platform_path_join(cfg->state_dir, "staging");
}

static MUST_CHECK error_code oom(error_info *err)
{
    return error_set(err, ERR_NOMEM, "out of memory");
}

static MUST_CHECK error_code random_name(const char *prefix, char *out, size_t size, error_info *err)
{
    unsigned char bytes[8];
    error_code rc = platform_random_bytes(bytes, sizeof bytes, err);
    if (rc != ERR_OK)
        return rc;
    char hex[2 * sizeof bytes + 1];
    text_hex(bytes, sizeof bytes, hex);
    snprintf(out, size, "%s%s", prefix, hex);
    return ERR_OK;
}

bool staging_file_name_is_safe(const char *name)
{
    if (!name || !name[0] || name[0] == '.' || strlen(name) > 255 || text_equal_nocase(name, "manifest.json"))
        return false;
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7F || strchr("/\\:<>\"|?*", *p))
            return false;
    char last = name[strlen(name) - 1];
    return last != '.' && last != ' ' && !disposition_is_device_name(name);
}

/* ---- The manifest's typed view ------------------------------------------------ */

/* Copies the string at path (absent or null: "") into out; a value that does
 * not fit is a failure, not a silent truncation. */
static void read_fixed(jsonx_reader *r, const cJSON *doc, const char *path, char *out, size_t size)
{
    const char *v = jsonx_string(r, doc, path);
    if (v && strlen(v) >= size)
        jsonx_fail(r, path, "is too long");
    else
        snprintf(out, size, "%s", v ? v : "");
}

static void read_required(jsonx_reader *r, const cJSON *doc, const char *path, char *out, size_t size)
{
    read_fixed(r, doc, path, out, size);
    if (!out[0])
        jsonx_fail(r, path, "is missing");
}

static char *read_owned(jsonx_reader *r, const cJSON *doc, const char *path, bool *oom_seen)
{
    const char *v = jsonx_string(r, doc, path);
    char *copy = v ? text_dup(v) : NULL;
    if (v && !copy)
        *oom_seen = true;
    return copy;
}

/* staging_manifest_from_json, naming the document `where` in errors. */
static MUST_CHECK error_code manifest_view(const cJSON *doc, const char *where, staging_manifest *out, error_info *err)
{
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(doc))
        return error_set(err, ERR_IO, "%s is not a JSON object", where);
    jsonx_reader r;
    jsonx_reader_init(&r, where, NULL, ERR_IO, err);
    read_required(&r, doc, "version", out->version, sizeof out->version);
    read_required(&r, doc, "file_name", out->file_name, sizeof out->file_name);
    read_fixed(&r, doc, "staged_file", out->staged_file, sizeof out->staged_file);
    read_required(&r, doc, "sha256", out->sha256, sizeof out->sha256);
    bool has_size = false;
    double size = jsonx_number(&r, doc, "size", &has_size);
    if (r.rc == ERR_OK && !has_size)
        jsonx_fail(&r, "size", "is missing");
    else if (r.rc == ERR_OK && (size < 0 || size > 9007199254740992.0 || size != (double)(int64_t)size))
        jsonx_fail(&r, "size", "is not a byte count");
    out->size = (int64_t)size;
    read_fixed(&r, doc, "staged_at", out->staged_at, sizeof out->staged_at);
    read_fixed(&r, doc, "verification.format", out->format, sizeof out->format);
    read_fixed(&r, doc, "verification.inner_format", out->inner_format, sizeof out->inner_format);
    read_fixed(&r, doc, "verification.signature.result", out->signature, sizeof out->signature);
    read_fixed(&r, doc, "verification.signature.signer_cert_sha256", out->signer_cert_sha256,
               sizeof out->signer_cert_sha256);
    read_fixed(&r, doc, "verification.version_binding.status", out->version_binding, sizeof out->version_binding);
    read_fixed(&r, doc, "verification.signature.digest", out->digest, sizeof out->digest);
    out->signature_index = jsonx_int64(&r, doc, "verification.signature.signature_index", false, 0);
    out->signature_count = jsonx_int64(&r, doc, "verification.signature.signature_count", false, 0);
    read_fixed(&r, doc, "verification.signature.timestamp_kind", out->timestamp_kind, sizeof out->timestamp_kind);
    read_fixed(&r, doc, "verification.signature.timestamp", out->timestamp, sizeof out->timestamp);
    bool oom_seen = false;
    out->source_url = read_owned(&r, doc, "source_url", &oom_seen);
    out->etag = read_owned(&r, doc, "etag", &oom_seen);
    out->signer = read_owned(&r, doc, "verification.signature.signer", &oom_seen);
    /* The rules the writer followed: these strings name paths and files. */
    if (r.rc == ERR_OK && !version_is_valid(out->version, NULL))
        jsonx_fail(&r, "version", "is not a valid version");
    if (r.rc == ERR_OK && !staging_file_name_is_safe(out->file_name))
        jsonx_fail(&r, "file_name", "is not a safe file name");
    if (r.rc == ERR_OK && out->staged_file[0] && strcmp(out->staged_file, STAGING_DISK_NAME_PE) != 0 &&
        strcmp(out->staged_file, STAGING_DISK_NAME_MSI) != 0)
        jsonx_fail(&r, "staged_file", "is not " STAGING_DISK_NAME_PE " or " STAGING_DISK_NAME_MSI);
    if (r.rc == ERR_OK && !text_is_hex(out->sha256, 64, true))
        jsonx_fail(&r, "sha256", "is not 64 lower-case hex digits");
    /* Manifests written before staged_file existed kept the installer under file_name. */
    if (r.rc == ERR_OK && !out->staged_file[0])
        snprintf(out->staged_file, sizeof out->staged_file, "%s", out->file_name);
    error_code rc = r.rc;
    if (rc == ERR_OK && oom_seen)
        rc = error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK && !out->signature[0])
        snprintf(out->signature, sizeof out->signature, "skipped");
    if (rc != ERR_OK)
        staging_manifest_free(out);
    return rc;
}

error_code staging_manifest_from_json(const cJSON *doc, staging_manifest *out, error_info *err)
{
    return manifest_view(doc, "manifest.json", out, err);
}

void staging_manifest_free(staging_manifest *m)
{
    if (!m)
        return;
    char **owned[] = {&m->source_url, &m->etag, &m->signer};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++) {
        free(*owned[i]);
        *owned[i] = NULL;
    }
}

bool staging_manifest_is_msi(const staging_manifest *m)
{
    const char *format = m->inner_format[0] ? m->inner_format : m->format;
    if (format[0])
        return strcmp(format, "msi") == 0;
    size_t n = strlen(m->staged_file);
    return n >= 4 && text_equal_nocase(m->staged_file + n - 4, ".msi");
}

cJSON *staging_manifest_to_status(const staging_manifest *m, const char *path)
{
    cJSON *staged = cJSON_CreateObject();
    if (!staged)
        return NULL;
    bool ok = cJSON_AddStringToObject(staged, "version", m->version) &&
              jsonx_add_string_or_null(staged, "path", path) &&
              cJSON_AddStringToObject(staged, "file_name", m->file_name) &&
              cJSON_AddStringToObject(staged, "sha256", m->sha256) &&
              cJSON_AddNumberToObject(staged, "size", (double)m->size) &&
              jsonx_add_string_or_null(staged, "staged_at", m->staged_at[0] ? m->staged_at : NULL) &&
              cJSON_AddStringToObject(staged, "signature", m->signature) &&
              /* null: staged before outpost bound versions */
              jsonx_add_string_or_null(staged, "version_binding", m->version_binding[0] ? m->version_binding : NULL) &&
              jsonx_add_string_or_null(staged, "signer", m->signer);
    /* Which signature carried the verdict (issue 23), as the manifest says. */
    cJSON *by = ok ? cJSON_AddObjectToObject(staged, "verified_signature") : NULL;
    ok = by != NULL;
    if (ok && m->digest[0])
        ok = cJSON_AddStringToObject(by, "digest", m->digest) != NULL;
    if (ok && m->signer_cert_sha256[0])
        ok = cJSON_AddStringToObject(by, "signer_cert_sha256", m->signer_cert_sha256) != NULL;
    if (ok && m->signature_index > 0)
        ok = cJSON_AddNumberToObject(by, "signature_index", (double)m->signature_index) &&
             cJSON_AddNumberToObject(by, "signature_count", (double)m->signature_count);
    if (ok && m->timestamp_kind[0])
        ok = cJSON_AddStringToObject(by, "timestamp_kind", m->timestamp_kind) &&
             cJSON_AddStringToObject(by, "timestamp", m->timestamp);
    if (!ok) {
        cJSON_Delete(staged);
        return NULL;
    }
    return staged;
}

/* Reads, parses and checks a staged version's manifest (size-capped). */
static MUST_CHECK error_code manifest_read(const char *dir, staging_manifest *manifest, error_info *err)
{
    char *path = platform_path_join(dir, "manifest.json");
    if (!path)
        return oom(err);
    char *text = NULL;
    size_t len = 0;
    error_code rc = platform_read_file(path, MANIFEST_MAX_BYTES, &text, &len, err);
    if (rc == ERR_OK) {
        cJSON *doc = cJSON_ParseWithLength(text, len);
        rc = doc ? manifest_view(doc, path, manifest, err) : error_set(err, ERR_IO, "%s is not valid JSON", path);
        cJSON_Delete(doc);
    }
    free(text);
    free(path);
    return rc;
}

/* Removes what a crashed staging left: staging/.tmp-* and staging/.old-*,
 * and a half-written replacement of staging/current (platform_write_atomic's
 * "current.<random>.tmp"; version directories are never plain files). */
static void clean_leftovers(const char *root)
{
    char **names = NULL;
    size_t count = 0;
    if (platform_list_dir(root, &names, &count, NULL) != ERR_OK)
        return;
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(names[i]);
        bool current_tmp = text_starts_with(names[i], "current.") && len > 4 && !strcmp(names[i] + len - 4, ".tmp");
        if (!text_starts_with(names[i], ".tmp-") && !text_starts_with(names[i], ".old-") && !current_tmp)
            continue;
        char *path = platform_path_join(root, names[i]);
        if (path) {
            log_info("removing %s left by an interrupted staging", path);
            ERROR_IGNORE(platform_remove_tree(path, NULL));
            if (platform_path_stat(path, NULL) == PLATFORM_PATH_FILE)
                ERROR_IGNORE(platform_remove_file(path, NULL));
        }
        free(path);
    }
    platform_free_names(names, count);
}

/* ---- What is staged ------------------------------------------------------- */

static MUST_CHECK error_code read_current(const char *root, char **version, error_info *err)
{
    *version = NULL;
    char *path = platform_path_join(root, "current");
    if (!path)
        return oom(err);
    char *text = NULL;
    size_t len = 0;
    error_code rc = platform_read_file(path, CURRENT_MAX_BYTES, &text, &len, err);
    if (rc == ERR_NOT_FOUND) {
        error_clear(err);
        free(path);
        return ERR_OK;
    }
    if (rc == ERR_OK) {
        while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
            text[--len] = '\0';
        if (len == 0) {
            free(text);
            text = NULL;
        } else if (!version_is_valid(text, NULL)) {
            rc = error_set(err, ERR_IO, "%s is damaged (it does not name a valid version); stage an installer again",
                           path);
            free(text);
            text = NULL;
        }
        *version = text;
    }
    free(path);
    return rc;
}

error_code staging_current_version(const config *cfg, char **version, error_info *err)
{
    char *root = staging_root(cfg);
    if (!root)
        return oom(err);
    error_code rc = read_current(root, version, err);
    free(root);
    return rc;
}

/* The staged version's manifest and installer path, checked against each other
 * when verify_hash (size always; SHA-256 too when verify_hash). */
static MUST_CHECK error_code load_staged(const char *root, const char *version, bool verify_hash,
                                         staging_manifest *manifest, char **installer_path, error_info *err)
{
    memset(manifest, 0, sizeof *manifest);
    *installer_path = NULL;
    char *dir = platform_path_join(root, version);
    if (!dir)
        return oom(err);
    error_code rc = manifest_read(dir, manifest, err);
    if (rc != ERR_OK) {
        free(dir);
        return rc;
    }
    if (strcmp(manifest->version, version) != 0) {
        rc = error_set(err, ERR_IO, "the manifest of staged version %s names version %s; it is damaged", version,
                       manifest->version);
        goto fail;
    }
    *installer_path = platform_path_join(dir, manifest->staged_file);
    if (!*installer_path) {
        rc = oom(err);
        goto fail;
    }
    uint64_t actual = 0;
    if (platform_path_stat(*installer_path, &actual) != PLATFORM_PATH_FILE || actual != (uint64_t)manifest->size) {
        rc = error_set(err, ERR_REJECTED,
                       "staged installer %s is missing or its size no longer matches its manifest; stage it again",
                       *installer_path);
        goto fail;
    }
    if (verify_hash) {
        char hex[65];
        rc = verify_sha256_file(*installer_path, hex, NULL, err);
        if (rc == ERR_OK && strcmp(hex, manifest->sha256) != 0)
            rc = error_set(err, ERR_REJECTED,
                           "staged installer %s no longer matches the SHA-256 in its manifest; stage it again",
                           *installer_path);
        if (rc != ERR_OK)
            goto fail;
    }
    free(dir);
    return ERR_OK;
fail:
    free(dir);
    free(*installer_path);
    *installer_path = NULL;
    staging_manifest_free(manifest);
    return rc;
}

/* platform_check_private_dir, a missing directory passing. */
static MUST_CHECK error_code check_private(const char *dir, error_info *err)
{
    error_code rc = platform_check_private_dir(dir, err);
    if (rc == ERR_NOT_FOUND) {
        error_clear(err);
        return ERR_OK;
    }
    return rc;
}

error_code staging_check_private(const config *cfg, const char *version, error_info *err)
{
    char *root = staging_root(cfg);
    if (!root)
        return oom(err);
    error_code rc = check_private(root, err);
    if (rc == ERR_OK && version) {
        char *dir = platform_path_join(root, version);
        rc = dir ? check_private(dir, err) : oom(err);
        free(dir);
    }
    free(root);
    return rc;
}

bool staging_has_verified(const config *cfg, const char *version)
{
    if (!version || !version_is_valid(version, NULL))
        return false;
    char *root = staging_root(cfg);
    if (!root)
        return false;
    staging_manifest manifest;
    char *path = NULL;
    error_code rc = load_staged(root, version, true, &manifest, &path, NULL);
    if (rc == ERR_OK)
        staging_manifest_free(&manifest);
    free(path);
    free(root);
    return rc == ERR_OK;
}

error_code staging_current(const config *cfg, char **version, staging_manifest *manifest, char **installer_path,
                           error_info *err)
{
    char *root = staging_root(cfg);
    if (!root)
        return oom(err);
    char *current = NULL;
    staging_manifest m;
    memset(&m, 0, sizeof m);
    if (manifest)
        memset(manifest, 0, sizeof *manifest);
    char *path = NULL;
    error_code rc = read_current(root, &current, err);
    if (rc == ERR_OK && !current)
        rc = error_set(err, ERR_NOT_FOUND, "nothing is staged; run outpost update (or outpost stage FILE) first");
    if (rc == ERR_OK)
        rc = load_staged(root, current, false, &m, &path, err);
    if (rc == ERR_OK) {
        if (version) {
            *version = current;
            current = NULL;
        }
        if (manifest) {
            *manifest = m;
            memset(&m, 0, sizeof m);
        }
        if (installer_path) {
            *installer_path = path;
            path = NULL;
        }
    }
    free(current);
    staging_manifest_free(&m);
    free(path);
    free(root);
    return rc;
}

/* ---- History, previous version, prune -------------------------------------- */

/* The staged versions: directories under root that are not ours (.tmp-*). */
static MUST_CHECK error_code list_staged(const char *root, char ***names, size_t *count, error_info *err)
{
    error_code rc = platform_list_dir(root, names, count, err);
    if (rc == ERR_NOT_FOUND) {
        error_clear(err);
        *names = NULL;
        *count = 0;
        return ERR_OK;
    }
    if (rc != ERR_OK)
        return rc;
    size_t kept = 0;
    for (size_t i = 0; i < *count; i++) {
        char *path = platform_path_join(root, (*names)[i]);
        bool is_version = path && (*names)[i][0] != '.' && platform_path_stat(path, NULL) == PLATFORM_PATH_DIR &&
                          version_is_valid((*names)[i], NULL);
        free(path);
        if (is_version)
            (*names)[kept++] = (*names)[i];
        else
            free((*names)[i]);
    }
    *count = kept;
    return ERR_OK;
}

/* The version rollback would switch to from current, or NULL (points into names). */
static const char *previous_version(char **names, size_t count, state *s, const char *current)
{
    const char *best = NULL;
    for (size_t i = 0; i < count; i++)
        if (version_compare(names[i], current) < 0 && (!best || version_compare(names[i], best) > 0))
            best = names[i];
    if (best)
        return best;
    int current_rank = installer_state_history_rank(s, current);
    int best_rank = -1;
    for (size_t i = 0; i < count; i++) {
        int rank = installer_state_history_rank(s, names[i]);
        if (strcmp(names[i], current) != 0 && rank >= 0 && rank < current_rank && rank > best_rank) {
            best = names[i];
            best_rank = rank;
        }
    }
    return best;
}

/* Ordering for prune: staged more recently first; unknown to the history last,
 * newest version first among them. */
static state *sort_state;
static int by_recency(const void *a, const void *b)
{
    const char *va = *(const char *const *)a, *vb = *(const char *const *)b;
    int ra = installer_state_history_rank(sort_state, va), rb = installer_state_history_rank(sort_state, vb);
    if (ra != rb)
        return rb - ra;
    return version_compare(vb, va);
}

static void prune(const config *cfg, const char *root, state *s, const char *current)
{
    char **names = NULL;
    size_t count = 0;
    if (list_staged(root, &names, &count, NULL) != ERR_OK)
        return;
    const char *previous = previous_version(names, count, s, current);
    char *keep_previous = text_dup(previous);
    sort_state = s;
    qsort(names, count, sizeof *names, by_recency);
    for (size_t i = 0; i < count; i++) {
        bool keep = (int)i < cfg->installer.keep_versions || strcmp(names[i], current) == 0 ||
                    (keep_previous && strcmp(names[i], keep_previous) == 0);
        if (keep)
            continue;
        /* Moved aside first: removing a tree file by file is not atomic, and a
         * kill in the middle must not leave a version directory without its
         * manifest or installer. clean_leftovers removes what a kill leaves. */
        char aside_name[40];
        char *path = platform_path_join(root, names[i]);
        char *aside = random_name(".old-", aside_name, sizeof aside_name, NULL) == ERR_OK
                          ? platform_path_join(root, aside_name)
                          : NULL;
        if (path && aside && platform_rename(path, aside, NULL) == ERR_OK) {
            ERROR_IGNORE(platform_remove_tree(aside, NULL));
            log_info("pruned staged version %s (installer.keep_versions is %d)", names[i],
                     cfg->installer.keep_versions);
            installer_state_history_remove(s, names[i]);
        }
        free(aside);
        free(path);
    }
    /* A kill after a version was moved aside but before the history was
     * saved left its name behind; names still lists what was just pruned
     * (history_remove dropped those). */
    installer_state_history_keep_only(s, names, count);
    free(keep_previous);
    platform_free_names(names, count);
}

static MUST_CHECK error_code write_current(const char *root, const char *version, error_info *err)
{
    char *path = platform_path_join(root, "current");
    if (!path)
        return oom(err);
    char line[VERSION_MAX_LENGTH + 2];
    int n = snprintf(line, sizeof line, "%s\n", version);
    error_code rc = platform_write_atomic(path, line, (size_t)n, err);
    free(path);
    return rc;
}

error_code staging_rollback(const config *cfg, state *s, char **from, char **to, error_info *err)
{
    char *root = staging_root(cfg);
    if (!root)
        return oom(err);
    char *current = NULL, *target = NULL;
    char **names = NULL;
    size_t count = 0;
    error_code rc = installer_state_history_open(s, err);
    if (rc == ERR_OK)
        rc = read_current(root, &current, err);
    if (rc == ERR_OK && !current)
        rc = error_set(err, ERR_NOT_FOUND, "nothing is staged, so there is nothing to roll back");
    if (rc == ERR_OK)
        rc = list_staged(root, &names, &count, err);
    if (rc == ERR_OK) {
        target = text_dup(previous_version(names, count, s, current));
        if (!target)
            rc = error_set(err, ERR_NOT_FOUND,
                           "no earlier staged version to roll back to (current is %s); stage one with outpost stage "
                           "FILE --version V",
                           current);
    }
    if (rc == ERR_OK)
        rc = staging_check_private(cfg, target, err);
    if (rc == ERR_OK && !staging_has_verified(cfg, target))
        rc = error_set(err, ERR_REJECTED, "staged version %s no longer matches its manifest; it was not made current",
                       target);
    /* Recorded before the switch, so that staging_finish_commit never takes
     * the version rolled back from (still last in the history) for a commit a
     * kill interrupted, and undoes the rollback. */
    if (rc == ERR_OK)
        rc = installer_state_set_rolled_back_from(s, current, err);
    if (rc == ERR_OK)
        rc = state_save(s, err);
    if (rc == ERR_OK)
        rc = write_current(root, target, err);
    if (rc == ERR_OK) {
        if (from) {
            *from = current;
            current = NULL;
        }
        if (to) {
            *to = target;
            target = NULL;
        }
    }
    platform_free_names(names, count);
    free(current);
    free(target);
    free(root);
    return rc;
}

error_code staging_finish_commit(const config *cfg, state *s, const char *version, error_info *err)
{
    char *root = staging_root(cfg);
    if (!root)
        return oom(err);
    char *current = NULL;
    error_code rc = installer_state_history_open(s, err);
    if (rc == ERR_OK)
        rc = read_current(root, &current, err);
    const char *last = installer_state_history_last(s);
    const char *rolled_back = installer_state_rolled_back_from(s);
    bool is_current = current && strcmp(current, version) == 0;
    bool was_rolled_back = rolled_back && strcmp(rolled_back, version) == 0;
    if (rc == ERR_OK && !is_current && !was_rolled_back && last && strcmp(last, version) == 0) {
        log_info("staging of %s was interrupted before it became current; making it current", version);
        rc = write_current(root, version, err);
        is_current = rc == ERR_OK;
    }
    if (rc == ERR_OK && is_current) {
        clean_leftovers(root);
        prune(cfg, root, s, version);
        rc = state_save(s, err);
    }
    free(current);
    free(root);
    return rc;
}

/* ---- Taking over a verified candidate (intake.c) ---------------------------- */

char *staging_path(const config *cfg, const char *version)
{
    char *root = staging_root(cfg);
    if (!root || !version)
        return root;
    char *dir = platform_path_join(root, version);
    free(root);
    return dir;
}

error_code staging_work_dir(const config *cfg, char **tmp, error_info *err)
{
    *tmp = NULL;
    char *root = staging_root(cfg);
    if (!root)
        return oom(err);
    char tmp_name[40];
    error_code rc = platform_mkdirs(root, err);
    if (rc != ERR_OK)
        rc = error_prefix(err, "cannot create the staging directory");
    if (rc == ERR_OK)
        rc = check_private(root, err);
    if (rc == ERR_OK) {
        clean_leftovers(root);
        rc = random_name(".tmp-", tmp_name, sizeof tmp_name, err);
    }
    if (rc == ERR_OK) {
        *tmp = platform_path_join(root, tmp_name);
        rc = *tmp ? platform_mkdirs(*tmp, err) : oom(err);
    }
    free(root);
    return rc;
}

error_code staging_load(const config *cfg, const char *version, staging_manifest *manifest, char **installer_path,
                        error_info *err)
{
    char *root = staging_root(cfg);
    if (!root)
        return oom(err);
    error_code rc = load_staged(root, version, false, manifest, installer_path, err);
    free(root);
    return rc;
}

/* Renames tmp to staging/<version>, moving an existing one aside first. */
static MUST_CHECK error_code commit_directory(const char *root, const char *tmp, const char *version, error_info *err)
{
    char *final = platform_path_join(root, version);
    if (!final)
        return oom(err);
    char old_name[40];
    char *old = NULL;
    error_code rc = ERR_OK;
    if (platform_path_stat(final, NULL) != PLATFORM_PATH_NONE) {
        rc = random_name(".old-", old_name, sizeof old_name, err);
        old = rc == ERR_OK ? platform_path_join(root, old_name) : NULL;
        if (rc == ERR_OK)
            rc = old ? platform_rename(final, old, err) : oom(err);
    }
    if (rc == ERR_OK)
        rc = platform_rename(tmp, final, err);
    if (rc == ERR_OK && old)
        ERROR_IGNORE(platform_remove_tree(old, NULL));
    free(old);
    free(final);
    return rc;
}

error_code staging_adopt(const config *cfg, state *s, const char *tmp, const char *version, error_info *err)
{
    /* The history names the version before its directory appears, so that
     * staging_finish_commit recognises a kill between any two later steps. */
    char *root = staging_root(cfg);
    if (!root)
        return oom(err);
    error_code rc = installer_state_history_append(s, version, err);
    if (rc == ERR_OK)
        rc = installer_state_set_rolled_back_from(s, NULL, err);
    if (rc == ERR_OK)
        rc = state_save(s, err);
    if (rc == ERR_OK)
        rc = commit_directory(root, tmp, version, err);
    if (rc == ERR_OK)
        rc = write_current(root, version, err);
    if (rc == ERR_OK) {
        prune(cfg, root, s, version);
        rc = state_save(s, err);
    }
    free(root);
    return rc;
}

error_code staging_status_of(const config *cfg, const char *version, cJSON **out, error_info *err)
{
    *out = NULL;
    staging_manifest m;
    char *path = NULL;
    error_code rc = staging_load(cfg, version, &m, &path, err);
    if (rc != ERR_OK)
        return rc;
    *out = staging_manifest_to_status(&m, path);
    if (!*out)
        rc = oom(err);
    free(path);
    staging_manifest_free(&m);
    return rc;
}

/* ---- The status file's "installer" member ------------------------------------ */

static cJSON *staged_object(const config *cfg)
{
    char *path = NULL;
    staging_manifest m;
    if (staging_current(cfg, NULL, &m, &path, NULL) != ERR_OK)
        return cJSON_CreateNull();
    cJSON *staged = staging_manifest_to_status(&m, path);
    free(path);
    staging_manifest_free(&m);
    return staged ? staged : cJSON_CreateNull();
}

static void add_copy_or_null(cJSON *obj, const char *name, const cJSON *value)
{
    cJSON *copy = value ? cJSON_Duplicate(value, true) : NULL;
    cJSON_AddItemToObject(obj, name, copy ? copy : cJSON_CreateNull());
}

error_code staging_status_section(const config *cfg, state *s, cJSON **out, error_info *err)
{
    *out = NULL;
    cJSON *obj = cJSON_CreateObject();
    if (!obj)
        return oom(err);
    char *installed = NULL;
    error_info ignored;
    if (installed_version_get(cfg, s, &installed, NULL, &ignored) != ERR_OK)
        installed = NULL; /* the status still shows everything else */
    const char *latest = installer_state_latest_version(s);
    if (latest && !version_is_valid(latest, NULL))
        latest = NULL;
    jsonx_add_string_or_null(obj, "installed_version", installed);
    jsonx_add_string_or_null(obj, "latest_version", latest);
    cJSON_AddBoolToObject(obj, "update_available", version_is_update(latest, installed));
    jsonx_add_string_or_null(obj, "checked_at", installer_state_checked_at(s));
    cJSON_AddItemToObject(obj, "staged", staged_object(cfg));
    add_copy_or_null(obj, "deployed", installer_state_deployed(s));
    const cJSON *failure = installer_state_deploy_failure(s);
    if (failure)
        add_copy_or_null(obj, "deploy_failure", failure);
    const cJSON *last_command = installer_state_last_command(s);
    if (last_command)
        add_copy_or_null(obj, "last_command", last_command);
    free(installed);
    *out = obj;
    return ERR_OK;
}
