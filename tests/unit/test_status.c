/* test_status.c — status.json: identity members refreshed, supplied parts
 * replaced, the others kept from the previous file; the one last_run
 * builder (members in the schema's order, out of memory reported at every
 * allocation through cJSON's hooks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/status.h"

/* Default configuration whose state directory is a new one made from
 * template dir (mkdtemp). */
static void config_in_temp_dir(config *cfg, char *dir)
{
    error_info err;
    assert_int_equal(config_init_defaults(cfg, &err), ERR_OK);
    assert_non_null(mkdtemp(dir));
    free(cfg->state_dir);
    cfg->state_dir = strdup(dir);
}

static void test_merge(void **unused)
{
    (void)unused;
    config cfg;
    error_info err;
    char dir[] = "/tmp/outpost-status-XXXXXX";
    config_in_temp_dir(&cfg, dir);

    cJSON *doc;
    assert_int_equal(status_read(&cfg, &doc, &err), ERR_NOT_FOUND);

    cJSON *incidents = cJSON_Parse("{\"new\": 3, \"items\": []}");
    status_parts parts = {.incidents = incidents};
    assert_int_equal(status_write(&cfg, &parts, &err), ERR_OK);
    cJSON_Delete(incidents);

    cJSON *installer = cJSON_Parse("{\"latest_version\": \"2.0\"}");
    status_parts second = {.installer = installer};
    assert_int_equal(status_write(&cfg, &second, &err), ERR_OK);
    cJSON_Delete(installer);

    assert_int_equal(status_read(&cfg, &doc, &err), ERR_OK);
    assert_int_equal(cJSON_GetObjectItem(doc, "schema_version")->valueint, 1);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(doc, "generated_at")));
    cJSON *agent = cJSON_GetObjectItem(doc, "agent");
    assert_string_equal(cJSON_GetObjectItem(agent, "version")->valuestring, OUTPOST_VERSION);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(agent, "hostname")));
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "incidents"), "new")->valueint, 3);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "installer"), "latest_version")->valuestring,
                        "2.0");
    cJSON_Delete(doc);
    config_free(&cfg);
}

/* The members not supplied come from parts.previous when given (the report
 * reads the file once per run), not from the file; the supplied parts are
 * printed in place (by reference) and left as they were. */
static void test_previous_given(void **unused)
{
    (void)unused;
    config cfg;
    error_info err;
    char dir[] = "/tmp/outpost-status-XXXXXX";
    config_in_temp_dir(&cfg, dir);

    cJSON *installer = cJSON_Parse("{\"latest_version\": \"2.0\"}");
    status_parts first = {.installer = installer};
    assert_int_equal(status_write(&cfg, &first, &err), ERR_OK);

    cJSON *previous = cJSON_Parse("{\"installer\": {\"latest_version\": \"3.0\"}, \"last_run\": {\"result\": \"ok\"}}");
    cJSON *incidents = cJSON_Parse("{\"new\": 2, \"items\": [{\"id\": \"a\", \"lineage\": {\"events\": []}}], "
                                   "\"hosts\": []}");
    cJSON *expected = cJSON_Duplicate(incidents, true);
    status_parts second = {.incidents = incidents, .previous = previous};
    assert_int_equal(status_write(&cfg, &second, &err), ERR_OK);
    assert_true(cJSON_Compare(incidents, expected, true)); /* not taken, not changed */

    cJSON *doc;
    assert_int_equal(status_read(&cfg, &doc, &err), ERR_OK);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "installer"), "latest_version")->valuestring,
                        "3.0");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "last_run"), "result")->valuestring, "ok");
    assert_true(cJSON_Compare(cJSON_GetObjectItem(doc, "incidents"), expected, true));
    cJSON_Delete(doc);
    cJSON_Delete(expected);
    cJSON_Delete(incidents);
    cJSON_Delete(previous);
    cJSON_Delete(installer);
    config_free(&cfg);
}

/* cJSON's allocator, failing from the Nth allocation on (-1: never). */
static int allocations_left = -1;

