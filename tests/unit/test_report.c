/* test_report.c — the report over the fake transport of http.h: request
 * counts (one lineage call per traceable incident, distinct events fetched
 * once, batched), the cursor and seen-set bookkeeping, exactly-once appends
 * across runs and the recovery of a batch interrupted by a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "net/api.h"
#include "net/http_fake.h"
#include "report/feeds.h"
#include "report/report.h"
#include "report/status.h"
#include "core/timefmt.h"

#include "support.h"

/* ---- Fake clock: sleeping advances time, nothing waits ---------------------- */

static int64_t fake_now_ms = 1795255200000;
static int64_t fake_mono(void *ctx)
{
    (void)ctx;
    return fake_now_ms;
}
static int64_t fake_utc(void *ctx)
{
    (void)ctx;
    return fake_now_ms;
}
static void fake_sleep(void *ctx, int64_t ms)
{
    (void)ctx;
    fake_now_ms += ms > 0 ? ms : 0;
}
static error_code fake_random(void *ctx, void *buf, size_t len, error_info *err)
{
    (void)ctx;
    (void)err;
    memset(buf, 7, len);
    return ERR_OK;
}
static const clock_source fake_clock = {fake_mono, fake_utc, fake_sleep, fake_random, NULL};

/* ---- Fake platform ---------------------------------------------------------- */

typedef struct server {
    int token, list, lineage, details; /* requests per route */
    int details_ids;                   /* ids asked for in all details calls */
    bool fail_lineage;                 /* answer 400 to event-lineage */
} server;

static const char *const chains[][4] = {
    {"e1", "e2", "e3", NULL}, /* incident a: e1 → e3 */
    {"e2", "e3", "e4", NULL}, /* incident b: e2 → e4 (shares e2, e3) */
};

static char *event_json(const char *id)
{
    char buf[256];
    snprintf(
        buf, sizeof buf,
        "{\"id\":\"%s\",\"timestamp\":\"2026-11-21T09:00:00Z\",\"action\":{\"kind\":\"print\",\"hostname\":\"H-%s\"}}",
        id, id);
    return support_dup(buf);
}

static error_code fake(void *ctx, const char *method, const char *url, const char *body, size_t body_len,
                       const char *extra_headers, http_fake_response *response, error_info *err)
{
    (void)method, (void)body_len, (void)extra_headers, (void)err;
    server *s = ctx;
    if (support_answer_token(url, "tok", response)) {
        s->token++;
        return ERR_OK;
    }
    response->status = 200;
    if (strstr(url, "/v2/incidents/list")) {
        s->list++;
        response->body = support_dup(
            "{\"type\":\"x\",\"resources\":["
            "{\"id\":\"a\",\"trigger_time\":\"2026-11-21T08:00:00Z\",\"event_lineage_id\":{\"start_event_id\":\"e1\","
            "\"end_event_id\":\"e3\"}},"
            "{\"id\":\"b\",\"trigger_time\":\"2026-11-21T08:30:00Z\",\"event_lineage_id\":{\"start_event_id\":\"e2\","
            "\"end_event_id\":\"e4\"}},"
            "{\"id\":\"c\",\"trigger_time\":\"2026-11-21T08:45:00Z\",\"event_lineage_id\":{\"start_event_id\":\"\"}}],"
            "\"page_response\":{\"next_id\":\"\",\"total\":3}}");
    } else if (strstr(url, "/v2/event-lineage")) {
        s->lineage++;
        if (s->fail_lineage) {
            response->status = 400;
            response->body = support_dup("{\"errors\":[{\"code\":\"bad\",\"message\":\"no\"}]}");
        } else {
            int which = strstr(body, "\"e1\"") ? 0 : 1;
            char buf[128];
            snprintf(buf, sizeof buf, "{\"resources\":[\"%s\",\"%s\",\"%s\"]}", chains[which][0], chains[which][1],
                     chains[which][2]);
            response->body = support_dup(buf);
        }
    } else if (strstr(url, "/v2/event-details")) {
        s->details++;
        cJSON *req = cJSON_Parse(body);
        cJSON *ids = cJSON_GetObjectItem(req, "ids");
        char out[2048] = "{\"resources\":[";
        const cJSON *id;
        bool first = true;
        cJSON_ArrayForEach(id, ids)
        {
            s->details_ids++;
            if (strcmp(id->valuestring, "e4") == 0)
                continue; /* details never returns e4 */
            char *e = event_json(id->valuestring);
            strcat(out, first ? "" : ",");
            strcat(out, e);
            free(e);
            first = false;
        }
        strcat(out, "]}");
        cJSON_Delete(req);
        response->body = support_dup(out);
    } else {
        response->status = 404;
        response->body = support_dup("{}");
    }
    response->body_len = strlen(response->body);
    return ERR_OK;
}

