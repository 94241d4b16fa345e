/* status.c — merge-and-replace of status.json (see status.h). */
#include "report/status.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/jsonx.h"
#include "platform/platform.h"
#include "core/timefmt.h"

cJSON *status_agent_object(void)
{
    char host[256];
    platform_hostname(host, sizeof host);
    cJSON *agent = cJSON_CreateObject();
    if (!agent)
        return NULL;
    if (!cJSON_AddStringToObject(agent, "version", OUTPOST_VERSION) ||
        !cJSON_AddStringToObject(agent, "hostname", host) ||
        !cJSON_AddStringToObject(agent, "os", platform_os_name()) ||
        !cJSON_AddStringToObject(agent, "arch", platform_arch())) {
        cJSON_Delete(agent);
        return NULL;
    }
    return agent;
}

error_code status_last_run(const status_run *run, cJSON **out, error_info *err)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *errors = run->errors ? cJSON_Duplicate(run->errors, true) : cJSON_CreateArray();
    bool ok = o && errors && cJSON_AddStringToObject(o, "started_at", run->started_at) &&
              cJSON_AddStringToObject(o, "finished_at", run->finished_at) &&
              cJSON_AddStringToObject(o, "result", run->result) &&
              cJSON_AddNumberToObject(o, "exit_code", run->exit_code) && cJSON_AddItemToObject(o, "errors", errors);
    if (!ok) {
        cJSON_Delete(errors); /* added last: never attached when !ok */
        cJSON_Delete(o);
        *out = NULL;
        return error_set(err, ERR_NOMEM, "out of memory while recording the run's outcome (last_run)");
    }
    *out = o;
    return ERR_OK;
}

error_code status_run_error(cJSON *errors, const char *stage, const char *message, error_info *err)
{
    cJSON *e = cJSON_CreateObject();
    if (!e || !cJSON_AddStringToObject(e, "stage", stage) || !cJSON_AddStringToObject(e, "message", message) ||
        !cJSON_AddItemToArray(errors, e)) {
        cJSON_Delete(e);
        return error_set(err, ERR_NOMEM, "out of memory while recording a failed part (last_run.errors)");
    }
    return ERR_OK;
}

error_code status_read(const config *cfg, cJSON **doc, error_info *err)
{
    char *path = config_state_path(cfg, cfg->report.status_file);
    if (!path)
        return error_set(err, ERR_NOMEM, "out of memory");
    char *text = NULL;
    size_t len = 0;
    error_code rc = platform_read_file(path, STATUS_MAX_BYTES, &text, &len, err);
    if (rc == ERR_OK) {
        *doc = cJSON_ParseWithLength(text, len);
        if (!*doc || !cJSON_IsObject(*doc)) {
            cJSON_Delete(*doc);
            *doc = NULL;
            rc = error_set(err, ERR_IO, "status file %s is not valid JSON", path);
        }
    }
    free(text);
    free(path);
    return rc;
}

/* value itself, lent to the document being printed; a copy for scalars. */
static cJSON *lent(const cJSON *value)
{
    if (cJSON_IsObject(value))
        return cJSON_CreateObjectReference(value->child);
    if (cJSON_IsArray(value))
        return cJSON_CreateArrayReference(value->child);
    return cJSON_Duplicate(value, 1);
}

error_code status_write(const config *cfg, const status_parts *parts, error_info *err)
{
    /* Only what the caller did not supply comes from the previous document:
     * read the file (all of it, items included) only when that is needed and
     * the caller has not kept it. */
    cJSON *read = NULL;
    const cJSON *previous = parts->previous;
    if (!previous && (!parts->last_run || !parts->installer || !parts->incidents)) {
        error_info ignored;
        if (status_read(cfg, &read, &ignored) != ERR_OK)
            read = NULL;
        previous = read;
    }

    /* Rebuild in the schema's order: identity first, then the parts. */
    cJSON *doc = cJSON_CreateObject();
    char now[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, now);
    bool ok = doc && cJSON_AddNumberToObject(doc, "schema_version", STATUS_SCHEMA_VERSION) &&
              cJSON_AddStringToObject(doc, "generated_at", now) && jsonx_set(doc, "agent", status_agent_object());
    static const char *const members[] = {"last_run", "installer", "incidents"};
    const cJSON *given[] = {parts->last_run, parts->installer, parts->incidents};
    for (size_t i = 0; ok && i < 3; i++) {
        const cJSON *value = given[i] ? given[i] : cJSON_GetObjectItemCaseSensitive(previous, members[i]);
        /* By reference: the parts stay the caller's and are not copied (the
         * report's items are most of the document). */
        if (value)
            ok = jsonx_set(doc, members[i], lent(value));
    }
    char *text = ok ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc); /* the references only */
    cJSON_Delete(read);
    if (!text)
        return error_set(err, ERR_NOMEM, "out of memory while writing the status file");

    char *path = config_state_path(cfg, cfg->report.status_file);
    error_code rc =
        path ? platform_write_atomic(path, text, strlen(text), err) : error_set(err, ERR_NOMEM, "out of memory");
    free(path);
    free(text);
    return rc == ERR_OK ? ERR_OK : error_prefix(err, "cannot write the status file");
}
