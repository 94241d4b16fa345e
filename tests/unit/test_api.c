/* test_api.c — the routes layer (api.c): envelope parsing (valid, each
 * wrong type, missing fields, unknown fields, empty next_id), incident and
 * event views with the document's defaults and "unspecified" enums, the
 * paging loop (end markers, repeated tokens), lineage and details calls
 * (queued and synchronous, POST and GET), and the installer route, over
 * http.c's fake transport. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/api.h"
#include "net/http_fake.h"

#include "support.h"

/* ---- envelope ------------------------------------------------------------------ */

static error_code parse(const char *text, bool required, api_envelope *env, error_info *err)
{
    return api_envelope_parse("event-details", text, strlen(text), required, env, err);
}

static void test_envelope_valid(void **state)
{
    (void)state;
    api_envelope env;
    error_info err;
    assert_int_equal(parse("{\"type\":12,\"size\":2,\"resources\":[1,2],\"errors\":[],\"unknown\":{\"x\":1},"
                           "\"page_response\":{\"next_id\":\"abc\",\"total\":40}}",
                           true, &env, &err),
                     ERR_OK);
    assert_int_equal(env.size, 2);
    assert_int_equal(cJSON_GetArraySize(env.resources), 2);
    assert_non_null(env.errors);
    assert_true(env.has_page_response);
    assert_string_equal(env.next_id, "abc");
    assert_int_equal(env.total, 40);
    api_envelope_free(&env);

    /* The end of paging: "", null, absent; null resources read as empty. */
    static const char *const ends[] = {"{\"resources\":[],\"page_response\":{\"next_id\":\"\"}}",
                                       "{\"resources\":[],\"page_response\":{\"next_id\":null,\"total\":null}}",
                                       "{\"resources\":[],\"page_response\":{}}", "{\"resources\":null}"};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        assert_int_equal(parse(ends[i], true, &env, &err), ERR_OK);
        assert_null(env.next_id);
        assert_int_equal(env.total, -1);
        assert_int_equal(env.size, -1);
        api_envelope_free(&env);
    }
    /* Not required: absent is fine. */
    assert_int_equal(parse("{}", false, &env, &err), ERR_OK);
    assert_null(env.resources);
    api_envelope_free(&env);
}

static void test_envelope_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"", "event-details: the answer is empty"},
        {"{\"resources\":[", "event-details: the answer is not valid JSON"},
        {"<html>error</html>", "not valid JSON"},
        {"[1,2]", "event-details: the answer is not a JSON object"},
        {"{}", "event-details: field `resources` is missing"},
        {"{\"resources\":{\"items\":[]}}", "event-details: field `resources` is not an array"},
        {"{\"resources\":[],\"size\":\"2\"}", "event-details: field `size` is not an integer"},
        {"{\"resources\":[],\"size\":2.5}", "field `size` is not an integer"},
        {"{\"resources\":[],\"errors\":{\"count\":0}}", "event-details: field `errors` is not an array"},
        {"{\"resources\":[],\"page_response\":[]}", "field `page_response` is not an object"},
        {"{\"resources\":[],\"page_response\":{\"next_id\":12345}}", "field `page_response.next_id` is not a string"},
        {"{\"resources\":[],\"page_response\":{\"total\":\"40\"}}", "field `page_response.total` is not an integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        api_envelope env;
        error_info err;
        error_code rc = parse(cases[i].text, true, &env, &err);
        if (rc != ERR_PROTOCOL)
            fail_msg("\"%s\": code %d", cases[i].text, rc);
        if (!strstr(err.message, cases[i].message))
            fail_msg("\"%s\": message \"%s\"", cases[i].text, err.message);
        assert_null(env.root);
    }
}

static void test_envelope_first_error(void **state)
{
    (void)state;
    char buf[128];
    const char *body = "{\"errors\":[{\"code\":\"bad_request\",\"message\":\"size too large\"}]}";
    api_envelope_first_error(body, strlen(body), buf, sizeof buf);
    assert_string_equal(buf, "bad_request: size too large");
    api_envelope_first_error("nope", 4, buf, sizeof buf);
    assert_string_equal(buf, "");
}

