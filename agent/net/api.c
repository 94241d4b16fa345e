/*
 * api.c — the platform's routes over http.c (see api.h): what the engine
 * is told of the API (its token route, its error envelope, its /public
 * hint), envelope parsing, typed views with the document's defaults, the
 * incident paging loop, the event-lineage and event-details calls (queued
 * or synchronous), and the installer download.
 *
 * Layout: the enum reader (over core/jsonx, whose readers name the field in
 * errors), the envelope, the client, the views, then one section per route.
 */
#include "net/api.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "core/jsonx.h"
#include "net/token.h"
#include "net/url.h"

#define NAME_INCIDENTS "incidents/list"
#define NAME_LINEAGE "event-lineage"
#define NAME_DETAILS "event-details"
#define NAME_INSTALLER "installer"
#define MAX_EMPTY_PAGES 10 /* consecutive empty pages that still name a next page */

/* ---- Field readers (core/jsonx names the path in errors) ---------------------- */

/* A string enumeration: "...unspecified" reads as NULL. */
static const char *field_enum(jsonx_reader *f, const cJSON *obj, const char *path)
{
    const char *s = jsonx_string(f, obj, path);
    return s && !api_enum_unspecified(s) ? s : NULL;
}

/* Whether obj has the object at path; absent is allowed, anything else there
 * than an object is an error in f. */
static bool optional_object(jsonx_reader *f, const cJSON *obj, const char *path)
{
    const cJSON *found = jsonx_walk(f, obj, path);
    if (found && !cJSON_IsObject(found))
        jsonx_fail(f, path, "is not an object");
    return cJSON_IsObject(found);
}

bool api_enum_unspecified(const char *value)
{
    static const char suffix[] = "unspecified";
    size_t n = strlen(value), k = sizeof suffix - 1;
    return n >= k && text_equal_nocase(value + n - k, suffix);
}

/* ---- Envelope ---------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left); 0 when malformed,
 * overlong forms, surrogates and code points past U+10FFFF included. */
