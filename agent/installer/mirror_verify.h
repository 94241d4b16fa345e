/*
 * mirror_verify.h — `outpost mirror verify URL|DIR`: judge a mirror exactly
 * as an endpoint would (PRODUCT.md 8.1) and say what it would do, for
 * publishers and administrators checking a copy on a CDN or a share.
 *
 * "Exactly": the endpoint's own flow runs (update_flow: source_mirror_fetch
 * with the root walk, the decision, source_mirror_download, intake_stage's
 * verification layers), against a scratch state directory in the system's
 * temporary folder that is removed afterwards, and says what the
 * endpoint's `update` would say. The scratch directory starts with the
 * endpoint's kept mirror root (state_dir/mirror-root.json) when there is
 * one, and with no seq seen, so the endpoint's own state is never written. The
 * installer is always fetched and verified, even when an endpoint would
 * not fetch it (up to date, outside the rollout): a broken copy on a
 * mirror is what this command is for.
 */
#ifndef OUTPOST_MIRROR_VERIFY_H
#define OUTPOST_MIRROR_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "core/config.h"
#include "net/http.h"

#define MIRROR_VERIFY_MAX_STEPS 8

typedef struct mirror_verify_step {
    const char *name; /* "root", "manifest", "rollout", "installer", "verification" */
    bool ok;
    char message[ERROR_MESSAGE_MAX]; /* what was found, or why it failed */
} mirror_verify_step;

typedef struct mirror_verify_result {
    mirror_verify_step steps[MIRROR_VERIFY_MAX_STEPS];
    int step_count;
    const char *action; /* what an endpoint would do: "install", "up-to-date", "not-eligible", "not-taken"
                           (outside installer.target_version_prefix), "refuse", "wait" */
    error_code code;    /* ERR_OK, or the error an endpoint would exit with */
    char version[65];   /* the manifest's version, "" when it was not read */
} mirror_verify_result;

/*
 * Judges the mirror at url (a mirror.urls entry: https, http or file URL)
 * with what cfg trusts, fetching through http (a URL client: command_http_urls); machine_id (NULL: mirror.machine_id,
 * else this machine's) for the rollout. Every judgement is in *result, the failing one last. Returns ERR_OK when the
 * judgement ran (result->code says how it came out), or an error that stopped it (no temporary folder, out of memory,
 * the configuration).
 */
MUST_CHECK error_code mirror_verify_run(http_client *http, const config *cfg, const char *url, const char *machine_id,
                                        mirror_verify_result *result, error_info *err);

/*
 * The mirror.urls form of what a person typed: a URL as it is, a directory
 * (absolute, POSIX or Windows) as a file:// URL. malloc'd; NULL with
 * ERR_USAGE in err for a relative directory.
 */
char *mirror_verify_url_of(const char *arg, error_info *err);

#endif
