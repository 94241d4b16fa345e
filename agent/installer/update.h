/*
 * update.h — updating the installer (PRODUCT.md sections 4 and 8), one flow
 * for both sources of an offer, the platform's API and the fleet mirror:
 * the decision whether an offered version is fetched (update_decide); the
 * flow offer -> decide -> download -> stage -> commit (update_flow) and the
 * session check, update and publish run it in (update_run: state, the
 * installed version, the platform's Retry-After, last_command, status);
 * and the one shape of what `check --json` and `update --json` print
 * (update_report_json), the "staged" object being status.json's
 * (staging_manifest_to_status). cli/cmd_fetch.c builds the request, calls
 * update_run and prints.
 */
#ifndef OUTPOST_UPDATE_H
#define OUTPOST_UPDATE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "core/config.h"
#include "core/state.h"
#include "core/timefmt.h"
#include "installer/download.h"
#include "installer/intake.h"
#include "installer/policy.h"
#include "installer/source_mirror.h"
#include "net/http.h"

struct cJSON;

/* What update does with an offer. The first three fetch it. */
typedef enum update_verdict {
    UPDATE_FETCH_NEWER,     /* newer than the installed version, or none is known */
    UPDATE_FETCH_DOWNGRADE, /* older, and a downgrade is allowed */
    UPDATE_FETCH_FORCED,    /* nothing new, but --force: fetched and staged again */
    UPDATE_UP_TO_DATE,      /* the installed version is offered */
    UPDATE_NOT_ELIGIBLE,    /* mirror: this machine is outside the version's rollout */
    UPDATE_ALREADY_STAGED,  /* staged and verified before: nothing is downloaded */
    UPDATE_NOT_TAKEN,       /* the pin refused it (installer.target_version_prefix, policy.h) */
    UPDATE_DEFERRED         /* `run` on a metered connection or battery (installer.defer_on) */
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
    UPDATE_ACTION_NOT_ELIGIBLE,
    UPDATE_ACTION_NOT_TAKEN, /* outside the pin: nothing downloaded */
    UPDATE_ACTION_DEFERRED,  /* `run` deferred the download (installer.defer_on) */
    UPDATE_ACTION_HELD       /* the mirror's Retry-After holds this machine back: not asked */
} update_action;

/* The action a verdict that does not fetch ends with (UPDATE_ACTION_STAGED
 * for the fetching ones: intake may still find the version staged). */
update_action update_action_of(update_verdict verdict);

/* "staged", "up_to_date", "already_staged", "not_eligible", "not_taken",
 * "deferred", "held" ("" for NONE). */
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

/* ---- The flow: decide -> download -> stage -> commit ------------------------------------ */

/* Where the offer comes from. */
typedef enum update_source {
    UPDATE_SOURCE_API,   /* the platform's installer route (source_api.h): needs the API key */
    UPDATE_SOURCE_MIRROR /* the fleet mirror (source_mirror.h): mirror.urls */
} update_source;

/* The source check and update use: the mirror when mirror.urls is set (PRODUCT.md section 2). */
update_source update_source_of(const config *cfg);

/* check's exit code when this machine is offered an update (PRODUCT.md section 1). */
#define UPDATE_EXIT_AVAILABLE 10

/*
 * What the flow needs from the program around it, handed down so that
 * installer/ neither makes clients (cli/commands.c reads the API key once
 * per run) nor writes report/'s status file:
 *   transport     the client for source, asked for once the state and the
 *                 installed version are read; *http stays the caller's
 *   write_status  status.json, with s's installer member
 *                 (update_status_section), once s is saved; s is NULL when
 *                 the state could not be read. NULL: no status file
 * update_run needs transport; update_flow, given its client, needs neither.
 */
typedef struct update_hooks {
    error_code (*transport)(void *user, update_source source, http_client **http, error_info *err);
    error_code (*write_status)(void *user, state *s, error_info *err);
    void *user;
} update_hooks;

/* What check, update, publish and mirror verify ask of the flow. */
typedef struct update_request {
    update_source source;
    bool fetch;               /* update: download, stage and commit what the decision fetches; false: check */
    bool force;               /* update --force: fetched and staged again, and the platform called
                                 despite a Retry-After (an administrator decided to call now) */
    bool allow_downgrade;     /* update --allow-downgrade */
    bool for_fleet;           /* publish: the host's own installed version is not the measure */
    bool retry_after_judged;  /* `run` judged the platform's Retry-After before its parts */
    bool always_fetch;        /* mirror verify: fetched, verified and staged whatever the decision,
                                 which is reported (verdict, refusal), not obeyed */
    bool progress;            /* a progress bar on stderr */
    const char *command;      /* recorded as installer.last_command; NULL when `run` drives
                                 (last_run is the scheduled run's) */
    bool scheduled;           /* `run`: installer.defer_on applies (an interactive update is a
                                 person's decision to download now) */
    const policy_env *policy; /* what the policy reads of the machine; NULL: this machine's */
    update_hooks hooks;       /* update_run's */
} update_request;