/* ---- Helpers -------------------------------------------------------------- */

typedef struct fixture {
    config cfg;
    server srv;
    char *dir; /* support_tempdir: the state directory */
} fixture;

static void setup_fixture(fixture *f)
{
    memset(f, 0, sizeof *f);
    assert_int_equal(config_init_defaults(&f->cfg, NULL), ERR_OK);
    f->dir = support_tempdir("report");
    free(f->cfg.state_dir);
    f->cfg.state_dir = strdup(f->dir);
    f->cfg.base_url = strdup("http://127.0.0.1:9");
}

static error_code report_once(fixture *f, report_summary *sum, error_info *err)
{
    http_client *http = support_fake_api_client(&f->cfg, fake, &f->srv, &fake_clock);
    state *s = NULL;
    assert_int_equal(state_load(f->cfg.state_dir, &s, err), ERR_OK);
    report_options opts = {.now_s = fake_now_ms / 1000, .write_last_run = true};
    error_code rc = report_run(&f->cfg, http, s, &opts, sum, err);
    state_free(s);
    http_client_free(http);
    return rc;
}

static int count_lines(const fixture *f)
{
    char path[600];
    snprintf(path, sizeof path, "%s/incidents.jsonl", f->dir);
    FILE *file = fopen(path, "rb");
    if (!file)
        return 0;
    int n = 0, c;
    while ((c = fgetc(file)) != EOF)
        n += c == '\n';
    fclose(file);
    return n;
}

/* ---- Tests ---------------------------------------------------------------- */

static void test_requests_are_the_lower_bound(void **unused)
{
    (void)unused;
    fixture f;
    setup_fixture(&f);
    f.cfg.report.details_batch = 3;
    report_summary sum;
    error_info err;
    assert_int_equal(report_once(&f, &sum, &err), ERR_OK);
    /* 1 page, 2 lineage calls, 4 distinct events in batches of 3: 2 calls. */
    assert_int_equal(f.srv.token, 1);
    assert_int_equal(f.srv.list, 1);
    assert_int_equal(f.srv.lineage, 2);
    assert_int_equal(f.srv.details, 2);
    assert_int_equal(f.srv.details_ids, 4);
    assert_int_equal(sum.new_count, 3);
    assert_int_equal(sum.traced, 2);
    assert_int_equal(sum.untraceable, 1);
    assert_int_equal(sum.stats.api_calls, 6);
    assert_int_equal(count_lines(&f), 3);

    cJSON *doc = NULL;
    assert_int_equal(status_read(&f.cfg, &doc, &err), ERR_OK);
    cJSON *items = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "incidents"), "items");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(items, 0), "id")->valuestring, "c");
    cJSON *b = cJSON_GetObjectItem(cJSON_GetArrayItem(items, 1), "lineage");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(b, "events")), 2);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "missing_event_ids"), 0)->valuestring, "e4");
    cJSON_Delete(doc);

    /* The second run sees the same incidents: nothing new, nothing traced. */
    memset(&f.srv, 0, sizeof f.srv);
    fake_now_ms += 60000;
    assert_int_equal(report_once(&f, &sum, &err), ERR_OK);
    assert_int_equal(sum.new_count, 0);
    assert_int_equal(sum.already_seen, 3);
    assert_int_equal(f.srv.lineage + f.srv.details, 0);
    assert_int_equal(count_lines(&f), 3);
    config_free(&f.cfg);
    support_tempdir_remove(f.dir);
}

