/*
 * cmd_run.c — `run`, what the scheduled task calls, and `status`.
 *
 * `run` composes the installer pipeline and the report: it honours a
 * Retry-After recorded by an earlier run, waits a random start jitter,
 * runs update (+ deploy), then report, each part's failure captured in
 * last_run.errors without stopping the other, and exits with the most
 * serious outcome (4, 3, 1, 75, 0). It prints each part's error itself, one
 * line each, and returns ERR_OK with ctx->exit_code set, so main.c prints
 * nothing more.
 *
 * `status` prints status.json: a verdict line first (`OK ...` or
 * `ATTENTION: ...` naming what needs a person), then a readable summary; or
 * the file as is with --json. It exits with the last run's exit code (75
 * when no run has finished yet, or with --max-age when the last run is
 * older), so a compliance or detection script needs nothing else.
 */
#include "cli/commands.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "report/metrics.h"
#include "platform/platform.h"
#include "installer/installer_state.h"
#include "installer/source_mirror.h"
#include "installer/staging.h"
#include "mirror/root.h"
#include "core/state.h"
#include "report/status.h"
#include "core/timefmt.h"
#include "net/retry_after.h"

typedef struct run_outcome {
    char finished_at[TIMEFMT_ISO8601_SIZE]; /* set once the parts are done */
    cJSON *errors;                          /* last_run.errors */
    int exit_code;                          /* most serious so far */
    int parts;                              /* parts attempted */
    int failed;                             /* parts that failed */
    bool reboot_exit;                       /* a deploy asked for a reboot, with deploy.pass_reboot_code */
} run_outcome;

static void record(run_outcome *o, const char *stage, error_code code, const char *message)
{
    o->failed++;
    o->exit_code = error_worse_exit(o->exit_code, error_exit_code(code));
    log_error("run: %s: %s", stage, message[0] ? message : error_meaning(code));
    error_info err;
    if (status_run_error(o->errors, stage, message, &err) != ERR_OK) {
        log_error("run: %s", err.message);
        o->exit_code = error_worse_exit(o->exit_code, error_exit_code(err.code));
    }
}

/* Runs one part with a context of its own, capturing its failure. */
static void run_part(command_context *ctx, run_outcome *o, const char *stage,
                     error_code (*part)(command_context *, error_info *))
{
    /* The parts share the run's API client (one token per run). */
    command_context sub = {.opts = ctx->opts,
                           .cfg = ctx->cfg,
                           .exit_code = 0,
                           .http = ctx->http,
                           .no_stdout = ctx->opts && ctx->opts->json};
    error_info err;
    error_clear(&err);
    o->parts++;
    error_code rc = part(&sub, &err);
    ctx->http = sub.http;
    if (rc != ERR_OK)
        record(o, stage, rc, err.message);
    else if (sub.exit_code == COMMAND_EXIT_REBOOT)
        o->reboot_exit = true;
}

/* Whether an earlier run was told not to call before a time still ahead. */
static bool retry_after_active(const config *cfg, char *until, size_t size)
{
    until[0] = '\0';
    state *s = NULL;
    error_info err;
    if (state_load(cfg->state_dir, &s, &err) != ERR_OK)
        return false;
    bool active = retry_after_pending(s, platform_time_utc_ms(), until, size);
    state_free(s);
    return active;
}

/* Deploy when enabled and the current staged version is not the deployed one. */
static bool deploy_wanted(const config *cfg)
{
    if (!cfg->deploy.enabled)
        return false;
    char *staged = NULL;
    error_info err;
    if (staging_current_version(cfg, &staged, &err) != ERR_OK || !staged)
        return false;
    state *s = NULL;
    bool wanted = true;
    if (state_load(cfg->state_dir, &s, &err) == ERR_OK) {
        const char *deployed = installer_state_deployed_version(s);
        wanted = !deployed || strcmp(staged, deployed) != 0;
    }
    state_free(s);
    free(staged);
    return wanted;
}

/* The start jitter; on a terminal a person sees the wait (and not at -q). */
static void jitter(const command_context *ctx)
{
    const config *cfg = ctx->cfg;
    if (cfg->jitter_s <= 0)
        return;
    int64_t ms = clock_random_upto(NULL, cfg->jitter_s * 1000);
    log_info("run: waiting %" PRId64 " ms of start jitter", ms);
    bool show = platform_is_terminal(stderr) && (!ctx->opts || ctx->opts->verbosity >= 0);
    if (show)
        fprintf(stderr, "outpost: run: waiting %" PRId64 " s of start jitter (schedule.jitter %" PRId64 " s)\n",
                (ms + 999) / 1000, cfg->jitter_s);
    platform_sleep_ms(ms);
}

