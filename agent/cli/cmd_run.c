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
#include "installer/policy.h"
#include "installer/update.h"
#include "core/state.h"
#include "report/inventory.h"
#include "report/status.h"
#include "core/timefmt.h"

typedef struct run_outcome {
    char finished_at[TIMEFMT_ISO8601_SIZE]; /* set once the parts are done */
    cJSON *errors;                          /* last_run.errors */
    int exit_code;                          /* most serious so far */
    int parts;                              /* parts attempted */
    int failed;                             /* parts that failed */
    bool reboot_exit;                       /* a deploy asked for a reboot, with deploy.pass_reboot_code */
    cJSON *previous;                        /* the status file's last_run before this run; may be NULL */
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

/* Whether an earlier run was told not to call the platform before a time
 * still ahead (update_respect_retry_after, the one check of it): then
 * neither part runs, and why is in *why. */
static bool retry_after_active(const config *cfg, error_info *why)
{
    state *s = NULL;
    error_info err;
    if (state_load(cfg->state_dir, &s, &err) != ERR_OK)
        return false;
    bool active = update_respect_retry_after(s, "update and report skipped", why) != ERR_OK;
    state_free(s);
    return active;
}

/* The deploy, when the fleet policy says now (installer/policy.h: something
 * to deploy, inside a maintenance window, not deferred); otherwise why not
 * is said on stderr and recorded for the status file. */
static void deploy_part(command_context *ctx, run_outcome *o)
{
    policy_deploy gate;
    error_info err;
    if (policy_deploy_gate(ctx->cfg, NULL, &gate, &err) != ERR_OK) {
        o->parts++;
        record(o, "deploy", err.code, err.message);
    } else if (gate.verdict == POLICY_DEPLOY_NOW) {
        run_part(ctx, o, "deploy", command_deploy);
    } else if (gate.verdict != POLICY_DEPLOY_NOTHING) {
        log_warn("run: %s", gate.message);
    }
}

/* The start jitter; on a terminal a person sees the wait (and not at -q). */
static void jitter(const command_context *ctx)
{
    const config *cfg = ctx->cfg;
    if (cfg->jitter_s <= 0)
        return;
    int64_t ms = clock_random_upto(NULL, cfg->jitter_s * 1000);
    log_info("run: waiting %" PRId64 " ms of start jitter", ms);
    bool show = platform_is_terminal(stderr) && !command_quiet(ctx);
    if (show)
        fprintf(stderr, "outpost: run: waiting %" PRId64 " s of start jitter (schedule.jitter %" PRId64 " s)\n",
                (ms + 999) / 1000, cfg->jitter_s);
    platform_sleep_ms(ms);
}

static MUST_CHECK error_code last_run_object(const char *started_at, const run_outcome *o, cJSON **out, error_info *err)
{
    /* last_success_at and failing_since carry on from the previous file. */
    status_run run = {.started_at = started_at,
                      .finished_at = o->finished_at,
                      .result = o->failed == 0          ? "ok"
                                : o->failed >= o->parts ? "failed"
                                                        : "partial",
                      .exit_code = o->exit_code,
                      .errors = o->errors,
                      .previous = o->previous};
    return status_last_run(&run, out, err);
}

/* The values Windows inventory reads (HKLM\SOFTWARE\outpost), after every
 * run; nothing to do elsewhere. A failure is a warning, never the run's. */
static void write_inventory(const config *cfg, const cJSON *doc)
{
    status_limits limits = {.max_age_s = cfg->status.max_age_s,
                            .max_age_from = "status.max_age",
                            .max_failing_s = cfg->status.max_failing_s};
    char boot_id[128];
    platform_boot_id(boot_id, sizeof boot_id);
    status_verdict v;
    status_judge(doc, NULL, &limits, platform_time_utc_ms() / 1000, boot_id, &v);
    platform_inventory_value values[INVENTORY_VALUES];
    inventory_values(doc, &v, values);
    error_info err;
    if (platform_inventory_write(values, INVENTORY_VALUES, &err) != ERR_OK)
        log_warn("run: %s", err.message);
}

/* Writes last_run and the installer member, then the inventory values and
 * the metrics file. */
static void write_status(command_context *ctx, const char *started_at, run_outcome *o)
{
    status_parts parts = {0};
    error_info built;
    error_code rc = last_run_object(started_at, o, &parts.last_run, &built);
    state *s = NULL;
    error_info err;
    if (state_load(ctx->cfg->state_dir, &s, &err) == ERR_OK &&
        update_status_parts(ctx->cfg, s, &parts.installer, &parts.deploy, &err) != ERR_OK)
        log_warn("run: cannot describe the installer in the status file: %s", err.message);
    state_free(s);
    if (rc != ERR_OK)
        record(o, "run", built.code, built.message);
    else if (status_write(ctx->cfg, &parts, &err) != ERR_OK) {
        record(o, "run", err.code, err.message);
        /* So that `status` does not show the previous outcome as current. */
        status_note_unrecorded(ctx->cfg, o->finished_at, o->exit_code, err.message);
    }
    cJSON_Delete(parts.last_run);
    cJSON_Delete(parts.installer);
    cJSON_Delete(parts.deploy);
    cJSON *doc = NULL;
    if (status_read(ctx->cfg, &doc, &err) != ERR_OK)
        return;
    write_inventory(ctx->cfg, doc);
    http_stats stats = {0};
    if (ctx->http)
        http_client_stats(ctx->http, &stats);
    char *path = ctx->cfg->report.metrics_file ? config_state_path(ctx->cfg, ctx->cfg->report.metrics_file) : NULL;
    if (path && metrics_write(path, doc, stats.responses_429, ctx->cfg->report.readers_group, &err) != ERR_OK)
        log_warn("run: %s", err.message);
    cJSON_Delete(doc);
    free(path);
}

/* The previous status file's last_run (detached; the caller's), or NULL. */
static cJSON *previous_last_run(const config *cfg)
{
    cJSON *doc = NULL;
    error_info ignored;
    if (status_read(cfg, &doc, &ignored) != ERR_OK)
        return NULL;
    cJSON *run = cJSON_DetachItemFromObjectCaseSensitive(doc, "last_run");
    cJSON_Delete(doc);
    return run;
}

/*
 * Temporary failures (75) are retried by the schedule, but not for ever:
 * once they have lasted longer than status.max_failing the run exits 1, so
 * that systemd (SuccessExitStatus=75) and Task Scheduler show a failure.
 */
static void give_up_waiting(const config *cfg, const char *started_at, run_outcome *o)
{
    if (o->exit_code != 75)
        return;
    cJSON *last = NULL;
    error_info built;
    int64_t since_s = 0, now_s = platform_time_utc_ms() / 1000;
    const cJSON *since = NULL;
    if (last_run_object(started_at, o, &last, &built) == ERR_OK)
        since = cJSON_GetObjectItemCaseSensitive(last, "failing_since");
    if (cJSON_IsString(since) && timefmt_parse_iso8601(since->valuestring, &since_s) &&
        now_s - since_s > cfg->status.max_failing_s) {
        char message[200], limit[32];
        status_age_text(cfg->status.max_failing_s, limit, sizeof limit);
        snprintf(message, sizeof message,
                 "failing since %s, longer than status.max_failing (%s): the temporary failures above need a person",
                 since->valuestring, limit);
        record(o, "run", ERR_NETWORK, message);
    }
    cJSON_Delete(last);
}

error_code command_run(command_context *ctx, error_info *err)
{
    char started_at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, started_at);
    run_outcome o = {.errors = cJSON_CreateArray(), .previous = previous_last_run(ctx->cfg)};
    if (!o.errors) {
        cJSON_Delete(o.previous);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    error_info why;
    if (retry_after_active(ctx->cfg, &why)) {
        o.parts++;
        record(&o, "run", why.code, why.message);
    } else {
        jitter(ctx);
        /* Only the enabled parts: a part that is off needs nothing (no CA,
         * no download, no key) and cannot fail the run. */
        if (ctx->cfg->installer.enabled) {
            run_part(ctx, &o, "update", command_update);
            deploy_part(ctx, &o);
        }
        if (ctx->cfg->report.enabled)
            run_part(ctx, &o, "report", command_report);
    }
    give_up_waiting(ctx->cfg, started_at, &o);
    /* A failure outranks the pending reboot; otherwise SCCM/Intune read 3010. */
    if (o.exit_code == 0 && o.reboot_exit)
        o.exit_code = COMMAND_EXIT_REBOOT;
    timefmt_iso8601(platform_time_utc_ms() / 1000, o.finished_at);
    write_status(ctx, started_at, &o);
    if (ctx->opts && ctx->opts->json) {
        /* The one document `run --json` prints: its last_run. */
        cJSON *last = NULL;
        error_info built;
        if (last_run_object(started_at, &o, &last, &built) != ERR_OK)
            record(&o, "run", built.code, built.message);
        else if (!command_print_json(last))
            record(&o, "run", ERR_NOMEM, "out of memory while printing last_run");
    }
    cJSON_Delete(o.errors);
    cJSON_Delete(o.previous);
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
    const cJSON *mirror = cJSON_GetObjectItemCaseSensitive(inst, "mirror");
    if (str(mirror, "trust_reset_at"))
        fprintf(out, "            mirror trust reset at %s\n", str(mirror, "trust_reset_at"));
    if (cJSON_IsObject(last)) {
        fprintf(out, "            last command: %s at %s, exit code %.0f%s%s\n", OR_NONE(str(last, "command")),
                OR_NONE(str(last, "at")), num(last, "exit_code"), str(last, "error") ? ": " : "",
                str(last, "error") ? str(last, "error") : "");
    }
}

/* status.json's "deploy" (installer/policy.h): the policy, then what it
 * holds back now and why, in the words `run` used. */
static void print_deploy(FILE *out, const cJSON *dep)
{
    if (!cJSON_IsObject(dep))
        return;
    const cJSON *deferred = cJSON_GetObjectItemCaseSensitive(dep, "deferred");
    const cJSON *not_taken = cJSON_GetObjectItemCaseSensitive(dep, "not_taken");
    const char *state_name = OR_NONE(str(dep, "state"));
    fprintf(out, "Deploy:     %s", state_name);
    if (str(dep, "since"))
        fprintf(out, " since %s", str(dep, "since"));
    if (str(dep, "waiting_until"))
        fprintf(out, ", the next maintenance window begins %s", str(dep, "waiting_until"));
    if (cJSON_IsObject(deferred))
        fprintf(out, "; deferred: %s (%s)",
                strcmp(OR_NONE(str(deferred, "reason")), "metered") == 0 ? "metered connection" : "battery power",
                OR_NONE(str(deferred, "detail")));
    fprintf(out, "\n");
    int n = 0;
    const cJSON *w;
    cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(dep, "windows"))
    {
        fprintf(out, "%s%s",
                n++ ? ", " : "            windows (local time): ", cJSON_IsString(w) ? w->valuestring : "");
    }
    if (n)
        fprintf(out, "\n");
    if (str(dep, "target_version_prefix"))
        fprintf(out, "            target_version_prefix %s\n", str(dep, "target_version_prefix"));
    if (cJSON_IsObject(not_taken))
        fprintf(out, "            %s (at %s)\n", OR_NONE(str(not_taken, "reason")), OR_NONE(str(not_taken, "at")));
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

/* The document `status --json` prints when no run has written one yet:
 * the identity and the verdict, so a compliance script always parses one. */
static cJSON *no_status_document(void)
{
    char now[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, now);
    cJSON *doc = cJSON_CreateObject();
    if (doc &&
        (!cJSON_AddNumberToObject(doc, "schema_version", STATUS_SCHEMA_VERSION) ||
         !cJSON_AddStringToObject(doc, "generated_at", now) || !jsonx_set(doc, "agent", status_agent_object()))) {
        cJSON_Delete(doc);
        doc = NULL;
    }
    return doc;
}

error_code command_status(command_context *ctx, error_info *err)
{
    status_limits limits = {.max_age_s = ctx->cfg->status.max_age_s,
                            .max_age_from = "status.max_age",
                            .max_failing_s = ctx->cfg->status.max_failing_s};
    if (ctx->opts && ctx->opts->max_age) {
        if (config_parse_duration(ctx->opts->max_age, &limits.max_age_s, err) != ERR_OK) {
            err->code = ERR_USAGE;
            return error_prefix(err, "--max-age");
        }
        limits.max_age_from = "--max-age";
    }
    cJSON *doc = NULL;
    error_code rc = status_read(ctx->cfg, &doc, err);
    if (rc == ERR_IO && err->os_error == 0) {
        /* Not JSON: a verdict all the same (the next run replaces it). */
        log_warn("%s; the next run replaces it", err->message);
        error_clear(err);
        rc = ERR_NOT_FOUND;
    }
    if (rc == ERR_NOT_FOUND) {
        error_clear(err);
        doc = NULL;
    } else if (rc != ERR_OK) {
        return error_prefix(err, "cannot read the status file");
    }
    cJSON *unrecorded = status_read_unrecorded(ctx->cfg);
    char boot_id[128];
    platform_boot_id(boot_id, sizeof boot_id);
    status_verdict v;
    status_judge(doc, unrecorded, &limits, platform_time_utc_ms() / 1000, boot_id, &v);
    cJSON_Delete(unrecorded);
    ctx->exit_code = v.exit_code;
    bool missing = !doc;
    if (missing)
        doc = no_status_document();
    if (!doc)
        return error_set(err, ERR_NOMEM, "out of memory");
    if (ctx->opts && ctx->opts->json) {
        /* The file as it is, plus the verdict this command judged. */
        if (!jsonx_set(doc, "verdict", status_verdict_object(&v))) {
            cJSON_Delete(doc);
            return error_set(err, ERR_NOMEM, "out of memory");
        }
        return command_print_json(doc) ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
    }
    printf("%s\n", v.text);
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(doc, "agent");
    printf("outpost %s on %s, ", OR_NONE(str(agent, "version")), OR_NONE(str(agent, "hostname")));
    if (missing) {
        char *path = config_state_path(ctx->cfg, ctx->cfg->report.status_file);
        printf("no status file yet (%s)\n", path ? path : ctx->cfg->report.status_file);
        free(path);
    } else {
        printf("status written %s\n", OR_NONE(str(doc, "generated_at")));
    }
    print_last_run(stdout, cJSON_GetObjectItemCaseSensitive(doc, "last_run"));
    print_installer(stdout, cJSON_GetObjectItemCaseSensitive(doc, "installer"));
    print_deploy(stdout, cJSON_GetObjectItemCaseSensitive(doc, "deploy"));
    print_incidents(stdout, cJSON_GetObjectItemCaseSensitive(doc, "incidents"));
    cJSON_Delete(doc);
    return ERR_OK;
}
