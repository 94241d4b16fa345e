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

/* The fleet policy's health (status.json "deploy"): what a detection rule
 * or hardware inventory reads to see a reboot, a wait or a deferral. */
static void test_deploy_values(void **unused)
{
    (void)unused;
    cJSON *doc = cJSON_Parse(
        "{\"deploy\": {\"state\": \"waiting_for_window\", \"since\": \"2026-01-10T04:10:03Z\","
        " \"waiting_until\": \"2026-01-12T21:00:00Z\", \"deferred\": null, \"reboot_required\": true,"
        " \"target_version_prefix\": \"26.1.\", \"not_taken\": {\"version\": \"26.2.0\"},"
        " \"last_deploy\": {\"version\": \"26.1.3\", \"at\": \"2026-01-05T22:01:00Z\", \"exit_code\": 3010}}}");
    status_verdict v = {.text = "OK", .attention = false};
    platform_inventory_value values[INVENTORY_VALUES];
    inventory_values(doc, &v, values);
    assert_string_equal(value(values, "DeployState")->text, "waiting_for_window");
    assert_string_equal(value(values, "DeployStateSince")->text, "2026-01-10T04:10:03Z");
    assert_string_equal(value(values, "DeployWaitingUntil")->text, "2026-01-12T21:00:00Z");
    assert_null(value(values, "DeployDeferredReason")->text);
    assert_false(value(values, "DeployDeferredReason")->is_number);
    assert_true(value(values, "RebootRequired")->is_number);
    assert_int_equal(value(values, "RebootRequired")->number, 1);
    assert_string_equal(value(values, "LastDeployVersion")->text, "26.1.3");
    assert_string_equal(value(values, "LastDeployTime")->text, "2026-01-05T22:01:00Z");
    assert_true(value(values, "LastDeployExitCode")->is_number);
    assert_int_equal(value(values, "LastDeployExitCode")->number, 3010);
    assert_string_equal(value(values, "TargetVersionPrefix")->text, "26.1.");
    assert_string_equal(value(values, "NotTakenVersion")->text, "26.2.0");
    cJSON_Delete(doc);

    /* Deferred, nothing deployed yet, no pin: the absent ones are deleted. */
    doc = cJSON_Parse("{\"deploy\": {\"state\": \"deferred\", \"deferred\": {\"reason\": \"metered\"},"
                      " \"reboot_required\": false, \"target_version_prefix\": null, \"last_deploy\": null}}");
    inventory_values(doc, &v, values);
    assert_string_equal(value(values, "DeployDeferredReason")->text, "metered");
    assert_int_equal(value(values, "RebootRequired")->number, 0);
    assert_true(value(values, "RebootRequired")->is_number);
    assert_null(value(values, "LastDeployVersion")->text);
    assert_false(value(values, "LastDeployExitCode")->is_number);
    assert_null(value(values, "TargetVersionPrefix")->text);
    assert_null(value(values, "NotTakenVersion")->text);
    cJSON_Delete(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_from_a_full_document),
        cmocka_unit_test(test_missing_members_delete_their_values),
        cmocka_unit_test(test_deploy_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
