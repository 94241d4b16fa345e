/*
 * update.c — the one update flow (update.h): the decision on an offer, the
 * flow offer -> decide -> download -> stage -> commit for the API, the
 * mirror and `mirror verify` alike, the session around it (state, the
 * platform's Retry-After, last_command), and the one document of `check
 * --json` / `update --json`. Before this file the decision was written
 * twice in cli/cmd_fetch.c, the flow three times (twice there and once in
 * mirror_verify.c) and the "staged" object three times, and the copies had
 * drifted apart.
 */
#include "installer/update.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/text.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/timefmt.h"
#include "installer/installed.h"
#include "installer/installer_state.h"
#include "installer/source_api.h"
#include "installer/staging.h"
#include "installer/version.h"
#include "net/retry_after.h"
#include "platform/platform.h"

error_code update_decide(const update_facts *f, update_verdict *verdict, error_info *err)
{
    int order = f->installed ? version_compare(f->offered, f->installed) : 1;
    bool downgrade_allowed = f->allow_downgrade || f->source_allows_downgrade;
    if (order < 0 && !downgrade_allowed)
        return error_set(err, ERR_REJECTED,
                         "%s offers %s, older than the installed %s; refusing the downgrade (use update "
                         "--allow-downgrade to accept it)",
                         f->source ? f->source : "the source", f->offered, f->installed);
    if (!f->force && order == 0)
        *verdict = UPDATE_UP_TO_DATE;
    else if (!f->force && !f->eligible)
        *verdict = UPDATE_NOT_ELIGIBLE;
    else if (!f->force && f->is_staged && f->is_staged(f->is_staged_user, f->offered))
        *verdict = UPDATE_ALREADY_STAGED;
    else if (order < 0)
        *verdict = UPDATE_FETCH_DOWNGRADE;
    else if (order == 0)
        *verdict = UPDATE_FETCH_FORCED;
    else
        *verdict = UPDATE_FETCH_NEWER;
    return ERR_OK;
}

bool update_verdict_fetches(update_verdict verdict)
{
    return verdict == UPDATE_FETCH_NEWER || verdict == UPDATE_FETCH_DOWNGRADE || verdict == UPDATE_FETCH_FORCED;
}

error_code update_stage_download(const config *cfg, state *s, const download_result *dl,
                                 const update_stage_options *options, intake_result *staged, error_info *err)
{
    intake_candidate candidate = {
        .path = dl->path,
        .take_ownership = true,
        .version = dl->version,
        .file_name = dl->file_name,
        .source_url = dl->url,
        .etag = dl->etag,
        .expected_length = dl->total_length,
        .sha256_hex = dl->sha256[0] ? dl->sha256 : NULL,
        .pe_digest = dl->have_pe_digest ? &dl->pe_digest : NULL,
        .allow_downgrade = options->allow_downgrade,
        .force = options->force,
        .expected_signer_sha256 = options->signer_cert_sha256,
    };
    error_code rc = intake_stage(cfg, s, &candidate, staged, err);
    if (rc != ERR_DISK_FULL)
        download_discard(cfg->state_dir, dl->version);
    return rc;
}

bool update_staged_in(const void *cfg, const char *version)
{
    return staging_has_verified(cfg, version);
}

update_action update_action_of(update_verdict verdict)
{
    /* in update_verdict's order */
    static const update_action actions[] = {
        UPDATE_ACTION_STAGED,       UPDATE_ACTION_STAGED,         UPDATE_ACTION_STAGED,    UPDATE_ACTION_UP_TO_DATE,
        UPDATE_ACTION_NOT_ELIGIBLE, UPDATE_ACTION_ALREADY_STAGED, UPDATE_ACTION_NOT_TAKEN, UPDATE_ACTION_DEFERRED};
    return (size_t)verdict < sizeof actions / sizeof actions[0] ? actions[verdict] : UPDATE_ACTION_STAGED;
}

const char *update_action_name(update_action action)
{
    /* in update_action's order: the names `update --json` prints */
    static const char *const names[] = {"",          "staged",   "up_to_date", "already_staged", "not_eligible",
                                        "not_taken", "deferred", "held"};
    return (size_t)action < sizeof names / sizeof names[0] ? names[action] : "";
}

/* The staged version's status.json object, read back from its manifest, plus
 * resumed_from: what this update staged, whichever source it came from. */
