/* test_newest.c — the report's newest items held as text: round trip to
 * cJSON_Print's bytes, order, keep_incidents trimming and replacement by id,
 * oversize items, and reading a status file's items (corrupt ones too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/incident.h"
#include "report/newest.h"

/* An item as the report builds it: events with raw data_size, a source
 * object, an empty object and empty arrays among the members. */
static cJSON *item_at(const char *id, const char *time, double risk)
{
    api_incident inc = {.id = id, .trigger_time = time, .risk_score = risk, .has_risk_score = risk >= 0};
    cJSON *item = incident_item_new(&inc);
    cJSON *events = cJSON_CreateArray();
    api_event e1 = {.id = "e1", .hostname = "host \"one\"\n", .data_size = (int64_t)1 << 60};
    api_event e2 = {.id = "e2", .hostname = "h2", .data_size = 12345};
    cJSON_AddItemToArray(events, incident_event_new(&e1));
    cJSON_AddItemToArray(events, incident_event_new(&e2));
    cJSON *missing = cJSON_CreateArray();
    cJSON_AddItemToArray(missing, cJSON_CreateString("e3"));
    assert_int_equal(incident_set_lineage(item, INCIDENT_TRACED, "e1", "e3", events, missing, NULL), ERR_OK);
    cJSON_AddItemToObject(item, "empty", cJSON_CreateObject());
    cJSON *nested = cJSON_AddArrayToObject(item, "nested");
    cJSON_AddItemToArray(nested, cJSON_CreateArray());
    cJSON_AddItemToArray(nested, cJSON_CreateObject());
    cJSON_AddItemToArray(nested, cJSON_CreateNumber(0.1));
    return item;
}

typedef struct sink {
    char *data;
    size_t len;
    size_t fail_after; /* puts allowed before one fails; 0: never fails */
    size_t puts;
} sink;

static bool sink_put(void *user, const void *data, size_t len)
{
    sink *s = user;
    if (s->fail_after && ++s->puts > s->fail_after)
        return false;
    s->data = realloc(s->data, s->len + len + 1);
    memcpy(s->data + s->len, data, len);
    s->len += len;
    s->data[s->len] = '\0';
    return true;
}

static char *printed(const newest *n, int depth)
{
    sink s = {0};
    assert_int_equal(newest_print(n, depth, sink_put, &s, NULL), ERR_OK);
    return s.data;
}

static void assert_ids(const newest *n, const char *const *ids, size_t count)
{
    assert_int_equal(newest_count(n), count);
    for (size_t i = 0; i < count; i++) {
        cJSON *item = NULL;
        assert_int_equal(newest_item(n, i, &item, NULL), ERR_OK);
        assert_string_equal(incident_item_id(item), ids[i]);
        cJSON_Delete(item);
    }
}

static void test_round_trip_prints_as_cjson(void **unused)
{
    (void)unused;
    newest *n = newest_new(10);
    cJSON *array = cJSON_CreateArray();
    cJSON *a = item_at("a", "2026-01-02T00:00:00Z", 7), *b = item_at("b", "2026-01-01T00:00:00Z", -1);
    assert_int_equal(newest_add(n, b, NULL), ERR_OK);
    assert_int_equal(newest_add(n, a, NULL), ERR_OK);
    cJSON_AddItemToArray(array, a); /* newest first */
    cJSON_AddItemToArray(array, b);

    char *want = cJSON_Print(array), *got = printed(n, 0);
    assert_string_equal(got, want);
    assert_non_null(strstr(got, "1152921504606846976")); /* the raw integer, exact */
    free(got);
    free(want);

    /* Inside a document, where status.json has it: incidents.items. */
    cJSON *doc = cJSON_CreateObject();
    cJSON *incidents = cJSON_AddObjectToObject(doc, "incidents");
    cJSON_AddNumberToObject(incidents, "new", 2);
    cJSON_AddItemReferenceToObject(incidents, "items", array);
    cJSON_AddArrayToObject(incidents, "hosts");
    want = cJSON_Print(doc);
    cJSON_ReplaceItemInObject(incidents, "items", cJSON_CreateRaw("@"));
    char *frame = cJSON_Print(doc), *at = strchr(frame, '@');
    got = printed(n, 2);
    sink whole = {0};
    sink_put(&whole, frame, (size_t)(at - frame));
    sink_put(&whole, got, strlen(got));
    sink_put(&whole, at + 1, strlen(at + 1));
    assert_string_equal(whole.data, want);
    free(whole.data);
    free(got);
    free(frame);
    free(want);
    cJSON_Delete(doc);
    cJSON_Delete(array);

    newest *empty = newest_new(3);
    got = printed(empty, 2);
    assert_string_equal(got, "[]");
    free(got);
    newest_free(empty);
    newest_free(n);
}

