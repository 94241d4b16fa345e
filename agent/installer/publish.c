/*
 * publish.c — the current staged installer into a signed, content-addressed
 * mirror directory (publish.h says in which order and why).
 */
#include "installer/publish.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/text.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "installer/staging.h"
#include "installer/verify.h"
#include "core/timefmt.h"
#include "mirror/manifest.h"
#include "mirror/root.h"
#include "platform/platform.h"

#define SALT_BYTES 16
#define PUBLISH_WARN_S (30 * 86400) /* publish warns this long before the mirror root expires */

/* installers/<sha256>.<ext>: kept when already right, else written, read back, checked, renamed. */
static MUST_CHECK error_code write_installer(const char *staged_path, const char *final_path, const char *sha256,
                                             int64_t length, bool *written, error_info *err)
{
    char hex[65];
    int64_t size = -1;
    *written = false;
    if (platform_path_stat(final_path, NULL) == PLATFORM_PATH_FILE) {
        if (verify_sha256_file(final_path, hex, &size, NULL) == ERR_OK && strcmp(hex, sha256) == 0 && size == length)
            return ERR_OK;
        log_warn("%s does not hold what its name says; writing it again", final_path);
    }
    char *tmp = NULL;
    error_code rc = platform_temp_name(final_path, &tmp, err);
    if (rc != ERR_OK)
        return rc;
    if ((rc = platform_copy_file(staged_path, tmp, NULL, NULL, err)) != ERR_OK)
        error_prefix(err, "publish: cannot copy the staged installer into the mirror directory");
    if (rc == ERR_OK && (rc = verify_sha256_file(tmp, hex, &size, err)) == ERR_OK &&
        (strcmp(hex, sha256) != 0 || size != length))
        rc =
            error_set(err, ERR_IO,
                      "the installer written to the mirror reads back wrong (SHA-256 %s, %lld bytes; expected %s, %lld "
                      "bytes); check the disk of the mirror directory",
                      hex, (long long)size, sha256, (long long)length);
    if (rc == ERR_OK && (rc = platform_make_world_readable(tmp, err)) == ERR_OK)
        rc = platform_rename(tmp, final_path, err);
    if (rc != ERR_OK)
        ERROR_IGNORE(platform_remove_file(tmp, NULL));
    free(tmp);
    *written = rc == ERR_OK;
    return rc;
}

/* manifest.json: a new readable (0644) temporary file renamed over the old one. */
static MUST_CHECK error_code write_manifest(const char *path, const char *data, size_t len, error_info *err)
{
    char *tmp = NULL;
    error_code rc = platform_temp_name(path, &tmp, err);
    if (rc != ERR_OK)
        return rc;
    rc = platform_write_new_file(tmp, data, len, false, err);
    if (rc == ERR_OK)
        rc = platform_rename(tmp, path, err);
    if (rc != ERR_OK)
        ERROR_IGNORE(platform_remove_file(tmp, NULL));
    free(tmp);
    return rc;
}

static bool is_installer_name(const char *name)
{
    size_t n = strlen(name);
    if (n != 68 || (strcmp(name + 64, ".exe") != 0 && strcmp(name + 64, ".msi") != 0))
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)name[i]) || isupper((unsigned char)name[i]))
            return false;
    return true;
}

/* Whether name is "<base>.<16 hex>.tmp" with a base that is_base accepts:
 * the temporary file of a write this module makes (platform_temp_name). */
static bool is_temp_name(const char *name, bool (*is_base)(const char *))
{
    size_t n = strlen(name);
    if (n < 22 || strcmp(name + n - 4, ".tmp") != 0 || name[n - 21] != '.')
        return false;
    for (size_t i = n - 20; i < n - 4; i++)
        if (!isxdigit((unsigned char)name[i]))
            return false;
    char base[128];
    if (n - 21 >= sizeof base)
        return false;
    memcpy(base, name, n - 21);
    base[n - 21] = '\0';
    return is_base(base);
}

static bool is_manifest_name(const char *name)
{
    return strcmp(name, "manifest.json") == 0;
}

/* Removes the temporary files of earlier publishes that were killed before
 * renaming them: nothing else would, and whatever copies the mirror to the
 * fleet (a sync to a CDN, a file share) would carry them along. The state
 * lock keeps a second publish of this host out; a second host publishing
 * into the same directory is not supported (its seq would clash). */