/* ---- views ----------------------------------------------------------------------- */

static cJSON *json(const char *text)
{
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    return j;
}

static void test_incident_view_full_and_defaults(void **state)
{
    (void)state;
    cJSON *j = json("{\"id\":\"inc-1\",\"user\":{\"local_username\":\"alice\"},\"policy\":{\"name\":\"P\"},"
                    "\"dataset\":{\"name\":\"D\"},\"trigger_time\":\"2026-11-21T10:00:00Z\",\"risk_score\":87.5,"
                    "\"blocked\":true,\"ai_severity\":\"high\",\"created_by\":\"policy\",\"new_field\":[1],"
                    "\"event_lineage_id\":{\"start_event_id\":\"e1\",\"end_event_id\":\"e9\"}}");
    api_incident inc;
    error_info err;
    assert_int_equal(api_incident_view("incidents/list", 0, j, &inc, &err), ERR_OK);
    assert_string_equal(inc.id, "inc-1");
    assert_string_equal(inc.user, "alice");
    assert_string_equal(inc.policy, "P");
    assert_string_equal(inc.dataset, "D");
    assert_string_equal(inc.trigger_time, "2026-11-21T10:00:00Z");
    assert_true(inc.has_risk_score);
    assert_true(inc.risk_score == 87.5);
    assert_true(inc.blocked);
    assert_string_equal(inc.ai_severity, "high");
    assert_string_equal(inc.created_by, "policy");
    assert_string_equal(inc.start_event_id, "e1");
    assert_string_equal(inc.end_event_id, "e9");
    assert_ptr_equal(inc.json, j);
    cJSON_Delete(j);

    j = json("{\"id\":\"inc-2\",\"user\":null,\"ai_severity\":\"SEVERITY_UNSPECIFIED\","
             "\"created_by\":\"created_by_unspecified\",\"event_lineage_id\":{\"start_event_id\":\"\","
             "\"end_event_id\":null}}");
    assert_int_equal(api_incident_view("incidents/list", 1, j, &inc, &err), ERR_OK);
    assert_null(inc.user);
    assert_null(inc.policy);
    assert_false(inc.blocked);
    assert_false(inc.has_risk_score);
    assert_null(inc.ai_severity);
    assert_null(inc.created_by);
    assert_null(inc.start_event_id);
    assert_null(inc.end_event_id);
    cJSON_Delete(j);
}

static void test_incident_view_wrong_types(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"{\"id\":\"a\",\"risk_score\":\"87\"}", "incidents/list: resources[4].risk_score is not a number"},
        {"{\"id\":\"a\",\"trigger_time\":1764000000}", "resources[4].trigger_time is not a string"},
        {"{\"id\":\"a\",\"event_lineage_id\":\"start..end\"}", "resources[4].event_lineage_id is not an object"},
        {"{\"id\":\"a\",\"blocked\":\"no\"}", "resources[4].blocked is not a boolean"},
        {"{\"id\":\"a\",\"user\":{\"local_username\":5}}", "resources[4].user.local_username is not a string"},
        {"{\"id\":7}", "resources[4].id is not a string"},
        {"{\"id\":\"\"}", "resources[4].id is missing or empty"},
        {"{\"user\":{}}", "resources[4].id is missing or empty"},
        {"[]", "incidents/list: resources[4] is not an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *j = json(cases[i].text);
        api_incident inc;
        error_info err;
        assert_int_equal(api_incident_view("incidents/list", 4, j, &inc, &err), ERR_PROTOCOL);
        if (!strstr(err.message, cases[i].message))
            fail_msg("%s: message \"%s\"", cases[i].text, err.message);
        cJSON_Delete(j);
    }
}