static void *failing_malloc(size_t size)
{
    if (allocations_left == 0)
        return NULL;
    if (allocations_left > 0)
        allocations_left--;
    return malloc(size);
}

static void fail_allocations_after(int n)
{
    allocations_left = n;
    cJSON_Hooks hooks = {.malloc_fn = failing_malloc, .free_fn = free};
    cJSON_InitHooks(n < 0 ? NULL : &hooks);
}

static char *printed(const cJSON *o)
{
    char *text = cJSON_PrintUnformatted(o);
    assert_non_null(text);
    return text;
}

static void test_last_run_members_in_schema_order(void **unused)
{
    (void)unused;
    cJSON *errors = cJSON_CreateArray();
    error_info err;
    assert_int_equal(status_run_error(errors, "update", "the platform answered 503", &err), ERR_OK);
    status_run run = {.started_at = "2026-11-21T10:00:00Z",
                      .finished_at = "2026-11-21T10:00:07Z",
                      .result = "partial",
                      .exit_code = 75,
                      .errors = errors};
    cJSON *o = NULL;
    assert_int_equal(status_last_run(&run, &o, &err), ERR_OK);
    char *text = printed(o);
    assert_string_equal(text, "{\"started_at\":\"2026-11-21T10:00:00Z\",\"finished_at\":\"2026-11-21T10:00:07Z\","
                              "\"result\":\"partial\",\"exit_code\":75,"
                              "\"errors\":[{\"stage\":\"update\",\"message\":\"the platform answered 503\"}]}");
    free(text);
    cJSON_Delete(o);
    /* The errors were copied: the caller's array is still its own. */
    assert_int_equal(cJSON_GetArraySize(errors), 1);
    cJSON_Delete(errors);

    status_run ok = {.started_at = "a", .finished_at = "b", .result = "ok", .exit_code = 0};
    assert_int_equal(status_last_run(&ok, &o, &err), ERR_OK);
    text = printed(o);
    assert_string_equal(text, "{\"started_at\":\"a\",\"finished_at\":\"b\",\"result\":\"ok\",\"exit_code\":0,"
                              "\"errors\":[]}");
    free(text);
    cJSON_Delete(o);
}

/* Every allocation the builder makes may fail: each failure is ERR_NOMEM
 * with nothing half-built handed back, never a last_run without its
 * errors (what `run` wrote before the builder was shared). */
static void test_last_run_out_of_memory_is_reported(void **unused)
{
    (void)unused;
    cJSON *errors = cJSON_CreateArray();
    error_info err;
    assert_int_equal(status_run_error(errors, "report", "cannot append to the incidents file", &err), ERR_OK);
    status_run run = {.started_at = "a", .finished_at = "b", .result = "failed", .exit_code = 1, .errors = errors};
    int failures = 0;
    for (int n = 0;; n++) {
        cJSON *o = NULL;
        error_clear(&err);
        fail_allocations_after(n);
        error_code rc = status_last_run(&run, &o, &err);
        fail_allocations_after(-1);
        if (rc == ERR_OK) {
            assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "errors")), 1);
            cJSON_Delete(o);
            break;
        }
        failures++;
        assert_int_equal(rc, ERR_NOMEM);
        assert_int_equal(err.code, ERR_NOMEM);
        assert_non_null(strstr(err.message, "last_run"));
        assert_null(o);
    }
    assert_true(failures >= 5);

    for (int n = 0;; n++) {
        fail_allocations_after(n);
        error_code rc = status_run_error(errors, "run", "second", &err);
        fail_allocations_after(-1);
        if (rc == ERR_OK)
            break;
        assert_int_equal(rc, ERR_NOMEM);
        assert_int_equal(cJSON_GetArraySize(errors), 1); /* left as it was */
    }
    assert_int_equal(cJSON_GetArraySize(errors), 2);
    cJSON_Delete(errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_previous_given),
        cmocka_unit_test(test_last_run_members_in_schema_order),
        cmocka_unit_test(test_last_run_out_of_memory_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
