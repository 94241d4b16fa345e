/*
 * mirror_trust.c — the endpoint's mirror trust: the root from the
 * configuration or the state dir, the walk over roots/<N+1>.root.json, or
 * the pinned keys of the simple mode.
 */
#include "installer/mirror_trust.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "core/log.h"
#include "platform/platform.h"

void mirror_trust_free(mirror_trust *t)
{
    if (!t)
        return;
    root_free(&t->root);
    for (size_t i = 0; i < t->pinned_count; i++)
        signkey_free(t->pinned[i]);
    free(t->pinned);
    memset(t, 0, sizeof *t);
}

static MUST_CHECK error_code load_pinned(const config *cfg, mirror_trust *t, error_info *err)
{
    if (cfg->mirror.public_key_count == 0)
        return error_set(err, ERR_CONFIG,
                         "%s: neither `mirror.root_file` nor `mirror.public_keys` is set; pin the mirror's root "
                         "(`mirror.root_file`) or the publisher's public key (what `outpost keygen` printed)",
                         cfg->path ? cfg->path : "configuration");
    t->pinned = calloc(cfg->mirror.public_key_count, sizeof *t->pinned);
    if (!t->pinned)
        return error_set(err, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < cfg->mirror.public_key_count; i++) {
        error_code rc = signkey_parse_public(cfg->mirror.public_keys[i], &t->pinned[i], err);
        if (rc != ERR_OK)
            return error_prefix(err, "`mirror.public_keys[%zu]`", i);
        t->pinned_count++;
    }
    signkey_ids_joined(t->pinned, t->pinned_count, t->keyids, sizeof t->keyids);
    return ERR_OK;
}

/* A root file judged as trusted (its own threshold of its own keys); origin (may be NULL) gets its SHA-256. */
static MUST_CHECK error_code read_root(const char *path, const char *source, root *r, char *origin, error_info *err)
{
    char *data = NULL;
    size_t len = 0;
    error_code rc = platform_read_file(path, ROOT_MAX_BYTES + 1, &data, &len, err);
    if (rc != ERR_OK)
        return error_prefix(err, "%s", source);
    if (origin)
        signkey_sha256_hex(data, len, origin);
    rc = root_open_trusted(data, len, source, r, err);
    free(data);
    return rc;
}

error_code mirror_trust_load(const config *cfg, const char *kept_origin, mirror_trust *t, error_info *err)
{
    memset(t, 0, sizeof *t);
    if (!cfg->mirror.root_file)
        return load_pinned(cfg, t, err);
    error_code rc = config_check_file("mirror.root_file", cfg->mirror.root_file, err);
    if (rc != ERR_OK)
        return rc;
    char source[600];
    snprintf(source, sizeof source, "mirror.root_file %s", cfg->mirror.root_file);
    rc = read_root(cfg->mirror.root_file, source, &t->root, t->origin, err);
    if (rc != ERR_OK) {
        err->code = ERR_CONFIG; /* the configuration ships it: a person must replace it */
        return rc;
    }
    t->has_root = true;
    char *kept = platform_path_join(cfg->state_dir, MIRROR_TRUST_ROOT_FILE);
    if (!kept)
        return error_set(err, ERR_NOMEM, "out of memory");
    if (platform_path_stat(kept, NULL) == PLATFORM_PATH_FILE && kept_origin && strcmp(kept_origin, t->origin) != 0) {
        /* Another root_file than the one the kept root was reached from: perhaps a new
         * lineage (the fleet was re-rooted). The configuration wins; the walk starts from it. */
        log_info("mirror.root_file changed since the kept mirror root was reached; starting again from it");
        t->stale_kept = true;
    } else if (platform_path_stat(kept, NULL) == PLATFORM_PATH_FILE) {
        root stored;
        error_info why;
        if (read_root(kept, kept, &stored, NULL, &why) != ERR_OK) {
            log_warn("the kept mirror root cannot be used (%s); starting again from mirror.root_file", why.message);
        } else if (stored.version < t->root.version) {
            /* The configuration ships a newer root than the endpoint has seen: it wins. */
            root_free(&stored);
        } else {
            root_free(&t->root);
            t->root = stored;
        }
    }
    free(kept);
    root_manifest_keyids(&t->root, t->keyids, sizeof t->keyids);
    return ERR_OK;
}

