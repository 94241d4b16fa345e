/*
 * api_probe.c — a small driver of outpost's API client core (http.c,
 * api.c) for the integration tests and the API benchmark.
 *
 *   api_probe --config FILE [--verbose N] [--base-url URL] COMMAND [ARGS]
 *
 *   list-incidents [--page-size N] [--start-time ISO]   page through incidents
 *   burst N [--route details|lineage|incidents|mixed]   N requests at once
 *   lineage START END                                   one event-lineage call
 *   details [--get] ID...                               one event-details call
 *   get-installer-headers                               stop after the headers
 *   get-installer [--range SPEC] [--if-range V]         read the whole body
 *   bench-report [--batch N] [--page-size N]            list, lineage, details
 *
 * The key comes from OUTPOST_API_KEY or the config's api_key_file, as in
 * outpost. It prints one JSON object on stdout (the command's result, the
 * client's counters under "stats", and "error" when it failed) and exits
 * with outpost's exit code for the error (0, 1, 2, 3 or 75).
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "net/api.h"
#include "core/clock.h"
#include "core/config.h"
#include "net/http.h"

typedef struct probe {
    config cfg;
    http_client *http;
    cJSON *out;
    int64_t started_ms;
} probe;

static void usage(void)
{
    fprintf(stderr, "usage: api_probe --config FILE [--verbose N] [--base-url URL] COMMAND [ARGS]\n"
                    "commands: list-incidents, burst N, lineage START END, details ID..., get-installer-headers,\n"
                    "          get-installer, bench-report\n");
}

static void add_stats(probe *p)
{
    http_stats st;
    memset(&st, 0, sizeof st);
    if (p->http)
        http_client_stats(p->http, &st);
    cJSON *s = cJSON_AddObjectToObject(p->out, "stats");
    cJSON_AddNumberToObject(s, "api_calls", (double)st.api_calls);
    cJSON_AddNumberToObject(s, "token_exchanges", (double)st.token_exchanges);
    cJSON_AddNumberToObject(s, "retries", (double)st.retries);
    cJSON_AddNumberToObject(s, "responses_429", (double)st.responses_429);
    cJSON_AddNumberToObject(s, "max_in_flight", (double)st.max_in_flight);
    cJSON_AddNumberToObject(s, "retry_after_until_ms", (double)st.retry_after_until_ms);
    cJSON_AddNumberToObject(s, "retry_wait_longest_ms", (double)st.retry_wait_longest_ms);
    cJSON_AddNumberToObject(s, "retry_wait_most_ms", (double)st.retry_wait_most_ms);
    cJSON_AddNumberToObject(s, "elapsed_ms", (double)(clock_now_ms(NULL) - p->started_ms));
}

/* ---- list-incidents --------------------------------------------------------- */

static error_code list_page(void *user, const api_incident *items, size_t count, const api_page_info *page,
                            error_info *err)
{
    (void)page;
    (void)err;
    cJSON *ids = user;
    for (size_t i = 0; i < count; i++)
        cJSON_AddItemToArray(ids, cJSON_CreateString(items[i].id));
    return ERR_OK;
}

static error_code cmd_list(probe *p, int argc, char **argv, error_info *err)
{
    api_incident_query q;
    memset(&q, 0, sizeof q);
    q.page_size = p->cfg.report.page_size;
    q.filter = p->cfg.report.filter;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--page-size") == 0 && i + 1 < argc)
            q.page_size = atoi(argv[++i]);
        else if (strcmp(argv[i], "--start-time") == 0 && i + 1 < argc)
            q.start_time = argv[++i];
    }
    cJSON *ids = cJSON_AddArrayToObject(p->out, "ids");
    api_list_summary summary;
    error_code rc = api_incidents_list(p->http, &q, list_page, ids, &summary, err);
    cJSON_AddNumberToObject(p->out, "pages", summary.pages);
    cJSON_AddNumberToObject(p->out, "incidents", (double)summary.incidents);
    cJSON_AddNumberToObject(p->out, "total", (double)summary.total);
    return rc;
}

/* ---- burst ---------------------------------------------------------------------- */

typedef struct burst_tally {
    int ok;
    int failed;
    cJSON *errors;
} burst_tally;