static void test_event_view(void **state)
{
    (void)state;
    cJSON *j = json("{\"id\":\"e1\",\"timestamp\":\"2026-11-21T10:00:00Z\",\"action\":{\"kind\":\"upload\","
                    "\"blocked\":true,\"data_size\":123456789012,\"hostname\":\"pc-1\",\"sensor_kind\":\"endpoint\"},"
                    "\"user\":{\"local_username\":\"bob\",\"id\":\"u1\"},"
                    "\"source\":{\"file\":{\"name\":\"a.txt\"},\"local_file\":{\"path\":\"C:/a.txt\"},"
                    "\"content\":{\"tags\":[\"pii\",\"pci\"]}},"
                    "\"destination\":{\"web\":{\"domain\":\"x.example\",\"url\":\"https://x.example/u\"},"
                    "\"email\":{\"to\":[\"c@example.com\"],\"subject\":\"hi\"}},\"extra\":true}");
    api_event ev;
    error_info err;
    assert_int_equal(api_event_view("event-details", 0, j, &ev, &err), ERR_OK);
    assert_string_equal(ev.id, "e1");
    assert_string_equal(ev.kind, "upload");
    assert_true(ev.blocked);
    assert_int_equal(ev.data_size, 123456789012LL);
    assert_string_equal(ev.hostname, "pc-1");
    assert_string_equal(ev.sensor_kind, "endpoint");
    assert_string_equal(ev.user, "bob");
    assert_string_equal(ev.user_id, "u1");
    assert_true(ev.has_source);
    assert_string_equal(ev.source_file, "a.txt");
    assert_string_equal(ev.source_path, "C:/a.txt");
    assert_int_equal(cJSON_GetArraySize(ev.source_tags), 2);
    assert_true(ev.has_destination);
    assert_null(ev.destination_file);
    assert_string_equal(ev.destination_domain, "x.example");
    assert_string_equal(ev.destination_url, "https://x.example/u");
    assert_int_equal(cJSON_GetArraySize(ev.email_to), 1);
    assert_string_equal(ev.email_subject, "hi");
    cJSON_Delete(j);

    /* Minimal: defaults, absent members, unspecified enums, int64 as string. */
    j = json("{\"id\":\"e2\",\"action\":{\"kind\":\"ACTION_KIND_UNSPECIFIED\",\"sensor_kind\":\"unspecified\","
             "\"data_size\":\"9007199254740993\"},\"destination\":{\"email\":{\"to\":[]}}}");
    assert_int_equal(api_event_view("event-details", 1, j, &ev, &err), ERR_OK);
    assert_null(ev.kind);
    assert_null(ev.sensor_kind);
    assert_false(ev.blocked);
    assert_int_equal(ev.data_size, 9007199254740993LL);
    assert_false(ev.has_source);
    assert_null(ev.source_tags);
    assert_true(ev.has_destination);
    assert_int_equal(cJSON_GetArraySize(ev.email_to), 0);
    assert_null(ev.timestamp);
    cJSON_Delete(j);

    j = json("{\"id\":\"e3\"}");
    assert_int_equal(api_event_view("event-details", 2, j, &ev, &err), ERR_OK);
    assert_int_equal(ev.data_size, 0);
    assert_false(ev.has_destination);
    cJSON_Delete(j);
}