static MUST_CHECK error_code staged_json(const config *cfg, const char *version, int64_t resumed_from, cJSON **out,
                                         error_info *err)
{
    error_code rc = staging_status_of(cfg, version, out, err);
    if (rc == ERR_OK && !cJSON_AddNumberToObject(*out, "resumed_from", (double)resumed_from))
        rc = error_set(err, ERR_NOMEM, "out of memory");
    return rc;
}

error_code update_report_json(const config *cfg, const update_report *r, cJSON **out, error_info *err)
{
    *out = NULL;
    cJSON *mirror = r->mirror;
    cJSON *o = cJSON_CreateObject();
    bool ok = o && jsonx_add_string_or_null(o, "installed_version", r->installed) &&
              jsonx_add_string_or_null(o, "latest_version", r->latest) &&
              cJSON_AddBoolToObject(o, "update_available", version_is_update(r->latest, r->installed)) &&
              jsonx_add_string_or_null(o, "checked_at", r->checked_at && r->checked_at[0] ? r->checked_at : NULL) &&
              jsonx_add_string_or_null(o, "source", r->source);
    /* jsonx_set takes mirror in every case, o NULL included */
    if (!jsonx_set(o, "mirror", mirror ? mirror : cJSON_CreateNull()))
        ok = false;
    error_code rc = ok ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK && r->action != UPDATE_ACTION_NONE) {
        cJSON *staged = NULL;
        if (!cJSON_AddStringToObject(o, "action", update_action_name(r->action)))
            rc = error_set(err, ERR_NOMEM, "out of memory");
        else if (r->action == UPDATE_ACTION_STAGED && r->staged_version)
            rc = staged_json(cfg, r->staged_version, r->resumed_from, &staged, err);
        if (rc == ERR_OK && !jsonx_set(o, "staged", staged ? staged : cJSON_CreateNull()))
            rc = error_set(err, ERR_NOMEM, "out of memory");
    }
    if (rc != ERR_OK) {
        cJSON_Delete(o);
        return rc;
    }
    *out = o;
    return ERR_OK;
}

/* ---- The flow: offer, decide, download, stage, commit ------------------------------- */

update_source update_source_of(const config *cfg)
{
    return cfg->mirror.url_count > 0 ? UPDATE_SOURCE_MIRROR : UPDATE_SOURCE_API;
}

/* One pass of the flow: what update_flow holds while it runs. */
typedef struct update_pass {
    const config *cfg;
    state *s;
    http_client *http;
    const update_request *req;
    update_outcome *out;
    download_result dl; /* the installer's download */
    bool fetch;         /* the decision (or always_fetch) fetches the offer */
} update_pass;

static bool from_mirror(const update_pass *p)
{
    return p->req->source == UPDATE_SOURCE_MIRROR;
}

/* Notes what the source offers now in state section "installer". */
static void record_latest(update_pass *p, const char *latest)
{
    update_outcome *out = p->out;
    free(out->latest);
    out->latest = text_dup(latest);
    timefmt_iso8601(platform_time_utc_ms() / 1000, out->checked_at);
    out->update_available = version_is_update(latest, out->installed);
    error_info err;
    if (installer_state_set_latest(p->s, latest, out->checked_at, out->update_available, &err) != ERR_OK)
        log_warn("cannot note the latest version in the state: %s", err.message);
}

/*
 * The offer learned ahead of any download: check's through the API is the
 * installer route's answer, read up to its headers (source_api_latest); the
 * mirror's is its signed manifest (source_mirror_fetch). An update through
 * the API learns nothing ahead: the answer that brings the body is the
 * offer (on_answer).
 */
static MUST_CHECK error_code pass_offer(update_pass *p, error_info *err)
{
    update_outcome *out = p->out;
    if (!from_mirror(p)) {
        char *version = NULL;
        error_code rc = p->req->fetch ? ERR_OK : source_api_latest(p->http, p->cfg->installer.platform, &version, err);
        if (rc == ERR_OK && version)
            record_latest(p, version);
        free(version);
        return rc;
    }
    mirror_offer *offer = &out->offer;
    error_code rc = source_mirror_fetch(p->http, p->cfg, p->s, platform_time_utc_ms() / 1000, offer, err);
    if (rc == ERR_OK) {
        out->eligible = offer->eligible;
        record_latest(p, offer->m.version);
        log_trace("mirror %s: seq %lld, version %s, rollout %g%% (%s)%s", offer->manifest_url, (long long)offer->m.seq,
                  offer->m.version, offer->m.rollout_percent, offer->eligible ? "eligible" : "not eligible",
                  offer->not_modified ? ", not modified" : "");
    }
    return rc;
}

