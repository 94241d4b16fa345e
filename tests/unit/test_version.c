/* test_version.c — installer version strings: which are valid (they are used
 * in paths) and how they order (PRODUCT.md section 4.1). Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "installer/version.h"

static void test_valid(void **unused)
{
    (void)unused;
    static const char *const valid[] = {
        "1",
        "0",
        "24.3.1",
        "26.01.03.24329",
        "26.01.03.24329-0de7ab+",
        "3.2.0-rc1",
        "3.2.0rc1",
        "1.0+build.5",
        "007.0",
        "1..2",
        "1-",
        "1.2.3-BETA.2",
        /* exactly 64 characters */
        "1234567890123456789012345678901234567890123456789012345678901234",
    };
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        error_info err;
        error_clear(&err);
        if (!version_is_valid(valid[i], &err))
            fail_msg("\"%s\" should be valid: %s", valid[i], err.message);
    }
}

static void test_invalid(void **unused)
{
    (void)unused;
    static const char *const invalid[] = {
        "",
        ".",
        "..",
        "../../etc",
        "..\\x",
        ".1",
        "-1",
        "+1",
        "a1.0",
        "v1.2.3",
        "1.2/3",
        "1.2\\3",
        "1.2 3",
        "1.2:3",
        "1.2_3",
        "1.2\n",
        "1.2\t",
        "1.2%2f",
        "1.2\xc3\xa9",
        "~1",
        "1;rm",
        "12345678901234567890123456789012345678901234567890123456789012345", /* 65 */
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        error_info err;
        error_clear(&err);
        if (version_is_valid(invalid[i], &err))
            fail_msg("\"%s\" should be invalid", invalid[i]);
        assert_int_equal(err.code, ERR_REJECTED);
        assert_true(strlen(err.message) > 0);
    }
    error_info err;
    assert_false(version_is_valid(NULL, &err));
    assert_false(version_is_valid("..", NULL)); /* err may be NULL */
}

static int sign(int v)
{
    return v < 0 ? -1 : v > 0;
}

