/*
 * commands.h — the entry points of outpost's commands.
 *
 * main.c parses the command line, loads the configuration, takes the
 * single-instance lock for commands that write under state_dir, and calls
 * one of these. A command returns ERR_OK when it did its job (and may set
 * ctx->exit_code for an outcome that is not an error, such as `check`'s 10),
 * or an error code with *err filled for main.c to print once.
 *
 *   check, update:      agent/cli/cmd_fetch.c
 *   stage, deploy, rollback, bundle: agent/cli/cmd_staging.c
 *   report:             agent/cli/cmd_report.c
 *   run, status:        agent/cli/cmd_run.c
 */
#ifndef OUTPOST_COMMANDS_H
#define OUTPOST_COMMANDS_H

#include "cli/cli.h"
#include "core/config.h"
#include "base/error.h"
#include "net/http.h"

typedef struct command_context {
    const cli_options *opts;   /* parsed command line */
    config *cfg;               /* validated configuration; state_dir already overridden */
    int exit_code;             /* exit status when the command returns ERR_OK (default 0) */
    http_client *http;         /* the run's API client, made by command_http on first use;
                                  freed (http_client_free) by whoever made the context */
} command_context;

/*
 * The run's API client: made on first use (base_url checked, API key read
 * and wiped once the client holds it) and shared by every part of a run, so
 * `run` exchanges the key for one access token, not one per part.
 * *http is borrowed from ctx.
 */
error_code command_http(command_context *ctx, http_client **http, error_info *err);

/* Exit code of `check` when a newer installer is available. */
#define COMMAND_EXIT_UPDATE_AVAILABLE 10

error_code command_check(command_context *ctx, error_info *err);
error_code command_update(command_context *ctx, error_info *err);
error_code command_stage(command_context *ctx, error_info *err);
error_code command_deploy(command_context *ctx, error_info *err);
error_code command_rollback(command_context *ctx, error_info *err);
error_code command_bundle(command_context *ctx, error_info *err);
error_code command_report(command_context *ctx, error_info *err);
error_code command_run(command_context *ctx, error_info *err);
error_code command_status(command_context *ctx, error_info *err);

#endif
