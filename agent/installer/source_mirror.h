/*
 * source_mirror.h — the fleet mirror as the source of the installer offer
 * (PRODUCT.md section 8): where check and update learn the latest version,
 * and where update fetches it, when mirror.urls is set: "a second source of
 * the same offer, not a second pipeline". The API's installer route is the
 * other source (source_api.h); both offers are downloaded by download.c, and
 * everything after (verification, staging, deploy, status) is shared.
 *
 * source_mirror_fetch tries mirror.urls in order. For each: GET the
 * manifest (conditional when a previous copy from that URL is kept in
 * state_dir/mirror/manifest.json), open it with the pinned keys (signature
 * before payload), apply the rules with the clock, and take the first one
 * that passes. A URL that cannot be fetched, or whose manifest is refused,
 * moves on to the next; when none passes, the most serious refusal wins
 * (4 before 75), else the last transport failure (75). Every refusal is one
 * line naming the manifest URL and what to do.
 *
 * State section "mirror": highest_seq and its payload_sha256 (seq
 * monotonicity survives restarts), the kept copy's url / etag /
 * last_modified, and "status", the object status.json's installer.mirror
 * shows (url, seq, expires_at, rollout_percent, eligible; or what was
 * refused and, for a stale mirror, since when).
 */
#ifndef OUTPOST_SOURCE_MIRROR_H
#define OUTPOST_SOURCE_MIRROR_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "core/config.h"
#include "core/state.h"
#include "core/timefmt.h"
#include "installer/download.h"
#include "mirror/manifest.h"
#include "net/http.h"

struct cJSON;

typedef struct mirror_offer {
    manifest m;          /* the accepted manifest */
    char *manifest_url;  /* as shown and recorded (no user:password@); malloc'd */
    char *installer_url; /* manifest_url's directory + m.path, as shown; malloc'd */
    char *fetch_url;     /* installer_url with the configured URL's credentials, for
                            the transfer only: never shown or recorded; malloc'd */
    bool not_modified;   /* answered 304: the kept copy was used */
    bool eligible;       /* inside the rollout */
    uint32_t bucket;     /* the rollout bucket of this machine */
} mirror_offer;

/*
 * Finds the offer as described above (now_s: the clock, Unix seconds) and
 * records what it learned in state (the caller saves it). The manifests are
 * fetched with http_url_read (no token, no pacing; the engine's deadline,
 * minimum speed and error-body cap). On failure *offer is empty and the
 * state's mirror status says why.
 */
MUST_CHECK error_code source_mirror_fetch(http_client *http, const config *cfg, state *s, int64_t now_s,
                                          mirror_offer *offer, error_info *err);

void source_mirror_offer_free(mirror_offer *offer);

/*
 * Downloads the offered installer through download.c, as the API's: the
 * same resume (Range, the sidecar and its boot-id rules), throttle
 * (installer.max_bytes_per_second), progress, free-space check and hashing,
 * with the manifest's length as a hard limit (a byte more: ERR_REJECTED,
 * nothing kept) and its SHA-256 compared at the end (another: ERR_REJECTED).
 * A transfer that keeps failing is ERR_TEMPORARY with the partial kept for
 * the next run. Free result with download_result_free in every case; on
 * ERR_OK result->path is the complete, flushed file.
 */
MUST_CHECK error_code source_mirror_download(http_client *http, const config *cfg, const mirror_offer *offer,
                                             bool progress, download_result *result, error_info *err);

/*
 * Records in the state's mirror status that the offered installer was
 * refused ("refused": "installer", "error": message), for status.json.
 */
void source_mirror_record_refusal(state *s, const char *message);

/*
 * `outpost mirror trust reset` (mirror_trust_reset): the kept root
 * forgotten (*forgotten: its version, 0 when none was kept), and in s the
 * lineage and the trusted root cleared and "trust_reset_at" set to now_s,
 * which status.json's installer.mirror shows from then on (reset_at gets
 * it as text). s is not saved here. The caller holds the lock.
 */
MUST_CHECK error_code source_mirror_trust_reset(const config *cfg, state *s, int64_t now_s, int64_t *forgotten,
                                                char reset_at[TIMEFMT_ISO8601_SIZE], error_info *err);

/*
 * Adds "source" ("mirror" with mirror.urls set, else "api") and, for a
 * mirror, "mirror" (the state's mirror status) to status.json's installer
 * object. Never fails; installer may be NULL.
 */
void source_status_annotate(const config *cfg, state *s, struct cJSON *installer);

#endif
