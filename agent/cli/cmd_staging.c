/*
 * cmd_staging.c — `stage`, `deploy`, `rollback` and `bundle`: what happens to
 * an installer once it is on disk (PRODUCT.md sections 4.3-4.5). Each
 * command does its work through staging.c, deploy.c or bundle.c, then
 * refreshes the "installer" and "last_run" members of status.json.
 * last_run.errors[].stage names the command ("stage", "deploy", "rollback").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "installer/bundle.h"
#include "cli/commands.h"
#include "installer/deploy.h"
#include "core/log.h"
#include "platform/platform.h"
#include "installer/staging.h"
#include "core/state.h"
#include "report/status.h"
#include "core/timefmt.h"

static cJSON *last_run_object(int64_t started, const char *stage, error_code rc, const error_info *err)
{
    char started_at[TIMEFMT_ISO8601_SIZE], finished_at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(started, started_at);
    timefmt_iso8601(platform_time_utc_ms() / 1000, finished_at);
    cJSON *run = cJSON_CreateObject();
    cJSON_AddStringToObject(run, "started_at", started_at);
    cJSON_AddStringToObject(run, "finished_at", finished_at);
    cJSON_AddStringToObject(run, "result", rc == ERR_OK ? "ok" : "failed");
    cJSON_AddNumberToObject(run, "exit_code", error_exit_code(rc));
    cJSON *errors = cJSON_AddArrayToObject(run, "errors");
    if (rc != ERR_OK && errors) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "stage", stage);
        cJSON_AddStringToObject(e, "message", err->message[0] ? err->message : error_meaning(rc));
        cJSON_AddItemToArray(errors, e);
    }
    return run;
}

/* Refreshes status.json after a command; a failure here is a warning, never
 * a replacement for the command's own outcome. */
static void write_status(const config *cfg, state *s, int64_t started, const char *stage, error_code rc,
                         const error_info *err)
{
    status_parts parts = {0};
    error_info status_err;
    error_clear(&status_err);
    parts.last_run = last_run_object(started, stage, rc, err);
    if (s)
        staging_status_section(cfg, s, &parts.installer, &status_err);
    if (status_write(cfg, &parts, &status_err) != ERR_OK)
        log_warn("the status file was not updated: %s", status_err.message);
    cJSON_Delete(parts.last_run);
    cJSON_Delete(parts.installer);
}

static bool quiet(void)
{
    return log_get_level() < 0;
}

static void print_staged(const command_context *ctx, const staging_result *r)
{
    if (ctx->opts->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "version", r->version);
        cJSON_AddBoolToObject(o, "already_staged", r->already_staged);
        cJSON_AddStringToObject(o, "path", r->path ? r->path : "");
        cJSON_AddStringToObject(o, "file_name", r->file_name);
        cJSON_AddStringToObject(o, "sha256", r->sha256);
        cJSON_AddNumberToObject(o, "size", (double)r->size);
        cJSON_AddStringToObject(o, "signature", r->signature);
        cJSON_AddStringToObject(o, "signer", r->signer);
        char *text = cJSON_Print(o);
        if (text)
            printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(o);
        return;
    }
    if (quiet())
        return;
    if (r->already_staged)
        printf("%s is already staged: %s (unchanged)\n", r->version, r->path ? r->path : r->file_name);
    else
        printf("staged %s: %s (%lld bytes, sha256 %s, signature %s%s%s)\n", r->version, r->path ? r->path : "",
               (long long)r->size, r->sha256, r->signature, r->signer[0] ? ", signer " : "", r->signer);
}

error_code command_stage(command_context *ctx, error_info *err)
{
    int64_t started = platform_time_utc_ms() / 1000;
    const char *file = ctx->opts->file;
    state *s = NULL;
    error_code rc = state_load(ctx->cfg->state_dir, &s, err);
    if (rc != ERR_OK)
        return rc;
    const char *name = file;
    for (const char *p = file; *p; p++)
        if (*p == '/' || *p == '\\')
            name = p + 1;
    staging_candidate candidate = {
        .path = file,
        .take_ownership = false,
        .version = ctx->opts->version,
        .file_name = name,
        .source_url = file,
        .etag = NULL,
        .expected_length = -1,
        .sha256_hex = NULL,
        .allow_downgrade = ctx->opts->allow_downgrade,
        .force = ctx->opts->force,
    };
    staging_result result;
    rc = staging_stage(ctx->cfg, s, &candidate, &result, err);
    if (rc == ERR_OK)
        print_staged(ctx, &result);
    free(result.path);
    write_status(ctx->cfg, s, started, "stage", rc, err);
    state_free(s);
    return rc;
}

static error_code deploy_dry_run(command_context *ctx, error_info *err)
{
    char *version = NULL, *installer = NULL, **argv = NULL;
    error_code rc = staging_current(ctx->cfg, &version, NULL, &installer, err);
    if (rc == ERR_NOT_FOUND)
        rc = error_set(err, ERR_NOT_FOUND, "nothing is staged; run outpost update first");
    if (rc == ERR_OK)
        rc = deploy_build_argv(&ctx->cfg->deploy, installer, &argv, err);
    if (rc == ERR_OK) {
        char *line = deploy_format_argv(argv);
        if (!line)
            rc = error_set(err, ERR_NOMEM, "out of memory");
        else if (ctx->opts->json)
            printf("{\"version\": \"%s\", \"dry_run\": true}\n%s\n", version, line);
        else
            printf("would run (deploy of %s, timeout %lld s): %s\n", version, (long long)ctx->cfg->deploy.timeout_s,
                   line);
        free(line);
    }
    deploy_free_argv(argv);
    free(version);
    free(installer);
    return rc;
}

error_code command_deploy(command_context *ctx, error_info *err)
{
    if (ctx->opts->dry_run)
        return deploy_dry_run(ctx, err);
    int64_t started = platform_time_utc_ms() / 1000;
    state *s = NULL;
    error_code rc = state_load(ctx->cfg->state_dir, &s, err);
    if (rc != ERR_OK)
        return rc;
    deploy_outcome out;
    rc = deploy_run(ctx->cfg, s, &out, err);
    if (rc == ERR_OK && !quiet())
        printf("deployed %s (exit code %d%s; installed version %s)\n", out.version, out.exit_code,
               out.reboot_required ? ", reboot required" : "",
               strcmp(out.verified, "yes") == 0 ? "verified" : "not verifiable: no installed-version source");
    write_status(ctx->cfg, s, started, "deploy", rc, err);
    state_free(s);
    return rc;
}

error_code command_rollback(command_context *ctx, error_info *err)
{
    int64_t started = platform_time_utc_ms() / 1000;
    state *s = NULL;
    error_code rc = state_load(ctx->cfg->state_dir, &s, err);
    if (rc != ERR_OK)
        return rc;
    char *from = NULL, *to = NULL;
    rc = staging_rollback(ctx->cfg, s, &from, &to, err);
    if (rc == ERR_OK && !quiet())
        printf("rolled back: %s is current again (was %s)\n", to, from);
    write_status(ctx->cfg, s, started, "rollback", rc, err);
    free(from);
    free(to);
    state_free(s);
    return rc;
}

error_code command_bundle(command_context *ctx, error_info *err)
{
    bundle_format format;
    error_code rc = bundle_parse_format(ctx->opts->format, &format, err);
    if (rc != ERR_OK)
        return rc;
    char *written = NULL;
    rc = bundle_write(ctx->cfg, format, ctx->opts->output, &written, err);
    if (rc == ERR_OK && !quiet())
        printf("%s\n", written);
    free(written);
    return rc;
}
