/*
 * cmd_report.c — the `report` command (PRODUCT.md section 5): sets up the
 * run's API client and state, and hands over to report_run (report.c).
 * Alone, it also writes status.json's last_run and prints a one-line
 * summary (the JSON with --json), with a progress line on a terminal;
 * called from `run`, it leaves all that to `run`.
 */
#include "cli/commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "net/http.h"
#include "core/log.h"
#include "platform/platform.h"
#include "report/report.h"
#include "core/state.h"
#include "core/timefmt.h"

error_code command_report(command_context *ctx, error_info *err)
{
    char started_at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, started_at);
    http_client *http = NULL;
    state *s = NULL;
    error_code rc = command_http(ctx, &http, err);
    if (rc == ERR_OK)
        rc = state_load(ctx->cfg->state_dir, &s, err);
    bool alone = !command_from_run(ctx);
    bool quiet = command_quiet(ctx);
    bool json = ctx->opts && ctx->opts->json;
    report_summary sum;
    memset(&sum, 0, sizeof sum);
    if (rc == ERR_OK) {
        report_options opts = {
            .started_at = started_at,
            .write_last_run = alone,
            .progress = alone && !quiet && !json && platform_is_terminal(stderr),
        };
        rc = report_run(ctx->cfg, http, s, &opts, &sum, err);
    }
    state_free(s);
    if (rc != ERR_OK || !alone)
        return rc;
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "listed", (double)sum.listed);
        cJSON_AddNumberToObject(o, "new", (double)sum.new_count);
        cJSON_AddNumberToObject(o, "traced", (double)sum.traced);
        cJSON_AddNumberToObject(o, "untraceable", (double)sum.untraceable);
        cJSON_AddNumberToObject(o, "failed", (double)sum.failed);
        cJSON_AddNumberToObject(o, "api_calls", (double)sum.stats.api_calls);
        cJSON_AddNumberToObject(o, "responses_429", (double)sum.stats.responses_429);
        command_print_json(o);
    } else if (!quiet) {
        printf("report: %" PRId64 " new incidents (%" PRId64 " traced, %" PRId64 " untraceable, %" PRId64
               " failed) of %" PRId64 " listed, %" PRId64 " API calls\n",
               sum.new_count, sum.traced, sum.untraceable, sum.failed, sum.listed, (int64_t)sum.stats.api_calls);
    }
    return ERR_OK;
}