static MUST_CHECK error_code last_run_object(const char *started_at, const run_outcome *o, cJSON **out, error_info *err)
{
    status_run run = {.started_at = started_at,
                      .finished_at = o->finished_at,
                      .result = o->failed == 0          ? "ok"
                                : o->failed >= o->parts ? "failed"
                                                        : "partial",
                      .exit_code = o->exit_code,
                      .errors = o->errors};
    return status_last_run(&run, out, err);
}

/* Writes last_run and the installer member, then the metrics file. */
static void write_status(command_context *ctx, const char *started_at, run_outcome *o)
{
    status_parts parts = {0};
    error_info built;
    error_code rc = last_run_object(started_at, o, &parts.last_run, &built);
    state *s = NULL;
    error_info err;
    if (state_load(ctx->cfg->state_dir, &s, &err) == ERR_OK &&
        staging_status_section(ctx->cfg, s, &parts.installer, &err) != ERR_OK) {
        log_warn("run: cannot describe the installer in the status file: %s", err.message);
        parts.installer = NULL;
    }
    if (s)
        source_status_annotate(ctx->cfg, s, parts.installer);
    state_free(s);
    if (rc != ERR_OK)
        record(o, "run", built.code, built.message);
    else if (status_write(ctx->cfg, &parts, &err) != ERR_OK)
        record(o, "run", err.code, err.message);
    cJSON_Delete(parts.last_run);
    cJSON_Delete(parts.installer);
    if (!ctx->cfg->report.metrics_file)
        return;
    cJSON *doc = NULL;
    http_stats stats = {0};
    if (ctx->http)
        http_client_stats(ctx->http, &stats);
    char *path = config_state_path(ctx->cfg, ctx->cfg->report.metrics_file);
    if (path && status_read(ctx->cfg, &doc, &err) == ERR_OK &&
        metrics_write(path, doc, stats.responses_429, &err) != ERR_OK)
        log_warn("run: %s", err.message);
    cJSON_Delete(doc);
    free(path);
}

error_code command_run(command_context *ctx, error_info *err)
{
    char started_at[TIMEFMT_ISO8601_SIZE], until[TIMEFMT_ISO8601_SIZE + 16];
    timefmt_iso8601(platform_time_utc_ms() / 1000, started_at);
    run_outcome o = {.errors = cJSON_CreateArray()};
    if (!o.errors)
        return error_set(err, ERR_NOMEM, "out of memory");
    if (retry_after_active(ctx->cfg, until, sizeof until)) {
        char message[160];
        snprintf(message, sizeof message,
                 "the platform asked not to be called before %s (Retry-After); update and report skipped", until);
        o.parts++;
        record(&o, "run", ERR_TEMPORARY, message);
    } else {
        jitter(ctx);
        /* Only the enabled parts: a part that is off needs nothing (no CA,
         * no download, no key) and cannot fail the run. */
        if (ctx->cfg->installer.enabled) {
            run_part(ctx, &o, "update", command_update);
            if (deploy_wanted(ctx->cfg))
                run_part(ctx, &o, "deploy", command_deploy);
        }
        if (ctx->cfg->report.enabled)
            run_part(ctx, &o, "report", command_report);
    }
    /* A failure outranks the pending reboot; otherwise SCCM/Intune read 3010. */
    if (o.exit_code == 0 && o.reboot_exit)
        o.exit_code = COMMAND_EXIT_REBOOT;
    timefmt_iso8601(platform_time_utc_ms() / 1000, o.finished_at);
    write_status(ctx, started_at, &o);
    if (ctx->opts && ctx->opts->json) {
        /* The one document `run --json` prints: its last_run. */
        cJSON *last = NULL;
        error_info built;
        char *text = last_run_object(started_at, &o, &last, &built) == ERR_OK ? cJSON_Print(last) : NULL;
        if (text)
            printf("%s\n", text);
        else
            record(&o, "run", last ? ERR_NOMEM : built.code,
                   last ? "out of memory while printing last_run" : built.message);
        cJSON_free(text);
        cJSON_Delete(last);
    }
    cJSON_Delete(o.errors);
    ctx->exit_code = o.exit_code;
    /* Task Scheduler has no terminal: a failed run also reaches the event log. */
    log_run_event(o.exit_code, o.parts, o.failed);
    return ERR_OK;
}

