/*
 * incident.c — mapping of incidents and events to the `items` shape, the
 * newest-first merge of items across runs, and the hosts aggregation
 * (see incident.h).
 */
#include "report/incident.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/text.h"
#include "core/jsonx.h"

/* Adds name: value only when value is not NULL (true when nothing to add). */
static bool add_string_if(cJSON *obj, const char *name, const char *value)
{
    return !value || cJSON_AddStringToObject(obj, name, value) != NULL;
}

/* Adds a copy of a list of strings; non-string elements are skipped (the
 * API view guarantees an array, not its element types). */
static bool add_strings_if(cJSON *obj, const char *name, const cJSON *list)
{
    if (!list)
        return true;
    cJSON *copy = cJSON_AddArrayToObject(obj, name);
    if (!copy)
        return false;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, list)
    {
        if (!cJSON_IsString(entry))
            continue;
        cJSON *s = cJSON_CreateString(entry->valuestring);
        if (!s || !cJSON_AddItemToArray(copy, s)) {
            cJSON_Delete(s);
            return false;
        }
    }
    return true;
}

cJSON *incident_item_new(const api_incident *inc)
{
    cJSON *item = cJSON_CreateObject();
    if (!item)
        return NULL;
    bool ok = cJSON_AddStringToObject(item, "id", inc->id) &&
              jsonx_add_string_or_null(item, "trigger_time", inc->trigger_time) &&
              jsonx_add_string_or_null(item, "policy", inc->policy) &&
              jsonx_add_string_or_null(item, "dataset", inc->dataset) &&
              jsonx_add_string_or_null(item, "user", inc->user);
    if (ok)
        ok = inc->has_risk_score ? cJSON_AddNumberToObject(item, "risk_score", inc->risk_score) != NULL
                                 : cJSON_AddNullToObject(item, "risk_score") != NULL;
    ok = ok && jsonx_add_string_or_null(item, "ai_severity", inc->ai_severity) &&
         cJSON_AddBoolToObject(item, "blocked", inc->blocked) &&
         jsonx_add_string_or_null(item, "created_by", inc->created_by);
    if (!ok) {
        cJSON_Delete(item);
        return NULL;
    }
    return item;
}

/* data_size as an exact integer: a cJSON number is a double, which would
 * round sizes past 2^53, so the digits are written raw. */
static bool add_int64(cJSON *obj, const char *name, int64_t value)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%" PRId64, value);
    return cJSON_AddRawToObject(obj, name, digits) != NULL;
}

static bool add_source(cJSON *event, const api_event *e)
{
    if (!e->has_source)
        return true;
    cJSON *src = cJSON_AddObjectToObject(event, "source");
    return src && add_string_if(src, "file", e->source_file) && add_string_if(src, "path", e->source_path) &&
           add_strings_if(src, "tags", e->source_tags);
}

static bool add_destination(cJSON *event, const api_event *e)
{
    if (!e->has_destination)
        return true;
    cJSON *dst = cJSON_AddObjectToObject(event, "destination");
    return dst && add_string_if(dst, "file", e->destination_file) && add_string_if(dst, "path", e->destination_path) &&
           add_string_if(dst, "domain", e->destination_domain) && add_string_if(dst, "url", e->destination_url) &&
           add_strings_if(dst, "email_to", e->email_to) && add_string_if(dst, "email_subject", e->email_subject);
}

cJSON *incident_event_new(const api_event *e)
{
    cJSON *event = cJSON_CreateObject();
    if (!event)
        return NULL;
    bool ok =
        cJSON_AddStringToObject(event, "id", e->id) && jsonx_add_string_or_null(event, "timestamp", e->timestamp) &&
        jsonx_add_string_or_null(event, "kind", e->kind) && jsonx_add_string_or_null(event, "hostname", e->hostname) &&
        jsonx_add_string_or_null(event, "sensor_kind", e->sensor_kind) &&
        jsonx_add_string_or_null(event, "user", e->user) && cJSON_AddBoolToObject(event, "blocked", e->blocked) &&
        add_int64(event, "data_size", e->data_size) && add_source(event, e) && add_destination(event, e);
    if (!ok) {
        cJSON_Delete(event);
        return NULL;
    }
    return event;
}