static size_t utf8_valid_length(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        len = 2;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        len = 3;
        lo = s[0] == 0xE0 ? 0xA0 : 0x80;
        hi = s[0] == 0xED ? 0x9F : 0xBF;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        len = 4;
        lo = s[0] == 0xF0 ? 0x90 : 0x80;
        hi = s[0] == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

/*
 * JSON is UTF-8 (RFC 8259), and what outpost writes from these answers
 * (status.json, incidents.jsonl) must be too, or SIEM shippers choke on it.
 * Returns a malloc'd copy of body with every byte that is not part of valid
 * UTF-8 replaced by U+FFFD, or NULL when body is valid already (*oom tells
 * out of memory apart).
 */
static char *utf8_repaired(const char *body, size_t len, size_t *out_len, bool *oom)
{
    const unsigned char *s = (const unsigned char *)body;
    size_t i = 0, step = 0;
    while (i < len && (step = utf8_valid_length(s + i, len - i)) != 0)
        i += step;
    *oom = false;
    if (i == len)
        return NULL;
    char *out = malloc(len * 3 + 1);
    if (!out) {
        *oom = true;
        return NULL;
    }
    size_t o = 0;
    for (i = 0; i < len; i += step ? step : 1) {
        step = utf8_valid_length(s + i, len - i);
        if (step) {
            memcpy(out + o, s + i, step);
            o += step;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        }
    }
    *out_len = o;
    return out;
}

error_code api_envelope_parse(const char *endpoint, const char *body, size_t len, bool require_resources,
                              api_envelope *env, error_info *err)
{
    memset(env, 0, sizeof *env);
    env->size = -1;
    env->total = -1;
    if (!body || len == 0)
        return error_set(err, ERR_PROTOCOL, "%s: the answer is empty", endpoint);
    bool oom = false;
    size_t repaired_len = 0;
    char *repaired = utf8_repaired(body, len, &repaired_len, &oom);
    if (oom)
        return error_set(err, ERR_NOMEM, "out of memory");
    cJSON *root = repaired ? cJSON_ParseWithLength(repaired, repaired_len) : cJSON_ParseWithLength(body, len);
    free(repaired);
    if (!root)
        return error_set(err, ERR_PROTOCOL, "%s: the answer is not valid JSON", endpoint);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return error_set(err, ERR_PROTOCOL, "%s: the answer is not a JSON object", endpoint);
    }
    jsonx_reader f;
    jsonx_reader_init(&f, endpoint, "", ERR_PROTOCOL, err);

    const cJSON *resources = cJSON_GetObjectItemCaseSensitive(root, "resources");
    if (!resources && require_resources)
        jsonx_fail(&f, "resources", "is missing");
    else if (resources && !cJSON_IsNull(resources) && !cJSON_IsArray(resources))
        jsonx_fail(&f, "resources", "is not an array");
    else if (cJSON_IsArray(resources))
        env->resources = resources;

    const cJSON *errors = cJSON_GetObjectItemCaseSensitive(root, "errors");
    if (errors && !cJSON_IsNull(errors) && !cJSON_IsArray(errors))
        jsonx_fail(&f, "errors", "is not an array");
    else if (cJSON_IsArray(errors))
        env->errors = errors;

    env->size = jsonx_int64(&f, root, "size", false, -1);

    const cJSON *page = cJSON_GetObjectItemCaseSensitive(root, "page_response");
    if (page && !cJSON_IsNull(page)) {
        if (!cJSON_IsObject(page)) {
            jsonx_fail(&f, "page_response", "is not an object");
        } else {
            env->has_page_response = true;
            env->next_id = jsonx_nonempty(&f, root, "page_response.next_id");
            env->total = jsonx_int64(&f, root, "page_response.total", false, -1);
        }
    }
    if (f.rc != ERR_OK) {
        cJSON_Delete(root);
        memset(env, 0, sizeof *env);
        return f.rc;
    }
    env->root = root;
    return ERR_OK;
}

void api_envelope_free(api_envelope *env)
{
    if (!env)
        return;
    cJSON_Delete(env->root);
    memset(env, 0, sizeof *env);
}

void api_envelope_first_error(const char *body, size_t len, char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = '\0';
    if (!body || len == 0)
        return;
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root)
        return;
    const cJSON *errors = cJSON_GetObjectItemCaseSensitive(root, "errors");
    const cJSON *first = cJSON_IsArray(errors) ? cJSON_GetArrayItem(errors, 0) : NULL;
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(first, "code");
    const cJSON *message = cJSON_GetObjectItemCaseSensitive(first, "message");
    const char *cs = cJSON_IsString(code) ? code->valuestring : NULL;
    const char *ms = cJSON_IsString(message) ? message->valuestring : NULL;
    if (cs && ms)
        snprintf(buf, size, "%.60s: %.200s", cs, ms);
    else if (ms || cs)
        snprintf(buf, size, "%.200s", ms ? ms : cs);
    cJSON_Delete(root);
}

/* ---- Client -------------------------------------------------------------------- */

static const http_service api_service = {
    .token_route = API_ROUTE_TOKEN,
    .token_label = "token exchange",
    .token_body = token_request_body,
    .token_accept = token_accept,
    .token_refused_advice = "check OUTPOST_API_KEY or api_key_file",
    .error_detail = api_envelope_first_error,
    .not_found_advice = "check `base_url` (a path prefix such as /public belongs in it)",
};

error_code api_client_new(const config *cfg, const char *api_key, const http_options *opts, http_client **client,
                          error_info *err)
{
    /* base_url's faults are named first (http_client_new), then the key's. */
    error_info ignored;
    bool base_ok = cfg && cfg->base_url && cfg->base_url[0] && url_check(cfg->base_url, &ignored) == ERR_OK;
    if (base_ok && (!api_key || !api_key[0]))
        return error_set(err, ERR_CONFIG, "the API key is empty; set OUTPOST_API_KEY or api_key_file");
    return http_client_new(cfg, &api_service, api_key, opts, client, err);
}

