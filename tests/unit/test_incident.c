/* test_incident.c — the items shape: incident and event mapping with the
 * document's defaults, newest-first merge across runs, hosts aggregation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/incident.h"

static char *print(const cJSON *json)
{
    return cJSON_PrintUnformatted(json);
}

static void assert_json(const cJSON *json, const char *expected)
{
    char *text = print(json);
    assert_string_equal(text, expected);
    free(text);
}

static void test_incident_defaults_are_null(void **unused)
{
    (void)unused;
    api_incident inc = {.id = "i1"};
    cJSON *item = incident_item_new(&inc);
    assert_json(item, "{\"id\":\"i1\",\"trigger_time\":null,\"policy\":null,\"dataset\":null,\"user\":null,"
                      "\"risk_score\":null,\"ai_severity\":null,\"blocked\":false,\"created_by\":null}");
    assert_int_equal(incident_set_lineage(item, INCIDENT_UNTRACEABLE, "s", NULL, NULL, NULL, NULL), ERR_OK);
    cJSON *lineage = cJSON_GetObjectItem(item, "lineage");
    assert_json(lineage, "{\"status\":\"untraceable\",\"start_event_id\":\"s\",\"end_event_id\":null,"
                         "\"events\":[],\"missing_event_ids\":[]}");
    cJSON_Delete(item);
}

static void test_incident_fields(void **unused)
{
    (void)unused;
    api_incident inc = {.id = "i2",
                        .trigger_time = "2026-01-02T03:04:05Z",
                        .policy = "P",
                        .dataset = "D",
                        .user = "zoë",
                        .risk_score = 87.5,
                        .has_risk_score = true,
                        .ai_severity = "high",
                        .blocked = true,
                        .created_by = "policy"};
    cJSON *item = incident_item_new(&inc);
    assert_json(item, "{\"id\":\"i2\",\"trigger_time\":\"2026-01-02T03:04:05Z\",\"policy\":\"P\",\"dataset\":\"D\","
                      "\"user\":\"zoë\",\"risk_score\":87.5,\"ai_severity\":\"high\",\"blocked\":true,"
                      "\"created_by\":\"policy\"}");
    cJSON_Delete(item);
}

static void test_event_without_source_or_destination(void **unused)
{
    (void)unused;
    api_event e = {.id = "e1", .timestamp = "2026-01-01T00:00:00Z", .kind = "print", .hostname = "WS-1"};
    cJSON *event = incident_event_new(&e);
    assert_json(event, "{\"id\":\"e1\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"kind\":\"print\",\"hostname\":\"WS-1\","
                       "\"sensor_kind\":null,\"user\":null,\"blocked\":false,\"data_size\":0}");
    cJSON_Delete(event);
}

static void test_event_members_present_absent_and_empty(void **unused)
{
    (void)unused;
    cJSON *tags = cJSON_Parse("[]");
    cJSON *to = cJSON_Parse("[\"a@example.com\",\"b@example.com\"]");
    api_event e = {.id = "e2",
                   .blocked = true,
                   .data_size = INT64_C(9007199254740993),
                   .has_source = true,
                   .source_path = "C:\\Users\\zoë\\文档\\a.docx",
                   .source_tags = tags,
                   .has_destination = true,
                   .destination_domain = "mail.example.com",
                   .email_to = to,
                   .email_subject = "Q3"};
    cJSON *event = incident_event_new(&e);
    /* 2^53 + 1 stays exact: written as an integer, not a double. */
    assert_json(event, "{\"id\":\"e2\",\"timestamp\":null,\"kind\":null,\"hostname\":null,\"sensor_kind\":null,"
                       "\"user\":null,\"blocked\":true,\"data_size\":9007199254740993,"
                       "\"source\":{\"path\":\"C:\\\\Users\\\\zoë\\\\文档\\\\a.docx\",\"tags\":[]},"
                       "\"destination\":{\"domain\":\"mail.example.com\",\"email_to\":[\"a@example.com\","
                       "\"b@example.com\"],\"email_subject\":\"Q3\"}}");
    cJSON_Delete(event);
    cJSON_Delete(tags);
    cJSON_Delete(to);
}