error_code incident_set_lineage(cJSON *item, const char *status, const char *start_event_id, const char *end_event_id,
                                cJSON *events, cJSON *missing, error_info *err)
{
    if (!events)
        events = cJSON_CreateArray();
    if (!missing)
        missing = cJSON_CreateArray();
    cJSON *lineage = cJSON_CreateObject();
    bool ok = events && missing && lineage && cJSON_AddStringToObject(lineage, "status", status) &&
              jsonx_add_string_or_null(lineage, "start_event_id", start_event_id) &&
              jsonx_add_string_or_null(lineage, "end_event_id", end_event_id);
    if (ok) {
        cJSON_AddItemToObject(lineage, "events", events);
        cJSON_AddItemToObject(lineage, "missing_event_ids", missing);
        events = missing = NULL;
        cJSON_DeleteItemFromObjectCaseSensitive(item, "lineage");
        ok = cJSON_AddItemToObject(item, "lineage", lineage);
        if (ok)
            lineage = NULL;
    }
    cJSON_Delete(events);
    cJSON_Delete(missing);
    cJSON_Delete(lineage);
    return ok ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory while building the report");
}

const char *incident_item_id(const cJSON *item)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");
    return cJSON_IsString(id) ? id->valuestring : "";
}

static const char *item_time(const cJSON *item)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(item, "trigger_time");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* ISO 8601 UTC strings of the API's one form compare chronologically as
 * bytes; a null time sorts after every real one. */
static int compare_time_desc(const char *a, const char *b)
{
    if (!a || !b)
        return (a == NULL) - (b == NULL);
    return -strcmp(a, b);
}

int incident_compare_newest(const cJSON *a, const cJSON *b)
{
    int c = compare_time_desc(item_time(a), item_time(b));
    return c ? c : strcmp(incident_item_id(a), incident_item_id(b));
}

static int compare_newest_qsort(const void *a, const void *b)
{
    return incident_compare_newest(*(const cJSON *const *)a, *(const cJSON *const *)b);
}

static bool contains_id(const cJSON *const *list, size_t count, const char *id)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(incident_item_id(list[i]), id) == 0)
            return true;
    return false;
}

error_code incident_merge_items(const cJSON *current, const cJSON *previous, int keep, cJSON **out, error_info *err)
{
    size_t cap = (size_t)cJSON_GetArraySize(current) + (size_t)cJSON_GetArraySize(previous);
    const cJSON **all = malloc((cap ? cap : 1) * sizeof *all);
    cJSON *merged = cJSON_CreateArray();
    if (!all || !merged)
        goto nomem;
    size_t n = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, current)
    {
        if (cJSON_IsObject(item))
            all[n++] = item;
    }
    size_t from_current = n;
    cJSON_ArrayForEach(item, previous)
    {
        if (cJSON_IsObject(item) && !contains_id(all, from_current, incident_item_id(item)))
            all[n++] = item;
    }
    qsort(all, n, sizeof *all, compare_newest_qsort);
    for (size_t i = 0; i < n && (int)i < keep; i++) {
        cJSON *copy = cJSON_CreateObjectReference(all[i]->child);
        if (!copy || !cJSON_AddItemToArray(merged, copy)) {
            cJSON_Delete(copy);
            goto nomem;
        }
    }
    free(all);
    *out = merged;
    return ERR_OK;
nomem:
    free(all);
    cJSON_Delete(merged);
    return error_set(err, ERR_NOMEM, "out of memory while merging the report's items");
}

/* ---- Hosts --------------------------------------------------------------- */

typedef struct host_row {
    char *hostname;   /* copied */
    int incidents;    /* items touching the host */
    char *last_at;    /* latest trigger_time (copied), NULL when none */
    double max_risk;  /* highest risk_score */
    bool has_risk;    /* any item had a risk_score */
    size_t last_item; /* serial of the last item counted, so one item counts once */
} host_row;

struct incident_hosts_acc {
    host_row *rows;
    size_t count, cap;
    size_t items; /* items counted so far: the next one's serial is items + 1 */
    bool failed;  /* out of memory on the way */
};

static host_row *find_host(host_row *rows, size_t count, const char *hostname)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(rows[i].hostname, hostname) == 0)
            return &rows[i];
    return NULL;
}

static bool count_item(host_row *row, const cJSON *item, size_t serial)
{
    if (row->last_item == serial)
        return true;
    row->last_item = serial;
    row->incidents++;
    const char *t = item_time(item);
    if (t && (!row->last_at || strcmp(t, row->last_at) > 0)) {
        char *copy = text_dup(t);
        if (!copy)
            return false;
        free(row->last_at);
        row->last_at = copy;
    }
    const cJSON *risk = cJSON_GetObjectItemCaseSensitive(item, "risk_score");
    if (cJSON_IsNumber(risk) && (!row->has_risk || risk->valuedouble > row->max_risk)) {
        row->max_risk = risk->valuedouble;
        row->has_risk = true;
    }
    return true;
}

static int compare_hosts(const void *pa, const void *pb)
{
    const host_row *a = pa, *b = pb;
    if (a->incidents != b->incidents)
        return a->incidents > b->incidents ? -1 : 1;
    int c = compare_time_desc(a->last_at, b->last_at);
    return c ? c : strcmp(a->hostname, b->hostname);
}

