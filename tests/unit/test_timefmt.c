/* test_timefmt.c — ISO 8601 UTC formatting and parsing, independent of the
 * machine's time zone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/timefmt.h"

static void test_format(void **state)
{
    (void)state;
    static const struct {
        int64_t t;
        const char *text;
    } cases[] = {{0, "1970-01-01T00:00:00Z"},
                 {951782400, "2000-02-29T00:00:00Z"},
                 {1795255200, "2026-11-21T10:00:00Z"},
                 {-1, "1969-12-31T23:59:59Z"},
                 {4102444799, "2099-12-31T23:59:59Z"}};
    setenv("TZ", "Pacific/Chatham", 1); /* +12:45/+13:45: any local-time leak shows */
    tzset();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[TIMEFMT_ISO8601_SIZE];
        timefmt_iso8601(cases[i].t, buf);
        assert_string_equal(buf, cases[i].text);
        int64_t back;
        assert_true(timefmt_parse_iso8601(cases[i].text, &back));
        assert_int_equal(back, cases[i].t);
    }
}

static void test_parse_forms(void **state)
{
    (void)state;
    int64_t t;
    assert_true(timefmt_parse_iso8601("2026-11-21T10:00:00.123Z", &t));
    assert_int_equal(t, 1795255200);
    assert_true(timefmt_parse_iso8601("2026-11-21T11:30:00+01:30", &t));
    assert_int_equal(t, 1795255200);
    assert_true(timefmt_parse_iso8601("2026-11-21T05:00:00-05:00", &t));
    assert_int_equal(t, 1795255200);
    static const char *const bad[] = {"", "2026-11-21", "2026-11-21T10:00:00", "2026-13-01T00:00:00Z",
                                      "2026-02-29T00:00:00Z", "2026-11-21T24:00:00Z", "2026-11-21T10:00:00Zjunk",
                                      "2026-11-21T10:00:00.Z", "26-11-21T10:00:00Z", "2026-11-21T10:00:00+1:00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (timefmt_parse_iso8601(bad[i], &t))
            fail_msg("accepted \"%s\"", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_parse_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
