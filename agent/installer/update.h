/*
 * update.h — the update policy (PRODUCT.md sections 4 and 8), one for both
 * sources of an offer, the platform's API and the fleet mirror: whether an
 * offered version is fetched (update_decide), and the one shape of what
 * `check --json` and `update --json` print (update_report_json), the
 * "staged" object being status.json's (staging_manifest_to_status).
 * cli/cmd_fetch.c learns the offer, calls these and prints.
 */
#ifndef OUTPOST_UPDATE_H
#define OUTPOST_UPDATE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "core/config.h"
#include "core/state.h"
#include "installer/download.h"
#include "installer/intake.h"

struct cJSON;

/* What update does with an offer. The first three fetch it. */
typedef enum update_verdict {
    UPDATE_FETCH_NEWER,     /* newer than the installed version, or none is known */
    UPDATE_FETCH_DOWNGRADE, /* older, and a downgrade is allowed */
    UPDATE_FETCH_FORCED,    /* nothing new, but --force: fetched and staged again */
    UPDATE_UP_TO_DATE,      /* the installed version is offered */
    UPDATE_NOT_ELIGIBLE,    /* mirror: this machine is outside the version's rollout */
    UPDATE_ALREADY_STAGED   /* staged and verified before: nothing is downloaded */
} update_verdict;

/* What update_decide weighs. Borrowed; nothing is kept. */
typedef struct update_facts {
    const char *offered;          /* the offered version (valid) */
    const char *installed;        /* the installed version, NULL when none is known */
    const char *source;           /* names the offer in messages: "the platform", "mirror URL" */
    bool force;                   /* update --force */
    bool allow_downgrade;         /* update --allow-downgrade */
    bool source_allows_downgrade; /* the mirror's signed manifest says allow_downgrade */
    bool eligible;                /* inside the rollout (always true for the API) */
    /* Whether version is staged and still verified (staging_has_verified).
     * Asked last, and only when it decides, since it hashes the staged file.
     * NULL: never staged. */
    bool (*is_staged)(const void *user, const char *version);
    const void *is_staged_user;
} update_facts;

/*
 * The policy, the same for both sources, in this order: an older version
 * than the installed one is refused (ERR_REJECTED, exit 4, naming source
 * and --allow-downgrade) unless allow_downgrade or source_allows_downgrade;
 * without force, the installed version is UPDATE_UP_TO_DATE, a machine
 * outside the rollout UPDATE_NOT_ELIGIBLE, a version staged and verified
 * UPDATE_ALREADY_STAGED; anything else is fetched.
 */
MUST_CHECK error_code update_decide(const update_facts *facts, update_verdict *verdict, error_info *err);

/* Whether the verdict downloads and stages the offer. */
bool update_verdict_fetches(update_verdict verdict);

/* is_staged for update_facts: staging_has_verified(user as const config *). */
bool update_staged_in(const void *cfg, const char *version);

/* How a finished download is staged (update_stage_download). */
typedef struct update_stage_options {
    bool allow_downgrade;           /* --allow-downgrade, or the mirror manifest's allow_downgrade */
    bool force;                     /* --force: stage again even when staged */
    const char *signer_cert_sha256; /* mirror: the signer its signed manifest names, else NULL */
} update_stage_options;

/*
 * Verifies and stages the finished download dl (intake_stage), whichever
 * source offered it: the candidate is dl's file, version, file name, final
 * URL, validator, announced length and SHA-256. Then the partial and its
 * sidecar are done with (staged, or rejected and not to be resumed) and
 * discarded, except after ERR_DISK_FULL: the file is fine and staging can
 * be retried.
 */
MUST_CHECK error_code update_stage_download(const config *cfg, state *s, const download_result *dl,
                                            const update_stage_options *options, intake_result *staged,
                                            error_info *err);

/* What `update` did, for update_report_json's "action". */
typedef enum update_action {
    UPDATE_ACTION_NONE, /* check: no action member */
    UPDATE_ACTION_STAGED,
    UPDATE_ACTION_UP_TO_DATE,
    UPDATE_ACTION_ALREADY_STAGED,
    UPDATE_ACTION_NOT_ELIGIBLE
} update_action;

/* The action a verdict that does not fetch ends with (UPDATE_ACTION_STAGED
 * for the fetching ones: intake may still find the version staged). */
update_action update_action_of(update_verdict verdict);

/* "staged", "up_to_date", "already_staged", "not_eligible" ("" for NONE). */
const char *update_action_name(update_action action);

/* What check or update learned and did (borrowed). */
typedef struct update_report {
    const char *installed;      /* installed version or NULL */
    const char *latest;         /* offered version or NULL */
    const char *checked_at;     /* ISO 8601 */
    const char *source;         /* "api" | "mirror" */
    struct cJSON *mirror;       /* the mirror's part (url, seq, ...), or NULL: null. Taken over (deleted) */
    update_action action;       /* UPDATE_ACTION_NONE for check */
    const char *staged_version; /* with UPDATE_ACTION_STAGED: the version intake staged */
    int64_t resumed_from;       /* the byte the download resumed from (0: from the start) */
} update_report;

/*
 * The document `check --json` and `update --json` print, the same members
 * from either source (README "check --json and update --json"):
 * installed_version, latest_version, update_available, checked_at, source,
 * mirror (object or null); update adds action and staged: the staged
 * version's status.json object (staging_manifest_to_status, read back from
 * its manifest) plus resumed_from, or null when nothing was staged. *out is
 * the caller's; report->mirror is taken over in every case.
 */
MUST_CHECK error_code update_report_json(const config *cfg, const update_report *report, struct cJSON **out,
                                         error_info *err);

#endif
