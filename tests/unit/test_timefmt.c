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
    static const char *const bad[] = {"",
                                      "2026-11-21",
                                      "2026-11-21T10:00:00",
                                      "2026-13-01T00:00:00Z",
                                      "2026-02-29T00:00:00Z",
                                      "2026-11-21T24:00:00Z",
                                      "2026-11-21T10:00:00Zjunk",
                                      "2026-11-21T10:00:00.Z",
                                      "26-11-21T10:00:00Z",
                                      "2026-11-21T10:00:00+1:00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (timefmt_parse_iso8601(bad[i], &t))
            fail_msg("accepted \"%s\"", bad[i]);
}

/* The three HTTP-date forms (RFC 9110 section 5.6.7), which Retry-After and
 * Date use; moved here from backoff.c so calendar arithmetic lives once. */
static void test_http_date(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool ok;
        int64_t seconds;
    } cases[] = {
        {"Sun, 06 Nov 1994 08:49:37 GMT", true, 784111777},
        {"Sunday, 06-Nov-94 08:49:37 GMT", true, 784111777},
        {"Sun Nov  6 08:49:37 1994", true, 784111777},
        {" \tSun, 06 Nov 1994 08:49:37 GMT\r\n", true, 784111777}, /* a header's blanks */
        {"Thu, 01 Jan 1970 00:00:00 GMT", true, 0},
        {"Tue, 29 Feb 2000 00:00:00 GMT", true, 951782400},
        {"Tuesday, 01-Jan-69 00:00:00 GMT", true, 3124224000}, /* two-digit years: 1970..2069 */
        {"Thursday, 01-Jan-70 00:00:00 GMT", true, 0},
        {"Sun, 06 Nov 1994 08:49:37 PST", false, 0},
        {"Sun, 32 Nov 1994 08:49:37 GMT", false, 0},
        {"Sun, 06 Foo 1994 08:49:37 GMT", false, 0},
        {"Sun, 06 Nov 1994 24:00:00 GMT", false, 0},
        {"Sun, 06 Nov 1994 08:49:37 GMT junk", false, 0},
        {"1994-11-06T08:49:37Z", false, 0},
        {"", false, 0},
        {"   ", false, 0},
        {"Sun, 06 Nov 1994 08:49:37 GMT                                   ", true, 784111777},
        {"Sun, 06 Nov 1994 08:49:37 GMT                                  x", false, 0}, /* 64 bytes or more */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t t = -7;
        bool ok = timefmt_parse_http_date(cases[i].text, &t);
        if (ok != cases[i].ok)
            fail_msg("\"%s\": %s", cases[i].text, ok ? "accepted" : "refused");
        assert_int_equal(t, cases[i].ok ? cases[i].seconds : -7);
    }
    int64_t t = -7;
    assert_false(timefmt_parse_http_date(NULL, &t));
    assert_int_equal(timefmt_from_civil(1970, 1, 1, 0, 0, 0), 0);
    assert_int_equal(timefmt_from_civil(2000, 2, 29, 0, 0, 0), 951782400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_parse_forms),
        cmocka_unit_test(test_http_date),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
