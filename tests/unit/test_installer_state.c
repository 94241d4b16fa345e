/* test_installer_state.c — state section "installer" through its one owner:
 * each member where state.json has always had it (replaced in place, or
 * moved to the end), the deploy records, the staged history (order, cap,
 * rank, a damaged member replaced), rolled_back_from, and out of memory
 * leaving a member as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/log.h"
#include "core/state.h"
#include "installer/installer_state.h"
#include "platform/platform.h"

#include "support.h"

typedef support_state_fixture fixture;

static int setup(void **ctx)
{
    return support_state_setup(ctx, "installer-state");
}

static int teardown(void **ctx)
{
    return support_state_teardown(ctx);
}

/* The section as state.json holds it, without white space. */
static void assert_section(fixture *f, const char *expected)
{
    char *text = cJSON_PrintUnformatted(state_section(f->s, "installer"));
    assert_non_null(text);
    if (strcmp(text, expected) != 0)
        fail_msg("section is\n  %s\nexpected\n  %s", text, expected);
    free(text);
}

static void test_latest_replaced_in_place(void **ctx)
{
    fixture *f = *ctx;
    assert_null(installer_state_latest_version(f->s));
    assert_int_equal(installer_state_set_latest(f->s, "1.0", "2026-11-21T10:00:00Z", true, NULL), ERR_OK);
    assert_int_equal(installer_state_history_append(f->s, "0.9", NULL), ERR_OK);
    assert_int_equal(installer_state_set_latest(f->s, "2.0", "2026-11-21T11:00:00Z", false, NULL), ERR_OK);
    assert_section(f, "{\"latest_version\":\"2.0\",\"checked_at\":\"2026-11-21T11:00:00Z\",\"update_available\":false,"
                      "\"staged_history\":[\"0.9\"]}");
    assert_string_equal(installer_state_latest_version(f->s), "2.0");
    assert_string_equal(installer_state_checked_at(f->s), "2026-11-21T11:00:00Z");
}

static void test_last_command_moves_to_the_end(void **ctx)
{
    fixture *f = *ctx;
    assert_int_equal(installer_state_set_last_command(f->s, "update", "t1", 4, "rejected", NULL), ERR_OK);
    assert_int_equal(installer_state_set_latest(f->s, "1.0", "t1", true, NULL), ERR_OK);
    assert_int_equal(installer_state_set_last_command(f->s, "check", "t2", 10, NULL, NULL), ERR_OK);
    assert_section(f, "{\"latest_version\":\"1.0\",\"checked_at\":\"t1\",\"update_available\":true,"
                      "\"last_command\":{\"command\":\"check\",\"at\":\"t2\",\"exit_code\":10,\"error\":null}}");
    assert_string_equal(cJSON_GetObjectItem(installer_state_last_command(f->s), "command")->valuestring, "check");
}

/* An interactive command's outcome: its exit code on success; on failure
 * the error's exit code and message, or the code's meaning without one. */
static void test_note_outcome(void **ctx)
{
    fixture *f = *ctx;
    const cJSON *last;
    installer_state_note_outcome(f->s, "check", ERR_OK, 10, NULL);
    last = installer_state_last_command(f->s);
    assert_string_equal(cJSON_GetObjectItem(last, "command")->valuestring, "check");
    assert_int_equal(cJSON_GetObjectItem(last, "exit_code")->valueint, 10);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(last, "error")));
    assert_true(cJSON_IsString(cJSON_GetObjectItem(last, "at")));
    error_info err;
    error_set(&err, ERR_REJECTED, "the signature is not valid");
    installer_state_note_outcome(f->s, "update", ERR_REJECTED, 0, &err);
    last = installer_state_last_command(f->s);
    assert_int_equal(cJSON_GetObjectItem(last, "exit_code")->valueint, 4);
    assert_string_equal(cJSON_GetObjectItem(last, "error")->valuestring, "the signature is not valid");
    installer_state_note_outcome(f->s, "update", ERR_TEMPORARY, 0, NULL);
    last = installer_state_last_command(f->s);
    assert_int_equal(cJSON_GetObjectItem(last, "exit_code")->valueint, 75);
    assert_string_equal(cJSON_GetObjectItem(last, "error")->valuestring, error_meaning(ERR_TEMPORARY));
}

