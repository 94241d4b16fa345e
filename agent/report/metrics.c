/*
 * metrics.c — Prometheus textfile rendering of status.json's key figures
 * (see metrics.h). Every metric is a gauge; versions are labels so a
 * dashboard can show them without a separate info series per version.
 */
#include "report/metrics.h"

#include "report/feed.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"
#include "core/jsonx.h"
#include "core/timefmt.h"
#include "platform/platform.h"

/* A label value with \, " and newline escaped as the text format requires. */
static void put_label(dynbuf *b, const char *name, const char *value)
{
    dynbuf_printf(b, "%s=\"", name);
    for (const char *p = value ? value : ""; *p; p++) {
        if (*p == '\\')
            dynbuf_printf(b, "\\\\");
        else if (*p == '"')
            dynbuf_printf(b, "\\\"");
        else if (*p == '\n')
            dynbuf_printf(b, "\\n");
        else
            dynbuf_printf(b, "%c", *p);
    }
    dynbuf_printf(b, "\"");
}

static void header(dynbuf *b, const char *name, const char *help)
{
    dynbuf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static void gauge(dynbuf *b, const char *name, const char *help, double value)
{
    header(b, name, help);
    dynbuf_printf(b, "%s %.17g\n", name, value);
}

static const cJSON *member(const cJSON *obj, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(obj, name);
}

/* A timestamp member as Unix seconds; false when absent or unparsable. */
static bool time_member(const cJSON *obj, const char *name, int64_t *seconds)
{
    const char *text = jsonx_string(NULL, obj, name);
    return text && timefmt_parse_iso8601(text, seconds);
}

static void render_installer(dynbuf *b, const cJSON *installer)
{
    if (!cJSON_IsObject(installer))
        return;
    header(b, "outpost_installer_update_available",
           "1 when the platform offers a newer installer than the installed one; versions as labels.");
    dynbuf_printf(b, "outpost_installer_update_available{");
    put_label(b, "installed_version", jsonx_string(NULL, installer, "installed_version"));
    dynbuf_printf(b, ",");
    put_label(b, "latest_version", jsonx_string(NULL, installer, "latest_version"));
    dynbuf_printf(b, ",");
    put_label(b, "staged_version", jsonx_string(NULL, member(installer, "staged"), "version"));
    dynbuf_printf(b, ",");
    put_label(b, "deployed_version", jsonx_string(NULL, member(installer, "deployed"), "version"));
    dynbuf_printf(b, "} %d\n", cJSON_IsTrue(member(installer, "update_available")) ? 1 : 0);
    int64_t t;
    if (time_member(installer, "checked_at", &t))
        gauge(b, "outpost_installer_checked_timestamp_seconds", "When the installer version was last checked.",
              (double)t);
}

static void render_last_run(dynbuf *b, const cJSON *last_run)
{
    if (!cJSON_IsObject(last_run))
        return;
    int64_t t;
    if (time_member(last_run, "finished_at", &t))
        gauge(b, "outpost_last_run_timestamp_seconds", "When the last run finished.", (double)t);
    const char *result = jsonx_string(NULL, last_run, "result");
    header(b, "outpost_last_run_result", "1 for the result of the last run (ok, partial or failed).");
    static const char *const results[] = {"ok", "partial", "failed"};
    for (size_t i = 0; i < 3; i++)
        dynbuf_printf(b, "outpost_last_run_result{result=\"%s\"} %d\n", results[i],
                      result && strcmp(result, results[i]) == 0);
    const cJSON *code = member(last_run, "exit_code");
    if (cJSON_IsNumber(code))
        gauge(b, "outpost_last_run_exit_code", "Exit code of the last run.", code->valuedouble);
    gauge(b, "outpost_last_run_errors", "Parts of the last run that failed.",
          (double)cJSON_GetArraySize(member(last_run, "errors")));
}

static void render_incidents(dynbuf *b, const cJSON *incidents, int64_t responses_429)
{
    if (!cJSON_IsObject(incidents))
        return;
    static const struct {
        const char *member, *metric, *help;
    } counts[] = {
        {"new", "outpost_report_incidents_new", "Incidents newly reported by the last report."},
        {"traced", "outpost_report_incidents_traced", "Incidents traced by the last report."},
        {"untraceable", "outpost_report_incidents_untraceable", "Incidents without lineage ids in the last report."},
        {"failed", "outpost_report_incidents_failed", "Incidents whose lineage or details could not be fetched."},
        {"api_calls", "outpost_report_api_calls",
         "HTTP requests made by the last report, token exchanges and retries included."},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        const cJSON *v = member(incidents, counts[i].member);
        if (cJSON_IsNumber(v))
            gauge(b, counts[i].metric, counts[i].help, v->valuedouble);
    }
    if (responses_429 >= 0)
        gauge(b, "outpost_report_responses_429", "429 answers the last report received.", (double)responses_429);
    int64_t t;
    if (time_member(incidents, "polled_at", &t))
        gauge(b, "outpost_report_polled_timestamp_seconds", "When the incidents were last polled.", (double)t);
    if (time_member(incidents, "cursor", &t))
        gauge(b, "outpost_report_cursor_timestamp_seconds", "The report's cursor (start of the last complete poll).",
              (double)t);
}

error_code metrics_render(const cJSON *status, int64_t responses_429, char **text, error_info *err)
{
    dynbuf b;
    dynbuf_init(&b, 0, false);
    int64_t t;
    if (time_member(status, "generated_at", &t))
        gauge(&b, "outpost_status_generated_timestamp_seconds", "When status.json was last written.", (double)t);
    render_installer(&b, member(status, "installer"));
    render_last_run(&b, member(status, "last_run"));
    render_incidents(&b, member(status, "incidents"), responses_429);
    dynbuf_append(&b, "", 0); /* an empty document is "", not NULL */
    if (!dynbuf_ok(&b)) {
        dynbuf_free(&b);
        return error_set(err, ERR_NOMEM, "out of memory while rendering metrics");
    }
    *text = dynbuf_take(&b, NULL);
    return ERR_OK;
}

error_code metrics_write(const char *path, const cJSON *status, int64_t responses_429, const char *readers_group,
                         error_info *err)
{
    char *text = NULL;
    error_code rc = metrics_render(status, responses_429, &text, err);
    if (rc != ERR_OK)
        return rc;
    rc = feed_write(path, text, strlen(text), readers_group, err);
    free(text);
    return rc == ERR_OK ? ERR_OK : error_prefix(err, "cannot write the metrics file");
}