/* The policy's now (policy.h): the request's environment, else this machine's. */
static int64_t policy_now(const update_request *req)
{
    const policy_env *env = req->policy ? req->policy : policy_machine();
    return env->now_s(env->user);
}

/*
 * The pin (installer.target_version_prefix): an offer it refuses is
 * UPDATE_NOT_TAKEN before any other rule, a downgrade under it included
 * (an administrator who pins below the installed version is not refused
 * with exit 4 each hour). Recorded in state section "policy" either way.
 */
static bool pin_takes(update_pass *p, const char *offered, bool downgrade_allowed)
{
    update_outcome *out = p->out;
    if (policy_pin_takes(p->cfg->installer.target_version_prefix, offered, out->installed, downgrade_allowed,
                         out->policy_reason, sizeof out->policy_reason)) {
        policy_note_taken(p->s);
        return true;
    }
    policy_note_not_taken(p->s, offered, out->policy_reason, policy_now(p->req));
    log_info("%s", out->policy_reason);
    return false;
}

/* `run` on a metered connection or battery (installer.defer_on): a verdict
 * that fetches becomes UPDATE_DEFERRED, said on stderr and recorded. */
static void defer_if_asked(update_pass *p)
{
    const update_request *req = p->req;
    update_outcome *out = p->out;
    bool fetches = update_verdict_fetches(out->verdict);
    char detail[200] = "";
    policy_defer why =
        fetches ? policy_deferral(&p->cfg->installer, req->policy, detail, sizeof detail) : POLICY_DEFER_NONE;
    policy_note_download_deferred(p->s, why, detail, policy_now(req));
    if (why == POLICY_DEFER_NONE)
        return;
    out->verdict = UPDATE_DEFERRED;
    snprintf(out->policy_reason, sizeof out->policy_reason,
             "deferred: %s (installer.defer_on; %s): %s is not downloaded while it lasts", policy_defer_text(why),
             detail, p->out->latest ? p->out->latest : "the update");
    log_warn("%s", out->policy_reason);
}

/*
 * The decision on an offer, the same for every source: the fleet policy's
 * pin (policy.h), update_decide, then, for `run`, the policy's deferral.
 * Every offer passes this step before a byte of it is kept. With
 * always_fetch the decision is reported, not obeyed.
 */
static MUST_CHECK error_code pass_decide(update_pass *p, const char *offered, error_info *err)
{
    const update_request *req = p->req;
    update_outcome *out = p->out;
    if (!pin_takes(p, offered, req->allow_downgrade || (from_mirror(p) && out->offer.m.allow_downgrade))) {
        out->verdict = UPDATE_NOT_TAKEN;
        out->action = UPDATE_ACTION_NOT_TAKEN;
        p->fetch = req->always_fetch;
        return ERR_OK;
    }
    char source[600];
    snprintf(source, sizeof source, "%s%s", from_mirror(p) ? "mirror " : "the platform",
             from_mirror(p) ? out->offer.manifest_url : "");
    update_facts facts = {
        .offered = offered,
        .installed = out->installed,
        .source = source,
        .force = req->force,
        .allow_downgrade = req->allow_downgrade,
        .source_allows_downgrade = from_mirror(p) && out->offer.m.allow_downgrade,
        .eligible = out->eligible,
        .is_staged = update_staged_in,
        .is_staged_user = p->cfg,
    };
    error_code rc = update_decide(&facts, &out->verdict, req->always_fetch ? &out->refusal : err);
    if (rc == ERR_OK && req->scheduled)
        defer_if_asked(p);
    if (rc == ERR_OK)
        out->action = update_action_of(out->verdict);
    else if (!req->always_fetch)
        out->failed = UPDATE_STEP_DECIDE;
    p->fetch = req->always_fetch || (rc == ERR_OK && update_verdict_fetches(out->verdict));
    return req->always_fetch ? ERR_OK : rc;
}

/* download.c's accept hook: the API's answer is the offer, decided on from
 * its headers before any body byte is kept. */
