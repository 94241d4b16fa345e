/* test_jsonx.c — the JSON helpers (agent/core/jsonx.c): dotted-path readers
 * that name the path in their first error, the lenient mode, and the two
 * writers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"

static const char DOC[] = "{\"id\":\"e1\",\"empty\":\"\",\"nothing\":null,\"n\":42,\"big\":\"9007199254740993\","
                          "\"frac\":1.5,\"flag\":true,\"action\":{\"kind\":\"copy\",\"size\":7,\"tags\":[\"a\",\"b\"],"
                          "\"mixed\":[\"a\",1]},\"user\":\"bob\"}";

typedef enum {
    READ_STRING,
    READ_NONEMPTY,
    READ_BOOL,
    READ_NUMBER,
    READ_INT64,
    READ_INT64_STRING,
    READ_ARRAY
} read_kind;

/* Reads one path with a reader at "incidents/list" (prefix as given) and
 * checks the value or the message. */
static void test_readers(void **state)
{
    (void)state;
    static const struct {
        read_kind kind;
        const char *prefix;
        const char *path;
        const char *string;  /* READ_STRING/NONEMPTY: expected, NULL for none */
        int64_t number;      /* READ_BOOL/NUMBER/INT64/ARRAY: expected (ARRAY: element count, -1 NULL) */
        const char *message; /* NULL: no failure */
    } cases[] = {
        {READ_STRING, "", "id", "e1", 0, NULL},
        {READ_STRING, "", "action.kind", "copy", 0, NULL},
        {READ_STRING, "", "absent", NULL, 0, NULL},
        {READ_STRING, "", "nothing", NULL, 0, NULL}, /* null reads as absent */
        {READ_STRING, "", "action.absent.deeper", NULL, 0, NULL},
        {READ_STRING, "", "n", NULL, 0, "incidents/list: field `n` is not a string"},
        {READ_STRING, "resources[3]", "n", NULL, 0, "incidents/list: resources[3].n is not a string"},
        {READ_STRING, "resources[3]", "action.size", NULL, 0,
         "incidents/list: resources[3].action.size is not a string"},
        {READ_STRING, "resources[0]", "user.local_username", NULL, 0,
         "incidents/list: resources[0].user is not an object"}, /* the step that is wrong is named */
        {READ_STRING, "", "action.kind.x", NULL, 0, "incidents/list: field `action.kind` is not an object"},
        {READ_NONEMPTY, "", "empty", NULL, 0, NULL},
        {READ_NONEMPTY, "", "id", "e1", 0, NULL},
        {READ_BOOL, "", "flag", NULL, 1, NULL},
        {READ_BOOL, "", "absent", NULL, 0, NULL},
        {READ_BOOL, "", "id", NULL, 0, "incidents/list: field `id` is not a boolean"},
        {READ_NUMBER, "", "n", NULL, 42, NULL},
        {READ_NUMBER, "", "user", NULL, 0, "incidents/list: field `user` is not a number"},
        {READ_INT64, "", "action.size", NULL, 7, NULL},
        {READ_INT64, "", "absent", NULL, -1, NULL}, /* the fallback */
        {READ_INT64, "", "frac", NULL, -1, "incidents/list: field `frac` is not an integer"},
        {READ_INT64, "", "big", NULL, -1, "incidents/list: field `big` is not an integer"},
        {READ_INT64_STRING, "", "big", NULL, 9007199254740993, NULL}, /* all 64 bits from a string */
        {READ_ARRAY, "", "action.tags", NULL, 2, NULL},
        {READ_ARRAY, "", "absent", NULL, -1, NULL},
        {READ_ARRAY, "", "action.mixed", NULL, -1,
         "incidents/list: field `action.mixed` holds an element that is not a string"},
        {READ_ARRAY, "resources[1]", "id", NULL, -1, "incidents/list: resources[1].id is not an array"},
    };
    cJSON *doc = cJSON_Parse(DOC);
    assert_non_null(doc);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int lenient = 0; lenient < 2; lenient++) {
            error_info err;
            error_clear(&err);
            jsonx_reader reader;
            jsonx_reader_init(&reader, "incidents/list", cases[i].prefix, ERR_PROTOCOL, &err);
            jsonx_reader *r = lenient ? NULL : &reader;
            const char *s = NULL;
            int64_t got = 0;
            bool present = false;
            const cJSON *array = NULL;
            switch (cases[i].kind) {
            case READ_STRING: s = jsonx_string(r, doc, cases[i].path); break;
            case READ_NONEMPTY: s = jsonx_nonempty(r, doc, cases[i].path); break;
            case READ_BOOL: got = jsonx_bool(r, doc, cases[i].path, false); break;
            case READ_NUMBER: got = (int64_t)jsonx_number(r, doc, cases[i].path, &present); break;
            case READ_INT64: got = jsonx_int64(r, doc, cases[i].path, false, -1); break;
            case READ_INT64_STRING: got = jsonx_int64(r, doc, cases[i].path, true, -1); break;
            case READ_ARRAY:
                array = jsonx_string_array(r, doc, cases[i].path);
                got = array ? cJSON_GetArraySize(array) : -1;
                break;
            }
            if (cases[i].kind == READ_STRING || cases[i].kind == READ_NONEMPTY) {
                if (cases[i].string)
                    assert_string_equal(s, cases[i].string);
                else
                    assert_null(s);
            } else if (got != cases[i].number) {
                fail_msg("case %zu (%s): read %lld", i, cases[i].path, (long long)got);
            }
            if (cases[i].kind == READ_NUMBER)
                assert_int_equal(present, cases[i].message == NULL);
            if (lenient || !cases[i].message) {
                assert_int_equal(reader.rc, ERR_OK); /* lenient: nothing reported */
                assert_int_equal(err.code, ERR_OK);
            } else {
                assert_int_equal(reader.rc, ERR_PROTOCOL);
                assert_int_equal(err.code, ERR_PROTOCOL);
                assert_string_equal(err.message, cases[i].message);
            }
        }
    }
    cJSON_Delete(doc);
}

