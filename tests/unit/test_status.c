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

#include "core/timefmt.h"
#include "report/status.h"

#include "support.h"

/* Default configuration whose state directory is a new one (support_tempdir). */
static void config_in_temp_dir(config *cfg)
{
    error_info err;
    assert_int_equal(config_init_defaults(cfg, &err), ERR_OK);
    free(cfg->state_dir);
    cfg->state_dir = support_tempdir("status");
}

static void test_merge(void **unused)
{
    (void)unused;
    config cfg;
    error_info err;
    config_in_temp_dir(&cfg);

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
    config_in_temp_dir(&cfg);

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
                              "\"errors\":[{\"stage\":\"update\",\"message\":\"the platform answered 503\"}],"
                              "\"last_success_at\":null,\"failing_since\":\"2026-11-21T10:00:00Z\"}");
    free(text);
    cJSON_Delete(o);
    /* The errors were copied: the caller's array is still its own. */
    assert_int_equal(cJSON_GetArraySize(errors), 1);
    cJSON_Delete(errors);

    status_run ok = {.started_at = "a", .finished_at = "b", .result = "ok", .exit_code = 0};
    assert_int_equal(status_last_run(&ok, &o, &err), ERR_OK);
    text = printed(o);
    assert_string_equal(text, "{\"started_at\":\"a\",\"finished_at\":\"b\",\"result\":\"ok\",\"exit_code\":0,"
                              "\"errors\":[],\"last_success_at\":\"b\",\"failing_since\":null}");
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
        support_cjson_fail_after(n);
        error_code rc = status_last_run(&run, &o, &err);
        support_cjson_fail_after(-1);
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
        support_cjson_fail_after(n);
        error_code rc = status_run_error(errors, "run", "second", &err);
        support_cjson_fail_after(-1);
        if (rc == ERR_OK)
            break;
        assert_int_equal(rc, ERR_NOMEM);
        assert_int_equal(cJSON_GetArraySize(errors), 1); /* left as it was */
    }
    assert_int_equal(cJSON_GetArraySize(errors), 2);
    cJSON_Delete(errors);
}

/* last_success_at and failing_since carry on from the previous last_run. */
static void test_history_carries_on(void **unused)
{
    (void)unused;
    static const struct {
        const char *previous; /* the previous last_run, NULL: none */
        int exit_code;        /* this run's */
        const char *last_success_at, *failing_since;
    } cases[] = {
        {NULL, 0, "T1", NULL},
        {NULL, 75, NULL, "T0"},
        {NULL, 3010, "T1", NULL},
        /* A success after failures clears failing_since. */
        {"{\"exit_code\": 75, \"last_success_at\": \"P\", \"failing_since\": \"F\"}", 0, "T1", NULL},
        /* Failures keep the first failure's start and the last success. */
        {"{\"exit_code\": 75, \"last_success_at\": \"P\", \"failing_since\": \"F\"}", 75, "P", "F"},
        {"{\"exit_code\": 75, \"last_success_at\": \"P\", \"failing_since\": \"F\"}", 1, "P", "F"},
        /* The first failure after a success starts the count. */
        {"{\"exit_code\": 0, \"finished_at\": \"PF\", \"last_success_at\": \"PF\", \"failing_since\": null}", 75, "PF",
         "T0"},
        /* A file written before the members existed. */
        {"{\"exit_code\": 0, \"started_at\": \"PS\", \"finished_at\": \"PF\"}", 75, "PF", "T0"},
        {"{\"exit_code\": 75, \"started_at\": \"PS\", \"finished_at\": \"PF\"}", 75, NULL, "PS"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *previous = cases[i].previous ? cJSON_Parse(cases[i].previous) : NULL;
        status_run run = {.started_at = "T0",
                          .finished_at = "T1",
                          .result = cases[i].exit_code == 0 ? "ok" : "failed",
                          .exit_code = cases[i].exit_code,
                          .previous = previous};
        cJSON *o = NULL;
        error_info err;
        assert_int_equal(status_last_run(&run, &o, &err), ERR_OK);
        const cJSON *success = cJSON_GetObjectItem(o, "last_success_at");
        const cJSON *since = cJSON_GetObjectItem(o, "failing_since");
        if (cases[i].last_success_at)
            assert_string_equal(cJSON_GetStringValue(success), cases[i].last_success_at);
        else
            assert_true(cJSON_IsNull(success));
        if (cases[i].failing_since)
            assert_string_equal(cJSON_GetStringValue(since), cases[i].failing_since);
        else
            assert_true(cJSON_IsNull(since));
        cJSON_Delete(o);
        cJSON_Delete(previous);
    }
}

/* `report` alone builds last_run without the previous one: status_write
 * carries the history on from the file it replaces. */
static void test_write_carries_history(void **unused)
{
    (void)unused;
    config cfg;
    error_info err;
    config_in_temp_dir(&cfg);
    cJSON *first = cJSON_Parse("{\"started_at\": \"2026-11-21T09:00:00Z\", \"finished_at\": \"2026-11-21T09:00:05Z\", "
                               "\"result\": \"ok\", \"exit_code\": 0, \"errors\": []}");
    status_parts parts = {.last_run = first};
    assert_int_equal(status_write(&cfg, &parts, &err), ERR_OK);
    cJSON *second = cJSON_Parse("{\"started_at\": \"2026-11-21T10:00:00Z\", \"finished_at\": \"2026-11-21T10:00:05Z\", "
                                "\"result\": \"failed\", \"exit_code\": 75, \"errors\": []}");
    status_parts again = {.last_run = second};
    assert_int_equal(status_write(&cfg, &again, &err), ERR_OK);
    cJSON *doc = NULL;
    assert_int_equal(status_read(&cfg, &doc, &err), ERR_OK);
    const cJSON *run = cJSON_GetObjectItem(doc, "last_run");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(run, "last_success_at")), "2026-11-21T09:00:05Z");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(run, "failing_since")), "2026-11-21T10:00:00Z");
    cJSON_Delete(doc);
    cJSON_Delete(first);
    cJSON_Delete(second);
    config_free(&cfg);
}

