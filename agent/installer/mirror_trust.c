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
    free(t->lineage);
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

/* A root file judged as trusted (its own threshold of its own keys);
 * mirror.root_file (trusted_input) judged and read through one handle
 * (PRODUCT.md section 9), the kept root read below the held state_dir. */
static MUST_CHECK error_code read_root(const char *path, bool trusted_input, const char *source, root *r,
                                       error_info *err)
{
    char *data = NULL;
    size_t len = 0;
    error_code rc = trusted_input ? platform_read_trusted_file("mirror root file", path, false, ROOT_MAX_BYTES + 1,
                                                               &data, &len, err)
                                  : platform_read_file(path, ROOT_MAX_BYTES + 1, &data, &len, err);
    if (rc != ERR_OK)
        return error_prefix(err, "%s", source);
    rc = root_open_trusted(data, len, source, r, err);
    free(data);
    return rc;
}

/* Whether id is one of lineage's comma-separated ids. */
static bool lineage_has(const char *lineage, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = lineage; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && memcmp(p, id, n) == 0)
            return true;
        p = comma ? comma + 1 : p + len;
    }
    return false;
}

/* t->lineage with id added last (unless it is there already). */
static MUST_CHECK error_code lineage_add(mirror_trust *t, const char *id, error_info *err)
{
    if (lineage_has(t->lineage, id))
        return ERR_OK;
    size_t old = t->lineage ? strlen(t->lineage) : 0;
    char *grown = realloc(t->lineage, old + 1 + strlen(id) + 1);
    if (!grown)
        return error_set(err, ERR_NOMEM, "out of memory");
    snprintf(grown + old, strlen(id) + 2, "%s%s", old ? "," : "", id);
    t->lineage = grown;
    return ERR_OK;
}

/* Whether a and b have a root key in common: roots of one lineage, as far as an endpoint can tell. */
static bool share_root_key(const root *a, const root *b)
{
    for (size_t i = 0; i < a->root_key_count; i++)
        for (size_t j = 0; j < b->root_key_count; j++)
            if (strcmp(signkey_id(a->root_keys[i]), signkey_id(b->root_keys[j])) == 0)
                return true;
    return false;
}

/*
 * Which of root_file (t->root) and the kept root (stored, taken) is
 * trusted, and the lineage recorded from now on (mirror_trust.h).
 */
static MUST_CHECK error_code choose_root(const config *cfg, const char *kept_lineage, mirror_trust *t, root *stored,
                                         error_info *err)
{
    const char *file = cfg->mirror.root_file;
    bool known = strcmp(stored->id, t->root.id) == 0 || lineage_has(kept_lineage, t->root.id);
    bool shared = share_root_key(&t->root, stored);
    bool keep_stored = false;
    if (known) {
        keep_stored = stored->version >= t->root.version; /* root_file rewritten, or older and walked through */
    } else if (!shared) {
        /* Re-rooted: the configuration's root has none of the kept root's keys. */
        log_warn("mirror.root_file %s (root version %lld) is a new lineage: it shares no root key with the kept "
                 "mirror root (version %lld); the kept root is set aside and trust starts again from "
                 "mirror.root_file",
                 file, (long long)t->root.version, (long long)stored->version);
        t->stale_kept = true;
        root_free(stored);
        return lineage_add(t, t->root.id, err);
    } else if (stored->version >= t->root.version) {
        keep_stored = true;
        if (kept_lineage)
            log_warn("mirror.root_file %s is root version %lld, older than the kept mirror root (version %lld) and "
                     "not one this endpoint walked through; version %lld stays trusted. To trust mirror.root_file "
                     "again, run `outpost mirror trust reset`",
                     file, (long long)t->root.version, (long long)stored->version, (long long)stored->version);
    }
    /* The lineage so far, then what is trusted now. */
    if (kept_lineage && !(t->lineage = strdup(kept_lineage)))
        return error_set(err, ERR_NOMEM, "out of memory");
    error_code rc = ERR_OK;
    if (!kept_lineage || known || !keep_stored)
        rc = lineage_add(t, t->root.id, err); /* root_file's place in the lineage */
    if (keep_stored) {
        root_free(&t->root);
        t->root = *stored;
        memset(stored, 0, sizeof *stored);
    } else {
        /* The configuration ships a newer root than the endpoint has seen: it wins. */
        root_free(stored);
    }
    if (rc == ERR_OK)
        rc = lineage_add(t, t->root.id, err);
    return rc;
}

error_code mirror_trust_load(const config *cfg, const char *kept_lineage, mirror_trust *t, error_info *err)
{
    memset(t, 0, sizeof *t);
    if (!cfg->mirror.root_file)
        return load_pinned(cfg, t, err);
    error_code rc = config_check_file("mirror.root_file", cfg->mirror.root_file, err);
    if (rc != ERR_OK)
        return rc;
    char source[600];
    snprintf(source, sizeof source, "mirror.root_file %s", cfg->mirror.root_file);
    rc = read_root(cfg->mirror.root_file, true, source, &t->root, err);
    if (rc != ERR_OK) {
        err->code = ERR_CONFIG; /* the configuration ships it: a person must replace it */
        return rc;
    }
    t->has_root = true;
    char *kept = platform_path_join(cfg->state_dir, MIRROR_TRUST_ROOT_FILE);
    if (!kept)
        return error_set(err, ERR_NOMEM, "out of memory");
    root stored;
    error_info why;
    if (platform_path_stat(kept, NULL) != PLATFORM_PATH_FILE) {
        rc = lineage_add(t, t->root.id, err);
    } else if (read_root(kept, false, kept, &stored, &why) != ERR_OK) {
        log_warn("the kept mirror root cannot be used (%s); starting again from mirror.root_file", why.message);
        rc = lineage_add(t, t->root.id, err);
    } else {
        rc = choose_root(cfg, kept_lineage, t, &stored, err);
    }
    free(kept);
    root_manifest_keyids(&t->root, t->keyids, sizeof t->keyids);
    return rc;
}

error_code mirror_trust_reset(const config *cfg, int64_t *forgotten, error_info *err)
{
    *forgotten = 0;
    if (!cfg->mirror.root_file)
        return error_set(err, ERR_CONFIG, "`mirror.root_file` is not set: no mirror root to start again from");
    char *kept = platform_path_join(cfg->state_dir, MIRROR_TRUST_ROOT_FILE);
    if (!kept)
        return error_set(err, ERR_NOMEM, "out of memory");
    char *data = NULL;
    size_t len = 0;
    root stored;
    error_info ignored;
    /* The version is only reported: a damaged kept root is forgotten all the same. */
    if (platform_read_file(kept, ROOT_MAX_BYTES + 1, &data, &len, &ignored) == ERR_OK &&
        root_read_unverified(data, len, kept, &stored, &ignored) == ERR_OK) {
        *forgotten = stored.version;
        root_free(&stored);
    }
    free(data);
    error_code rc = platform_remove_file(kept, err);
    if (rc == ERR_NOT_FOUND) {
        error_clear(err);
        rc = ERR_OK;
    } else if (rc != ERR_OK) {
        error_prefix(err, "cannot forget the kept mirror root");
    }
    free(kept);
    return rc;
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
        /* The kept root belongs to a lineage set aside: it must not come back next run. */
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
        if (lineage_add(t, t->root.id, err) != ERR_OK)
            return err->code;
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
