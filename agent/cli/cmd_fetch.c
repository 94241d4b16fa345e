/*
 * cmd_fetch.c — `check` and `update` (PRODUCT.md sections 4.1-4.2): learn
 * the latest installer's version, and download, verify and stage it.
 *
 * check: one GET of the installer route that stops after the headers (no
 * HEAD, no validators needed), X-Installer-Version validated and compared
 * with the installed version. Exit 0 up to date, 10 update available.
 *
 * update: the same GET, but the decision is taken on the answer's headers
 * and the body is streamed on (download.c) in the same request, so there is
 * no window in which the platform could publish another version between
 * the check and the download. Up to date, or this version already staged
 * and verified: nothing is downloaded. An older version than the installed
 * one is refused (exit 4) unless --allow-downgrade. The finished file is
 * handed to intake_stage(), which verifies and stages it.
 *
 * Both record latest_version / checked_at / update_available in state
 * section "installer", write status.json's "installer" member (their own
 * outcome in installer.last_command unless `run` called them; never
 * "last_run", the scheduled run's verdict), and honour a Retry-After the platform gave
 * an earlier run (state section "run", member "retry_after_until"): check
 * always, update unless --force, because an administrator who forces an
 * update has decided to call now.
 */
#include "cli/commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "net/api.h"
#include "installer/download.h"
#include "net/http.h"
#include "net/retry_after.h"
#include "installer/installed.h"
#include "installer/installer_state.h"
#include "core/log.h"
#include "platform/platform.h"
#include "installer/source_mirror.h"
#include "installer/intake.h"
#include "installer/staging.h"
#include "installer/update.h"
#include "core/state.h"
#include "report/status.h"
#include "base/text.h"
#include "core/timefmt.h"
#include "installer/version.h"

/* What one check or update learned, for state, status and output. */
typedef struct fetch_session {
    command_context *ctx;
    http_client *http;
    state *s;
    char checked_at[TIMEFMT_ISO8601_SIZE];
    char *installed; /* installed version, NULL when unknown */
    const char *installed_source;
    char *latest; /* X-Installer-Version, NULL before an answer */
    bool update_available;
} fetch_session;

/* ---- Session: client, state, Retry-After ----------------------------------------- */

static MUST_CHECK error_code session_open(fetch_session *fs, command_context *ctx, error_info *err)
{
    memset(fs, 0, sizeof *fs);
    fs->ctx = ctx;
    error_code rc = config_check_api(ctx->cfg, err);
    if (rc == ERR_OK)
        rc = state_load(ctx->cfg->state_dir, &fs->s, err);
    if (rc == ERR_OK)
        rc = installed_version_get(ctx->cfg, fs->s, &fs->installed, &fs->installed_source, err);
    if (rc != ERR_OK)
        return rc;
    return command_http(ctx, &fs->http, err);
}

static void session_close(fetch_session *fs)
{
    state_free(fs->s);
    free(fs->installed);
    free(fs->latest);
}

/* Refuses to call the platform before the time an earlier Retry-After named. */
static MUST_CHECK error_code respect_retry_after(fetch_session *fs, bool force, error_info *err)
{
    char until[TIMEFMT_ISO8601_SIZE + 16];
    if (force || !retry_after_pending(fs->s, platform_time_utc_ms(), until, sizeof until))
        return ERR_OK;
    return error_set(err, ERR_TEMPORARY,
                     "the platform asked not to be called before %s (Retry-After); try again after that time%s", until,
                     fs->ctx->opts && fs->ctx->opts->command == CLI_UPDATE ? ", or use update --force" : "");
}

/* Records the platform's Retry-After (if a request failed on one) in state
 * section "run" so the next scheduled run does not call before it. */
static void remember_retry_after(fetch_session *fs)
{
    if (!fs->http)
        return;
    http_stats stats;
    http_client_stats(fs->http, &stats);
    error_info err;
    if (retry_after_record(fs->s, stats.retry_after_until_ms, platform_time_utc_ms(), &err) != ERR_OK)
        log_warn("%s", err.message);
}

/* ---- State, status and output -------------------------------------------------------- */

/* Notes what the platform offers now in state section "installer". */
static void record_latest(fetch_session *fs, const char *latest)
{
    free(fs->latest);
    fs->latest = text_dup(latest);
    timefmt_iso8601(platform_time_utc_ms() / 1000, fs->checked_at);
    fs->update_available = update_is_available(latest, fs->installed);
    error_info err;
    if (installer_state_set_latest(fs->s, latest, fs->checked_at, fs->update_available, &err) != ERR_OK)
        log_warn("cannot note the latest version in the state: %s", err.message);
}