static void test_failed_lineage_holds_the_cursor(void **unused)
{
    (void)unused;
    fixture f;
    setup_fixture(&f);
    f.srv.fail_lineage = true;
    report_summary sum;
    error_info err;
    assert_int_equal(report_once(&f, &sum, &err), ERR_HTTP);
    assert_non_null(strstr(err.message, "2 incidents could not be traced"));
    assert_int_equal(count_lines(&f), 1); /* only the untraceable one */
    state *s = NULL;
    assert_int_equal(state_load(f.dir, &s, &err), ERR_OK);
    cJSON *section = state_section(s, "report");
    assert_string_equal(cJSON_GetObjectItem(section, "cursor")->valuestring, "2026-11-21T08:00:00Z");
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(section, "failed"), "a"));
    state_free(s);

    f.srv.fail_lineage = false;
    assert_int_equal(report_once(&f, &sum, &err), ERR_OK);
    assert_int_equal(sum.new_count, 2);
    assert_int_equal(count_lines(&f), 3);
    config_free(&f.cfg);
    support_tempdir_remove(f.dir);
}

static void test_recovery_after_a_crash_between_append_and_commit(void **unused)
{
    (void)unused;
    char *dir = support_tempdir("recover");
    char path[600];
    snprintf(path, sizeof path, "%s/incidents.jsonl", dir);
    FILE *file = fopen(path, "wb");
    fputs("{\"id\":\"x1\",\"trigger_time\":\"2026-11-21T08:00:00Z\"}\n{\"id\":\"x\\\"2\",\"trigger_time\":null}\n",
          file);
    fclose(file);
    state *s = NULL;
    error_info err;
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    cJSON *section = state_section(s, "report");
    cJSON_AddItemToObject(section, "pending", cJSON_Parse("{\"ids\":[\"x1\",\"x\\\"2\",\"x3\"]}"));
    state_seen *seen = state_seen_of(s);
    cJSON *items = cJSON_CreateArray();
    int64_t found = 0;
    assert_int_equal(report_recover(section, seen, path, 5, items, &found, NULL), ERR_OK);
    assert_int_equal(found, 2);
    assert_string_equal(state_seen_get(seen, "x1"), "2026-11-21T08:00:00Z");
    assert_non_null(state_seen_get(seen, "x\"2"));
    assert_null(state_seen_get(seen, "x3"));
    assert_null(cJSON_GetObjectItem(section, "pending"));
    assert_int_equal(cJSON_GetArraySize(items), 2);
    cJSON_Delete(items);
    state_free(s);
    support_tempdir_remove(dir);
}

static void test_cursor_start_and_pruning(void **unused)
{
    (void)unused;
    char buf[TIMEFMT_ISO8601_SIZE];
    char *dir = support_tempdir("prune");
    state *s = NULL;
    error_info err;
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    cJSON *section = state_section(s, "report");
    state_seen *seen = state_seen_of(s);
    assert_true(state_seen_put(seen, "old", "2026-11-21T07:00:00Z"));
    assert_true(state_seen_put(seen, "new", "2026-11-21T09:30:00Z"));
    assert_true(state_seen_put(seen, "bad", "yesterday"));
    int64_t now;
    assert_true(timefmt_parse_iso8601("2026-11-21T10:00:00Z", &now));
    report_start_time(section, now, 24 * 3600, buf);
    assert_string_equal(buf, "2026-11-20T10:00:00Z"); /* first run: lookback */
    cJSON_AddStringToObject(section, "cursor", "2026-11-21T10:00:00Z");
    report_start_time(section, now, 24 * 3600, buf);
    assert_string_equal(buf, "2026-11-21T09:55:00Z"); /* cursor - 5 min overlap */
    report_prune_seen(seen, now);                     /* keeps >= 08:55 */
    assert_null(state_seen_get(seen, "old"));
    assert_null(state_seen_get(seen, "bad"));
    assert_non_null(state_seen_get(seen, "new"));
    assert_int_equal(state_seen_count(seen), 1);
    state_free(s);
    support_tempdir_remove(dir);
    char *id = NULL;
    assert_true(report_line_id("{\"id\":\"abc\",\"x\":1}", 17, &id));
    assert_string_equal(id, "abc");
    free(id);
    assert_false(report_line_id("{\"x\":1}", 7, &id));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_are_the_lower_bound),
        cmocka_unit_test(test_failed_lineage_holds_the_cursor),
        cmocka_unit_test(test_recovery_after_a_crash_between_append_and_commit),
        cmocka_unit_test(test_cursor_start_and_pruning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