static void test_order_newest_first_null_last_then_id(void **unused)
{
    (void)unused;
    newest *n = newest_new(10);
    const char *times[][2] = {{"m", "2026-01-02T00:00:00Z"},
                              {"untimed", NULL},
                              {"z", "2026-01-03T00:00:00Z"},
                              {"a", "2026-01-03T00:00:00Z"},
                              {"old", "2026-01-01T00:00:00Z"}};
    for (size_t i = 0; i < 5; i++) {
        cJSON *item = item_at(times[i][0], times[i][1], 1);
        assert_int_equal(newest_add(n, item, NULL), ERR_OK);
        cJSON_Delete(item);
    }
    const char *want[] = {"a", "z", "m", "old", "untimed"};
    assert_ids(n, want, 5);
    newest_free(n);
}

static void test_keep_trims_and_replaces_by_id(void **unused)
{
    (void)unused;
    newest *n = newest_new(3);
    const char *ids[] = {"d1", "d2", "d3", "d4", "d5"};
    char time[32];
    for (int i = 0; i < 5; i++) {
        snprintf(time, sizeof time, "2026-01-0%dT00:00:00Z", i + 1);
        cJSON *item = item_at(ids[i], time, 1);
        assert_int_equal(newest_add(n, item, NULL), ERR_OK);
        cJSON_Delete(item);
    }
    const char *kept[] = {"d5", "d4", "d3"};
    assert_ids(n, kept, 3);
    /* Older than the last of a full store: not kept. */
    cJSON *old = item_at("d0", "2025-12-31T00:00:00Z", 1);
    assert_int_equal(newest_add(n, old, NULL), ERR_OK);
    cJSON_Delete(old);
    assert_ids(n, kept, 3);
    /* The same id again: its new version replaces the held one. */
    cJSON *again = item_at("d3", "2026-01-03T00:00:00Z", 42);
    assert_int_equal(newest_add(n, again, NULL), ERR_OK);
    cJSON_Delete(again);
    assert_ids(n, kept, 3);
    cJSON *item = NULL;
    assert_int_equal(newest_item(n, 2, &item, NULL), ERR_OK);
    assert_int_equal(cJSON_GetObjectItem(item, "risk_score")->valueint, 42);
    cJSON_Delete(item);
    newest_free(n);

    newest *none = newest_new(0);
    cJSON *one = item_at("x", NULL, 1);
    assert_int_equal(newest_add(none, one, NULL), ERR_OK);
    assert_int_equal(newest_count(none), 0);
    cJSON_Delete(one);
    newest_free(none);
}

static void test_oversize_item_refused(void **unused)
{
    (void)unused;
    newest *n = newest_new(3);
    cJSON *item = item_at("big", "2026-01-01T00:00:00Z", 1);
    char *huge = malloc(NEWEST_ITEM_MAX + 1);
    memset(huge, 'x', NEWEST_ITEM_MAX);
    huge[NEWEST_ITEM_MAX] = '\0';
    cJSON_AddStringToObject(item, "note", huge);
    free(huge);
    error_info err;
    assert_int_equal(newest_add(n, item, &err), ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "big"));
    assert_int_equal(newest_count(n), 0);
    cJSON_Delete(item);
    newest_free(n);
}

