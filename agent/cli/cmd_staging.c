/*
 * cmd_staging.c — `stage`, `deploy`, `rollback` and `bundle`: what happens to
 * an installer once it is on disk (PRODUCT.md sections 4.3-4.5). Each
 * command does its work through staging.c, deploy.c or bundle.c, then
 * refreshes the "installer" member of status.json, whose last_command
 * records its outcome (last_run is the scheduled run's, never theirs).
 * With --json each prints one JSON document on stdout and nothing else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "installer/bundle.h"
#include "cli/commands.h"
#include "core/jsonx.h"
#include "installer/deploy.h"
#include "core/log.h"
#include "platform/platform.h"
#include "installer/intake.h"
#include "installer/staging.h"
#include "installer/update.h"
#include "core/state.h"
#include "report/status.h"
#include "core/timefmt.h"

/* Refreshes status.json's "installer" after a command (its outcome in
 * installer.last_command, never last_run: that is the scheduled run's); a
 * failure here is a warning, never a replacement for the command's own
 * outcome. */
static void write_status(const command_context *ctx, state *s, error_code rc, int exit_code, const error_info *err)
{
    if (!s)
        return;
    status_parts parts = {0};
    error_info status_err;
    error_clear(&status_err);
    command_record_outcome(ctx, s, rc, exit_code, err);
    if (state_save(s, &status_err) != ERR_OK ||
        update_status_parts(ctx->cfg, s, &parts.installer, &parts.deploy, &status_err) != ERR_OK ||
        status_write(ctx->cfg, &parts, &status_err) != ERR_OK)
        log_warn("the status file was not updated: %s", status_err.message);
    cJSON_Delete(parts.installer);
    cJSON_Delete(parts.deploy);
}

/* --json: status.json's staged object of the version (staging_status_of) and already_staged. */
static MUST_CHECK error_code print_staged(const command_context *ctx, const intake_result *r, error_info *err)
{
    if (ctx->opts->json) {
        cJSON *o = NULL;
        error_code rc = staging_status_of(ctx->cfg, r->version, &o, err);
        if (rc == ERR_OK && !cJSON_AddBoolToObject(o, "already_staged", r->already_staged))
            rc = error_set(err, ERR_NOMEM, "out of memory");
        if (rc == ERR_OK)
            command_print_json(o);
        else
            cJSON_Delete(o);
        return rc;
    }
    if (command_quiet(ctx))
        return ERR_OK;
    if (r->already_staged)
        printf("%s is already staged: %s (unchanged)\n", r->version, r->path ? r->path : r->file_name);
    else
        printf("staged %s: %s (%lld bytes, sha256 %s, signature %s%s%s)\n", r->version, r->path ? r->path : "",
               (long long)r->size, r->sha256, r->signature, r->signer[0] ? ", signer " : "", r->signer);
    return ERR_OK;
}

error_code command_stage(command_context *ctx, error_info *err)
{
    const char *file = ctx->opts->file;
    state *s = NULL;
    error_code rc = state_load(ctx->cfg->state_dir, &s, err);
    if (rc != ERR_OK)
        return rc;
    const char *name = file;
    for (const char *p = file; *p; p++)
        if (*p == '/' || *p == '\\')
            name = p + 1;
    intake_candidate candidate = {
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
    intake_result result;
    memset(&result, 0, sizeof result);
    if (platform_path_stat(file, NULL) == PLATFORM_PATH_NONE)
        rc = error_set(err, ERR_USAGE, "cannot stage %s: it does not exist", file);
    if (rc == ERR_OK)
        rc = config_check_verify_files(&ctx->cfg->installer.verify, err);
    if (rc == ERR_OK)
        rc = intake_stage(ctx->cfg, s, &candidate, &result, err);
    if (rc == ERR_OK)
        rc = print_staged(ctx, &result, err);
    free(result.path);
    write_status(ctx, s, rc, 0, err);
    state_free(s);
    return rc;
}

static MUST_CHECK error_code deploy_dry_run(command_context *ctx, error_info *err)
{
    char *version = NULL, *installer = NULL, **argv = NULL, *log = NULL;
    staging_manifest current;
    error_code rc = staging_current(ctx->cfg, &version, &current, &installer, err);
    if (rc == ERR_NOT_FOUND)
        rc = error_set(err, ERR_NOT_FOUND, "nothing is staged; run outpost update first");
    if (rc == ERR_OK && !(log = deploy_log_path(ctx->cfg, version, platform_time_utc_ms() / 1000)))
        rc = error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK) {
        deploy_target target = {.installer = installer, .log = log, .msi = staging_manifest_is_msi(&current)};
        rc = deploy_build_argv(&ctx->cfg->deploy, &target, &argv, NULL, err);
    }
    char *line = rc == ERR_OK ? deploy_format_argv(argv) : NULL;
    if (rc == ERR_OK && !line)
        rc = error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK && ctx->opts->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "version", version);
        cJSON_AddBoolToObject(o, "dry_run", true);
        cJSON *args = cJSON_AddArrayToObject(o, "argv");
        for (char **a = argv; args && *a; a++)
            cJSON_AddItemToArray(args, cJSON_CreateString(*a));
        cJSON_AddStringToObject(o, "command_line", line);
        cJSON_AddStringToObject(o, "log", log);
        cJSON_AddNumberToObject(o, "timeout_s", (double)ctx->cfg->deploy.timeout_s);
        command_print_json(o);
    } else if (rc == ERR_OK) {
        printf("would run (deploy of %s, timeout %lld s): %s\n", version, (long long)ctx->cfg->deploy.timeout_s, line);
    }
    free(line);
    deploy_free_argv(argv);
    staging_manifest_free(&current);
    free(log);
    free(version);
    free(installer);
    return rc;
}