static void burst_done(void *user, error_code code, const error_info *err, const http_response *response)
{
    (void)response;
    burst_tally *t = user;
    if (code == ERR_OK) {
        t->ok++;
    } else {
        t->failed++;
        if (cJSON_GetArraySize(t->errors) < 5)
            cJSON_AddItemToArray(t->errors, cJSON_CreateString(err->message));
    }
}

static error_code cmd_burst(probe *p, int argc, char **argv, error_info *err)
{
    if (argc < 1) {
        usage();
        return error_set(err, ERR_USAGE, "burst needs a count");
    }
    int n = atoi(argv[0]);
    const char *route = "details";
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--route") == 0 && i + 1 < argc)
            route = argv[++i];
    burst_tally t = {0, 0, cJSON_AddArrayToObject(p->out, "errors")};
    for (int i = 0; i < n; i++) {
        const char *which = route;
        if (strcmp(route, "mixed") == 0)
            which = i % 3 == 0 ? "details" : i % 3 == 1 ? "incidents" : "details-get";
        char body[128], path[128];
        http_request req;
        memset(&req, 0, sizeof req);
        if (strcmp(which, "incidents") == 0) {
            req =
                (http_request){HTTP_POST, API_ROUTE_INCIDENTS, "{\"page_request\":{\"size\":1}}", 0, "incidents/list"};
        } else if (strcmp(which, "details-get") == 0) {
            snprintf(path, sizeof path, "%s?ids=probe-%d&include_content=false", API_ROUTE_DETAILS, i);
            req = (http_request){HTTP_GET, path, NULL, 0, "event-details"};
        } else {
            snprintf(body, sizeof body, "{\"ids\":[\"probe-%d\"]}", i);
            req = (http_request){HTTP_POST, API_ROUTE_DETAILS, body, 0, "event-details"};
        }
        error_code rc = http_submit(p->http, &req, burst_done, &t, err);
        if (rc != ERR_OK)
            return rc;
    }
    error_code rc = http_run(p->http, 0, err);
    cJSON_AddNumberToObject(p->out, "ok", t.ok);
    cJSON_AddNumberToObject(p->out, "failed", t.failed);
    if (rc == ERR_OK && t.failed)
        rc = error_set(err, ERR_TEMPORARY, "%d of %d requests failed", t.failed, n);
    return rc;
}

/* ---- lineage, details ------------------------------------------------------------- */

static error_code cmd_lineage(probe *p, int argc, char **argv, error_info *err)
{
    if (argc < 2)
        return error_set(err, ERR_USAGE, "lineage needs START and END");
    char **ids = NULL;
    size_t count = 0;
    error_code rc = api_event_lineage(p->http, argv[0], argv[1], &ids, &count, err);
    cJSON *arr = cJSON_AddArrayToObject(p->out, "ids");
    for (size_t i = 0; i < count; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(ids[i]));
    api_strings_free(ids, count);
    return rc;
}

static cJSON *event_json(const api_event *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", e->id);
    if (e->kind)
        cJSON_AddStringToObject(o, "kind", e->kind);
    else
        cJSON_AddNullToObject(o, "kind");
    if (e->hostname)
        cJSON_AddStringToObject(o, "hostname", e->hostname);
    cJSON_AddBoolToObject(o, "blocked", e->blocked);
    char size[32];
    snprintf(size, sizeof size, "%" PRId64, e->data_size);
    cJSON_AddRawToObject(o, "data_size", size);
    cJSON_AddBoolToObject(o, "has_source", e->has_source);
    cJSON_AddBoolToObject(o, "has_destination", e->has_destination);
    return o;
}

static error_code cmd_details(probe *p, int argc, char **argv, error_info *err)
{
    api_details_method method = API_DETAILS_POST;
    if (argc > 0 && strcmp(argv[0], "--get") == 0) {
        method = API_DETAILS_GET;
        argc--;
        argv++;
    }
    if (argc < 1)
        return error_set(err, ERR_USAGE, "details needs event identifiers");
    api_details details;
    error_code rc = api_event_details(p->http, (const char *const *)argv, (size_t)argc, method, &details, err);
    cJSON *arr = cJSON_AddArrayToObject(p->out, "events");
    for (size_t i = 0; rc == ERR_OK && i < details.count; i++)
        cJSON_AddItemToArray(arr, event_json(&details.events[i]));
    api_details_free(&details);
    return rc;
}