static void test_event_view_wrong_types(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"{\"id\":\"e\",\"action\":{\"blocked\":\"no\"}}",
         "event-details: resources[2].action.blocked is not a boolean"},
        {"{\"id\":\"e\",\"action\":{\"data_size\":1.5}}", "resources[2].action.data_size is not an integer"},
        {"{\"id\":\"e\",\"action\":{\"data_size\":\"12kb\"}}", "action.data_size is not an integer"},
        {"{\"id\":\"e\",\"action\":[]}", "resources[2].action is not an object"},
        {"{\"id\":\"e\",\"destination\":{\"email\":{\"to\":\"someone@example.com\"}}}",
         "destination.email.to is not an array"},
        {"{\"id\":\"e\",\"destination\":{\"email\":{\"subject\":7}}}", "destination.email.subject is not a string"},
        {"{\"id\":\"e\",\"source\":{\"content\":{\"tags\":[\"a\",1]}}}",
         "source.content.tags holds an element that is not a string"},
        {"{\"id\":\"e\",\"source\":\"disk\"}", "resources[2].source is not an object"},
        {"{\"timestamp\":\"x\"}", "resources[2].id is missing or empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *j = json(cases[i].text);
        api_event ev;
        error_info err;
        assert_int_equal(api_event_view("event-details", 2, j, &ev, &err), ERR_PROTOCOL);
        if (!strstr(err.message, cases[i].message))
            fail_msg("%s: message \"%s\"", cases[i].text, err.message);
        cJSON_Delete(j);
    }
}

static void test_unspecified(void **state)
{
    (void)state;
    assert_true(api_enum_unspecified("unspecified"));
    assert_true(api_enum_unspecified("SEVERITY_UNSPECIFIED"));
    assert_true(api_enum_unspecified("kind_Unspecified"));
    assert_false(api_enum_unspecified("specified"));
    assert_false(api_enum_unspecified("high"));
    assert_false(api_enum_unspecified(""));
}

/* ---- routes over the fake transport ------------------------------------------------- */

typedef struct server {
    int pages;             /* pages served so far */
    int page_count;        /* pages to serve */
    const char *end_style; /* "empty", "null", "absent", "repeat" */
    char last_url[512];
    char last_body[1024];
    char first_incidents_body[1024];
    const char *override; /* answer every API call with this body */
} server;

static error_code fake(void *ctx, const char *method, const char *url, const char *body, size_t body_len,
                       const char *extra, http_fake_response *r, error_info *err)
{
    (void)method;
    (void)extra;
    (void)err;
    server *s = ctx;
    if (support_answer_token(url, "t", r))
        return ERR_OK;
    r->status = 200;
    snprintf(s->last_url, sizeof s->last_url, "%s", url);
    snprintf(s->last_body, sizeof s->last_body, "%.*s", (int)body_len, body);
    char answer[2048];
    if (s->override) {
        snprintf(answer, sizeof answer, "%s", s->override);
    } else if (strstr(url, "/v2/incidents/list")) {
        if (s->pages == 0)
            snprintf(s->first_incidents_body, sizeof s->first_incidents_body, "%.*s", (int)body_len, body);
        s->pages++;
        char next[64];
        if (s->pages < s->page_count)
            snprintf(next, sizeof next, "\"next_id\":\"page-%d\",", s->pages + 1);
        else if (strcmp(s->end_style, "empty") == 0)
            snprintf(next, sizeof next, "\"next_id\":\"\",");
        else if (strcmp(s->end_style, "null") == 0)
            snprintf(next, sizeof next, "\"next_id\":null,");
        else if (strcmp(s->end_style, "repeat") == 0)
            snprintf(next, sizeof next, "\"next_id\":\"page-%d\",", s->pages);
        else
            next[0] = '\0';
        snprintf(answer, sizeof answer,
                 "{\"type\":\"incident\",\"size\":2,\"resources\":[{\"id\":\"i%d-a\"},{\"id\":\"i%d-b\","
                 "\"event_lineage_id\":{\"start_event_id\":\"s\",\"end_event_id\":\"e\"}}],\"errors\":[],"
                 "\"page_response\":{%s\"total\":%d}}",
                 s->pages, s->pages, next, 2 * s->page_count);
    } else if (strstr(url, "/v2/event-lineage")) {
        snprintf(answer, sizeof answer, "{\"resources\":[\"s\",\"m\",\"e\"],\"errors\":[]}");
    } else if (strstr(url, "/v2/event-details")) {
        snprintf(answer, sizeof answer, "{\"resources\":[{\"id\":\"s\",\"action\":{\"data_size\":5}},{\"id\":\"e\"}]}");
    } else if (strstr(url, "/v2/installer/")) {
        r->headers = support_dup("X-Installer-Version: 9.9.9\r\nContent-Length: 2\r\n");
        snprintf(answer, sizeof answer, "MZ");
    } else {
        r->status = 404;
        snprintf(answer, sizeof answer, "{}");
    }
    r->body = support_dup(answer);
    r->body_len = strlen(answer);
    return ERR_OK;
}