static void remove_leftovers(const char *dir, bool (*is_base)(const char *))
{
    char **names = NULL;
    size_t count = 0;
    if (platform_list_dir(dir, &names, &count, NULL) != ERR_OK)
        return;
    for (size_t i = 0; i < count; i++) {
        if (!is_temp_name(names[i], is_base))
            continue;
        char *path = platform_path_join(dir, names[i]);
        if (path && platform_remove_file(path, NULL) == ERR_OK)
            log_info("removed %s, left by an interrupted publish", path);
        free(path);
    }
    platform_free_names(names, count);
}

/* Keeps the newest keep_installers names of the history (current first); removes the others' files. */
static int prune_installers(const char *installers_dir, cJSON *history, int keep)
{
    while (cJSON_GetArraySize(history) > keep)
        cJSON_DeleteItemFromArray(history, cJSON_GetArraySize(history) - 1);
    char **names = NULL;
    size_t count = 0;
    if (platform_list_dir(installers_dir, &names, &count, NULL) != ERR_OK)
        return 0;
    int removed = 0;
    for (size_t i = 0; i < count; i++) {
        if (!is_installer_name(names[i]))
            continue; /* not ours, or a temporary file: remove_leftovers */
        bool kept = false;
        const cJSON *entry;
        cJSON_ArrayForEach(entry, history)
        {
            if (cJSON_IsString(entry) && strcmp(entry->valuestring, names[i]) == 0)
                kept = true;
        }
        if (kept)
            continue;
        char *path = platform_path_join(installers_dir, names[i]);
        if (path && platform_remove_file(path, NULL) == ERR_OK)
            removed++;
        free(path);
    }
    platform_free_names(names, count);
    return removed;
}

/* ---- The roots (PRODUCT.md 8.1) ---- */

/* N from "N.root.json"; 0 when name is not one. */
static int64_t root_file_version(const char *name)
{
    char *end = NULL;
    long long n = strtoll(name, &end, 10);
    if (end == name || n < 1 || name[0] == '0' || strcmp(end, ".root.json") != 0)
        return 0;
    return (int64_t)n;
}

static MUST_CHECK error_code read_root_version(const char *dir, int64_t version, char **data, size_t *len,
                                               char **path_out, error_info *err)
{
    char name[40];
    snprintf(name, sizeof name, "%lld.root.json", (long long)version);
    char *path = platform_path_join(dir, name);
    if (!path)
        return error_set(err, ERR_NOMEM, "out of memory");
    error_code rc = platform_read_file(path, ROOT_MAX_BYTES + 1, data, len, err);
    if (rc != ERR_OK)
        error_prefix(err, "publish.roots_dir: %s", path);
    if (rc == ERR_OK && path_out)
        *path_out = path;
    else
        free(path);
    return rc;
}

/* Writes data as mirror_dir/rel unless it holds those bytes already; a root file is never rewritten. */
static MUST_CHECK error_code place_root(const char *mirror_dir, const char *rel, const char *data, size_t len,
                                        bool replace, error_info *err)
{
    char *path = platform_path_join(mirror_dir, rel);
    if (!path)
        return error_set(err, ERR_NOMEM, "out of memory");
    char *have = NULL;
    size_t have_len = 0;
    error_code rc = ERR_OK;
    if (platform_read_file(path, ROOT_MAX_BYTES + 1, &have, &have_len, NULL) == ERR_OK) {
        if (have_len == len && memcmp(have, data, len) == 0) {
            free(have);
            free(path);
            return ERR_OK;
        }
        if (!replace)
            rc = error_set(err, ERR_CONFIG,
                           "publish: the mirror's %s differs from the root in publish.roots_dir; a published root is "
                           "never rewritten (endpoints may have trusted it): publish the change as the next version",
                           path);
    }
    free(have);
    if (rc == ERR_OK && (rc = write_manifest(path, data, len, err)) != ERR_OK)
        error_prefix(err, "publish: cannot write %s", path);
    free(path);
    return rc;
}

/*
 * publish.roots_dir: the chain judged as an endpoint would (1.root.json
 * trusted as given, then each next version), the signing key checked
 * against the newest root's manifest keys, then roots/N.root.json and
 * root.json written into the mirror. Warns when the newest root expires
 * within 30 days.
 */