/* ---- installer ------------------------------------------------------------------ */

typedef struct installer_ctx {
    cJSON *headers;
    bool stop_at_headers;
    int64_t bytes;
} installer_ctx;

static void add_string_or_null(cJSON *o, const char *name, const char *value)
{
    if (value)
        cJSON_AddStringToObject(o, name, value);
    else
        cJSON_AddNullToObject(o, name);
}

static http_stream_action installer_headers(void *user, const http_stream_headers *h)
{
    installer_ctx *c = user;
    cJSON *o = c->headers;
    cJSON_AddNumberToObject(o, "status", h->status);
    cJSON_AddNumberToObject(o, "content_length", (double)h->content_length);
    add_string_or_null(o, "content_range", h->content_range);
    add_string_or_null(o, "etag", h->etag);
    add_string_or_null(o, "last_modified", h->last_modified);
    add_string_or_null(o, "content_disposition", h->content_disposition);
    add_string_or_null(o, "installer_version", api_installer_version(h));
    cJSON_AddStringToObject(o, "url", h->url);
    cJSON_AddNumberToObject(o, "redirects", h->redirects);
    return c->stop_at_headers ? HTTP_STREAM_STOP : HTTP_STREAM_CONTINUE;
}

static http_stream_action installer_data(void *user, const void *data, size_t len)
{
    (void)data;
    ((installer_ctx *)user)->bytes += (int64_t)len;
    return HTTP_STREAM_CONTINUE;
}

static error_code cmd_installer(probe *p, bool headers_only, int argc, char **argv, error_info *err)
{
    api_installer_request req = {p->cfg.installer.platform ? p->cfg.installer.platform : "windows", NULL, NULL, 0};
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--range") == 0 && i + 1 < argc)
            req.range = argv[++i];
        else if (strcmp(argv[i], "--if-range") == 0 && i + 1 < argc)
            req.if_range = argv[++i];
    }
    installer_ctx c = {cJSON_AddObjectToObject(p->out, "headers"), headers_only, 0};
    http_stream_callbacks cb = {installer_headers, installer_data, &c};
    http_stream_result result;
    error_code rc = api_installer_get(p->http, &req, &cb, &result, err);
    cJSON_AddNumberToObject(p->out, "body_bytes", (double)result.body_bytes);
    cJSON_AddBoolToObject(p->out, "stopped", result.stopped);
    return rc;
}

/* ---- bench-report: the report's request pattern ------------------------------------ */

typedef struct id_set {
    char **slots;
    size_t cap, count;
} id_set;

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

/* Adds s; true when it was new. */
static bool id_set_add(id_set *set, const char *s)
{
    if ((set->count + 1) * 2 > set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 1024;
        char **slots = calloc(cap, sizeof *slots);
        for (size_t i = 0; i < set->cap; i++) {
            if (!set->slots[i])
                continue;
            size_t j = hash_text(set->slots[i]) & (cap - 1);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = set->slots[i];
        }
        free(set->slots);
        set->slots = slots;
        set->cap = cap;
    }
    size_t j = hash_text(s) & (set->cap - 1);
    while (set->slots[j]) {
        if (strcmp(set->slots[j], s) == 0)
            return false;
        j = (j + 1) & (set->cap - 1);
    }
    size_t n = strlen(s) + 1;
    set->slots[j] = malloc(n);
    memcpy(set->slots[j], s, n);
    set->count++;
    return true;
}

static void id_set_free(id_set *set)
{
    for (size_t i = 0; i < set->cap; i++)
        free(set->slots[i]);
    free(set->slots);
}

typedef struct bench {
    http_client *http;
    int batch;
    id_set unique;
    char **pending; /* ids waiting for a full batch */
    int pending_count;
    int pairs_cap, pairs_count;
    char **starts, **ends;
    int lineage_calls, lineage_failed, details_calls, details_failed, events;
    error_info first_error;
} bench;