static size_t resources_count(const api_envelope *env)
{
    return env->resources ? (size_t)cJSON_GetArraySize(env->resources) : 0;
}

/* ---- Views --------------------------------------------------------------------- */

/* What every view of resources[index] starts with: a reader whose messages
 * name the endpoint and the element (prefix, size bytes, must outlive the
 * reader), the element an object, its non-empty "id" into *id (NULL on
 * failure). f->rc says how it went (err filled). */
static error_code view_begin(jsonx_reader *f, char *prefix, size_t size, const char *endpoint, size_t index,
                             const cJSON *object, const char **id, error_info *err)
{
    snprintf(prefix, size, "resources[%zu]", index);
    jsonx_reader_init(f, endpoint, prefix, ERR_PROTOCOL, err);
    if (!cJSON_IsObject(object))
        return f->rc = error_set(err, ERR_PROTOCOL, "%s: %s is not an object", endpoint, prefix);
    *id = jsonx_string(f, object, "id");
    if (f->rc == ERR_OK && (!*id || !(*id)[0]))
        jsonx_fail(f, "id", "is missing or empty");
    if (f->rc != ERR_OK)
        *id = NULL;
    return f->rc;
}

error_code api_incident_view(const char *endpoint, size_t index, const cJSON *object, api_incident *incident,
                             error_info *err)
{
    memset(incident, 0, sizeof *incident);
    char prefix[48];
    jsonx_reader f;
    if (view_begin(&f, prefix, sizeof prefix, endpoint, index, object, &incident->id, err) != ERR_OK)
        return f.rc;
    incident->json = object;
    incident->user = jsonx_string(&f, object, "user.local_username");
    incident->policy = jsonx_string(&f, object, "policy.name");
    incident->dataset = jsonx_string(&f, object, "dataset.name");
    incident->trigger_time = jsonx_string(&f, object, "trigger_time");
    incident->risk_score = jsonx_number(&f, object, "risk_score", &incident->has_risk_score);
    incident->blocked = jsonx_bool(&f, object, "blocked", false);
    incident->ai_severity = field_enum(&f, object, "ai_severity");
    incident->created_by = field_enum(&f, object, "created_by");
    incident->start_event_id = jsonx_nonempty(&f, object, "event_lineage_id.start_event_id");
    incident->end_event_id = jsonx_nonempty(&f, object, "event_lineage_id.end_event_id");
    if (f.rc != ERR_OK)
        memset(incident, 0, sizeof *incident);
    return f.rc;
}

error_code api_event_view(const char *endpoint, size_t index, const cJSON *object, api_event *event, error_info *err)
{
    memset(event, 0, sizeof *event);
    char prefix[48];
    jsonx_reader f;
    if (view_begin(&f, prefix, sizeof prefix, endpoint, index, object, &event->id, err) != ERR_OK)
        return f.rc;
    event->json = object;
    event->timestamp = jsonx_string(&f, object, "timestamp");
    event->kind = field_enum(&f, object, "action.kind");
    event->blocked = jsonx_bool(&f, object, "action.blocked", false);
    event->data_size = jsonx_int64(&f, object, "action.data_size", true, 0);
    event->hostname = jsonx_string(&f, object, "action.hostname");
    event->sensor_kind = field_enum(&f, object, "action.sensor_kind");
    event->user = jsonx_string(&f, object, "user.local_username");
    event->user_id = jsonx_string(&f, object, "user.id");

    event->has_source = optional_object(&f, object, "source");
    event->source_file = jsonx_string(&f, object, "source.file.name");
    event->source_path = jsonx_string(&f, object, "source.local_file.path");
    event->source_tags = jsonx_string_array(&f, object, "source.content.tags");

    event->has_destination = optional_object(&f, object, "destination");
    event->destination_file = jsonx_string(&f, object, "destination.file.name");
    event->destination_path = jsonx_string(&f, object, "destination.local_file.path");
    event->destination_domain = jsonx_string(&f, object, "destination.web.domain");
    event->destination_url = jsonx_string(&f, object, "destination.web.url");
    event->email_to = jsonx_string_array(&f, object, "destination.email.to");
    event->email_subject = jsonx_string(&f, object, "destination.email.subject");
    if (f.rc != ERR_OK)
        memset(event, 0, sizeof *event);
    return f.rc;
}