/*
 * Saves state and writes status.json's installer member, with this
 * command's outcome in installer.last_command unless `run` drives us
 * (last_run is the scheduled run's). Failures here are reported but do not
 * hide the command's own outcome: a failed check stays a failed check.
 */
static MUST_CHECK error_code finish_session(fetch_session *fs, error_code outcome, error_info *err)
{
    remember_retry_after(fs);
    error_info why;
    error_clear(&why);
    command_record_outcome(fs->ctx, fs->s, outcome, fs->ctx->exit_code, err);
    error_code rc = fs->s ? state_save(fs->s, &why) : ERR_OK;
    status_parts parts = {0};
    if (rc == ERR_OK && fs->s)
        rc = staging_status_section(fs->ctx->cfg, fs->s, &parts.installer, &why);
    if (rc == ERR_OK && fs->s)
        source_status_annotate(fs->ctx->cfg, fs->s, parts.installer);
    if (rc == ERR_OK)
        rc = status_write(fs->ctx->cfg, &parts, &why);
    cJSON_Delete(parts.installer);
    if (outcome != ERR_OK)
        return outcome;
    if (rc != ERR_OK && err)
        *err = why;
    return rc;
}

static bool want_json(const fetch_session *fs)
{
    return fs->ctx->opts && fs->ctx->opts->json;
}

static bool use_mirror(const command_context *ctx);

/* Prints what check or update learned and did with --json, the same members
 * from both sources (update_report_json). mirror is taken over. */
static MUST_CHECK error_code print_report(const fetch_session *fs, cJSON *mirror, update_action action,
                                          const char *staged_version, int64_t resumed_from, error_info *err)
{
    update_report report = {
        .installed = fs->installed,
        .latest = fs->latest,
        .checked_at = fs->checked_at,
        .source = use_mirror(fs->ctx) ? "mirror" : "api",
        .mirror = mirror,
        .action = action,
        .staged_version = staged_version,
        .resumed_from = resumed_from,
    };
    cJSON *o = NULL;
    error_code rc = update_report_json(fs->ctx->cfg, &report, &o, err);
    if (rc == ERR_OK)
        command_print_json(o);
    return rc;
}

/* ---- check ------------------------------------------------------------------------------ */

typedef struct check_answer {
    char *version;         /* X-Installer-Version, malloc'd; NULL when absent */
    char content_type[64]; /* for the error message when it is absent */
} check_answer;

static http_stream_action check_on_headers(void *user, const http_stream_headers *h)
{
    check_answer *answer = user;
    const char *version = api_installer_version(h);
    if (version)
        answer->version = text_dup(version);
    snprintf(answer->content_type, sizeof answer->content_type, "%s", h->content_type ? h->content_type : "");
    return HTTP_STREAM_STOP;
}

static MUST_CHECK error_code check_latest(fetch_session *fs, error_info *err)
{
    check_answer answer = {0};
    http_stream_callbacks cb = {check_on_headers, NULL, &answer};
    api_installer_request req = {.platform = fs->ctx->cfg->installer.platform};
    http_stream_result res;
    memset(&res, 0, sizeof res);
    error_code rc = api_installer_get(fs->http, &req, &cb, &res, err);
    log_trace("check: %" PRId64 " bytes of installer body read", res.body_bytes);
    if (rc == ERR_OK && !answer.version)
        rc = error_set(err, ERR_REJECTED,
                       "installer: the answer (Content-Type %s) carries no X-Installer-Version header, so it cannot be "
                       "an installer; check the platform URL and any proxy or gateway in between",
                       answer.content_type[0] ? answer.content_type : "unknown");
    if (rc == ERR_OK && !version_is_valid(answer.version, err))
        rc = error_prefix(err, "X-Installer-Version");
    if (rc == ERR_OK)
        record_latest(fs, answer.version);
    free(answer.version);
    return rc;
}

/* ---- The fleet mirror as the source (PRODUCT.md section 8) ------------------------------ */

static bool use_mirror(const command_context *ctx)
{
    return ctx->cfg->mirror.url_count > 0;
}

/* As session_open, for the mirror: no base_url, no API key. */
static MUST_CHECK error_code mirror_session_open(fetch_session *fs, command_context *ctx, error_info *err)
{
    memset(fs, 0, sizeof *fs);
    fs->ctx = ctx;
    error_code rc = state_load(ctx->cfg->state_dir, &fs->s, err);
    if (rc == ERR_OK)
        rc = installed_version_get(ctx->cfg, fs->s, &fs->installed, &fs->installed_source, err);
    if (rc == ERR_OK)
        rc = command_http_urls(ctx, &fs->http, err);
    return rc;
}