/* The first failure is kept: later ones do not overwrite the message. */
static void test_first_failure_wins(void **state)
{
    (void)state;
    cJSON *doc = cJSON_Parse(DOC);
    error_info err;
    error_clear(&err);
    jsonx_reader r;
    jsonx_reader_init(&r, "event-details", NULL, ERR_PROTOCOL, &err);
    assert_null(jsonx_string(&r, doc, "n"));
    assert_false(jsonx_bool(&r, doc, "id", false));
    assert_string_equal(jsonx_string(&r, doc, "id"), "e1"); /* reading goes on */
    assert_string_equal(err.message, "event-details: field `n` is not a string");
    assert_int_equal(jsonx_fail(&r, "x", "is wrong"), ERR_PROTOCOL);
    assert_string_equal(err.message, "event-details: field `n` is not a string");
    cJSON_Delete(doc);
}

static void test_add_string_or_null(void **state)
{
    (void)state;
    cJSON *o = cJSON_CreateObject();
    assert_true(jsonx_add_string_or_null(o, "a", "x"));
    assert_true(jsonx_add_string_or_null(o, "b", NULL));
    assert_true(jsonx_add_string_or_null(o, "c", ""));
    char *text = cJSON_PrintUnformatted(o);
    assert_string_equal(text, "{\"a\":\"x\",\"b\":null,\"c\":\"\"}");
    cJSON_free(text);
    cJSON_Delete(o);
}

static void test_set(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse("{\"keep\":1,\"v\":\"old\"}");
    assert_true(jsonx_set(o, "v", cJSON_CreateString("new")));   /* replaces in place */
    assert_true(jsonx_set(o, "added", cJSON_CreateNumber(2)));   /* adds */
    assert_false(jsonx_set(o, "none", NULL));                    /* a failed create */
    assert_false(jsonx_set(NULL, "v", cJSON_CreateString("x"))); /* deleted, not leaked (ASan) */
    char *text = cJSON_PrintUnformatted(o);
    assert_string_equal(text, "{\"keep\":1,\"v\":\"new\",\"added\":2}");
    cJSON_free(text);
    cJSON_Delete(o);
}

/* The signed mirror documents' integers: exact in a double, or refused. */
static void test_exact_integer(void **state)
{
    (void)state;
    static const struct {
        const char *json; /* {"n": ...} */
        int64_t min;
        bool ok;
        int64_t value;
    } cases[] = {
        {"{\"n\": 1}", 1, true, 1},
        {"{\"n\": 9007199254740991}", 1, true, 9007199254740991LL}, /* 2^53 - 1 */
        {"{\"n\": 9007199254740992}", 1, false, 0},                 /* 2^53: two integers read as one */
        {"{\"n\": 1e300}", 1, false, 0},
        {"{\"n\": 0}", 1, false, 0}, /* below min */
        {"{\"n\": 0}", 0, true, 0},
        {"{\"n\": -1}", 0, false, 0},
        {"{\"n\": 1.5}", 1, false, 0},
        {"{\"n\": \"7\"}", 1, false, 0}, /* a string is not a number here */
        {"{\"n\": null}", 1, false, 0},
        {"{}", 1, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *doc = cJSON_Parse(cases[i].json);
        assert_non_null(doc);
        int64_t out = -42;
        bool ok = jsonx_exact_integer(doc, "n", cases[i].min, &out);
        assert_int_equal(ok, cases[i].ok);
        assert_int_equal(out, cases[i].ok ? cases[i].value : -42); /* nothing set on refusal */
        cJSON_Delete(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readers),
        cmocka_unit_test(test_first_failure_wins),
        cmocka_unit_test(test_add_string_or_null),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_exact_integer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