typedef struct fixture {
    server s;
    clock_source clock;
    config cfg;
    http_client *http;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s.page_count = 3;
    f->s.end_style = "empty";
    f->clock = support_still_clock;
    f->cfg.base_url = "https://tenant.example.com";
    f->cfg.http.connect_timeout_s = 10;
    f->cfg.http.low_speed_time_s = 30;
    f->cfg.http.max_response_bytes = 1 << 20;
    f->cfg.http.max_attempts = 3;
    f->cfg.http.max_retry_wait_s = 60;
    f->cfg.http.rate_limit_per_minute = 100000;
    f->cfg.http.max_in_flight = 5;
    f->http = support_fake_api_client(&f->cfg, fake, &f->s, &f->clock);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    http_client_free(f->http);
    free(f);
    return 0;
}

typedef struct pages_seen {
    int pages;
    int incidents;
    int traceable;
    int stop_at; /* return an error on this page (0: never) */
} pages_seen;

static error_code on_page(void *user, const api_incident *items, size_t count, const api_page_info *page,
                          error_info *err)
{
    pages_seen *p = user;
    p->pages++;
    assert_int_equal(page->page, p->pages);
    p->incidents += (int)count;
    for (size_t i = 0; i < count; i++)
        p->traceable += items[i].start_event_id && items[i].end_event_id;
    if (p->stop_at == p->pages)
        return error_set(err, ERR_IO, "disk full while writing page %d", page->page);
    return ERR_OK;
}

static void run_listing(fixture *f, const char *end_style, error_code expected, pages_seen *p, error_info *err)
{
    f->s.end_style = end_style;
    f->s.pages = 0;
    cJSON *filter = json("{\"policy_severities\":[\"high\"],\"start_time\":\"2000-01-01T00:00:00Z\"}");
    api_incident_query q = {filter, "2026-11-21T00:00:00Z", 2, "trigger_time asc", false, NULL};
    api_list_summary summary;
    assert_int_equal(api_incidents_list(f->http, &q, on_page, p, &summary, err), expected);
    if (expected == ERR_OK) {
        assert_int_equal(summary.pages, p->pages);
        assert_int_equal(summary.incidents, p->incidents);
        assert_int_equal(summary.total, 6);
    }
    cJSON_Delete(filter);
}

static void test_paging_end_markers(void **state)
{
    fixture *f = *state;
    static const char *const styles[] = {"empty", "null", "absent"};
    for (size_t i = 0; i < 3; i++) {
        pages_seen p = {0};
        error_info err;
        run_listing(f, styles[i], ERR_OK, &p, &err);
        assert_int_equal(p.pages, 3);
        assert_int_equal(p.incidents, 6);
        assert_int_equal(p.traceable, 3);
    }
    /* The first request: the filter passed through with our start_time. */
    cJSON *first = json(f->s.first_incidents_body);
    cJSON *filter = cJSON_GetObjectItem(first, "filter");
    assert_string_equal(cJSON_GetObjectItem(filter, "start_time")->valuestring, "2026-11-21T00:00:00Z");
    assert_non_null(cJSON_GetObjectItem(filter, "policy_severities"));
    cJSON *page = cJSON_GetObjectItem(first, "page_request");
    assert_int_equal(cJSON_GetObjectItem(page, "size")->valueint, 2);
    assert_string_equal(cJSON_GetObjectItem(page, "sort_by")->valuestring, "trigger_time asc");
    assert_null(cJSON_GetObjectItem(page, "id"));
    assert_null(cJSON_GetObjectItem(first, "include_ai_summaries"));
    cJSON_Delete(first);
    /* The last request named the previous page. */
    cJSON *last = json(f->s.last_body);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(last, "page_request"), "id")->valuestring, "page-3");
    cJSON_Delete(last);
}

