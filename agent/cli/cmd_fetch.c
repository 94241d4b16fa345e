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
    fs->update_available = !fs->installed || version_compare(latest, fs->installed) > 0;
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

/* The members check and update both print with --json. */
static cJSON *summary_object(const fetch_session *fs)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddItemToObject(o, "installed_version",
                          fs->installed ? cJSON_CreateString(fs->installed) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "latest_version", fs->latest ? cJSON_CreateString(fs->latest) : cJSON_CreateNull());
    cJSON_AddBoolToObject(o, "update_available", fs->update_available);
    cJSON_AddStringToObject(o, "checked_at", fs->checked_at);
    return o;
}

/* ---- check ------------------------------------------------------------------------------ */

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

static void add_mirror_summary(cJSON *o, const mirror_offer *offer)
{
    if (!o)
        return;
    cJSON_AddStringToObject(o, "source", "mirror");
    if (!offer->manifest_url)
        return;
    cJSON *m = cJSON_AddObjectToObject(o, "mirror");
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
            cJSON *o = summary_object(&fs);
            add_mirror_summary(o, &offer);
            command_print_json(o);
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
            command_print_json(summary_object(&fs));
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

typedef enum {
    UPDATE_STAGED,
    UPDATE_UP_TO_DATE,
    UPDATE_ALREADY_STAGED,
    UPDATE_NOT_ELIGIBLE /* mirror: this machine is outside the version's rollout */
} update_outcome;

typedef struct update_job {
    fetch_session *fs;
    bool force;
    bool allow_downgrade;
    update_outcome outcome;
} update_job;

/* The policy, decided on the answer's headers before any body byte is kept. */
static MUST_CHECK error_code update_accept(void *user, const download_offer *offer, bool *skip, error_info *err)
{
    update_job *job = user;
    fetch_session *fs = job->fs;
    record_latest(fs, offer->version);
    int order = fs->installed ? version_compare(offer->version, fs->installed) : 1;
    if (order < 0 && !job->allow_downgrade)
        return error_set(err, ERR_REJECTED,
                         "the platform offers %s, older than the installed %s; refusing the downgrade (use update "
                         "--allow-downgrade to accept it)",
                         offer->version, fs->installed);
    if (order == 0 && !job->force) {
        job->outcome = UPDATE_UP_TO_DATE;
        *skip = true;
        return ERR_OK;
    }
    if (!job->force && staging_has_verified(fs->ctx->cfg, offer->version)) {
        job->outcome = UPDATE_ALREADY_STAGED;
        *skip = true;
    }
    return ERR_OK;
}

static MUST_CHECK error_code stage_download(update_job *job, const download_result *dl, intake_result *staged,
                                            error_info *err)
{
    fetch_session *fs = job->fs;
    intake_candidate candidate = {
        .path = dl->path,
        .take_ownership = true,
        .version = dl->version,
        .file_name = dl->file_name,
        .source_url = dl->url,
        .etag = dl->etag,
        .expected_length = dl->total_length,
        .sha256_hex = dl->sha256,
        .pe_digest = dl->have_pe_digest ? &dl->pe_digest : NULL,
        .allow_downgrade = job->allow_downgrade,
        .force = job->force,
    };
    error_code rc = intake_stage(fs->ctx->cfg, fs->s, &candidate, staged, err);
    /* Staged (moved away) or rejected (must not be resumed): either way
     * the partial and its sidecar are done with. A disk-full failure keeps
     * them: the file itself is fine and staging can be retried. */
    if (rc != ERR_DISK_FULL)
        download_discard(fs->ctx->cfg->state_dir, dl->version);
    if (rc == ERR_OK)
        job->outcome = staged->already_staged ? UPDATE_ALREADY_STAGED : UPDATE_STAGED;
    return rc;
}

static void print_update(const update_job *job, const intake_result *staged, const download_result *dl)
{
    const fetch_session *fs = job->fs;
    if (want_json(fs)) {
        cJSON *o = summary_object(fs);
        static const char *const names[] = {"staged", "up_to_date", "already_staged", "not_eligible"};
        cJSON_AddStringToObject(o, "action", names[job->outcome]);
        if (job->outcome == UPDATE_STAGED && staged->path) {
            cJSON *st = cJSON_AddObjectToObject(o, "staged");
            cJSON_AddStringToObject(st, "version", staged->version);
            cJSON_AddStringToObject(st, "path", staged->path);
            cJSON_AddStringToObject(st, "file_name", staged->file_name);
            cJSON_AddStringToObject(st, "sha256", staged->sha256);
            cJSON_AddNumberToObject(st, "size", (double)staged->size);
            cJSON_AddStringToObject(st, "signature", staged->signature);
            if (staged->signer[0])
                cJSON_AddStringToObject(st, "signer", staged->signer);
            else
                cJSON_AddNullToObject(st, "signer");
            cJSON_AddNumberToObject(st, "resumed_from", (double)dl->resumed_from);
        }
        command_print_json(o);
        return;
    }
    if (command_quiet(fs->ctx))
        return;
    if (job->outcome == UPDATE_UP_TO_DATE)
        printf("up to date: %s\n", fs->installed);
    else if (job->outcome == UPDATE_NOT_ELIGIBLE)
        printf("not updated: %s is offered, but this machine is not in its rollout yet\n", fs->latest);
    else if (job->outcome == UPDATE_ALREADY_STAGED)
        printf("already staged: %s\n", fs->latest);
    else
        printf("staged %s: %s (%" PRId64 " bytes, sha256 %s, signature %s)\n", staged->version, staged->path,
               staged->size, staged->sha256, staged->signature);
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
        rc = stage_download(&job, &dl, &staged, err);
        log_info("verified and staged in %" PRId64 " ms", platform_monotonic_ms() - t0);
    }
    /* Already staged: a run killed in the middle of staging it may have left
     * it not current yet, or older versions unpruned. */
    if (rc == ERR_OK && job.outcome == UPDATE_ALREADY_STAGED && fs.latest)
        rc = staging_finish_commit(ctx->cfg, fs.s, fs.latest, err);
    rc = finish_session(&fs, rc, err);
    if (rc == ERR_OK && !publishing && !ctx->no_stdout)
        print_update(&job, &staged, &dl);
    else if (rc == ERR_OK && publishing && job.outcome == UPDATE_STAGED)
        log_info("staged %s for publishing", staged.version);
    free(staged.path);
    download_result_free(&dl);
    session_close(&fs);
    return rc;
}

