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
 *   service:            agent/cli/cmd_service.c
 *   keygen, publish, mirror verify: agent/cli/cmd_mirror.c
 *   root:               agent/cli/cmd_root.c
 *   version:            agent/cli/cmd_version.c
 */
#ifndef OUTPOST_COMMANDS_H
#define OUTPOST_COMMANDS_H

#include <stdbool.h>

#include "cli/cli.h"
#include "core/config.h"
#include "base/error.h"
#include "net/http.h"
#include "core/state.h"

struct cJSON;

typedef struct command_context {
    const cli_options *opts; /* parsed command line */
    config *cfg;             /* validated configuration; state_dir already overridden */
    int exit_code;           /* exit status when the command returns ERR_OK (default 0) */
    http_client *http;       /* the run's API client, made by command_http on first use;
                                freed (http_client_free) by whoever made the context */
    bool no_stdout;          /* print nothing on stdout: `run --json` prints one document */
    bool holds_state_dir;    /* the command took the lock: it may write under state_dir */
} command_context;

struct cJSON;

/*
 * The run's API client: made on first use (base_url checked, API key read
 * and wiped once the client holds it) and shared by every part of a run, so
 * `run` exchanges the key for one access token, not one per part.
 * *http is borrowed from ctx.
 */
MUST_CHECK error_code command_http(command_context *ctx, http_client **http, error_info *err);

/*
 * The client for URL GETs (the fleet mirror): the run's client when one was
 * made (the same connections and trace), else one without an API key (the
 * mirror needs neither base_url nor a key), kept in ctx->http; a later
 * command_http replaces it with the platform's. *http is borrowed from ctx.
 */
MUST_CHECK error_code command_http_urls(command_context *ctx, http_client **http, error_info *err);

/*
 * Records an interactive installer command's outcome (check, update, stage,
 * deploy, rollback) in state section "installer" as "last_command"
 * {command, at, exit_code, error}, which status.json's "installer" shows.
 * Only `run` (and `report` alone) write last_run: a manual command never
 * overwrites the scheduled run's verdict. Does nothing when `run` drives
 * the command. s is not saved here.
 */
void command_record_outcome(const command_context *ctx, state *s, error_code rc, int exit_code, const error_info *err);

/*
 * The one printer of --json output: doc as one JSON document on stdout.
 * Takes doc (cJSON_Delete'd here, NULL allowed: out of memory). Returns
 * false when nothing could be printed.
 */
bool command_print_json(struct cJSON *doc);

/*
 * With --json, a command that fails prints this one document instead of
 * its result: {"error": {"code": "CONFIG", "exit": 2, "message": "..."}}.
 * main.c calls it for every failure, so a script always parses stdout.
 */
void command_print_error_json(const error_info *err);

/* -q: print results only when asked (errors still go to stderr). */
bool command_quiet(const command_context *ctx);

/* Whether `run` drives this command (it then leaves the status to `run`). */
bool command_from_run(const command_context *ctx);

/* Exit code of a deploy whose installer asks for a reboot, with
 * deploy.pass_reboot_code: what SCCM and Intune read as "soft reboot". */
#define COMMAND_EXIT_REBOOT 3010

/* Exit code of `check` when a newer installer is available. */
#define COMMAND_EXIT_UPDATE_AVAILABLE 10

MUST_CHECK error_code command_check(command_context *ctx, error_info *err);
MUST_CHECK error_code command_update(command_context *ctx, error_info *err);
MUST_CHECK error_code command_stage(command_context *ctx, error_info *err);
MUST_CHECK error_code command_deploy(command_context *ctx, error_info *err);
MUST_CHECK error_code command_rollback(command_context *ctx, error_info *err);
MUST_CHECK error_code command_bundle(command_context *ctx, error_info *err);
MUST_CHECK error_code command_report(command_context *ctx, error_info *err);
MUST_CHECK error_code command_run(command_context *ctx, error_info *err);
MUST_CHECK error_code command_status(command_context *ctx, error_info *err);
MUST_CHECK error_code command_keygen(command_context *ctx, error_info *err);  /* cli/cmd_mirror.c */
MUST_CHECK error_code command_publish(command_context *ctx, error_info *err); /* cli/cmd_mirror.c */
MUST_CHECK error_code command_service(command_context *ctx, error_info *err); /* cli/cmd_service.c */
MUST_CHECK error_code command_root(command_context *ctx, error_info *err);    /* cli/cmd_root.c */
MUST_CHECK error_code command_mirror(command_context *ctx, error_info *err);  /* cli/cmd_mirror.c */

/* `version`: outpost's version; verbose adds the libraries as linked, TLS
 * 1.3, the crypto paths and libcurl's features; on stdout, JSON with json.
 * Needs no configuration (cli/cmd_version.c). */
MUST_CHECK error_code command_version(bool verbose, bool json, error_info *err);

/*
 * `update` through the API for `publish` (cli/cmd_fetch.c): the publishing
 * host's own installed version does not matter (the fleet's does), nothing
 * is printed, and the mirror configuration is never used as the source.
 */
MUST_CHECK error_code command_update_for_publish(command_context *ctx, error_info *err);

#endif