static void test_paging_repeated_token(void **state)
{
    fixture *f = *state;
    pages_seen p = {0};
    error_info err;
    run_listing(f, "repeat", ERR_PROTOCOL, &p, &err);
    assert_non_null(strstr(err.message, "incidents/list"));
    assert_non_null(strstr(err.message, "repeated"));
    assert_int_equal(p.pages, 3);
}

static void test_paging_callback_stops(void **state)
{
    fixture *f = *state;
    pages_seen p = {0};
    p.stop_at = 2;
    error_info err;
    run_listing(f, "empty", ERR_IO, &p, &err);
    assert_int_equal(p.pages, 2);
    assert_int_equal(f->s.pages, 2);
    assert_non_null(strstr(err.message, "disk full"));
}

static void test_paging_bad_page(void **state)
{
    fixture *f = *state;
    f->s.override = "{\"resources\":[{\"id\":\"a\",\"risk_score\":\"high\"}]}";
    pages_seen p = {0};
    error_info err;
    api_incident_query q = {0};
    assert_int_equal(api_incidents_list(f->http, &q, on_page, &p, NULL, &err), ERR_PROTOCOL);
    assert_string_equal(err.message, "incidents/list: resources[0].risk_score is not a number");
    assert_int_equal(p.pages, 0);
}

typedef struct lineage_seen {
    int calls;
    error_code code;
    size_t count;
    char last[16];
    char message[ERROR_MESSAGE_MAX];
} lineage_seen;

static void on_lineage(void *user, error_code code, const error_info *err, const char *const *ids, size_t count)
{
    lineage_seen *l = user;
    l->calls++;
    l->code = code;
    l->count = count;
    if (code == ERR_OK && count)
        snprintf(l->last, sizeof l->last, "%s", ids[count - 1]);
    snprintf(l->message, sizeof l->message, "%s", err->message);
}

static void test_lineage(void **state)
{
    fixture *f = *state;
    lineage_seen l = {0};
    error_info err;
    assert_int_equal(api_event_lineage_submit(f->http, "s", "e", on_lineage, &l, &err), ERR_OK);
    assert_int_equal(http_run(f->http, 0, &err), ERR_OK);
    assert_int_equal(l.calls, 1);
    assert_int_equal(l.code, ERR_OK);
    assert_int_equal(l.count, 3);
    assert_string_equal(l.last, "e");
    assert_string_equal(f->s.last_body, "{\"start_event_id\":\"s\",\"end_event_id\":\"e\"}");

    char **ids = NULL;
    size_t count = 0;
    assert_int_equal(api_event_lineage(f->http, "s", "e", &ids, &count, &err), ERR_OK);
    assert_int_equal(count, 3);
    assert_string_equal(ids[1], "m");
    api_strings_free(ids, count);

    f->s.override = "{\"resources\":[0,1,2]}";
    assert_int_equal(api_event_lineage_submit(f->http, "s", "e", on_lineage, &l, &err), ERR_OK);
    assert_int_equal(http_run(f->http, 0, &err), ERR_OK);
    assert_int_equal(l.code, ERR_PROTOCOL);
    assert_non_null(strstr(l.message, "event-lineage: resources[0] is not"));
    assert_int_equal(api_event_lineage(f->http, "s", "e", &ids, &count, &err), ERR_PROTOCOL);
    assert_null(ids);

    assert_int_equal(api_event_lineage_submit(f->http, "", "e", on_lineage, &l, &err), ERR_INTERNAL);
}

typedef struct details_seen {
    int calls;
    error_code code;
    size_t count;
    int64_t first_size;
} details_seen;