/* ---- Incident list ----------------------------------------------------------------- */

/* The request body of one page; malloc'd JSON text, NULL on out of memory. */
/* POSTs body (taken: freed here; NULL, its building ran out of memory) to
 * route, waiting for the answer (*answer the caller's, freed with free). */
static MUST_CHECK error_code post_json(http_client *http, const char *route, const char *name, char *body,
                                       char **answer, size_t *answer_len, error_info *err)
{
    if (!body)
        return error_set(err, ERR_NOMEM, "%s: out of memory building the request", name);
    http_request request = {HTTP_POST, route, body, strlen(body), name};
    error_code rc = http_call(http, &request, answer, answer_len, NULL, err);
    free(body);
    return rc;
}

static char *incidents_body(const api_incident_query *q, const char *page_id)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    bool ok = true;
    if (q->filter || q->start_time) {
        cJSON *filter = q->filter ? cJSON_Duplicate(q->filter, 1) : cJSON_CreateObject();
        ok = filter && cJSON_IsObject(filter);
        if (ok && q->start_time) {
            cJSON_DeleteItemFromObjectCaseSensitive(filter, "start_time");
            ok = cJSON_AddStringToObject(filter, "start_time", q->start_time) != NULL;
        }
        if (filter)
            cJSON_AddItemToObject(root, "filter", filter);
    }
    if (ok && (q->page_size > 0 || page_id || q->sort_by)) {
        cJSON *page = cJSON_AddObjectToObject(root, "page_request");
        ok = page != NULL;
        if (ok && q->page_size > 0)
            ok = cJSON_AddNumberToObject(page, "size", q->page_size) != NULL;
        if (ok && page_id)
            ok = cJSON_AddStringToObject(page, "id", page_id) != NULL;
        if (ok && q->sort_by)
            ok = cJSON_AddStringToObject(page, "sort_by", q->sort_by) != NULL;
    }
    if (ok && q->include_ai_summaries)
        ok = cJSON_AddTrueToObject(root, "include_ai_summaries") != NULL;
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

typedef struct token_list {
    char **items;
    size_t count, cap;
} token_list;

static bool token_list_has(const token_list *l, const char *s)
{
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->items[i], s) == 0)
            return true;
    return false;
}

static bool token_list_add(token_list *l, const char *s)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **grown = realloc(l->items, cap * sizeof *grown);
        if (!grown)
            return false;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->count] = text_dup(s);
    return l->items[l->count++] != NULL;
}

/* One page: fetched, parsed, validated and handed to on_page. *next_id is a
 * malloc'd copy of the next page's token (NULL on the last page). */