static MUST_CHECK error_code publish_roots(const config *cfg, const publish_request *req, error_info *err)
{
    const char *dir = cfg->publish.roots_dir;
    if (!dir)
        return ERR_OK;
    char **names = NULL;
    size_t count = 0;
    error_code rc = platform_list_dir(dir, &names, &count, err);
    if (rc != ERR_OK) {
        err->code = ERR_CONFIG;
        return error_prefix(err, "publish.roots_dir %s", dir);
    }
    int64_t newest = 0;
    for (size_t i = 0; i < count; i++) {
        int64_t v = root_file_version(names[i]);
        newest = v > newest ? v : newest;
    }
    platform_free_names(names, count);
    if (newest == 0)
        return error_set(err, ERR_CONFIG,
                         "publish.roots_dir %s holds no root (1.root.json, 2.root.json, ...): copy the signed roots "
                         "of the ceremony there",
                         dir);
    char *roots_dir = platform_path_join(req->dir, "roots");
    if (!roots_dir)
        return error_set(err, ERR_NOMEM, "out of memory");
    rc = platform_mkdirs(roots_dir, err);
    if (rc == ERR_OK) /* served like the rest of the mirror (PRODUCT.md 8) */
        rc = platform_make_world_readable(roots_dir, err);
    root trusted;
    memset(&trusted, 0, sizeof trusted);
    char *data = NULL;
    size_t len = 0;
    for (int64_t v = 1; rc == ERR_OK && v <= newest; v++) {
        char *path = NULL;
        rc = read_root_version(dir, v, &data, &len, &path, err);
        root next;
        if (rc == ERR_OK)
            rc = v == 1 ? root_open_trusted(data, len, path, &next, err)
                        : root_open_next(&trusted, data, len, path, &next, err);
        free(path);
        if (rc == ERR_OK) {
            root_free(&trusted);
            trusted = next;
            char rel[40];
            snprintf(rel, sizeof rel, "%lld.root.json", (long long)v);
            rc = place_root(roots_dir, rel, data, len, false, err);
        }
        if (rc == ERR_OK && v == newest)
            rc = place_root(req->dir, "root.json", data, len, true, err);
        free(data);
        data = NULL;
    }
    bool listed = false;
    for (size_t i = 0; rc == ERR_OK && i < trusted.manifest_key_count; i++)
        listed = listed || strcmp(signkey_id(trusted.manifest_keys[i]), signkey_id(req->key)) == 0;
    char at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(trusted.expires_at, at);
    if (rc == ERR_OK && !listed)
        rc = error_set(err, ERR_CONFIG,
                       "publish: the signing key %s is not a manifest key of root version %lld, so endpoints would "
                       "refuse the manifest; sign it with a listed key, or have the root's key holders publish a "
                       "root that lists this one (`outpost root next --add-manifest-key`)",
                       signkey_id(req->key), (long long)trusted.version);
    else if (rc == ERR_OK && trusted.manifest_threshold > 1)
        rc = error_set(err, ERR_CONFIG,
                       "publish: root version %lld needs %zu manifest signatures and publish signs with one key",
                       (long long)trusted.version, trusted.manifest_threshold);
    if (rc == ERR_OK && trusted.expires_at <= req->now_s)
        log_warn("publish: mirror root version %lld expired at %s: endpoints install nothing until the root's key "
                 "holders sign and publish the next version",
                 (long long)trusted.version, at);
    else if (rc == ERR_OK && trusted.expires_at - req->now_s <= PUBLISH_WARN_S)
        log_warn("publish: mirror root version %lld expires at %s, and the signing key's listing with it: have the "
                 "root's key holders sign the next version (`outpost root next`) before then",
                 (long long)trusted.version, at);
    root_free(&trusted);
    free(roots_dir);
    return rc;
}

/* Where the staged installer goes in the mirror. */
typedef struct publish_paths {
    char name[80];        /* <sha256>.<ext> */
    char *installers_dir; /* DIR/installers */
    char *installer_path; /* DIR/installers/<name> */
    char *manifest_path;  /* DIR/manifest.json */
} publish_paths;