/* ---- status ---------------------------------------------------------------- */

/* Short for the printing below; status.json is outpost's own file: lenient. */
static const char *str(const cJSON *obj, const char *name)
{
    return jsonx_string(NULL, obj, name);
}

static double num(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

#define OR_NONE(s) ((s) ? (s) : "none")

/* Whether the deploy recorded in deployed still waits for a reboot: it asked
 * for one and the machine has not restarted since (same boot id). */
static bool reboot_pending(const cJSON *deployed)
{
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(deployed, "reboot_required")))
        return false;
    const char *then = str(deployed, "boot_id");
    char now[128];
    platform_boot_id(now, sizeof now);
    return !then || !then[0] || !now[0] || strcmp(then, now) == 0;
}

static void print_installer(FILE *out, const cJSON *inst)
{
    if (!cJSON_IsObject(inst)) {
        fprintf(out, "Installer:  not checked yet\n");
        return;
    }
    const cJSON *staged = cJSON_GetObjectItemCaseSensitive(inst, "staged");
    const cJSON *deployed = cJSON_GetObjectItemCaseSensitive(inst, "deployed");
    const cJSON *failure = cJSON_GetObjectItemCaseSensitive(inst, "deploy_failure");
    const cJSON *last = cJSON_GetObjectItemCaseSensitive(inst, "last_command");
    fprintf(out, "Installer:  installed %s, latest %s%s (checked %s)\n", OR_NONE(str(inst, "installed_version")),
            OR_NONE(str(inst, "latest_version")),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(inst, "update_available")) ? ", update available" : "",
            OR_NONE(str(inst, "checked_at")));
    if (cJSON_IsObject(staged))
        fprintf(out, "            staged %s (%s, signature %s)\n", OR_NONE(str(staged, "version")),
                OR_NONE(str(staged, "file_name")), OR_NONE(str(staged, "signature")));
    if (cJSON_IsObject(deployed))
        fprintf(out, "            deployed %s at %s, exit code %.0f%s\n", OR_NONE(str(deployed, "version")),
                OR_NONE(str(deployed, "at")), num(deployed, "exit_code"),
                reboot_pending(deployed)                                                      ? ", REBOOT REQUIRED"
                : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(deployed, "reboot_required")) ? ", rebooted since"
                                                                                              : "");
    if (cJSON_IsObject(failure)) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(failure, "exit_code");
        fprintf(out, "            DEPLOY FAILED: %s at %s, ", OR_NONE(str(failure, "version")),
                OR_NONE(str(failure, "at")));
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(failure, "timed_out")))
            fprintf(out, "timed out");
        else if (cJSON_IsNumber(code))
            fprintf(out, "exit code %.0f", code->valuedouble);
        else
            fprintf(out, "did not run");
        fprintf(out, "%s%s\n", str(failure, "log") ? "; log " : "", str(failure, "log") ? str(failure, "log") : "");
        fprintf(out, "            %s\n", OR_NONE(str(failure, "message")));
    }
    if (cJSON_IsObject(last)) {
        fprintf(out, "            last command: %s at %s, exit code %.0f%s%s\n", OR_NONE(str(last, "command")),
                OR_NONE(str(last, "at")), num(last, "exit_code"), str(last, "error") ? ": " : "",
                str(last, "error") ? str(last, "error") : "");
    }
}

static void print_last_run(FILE *out, const cJSON *run)
{
    if (!cJSON_IsObject(run)) {
        fprintf(out, "Last run:   none yet\n");
        return;
    }
    fprintf(out, "Last run:   %s, %s to %s, exit code %.0f\n", OR_NONE(str(run, "result")),
            OR_NONE(str(run, "started_at")), OR_NONE(str(run, "finished_at")), num(run, "exit_code"));
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(run, "errors"))
    {
        fprintf(out, "            error in %s: %s\n", OR_NONE(str(e, "stage")), OR_NONE(str(e, "message")));
    }
}