static cJSON *item_at(const char *id, const char *time, double risk, const char *hosts_csv)
{
    api_incident inc = {.id = id, .trigger_time = time, .risk_score = risk, .has_risk_score = risk >= 0};
    cJSON *item = incident_item_new(&inc);
    cJSON *events = cJSON_CreateArray();
    char buf[128];
    strcpy(buf, hosts_csv);
    for (char *h = strtok(buf, ","); h; h = strtok(NULL, ",")) {
        api_event e = {.id = "x", .hostname = h};
        cJSON_AddItemToArray(events, incident_event_new(&e));
    }
    assert_int_equal(incident_set_lineage(item, INCIDENT_TRACED, "a", "b", events, NULL, NULL), ERR_OK);
    return item;
}

static void test_hosts_aggregate_items(void **unused)
{
    (void)unused;
    cJSON *items = cJSON_CreateArray();
    cJSON_AddItemToArray(items, item_at("1", "2026-01-01T00:00:00Z", 10, "A,B,A"));
    cJSON_AddItemToArray(items, item_at("2", "2026-01-03T00:00:00Z", 5, "A"));
    cJSON_AddItemToArray(items, item_at("3", "2026-01-02T00:00:00Z", -1, "C"));
    cJSON *hosts = NULL;
    assert_int_equal(incident_hosts(items, &hosts, NULL), ERR_OK);
    assert_json(hosts, "[{\"hostname\":\"A\",\"incidents\":2,\"last_incident_at\":\"2026-01-03T00:00:00Z\","
                       "\"max_risk_score\":10},"
                       "{\"hostname\":\"C\",\"incidents\":1,\"last_incident_at\":\"2026-01-02T00:00:00Z\","
                       "\"max_risk_score\":null},"
                       "{\"hostname\":\"B\",\"incidents\":1,\"last_incident_at\":\"2026-01-01T00:00:00Z\","
                       "\"max_risk_score\":10}]");
    cJSON_Delete(hosts);
    cJSON_Delete(items);
}

static void test_merge_keeps_newest_and_current_versions(void **unused)
{
    (void)unused;
    cJSON *previous = cJSON_CreateArray();
    cJSON_AddItemToArray(previous, item_at("old", "2026-01-01T00:00:00Z", 1, "A"));
    cJSON_AddItemToArray(previous, item_at("same", "2026-01-02T00:00:00Z", 1, "A"));
    cJSON *current = cJSON_CreateArray();
    cJSON_AddItemToArray(current, item_at("same", "2026-01-02T00:00:00Z", 99, "B"));
    cJSON_AddItemToArray(current, item_at("new", "2026-01-03T00:00:00Z", 2, "A"));
    cJSON_AddItemToArray(current, item_at("tie", "2026-01-03T00:00:00Z", 2, "A"));
    cJSON_AddItemToArray(current, item_at("untimed", NULL, 2, "A"));
    cJSON *merged = NULL;
    assert_int_equal(incident_merge_items(current, previous, 4, &merged, NULL), ERR_OK);
    assert_int_equal(cJSON_GetArraySize(merged), 4);
    const char *order[] = {"new", "tie", "same", "old"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(incident_item_id(cJSON_GetArrayItem(merged, i)), order[i]);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(merged, 2), "risk_score")->valueint, 99);
    cJSON_Delete(merged);
    assert_int_equal(incident_merge_items(current, NULL, 0, &merged, NULL), ERR_OK);
    assert_int_equal(cJSON_GetArraySize(merged), 0);
    cJSON_Delete(merged);
    cJSON_Delete(current);
    cJSON_Delete(previous);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_incident_defaults_are_null),
        cmocka_unit_test(test_incident_fields),
        cmocka_unit_test(test_event_without_source_or_destination),
        cmocka_unit_test(test_event_members_present_absent_and_empty),
        cmocka_unit_test(test_hosts_aggregate_items),
        cmocka_unit_test(test_merge_keeps_newest_and_current_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
