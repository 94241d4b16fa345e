/* test_state.c — state.json: sections survive a save/load round trip, a
 * damaged file is moved aside instead of stopping every run, and the seen
 * set (held out of the tree) loads an older file and saves the very bytes
 * cJSON would have printed. */
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

static char *read_state(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/state.json", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* What the cJSON tree of text prints as, with schema_version last, as
 * state_save always wrote it. */
static char *as_cjson_saves(const char *text)
{
    cJSON *doc = cJSON_Parse(text);
    assert_non_null(doc);
    cJSON_DeleteItemFromObject(doc, "schema_version");
    cJSON_AddNumberToObject(doc, "schema_version", 1);
    char *out = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return out;
}

/* An older file, written pretty by a person or by an older outpost, loads
 * into the set and comes back as cJSON would print it. */
static void test_seen_round_trip_is_byte_identical(void **unused)
{
    (void)unused;
    char *dir = make_dir();
    static const char old[] =
        "{\"installer\": {\"installed_version\": \"1.0\", \"seen\": {\"not\": \"ours\"}},\n"
        " \"report\": {\"cursor\": \"2026-11-21T10:00:00Z\",\n"
        "   \"seen\": {\"a\": \"2026-11-21T09:00:00Z\", \"q\\\"uo\\\\te\\u0001\\n\": \"2026-11-21T09:01:00Z\",\n"
        "            \"caf\u00e9\\u00e9\": \"2026-11-21T09:02:00.250Z\", \"\\ud83d\\ude00\": \"t\\/x\"},\n"
        "   \"failed\": {\"f\": {\"first_failed_at\": \"2026-11-21T09:00:00Z\"}}},\n"
        " \"run\": {}, \"schema_version\": 1}\n";
    write_file(dir, "state.json", old);
    error_info err;
    state *s;
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    state_seen *seen = state_seen_of(s);
    assert_int_equal(state_seen_count(seen), 4);
    assert_string_equal(state_seen_get(seen, "a"), "2026-11-21T09:00:00Z");
    assert_string_equal(state_seen_get(seen, "q\"uo\\te\001\n"), "2026-11-21T09:01:00Z");
    assert_string_equal(state_seen_get(seen, "caf\u00e9\u00e9"), "2026-11-21T09:02:00.250Z");
    assert_string_equal(state_seen_get(seen, "\xf0\x9f\x98\x80"), "t/x");
    /* The tree holds an empty placeholder, not the ids; other sections are untouched. */
    cJSON *report = state_section(s, "report");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(report, "seen")), 0);
    assert_string_equal(cJSON_GetObjectItem(report, "cursor")->valuestring, "2026-11-21T10:00:00Z");
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(state_section(s, "installer"), "seen"), "not"));
    assert_int_equal(state_save(s, &err), ERR_OK);
    state_free(s);
    char *saved = read_state(dir);
    char *expected = as_cjson_saves(old);
    assert_string_equal(saved, expected);
    free(expected);

    /* Loaded again (as a newer or an older outpost would), saved again: the same. */
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    assert_int_equal(state_seen_count(state_seen_of(s)), 4);
    assert_int_equal(state_save(s, &err), ERR_OK);
    state_free(s);
    char *again = read_state(dir);
    assert_string_equal(again, saved);
    free(again);
    free(saved);
    support_tempdir_remove(dir);
}

/* Changes keep cJSON's order: a re-added id moves to the end, removed ones
 * leave, pruning keeps the order of the rest. */