static MUST_CHECK error_code incidents_page(http_client *http, const api_incident_query *q, const char *page_id,
                                            int page_no, api_incident_page_fn on_page, void *user,
                                            api_list_summary *summary, char **next_id, size_t *count_out,
                                            error_info *err)
{
    *next_id = NULL;
    *count_out = 0;
    char *answer = NULL;
    size_t answer_len = 0;
    error_code rc =
        post_json(http, API_ROUTE_INCIDENTS, NAME_INCIDENTS, incidents_body(q, page_id), &answer, &answer_len, err);
    if (rc != ERR_OK)
        return rc;
    api_envelope env;
    rc = api_envelope_parse(NAME_INCIDENTS, answer, answer_len, true, &env, err);
    free(answer);
    if (rc != ERR_OK)
        return rc;
    size_t count = resources_count(&env);
    api_incident *items = count ? calloc(count, sizeof *items) : NULL;
    if (count && !items) {
        api_envelope_free(&env);
        return error_set(err, ERR_NOMEM, "%s: out of memory", NAME_INCIDENTS);
    }
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, env.resources)
    {
        rc = api_incident_view(NAME_INCIDENTS, i, item, &items[i], err);
        if (rc != ERR_OK)
            break;
        i++;
    }
    if (rc == ERR_OK && env.next_id) {
        *next_id = text_dup(env.next_id);
        if (!*next_id)
            rc = error_set(err, ERR_NOMEM, "%s: out of memory", NAME_INCIDENTS);
    }
    if (rc == ERR_OK) {
        summary->pages = page_no;
        summary->incidents += (int64_t)count;
        if (env.total >= 0)
            summary->total = env.total;
        api_page_info info = {page_no, env.total, env.next_id};
        rc = on_page(user, items, count, &info, err);
    }
    if (rc != ERR_OK) {
        free(*next_id);
        *next_id = NULL;
    }
    free(items);
    api_envelope_free(&env);
    *count_out = count;
    return rc;
}

error_code api_incidents_list(http_client *http, const api_incident_query *query, api_incident_page_fn on_page,
                              void *user, api_list_summary *summary, error_info *err)
{
    api_list_summary local;
    if (!summary)
        summary = &local;
    summary->pages = 0;
    summary->incidents = 0;
    summary->total = -1;
    api_incident_query q;
    memset(&q, 0, sizeof q);
    if (query)
        q = *query;
    if (q.filter && !cJSON_IsObject(q.filter))
        return error_set(err, ERR_CONFIG, "report.filter: must be a JSON object");

    token_list seen = {0};
    char *page_id = NULL;
    error_code rc = ERR_OK;
    int empty_run = 0;
    for (int page_no = 1;; page_no++) {
        char *next_id = NULL;
        size_t count = 0;
        rc = incidents_page(http, &q, page_id, page_no, on_page, user, summary, &next_id, &count, err);
        free(page_id);
        page_id = NULL;
        if (rc != ERR_OK || !next_id)
            break;
        empty_run = count == 0 ? empty_run + 1 : 0;
        if (token_list_has(&seen, next_id)) {
            rc = error_set(err, ERR_PROTOCOL,
                           "%s: the server repeated the page token \"%.80s\" after %d pages; stopping so that no "
                           "incident is skipped silently (try again later)",
                           NAME_INCIDENTS, next_id, page_no);
            free(next_id);
            break;
        }
        if (empty_run >= MAX_EMPTY_PAGES) {
            rc = error_set(err, ERR_PROTOCOL, "%s: %d empty pages in a row that still name a next page; stopping",
                           NAME_INCIDENTS, empty_run);
            free(next_id);
            break;
        }
        if (!token_list_add(&seen, next_id)) {
            free(next_id);
            rc = error_set(err, ERR_NOMEM, "%s: out of memory", NAME_INCIDENTS);
            break;
        }
        if (q.between_pages && (rc = q.between_pages(user, err)) != ERR_OK) {
            free(next_id);
            break;
        }
        page_id = next_id;
    }
    for (size_t i = 0; i < seen.count; i++)
        free(seen.items[i]);
    free(seen.items);
    return rc;
}

/* ---- Event lineage -------------------------------------------------------------------- */

typedef struct lineage_ctx {
    api_lineage_fn done;
    void *user;
} lineage_ctx;

/* Reads event-lineage's answer: resources must be non-empty strings.
 * *ids (malloc'd array of borrowed pointers) and *env are the caller's. */