static void publish_paths_free(publish_paths *p)
{
    free(p->installers_dir);
    free(p->installer_path);
    free(p->manifest_path);
}

/* 1. The installer, content-addressed, in a mirror directory readable by the web server. */
static MUST_CHECK error_code place_installer(const publish_request *req, const staging_manifest *staged,
                                             const char *staged_path, publish_paths *paths, publish_result *out,
                                             error_info *err)
{
    snprintf(paths->name, sizeof paths->name, "%s.%s", staged->sha256, staging_manifest_is_msi(staged) ? "msi" : "exe");
    paths->installers_dir = platform_path_join(req->dir, "installers");
    paths->installer_path = paths->installers_dir ? platform_path_join(paths->installers_dir, paths->name) : NULL;
    paths->manifest_path = platform_path_join(req->dir, "manifest.json");
    if (!paths->installer_path || !paths->manifest_path)
        return error_set(err, ERR_NOMEM, "out of memory");
    /* The mirror is public (signed): readable by the web server whatever
     * the umask, or endpoints get 403 while `check` says "update available". */
    error_code rc;
    if ((rc = platform_mkdirs(paths->installers_dir, err)) != ERR_OK ||
        (rc = platform_make_world_readable(req->dir, err)) != ERR_OK ||
        (rc = platform_make_world_readable(paths->installers_dir, err)) != ERR_OK) {
        error_prefix(err, "publish: cannot create the mirror directory");
        return rc;
    }
    return write_installer(staged_path, paths->installer_path, staged->sha256, staged->size, &out->new_installer, err);
}

/*
 * 2. The next seq and the rollout salt (kept while the same installer is
 * re-signed, fresh for a new one) and the installers' history (name first),
 * saved in state section "publish" before the manifest that uses them.
 */
static MUST_CHECK error_code advance_seq(state *s, const char *sha256, const char *version, const char *name,
                                         int64_t *seq, char salt[2 * SALT_BYTES + 1], cJSON **history, error_info *err)
{
    cJSON *section = state_section(s, "publish");
    if (!section)
        return error_set(err, ERR_NOMEM, "out of memory");
    *seq = jsonx_int64(NULL, section, "seq", true, 0) + 1;
    const char *last_sha = jsonx_string(NULL, section, "sha256");
    const char *last_salt = jsonx_string(NULL, section, "salt");
    if (last_sha && last_salt && strcmp(last_sha, sha256) == 0 && strlen(last_salt) < 2 * SALT_BYTES + 1) {
        snprintf(salt, 2 * SALT_BYTES + 1, "%s", last_salt);
    } else {
        uint8_t rnd[SALT_BYTES];
        error_code rc = platform_random_bytes(rnd, sizeof rnd, err);
        if (rc != ERR_OK)
            return rc;
        text_hex(rnd, sizeof rnd, salt);
    }
    *history = cJSON_GetObjectItemCaseSensitive(section, "installers");
    if (!cJSON_IsArray(*history)) {
        *history = cJSON_CreateArray();
        if (!jsonx_set(section, "installers", *history))
            *history = NULL; /* out of memory: jsonx_set deleted it */
    }
    for (int i = cJSON_GetArraySize(*history) - 1; i >= 0; i--) {
        const cJSON *entry = cJSON_GetArrayItem(*history, i);
        if (!cJSON_IsString(entry) || strcmp(entry->valuestring, name) == 0)
            cJSON_DeleteItemFromArray(*history, i);
    }
    cJSON_InsertItemInArray(*history, 0, cJSON_CreateString(name));
    char seq_text[24]; /* a string: exact (cJSON rounds numbers above 10^15) */
    snprintf(seq_text, sizeof seq_text, "%lld", (long long)*seq);
    jsonx_set(section, "seq", cJSON_CreateString(seq_text));
    jsonx_set(section, "sha256", cJSON_CreateString(sha256));
    jsonx_set(section, "salt", cJSON_CreateString(salt));
    jsonx_set(section, "version", cJSON_CreateString(version));
    return state_save(s, err);
}