/* A status document as status_write prints it, with these items. */
static char *status_text(cJSON *items)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddNumberToObject(doc, "schema_version", 1);
    cJSON *incidents = cJSON_AddObjectToObject(doc, "incidents");
    cJSON_AddStringToObject(incidents, "cursor", "2026-01-01T00:00:00Z");
    cJSON_AddItemToObject(incidents, "items", items);
    cJSON_AddArrayToObject(incidents, "hosts");
    cJSON *installer = cJSON_AddObjectToObject(doc, "installer");
    cJSON_AddStringToObject(installer, "installed_version", "1.2");
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}

static void test_load_status_items(void **unused)
{
    (void)unused;
    cJSON *items = cJSON_CreateArray();
    cJSON_AddItemToArray(items, item_at("p2", "2026-01-02T00:00:00Z", 2));
    cJSON_AddItemToArray(items, item_at("same", "2026-01-01T12:00:00Z", 1));
    cJSON_AddItemToArray(items, item_at("p1", "2026-01-01T00:00:00Z", 1));
    char *want_items = cJSON_Print(items);
    char *text = status_text(items);

    newest *n = newest_new(10);
    cJSON *rest = NULL;
    assert_int_equal(newest_load_status(n, text, strlen(text), &rest, NULL), ERR_OK);
    char *got = printed(n, 0);
    assert_string_equal(got, want_items); /* the raw integers still exact */
    free(got);
    assert_null(cJSON_GetObjectItem(rest, "incidents"));
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(rest, "installer"), "installed_version")->valuestring,
                        "1.2");
    cJSON_Delete(rest);
    free(text);
    newest_free(n);

    /* Into a store holding this run's items: theirs stay, keep applies to the mix. */
    items = cJSON_CreateArray();
    cJSON_AddItemToArray(items, item_at("p2", "2026-01-02T00:00:00Z", 2));
    cJSON_AddItemToArray(items, item_at("same", "2026-01-01T12:00:00Z", 1));
    cJSON_AddItemToArray(items, item_at("p1", "2026-01-01T00:00:00Z", 1));
    text = status_text(items);
    n = newest_new(3);
    cJSON *current = item_at("same", "2026-01-01T12:00:00Z", 99);
    assert_int_equal(newest_add(n, current, NULL), ERR_OK);
    cJSON_Delete(current);
    current = item_at("c", "2026-01-03T00:00:00Z", 5);
    assert_int_equal(newest_add(n, current, NULL), ERR_OK);
    cJSON_Delete(current);
    assert_int_equal(newest_load_status(n, text, strlen(text), &rest, NULL), ERR_OK);
    const char *want[] = {"c", "p2", "same"};
    assert_ids(n, want, 3);
    cJSON *item = NULL;
    assert_int_equal(newest_item(n, 2, &item, NULL), ERR_OK);
    assert_int_equal(cJSON_GetObjectItem(item, "risk_score")->valueint, 99);
    cJSON_Delete(item);
    cJSON_Delete(rest);
    free(text);
    free(want_items);
    newest_free(n);
}

static void test_load_status_without_items(void **unused)
{
    (void)unused;
    newest *n = newest_new(3);
    cJSON *rest = NULL;
    char text[] = "{\"schema_version\": 1, \"incidents\": {\"cursor\": \"x\"}, \"last_run\": {}}";
    assert_int_equal(newest_load_status(n, text, strlen(text), &rest, NULL), ERR_OK);
    assert_int_equal(newest_count(n), 0);
    assert_null(cJSON_GetObjectItem(rest, "incidents"));
    assert_non_null(cJSON_GetObjectItem(rest, "last_run"));
    cJSON_Delete(rest);
    char none[] = "{}";
    assert_int_equal(newest_load_status(n, none, 2, &rest, NULL), ERR_OK);
    cJSON_Delete(rest);
    newest_free(n);
}