static void on_details(void *user, error_code code, const error_info *err, const api_event *events, size_t count)
{
    (void)err;
    details_seen *d = user;
    d->calls++;
    d->code = code;
    d->count = count;
    if (count)
        d->first_size = events[0].data_size;
}

static void test_details(void **state)
{
    fixture *f = *state;
    const char *ids[] = {"s", "a,b", "e"};
    details_seen d = {0};
    error_info err;
    assert_int_equal(api_event_details_submit(f->http, ids, 3, API_DETAILS_POST, on_details, &d, &err), ERR_OK);
    assert_int_equal(http_run(f->http, 0, &err), ERR_OK);
    assert_int_equal(d.code, ERR_OK);
    assert_int_equal(d.count, 2);
    assert_int_equal(d.first_size, 5);
    assert_string_equal(f->s.last_body, "{\"ids\":[\"s\",\"a,b\",\"e\"]}");

    assert_int_equal(api_event_details_submit(f->http, ids, 3, API_DETAILS_GET, on_details, &d, &err), ERR_OK);
    assert_int_equal(http_run(f->http, 0, &err), ERR_OK);
    assert_string_equal(f->s.last_url,
                        "https://tenant.example.com/v2/event-details?ids=s,a%2Cb,e&include_content=false");

    api_details details;
    assert_int_equal(api_event_details(f->http, ids, 1, API_DETAILS_POST, &details, &err), ERR_OK);
    assert_int_equal(details.count, 2);
    assert_string_equal(details.events[1].id, "e");
    api_details_free(&details);

    f->s.override = "{\"resources\":[{\"id\":\"x\",\"action\":{\"blocked\":\"no\"}}]}";
    assert_int_equal(api_event_details(f->http, ids, 1, API_DETAILS_POST, &details, &err), ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "event-details: resources[0].action.blocked is not a boolean"));
    api_details_free(&details);

    assert_int_equal(api_event_details_submit(f->http, ids, 0, API_DETAILS_POST, on_details, &d, &err), ERR_INTERNAL);
}

typedef struct installer_seen {
    char version[32];
    size_t bytes;
} installer_seen;

static http_stream_action installer_headers(void *user, const http_stream_headers *h)
{
    installer_seen *s = user;
    snprintf(s->version, sizeof s->version, "%s", api_installer_version(h) ? api_installer_version(h) : "");
    return HTTP_STREAM_CONTINUE;
}

static http_stream_action installer_data(void *user, const void *data, size_t len)
{
    (void)data;
    ((installer_seen *)user)->bytes += len;
    return HTTP_STREAM_CONTINUE;
}

static void test_installer_route(void **state)
{
    fixture *f = *state;
    installer_seen s = {{0}, 0};
    http_stream_callbacks cb = {installer_headers, installer_data, &s};
    api_installer_request req = {"windows", NULL, NULL, 0};
    error_info err;
    assert_int_equal(api_installer_get(f->http, &req, &cb, NULL, &err), ERR_OK);
    assert_string_equal(f->s.last_url, "https://tenant.example.com/v2/installer/windows/latest");
    assert_string_equal(s.version, "9.9.9");
    assert_int_equal(s.bytes, 2);
    req.platform = "../etc";
    assert_int_equal(api_installer_get(f->http, &req, &cb, NULL, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "installer.platform"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_envelope_valid),
        cmocka_unit_test(test_envelope_errors),
        cmocka_unit_test(test_envelope_first_error),
        cmocka_unit_test(test_incident_view_full_and_defaults),
        cmocka_unit_test(test_incident_view_wrong_types),
        cmocka_unit_test(test_event_view),
        cmocka_unit_test(test_event_view_wrong_types),
        cmocka_unit_test(test_unspecified),
        T(test_paging_end_markers),
        T(test_paging_repeated_token),
        T(test_paging_callback_stops),
        T(test_paging_bad_page),
        T(test_lineage),
        T(test_details),
        T(test_installer_route),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