static void test_seen_put_remove_filter(void **unused)
{
    (void)unused;
    char *dir = make_dir();
    error_info err;
    state *s;
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    assert_non_null(cJSON_AddObjectToObject(state_section(s, "report"), "seen"));
    cJSON_AddStringToObject(state_section(s, "report"), "cursor", "c");
    state_seen *seen = state_seen_of(s);
    assert_true(state_seen_put(seen, "a", "1"));
    assert_true(state_seen_put(seen, "b", "2"));
    assert_true(state_seen_put(seen, "c", "3"));
    assert_true(state_seen_put(seen, "a", "4"));
    assert_true(state_seen_remove(seen, "b"));
    assert_false(state_seen_remove(seen, "b"));
    assert_int_equal(state_seen_count(seen), 2);
    assert_string_equal(state_seen_get(seen, "a"), "4");
    assert_int_equal(state_save(s, &err), ERR_OK);
    char *text = read_state(dir);
    assert_string_equal(text,
                        "{\"report\":{\"seen\":{\"c\":\"3\",\"a\":\"4\"},\"cursor\":\"c\"},\"schema_version\":1}");
    free(text);

    /* An id longer than a block of records, and ids after it. */
    size_t n = 150000;
    char *long_id = malloc(n + 1);
    assert_non_null(long_id);
    memset(long_id, 'L', n);
    long_id[n] = '\0';
    assert_true(state_seen_put(seen, long_id, "5"));
    assert_true(state_seen_put(seen, "z", "6"));
    assert_string_equal(state_seen_get(seen, long_id), "5");
    assert_string_equal(state_seen_get(seen, "z"), "6");
    assert_string_equal(state_seen_get(seen, "c"), "3");
    assert_int_equal(state_save(s, &err), ERR_OK);
    state_free(s);
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    seen = state_seen_of(s);
    assert_int_equal(state_seen_count(seen), 4);
    assert_string_equal(state_seen_get(seen, long_id), "5");
    assert_true(state_seen_remove(seen, long_id));
    assert_string_equal(state_seen_get(seen, "z"), "6");
    free(long_id);
    state_free(s);
    support_tempdir_remove(dir);
}

static bool keep_even(const char *id, const char *time, void *user)
{
    (void)time;
    ++*(int *)user;
    return atoi(id) % 2 == 0;
}

/* 100,000 ids (a large tenant's backlog in one poll window) load, prune and
 * save within the state file's cap. */
static void test_seen_large_set(void **unused)
{
    (void)unused;
    char *dir = make_dir();
    error_info err;
    state *s;
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    state_seen *seen = state_seen_of(s);
    char id[64];
    for (int i = 0; i < 100000; i++) {
        snprintf(id, sizeof id, "%d-6f1c2a8e-1b7d-4c55-9a0e-%012d", i, i);
        assert_true(state_seen_put(seen, id, "2026-11-21T09:00:00Z"));
    }
    assert_int_equal(state_save(s, &err), ERR_OK);
    state_free(s);

    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    seen = state_seen_of(s);
    assert_int_equal(state_seen_count(seen), 100000);
    assert_string_equal(state_seen_get(seen, "99999-6f1c2a8e-1b7d-4c55-9a0e-000000099999"), "2026-11-21T09:00:00Z");
    int calls = 0;
    state_seen_filter(seen, keep_even, &calls);
    assert_int_equal(calls, 100000);
    assert_int_equal(state_seen_count(seen), 50000);
    assert_null(state_seen_get(seen, "1-6f1c2a8e-1b7d-4c55-9a0e-000000000001"));
    assert_non_null(state_seen_get(seen, "2-6f1c2a8e-1b7d-4c55-9a0e-000000000002"));
    assert_int_equal(state_save(s, &err), ERR_OK);
    state_free(s);
    char *text = read_state(dir);
    assert_true(strlen(text) < STATE_MAX_BYTES);
    char *expected = as_cjson_saves(text); /* valid JSON, in cJSON's own form */
    assert_string_equal(text, expected);
    free(expected);
    free(text);
    support_tempdir_remove(dir);
}

/* A set that would not fit the cap is not saved: the next load would put
 * the file aside and forget the cursor with it. */
