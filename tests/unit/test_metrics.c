/* test_metrics.c — the Prometheus textfile: metric lines, label escaping,
 * figures taken from the status document. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/metrics.h"

static void test_render(void **unused)
{
    (void)unused;
    cJSON *doc = cJSON_Parse(
        "{\"generated_at\":\"2026-11-21T10:00:00Z\","
        "\"installer\":{\"installed_version\":\"24.3.0\",\"latest_version\":\"24.3.1\\\"x\",\"update_available\":true,"
        "\"staged\":{\"version\":\"24.3.1\"}},"
        "\"last_run\":{\"finished_at\":\"2026-11-21T10:00:00Z\",\"result\":\"partial\",\"exit_code\":75,"
        "\"errors\":[{\"stage\":\"report\",\"message\":\"m\"}]},"
        "\"incidents\":{\"cursor\":\"2026-11-21T09:59:00Z\",\"new\":3,\"traced\":2,\"untraceable\":1,\"failed\":0,"
        "\"api_calls\":12}}");
    char *text = NULL;
    assert_int_equal(metrics_render(doc, 4, &text, NULL), ERR_OK);
    const char *expected[] = {
        "# TYPE outpost_installer_update_available gauge\n",
        "outpost_installer_update_available{installed_version=\"24.3.0\",latest_version=\"24.3.1\\\"x\","
        "staged_version=\"24.3.1\",deployed_version=\"\"} 1\n",
        "outpost_last_run_timestamp_seconds 1795255200\n",
        "outpost_last_run_result{result=\"ok\"} 0\n",
        "outpost_last_run_result{result=\"partial\"} 1\n",
        "outpost_last_run_exit_code 75\n",
        "outpost_last_run_errors 1\n",
        "outpost_report_incidents_new 3\n",
        "outpost_report_incidents_traced 2\n",
        "outpost_report_incidents_untraceable 1\n",
        "outpost_report_api_calls 12\n",
        "outpost_report_responses_429 4\n",
        "outpost_report_cursor_timestamp_seconds 1795255140\n",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!strstr(text, expected[i]))
            fail_msg("missing %s in:\n%s", expected[i], text);
    /* Every line is a comment or "name[{labels}] value". */
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        assert_true(line[0] == '#' || strncmp(line, "outpost_", 8) == 0);
    free(text);
    cJSON_Delete(doc);
}

static void test_empty_status_renders_nothing_wrong(void **unused)
{
    (void)unused;
    cJSON *doc = cJSON_Parse("{}");
    char *text = NULL;
    assert_int_equal(metrics_render(doc, -1, &text, NULL), ERR_OK);
    assert_string_equal(text, "");
    free(text);
    cJSON_Delete(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_empty_status_renders_nothing_wrong),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
