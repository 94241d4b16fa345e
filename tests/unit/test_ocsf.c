/* test_ocsf.c — the OCSF finding of an incident: the verdict attributes, a
 * fractional risk score kept exactly, hostnames that are not DNS names,
 * an incident without trigger time or events still a finding, the id read
 * back from a line. Validation against the schema is the integration
 * tests' (tests/integration/ocsf_check.py over every line they produce). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/ocsf.h"

static cJSON *finding_of(const char *json)
{
    cJSON *item = cJSON_Parse(json);
    assert_non_null(item);
    char *line = NULL;
    assert_int_equal(ocsf_format(item, &line, NULL), ERR_OK);
    cJSON_Delete(item);
    assert_null(strchr(line, '\n'));
    char *id = NULL;
    assert_true(ocsf_line_id(line, strlen(line), &id));
    assert_string_equal(id, "i-1");
    free(id);
    cJSON *f = cJSON_Parse(line);
    free(line);
    assert_non_null(f);
    return f;
}

static double number(const cJSON *f, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(f, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static const char *string(const cJSON *f, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(f, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_blocked_traced_incident(void **unused)
{
    (void)unused;
    cJSON *f = finding_of(
        "{\"id\":\"i-1\",\"trigger_time\":\"2026-11-21T10:00:00Z\",\"policy\":\"P\",\"dataset\":\"D\",\"user\":null,"
        "\"risk_score\":72.25,\"ai_severity\":\"SEVERITY_CRITICAL\",\"blocked\":true,\"created_by\":\"ai\","
        "\"lineage\":{\"status\":\"traced\",\"start_event_id\":\"e1\",\"end_event_id\":\"e2\",\"events\":["
        "{\"id\":\"e1\",\"timestamp\":\"2026-11-21T09:00:00Z\",\"hostname\":\"WS_01\",\"user\":\"bob\"},"
        "{\"id\":\"e2\",\"timestamp\":\"2026-11-21T09:30:00Z\",\"hostname\":\"ws-02.corp\",\"destination\":{"
        "\"domain\":\"drive.example\"}}],\"missing_event_ids\":[]}}");
    assert_int_equal(number(f, "class_uid", NULL), 2006);
    assert_int_equal(number(f, "type_uid", NULL), 200601);
    assert_int_equal(number(f, "action_id", NULL), 2);
    assert_int_equal(number(f, "disposition_id", NULL), 2);
    assert_int_equal(number(f, "severity_id", NULL), 5);
    assert_int_equal(number(f, "risk_score", NULL), 72);
    assert_true(number(f, "unmapped", "risk_score") == 72.25);
    assert_true(number(f, "time", NULL) == 1795255200000.0);
    assert_true(number(f, "start_time", NULL) == 1795251600000.0);
    assert_true(number(f, "end_time", NULL) == 1795253400000.0);
    /* "WS_01" is not a DNS name: OCSF's hostname_t would refuse it. */
    assert_string_equal(string(f, "device", "name"), "WS_01");
    assert_null(string(f, "device", "hostname"));
    assert_string_equal(string(f, "dst_endpoint", "hostname"), "drive.example");
    assert_string_equal(string(f, "unmapped", "created_by"), "ai");
    const cJSON *related =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "finding_info"), "related_events");
    assert_int_equal(cJSON_GetArraySize(related), 2);
    assert_string_equal(string(cJSON_GetArrayItem(related, 1), "uid", NULL), "e2");
    cJSON_Delete(f);
}

static void test_untraceable_incident_without_time_is_a_finding(void **unused)
{
    (void)unused;
    cJSON *f = finding_of("{\"id\":\"i-1\",\"trigger_time\":null,\"policy\":null,\"dataset\":null,\"user\":null,"
                          "\"risk_score\":40,\"ai_severity\":\"odd\",\"blocked\":false,\"created_by\":null,"
                          "\"lineage\":{\"status\":\"untraceable\",\"events\":[],\"missing_event_ids\":[]}}");
    assert_true(number(f, "time", NULL) == 0);
    assert_int_equal(number(f, "action_id", NULL), 1);
    assert_int_equal(number(f, "disposition_id", NULL), 1);
    assert_int_equal(number(f, "severity_id", NULL), 99);
    assert_string_equal(string(f, "severity", NULL), "odd");
    assert_int_equal(number(f, "risk_score", NULL), 40);
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "unmapped"), "risk_score"));
    assert_string_equal(string(f, "status_detail", NULL), "untraceable");
    assert_null(cJSON_GetObjectItemCaseSensitive(f, "start_time"));
    cJSON_Delete(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocked_traced_incident),
        cmocka_unit_test(test_untraceable_incident_without_time_is_a_finding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