static cJSON *host_object(const host_row *row)
{
    cJSON *obj = cJSON_CreateObject();
    bool ok = obj && cJSON_AddStringToObject(obj, "hostname", row->hostname) &&
              cJSON_AddNumberToObject(obj, "incidents", row->incidents) &&
              jsonx_add_string_or_null(obj, "last_incident_at", row->last_at) &&
              (row->has_risk ? cJSON_AddNumberToObject(obj, "max_risk_score", row->max_risk) != NULL
                             : cJSON_AddNullToObject(obj, "max_risk_score") != NULL);
    if (!ok) {
        cJSON_Delete(obj);
        return NULL;
    }
    return obj;
}

incident_hosts_acc *incident_hosts_begin(void)
{
    return calloc(1, sizeof(incident_hosts_acc));
}

void incident_hosts_count(incident_hosts_acc *acc, const cJSON *item)
{
    if (!item)
        acc->failed = true;
    if (acc->failed)
        return;
    size_t serial = ++acc->items;
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, "lineage"), "events");
    const cJSON *event;
    cJSON_ArrayForEach(event, events)
    {
        const cJSON *host = cJSON_GetObjectItemCaseSensitive(event, "hostname");
        if (!cJSON_IsString(host) || !host->valuestring[0])
            continue;
        host_row *row = find_host(acc->rows, acc->count, host->valuestring);
        if (!row) {
            if (acc->count == acc->cap) {
                size_t ncap = acc->cap ? acc->cap * 2 : 16;
                host_row *grown = realloc(acc->rows, ncap * sizeof *grown);
                if (!grown) {
                    acc->failed = true;
                    return;
                }
                acc->rows = grown;
                acc->cap = ncap;
            }
            row = &acc->rows[acc->count];
            *row = (host_row){.hostname = text_dup(host->valuestring)};
            if (!row->hostname) {
                acc->failed = true;
                return;
            }
            acc->count++;
        }
        if (!count_item(row, item, serial)) {
            acc->failed = true;
            return;
        }
    }
}

static void hosts_free(incident_hosts_acc *acc)
{
    for (size_t i = 0; i < acc->count; i++) {
        free(acc->rows[i].hostname);
        free(acc->rows[i].last_at);
    }
    free(acc->rows);
    free(acc);
}

error_code incident_hosts_end(incident_hosts_acc *acc, cJSON **out, error_info *err)
{
    *out = NULL;
    cJSON *hosts = acc && !acc->failed ? cJSON_CreateArray() : NULL;
    if (!hosts)
        goto nomem;
    if (acc->count)
        qsort(acc->rows, acc->count, sizeof *acc->rows, compare_hosts);
    for (size_t i = 0; i < acc->count; i++) {
        cJSON *obj = host_object(&acc->rows[i]);
        if (!obj || !cJSON_AddItemToArray(hosts, obj)) {
            cJSON_Delete(obj);
            goto nomem;
        }
    }
    hosts_free(acc);
    *out = hosts;
    return ERR_OK;
nomem:
    if (acc)
        hosts_free(acc);
    cJSON_Delete(hosts);
    return error_set(err, ERR_NOMEM, "out of memory while aggregating hosts");
}

error_code incident_hosts(const cJSON *items, cJSON **out, error_info *err)
{
    incident_hosts_acc *acc = incident_hosts_begin();
    const cJSON *item;
    cJSON_ArrayForEach(item, items)
    {
        if (acc)
            incident_hosts_count(acc, item);
    }
    return incident_hosts_end(acc, out, err);
}

static const char *nonempty_string(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

void incident_chain_firsts_of(const cJSON *item, incident_chain_firsts *out)
{
    *out = (incident_chain_firsts){.user = nonempty_string(item, "user")};
    const cJSON *lineage = cJSON_GetObjectItemCaseSensitive(item, "lineage");
    const cJSON *event;
    cJSON_ArrayForEach(event, cJSON_GetObjectItemCaseSensitive(lineage, "events"))
    {
        const cJSON *source = cJSON_GetObjectItemCaseSensitive(event, "source");
        const cJSON *destination = cJSON_GetObjectItemCaseSensitive(event, "destination");
        out->host = out->host ? out->host : nonempty_string(event, "hostname");
        out->user = out->user ? out->user : nonempty_string(event, "user");
        out->domain = out->domain ? out->domain : nonempty_string(destination, "domain");
        out->url = out->url ? out->url : nonempty_string(destination, "url");
        if (!out->source && nonempty_string(source, "file"))
            out->source = source;
    }
}
