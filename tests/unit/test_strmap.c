/* test_strmap.c — the string hash map (agent/base/strmap.c): lookups,
 * replacement, and removal in the middle of probe runs, checked against a
 * plain array over thousands of keys (the growth and the backward shift). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"

static void test_put_get_remove(void **unused)
{
    (void)unused;
    strmap *m = strmap_new();
    assert_non_null(m);
    int a = 1, b = 2;
    assert_null(strmap_get(m, "x"));
    assert_true(strmap_put(m, "x", &a));
    assert_true(strmap_put(m, "y", &b));
    assert_ptr_equal(strmap_get(m, "x"), &a);
    assert_ptr_equal(strmap_get(m, "y"), &b);
    assert_int_equal(strmap_count(m), 2);
    assert_true(strmap_put(m, "x", &b)); /* replaces */
    assert_ptr_equal(strmap_get(m, "x"), &b);
    assert_int_equal(strmap_count(m), 2);
    assert_ptr_equal(strmap_remove(m, "x"), &b);
    assert_null(strmap_remove(m, "x"));
    assert_null(strmap_get(m, "x"));
    assert_ptr_equal(strmap_get(m, "y"), &b);
    assert_int_equal(strmap_count(m), 1);
    assert_false(strmap_put(m, "z", NULL)); /* NULL means absent */
    assert_null(strmap_get(NULL, "y"));
    strmap_free(m);
    strmap_free(NULL);
}

enum { KEYS = 5000 };

/* Insert many, remove every third, re-insert some: the map answers as the
 * array does for every key, present or not. */
static void test_against_array(void **unused)
{
    (void)unused;
    static char keys[KEYS][16];
    static int present[KEYS];
    strmap *m = strmap_new();
    assert_non_null(m);
    for (int i = 0; i < KEYS; i++) {
        snprintf(keys[i], sizeof keys[i], "inc-%d", i);
        assert_true(strmap_put(m, keys[i], &present[i]));
        present[i] = 1;
    }
    for (int i = 0; i < KEYS; i += 3) {
        assert_ptr_equal(strmap_remove(m, keys[i]), &present[i]);
        present[i] = 0;
    }
    for (int i = 0; i < KEYS; i += 9) {
        assert_true(strmap_put(m, keys[i], &present[i]));
        present[i] = 1;
    }
    size_t count = 0;
    for (int i = 0; i < KEYS; i++) {
        count += (size_t)present[i];
        if (present[i])
            assert_ptr_equal(strmap_get(m, keys[i]), &present[i]);
        else
            assert_null(strmap_get(m, keys[i]));
    }
    assert_int_equal(strmap_count(m), count);
    assert_null(strmap_get(m, "inc-absent"));
    for (int i = 0; i < KEYS; i++)
        if (present[i])
            assert_ptr_equal(strmap_remove(m, keys[i]), &present[i]);
    assert_int_equal(strmap_count(m), 0);
    strmap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_remove),
        cmocka_unit_test(test_against_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