static error_code bench_page(void *user, const api_incident *items, size_t count, const api_page_info *page,
                             error_info *err)
{
    (void)page;
    (void)err;
    bench *b = user;
    for (size_t i = 0; i < count; i++) {
        if (!items[i].start_event_id || !items[i].end_event_id)
            continue;
        if (b->pairs_count == b->pairs_cap) {
            b->pairs_cap = b->pairs_cap ? b->pairs_cap * 2 : 256;
            b->starts = realloc(b->starts, (size_t)b->pairs_cap * sizeof *b->starts);
            b->ends = realloc(b->ends, (size_t)b->pairs_cap * sizeof *b->ends);
        }
        b->starts[b->pairs_count] = strdup(items[i].start_event_id);
        b->ends[b->pairs_count] = strdup(items[i].end_event_id);
        b->pairs_count++;
    }
    return ERR_OK;
}

static void bench_details_done(void *user, error_code code, const error_info *err, const api_event *events,
                               size_t count)
{
    (void)events;
    bench *b = user;
    if (code != ERR_OK) {
        if (!b->details_failed++ && !b->lineage_failed)
            b->first_error = *err;
        return;
    }
    b->events += (int)count;
}

static void bench_flush(bench *b)
{
    if (b->pending_count == 0)
        return;
    error_info err;
    if (api_event_details_submit(b->http, (const char *const *)b->pending, (size_t)b->pending_count, API_DETAILS_POST,
                                 bench_details_done, b, &err) == ERR_OK)
        b->details_calls++;
    for (int i = 0; i < b->pending_count; i++)
        free(b->pending[i]);
    b->pending_count = 0;
}

static void bench_lineage_done(void *user, error_code code, const error_info *err, const char *const *ids, size_t count)
{
    bench *b = user;
    if (code != ERR_OK) {
        if (!b->lineage_failed++ && !b->details_failed)
            b->first_error = *err;
        return;
    }
    for (size_t i = 0; i < count; i++) {
        if (!id_set_add(&b->unique, ids[i]))
            continue;
        b->pending[b->pending_count++] = strdup(ids[i]);
        if (b->pending_count == b->batch)
            bench_flush(b);
    }
}

static error_code cmd_bench_report(probe *p, int argc, char **argv, error_info *err)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.http = p->http;
    b.batch = p->cfg.report.details_batch > 0 ? p->cfg.report.details_batch : 50;
    api_incident_query q;
    memset(&q, 0, sizeof q);
    q.page_size = p->cfg.report.page_size;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
            b.batch = atoi(argv[++i]);
        else if (strcmp(argv[i], "--page-size") == 0 && i + 1 < argc)
            q.page_size = atoi(argv[++i]);
    }
    b.pending = calloc((size_t)b.batch, sizeof *b.pending);
    api_list_summary summary;
    error_code rc = api_incidents_list(p->http, &q, bench_page, &b, &summary, err);
    int64_t listed_ms = clock_now_ms(NULL) - p->started_ms;
    /* Lineage calls in windows of 200, details batches as ids arrive. */
    for (int i = 0; rc == ERR_OK && i < b.pairs_count; i++) {
        rc = api_event_lineage_submit(p->http, b.starts[i], b.ends[i], bench_lineage_done, &b, err);
        b.lineage_calls++;
        if (rc == ERR_OK && http_pending(p->http) >= 200)
            rc = http_run(p->http, 100, err);
    }
    if (rc == ERR_OK)
        rc = http_run(p->http, 0, err);
    bench_flush(&b);
    if (rc == ERR_OK)
        rc = http_run(p->http, 0, err);
    if (rc == ERR_OK && (b.lineage_failed || b.details_failed)) {
        *err = b.first_error;
        rc = err->code;
    }
    http_stats st;
    http_client_stats(p->http, &st);
    int64_t elapsed = clock_now_ms(NULL) - p->started_ms;
    int64_t expected = summary.pages + b.lineage_calls + ((int64_t)b.unique.count + b.batch - 1) / b.batch;
    cJSON_AddNumberToObject(p->out, "pages", summary.pages);
    cJSON_AddNumberToObject(p->out, "incidents", (double)summary.incidents);
    cJSON_AddNumberToObject(p->out, "lineage_calls", b.lineage_calls);
    cJSON_AddNumberToObject(p->out, "unique_events", (double)b.unique.count);
    cJSON_AddNumberToObject(p->out, "details_calls", b.details_calls);
    cJSON_AddNumberToObject(p->out, "events", b.events);
    cJSON_AddNumberToObject(p->out, "expected_requests", (double)expected);
    cJSON_AddNumberToObject(p->out, "requests_without_tokens", (double)(st.api_calls - st.token_exchanges));
    cJSON_AddNumberToObject(p->out, "listing_ms", (double)listed_ms);
    cJSON_AddNumberToObject(p->out, "requests_per_second",
                            elapsed > 0 ? (double)(st.api_calls - st.token_exchanges) * 1000.0 / (double)elapsed : 0);
    for (int i = 0; i < b.pairs_count; i++) {
        free(b.starts[i]);
        free(b.ends[i]);
    }
    free(b.starts);
    free(b.ends);
    free(b.pending);
    id_set_free(&b.unique);
    return rc;
}

