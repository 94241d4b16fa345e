/*
 * cmd_fetch.c — `check` and `update` (PRODUCT.md sections 4.1-4.2), and the
 * update `publish` starts with: the request made from the command line,
 * the one flow (update_run), and what it learned and did printed.
 *
 * The flow itself (offer, decide, download, stage, commit, for the API and
 * the mirror alike) and the session around it (state, Retry-After,
 * last_command) are written below, ahead of their move to
 * installer/update.c; check's GET of the installer route ahead of its move
 * to installer/source_api.c.
 *
 * check: learn the offered version and compare it with the installed one.
 * Exit 0 up to date, 10 update available. update: the same, then, if
 * newer, download, verify and stage it. Both record latest_version /
 * checked_at / update_available in state section "installer", write
 * status.json's "installer" member (their own outcome in
 * installer.last_command unless `run` called them; never "last_run", the
 * scheduled run's verdict), and honour a Retry-After the platform gave an
 * earlier run (state section "run", member "retry_after_until"): check
 * always, update unless --force, because an administrator who forces an
 * update has decided to call now.
 */
#include "cli/commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/text.h"
#include "core/log.h"
#include "core/state.h"
#include "core/timefmt.h"
#include "installer/download.h"
#include "installer/installed.h"
#include "installer/installer_state.h"
#include "installer/intake.h"
#include "installer/source_api.h"
#include "installer/source_mirror.h"
#include "installer/staging.h"
#include "installer/update.h"
#include "installer/version.h"
#include "net/api.h"
#include "net/http.h"
#include "net/retry_after.h"
#include "platform/platform.h"
#include "report/status.h"

/* ---- The installer route's latest version (check) ----------------------------------- */

typedef struct check_answer {
    char *version;         /* X-Installer-Version, malloc'd; NULL when absent */
    char content_type[64]; /* for the error message when it is absent */
} check_answer;

static http_stream_action check_on_headers(void *user, const http_stream_headers *h)
{
    check_answer *answer = user;
    if (h->installer_version)
        answer->version = text_dup(h->installer_version);
    snprintf(answer->content_type, sizeof answer->content_type, "%s", h->content_type ? h->content_type : "");
    return HTTP_STREAM_STOP;
}

