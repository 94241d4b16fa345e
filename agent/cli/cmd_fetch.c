/*
 * cmd_fetch.c — `check` and `update` (PRODUCT.md sections 4.1-4.2), and
 * the update `publish` starts with: the request made from the command line,
 * one call of the installer's flow (update_run, installer/update.h), and
 * what it learned and did printed. The flow decides, downloads, stages and
 * records; this file makes the client it asks for (command_http, so a run
 * reads the API key once) and writes the status file it hands over
 * (report/status.h: installer/ does not include report/).
 *
 * check exits 0 up to date, 10 update available (UPDATE_EXIT_AVAILABLE).
 */
#include "cli/commands.h"

#include <inttypes.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/log.h"
#include "installer/update.h"
#include "installer/version.h"
#include "platform/platform.h"
#include "report/status.h"

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
    error_code rc = s ? update_status_parts(ctx->cfg, s, &parts.installer, &parts.deploy, err) : ERR_OK;
    if (rc == ERR_OK)
        rc = status_write(ctx->cfg, &parts, err);
    cJSON_Delete(parts.installer);
    cJSON_Delete(parts.deploy);
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
        .scheduled = from_run, /* installer.defer_on holds back `run` only */
        .hooks = {fetch_transport, fetch_write_status, ctx},
    };
    return req;
}

/* check's line: update available, not in this rollout, or up to date. */
static void say_check(const update_request *req, const update_outcome *out)
{
    const char *installed = out->installed;
    if (out->update_available && out->policy_reason[0])
        printf("%s; installed %s\n", out->policy_reason, installed ? installed : "(none)");
    else if (out->update_available && !out->eligible)
        printf("not in this rollout: %s is offered to %g%% of machines, not yet to this one; installed %s\n",
               out->latest, out->offer.m.rollout_percent, installed ? installed : "(none)");
    else if (out->update_available)
        printf("update available: %s -> %s\n", installed ? installed : "(none installed)", out->latest);
    else if (req->source == UPDATE_SOURCE_API && version_compare(out->latest, installed) < 0)
        printf("up to date: %s (the platform offers the older %s)\n", installed, out->latest);
    else
        printf("up to date: %s\n", installed);
}

/* update's line: what it did. */
static void say_update(const update_outcome *out)
{
    const intake_result *staged = &out->staged;
    if (out->action == UPDATE_ACTION_UP_TO_DATE)
        printf("up to date: %s\n", out->installed);
    else if (out->action == UPDATE_ACTION_NOT_ELIGIBLE)
        printf("not updated: %s is offered, but this machine is not in its rollout yet\n", out->latest);
    else if (out->action == UPDATE_ACTION_ALREADY_STAGED)
        printf("already staged: %s\n", out->latest);
    else if (out->action == UPDATE_ACTION_NOT_TAKEN || out->action == UPDATE_ACTION_DEFERRED ||
             out->action == UPDATE_ACTION_HELD)
        printf("%s\n", out->policy_reason);
    else
        printf("staged %s: %s (%" PRId64 " bytes, sha256 %s, signature %s)\n", staged->version, staged->path,
               staged->size, staged->sha256, staged->signature);
}

/* What check or update learned and did: one JSON document with --json, one line otherwise (none at -q). */
static MUST_CHECK error_code print_outcome(const command_context *ctx, const update_request *req,
                                           const update_outcome *out, error_info *err)
{
    if (ctx->opts && ctx->opts->json) {
        cJSON *doc = NULL;
        error_code rc = update_outcome_json(ctx->cfg, req, out, &doc, err);
        if (rc == ERR_OK)
            command_print_json(doc);
        return rc;
    }
    if (command_quiet(ctx))
        return ERR_OK;
    if (req->fetch)
        say_update(out);
    else
        say_check(req, out);
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
        rc = print_outcome(ctx, &req, &out, err);
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
        rc = print_outcome(ctx, &req, &out, err);
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