/* manifest_url's directory + "roots/<version>.root.json". */
static char *root_url(const char *manifest_url, int64_t version)
{
    const char *slash = strrchr(manifest_url, '/');
    size_t dir = slash ? (size_t)(slash - manifest_url) + 1 : 0;
    size_t n = dir + 48;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%.*sroots/%lld.root.json", (int)dir, manifest_url, (long long)version);
    return out;
}

static MUST_CHECK error_code persist_root(const config *cfg, const char *data, size_t len, error_info *err)
{
    char *path = platform_path_join(cfg->state_dir, MIRROR_TRUST_ROOT_FILE);
    if (!path)
        return error_set(err, ERR_NOMEM, "out of memory");
    error_code rc = platform_write_atomic(path, data, len, err);
    if (rc != ERR_OK)
        error_prefix(err, "cannot keep the new mirror root in %s", path);
    free(path);
    return rc;
}

error_code mirror_trust_walk(const config *cfg, mirror_trust *t, const char *manifest_url, mirror_trust_fetch_fn fetch,
                             void *user, bool persist, error_info *err)
{
    if (!t->has_root)
        return ERR_OK;
    if (persist && t->stale_kept) {
        /* The kept root belongs to the lineage set aside: it must not come back next run. */
        char *kept = platform_path_join(cfg->state_dir, MIRROR_TRUST_ROOT_FILE);
        error_code rc = kept ? platform_remove_file(kept, err) : error_set(err, ERR_NOMEM, "out of memory");
        free(kept);
        if (rc != ERR_OK && rc != ERR_NOT_FOUND)
            return error_prefix(err, "cannot remove the kept mirror root of the previous mirror.root_file");
        error_clear(err);
        t->stale_kept = false;
    }
    for (int step = 0; step < MIRROR_TRUST_MAX_WALK; step++) {
        char *url = root_url(manifest_url, t->root.version + 1);
        /* What messages and the log show: never the URL's user:password@. */
        char *shown = url ? text_url_redact(url) : NULL;
        if (!shown) {
            free(url);
            return error_set(err, ERR_NOMEM, "out of memory");
        }
        char *data = NULL;
        size_t len = 0;
        error_code rc = fetch(user, url, &data, &len, err);
        if (rc == ERR_NOT_FOUND) {
            free(url);
            free(shown);
            error_clear(err);
            break; /* the newest root: the walk ends */
        }
        if (rc != ERR_OK) {
            err->code = ERR_TEMPORARY;
            error_prefix(err, "mirror root"); /* the transfer's message names the URL */
            free(url);
            free(shown);
            return ERR_TEMPORARY;
        }
        root next;
        rc = root_open_next(&t->root, data, len, shown, &next, err);
        bool opened = rc == ERR_OK;
        if (opened && persist)
            rc = persist_root(cfg, data, len, err);
        free(data);
        if (rc != ERR_OK) {
            if (opened)
                root_free(&next);
            if (rc == ERR_REJECTED)
                error_prefix(err,
                             "mirror root refused (version %lld stays trusted; nothing is installed until the "
                             "mirror serves a root its key holders signed)",
                             (long long)t->root.version);
            free(url);
            free(shown);
            return rc;
        }
        log_info("mirror root version %lld verified (%s)", (long long)next.version, shown);
        free(url);
        free(shown);
        root_free(&t->root);
        t->root = next;
        t->walked++;
    }
    root_manifest_keyids(&t->root, t->keyids, sizeof t->keyids);
    return ERR_OK;
}

error_code mirror_trust_check_expiry(const mirror_trust *t, int64_t now_s, error_info *err)
{
    return t->has_root ? root_check_expiry(&t->root, now_s, err) : ERR_OK;
}

signkey *const *mirror_trust_manifest_keys(const mirror_trust *t, size_t *count, size_t *threshold)
{
    if (t->has_root) {
        *count = t->root.manifest_key_count;
        *threshold = t->root.manifest_threshold;
        return t->root.manifest_keys;
    }
    *count = t->pinned_count;
    *threshold = 1;
    return t->pinned;
}