/* A run whose status write failed leaves a note the next `status` reads;
 * the next written last_run removes it. */
static void test_unrecorded_note(void **unused)
{
    (void)unused;
    config cfg;
    error_info err;
    config_in_temp_dir(&cfg);
    assert_null(status_read_unrecorded(&cfg));
    status_note_unrecorded(&cfg, "2026-11-21T10:00:00Z", 1, "cannot write the status file: read-only");
    cJSON *note = status_read_unrecorded(&cfg);
    assert_non_null(note);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(note, "at")), "2026-11-21T10:00:00Z");
    cJSON_Delete(note);
    cJSON *run = cJSON_Parse("{\"started_at\": \"2026-11-21T11:00:00Z\", \"finished_at\": \"2026-11-21T11:00:05Z\", "
                             "\"result\": \"ok\", \"exit_code\": 0, \"errors\": []}");
    status_parts parts = {.last_run = run};
    assert_int_equal(status_write(&cfg, &parts, &err), ERR_OK);
    assert_null(status_read_unrecorded(&cfg));
    cJSON_Delete(run);
    config_free(&cfg);
}

/* The verdict, with the clock passed in: one row per rule of PRODUCT.md
 * section 5. */
static void test_verdict(void **unused)
{
    (void)unused;
#define RUN(exit, started, finished, success, since)                                                                   \
    "{\"last_run\": {\"started_at\": \"" started "\", \"finished_at\": \"" finished "\", \"result\": \"x\", "          \
    "\"exit_code\": " #exit ", \"errors\": [{\"stage\": \"update\", \"message\": \"the platform answered 503\"}], "    \
    "\"last_success_at\": " success ", \"failing_since\": " since "}}"
    static const struct {
        const char *doc;        /* NULL: no status file */
        const char *unrecorded; /* the note of a run that could not write; NULL: none */
        const char *now;
        const char *max_age_from;
        bool attention;
        int exit_code;
        const char *says; /* in the text */
    } cases[] = {
        {NULL, NULL, "2026-11-21T10:00:00Z", NULL, true, 75, "no scheduled run has finished yet"},
        {RUN(0, "2026-11-21T10:00:00Z", "2026-11-21T10:00:05Z", "\"2026-11-21T10:00:05Z\"", "null"), NULL,
         "2026-11-21T11:00:00Z", NULL, false, 0, "OK: the last run succeeded 59m 55s ago"},
        /* 30 days later: stale, whatever the last run said. */
        {RUN(0, "2026-11-21T10:00:00Z", "2026-11-21T10:00:05Z", "\"2026-11-21T10:00:05Z\"", "null"), NULL,
         "2026-12-21T10:00:05Z", NULL, true, 75,
         "stale: the last successful run finished 30d 0h ago, longer than "
         "status.max_age 3h 0m"},
        {RUN(0, "2026-11-21T10:00:00Z", "2026-11-21T10:00:05Z", "\"2026-11-21T10:00:05Z\"", "null"), NULL,
         "2026-11-21T11:00:05Z", "--max-age", false, 0, "OK"},
        /* A file without last_success_at: a successful run's finish. */
        {RUN(0, "2026-11-21T10:00:00Z", "2026-11-21T10:00:05Z", "null", "null"), NULL, "2026-11-21T14:00:05Z",
         "--max-age", true, 75, "longer than --max-age 3h 0m"},
        /* Failing, within max_failing: the failure, its code. */
        {RUN(75, "2026-11-21T10:00:00Z", "2026-11-21T10:00:05Z", "\"2026-11-21T09:00:05Z\"",
             "\"2026-11-21T10:00:00Z\""),
         NULL, "2026-11-21T10:30:00Z", NULL, true, 75, "the last run failed (exit code 75): update: the platform"},
        /* Failing for longer than max_failing (and no success since). */
        {RUN(1, "2026-11-22T11:00:00Z", "2026-11-22T11:00:05Z", "null", "\"2026-11-21T10:00:00Z\""), NULL,
         "2026-11-22T11:00:10Z", NULL, true, 1,
         "failing since 2026-11-21T10:00:00Z (25h 0m, longer than "
         "status.max_failing 24h 0m)"},
        /* The last success long ago, the run failing for less than max_failing. */
        {RUN(75, "2026-11-21T10:00:00Z", "2026-11-21T10:00:05Z", "\"2026-11-21T05:00:00Z\"",
             "\"2026-11-21T09:00:00Z\""),
         NULL, "2026-11-21T10:00:10Z", NULL, true, 75, "stale: the last successful run finished 5h 0m ago"},
        /* A later run could not write the status file. */
        {RUN(0, "2026-11-21T10:00:00Z", "2026-11-21T10:00:05Z", "\"2026-11-21T10:00:05Z\"", "null"),
         "{\"at\": \"2026-11-21T11:00:05Z\", \"exit_code\": 1, \"message\": \"cannot write the status file\"}",
         "2026-11-21T11:10:00Z", NULL, true, 1, "the run at 2026-11-21T11:00:05Z could not record its outcome"},
        /* ... in the same second too (the note is removed by the next written status) */
        {RUN(0, "2026-11-21T10:00:00Z", "2026-11-21T10:00:05Z", "\"2026-11-21T10:00:05Z\"", "null"),
         "{\"at\": \"2026-11-21T10:00:05Z\", \"exit_code\": 1, \"message\": \"cannot write the status file\"}",
         "2026-11-21T10:10:00Z", NULL, true, 1, "could not record its outcome"},
        /* ... an older note is forgotten. */
        {RUN(0, "2026-11-21T10:00:00Z", "2026-11-21T10:00:05Z", "\"2026-11-21T10:00:05Z\"", "null"),
         "{\"at\": \"2026-11-21T09:00:05Z\", \"exit_code\": 1, \"message\": \"cannot write the status file\"}",
         "2026-11-21T10:10:00Z", NULL, false, 0, "OK"},
        {NULL, "{\"at\": \"2026-11-21T09:00:05Z\", \"exit_code\": 75, \"message\": \"disk full\"}",
         "2026-11-21T10:10:00Z", NULL, true, 75, "could not record its outcome in the status file (exit code 75)"},
    };
#undef RUN
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *doc = cases[i].doc ? cJSON_Parse(cases[i].doc) : NULL;
        cJSON *note = cases[i].unrecorded ? cJSON_Parse(cases[i].unrecorded) : NULL;
        assert_true(!cases[i].doc || doc);
        int64_t now = 0;
        assert_true(timefmt_parse_iso8601(cases[i].now, &now));
        status_limits limits = {
            .max_age_s = 3 * 3600, .max_age_from = cases[i].max_age_from, .max_failing_s = 24 * 3600};
        status_verdict v;
        status_judge(doc, note, &limits, now, "boot", &v);
        if (!strstr(v.text, cases[i].says) || v.attention != cases[i].attention || v.exit_code != cases[i].exit_code)
            fail_msg("case %zu: \"%s\" (exit %d), wanted \"%s\" (exit %d)", i, v.text, v.exit_code, cases[i].says,
                     cases[i].exit_code);
        assert_int_equal(strncmp(v.text, "ATTENTION: ", 11) == 0, cases[i].attention);
        cJSON_Delete(doc);
        cJSON_Delete(note);
    }
}

