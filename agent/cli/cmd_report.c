/*
 * cmd_report.c — the `report` command (PRODUCT.md section 5): sets up the
 * run's API client and state, and hands over to report_run (report.c).
 * Alone, it also writes status.json's last_run; called from `run`, it
 * leaves that to `run`.
 */
#include "cli/commands.h"

#include <stdlib.h>

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
    if (rc == ERR_OK) {
        report_options opts = {
            .started_at = started_at,
            .write_last_run = !ctx->opts || ctx->opts->command != CLI_RUN,
        };
        rc = report_run(ctx->cfg, http, s, &opts, NULL, err);
    }
    state_free(s);
    return rc;
}
