/* test_inventory.c — the values Windows inventory reads under
 * HKLM\SOFTWARE\outpost, chosen from the status document and its verdict;
 * a member the document lacks deletes its value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <cjson/cJSON.h>

#include "report/inventory.h"

static const platform_inventory_value *value(const platform_inventory_value *values, const char *name)
{
    for (size_t i = 0; i < INVENTORY_VALUES; i++)
        if (strcmp(values[i].name, name) == 0)
            return &values[i];
    fail_msg("no value %s", name);
    return NULL;
}

static void test_values_from_a_full_document(void **unused)
{
    (void)unused;
    cJSON *doc = cJSON_Parse("{\"last_run\": {\"finished_at\": \"2026-11-21T10:00:05Z\", \"exit_code\": 75},"
                             " \"installer\": {\"installed_version\": \"24.3.0\", \"latest_version\": \"24.3.1\","
                             " \"staged\": {\"version\": \"24.3.1\"}}}");
    status_verdict v = {.text = "ATTENTION: the last run failed (exit code 75)", .attention = true, .exit_code = 75};
    platform_inventory_value values[INVENTORY_VALUES];
    inventory_values(doc, &v, values);
    assert_string_equal(value(values, "InstalledVersion")->text, "24.3.0");
    assert_string_equal(value(values, "StagedVersion")->text, "24.3.1");
    assert_string_equal(value(values, "OfferedVersion")->text, "24.3.1");
    assert_string_equal(value(values, "LastRunTime")->text, "2026-11-21T10:00:05Z");
    assert_true(value(values, "LastExitCode")->is_number);
    assert_int_equal(value(values, "LastExitCode")->number, 75);
    assert_string_equal(value(values, "Verdict")->text, "ATTENTION");
    assert_string_equal(value(values, "VerdictText")->text, v.text);
    cJSON_Delete(doc);
}

static void test_missing_members_delete_their_values(void **unused)
{
    (void)unused;
    cJSON *doc = cJSON_Parse("{\"installer\": {\"installed_version\": \"\"}}");
    status_verdict v = {.text = "OK: the last run succeeded 5m 0s ago", .attention = false};
    platform_inventory_value values[INVENTORY_VALUES];
    inventory_values(doc, &v, values);
    assert_null(value(values, "InstalledVersion")->text);
    assert_null(value(values, "StagedVersion")->text);
    assert_null(value(values, "OfferedVersion")->text);
    assert_null(value(values, "LastRunTime")->text);
    assert_false(value(values, "LastExitCode")->is_number);
    assert_string_equal(value(values, "Verdict")->text, "OK");
    cJSON_Delete(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_from_a_full_document),
        cmocka_unit_test(test_missing_members_delete_their_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
