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
 * `status` prints status.json: a readable summary, or the file as is with
 * --json.
 */
#include "cli/commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/clock.h"
#include "core/log.h"
#include "report/metrics.h"
#include "platform/platform.h"
#include "installer/staging.h"
#include "core/state.h"
#include "report/status.h"
#include "core/timefmt.h"

typedef struct run_outcome {
    cJSON *errors;       /* last_run.errors */
    int exit_code;       /* most serious so far */
    int parts;           /* parts attempted */
    int failed;          /* parts that failed */
    bool reboot_exit;    /* a deploy asked for a reboot, with deploy.pass_reboot_code */
} run_outcome;

static void record(run_outcome *o, const char *stage, error_code code, const char *message)
{
    o->failed++;
    o->exit_code = error_worse_exit(o->exit_code, error_exit_code(code));
    log_error("run: %s: %s", stage, message[0] ? message : error_meaning(code));
    cJSON *e = cJSON_CreateObject();
    if (!e || !cJSON_AddStringToObject(e, "stage", stage) || !cJSON_AddStringToObject(e, "message", message) ||
        !cJSON_AddItemToArray(o->errors, e))
        cJSON_Delete(e);
}

/* Runs one part with a context of its own, capturing its failure. */
static void run_part(command_context *ctx, run_outcome *o, const char *stage,
                     error_code (*part)(command_context *, error_info *))
{
    /* The parts share the run's API client (one token per run). */
    command_context sub = {.opts = ctx->opts, .cfg = ctx->cfg, .exit_code = 0, .http = ctx->http};
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

/* A string member of state section/name/member, copied into buf ("" if none). */
static void state_string(const config *cfg, const char *section, const char *object, const char *name, char *buf,
                         size_t size)
{
    buf[0] = '\0';
    state *s = NULL;
    error_info err;
    if (state_load(cfg->state_dir, &s, &err) != ERR_OK)
        return;
    cJSON *sec = state_section(s, section);
    cJSON *holder = object ? cJSON_GetObjectItemCaseSensitive(sec, object) : sec;
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(holder, name);
    if (cJSON_IsString(value))
        snprintf(buf, size, "%s", value->valuestring);
    state_free(s);
}

/* Whether an earlier run was told not to call before a time still ahead. */
static bool retry_after_active(const config *cfg, char *until, size_t size)
{
    state_string(cfg, "run", NULL, "retry_after_until", until, size);
    int64_t t;
    return until[0] && timefmt_parse_iso8601(until, &t) && t * 1000 > platform_time_utc_ms();
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
    char deployed[128];
    state_string(cfg, "installer", "deployed", "version", deployed, sizeof deployed);
    bool wanted = strcmp(staged, deployed) != 0;
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

static cJSON *last_run_object(const char *started_at, const run_outcome *o)
{
    char now[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, now);
    const char *result = o->failed == 0 ? "ok" : o->failed >= o->parts ? "failed" : "partial";
    cJSON *run = cJSON_CreateObject();
    if (!run || !cJSON_AddStringToObject(run, "started_at", started_at) ||
        !cJSON_AddStringToObject(run, "finished_at", now) || !cJSON_AddStringToObject(run, "result", result) ||
        !cJSON_AddNumberToObject(run, "exit_code", o->exit_code)) {
        cJSON_Delete(run);
        return NULL;
    }
    cJSON_AddItemReferenceToObject(run, "errors", o->errors);
    return run;
}

/* Writes last_run and the installer member, then the metrics file. */
static void write_status(command_context *ctx, const char *started_at, run_outcome *o)
{
    status_parts parts = {.last_run = last_run_object(started_at, o)};
    state *s = NULL;
    error_info err;
    if (state_load(ctx->cfg->state_dir, &s, &err) == ERR_OK &&
        staging_status_section(ctx->cfg, s, &parts.installer, &err) != ERR_OK) {
        log_warn("run: cannot describe the installer in the status file: %s", err.message);
        parts.installer = NULL;
    }
    state_free(s);
    if (!parts.last_run || status_write(ctx->cfg, &parts, &err) != ERR_OK) {
        if (!parts.last_run)
            error_set(&err, ERR_NOMEM, "out of memory");
        record(o, "run", err.code, err.message);
    }
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
    write_status(ctx, started_at, &o);
    cJSON_Delete(o.errors);
    ctx->exit_code = o.exit_code;
    return ERR_OK;
}

/* ---- status ---------------------------------------------------------------- */

static const char *str(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

#define OR_NONE(s) ((s) ? (s) : "none")

static void print_installer(FILE *out, const cJSON *inst)
{
    if (!cJSON_IsObject(inst)) {
        fprintf(out, "Installer:  not checked yet\n");
        return;
    }
    const cJSON *staged = cJSON_GetObjectItemCaseSensitive(inst, "staged");
    const cJSON *deployed = cJSON_GetObjectItemCaseSensitive(inst, "deployed");
    fprintf(out, "Installer:  installed %s, latest %s%s (checked %s)\n", OR_NONE(str(inst, "installed_version")),
            OR_NONE(str(inst, "latest_version")),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(inst, "update_available")) ? ", update available" : "",
            OR_NONE(str(inst, "checked_at")));
    if (cJSON_IsObject(staged))
        fprintf(out, "            staged %s (%s, signature %s)\n", OR_NONE(str(staged, "version")),
                OR_NONE(str(staged, "file_name")), OR_NONE(str(staged, "signature")));
    if (cJSON_IsObject(deployed))
        fprintf(out, "            deployed %s at %s, exit code %.0f\n", OR_NONE(str(deployed, "version")),
                OR_NONE(str(deployed, "at")), num(deployed, "exit_code"));
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
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(run, "errors")) {
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
    cJSON_ArrayForEach(h, hosts) {
        if (shown++ == 0)
            fprintf(out, "Top hosts:\n");
        if (shown > 10)
            break;
        fprintf(out, "  %-32s %4.0f incidents, last %s, max risk %g\n", OR_NONE(str(h, "hostname")),
                num(h, "incidents"), OR_NONE(str(h, "last_incident_at")), num(h, "max_risk_score"));
    }
}

error_code command_status(command_context *ctx, error_info *err)
{
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
    if (ctx->opts && ctx->opts->json) {
        fwrite(text, 1, len, stdout);
        if (len && text[len - 1] != '\n')
            fputc('\n', stdout);
        free(text);
        return ERR_OK;
    }
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return error_set(err, ERR_IO, "the status file is not valid JSON; the next run replaces it");
    }
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(doc, "agent");
    printf("outpost %s on %s, status written %s\n", OR_NONE(str(agent, "version")), OR_NONE(str(agent, "hostname")),
           OR_NONE(str(doc, "generated_at")));
    print_installer(stdout, cJSON_GetObjectItemCaseSensitive(doc, "installer"));
    print_last_run(stdout, cJSON_GetObjectItemCaseSensitive(doc, "last_run"));
    print_incidents(stdout, cJSON_GetObjectItemCaseSensitive(doc, "incidents"));
    cJSON_Delete(doc);
    return ERR_OK;
}