static MUST_CHECK error_code on_answer(void *user, const download_offer *offer, bool *skip, error_info *err)
{
    update_pass *p = user;
    record_latest(p, offer->version);
    error_code rc = pass_decide(p, offer->version, err);
    if (rc == ERR_OK && !p->fetch)
        *skip = true;
    return rc;
}

/* The installer through download.c, the one download path for any offer:
 * the API's route (its answer decided on by on_answer), or the file the
 * mirror's manifest offers. */
static MUST_CHECK error_code pass_download(update_pass *p, error_info *err)
{
    const config *cfg = p->cfg;
    bool mirror = from_mirror(p);
    int64_t t0 = platform_monotonic_ms();
    error_code rc;
    if (mirror) {
        rc = source_mirror_download(p->http, cfg, &p->out->offer, p->req->progress, &p->dl, err);
    } else {
        download_request req = {
            .state_dir = cfg->state_dir,
            .platform = cfg->installer.platform,
            .max_bytes_per_second = cfg->installer.max_bytes_per_second,
            .progress = p->req->progress,
            .accept = on_answer,
            .accept_user = p,
        };
        rc = download_run(p->http, &req, &p->dl, err);
    }
    if (rc == ERR_OK && !p->dl.skipped)
        log_info("downloaded %" PRId64 " bytes%s in %" PRId64 " ms", p->dl.size, mirror ? " from the mirror" : "",
                 platform_monotonic_ms() - t0);
    if (rc == ERR_OK && p->dl.resumed_from > 0)
        log_info("resumed from byte %" PRId64 "; %" PRId64 " bytes received in this run", p->dl.resumed_from,
                 p->dl.bytes_received);
    p->out->resumed_from = p->dl.resumed_from;
    return rc;
}

/* Verifies and stages the finished download (update_stage_download),
 * whichever source offered it: the mirror's with the signer its signed
 * manifest names. */
static MUST_CHECK error_code pass_stage(update_pass *p, error_info *err)
{
    const update_request *req = p->req;
    const mirror_offer *offer = &p->out->offer;
    bool mirror = from_mirror(p);
    update_stage_options options = {
        .allow_downgrade = req->allow_downgrade || req->always_fetch || (mirror && offer->m.allow_downgrade),
        .force = req->force || req->always_fetch,
        .signer_cert_sha256 = mirror && offer->m.signed_installer ? offer->m.signer_cert_sha256 : NULL,
    };
    int64_t t0 = platform_monotonic_ms();
    error_code rc = update_stage_download(p->cfg, p->s, &p->dl, &options, &p->out->staged, err);
    log_info("verified and staged in %" PRId64 " ms", platform_monotonic_ms() - t0);
    if (rc == ERR_OK)
        p->out->action = p->out->staged.already_staged ? UPDATE_ACTION_ALREADY_STAGED : UPDATE_ACTION_STAGED;
    else if (mirror)
        error_prefix(err, "mirror installer %s", offer->installer_url);
    return rc;
}

/* A version found staged already (by the decision, or by intake) is made
 * current: a run killed in the middle of staging it may have left it not
 * current yet, or older versions unpruned; what its download left is done
 * with. */
static MUST_CHECK error_code pass_commit(update_pass *p, error_info *err)
{
    update_outcome *out = p->out;
    if (out->action != UPDATE_ACTION_ALREADY_STAGED || !out->latest)
        return ERR_OK;
    download_discard(p->cfg->state_dir, out->latest);
    return staging_finish_commit(p->cfg, p->s, out->latest, err);
}