static MUST_CHECK error_code lineage_parse(const char *body, size_t len, api_envelope *env, const char ***ids,
                                           size_t *count, error_info *err)
{
    *ids = NULL;
    *count = 0;
    error_code rc = api_envelope_parse(NAME_LINEAGE, body, len, true, env, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = resources_count(env);
    const char **list = n ? calloc(n, sizeof *list) : NULL;
    if (n && !list) {
        api_envelope_free(env);
        return error_set(err, ERR_NOMEM, "%s: out of memory", NAME_LINEAGE);
    }
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, env->resources)
    {
        if (!cJSON_IsString(item) || !item->valuestring || !item->valuestring[0]) {
            rc = error_set(err, ERR_PROTOCOL,
                           "%s: resources[%" PRIu64 "] is not a non-empty string (an event identifier)", NAME_LINEAGE,
                           (uint64_t)i);
            break;
        }
        list[i++] = item->valuestring;
    }
    if (rc != ERR_OK) {
        free(list);
        api_envelope_free(env);
        return rc;
    }
    *ids = list;
    *count = n;
    return ERR_OK;
}

static void lineage_done(void *user, error_code code, const error_info *err, const http_response *response)
{
    lineage_ctx *ctx = user;
    if (code != ERR_OK) {
        ctx->done(ctx->user, code, err, NULL, 0);
        free(ctx);
        return;
    }
    error_info e;
    error_clear(&e);
    api_envelope env;
    const char **ids = NULL;
    size_t count = 0;
    code = lineage_parse(response->body, response->body_len, &env, &ids, &count, &e);
    if (code == ERR_OK) {
        ctx->done(ctx->user, ERR_OK, &e, ids, count);
        free(ids);
        api_envelope_free(&env);
    } else {
        ctx->done(ctx->user, code, &e, NULL, 0);
    }
    free(ctx);
}