/* The flow's steps, for update_outcome.failed. */
typedef enum update_step {
    UPDATE_STEP_NONE,     /* nothing failed */
    UPDATE_STEP_OPEN,     /* the state, the installed version, the transport, Retry-After */
    UPDATE_STEP_OFFER,    /* learning the offer: the installer route's headers (check), the mirror's manifest */
    UPDATE_STEP_DECIDE,   /* the decision refused the offer (a downgrade) */
    UPDATE_STEP_DOWNLOAD, /* the installer's transfer (the API's: its answer too) */
    UPDATE_STEP_STAGE,    /* verification and staging (intake) */
    UPDATE_STEP_COMMIT,   /* a version staged before made current */
    UPDATE_STEP_FINISH    /* the state saved, the status file written */
} update_step;

/* What the flow learned and did; the strings are malloc'd (update_outcome_free). */
typedef struct update_outcome {
    char *installed;                       /* the installed version weighed; NULL: none known (publish: always) */
    char *latest;                          /* the offered version; NULL before an offer */
    char checked_at[TIMEFMT_ISO8601_SIZE]; /* when the offer was learned */
    bool update_available;                 /* latest is newer than installed (version_is_update) */
    bool eligible;                         /* inside the offer's rollout (the API offers to every machine) */
    mirror_offer offer;                    /* UPDATE_SOURCE_MIRROR: the accepted manifest; else empty */
    update_verdict verdict;                /* the decision, once an offer was decided on */
    error_info refusal;                    /* always_fetch: why the decision refused the offer; code ERR_OK if not */
    update_action action;                  /* update: what it did; UPDATE_ACTION_NONE for check */
    intake_result staged;                  /* UPDATE_ACTION_STAGED: what intake staged */
    int64_t resumed_from;                  /* the byte the download resumed from (0: from the start) */
    int exit_code;                         /* check: UPDATE_EXIT_AVAILABLE when this machine is offered an update */
    char policy_reason[512];               /* NOT_TAKEN, DEFERRED, HELD (and check outside the pin): why, as
                                              printed ("not taken: ...", "deferred: ..."); "" otherwise */
    update_step failed;                    /* where the error the flow returned came from */
} update_outcome;

/*
 * check, update and publish (and `run`'s update): the state and the
 * installed version read (installed_version_get), the transport asked for,
 * the platform's Retry-After respected (the API only; not with force, nor
 * when `run` judged it), then update_flow on them. Whatever came of it: the
 * Retry-After the platform gave now recorded (net/retry_after.h), the
 * outcome recorded as installer.last_command (request->command), the state
 * saved and the status written (hooks.write_status); a failure there is
 * returned only when the flow itself succeeded. Free *out with
 * update_outcome_free in every case.
 */
MUST_CHECK error_code update_run(const config *cfg, const update_request *request, update_outcome *out,
                                 error_info *err);

/*
 * The flow on what the caller holds, the same for every source: the offer
 * learned (check: the installer route's headers; the mirror: its manifest,
 * source_mirror_fetch), decided on (update_decide, where policy will veto),
 * downloaded (download.c; the API's answer is its own offer, decided on
 * before any body byte is kept), staged (intake_stage) and committed (a
 * version staged before made current: staging_finish_commit). installed is
 * the version decisions weigh (copied). What is learned is noted in s
 * (state sections "installer" and "mirror"), which is not saved here:
 * `mirror verify` runs the flow on a scratch state. Free *out with
 * update_outcome_free in every case.
 */
MUST_CHECK error_code update_flow(const config *cfg, state *s, http_client *http, const char *installed,
                                  const update_request *request, update_outcome *out, error_info *err);

void update_outcome_free(update_outcome *out);

/*
 * The one check of the platform's Retry-After kept in state (state section
 * "run", net/retry_after.h), for check, update and publish (update_run) and
 * for `run` before its parts: ERR_TEMPORARY "the platform asked not to be
 * called before <time> (Retry-After); <then>" while that time is ahead.
 */
MUST_CHECK error_code update_respect_retry_after(state *s, const char *then, error_info *err);

/*
 * status.json's "installer" member: staging_status_section, with the
 * source and the mirror's status (source_status_annotate) and
 * deploy_waiting_until (policy.h). *out is the caller's (cJSON_Delete).
 */
MUST_CHECK error_code update_status_section(const config *cfg, state *s, struct cJSON **out, error_info *err);

/*
 * The installer pipeline's two members of status.json: "installer"
 * (update_status_section) and "deploy" (policy_status_section, judged
 * against the running boot). Both the caller's; on failure neither.
 */
MUST_CHECK error_code update_status_parts(const config *cfg, state *s, struct cJSON **installer, struct cJSON **deploy,
                                          error_info *err);

/*
 * What `check --json` / `update --json` print for what the flow learned and
 * did (update_report_json), the mirror's part from out->offer. *doc is the
 * caller's.
 */
MUST_CHECK error_code update_outcome_json(const config *cfg, const update_request *request, const update_outcome *out,
                                          struct cJSON **doc, error_info *err);

#endif