error_code update_flow(const config *cfg, state *s, http_client *http, const char *installed,
                       const update_request *request, update_outcome *out, error_info *err)
{
    memset(out, 0, sizeof *out);
    error_clear(&out->refusal);
    out->eligible = true;
    update_pass p = {.cfg = cfg, .s = s, .http = http, .req = request, .out = out};
    bool mirror = from_mirror(&p);
    update_step step = UPDATE_STEP_OPEN;
    error_code rc =
        installed && !(out->installed = text_dup(installed)) ? error_set(err, ERR_NOMEM, "out of memory") : ERR_OK;
    if (rc == ERR_OK) {
        step = UPDATE_STEP_OFFER;
        rc = pass_offer(&p, err);
    }
    if (rc == ERR_OK && !request->fetch) {
        bool taken = !out->update_available || pin_takes(&p, out->latest, false);
        out->exit_code = out->update_available && out->eligible && taken ? UPDATE_EXIT_AVAILABLE : 0;
    }
    if (rc == ERR_OK && request->fetch && mirror) {
        step = UPDATE_STEP_DECIDE;
        rc = pass_decide(&p, out->offer.m.version, err);
    }
    if (rc == ERR_OK && request->fetch && (p.fetch || !mirror)) {
        step = UPDATE_STEP_DOWNLOAD;
        rc = pass_download(&p, err);
    }
    if (rc == ERR_OK && p.fetch && !p.dl.skipped) {
        step = UPDATE_STEP_STAGE;
        rc = pass_stage(&p, err);
    }
    if (rc == ERR_OK && request->fetch) {
        step = UPDATE_STEP_COMMIT;
        rc = pass_commit(&p, err);
    }
    /* A mirror's installer refused: status.json says so beside the manifest it came with. */
    if (rc == ERR_REJECTED && mirror && (step == UPDATE_STEP_DOWNLOAD || step == UPDATE_STEP_STAGE) && err)
        source_mirror_record_refusal(s, err->message);
    if (rc != ERR_OK && out->failed == UPDATE_STEP_NONE)
        out->failed = step;
    download_result_free(&p.dl);
    return rc;
}

void update_outcome_free(update_outcome *out)
{
    if (!out)
        return;
    free(out->installed);
    free(out->latest);
    free(out->staged.path);
    source_mirror_offer_free(&out->offer);
    out->installed = NULL;
    out->latest = NULL;
    out->staged.path = NULL;
}

/* ---- The session around the flow: check, update, publish ---------------------------- */

error_code update_respect_retry_after(state *s, const char *then, error_info *err)
{
    char until[TIMEFMT_ISO8601_SIZE + 16];
    if (!retry_after_pending(s, platform_time_utc_ms(), until, sizeof until))
        return ERR_OK;
    return error_set(err, ERR_TEMPORARY, "the platform asked not to be called before %s (Retry-After); %s", until,
                     then);
}

/* Records the platform's Retry-After (if a request failed on one) and, for
 * the fleet mirror, any Retry-After its answers carried, in state section
 * "run", so that the next runs do not call before it. */
static void remember_retry_after(state *s, http_client *http, update_source source)
{
    if (!http || !s)
        return;
    http_stats stats;
    http_client_stats(http, &stats);
    error_info err;
    int64_t now = platform_time_utc_ms();
    if (retry_after_record(s, stats.retry_after_until_ms, now, &err) != ERR_OK)
        log_warn("%s", err.message);
    if (source == UPDATE_SOURCE_MIRROR &&
        retry_after_record_for(s, RETRY_AFTER_MIRROR, stats.url_retry_after_until_ms, now, &err) != ERR_OK)
        log_warn("%s", err.message);
}

/* A mirror that answered with Retry-After is not asked again before that
 * time (PRODUCT.md section 11: a mirror can hold its fleet back), the same
 * rule as the platform's. */
static MUST_CHECK error_code respect_mirror_retry_after(state *s, const char *then, error_info *err)
{
    char until[TIMEFMT_ISO8601_SIZE + 16];
    if (!retry_after_pending_for(s, RETRY_AFTER_MIRROR, platform_time_utc_ms(), until, sizeof until))
        return ERR_OK;
    return error_set(err, ERR_TEMPORARY,
                     "the fleet mirror asked not to be asked again before %s (Retry-After on mirror.urls); %s", until,
                     then);
}

/*
 * Saves state and writes status.json's installer member, with the command's
 * outcome in installer.last_command unless `run` drives it (last_run is the
 * scheduled run's). Failures here are reported but do not hide the flow's
 * own outcome: a failed check stays a failed check.
 */
static MUST_CHECK error_code finish(state *s, http_client *http, const update_request *req, update_outcome *out,
                                    error_code outcome, error_info *err)
{
    remember_retry_after(s, http, req->source);
    if (s && req->command)
        installer_state_note_outcome(s, req->command, outcome, out->exit_code, err);
    error_info why;
    error_clear(&why);
    error_code rc = s ? state_save(s, &why) : ERR_OK;
    if (rc == ERR_OK && req->hooks.write_status)
        rc = req->hooks.write_status(req->hooks.user, s, &why);
    if (outcome != ERR_OK)
        return outcome;
    if (rc != ERR_OK) {
        out->failed = UPDATE_STEP_FINISH;
        if (err)
            *err = why;
    }
    return rc;
}