/* 3. The signed manifest, last, replaced atomically. */
static MUST_CHECK error_code write_signed_manifest(const config *cfg, const publish_request *req,
                                                   const staging_manifest *staged, const char *version,
                                                   const publish_paths *paths, int64_t seq, char *salt,
                                                   int64_t *expires_at, error_info *err)
{
    bool signed_installer = strcmp(staged->signature, "valid") == 0 && staged->signer_cert_sha256[0];
    char path_in_mirror[96];
    snprintf(path_in_mirror, sizeof path_in_mirror, "installers/%s", paths->name);
    manifest m;
    memset(&m, 0, sizeof m);
    m.schema = MANIFEST_SCHEMA;
    m.seq = seq;
    m.issued_at = req->now_s;
    m.expires_at = req->now_s + cfg->publish.expires_s;
    m.channel = cfg->publish.channel;
    m.platform = cfg->installer.platform;
    m.version = (char *)version;
    m.file_name = (char *)staged->file_name;
    m.length = staged->size;
    snprintf(m.sha256, sizeof m.sha256, "%s", staged->sha256);
    m.path = path_in_mirror;
    m.signed_installer = signed_installer;
    m.signer_subject = signed_installer ? (char *)(staged->signer ? staged->signer : "") : NULL;
    if (signed_installer)
        snprintf(m.signer_cert_sha256, sizeof m.signer_cert_sha256, "%s", staged->signer_cert_sha256);
    m.rollout_percent = req->rollout_percent;
    m.rollout_salt = salt;
    char *payload = NULL, *signed_text = NULL;
    size_t envelope_len = 0;
    const signkey *keys[1] = {req->key};
    error_code rc = manifest_payload_json(&m, &payload, err);
    if (rc == ERR_OK)
        rc = manifest_sign(payload, strlen(payload), (signkey *const *)keys, 1, &signed_text, &envelope_len, err);
    if (rc == ERR_OK && (rc = write_manifest(paths->manifest_path, signed_text, envelope_len, err)) != ERR_OK)
        error_prefix(err, "publish: cannot write the manifest");
    if (rc == ERR_OK)
        *expires_at = m.expires_at;
    free(payload);
    free(signed_text);
    return rc;
}

error_code publish_mirror(const config *cfg, state *s, const publish_request *req, publish_result *out, error_info *err)
{
    memset(out, 0, sizeof *out);
    char *version = NULL, *staged_path = NULL;
    publish_paths paths;
    memset(&paths, 0, sizeof paths);
    staging_manifest staged;
    error_code rc = staging_current(cfg, &version, &staged, &staged_path, err);
    if (rc != ERR_OK) {
        error_prefix(err, "publish: nothing to publish");
        free(version);
        free(staged_path);
        staging_manifest_free(&staged);
        return rc;
    }
    int64_t seq = 0, expires_at = 0;
    char salt[2 * SALT_BYTES + 1];
    cJSON *history = NULL;
    /* 0. the roots, before anything an endpoint would judge by them */
    rc = publish_roots(cfg, req, err);
    if (rc == ERR_OK)
        rc = place_installer(req, &staged, staged_path, &paths, out, err);
    if (rc == ERR_OK)
        rc = advance_seq(s, staged.sha256, version, paths.name, &seq, salt, &history, err);
    if (rc == ERR_OK)
        rc = write_signed_manifest(cfg, req, &staged, version, &paths, seq, salt, &expires_at, err);
    if (rc == ERR_OK) {
        /* 4. prune */
        out->pruned = prune_installers(paths.installers_dir, history, cfg->publish.keep_installers);
        remove_leftovers(paths.installers_dir, is_installer_name);
        remove_leftovers(req->dir, is_manifest_name);
        /* The seq was saved before the manifest; this records the pruning only. */
        error_info serr;
        if (state_save(s, &serr) != ERR_OK)
            log_warn("publish: the mirror is written, but the state was not saved: %s", serr.message);
        out->seq = seq;
        snprintf(out->version, sizeof out->version, "%s", version);
        snprintf(out->installer_path, sizeof out->installer_path, "%s", paths.installer_path);
        snprintf(out->manifest_path, sizeof out->manifest_path, "%s", paths.manifest_path);
        snprintf(out->sha256, sizeof out->sha256, "%s", staged.sha256);
        out->length = staged.size;
        out->expires_at = expires_at;
    }
    free(version);
    free(staged_path);
    publish_paths_free(&paths);
    staging_manifest_free(&staged);
    return rc;
}
