/*
 * mirror_trust.h — what an endpoint trusts a mirror's manifest by
 * (PRODUCT.md 8.1): the mirror root it holds, walked forward over the
 * mirror's roots/<N+1>.root.json, or, in the simple mode, the keys pinned in
 * mirror.public_keys.
 *
 * The first trusted root is mirror.root_file (a file the configuration
 * names; absent is a configuration error, exit 2). The newest root the
 * endpoint has verified is kept as state_dir/mirror-root.json, replaced
 * atomically (a crash leaves the old root or the new one, both verified),
 * and used from then on when its version is at least root_file's. With
 * both root_file and public_keys, the root governs.
 *
 * Roots are known by identity (root.id, the hash of the signed payload),
 * not by the bytes of root_file: the ids of the roots the endpoint started
 * from and walked through are its lineage (state "mirror".root_chain). A
 * root_file of that lineage (rewritten, or an older root walked through)
 * changes nothing; an older root that shares a root key with the kept one
 * leaves the kept root trusted and says how to reset; one that shares none
 * (or a newer one) replaces it: trust never moves down to a lower version
 * of the same keys without `outpost mirror trust reset`
 * (mirror_trust_reset).
 *
 * The walk reaches the network only through the fetch function it is
 * given, so source_mirror.c (the endpoint) and `mirror verify` use the one
 * walk, and tests can hand it files.
 */
#ifndef OUTPOST_MIRROR_TRUST_H
#define OUTPOST_MIRROR_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/config.h"
#include "mirror/root.h"
#include "mirror/signkey.h"

#define MIRROR_TRUST_ROOT_FILE "mirror-root.json" /* in state_dir */
#define MIRROR_TRUST_MAX_WALK 64                  /* root versions walked in one run; the rest next run */

typedef struct mirror_trust {
    bool has_root;    /* mirror.root_file is set: root governs */
    root root;        /* the trusted root, when has_root */
    signkey **pinned; /* mirror.public_keys, when !has_root; owned */
    size_t pinned_count;
    char keyids[ROOT_MAX_KEYS * SIGNKEY_ID_SIZE]; /* the manifest key ids, sorted, comma-separated */
    int walked;                                   /* root versions accepted by mirror_trust_walk */
    bool stale_kept;                              /* the kept root belongs to another lineage: the walk removes it */
    char
        *lineage; /* ids (root.id) of the roots trusted, oldest first, comma-separated; malloc'd; NULL without a root */
} mirror_trust;

/*
 * Fetches url into *data (malloc'd, *len bytes, at most ROOT_MAX_BYTES + 1
 * kept). ERR_NOT_FOUND when the mirror says the file is not there (HTTP 404,
 * 410, or 403 as object stores answer for a missing object; no such file);
 * any other failure is a transport failure.
 */
typedef error_code (*mirror_trust_fetch_fn)(void *user, const char *url, char **data, size_t *len, error_info *err);

/*
 * Loads what cfg trusts, as described above. kept_lineage: the lineage
 * recorded with the kept root (state "mirror".root_chain as mirror_trust's
 * lineage), NULL when unknown (a state from before lineages were kept: a
 * root_file of a lower version sharing a root key is then taken as of the
 * kept root's lineage, quietly). Free with mirror_trust_free.
 */
MUST_CHECK error_code mirror_trust_load(const config *cfg, const char *kept_lineage, mirror_trust *t, error_info *err);

void mirror_trust_free(mirror_trust *t);

/*
 * `outpost mirror trust reset`: forgets the kept root (removes
 * state_dir/mirror-root.json), so that the next run trusts mirror.root_file
 * again and walks from it. *forgotten: the version of the root forgotten,
 * 0 when none was kept. The caller holds the lock and clears the lineage
 * it records. ERR_CONFIG when mirror.root_file is not set.
 */
MUST_CHECK error_code mirror_trust_reset(const config *cfg, int64_t *forgotten, error_info *err);

/*
 * With a root: fetches roots/<N+1>.root.json beside manifest_url (its
 * directory) for the trusted version N until one is absent, judging each
 * with root_open_next; every accepted root becomes the trusted one and,
 * with persist, is kept in state_dir. A root that fails: ERR_REJECTED (4),
 * the last good root stays trusted. A fetch that fails otherwise than
 * "absent": ERR_TEMPORARY (75). Without a root: does nothing.
 */
MUST_CHECK error_code mirror_trust_walk(const config *cfg, mirror_trust *t, const char *manifest_url,
                                        mirror_trust_fetch_fn fetch, void *user, bool persist, error_info *err);

/* With a root: root_check_expiry (ERR_TEMPORARY when the trusted root has expired). */
MUST_CHECK error_code mirror_trust_check_expiry(const mirror_trust *t, int64_t now_s, error_info *err);

/* The keys a manifest must be signed by, and how many of them. Borrowed from t. */
signkey *const *mirror_trust_manifest_keys(const mirror_trust *t, size_t *count, size_t *threshold);

#endif