error_code update_run(const config *cfg, const update_request *request, update_outcome *out, error_info *err)
{
    memset(out, 0, sizeof *out);
    state *s = NULL;
    http_client *http = NULL;
    char *installed = NULL;
    error_code rc = state_load(cfg->state_dir, &s, err);
    if (rc == ERR_OK)
        rc = installed_version_get(cfg, s, &installed, NULL, err);
    if (rc == ERR_OK)
        rc = request->hooks.transport(request->hooks.user, request->source, &http, err);
    /* --force exists for update only: an administrator who forces an update has decided to call now. */
    if (rc == ERR_OK && request->source == UPDATE_SOURCE_API && !request->force && !request->retry_after_judged)
        rc = update_respect_retry_after(s,
                                        request->fetch && !request->for_fleet
                                            ? "try again after that time, or use update --force"
                                            : "try again after that time",
                                        err);
    if (rc == ERR_OK && request->source == UPDATE_SOURCE_MIRROR && !request->force)
        rc = respect_mirror_retry_after(
            s, request->fetch ? "try again after that time, or use update --force" : "try again after that time", err);
    if (rc == ERR_OK)
        rc = update_flow(cfg, s, http, request->for_fleet ? NULL : installed, request, out, err);
    else
        out->failed = UPDATE_STEP_OPEN;
    free(installed);
    rc = finish(s, http, request, out, rc, err);
    state_free(s);
    return rc;
}

error_code update_status_section(const config *cfg, state *s, cJSON **out, error_info *err)
{
    error_code rc = staging_status_section(cfg, s, out, err);
    if (rc == ERR_OK)
        source_status_annotate(cfg, s, *out);
    char until[TIMEFMT_ISO8601_SIZE + 8];
    bool waiting = policy_waiting_until(s, until, sizeof until);
    if (rc == ERR_OK &&
        !jsonx_set(*out, "deploy_waiting_until", waiting ? cJSON_CreateString(until) : cJSON_CreateNull())) {
        cJSON_Delete(*out);
        *out = NULL;
        rc = error_set(err, ERR_NOMEM, "out of memory");
    }
    return rc;
}

error_code update_status_parts(const config *cfg, state *s, cJSON **installer, cJSON **deploy, error_info *err)
{
    *installer = *deploy = NULL;
    char boot_id[128];
    platform_boot_id(boot_id, sizeof boot_id);
    error_code rc = update_status_section(cfg, s, installer, err);
    if (rc == ERR_OK)
        rc = policy_status_section(cfg, s, boot_id, deploy, err);
    if (rc != ERR_OK) {
        cJSON_Delete(*installer);
        *installer = NULL;
    }
    return rc;
}

/* The mirror's part of check/update --json: what the accepted manifest said. */
static cJSON *mirror_summary(const mirror_offer *offer)
{
    cJSON *m = cJSON_CreateObject();
    if (!m || !offer->manifest_url)
        return m;
    char expires[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(offer->m.expires_at, expires);
    cJSON_AddStringToObject(m, "url", offer->manifest_url);
    char seq_text[24]; /* written exactly: cJSON prints a number above 10^15 rounded */
    snprintf(seq_text, sizeof seq_text, "%lld", (long long)offer->m.seq);
    cJSON_AddRawToObject(m, "seq", seq_text);
    cJSON_AddStringToObject(m, "expires_at", expires);
    cJSON_AddNumberToObject(m, "rollout_percent", offer->m.rollout_percent);
    cJSON_AddBoolToObject(m, "eligible", offer->eligible);
    cJSON_AddBoolToObject(m, "not_modified", offer->not_modified);
    return m;
}

error_code update_outcome_json(const config *cfg, const update_request *request, const update_outcome *out, cJSON **doc,
                               error_info *err)
{
    bool mirror = request->source == UPDATE_SOURCE_MIRROR;
    update_report report = {
        .installed = out->installed,
        .latest = out->latest,
        .checked_at = out->checked_at,
        .source = mirror ? "mirror" : "api",
        .mirror = mirror ? mirror_summary(&out->offer) : NULL,
        .action = request->fetch ? out->action : UPDATE_ACTION_NONE,
        .staged_version = out->staged.path ? out->staged.version : NULL,
        .resumed_from = out->resumed_from,
    };
    return update_report_json(cfg, &report, doc, err);
}