/* ---- main ---------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *config_path = NULL, *base_url = NULL;
    int verbosity = 0, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            config_path = argv[++i];
        else if (strcmp(argv[i], "--verbose") == 0 && i + 1 < argc)
            verbosity = atoi(argv[++i]);
        else if (strcmp(argv[i], "--base-url") == 0 && i + 1 < argc)
            base_url = argv[++i];
        else {
            usage();
            return 2;
        }
    }
    if (!config_path || i >= argc) {
        usage();
        return 2;
    }
    const char *command = argv[i++];
    probe p;
    memset(&p, 0, sizeof p);
    p.out = cJSON_CreateObject();
    p.started_ms = clock_now_ms(NULL);
    error_info err;
    error_clear(&err);
    char *key = NULL;
    error_code rc = config_init_defaults(&p.cfg, &err);
    if (rc == ERR_OK)
        rc = config_load(&p.cfg, config_path, &err);
    if (rc == ERR_OK && base_url) {
        free(p.cfg.base_url);
        p.cfg.base_url = strdup(base_url);
    }
    if (rc == ERR_OK)
        rc = config_load_api_key(&p.cfg, &key, &err);
    if (rc == ERR_OK) {
        http_options opts = {.verbosity = verbosity, .trace = stderr};
        rc = api_client_new(&p.cfg, key, &opts, &p.http, &err);
    }
    dynbuf_secret_free(key);
    if (rc == ERR_OK) {
        int n = argc - i;
        char **args = argv + i;
        if (strcmp(command, "list-incidents") == 0)
            rc = cmd_list(&p, n, args, &err);
        else if (strcmp(command, "burst") == 0)
            rc = cmd_burst(&p, n, args, &err);
        else if (strcmp(command, "lineage") == 0)
            rc = cmd_lineage(&p, n, args, &err);
        else if (strcmp(command, "details") == 0)
            rc = cmd_details(&p, n, args, &err);
        else if (strcmp(command, "get-installer-headers") == 0)
            rc = cmd_installer(&p, true, n, args, &err);
        else if (strcmp(command, "get-installer") == 0)
            rc = cmd_installer(&p, false, n, args, &err);
        else if (strcmp(command, "bench-report") == 0)
            rc = cmd_bench_report(&p, n, args, &err);
        else {
            usage();
            rc = error_set(&err, ERR_USAGE, "unknown command %s", command);
        }
    }
    add_stats(&p);
    if (rc != ERR_OK) {
        cJSON *e = cJSON_AddObjectToObject(p.out, "error");
        cJSON_AddStringToObject(e, "code", error_name(rc));
        cJSON_AddNumberToObject(e, "exit", error_exit_code(rc));
        cJSON_AddStringToObject(e, "message", err.message);
        fprintf(stderr, "api_probe: %s\n", err.message);
    }
    char *text = cJSON_PrintUnformatted(p.out);
    printf("%s\n", text);
    free(text);
    cJSON_Delete(p.out);
    http_client_free(p.http);
    config_free(&p.cfg);
    return rc == ERR_OK ? 0 : error_exit_code(rc);
}