/* A reboot a deploy asked for is pending until the boot id changes. */
static void test_verdict_reboot(void **unused)
{
    (void)unused;
    cJSON *doc = cJSON_Parse(
        "{\"last_run\": {\"started_at\": \"2026-11-21T10:00:00Z\", \"finished_at\": \"2026-11-21T10:00:05Z\", "
        "\"exit_code\": 3010, \"errors\": []}, \"installer\": {\"deployed\": {\"version\": \"2.0\", "
        "\"reboot_required\": true, \"boot_id\": \"one\"}}}");
    int64_t now = 0;
    assert_true(timefmt_parse_iso8601("2026-11-21T10:10:00Z", &now));
    status_limits limits = {.max_age_s = 3 * 3600, .max_failing_s = 24 * 3600};
    status_verdict v;
    status_judge(doc, NULL, &limits, now, "one", &v);
    assert_true(v.attention);
    assert_non_null(strstr(v.text, "reboot required to finish the deploy of 2.0"));
    assert_int_equal(v.exit_code, 3010);
    status_judge(doc, NULL, &limits, now, "two", &v);
    assert_false(v.attention);
    cJSON_Delete(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_previous_given),
        cmocka_unit_test(test_last_run_members_in_schema_order),
        cmocka_unit_test(test_last_run_out_of_memory_is_reported),
        cmocka_unit_test(test_history_carries_on),
        cmocka_unit_test(test_write_carries_history),
        cmocka_unit_test(test_unrecorded_note),
        cmocka_unit_test(test_verdict),
        cmocka_unit_test(test_verdict_reboot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