static void test_compare(void **unused)
{
    (void)unused;
    static const struct {
        const char *a, *b;
        int expect;
    } cases[] = {
        /* equal releases */
        {"26.01.03.24329-0de7ab+", "26.01.03.24329", 0},
        {"26.1.3.24329", "26.01.03.24329", 0},
        {"1.0", "1", 0},
        {"1.0.0.0", "1", 0},
        {"24.3.1", "24.3.1", 0},
        {"1.0+build.5", "1.0", 0},
        {"1.0+rc1", "1.0", 0},           /* '+' always starts build metadata */
        {"1.0-0de7ab", "1.0-ffffff", 0}, /* build metadata never orders */
        {"1.2.3-BETA", "1.2.3-beta", 0},
        {"1.2.3-pre", "1.2.3-preview", 0},
        {"1.2.3-rc", "1.2.3-rc0", 0},
        {"1.2.3-rc.1", "1.2.3-rc1", 0},
        {"1.2.3-rc-1", "1.2.3-rc1", 0},
        {"1.2.3-rc1+abc", "1.2.3-rc1", 0},
        {"0001.0002", "1.2", 0},
        /* numeric order */
        {"24.3.0", "24.3.1", -1},
        {"24.3.10", "24.3.9", 1},
        {"1.10", "1.9", 1},
        {"2", "1.99.99", 1},
        {"1.0.1", "1", 1},
        {"26.01.03.24330-aaa", "26.01.03.24329-fff", 1},
        {"99999999999999999999999.1", "99999999999999999999998.9", 1}, /* no overflow */
        {"10", "9", 1},
        /* pre-releases */
        {"3.2.0-rc1", "3.2.0", -1},
        {"3.2.0rc1", "3.2.0", -1},
        {"3.2.0-rc1", "3.2.0-rc2", -1},
        {"3.2.0-rc2", "3.2.0-rc10", -1},
        {"3.2.0-alpha", "3.2.0-beta", -1},
        {"3.2.0-beta", "3.2.0-pre", -1},
        {"3.2.0-preview", "3.2.0-rc", -1},
        {"3.2.0-alpha9", "3.2.0-beta1", -1},
        {"3.2.0-rc9", "3.1.9", 1},         /* numbers first */
        {"3.2.0-rc1", "3.2.0-0de7ab", -1}, /* a hash is metadata: a release */
        {"3.2.0-beef", "3.2.0", 0},        /* hex that starts like "beta" is not */
        {"3.2.0-rcx", "3.2.0", 0},         /* not a pre-release word */
        /* invalid sorts before anything valid */
        {"../../etc", "0", -1},
        {"0", "", 1},
        {"", "x", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = sign(version_compare(cases[i].a, cases[i].b));
        if (got != cases[i].expect)
            fail_msg("compare(\"%s\", \"%s\") = %d, expected %d", cases[i].a, cases[i].b, got, cases[i].expect);
        int back = sign(version_compare(cases[i].b, cases[i].a));
        if (back != -cases[i].expect)
            fail_msg("compare(\"%s\", \"%s\") = %d, expected %d (antisymmetry)", cases[i].b, cases[i].a, back,
                     -cases[i].expect);
    }
}

/* Version binding (PRODUCT.md 4.3): numeric parts only, suffixes ignored. */
static void test_compare_numbers(void **unused)
{
    (void)unused;
    static const struct {
        const char *a, *b;
        int expect;
    } cases[] = {
        {"26.1.3.24329", "26.01.03.24329-0de7ab+", 0},
        {"3.2.0", "3.2.0-rc1", 0}, /* a pre-release suffix does not count here */
        {"1.0.0.0", "1", 0},
        {"0001.0002", "1.2", 0},
        {"26.1.2.100", "26.01.03.24329-0de7ab+", -1},
        {"24.3.10", "24.3.9", 1},
        {"99999999999999999999999.1", "99999999999999999999998.9", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = sign(version_compare_numbers(cases[i].a, cases[i].b));
        int back = sign(version_compare_numbers(cases[i].b, cases[i].a));
        if (got != cases[i].expect || back != -cases[i].expect)
            fail_msg("compare_numbers(\"%s\", \"%s\") = %d / %d, expected %d", cases[i].a, cases[i].b, got, back,
                     cases[i].expect);
    }
}

static void test_numbers_of(void **unused)
{
    (void)unused;
    static const struct {
        const char *text, *expect; /* expect NULL: false */
    } cases[] = {
        {"26.01.03.24329-0de7ab", "26.01.03.24329"},
        {"26, 1, 3, 24329", "26.1.3.24329"},
        {"26,1,3,24329", "26.1.3.24329"},
        {" 5.2.1 (build 7)", "5.2.1"},
        {"1.2.", "1.2"},
        {"1..2", "1"},
        {"7", "7"},
        {"v1.2", NULL},
        {"", NULL},
        {"   ", NULL},
        {"123456789012345678901234567890.1", NULL}, /* does not fit in 24 bytes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[24];
        bool ok = version_numbers_of(cases[i].text, out, sizeof out);
        if (ok != (cases[i].expect != NULL) || strcmp(out, cases[i].expect ? cases[i].expect : "") != 0)
            fail_msg("numbers_of(\"%s\") = %d \"%s\", expected \"%s\"", cases[i].text, ok, out,
                     cases[i].expect ? cases[i].expect : "(false)");
    }
}

static void test_is_update(void **ctx)
{
    (void)ctx;
    assert_true(version_is_update("2.0", "1.0"));
    assert_true(version_is_update("1.0", NULL));
    assert_false(version_is_update("1.0", "1.0"));
    assert_false(version_is_update("0.9", "1.0"));
    assert_false(version_is_update(NULL, "1.0"));
    assert_false(version_is_update(NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),           cmocka_unit_test(test_invalid),    cmocka_unit_test(test_compare),
        cmocka_unit_test(test_compare_numbers), cmocka_unit_test(test_numbers_of), cmocka_unit_test(test_is_update),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