/* update with the mirror as the source: the same policy as update_accept,
 * plus the rollout; the file then goes through the same staging. */
static MUST_CHECK error_code update_from_mirror(command_context *ctx, error_info *err)
{
    bool force = ctx->opts && ctx->opts->force;
    update_job job = {.force = force, .allow_downgrade = ctx->opts && ctx->opts->allow_downgrade};
    fetch_session fs;
    mirror_offer offer;
    memset(&offer, 0, sizeof offer);
    intake_result staged;
    memset(&staged, 0, sizeof staged);
    download_result none;
    memset(&none, 0, sizeof none);
    char *path = NULL;
    job.fs = &fs;
    error_code rc = mirror_session_open(&fs, ctx, err);
    /* Before any byte is downloaded: the CA files verification will read. */
    if (rc == ERR_OK)
        rc = config_check_verify_files(&ctx->cfg->installer.verify, err);
    if (rc == ERR_OK)
        rc = mirror_offer_get(&fs, &offer, err);
    bool fetch = false;
    if (rc == ERR_OK) {
        const manifest *m = &offer.m;
        job.allow_downgrade = job.allow_downgrade || m->allow_downgrade;
        int order = fs.installed ? version_compare(m->version, fs.installed) : 1;
        if (order < 0 && !job.allow_downgrade)
            rc = error_set(err, ERR_REJECTED,
                           "mirror %s offers %s, older than the installed %s, without allow_downgrade; refusing the "
                           "downgrade (use update --allow-downgrade to accept it)",
                           offer.manifest_url, m->version, fs.installed);
        else if (order == 0 && !force)
            job.outcome = UPDATE_UP_TO_DATE;
        else if (!offer.eligible && !force)
            job.outcome = UPDATE_NOT_ELIGIBLE;
        else if (!force && staging_has_verified(ctx->cfg, m->version))
            job.outcome = UPDATE_ALREADY_STAGED;
        else
            fetch = true;
    }
    if (rc == ERR_OK && fetch) {
        int64_t t0 = platform_monotonic_ms();
        rc = source_mirror_download(fs.http, ctx->cfg, &offer, !command_quiet(fs.ctx) && platform_is_terminal(stderr),
                                    &none, err);
        path = none.path;
        none.path = NULL;
        if (rc == ERR_OK)
            log_info("downloaded %lld bytes from the mirror in %lld ms", (long long)offer.m.length,
                     (long long)(platform_monotonic_ms() - t0));
    }
    if (rc == ERR_OK && fetch) {
        intake_candidate candidate = {
            .path = path,
            .take_ownership = true,
            .version = offer.m.version,
            .file_name = offer.m.file_name,
            .source_url = offer.installer_url,
            .expected_length = offer.m.length,
            .sha256_hex = offer.m.sha256,
            .pe_digest = none.have_pe_digest ? &none.pe_digest : NULL,
            .allow_downgrade = job.allow_downgrade,
            .force = force,
            .expected_signer_sha256 = offer.m.signed_installer ? offer.m.signer_cert_sha256 : NULL,
        };
        rc = intake_stage(ctx->cfg, fs.s, &candidate, &staged, err);
        if (rc != ERR_OK && err)
            error_prefix(err, "mirror installer %s", offer.installer_url);
        else
            job.outcome = staged.already_staged ? UPDATE_ALREADY_STAGED : UPDATE_STAGED;
        if (rc != ERR_DISK_FULL)
            download_discard(ctx->cfg->state_dir, offer.m.version); /* as stage_download */
    }
    if (rc == ERR_REJECTED && fetch && err)
        source_mirror_record_refusal(fs.s, err->message);
    /* Staged already (a run stopped after staging it): what its download left is done with. */
    if (rc == ERR_OK && job.outcome == UPDATE_ALREADY_STAGED)
        download_discard(ctx->cfg->state_dir, offer.m.version);
    if (rc == ERR_OK && job.outcome == UPDATE_ALREADY_STAGED && fs.latest)
        rc = staging_finish_commit(ctx->cfg, fs.s, fs.latest, err);
    rc = finish_session(&fs, rc, err);
    if (rc == ERR_OK && ctx->no_stdout) {
        /* run --json prints one document of its own */
    } else if (rc == ERR_OK && want_json(&fs)) {
        /* print_update's JSON, with the mirror's part */
        cJSON *o = summary_object(&fs);
        static const char *const names[] = {"staged", "up_to_date", "already_staged", "not_eligible"};
        cJSON_AddStringToObject(o, "action", names[job.outcome]);
        add_mirror_summary(o, &offer);
        if (job.outcome == UPDATE_STAGED && staged.path) {
            cJSON *st = cJSON_AddObjectToObject(o, "staged");
            cJSON_AddStringToObject(st, "version", staged.version);
            cJSON_AddStringToObject(st, "path", staged.path);
            cJSON_AddStringToObject(st, "file_name", staged.file_name);
            cJSON_AddStringToObject(st, "sha256", staged.sha256);
            cJSON_AddNumberToObject(st, "size", (double)staged.size);
            cJSON_AddStringToObject(st, "signature", staged.signature);
        }
        command_print_json(o);
    } else if (rc == ERR_OK) {
        print_update(&job, &staged, &none);
    }
    free(path);
    free(staged.path);
    download_result_free(&none);
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