/* `deploy --json`'s document for what ran (also rollback --deploy's "deployed"). */
static cJSON *deployed_json(const deploy_outcome *out)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "version", out->version);
    cJSON_AddNumberToObject(o, "exit_code", out->exit_code);
    cJSON_AddBoolToObject(o, "reboot_required", out->reboot_required);
    cJSON_AddStringToObject(o, "verified", out->verified);
    jsonx_add_string_or_null(o, "installed_version", out->installed_after[0] ? out->installed_after : NULL);
    cJSON_AddStringToObject(o, "log", out->log);
    return o;
}

static void print_deployed(const command_context *ctx, const deploy_outcome *out)
{
    bool verified = strcmp(out->verified, "yes") == 0;
    if (ctx->opts->json) {
        command_print_json(deployed_json(out));
        return;
    }
    if (command_quiet(ctx))
        return;
    printf("deployed %s (exit code %d%s; installed version %s); log %s\n", out->version, out->exit_code,
           out->reboot_required ? ", reboot required" : "",
           verified ? "verified" : "not verifiable: no installed-version source", out->log);
}

error_code command_deploy(command_context *ctx, error_info *err)
{
    if (ctx->opts->dry_run)
        return deploy_dry_run(ctx, err);
    state *s = NULL;
    error_code rc = state_load(ctx->cfg->state_dir, &s, err);
    if (rc != ERR_OK)
        return rc;
    deploy_outcome out;
    rc = deploy_run(ctx->cfg, s, &out, err);
    if (rc == ERR_OK) {
        if (!ctx->no_stdout)
            print_deployed(ctx, &out);
        /* SCCM and Intune learn of the pending reboot from the exit code. */
        if (out.reboot_required && ctx->cfg->deploy.pass_reboot_code)
            ctx->exit_code = COMMAND_EXIT_REBOOT;
    }
    write_status(ctx, s, rc, ctx->exit_code, err);
    state_free(s);
    return rc;
}

/*
 * rollback [--deploy]: the previous verified version becomes current; with
 * --deploy it also runs, through deploy_run, which checks the staged
 * folder's owners and hashes the file again, held open, right before it
 * runs (PRODUCT.md section 11).
 */
error_code command_rollback(command_context *ctx, error_info *err)
{
    state *s = NULL;
    error_code rc = state_load(ctx->cfg->state_dir, &s, err);
    if (rc != ERR_OK)
        return rc;
    char *from = NULL, *to = NULL;
    rc = staging_rollback(ctx->cfg, s, &from, &to, err);
    deploy_outcome out;
    bool deployed = false;
    if (rc == ERR_OK && ctx->opts->deploy) {
        if (!ctx->opts->json && !command_quiet(ctx))
            printf("rolled back: %s is current again (was %s); deploying it\n", to, from);
        rc = deploy_run(ctx->cfg, s, &out, err);
        deployed = rc == ERR_OK;
        if (deployed && out.reboot_required && ctx->cfg->deploy.pass_reboot_code)
            ctx->exit_code = COMMAND_EXIT_REBOOT;
    }
    if (rc == ERR_OK && ctx->opts->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "current", to);
        cJSON_AddStringToObject(o, "previous", from);
        if (deployed)
            jsonx_set(o, "deployed", deployed_json(&out));
        command_print_json(o);
    } else if (deployed) {
        print_deployed(ctx, &out);
    } else if (rc == ERR_OK && !command_quiet(ctx)) {
        printf("rolled back: %s is current again (was %s)\n", to, from);
    }
    write_status(ctx, s, rc, ctx->exit_code, err);
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
    if (rc == ERR_OK && ctx->opts->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", written);
        cJSON_AddStringToObject(o, "format", format == BUNDLE_ZIP ? "zip" : "tar.gz");
        command_print_json(o);
    } else if (rc == ERR_OK && !command_quiet(ctx)) {
        printf("%s\n", written);
    }
    free(written);
    return rc;
}
