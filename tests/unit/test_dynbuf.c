/* test_dynbuf.c — the growable buffer (agent/base/dynbuf.c): the cap, the sticky
 * failure, printf, handing the bytes over, and the wipe of secrets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"

/* A run of appends against a cap: what each returns and what is held after. */
static void test_cap_and_sticky_failure(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        size_t max;
        const char *pieces[4];
        bool ok[4];
        const char *held;
        dynbuf_status status;
    } cases[] = {
        {"fits", 8, {"abc", "def"}, {true, true}, "abcdef", DYNBUF_OK},
        {"exactly the cap", 6, {"abc", "def"}, {true, true}, "abcdef", DYNBUF_OK},
        {"one past the cap", 5, {"abc", "def"}, {true, false}, "abc", DYNBUF_TOO_LARGE},
        {"sticky: a later piece that fits is refused too",
         5,
         {"abc", "def", "g"},
         {true, false, false},
         "abc",
         DYNBUF_TOO_LARGE},
        {"first piece too large", 2, {"abc", "d"}, {false, false}, "", DYNBUF_TOO_LARGE},
        {"empty pieces", 0, {"", "", "x"}, {true, true, true}, "x", DYNBUF_OK},
        {"no cap: grows past the first block",
         0,
         {"0123456789012345678901234567890123456789"},
         {true},
         "0123456789012345678901234567890123456789",
         DYNBUF_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dynbuf b;
        dynbuf_init(&b, cases[i].max, i % 2 == 1); /* secret and plain buffers behave alike */
        for (size_t k = 0; k < 4 && cases[i].pieces[k]; k++)
            if (dynbuf_append_str(&b, cases[i].pieces[k]) != cases[i].ok[k])
                fail_msg("%s: piece %zu", cases[i].name, k);
        assert_string_equal(b.data ? b.data : "", cases[i].held);
        assert_int_equal(b.len, strlen(cases[i].held));
        if (b.status != cases[i].status)
            fail_msg("%s: status %d", cases[i].name, (int)b.status);
        assert_int_equal(dynbuf_ok(&b), cases[i].status == DYNBUF_OK);
        dynbuf_free(&b);
    }
}

static void test_reset_clears_the_failure(void **state)
{
    (void)state;
    dynbuf b;
    dynbuf_init(&b, 4, false);
    assert_false(dynbuf_append(&b, "too long", 8));
    assert_false(dynbuf_append(&b, "ok", 2));
    dynbuf_reset(&b);
    assert_true(dynbuf_ok(&b));
    assert_true(dynbuf_append(&b, "ok", 2));
    assert_string_equal(b.data, "ok");
    dynbuf_free(&b);
    assert_null(b.data);
    assert_true(dynbuf_append(&b, "abcd", 4)); /* usable again after free, same cap */
    assert_false(dynbuf_append(&b, "e", 1));
    dynbuf_free(&b);
}

static void test_printf(void **state)
{
    (void)state;
    static const struct {
        size_t max;
        int repeat;
        bool ok;
        size_t len;
    } cases[] = {
        {0, 1, true, 9},
        {0, 1000, true, 9000}, /* many growths */
        {85, 10, false, 81},   /* the tenth would pass the cap: the nine before stay */
        {90, 10, true, 90},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dynbuf b;
        dynbuf_init(&b, cases[i].max, false);
        bool ok = true;
        for (int k = 0; k < cases[i].repeat; k++)
            ok = dynbuf_printf(&b, "%s=%04d;", "key", k % 10000) && ok;
        assert_int_equal(ok, cases[i].ok);
        assert_int_equal(b.len, cases[i].len);
        assert_int_equal(strlen(b.data), cases[i].len);
        assert_memory_equal(b.data, "key=0000;", 9);
        dynbuf_free(&b);
    }
}

static void test_take(void **state)
{
    (void)state;
    dynbuf b;
    dynbuf_init(&b, 0, false);
    size_t len = 99;
    assert_null(dynbuf_take(&b, &len)); /* never held a byte */
    assert_int_equal(len, 0);
    assert_true(dynbuf_append(&b, "body", 4));
    char *data = dynbuf_take(&b, &len);
    assert_string_equal(data, "body");
    assert_int_equal(len, 4);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    free(data);
    dynbuf_free(&b);
}

/* A secret buffer wipes what it held before its memory can be reused: after
 * a reset every byte it allocated is zero, growth keeps the content. */
static void test_secret_wipe(void **state)
{
    (void)state;
    dynbuf b;
    dynbuf_init(&b, 0, true);
    assert_true(dynbuf_append_str(&b, "Authorization: Bearer "));
    for (int i = 0; i < 100; i++) /* grows several times through malloc, copy and wipe */
        assert_true(dynbuf_append_str(&b, "secret-token-"));
    assert_int_equal(b.len, 22 + 100 * 13);
    assert_memory_equal(b.data, "Authorization: Bearer secret-token-secret", 41);
    size_t cap = b.cap;
    dynbuf_reset(&b);
    for (size_t i = 0; i < cap; i++)
        if (b.data[i] != 0)
            fail_msg("byte %zu of %zu survived the reset", i, cap);
    dynbuf_free(&b);

    char block[32];
    memset(block, 'k', sizeof block);
    dynbuf_wipe(block, sizeof block);
    for (size_t i = 0; i < sizeof block; i++)
        assert_int_equal(block[i], 0);
    dynbuf_wipe(NULL, 0);

    char *key = malloc(8);
    memcpy(key, "api-key", 8);
    dynbuf_secret_free(key);
    dynbuf_secret_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_and_sticky_failure),
        cmocka_unit_test(test_reset_clears_the_failure),
        cmocka_unit_test(test_printf),
        cmocka_unit_test(test_take),
        cmocka_unit_test(test_secret_wipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
