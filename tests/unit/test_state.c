/* test_state.c — state.json: sections survive a save/load round trip, a
 * damaged file is moved aside instead of stopping every run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/log.h"
#include "core/state.h"

#include "support.h"

static char *make_dir(void)
{
    return support_tempdir("state");
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_round_trip(void **unused)
{
    (void)unused;
    char *dir = make_dir();
    error_info err;
    state *s;
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    cJSON *report = state_section(s, "report");
    cJSON_AddStringToObject(report, "cursor", "2026-11-21T10:00:00Z");
    cJSON_AddStringToObject(state_section(s, "installer"), "installed_version", "1.2.3");
    assert_int_equal(state_save(s, &err), ERR_OK);
    state_free(s);

    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    assert_string_equal(cJSON_GetObjectItem(state_section(s, "report"), "cursor")->valuestring, "2026-11-21T10:00:00Z");
    assert_string_equal(cJSON_GetObjectItem(state_section(s, "installer"), "installed_version")->valuestring, "1.2.3");
    assert_int_equal(cJSON_GetArraySize(state_section(s, "run")), 0);
    state_free(s);
    free(dir);
}

static void test_damaged_file_moved_aside(void **unused)
{
    (void)unused;
    log_set_level(LOG_QUIET);
    char *dir = make_dir();
    write_file(dir, "state.json", "{\"report\": {\"cursor\": ");
    error_info err;
    state *s;
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    assert_int_equal(cJSON_GetArraySize(state_section(s, "report")), 0);
    state_free(s);
    char bad[512];
    snprintf(bad, sizeof bad, "%s/state.json.bad", dir);
    struct stat st;
    assert_int_equal(stat(bad, &st), 0);

    /* A section of the wrong type is replaced by an empty object. */
    write_file(dir, "state.json", "{\"report\": [1, 2]}");
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    assert_true(cJSON_IsObject(state_section(s, "report")));
    state_free(s);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_damaged_file_moved_aside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