static void print_incidents(FILE *out, const cJSON *inc)
{
    if (!cJSON_IsObject(inc)) {
        fprintf(out, "Incidents:  not reported yet\n");
        return;
    }
    fprintf(out, "Incidents:  polled %s, cursor %s\n", OR_NONE(str(inc, "polled_at")), OR_NONE(str(inc, "cursor")));
    fprintf(out, "            last report: %.0f new (%.0f traced, %.0f untraceable), %.0f failed, %.0f API calls\n",
            num(inc, "new"), num(inc, "traced"), num(inc, "untraceable"), num(inc, "failed"), num(inc, "api_calls"));
    fprintf(out, "            %d incidents kept in the status file\n",
            cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(inc, "items")));
    const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(inc, "hosts");
    int shown = 0;
    const cJSON *h;
    cJSON_ArrayForEach(h, hosts)
    {
        if (shown++ == 0)
            fprintf(out, "Top hosts:\n");
        if (shown > 10)
            break;
        fprintf(out, "  %-32s %4.0f incidents, last %s, max risk %g\n", OR_NONE(str(h, "hostname")),
                num(h, "incidents"), OR_NONE(str(h, "last_incident_at")), num(h, "max_risk_score"));
    }
}

/* ---- The verdict ------------------------------------------------------------ */

typedef struct verdict {
    char text[2048]; /* "OK ..." or "ATTENTION: a; b" */
    bool attention;
    int exit_code; /* what `status` exits with */
} verdict;

static void attention(verdict *v, const char *fmt, ...) OUTPOST_PRINTF(2, 3);

static void attention(verdict *v, const char *fmt, ...)
{
    size_t n = strlen(v->text);
    if (n + 3 >= sizeof v->text)
        return;
    n += (size_t)snprintf(v->text + n, sizeof v->text - n, "%s", v->attention ? "; " : "ATTENTION: ");
    v->attention = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->text + n, sizeof v->text - n, fmt, ap);
    va_end(ap);
}

/* "2h 5m" from seconds, for a person. */
static void age_text(int64_t s, char *buf, size_t size)
{
    if (s >= 2 * 86400)
        snprintf(buf, size, "%" PRId64 "d %" PRId64 "h", s / 86400, s % 86400 / 3600);
    else if (s >= 3600)
        snprintf(buf, size, "%" PRId64 "h %" PRId64 "m", s / 3600, s % 3600 / 60);
    else if (s >= 60)
        snprintf(buf, size, "%" PRId64 "m %" PRId64 "s", s / 60, s % 60);
    else
        snprintf(buf, size, "%" PRId64 "s", s);
}

/*
 * What needs a person, from the status document: no scheduled run yet, a
 * failed run, a failed deploy, a pending reboot, a run older than max_age_s
 * (< 0: not asked). The exit code: 75 when stale (or no run yet), else the
 * last run's.
 */