static MUST_CHECK error_code mirror_offer_get(fetch_session *fs, mirror_offer *offer, error_info *err)
{
    error_code rc = source_mirror_fetch(fs->http, fs->ctx->cfg, fs->s, platform_time_utc_ms() / 1000, offer, err);
    if (rc == ERR_OK) {
        record_latest(fs, offer->m.version);
        log_trace("mirror %s: seq %lld, version %s, rollout %g%% (%s)%s", offer->manifest_url, (long long)offer->m.seq,
                  offer->m.version, offer->m.rollout_percent, offer->eligible ? "eligible" : "not eligible",
                  offer->not_modified ? ", not modified" : "");
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

static MUST_CHECK error_code check_from_mirror(command_context *ctx, error_info *err)
{
    fetch_session fs;
    mirror_offer offer;
    memset(&offer, 0, sizeof offer);
    error_code rc = mirror_session_open(&fs, ctx, err);
    if (rc == ERR_OK)
        rc = mirror_offer_get(&fs, &offer, err);
    /* A version this machine's rollout does not offer yet is nothing to
     * do here: 0, as `update` would stage nothing (a publish at 0 % stages
     * nowhere). */
    if (rc == ERR_OK)
        ctx->exit_code = fs.update_available && offer.eligible ? COMMAND_EXIT_UPDATE_AVAILABLE : 0;
    rc = finish_session(&fs, rc, err);
    if (rc == ERR_OK && !ctx->no_stdout) {
        if (want_json(&fs)) {
            rc = print_report(&fs, mirror_summary(&offer), UPDATE_ACTION_NONE, NULL, 0, err);
        } else if (!command_quiet(fs.ctx) && fs.update_available && !offer.eligible) {
            printf("not in this rollout: %s is offered to %g%% of machines, not yet to this one; installed %s\n",
                   fs.latest, offer.m.rollout_percent, fs.installed ? fs.installed : "(none)");
        } else if (!command_quiet(fs.ctx) && fs.update_available) {
            printf("update available: %s -> %s\n", fs.installed ? fs.installed : "(none installed)", fs.latest);
        } else if (!command_quiet(fs.ctx)) {
            printf("up to date: %s\n", fs.installed);
        }
    }
    source_mirror_offer_free(&offer);
    session_close(&fs);
    return rc;
}

error_code command_check(command_context *ctx, error_info *err)
{
    if (use_mirror(ctx))
        return check_from_mirror(ctx, err);
    fetch_session fs;
    error_code rc = session_open(&fs, ctx, err);
    if (rc == ERR_OK)
        rc = respect_retry_after(&fs, false, err);
    if (rc == ERR_OK)
        rc = check_latest(&fs, err);
    if (rc == ERR_OK)
        ctx->exit_code = fs.update_available ? COMMAND_EXIT_UPDATE_AVAILABLE : 0;
    rc = finish_session(&fs, rc, err);
    if (rc == ERR_OK && !ctx->no_stdout) {
        if (want_json(&fs))
            rc = print_report(&fs, NULL, UPDATE_ACTION_NONE, NULL, 0, err);
        else if (!command_quiet(fs.ctx) && fs.update_available)
            printf("update available: %s -> %s\n", fs.installed ? fs.installed : "(none installed)", fs.latest);
        else if (!command_quiet(fs.ctx) && version_compare(fs.latest, fs.installed) < 0)
            printf("up to date: %s (the platform offers the older %s)\n", fs.installed, fs.latest);
        else if (!command_quiet(fs.ctx))
            printf("up to date: %s\n", fs.installed);
    }
    session_close(&fs);
    return rc;
}

/* ---- update ----------------------------------------------------------------------------- */

typedef struct update_job {
    fetch_session *fs;
    bool force;
    bool allow_downgrade;
    update_action action;
} update_job;

/* The policy (update_decide), on the answer's headers before any body byte is kept. */
static MUST_CHECK error_code update_accept(void *user, const download_offer *offer, bool *skip, error_info *err)
{
    update_job *job = user;
    fetch_session *fs = job->fs;
    record_latest(fs, offer->version);
    update_facts facts = {
        .offered = offer->version,
        .installed = fs->installed,
        .source = "the platform",
        .force = job->force,
        .allow_downgrade = job->allow_downgrade,
        .eligible = true,
        .is_staged = update_staged_in,
        .is_staged_user = fs->ctx->cfg,
    };
    update_verdict verdict;
    error_code rc = update_decide(&facts, &verdict, err);
    if (rc == ERR_OK && !update_verdict_fetches(verdict)) {
        job->action = update_action_of(verdict);
        *skip = true;
    }
    return rc;
}

/* Stages the finished download (update_stage_download), with this job's options. */
static MUST_CHECK error_code stage_download(update_job *job, const download_result *dl, const char *signer_cert_sha256,
                                            intake_result *staged, error_info *err)
{
    update_stage_options options = {job->allow_downgrade, job->force, signer_cert_sha256};
    error_code rc = update_stage_download(job->fs->ctx->cfg, job->fs->s, dl, &options, staged, err);
    if (rc == ERR_OK)
        job->action = staged->already_staged ? UPDATE_ACTION_ALREADY_STAGED : UPDATE_ACTION_STAGED;
    return rc;
}

/* Prints update's outcome; mirror (the mirror's part, or NULL) is taken over. */
static MUST_CHECK error_code print_update(const update_job *job, const intake_result *staged, int64_t resumed_from,
                                          cJSON *mirror, error_info *err)
{
    const fetch_session *fs = job->fs;
    if (want_json(fs))
        return print_report(fs, mirror, job->action, staged->path ? staged->version : NULL, resumed_from, err);
    cJSON_Delete(mirror);
    if (command_quiet(fs->ctx))
        return ERR_OK;
    if (job->action == UPDATE_ACTION_UP_TO_DATE)
        printf("up to date: %s\n", fs->installed);
    else if (job->action == UPDATE_ACTION_NOT_ELIGIBLE)
        printf("not updated: %s is offered, but this machine is not in its rollout yet\n", fs->latest);
    else if (job->action == UPDATE_ACTION_ALREADY_STAGED)
        printf("already staged: %s\n", fs->latest);
    else
        printf("staged %s: %s (%" PRId64 " bytes, sha256 %s, signature %s)\n", staged->version, staged->path,
               staged->size, staged->sha256, staged->signature);
    return ERR_OK;
}

static MUST_CHECK error_code update_from_api(command_context *ctx, bool publishing, error_info *err)
{
    bool force = ctx->opts && ctx->opts->force;
    update_job job = {.force = force, .allow_downgrade = ctx->opts && ctx->opts->allow_downgrade};
    fetch_session fs;
    download_result dl;
    memset(&dl, 0, sizeof dl);
    intake_result staged;
    memset(&staged, 0, sizeof staged);
    job.fs = &fs;
    error_code rc = session_open(&fs, ctx, err);
    /* Before any byte is downloaded: the CA files verification will read. */
    if (rc == ERR_OK)
        rc = config_check_verify_files(&ctx->cfg->installer.verify, err);
    if (rc == ERR_OK && publishing) {
        /* The publishing host serves the fleet: its own installation is not the measure. */
        free(fs.installed);
        fs.installed = NULL;
    }
    if (rc == ERR_OK)
        rc = respect_retry_after(&fs, force, err);
    if (rc == ERR_OK) {
        download_request req = {
            .state_dir = ctx->cfg->state_dir,
            .platform = ctx->cfg->installer.platform,
            .max_bytes_per_second = ctx->cfg->installer.max_bytes_per_second,
            .progress = !command_quiet(fs.ctx) && platform_is_terminal(stderr),
            .accept = update_accept,
            .accept_user = &job,
        };
        int64_t t0 = platform_monotonic_ms();
        rc = download_run(fs.http, &req, &dl, err);
        if (rc == ERR_OK && !dl.skipped)
            log_info("downloaded %" PRId64 " bytes in %" PRId64 " ms", dl.size, platform_monotonic_ms() - t0);
        if (rc == ERR_OK && dl.resumed_from > 0)
            log_info("resumed from byte %" PRId64 "; %" PRId64 " bytes received in this run", dl.resumed_from,
                     dl.bytes_received);
    }
    if (rc == ERR_OK && !dl.skipped) {
        int64_t t0 = platform_monotonic_ms();
        rc = stage_download(&job, &dl, NULL, &staged, err);
        log_info("verified and staged in %" PRId64 " ms", platform_monotonic_ms() - t0);
    }
    /* Already staged: a run killed in the middle of staging it may have left
     * it not current yet, or older versions unpruned. */
    if (rc == ERR_OK && job.action == UPDATE_ACTION_ALREADY_STAGED && fs.latest)
        rc = staging_finish_commit(ctx->cfg, fs.s, fs.latest, err);
    rc = finish_session(&fs, rc, err);
    if (rc == ERR_OK && !publishing && !ctx->no_stdout)
        rc = print_update(&job, &staged, dl.resumed_from, NULL, err);
    else if (rc == ERR_OK && publishing && job.action == UPDATE_ACTION_STAGED)
        log_info("staged %s for publishing", staged.version);
    free(staged.path);
    download_result_free(&dl);
    session_close(&fs);
    return rc;
}

/* update with the mirror as the source: the same policy (update_decide),
 * with the rollout and the manifest's allow_downgrade; the file then goes
 * through the same staging. */
static MUST_CHECK error_code update_from_mirror(command_context *ctx, error_info *err)
{
    bool force = ctx->opts && ctx->opts->force;
    update_job job = {.force = force, .allow_downgrade = ctx->opts && ctx->opts->allow_downgrade};
    fetch_session fs;
    mirror_offer offer;
    memset(&offer, 0, sizeof offer);
    intake_result staged;
    memset(&staged, 0, sizeof staged);
    download_result dl;
    memset(&dl, 0, sizeof dl);
    char source[600];
    job.fs = &fs;
    error_code rc = mirror_session_open(&fs, ctx, err);
    /* Before any byte is downloaded: the CA files verification will read. */
    if (rc == ERR_OK)
        rc = config_check_verify_files(&ctx->cfg->installer.verify, err);
    if (rc == ERR_OK)
        rc = mirror_offer_get(&fs, &offer, err);
    update_verdict verdict = UPDATE_UP_TO_DATE;
    if (rc == ERR_OK) {
        snprintf(source, sizeof source, "mirror %s", offer.manifest_url);
        update_facts facts = {
            .offered = offer.m.version,
            .installed = fs.installed,
            .source = source,
            .force = force,
            .allow_downgrade = job.allow_downgrade,
            .source_allows_downgrade = offer.m.allow_downgrade,
            .eligible = offer.eligible,
            .is_staged = update_staged_in,
            .is_staged_user = ctx->cfg,
        };
        rc = update_decide(&facts, &verdict, err);
        job.allow_downgrade = job.allow_downgrade || offer.m.allow_downgrade;
        job.action = update_action_of(verdict);
    }
    bool fetch = rc == ERR_OK && update_verdict_fetches(verdict);
    if (fetch) {
        int64_t t0 = platform_monotonic_ms();
        rc = source_mirror_download(fs.http, ctx->cfg, &offer, !command_quiet(fs.ctx) && platform_is_terminal(stderr),
                                    &dl, err);
        if (rc == ERR_OK)
            log_info("downloaded %lld bytes from the mirror in %lld ms", (long long)offer.m.length,
                     (long long)(platform_monotonic_ms() - t0));
    }
    if (rc == ERR_OK && fetch) {
        /* the same staging as the API's download, with the signer the signed manifest names */
        rc = stage_download(&job, &dl, offer.m.signed_installer ? offer.m.signer_cert_sha256 : NULL, &staged, err);
        if (rc != ERR_OK)
            error_prefix(err, "mirror installer %s", offer.installer_url);
    }
    if (rc == ERR_REJECTED && fetch && err)
        source_mirror_record_refusal(fs.s, err->message);
    /* Staged already (a run stopped after staging it): what its download left is done with. */
    if (rc == ERR_OK && job.action == UPDATE_ACTION_ALREADY_STAGED)
        download_discard(ctx->cfg->state_dir, offer.m.version);
    if (rc == ERR_OK && job.action == UPDATE_ACTION_ALREADY_STAGED && fs.latest)
        rc = staging_finish_commit(ctx->cfg, fs.s, fs.latest, err);
    rc = finish_session(&fs, rc, err);
    /* run --json prints one document of its own */
    if (rc == ERR_OK && !ctx->no_stdout)
        rc = print_update(&job, &staged, dl.resumed_from, mirror_summary(&offer), err);
    free(staged.path);
    download_result_free(&dl);
    source_mirror_offer_free(&offer);
    session_close(&fs);
    return rc;
}

error_code command_update(command_context *ctx, error_info *err)
{
    if (use_mirror(ctx))
        return update_from_mirror(ctx, err);
    return update_from_api(ctx, false, err);
}

error_code command_update_for_publish(command_context *ctx, error_info *err)
{
    return update_from_api(ctx, true, err);
}