error_code source_api_latest(http_client *http, const char *platform, char **version, error_info *err)
{
    *version = NULL;
    check_answer answer = {0};
    http_stream_callbacks cb = {check_on_headers, NULL, &answer};
    api_installer_request req = {.platform = platform};
    http_stream_result res;
    memset(&res, 0, sizeof res);
    error_code rc = api_installer_get(http, &req, &cb, &res, err);
    log_trace("check: %" PRId64 " bytes of installer body read", res.body_bytes);
    if (rc == ERR_OK && !answer.version)
        rc = error_set(err, ERR_REJECTED,
                       "installer: the answer (Content-Type %s) carries no X-Installer-Version header, so it cannot be "
                       "an installer; check the platform URL and any proxy or gateway in between",
                       answer.content_type[0] ? answer.content_type : "unknown");
    if (rc == ERR_OK && !version_is_valid(answer.version, err))
        rc = error_prefix(err, "X-Installer-Version");
    if (rc == ERR_OK) {
        *version = answer.version;
        answer.version = NULL;
    }
    free(answer.version);
    return rc;
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

/*
 * The decision on an offer, the same for every source (update_decide).
 * installer/policy.c (maintenance windows, version pins, metered deferral:
 * ARCHITECTURE.md, wave 4) joins here: every offer passes this step before
 * a byte of it is kept, and policy may veto a verdict that fetches. With
 * always_fetch the decision is reported, not obeyed.
 */
static MUST_CHECK error_code pass_decide(update_pass *p, const char *offered, error_info *err)
{
    const update_request *req = p->req;
    update_outcome *out = p->out;
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
    if (rc == ERR_OK && !request->fetch)
        out->exit_code = out->update_available && out->eligible ? UPDATE_EXIT_AVAILABLE : 0;
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

/* Records the platform's Retry-After (if a request failed on one) in state
 * section "run" so the next scheduled run does not call before it. */
static void remember_retry_after(state *s, http_client *http)
{
    if (!http)
        return;
    http_stats stats;
    http_client_stats(http, &stats);
    error_info err;
    if (retry_after_record(s, stats.retry_after_until_ms, platform_time_utc_ms(), &err) != ERR_OK)
        log_warn("%s", err.message);
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
    remember_retry_after(s, http);
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

/* ---- The command line's side: the request, the hooks, what is printed ------------------- */

/* update_hooks.transport: the run's API client, or a client for URLs (the mirror). */
static error_code fetch_transport(void *user, update_source source, http_client **http, error_info *err)
{
    command_context *ctx = user;
    return source == UPDATE_SOURCE_MIRROR ? command_http_urls(ctx, http, err) : command_http(ctx, http, err);
}

/* update_hooks.write_status: status.json's installer member, with this
 * command's outcome in its last_command (never last_run: the scheduled
 * run's). */
static error_code fetch_write_status(void *user, state *s, error_info *err)
{
    const command_context *ctx = user;
    status_parts parts = {0};
    error_code rc = s ? update_status_section(ctx->cfg, s, &parts.installer, err) : ERR_OK;
    if (rc == ERR_OK)
        rc = status_write(ctx->cfg, &parts, err);
    cJSON_Delete(parts.installer);
    return rc;
}

/* What check (fetch false) or update asks, from the command line. */
static update_request request_of(command_context *ctx, update_source source, bool fetch)
{
    const cli_options *opts = ctx->opts;
    bool from_run = command_from_run(ctx);
    update_request req = {
        .source = source,
        .fetch = fetch,
        .force = fetch && opts && opts->force,
        .allow_downgrade = fetch && opts && opts->allow_downgrade,
        .retry_after_judged = from_run, /* run judged it before its parts */
        .progress = !command_quiet(ctx) && platform_is_terminal(stderr),
        .command = from_run ? NULL : cli_command_name(opts ? opts->command : CLI_NONE),
        .hooks = {fetch_transport, fetch_write_status, ctx},
    };
    return req;
}

static bool want_json(const command_context *ctx)
{
    return ctx->opts && ctx->opts->json;
}

/* --json: what check and update learned and did, the same members from both sources. */
static MUST_CHECK error_code print_json(const command_context *ctx, const update_request *req,
                                        const update_outcome *out, error_info *err)
{
    cJSON *doc = NULL;
    error_code rc = update_outcome_json(ctx->cfg, req, out, &doc, err);
    if (rc == ERR_OK)
        command_print_json(doc);
    return rc;
}

static MUST_CHECK error_code print_check(const command_context *ctx, const update_request *req,
                                         const update_outcome *out, error_info *err)
{
    if (want_json(ctx))
        return print_json(ctx, req, out, err);
    if (command_quiet(ctx))
        return ERR_OK;
    const char *installed = out->installed;
    if (out->update_available && !out->eligible)
        printf("not in this rollout: %s is offered to %g%% of machines, not yet to this one; installed %s\n",
               out->latest, out->offer.m.rollout_percent, installed ? installed : "(none)");
    else if (out->update_available)
        printf("update available: %s -> %s\n", installed ? installed : "(none installed)", out->latest);
    else if (req->source == UPDATE_SOURCE_API && version_compare(out->latest, installed) < 0)
        printf("up to date: %s (the platform offers the older %s)\n", installed, out->latest);
    else
        printf("up to date: %s\n", installed);
    return ERR_OK;
}

static MUST_CHECK error_code print_update(const command_context *ctx, const update_request *req,
                                          const update_outcome *out, error_info *err)
{
    if (want_json(ctx))
        return print_json(ctx, req, out, err);
    if (command_quiet(ctx))
        return ERR_OK;
    const intake_result *staged = &out->staged;
    if (out->action == UPDATE_ACTION_UP_TO_DATE)
        printf("up to date: %s\n", out->installed);
    else if (out->action == UPDATE_ACTION_NOT_ELIGIBLE)
        printf("not updated: %s is offered, but this machine is not in its rollout yet\n", out->latest);
    else if (out->action == UPDATE_ACTION_ALREADY_STAGED)
        printf("already staged: %s\n", out->latest);
    else
        printf("staged %s: %s (%" PRId64 " bytes, sha256 %s, signature %s)\n", staged->version, staged->path,
               staged->size, staged->sha256, staged->signature);
    return ERR_OK;
}

error_code command_check(command_context *ctx, error_info *err)
{
    update_request req = request_of(ctx, update_source_of(ctx->cfg), false);
    update_outcome out;
    error_code rc = update_run(ctx->cfg, &req, &out, err);
    if (rc == ERR_OK)
        ctx->exit_code = out.exit_code;
    if (rc == ERR_OK && !ctx->no_stdout)
        rc = print_check(ctx, &req, &out, err);
    update_outcome_free(&out);
    return rc;
}

error_code command_update(command_context *ctx, error_info *err)
{
    update_request req = request_of(ctx, update_source_of(ctx->cfg), true);
    update_outcome out;
    error_code rc = update_run(ctx->cfg, &req, &out, err);
    /* run --json prints one document of its own */
    if (rc == ERR_OK && !ctx->no_stdout)
        rc = print_update(ctx, &req, &out, err);
    update_outcome_free(&out);
    return rc;
}

error_code command_update_for_publish(command_context *ctx, error_info *err)
{
    update_request req = request_of(ctx, UPDATE_SOURCE_API, true);
    req.for_fleet = true;
    update_outcome out;
    error_code rc = update_run(ctx->cfg, &req, &out, err);
    if (rc == ERR_OK && out.action == UPDATE_ACTION_STAGED)
        log_info("staged %s for publishing", out.staged.version);
    update_outcome_free(&out);
    return rc;
}
