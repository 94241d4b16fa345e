/*
 * fuzz_envelope.c — libFuzzer target for what the platform's JSON answers
 * go through: the response envelope (api_envelope_parse), the typed views
 * of incidents and events (api_incident_view, api_event_view), and their
 * mapping to the status.json / incidents.jsonl item shape (incident.h),
 * which is then printed as a line of incidents.jsonl would be.
 *
 * The first input byte picks the route the body is read as (and whether
 * `resources` is required); the rest is the body.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "net/api.h"
#include "report/incident.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every resource as an event: the item's lineage gets the mapped events. */
static void map_events(const api_envelope *env, cJSON *item)
{
    cJSON *events = cJSON_CreateArray();
    cJSON *missing = cJSON_CreateArray();
    size_t i = 0;
    const cJSON *object;
    cJSON_ArrayForEach(object, env->resources)
    {
        api_event event;
        error_info err;
        if (api_event_view("event-details", i++, object, &event, &err) != ERR_OK) {
            if (err.message[0] == '\0')
                abort(); /* every failure says why */
            cJSON_AddItemToArray(missing, cJSON_CreateString("x"));
            continue;
        }
        cJSON *mapped = incident_event_new(&event);
        if (mapped)
            cJSON_AddItemToArray(events, mapped);
    }
    error_info err;
    ERROR_IGNORE(incident_set_lineage(item, INCIDENT_TRACED, "a", "b", events, missing, &err));
}

static void map_incidents(const api_envelope *env)
{
    cJSON *items = cJSON_CreateArray();
    size_t i = 0;
    const cJSON *object;
    cJSON_ArrayForEach(object, env->resources)
    {
        api_incident incident;
        error_info err;
        if (api_incident_view("incidents/list", i++, object, &incident, &err) != ERR_OK) {
            if (err.message[0] == '\0')
                abort();
            continue;
        }
        cJSON *item = incident_item_new(&incident);
        if (!item)
            continue;
        map_events(env, item);
        char *line = cJSON_PrintUnformatted(item);
        if (line) {
            /* What incidents.jsonl gets must parse back. */
            cJSON *back = cJSON_Parse(line);
            if (!back)
                abort();
            cJSON_Delete(back);
            free(line);
        }
        cJSON_AddItemToArray(items, item);
    }
    cJSON *merged = NULL;
    cJSON *hosts = NULL;
    error_info err;
    if (incident_merge_items(items, items, 5, &merged, &err) == ERR_OK && merged &&
        incident_hosts(merged, &hosts, &err) == ERR_OK)
        cJSON_Delete(hosts);
    cJSON_Delete(merged);
    cJSON_Delete(items);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool require = data[0] & 1;
    api_envelope env;
    error_info err;
    char first_error[256];
    api_envelope_first_error((const char *)data + 1, size - 1, first_error, sizeof first_error);
    if (strlen(first_error) >= sizeof first_error)
        abort();
    if (api_envelope_parse("incidents/list", (const char *)data + 1, size - 1, require, &env, &err) != ERR_OK) {
        if (err.code == ERR_OK || err.message[0] == '\0')
            abort();
        return 0;
    }
    if (env.resources)
        map_incidents(&env);
    api_envelope_free(&env);
    return 0;
}