static void test_deploy_records(void **ctx)
{
    fixture *f = *ctx;
    deploy_outcome out = {.version = "2.0", .exit_code = -1, .timed_out = true};
    assert_int_equal(installer_state_set_deploy_failure(f->s, &out, "t1", "killed", NULL), ERR_OK);
    assert_section(f, "{\"deploy_failure\":{\"version\":\"2.0\",\"at\":\"t1\",\"exit_code\":null,\"timed_out\":true,"
                      "\"message\":\"killed\",\"log\":null}}");
    assert_null(installer_state_deployed(f->s));
    assert_null(installer_state_deployed_version(f->s));

    deploy_outcome ok = {.version = "2.0", .exit_code = 3010, .reboot_required = true};
    snprintf(ok.verified, sizeof ok.verified, "yes");
    snprintf(ok.log, sizeof ok.log, "/var/lib/outpost/logs/deploy.log");
    assert_int_equal(installer_state_set_deployed(f->s, &ok, "t2", "boot-1", NULL), ERR_OK);
    assert_section(f, "{\"deployed\":{\"version\":\"2.0\",\"at\":\"t2\",\"exit_code\":3010,\"reboot_required\":true,"
                      "\"verified\":\"yes\",\"log\":\"/var/lib/outpost/logs/deploy.log\",\"boot_id\":\"boot-1\"},"
                      "\"deployed_version\":\"2.0\"}");
    assert_string_equal(installer_state_deployed_version(f->s), "2.0");
    assert_null(installer_state_deploy_failure(f->s));

    /* A later failure keeps what was deployed. */
    out.exit_code = 1603;
    out.timed_out = false;
    snprintf(out.version, sizeof out.version, "3.0");
    snprintf(out.log, sizeof out.log, "l");
    assert_int_equal(installer_state_set_deploy_failure(f->s, &out, "t3", "exit 1603", NULL), ERR_OK);
    assert_string_equal(installer_state_deployed_version(f->s), "2.0");
    assert_int_equal(cJSON_GetObjectItem(installer_state_deploy_failure(f->s), "exit_code")->valueint, 1603);
}

static void test_history(void **ctx)
{
    fixture *f = *ctx;
    assert_null(installer_state_history_last(f->s));
    assert_int_equal(installer_state_history_rank(f->s, "1.0"), -1);
    for (int i = 0; i < INSTALLER_STATE_HISTORY_MAX + 3; i++) {
        char v[16];
        snprintf(v, sizeof v, "1.%d", i);
        assert_int_equal(installer_state_history_append(f->s, v, NULL), ERR_OK);
    }
    /* The oldest went first. */
    assert_int_equal(installer_state_history_rank(f->s, "1.2"), -1);
    assert_int_equal(installer_state_history_rank(f->s, "1.3"), 0);
    assert_string_equal(installer_state_history_last(f->s), "1.34");
    /* Staged again: moved to the end, once. */
    assert_int_equal(installer_state_history_append(f->s, "1.3", NULL), ERR_OK);
    assert_int_equal(installer_state_history_rank(f->s, "1.3"), INSTALLER_STATE_HISTORY_MAX - 1);
    assert_string_equal(installer_state_history_last(f->s), "1.3");
    installer_state_history_remove(f->s, "1.3");
    assert_int_equal(installer_state_history_rank(f->s, "1.3"), -1);
    assert_string_equal(installer_state_history_last(f->s), "1.34");
}

static void test_damaged_history_is_replaced(void **ctx)
{
    fixture *f = *ctx;
    cJSON *section = state_section(f->s, "installer");
    cJSON_AddStringToObject(section, "staged_history", "not a list");
    cJSON_AddStringToObject(section, "deployed_version", "1.0");
    assert_int_equal(installer_state_history_rank(f->s, "1.0"), -1);
    assert_int_equal(installer_state_history_open(f->s, NULL), ERR_OK);
    assert_section(f, "{\"deployed_version\":\"1.0\",\"staged_history\":[]}");
}

static void test_rolled_back_from(void **ctx)
{
    fixture *f = *ctx;
    assert_null(installer_state_rolled_back_from(f->s));
    assert_int_equal(installer_state_set_rolled_back_from(f->s, "2.0", NULL), ERR_OK);
    assert_string_equal(installer_state_rolled_back_from(f->s), "2.0");
    assert_int_equal(installer_state_set_rolled_back_from(f->s, NULL, NULL), ERR_OK);
    assert_null(installer_state_rolled_back_from(f->s));
    assert_section(f, "{}");
}

static void test_out_of_memory_leaves_members(void **ctx)
{
    fixture *f = *ctx;
    deploy_outcome ok = {.version = "2.0", .exit_code = 0};
    assert_int_equal(installer_state_set_deployed(f->s, &ok, "t1", "b", NULL), ERR_OK);
    assert_int_equal(installer_state_set_last_command(f->s, "deploy", "t1", 0, NULL, NULL), ERR_OK);
    char *before = cJSON_PrintUnformatted(state_section(f->s, "installer"));
    ok.exit_code = 1;
    for (int n = 0;; n++) {
        error_info err;
        error_clear(&err);
        support_cjson_fail_after(n);
        error_code rc = installer_state_set_last_command(f->s, "update", "t2", 4, "no", &err);
        support_cjson_fail_after(-1);
        if (rc == ERR_OK)
            break;
        assert_int_equal(rc, ERR_NOMEM);
        assert_int_equal(err.code, ERR_NOMEM);
        assert_section(f, before);
    }
    assert_string_equal(cJSON_GetObjectItem(installer_state_last_command(f->s), "command")->valuestring, "update");
    free(before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_latest_replaced_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_command_moves_to_the_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_note_outcome, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deploy_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_history_is_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rolled_back_from, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_memory_leaves_members, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