static void judge(const cJSON *doc, int64_t max_age_s, int64_t now_s, verdict *v)
{
    memset(v, 0, sizeof *v);
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(doc, "last_run");
    const cJSON *inst = cJSON_GetObjectItemCaseSensitive(doc, "installer");
    const cJSON *failure = cJSON_GetObjectItemCaseSensitive(inst, "deploy_failure");
    const cJSON *deployed = cJSON_GetObjectItemCaseSensitive(inst, "deployed");
    int64_t finished = 0;
    bool have_run =
        cJSON_IsObject(run) && str(run, "finished_at") && timefmt_parse_iso8601(str(run, "finished_at"), &finished);
    int run_exit = have_run ? (int)num(run, "exit_code") : 0;
    v->exit_code = have_run ? run_exit : 75;
    if (!have_run) {
        attention(v, "no scheduled run has finished yet (outpost run)");
    } else if (run_exit != 0 && run_exit != COMMAND_EXIT_REBOOT) {
        const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(run, "errors"), 0);
        attention(v, "the last run failed (exit code %d)%s%s%s%s", run_exit, first ? ": " : "",
                  first ? OR_NONE(str(first, "stage")) : "", first ? ": " : "",
                  first ? OR_NONE(str(first, "message")) : "");
    }
    if (cJSON_IsObject(failure))
        attention(v, "the deploy of %s failed%s%s", OR_NONE(str(failure, "version")),
                  str(failure, "log") ? ", see " : "", str(failure, "log") ? str(failure, "log") : "");
    if (cJSON_IsObject(deployed) && reboot_pending(deployed))
        attention(v, "reboot required to finish the deploy of %s", OR_NONE(str(deployed, "version")));
    /* The mirror root's expiry is a cliff a person must see coming (PRODUCT.md 8.1). */
    const cJSON *mirror_root =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(inst, "mirror"), "root");
    int64_t root_expires = 0;
    if (str(mirror_root, "expires_at") && timefmt_parse_iso8601(str(mirror_root, "expires_at"), &root_expires)) {
        if (now_s >= root_expires)
            attention(v, "mirror root expired at %s: no update is installed until a new root is published",
                      str(mirror_root, "expires_at"));
        else if (root_expires - now_s <= ROOT_WARN_S)
            attention(v, "mirror root expires at %s: its key holders must sign and publish the next version",
                      str(mirror_root, "expires_at"));
    }
    if (have_run && max_age_s >= 0 && now_s - finished > max_age_s) {
        char age[32], limit[32];
        age_text(now_s - finished, age, sizeof age);
        age_text(max_age_s, limit, sizeof limit);
        attention(v, "stale: the last run finished %s ago, longer than --max-age %s", age, limit);
        v->exit_code = 75;
    } else if (!have_run && max_age_s >= 0) {
        v->exit_code = 75;
    }
    if (v->attention)
        return;
    const char *installed = str(inst, "installed_version");
    const cJSON *incidents = cJSON_GetObjectItemCaseSensitive(doc, "incidents");
    char age[32];
    age_text(now_s - finished > 0 ? now_s - finished : 0, age, sizeof age);
    int n = snprintf(v->text, sizeof v->text, "OK: the last run succeeded %s ago (%s)", age,
                     OR_NONE(str(run, "finished_at")));
    if (installed && n > 0 && (size_t)n < sizeof v->text)
        n += snprintf(v->text + n, sizeof v->text - (size_t)n, "; installer %s installed", installed);
    if (cJSON_IsObject(incidents) && n > 0 && (size_t)n < sizeof v->text)
        snprintf(v->text + n, sizeof v->text - (size_t)n, "; %.0f new incidents in the last report",
                 num(incidents, "new"));
}

error_code command_status(command_context *ctx, error_info *err)
{
    int64_t max_age_s = -1;
    if (ctx->opts && ctx->opts->max_age && config_parse_duration(ctx->opts->max_age, &max_age_s, err) != ERR_OK) {
        err->code = ERR_USAGE;
        return error_prefix(err, "--max-age");
    }
    char *path = config_state_path(ctx->cfg, ctx->cfg->report.status_file);
    if (!path)
        return error_set(err, ERR_NOMEM, "out of memory");
    char *text = NULL;
    size_t len = 0;
    error_code rc = platform_read_file(path, STATUS_MAX_BYTES, &text, &len, err);
    if (rc == ERR_NOT_FOUND)
        error_set(err, ERR_NOT_FOUND, "no status file yet (%s): run `outpost run` or `outpost report` first", path);
    else if (rc != ERR_OK)
        error_prefix(err, "cannot read the status file %s", path);
    free(path);
    if (rc != ERR_OK)
        return rc;
    cJSON *doc = cJSON_ParseWithLength(text, len);
    if (!cJSON_IsObject(doc)) {
        free(text);
        cJSON_Delete(doc);
        return error_set(err, ERR_IO, "the status file is not valid JSON; the next run replaces it");
    }
    verdict v;
    judge(doc, max_age_s, platform_time_utc_ms() / 1000, &v);
    ctx->exit_code = v.exit_code;
    if (ctx->opts && ctx->opts->json) {
        fwrite(text, 1, len, stdout);
        if (len && text[len - 1] != '\n')
            fputc('\n', stdout);
        free(text);
        cJSON_Delete(doc);
        return ERR_OK;
    }
    free(text);
    printf("%s\n", v.text);
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(doc, "agent");
    printf("outpost %s on %s, status written %s\n", OR_NONE(str(agent, "version")), OR_NONE(str(agent, "hostname")),
           OR_NONE(str(doc, "generated_at")));
    print_last_run(stdout, cJSON_GetObjectItemCaseSensitive(doc, "last_run"));
    print_installer(stdout, cJSON_GetObjectItemCaseSensitive(doc, "installer"));
    print_incidents(stdout, cJSON_GetObjectItemCaseSensitive(doc, "incidents"));
    cJSON_Delete(doc);
    return ERR_OK;
}
