/*
 * publish.h — writing the fleet mirror (PRODUCT.md section 8) from the
 * current staged installer, on the one host that holds the API key.
 *
 * Layout written into the mirror directory, in this order:
 *   roots/<N>.root.json, root.json with publish.roots_dir (PRODUCT.md 8.1):
 *                                  the chain judged as an endpoint would, the
 *                                  signing key refused unless the newest root
 *                                  lists it; a published root is never
 *                                  rewritten, root.json is the newest
 *   installers/<sha256>.exe|.msi   content-addressed: written to a temporary
 *                                  name, read back and hashed, then renamed;
 *                                  never rewritten once it is right
 *   manifest.json                  the signed manifest, replaced atomically,
 *                                  last, so no reader ever sees a manifest
 *                                  whose installer is not there yet
 * then installers beyond publish.keep_installers are pruned (the newest
 * first in state "publish".installers; the current one always stays), and
 * so are the temporary files of earlier publishes killed half-way.
 *
 * seq is kept in state section "publish" and saved before manifest.json is
 * replaced: a crash in between only skips a number, it can never make two
 * different manifests with one seq (endpoints refuse that with exit 4).
 * The rollout salt is fresh for each new installer and kept while the same
 * installer is re-signed, so each endpoint's answer stays the same for one
 * version.
 */
#ifndef OUTPOST_PUBLISH_H
#define OUTPOST_PUBLISH_H

#include <stdint.h>

#include "base/error.h"
#include "core/config.h"
#include "core/state.h"
#include "mirror/signkey.h"

typedef struct publish_request {
    const char *dir;        /* the mirror directory (created when missing) */
    double rollout_percent; /* 0..100 */
    const signkey *key;     /* private signing key */
    int64_t now_s;          /* issue time, Unix seconds (injected for tests) */
} publish_request;

typedef struct publish_result {
    int64_t seq;
    char version[65];
    char installer_path[1024]; /* the mirror's installers/<sha256>.<ext> */
    char manifest_path[1024];
    char sha256[65];
    int64_t length;
    int64_t expires_at; /* Unix seconds */
    bool new_installer; /* the installer file was written now (not there already) */
    int pruned;         /* installer files removed */
} publish_result;

/*
 * Publishes the current staged installer (ERR_NOT_FOUND when nothing is
 * staged) into request->dir as described above; state is saved here.
 */
MUST_CHECK error_code publish_mirror(const config *cfg, state *s, const publish_request *request,
                                     publish_result *result, error_info *err);

#endif