static char *lineage_body(const char *start_event_id, const char *end_event_id)
{
    cJSON *root = cJSON_CreateObject();
    char *text = NULL;
    if (root && cJSON_AddStringToObject(root, "start_event_id", start_event_id) &&
        cJSON_AddStringToObject(root, "end_event_id", end_event_id))
        text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

error_code api_event_lineage_submit(http_client *http, const char *start_event_id, const char *end_event_id,
                                    api_lineage_fn done, void *user, error_info *err)
{
    if (!start_event_id || !start_event_id[0] || !end_event_id || !end_event_id[0] || !done)
        return error_set(err, ERR_INTERNAL, "%s: both event identifiers are needed", NAME_LINEAGE);
    lineage_ctx *ctx = malloc(sizeof *ctx);
    char *body = lineage_body(start_event_id, end_event_id);
    if (!ctx || !body) {
        free(ctx);
        free(body);
        return error_set(err, ERR_NOMEM, "%s: out of memory", NAME_LINEAGE);
    }
    ctx->done = done;
    ctx->user = user;
    http_request request = {HTTP_POST, API_ROUTE_LINEAGE, body, strlen(body), NAME_LINEAGE};
    error_code rc = http_submit(http, &request, lineage_done, ctx, err);
    free(body);
    if (rc != ERR_OK)
        free(ctx);
    return rc;
}

void api_strings_free(char **strings, size_t count)
{
    if (!strings)
        return;
    for (size_t i = 0; i < count; i++)
        free(strings[i]);
    free(strings);
}

error_code api_event_lineage(http_client *http, const char *start_event_id, const char *end_event_id, char ***ids,
                             size_t *count, error_info *err)
{
    *ids = NULL;
    *count = 0;
    if (!start_event_id || !start_event_id[0] || !end_event_id || !end_event_id[0])
        return error_set(err, ERR_INTERNAL, "%s: both event identifiers are needed", NAME_LINEAGE);
    char *answer = NULL;
    size_t answer_len = 0;
    error_code rc = post_json(http, API_ROUTE_LINEAGE, NAME_LINEAGE, lineage_body(start_event_id, end_event_id),
                              &answer, &answer_len, err);
    if (rc != ERR_OK)
        return rc;
    api_envelope env;
    const char **list = NULL;
    size_t n = 0;
    rc = lineage_parse(answer, answer_len, &env, &list, &n, err);
    free(answer);
    if (rc != ERR_OK)
        return rc;
    char **copies = n ? calloc(n, sizeof *copies) : NULL;
    for (size_t i = 0; copies && i < n; i++) {
        copies[i] = text_dup(list[i]);
        if (!copies[i]) {
            api_strings_free(copies, i);
            copies = NULL;
        }
    }
    free(list);
    api_envelope_free(&env);
    if (n && !copies)
        return error_set(err, ERR_NOMEM, "%s: out of memory", NAME_LINEAGE);
    *ids = copies;
    *count = n;
    return ERR_OK;
}

/* ---- Event details -------------------------------------------------------------------- */

static bool unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* The request of one event-details call: route (GET: with the query) and
 * body (POST). Both malloc'd; false on out of memory. */
static bool details_request(const char *const *ids, size_t count, api_details_method method, char **route, char **body)
{
    *route = NULL;
    *body = NULL;
    if (method == API_DETAILS_GET) {
        size_t cap = strlen(API_ROUTE_DETAILS) + 64;
        for (size_t i = 0; i < count; i++)
            cap += strlen(ids[i]) * 3 + 1;
        char *r = malloc(cap);
        if (!r)
            return false;
        size_t n = (size_t)snprintf(r, cap, "%s?ids=", API_ROUTE_DETAILS);
        static const char hex[] = "0123456789ABCDEF";
        for (size_t i = 0; i < count; i++) {
            if (i)
                r[n++] = ',';
            for (const unsigned char *p = (const unsigned char *)ids[i]; *p; p++) {
                if (unreserved(*p)) {
                    r[n++] = (char)*p;
                } else {
                    r[n++] = '%';
                    r[n++] = hex[*p >> 4];
                    r[n++] = hex[*p & 15];
                }
            }
        }
        snprintf(r + n, cap - n, "&include_content=false");
        *route = r;
        return true;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON *array = root ? cJSON_AddArrayToObject(root, "ids") : NULL;
    bool ok = array != NULL;
    for (size_t i = 0; ok && i < count; i++) {
        cJSON *s = cJSON_CreateString(ids[i]);
        ok = s != NULL;
        if (ok)
            cJSON_AddItemToArray(array, s);
    }
    *body = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    *route = text_dup(API_ROUTE_DETAILS);
    if (!*body || !*route) {
        free(*body);
        free(*route);
        *body = *route = NULL;
        return false;
    }
    return true;
}

/* Parses event-details' answer into views that borrow from details->env. */
static MUST_CHECK error_code details_parse(const char *body, size_t len, api_details *details, error_info *err)
{
    memset(details, 0, sizeof *details);
    error_code rc = api_envelope_parse(NAME_DETAILS, body, len, true, &details->env, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = resources_count(&details->env);
    details->events = n ? calloc(n, sizeof *details->events) : NULL;
    if (n && !details->events) {
        api_envelope_free(&details->env);
        return error_set(err, ERR_NOMEM, "%s: out of memory", NAME_DETAILS);
    }
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, details->env.resources)
    {
        rc = api_event_view(NAME_DETAILS, i, item, &details->events[i], err);
        if (rc != ERR_OK) {
            api_details_free(details);
            return rc;
        }
        i++;
    }
    details->count = n;
    return ERR_OK;
}

void api_details_free(api_details *details)
{
    if (!details)
        return;
    free(details->events);
    api_envelope_free(&details->env);
    memset(details, 0, sizeof *details);
}

typedef struct details_ctx {
    api_details_fn done;
    void *user;
} details_ctx;

static void details_done(void *user, error_code code, const error_info *err, const http_response *response)
{
    details_ctx *ctx = user;
    if (code != ERR_OK) {
        ctx->done(ctx->user, code, err, NULL, 0);
        free(ctx);
        return;
    }
    error_info e;
    error_clear(&e);
    api_details details;
    code = details_parse(response->body, response->body_len, &details, &e);
    if (code == ERR_OK) {
        ctx->done(ctx->user, ERR_OK, &e, details.events, details.count);
        api_details_free(&details);
    } else {
        ctx->done(ctx->user, code, &e, NULL, 0);
    }
    free(ctx);
}

static MUST_CHECK error_code details_check(const char *const *ids, size_t count, error_info *err)
{
    if (!ids || count == 0)
        return error_set(err, ERR_INTERNAL, "%s: no event identifiers to ask for", NAME_DETAILS);
    for (size_t i = 0; i < count; i++)
        if (!ids[i] || !ids[i][0])
            return error_set(err, ERR_INTERNAL, "%s: event identifier %" PRIu64 " is empty", NAME_DETAILS, (uint64_t)i);
    return ERR_OK;
}

error_code api_event_details_submit(http_client *http, const char *const *ids, size_t count, api_details_method method,
                                    api_details_fn done, void *user, error_info *err)
{
    error_code rc = details_check(ids, count, err);
    if (rc != ERR_OK)
        return rc;
    if (!done)
        return error_set(err, ERR_INTERNAL, "%s: no completion callback", NAME_DETAILS);
    char *route = NULL, *body = NULL;
    details_ctx *ctx = malloc(sizeof *ctx);
    if (!ctx || !details_request(ids, count, method, &route, &body)) {
        free(ctx);
        return error_set(err, ERR_NOMEM, "%s: out of memory", NAME_DETAILS);
    }
    ctx->done = done;
    ctx->user = user;
    http_request request = {method == API_DETAILS_GET ? HTTP_GET : HTTP_POST, route, body, body ? strlen(body) : 0,
                            NAME_DETAILS};
    rc = http_submit(http, &request, details_done, ctx, err);
    free(route);
    free(body);
    if (rc != ERR_OK)
        free(ctx);
    return rc;
}

error_code api_event_details(http_client *http, const char *const *ids, size_t count, api_details_method method,
                             api_details *details, error_info *err)
{
    memset(details, 0, sizeof *details);
    error_code rc = details_check(ids, count, err);
    if (rc != ERR_OK)
        return rc;
    char *route = NULL, *body = NULL;
    if (!details_request(ids, count, method, &route, &body))
        return error_set(err, ERR_NOMEM, "%s: out of memory", NAME_DETAILS);
    http_request request = {method == API_DETAILS_GET ? HTTP_GET : HTTP_POST, route, body, body ? strlen(body) : 0,
                            NAME_DETAILS};
    char *answer = NULL;
    size_t answer_len = 0;
    rc = http_call(http, &request, &answer, &answer_len, NULL, err);
    free(route);
    free(body);
    if (rc != ERR_OK)
        return rc;
    rc = details_parse(answer, answer_len, details, err);
    free(answer);
    return rc;
}

/* ---- Installer ------------------------------------------------------------------------ */

error_code api_installer_get(http_client *http, const api_installer_request *request,
                             const http_stream_callbacks *callbacks, http_stream_result *result, error_info *err)
{
    const char *platform = request && request->platform ? request->platform : "";
    size_t n = strlen(platform);
    bool valid = n > 0 && n <= 32;
    for (size_t i = 0; valid && i < n; i++)
        valid = isalnum((unsigned char)platform[i]) || platform[i] == '_' || platform[i] == '-';
    if (!valid)
        return error_set(err, ERR_CONFIG, "installer.platform: \"%.40s\" is not a platform name ([A-Za-z0-9_-]+)",
                         platform);
    char route[96];
    snprintf(route, sizeof route, "/v2/installer/%s/latest", platform);
    static const char *const keep[] = {API_HEADER_INSTALLER_VERSION, NULL};
    http_stream_request sreq = {route, request->range, request->if_range, request->max_bytes_per_second, NAME_INSTALLER,
                                keep};
    return http_stream_get(http, &sreq, callbacks, result, err);
}

const char *api_installer_version(const http_stream_headers *h)
{
    return http_stream_header(h, API_HEADER_INSTALLER_VERSION);
}