/* The first n bytes of s, NUL-terminated (no strndup on Windows). */
static char *prefix(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static void test_load_status_corrupt(void **unused)
{
    (void)unused;
    cJSON *items = cJSON_CreateArray();
    cJSON_AddItemToArray(items, item_at("p", "2026-01-02T00:00:00Z", 2));
    char *good = status_text(items);
    size_t len = strlen(good);
    newest *n = newest_new(5);
    cJSON *held = item_at("held", "2026-01-01T00:00:00Z", 1);
    assert_int_equal(newest_add(n, held, NULL), ERR_OK);
    cJSON_Delete(held);

    char *bad[6];
    bad[0] = prefix(good, len / 2); /* truncated inside the items */
    bad[1] = prefix(good, len - 1); /* truncated at the very end */
    bad[2] = strdup(good);          /* the items' closing bracket a brace */
    memcpy(strstr(bad[2], "}],"), "}},", 3);
    bad[3] = strdup(good); /* an item that does not parse */
    char *t = strstr(bad[3], "\"risk_score\":\t2");
    t[strlen("\"risk_score\":\t")] = '-'; /* a number with no digits */
    bad[4] = strdup("[1, 2, 3]");         /* not an object */
    bad[5] = strdup("");
    for (size_t i = 0; i < 6; i++) {
        cJSON *rest = (cJSON *)1;
        error_info err;
        assert_int_equal(newest_load_status(n, bad[i], strlen(bad[i]), &rest, &err), ERR_IO);
        assert_null(rest);
        const char *ids[] = {"held"};
        assert_ids(n, ids, 1); /* as it was */
        free(bad[i]);
    }
    free(good);
    newest_free(n);
}

static void test_hosts_over_the_held_items(void **unused)
{
    (void)unused;
    newest *n = newest_new(2);
    cJSON *items = cJSON_CreateArray();
    const char *ids[] = {"h1", "h2", "h3"};
    char time[32];
    for (int i = 0; i < 3; i++) {
        snprintf(time, sizeof time, "2026-01-0%dT00:00:00Z", i + 1);
        cJSON *item = item_at(ids[i], time, i);
        assert_int_equal(newest_add(n, item, NULL), ERR_OK);
        if (i > 0)
            cJSON_AddItemToArray(items, item); /* the two the store keeps */
        else
            cJSON_Delete(item);
    }
    cJSON *want = NULL, *got = NULL;
    assert_int_equal(incident_hosts(items, &want, NULL), ERR_OK);
    assert_int_equal(newest_hosts(n, &got, NULL), ERR_OK);
    assert_int_equal(cJSON_GetArraySize(got), 2);
    assert_true(cJSON_Compare(got, want, true));
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(got, 0), "incidents")->valueint, 2);
    cJSON_Delete(got);
    cJSON_Delete(want);
    cJSON_Delete(items);
    newest_free(n);
}

static void test_print_stops_when_put_fails(void **unused)
{
    (void)unused;
    newest *n = newest_new(3);
    cJSON *item = item_at("a", "2026-01-01T00:00:00Z", 1);
    assert_int_equal(newest_add(n, item, NULL), ERR_OK);
    cJSON_Delete(item);
    sink s = {.fail_after = 3};
    error_info err;
    assert_int_equal(newest_print(n, 2, sink_put, &s, &err), ERR_IO);
    free(s.data);
    newest_free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_prints_as_cjson),
        cmocka_unit_test(test_order_newest_first_null_last_then_id),
        cmocka_unit_test(test_keep_trims_and_replaces_by_id),
        cmocka_unit_test(test_oversize_item_refused),
        cmocka_unit_test(test_load_status_items),
        cmocka_unit_test(test_load_status_without_items),
        cmocka_unit_test(test_load_status_corrupt),
        cmocka_unit_test(test_hosts_over_the_held_items),
        cmocka_unit_test(test_print_stops_when_put_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