static void test_seen_over_the_cap_is_not_saved(void **unused)
{
    (void)unused;
    char *dir = make_dir();
    write_file(dir, "state.json", "{\"report\":{\"cursor\":\"c\"}}");
    error_info err;
    state *s;
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    state_seen *seen = state_seen_of(s);
    size_t n = 1024 * 1024;
    char *id = malloc(n + 1);
    assert_non_null(id);
    for (int i = 0; i < 17; i++) {
        memset(id, 'a' + i, n);
        id[n] = '\0';
        assert_true(state_seen_put(seen, id, "t"));
    }
    free(id);
    assert_int_not_equal(state_save(s, &err), ERR_OK);
    assert_non_null(strstr(err.message, "16 MiB"));
    state_free(s);
    char *text = read_state(dir);
    assert_string_equal(text, "{\"report\":{\"cursor\":\"c\"}}");
    free(text);
    support_tempdir_remove(dir);
}

/* Damage in the seen member: duplicates keep the first (lookups found it
 * before), values that are not times are dropped, a seen that is not an
 * object is left to its owner, and a key the scanner does not read as
 * plain text (escaped) still loads through the tree. */
static void test_seen_damaged(void **unused)
{
    (void)unused;
    log_set_level(LOG_QUIET);
    char *dir = make_dir();
    error_info err;
    state *s;
    write_file(dir, "state.json",
               "{\"report\":{\"seen\":{\"a\":\"1\",\"n\":5,\"o\":{\"x\":[1,{\"y\":\"}\"}]},\"a\":\"2\",\"z\":null,"
               "\"b\":\"3\"}}}");
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    state_seen *seen = state_seen_of(s);
    assert_int_equal(state_seen_count(seen), 2);
    assert_string_equal(state_seen_get(seen, "a"), "1");
    assert_null(state_seen_get(seen, "n"));
    assert_int_equal(state_save(s, &err), ERR_OK);
    state_free(s);
    char *text = read_state(dir);
    assert_string_equal(text, "{\"report\":{\"seen\":{\"a\":\"1\",\"b\":\"3\"}},\"schema_version\":1}");
    free(text);

    write_file(dir, "state.json", "{\"report\":{\"seen\":\"garbage\",\"cursor\":\"c\"}}");
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    assert_int_equal(state_seen_count(state_seen_of(s)), 0);
    assert_int_equal(state_save(s, &err), ERR_OK);
    text = read_state(dir);
    assert_string_equal(text, "{\"report\":{\"seen\":\"garbage\",\"cursor\":\"c\"},\"schema_version\":1}");
    free(text);
    assert_true(state_seen_put(state_seen_of(s), "a", "1")); /* now it must be an object */
    assert_int_equal(state_save(s, &err), ERR_OK);
    state_free(s);
    text = read_state(dir);
    assert_string_equal(text, "{\"report\":{\"seen\":{\"a\":\"1\"},\"cursor\":\"c\"},\"schema_version\":1}");
    free(text);

    write_file(dir, "state.json", "\xef\xbb\xbf{\"rep\\u006frt\":{\"seen\":{\"a\":\"1\",\"a\":\"2\",\"k\":true}}}");
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    seen = state_seen_of(s);
    assert_int_equal(state_seen_count(seen), 1);
    assert_string_equal(state_seen_get(seen, "a"), "1");
    state_free(s);

    /* A seen member cut short: the file is not JSON, moved aside, the set empty. */
    write_file(dir, "state.json", "{\"report\":{\"seen\":{\"a\":\"1\",\"b\":");
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    assert_int_equal(state_seen_count(state_seen_of(s)), 0);
    state_free(s);
    /* The rest of the document broken after a good seen member: the same. */
    write_file(dir, "state.json", "{\"report\":{\"seen\":{\"a\":\"1\"},\"cursor\":}}");
    assert_int_equal(state_load(dir, &s, &err), ERR_OK);
    assert_int_equal(state_seen_count(state_seen_of(s)), 0);
    assert_int_equal(cJSON_GetArraySize(state_section(s, "report")), 0);
    state_free(s);
    support_tempdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_damaged_file_moved_aside),
        cmocka_unit_test(test_seen_round_trip_is_byte_identical),
        cmocka_unit_test(test_seen_put_remove_filter),
        cmocka_unit_test(test_seen_large_set),
        cmocka_unit_test(test_seen_over_the_cap_is_not_saved),
        cmocka_unit_test(test_seen_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
