/* test_backoff.c — the retry delays (backoff.c): the exponential ceiling and
 * its edges, full jitter on an injected random source, and Retry-After in
 * both forms (delta seconds, the three HTTP-date forms), table-driven.
 * They were cases of test_ratelimit.c until the module had a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/clock.h"
#include "net/backoff.h"

#include "support.h"

/* 1994-11-06 08:49:00 UTC, the RFC's example day, in ms since the epoch. */
#define NOW_MS (784111740LL * 1000)

/* ---- an injected random source --------------------------------------------------- */

typedef struct fixed_random {
    uint64_t value; /* what every draw returns */
} fixed_random;

static error_code fixed_bytes(void *ctx, void *buf, size_t len, error_info *err)
{
    (void)err;
    fixed_random *f = ctx;
    memset(buf, 0, len);
    memcpy(buf, &f->value, len < sizeof f->value ? len : sizeof f->value);
    return ERR_OK;
}

/* ---- the ceiling ------------------------------------------------------------------- */

static void test_ceiling(void **state)
{
    (void)state;
    static const struct {
        int retry;
        int64_t base, cap, want;
    } cases[] = {
        {1, 500, 30000, 500}, /* the first retry: base */
        {2, 500, 30000, 1000},
        {3, 500, 30000, 2000},
        {6, 500, 30000, 16000},
        {7, 500, 30000, 30000},  /* 32000 capped */
        {60, 500, 30000, 30000}, /* no overflow however many retries */
        {1000000, 500, 30000, 30000},
        {0, 500, 30000, 500}, /* retry < 1 counts as the first */
        {-5, 500, 30000, 500},
        {3, -100, 30000, 0}, /* a negative base is 0 */
        {3, 500, 100, 500},  /* a cap below the base is the base */
        {1, BACKOFF_BASE_MS, BACKOFF_CAP_MS, BACKOFF_BASE_MS},
        {40, BACKOFF_BASE_MS, BACKOFF_CAP_MS, BACKOFF_CAP_MS},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t got = backoff_ceiling_ms(cases[i].retry, cases[i].base, cases[i].cap);
        if (got != cases[i].want)
            fail_msg("retry %d base %lld cap %lld: %lld, expected %lld", cases[i].retry, (long long)cases[i].base,
                     (long long)cases[i].cap, (long long)got, (long long)cases[i].want);
    }
}

/* ---- full jitter ------------------------------------------------------------------- */

static void test_delay_is_uniform_up_to_the_ceiling(void **state)
{
    (void)state;
    fixed_random f = {0};
    clock_source c = support_still_clock; /* time stands; only the draws matter */
    c.random_bytes = fixed_bytes;
    c.ctx = &f;
    static const struct {
        uint64_t draw;
        int retry;
        int64_t want;
    } cases[] = {
        {0, 3, 0},                      /* the low end is reachable */
        {2000, 3, 2000},                /* ... and the ceiling itself: [0, 2000] has 2001 values */
        {2001, 3, 0},                   /* draws wrap modulo 2001 */
        {1234, 3, 1234}, {700, 1, 199}, /* ceiling 500: 700 % 501 */
        {12345, 0, 321},                /* retry 0 as retry 1: 12345 % 501 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        f.value = cases[i].draw;
        int64_t got = backoff_delay_ms(cases[i].retry, 500, 30000, &c);
        if (got != cases[i].want)
            fail_msg("draw %llu retry %d: %lld, expected %lld", (unsigned long long)cases[i].draw, cases[i].retry,
                     (long long)got, (long long)cases[i].want);
    }
    /* A zero ceiling draws nothing and waits nothing. */
    f.value = 99;
    assert_int_equal(backoff_delay_ms(4, 0, 0, &c), 0);
}

static void test_delay_from_the_real_source_spreads_within_bounds(void **state)
{
    (void)state;
    int64_t lo = INT64_MAX, hi = -1;
    for (int i = 0; i < 2000; i++) {
        int64_t d = backoff_delay_ms(2, 500, 30000, clock_default());
        assert_true(d >= 0 && d <= 1000);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    assert_true(lo < 100 && hi > 900);
}

/* ---- Retry-After ------------------------------------------------------------------- */

static void test_retry_after_accepted(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        int64_t want_ms;
    } cases[] = {
        {"120", 120000},
        {"0", 0},
        {" 0 ", 0},
        {"\t7\r\n", 7000}, /* header folding leftovers */
        {"007", 7000},
        {"99999999999999999999999", INT64_MAX / 1000 / 10 * 1000}, /* saturates, never wraps */
        {"Sun, 06 Nov 1994 08:49:37 GMT", 37000},                  /* IMF-fixdate */
        {"Sunday, 06-Nov-94 08:49:37 GMT", 37000},                 /* RFC 850 */
        {"Sun Nov  6 08:49:37 1994", 37000},                       /* asctime */
        {"  Sun, 06 Nov 1994 08:50:00 GMT  ", 60000},
        {"Sun, 06 Nov 1994 08:00:00 GMT", 0}, /* in the past: now */
        {"Thu, 01 Jan 1970 00:00:00 GMT", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t d = -1;
        if (!backoff_parse_retry_after(cases[i].value, NOW_MS, &d))
            fail_msg("refused \"%s\"", cases[i].value);
        if (d != cases[i].want_ms)
            fail_msg("\"%s\": %lld ms, expected %lld", cases[i].value, (long long)d, (long long)cases[i].want_ms);
    }
}

static void test_retry_after_refused_leaves_the_delay_alone(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "   ",
        "soon",
        "-1",
        "+5",
        "1.5",
        "12s",
        "1 2",
        "Sun, 06 Nov 1994 08:49:37 PST", /* only GMT */
        "Sun, 32 Nov 1994 08:49:37 GMT", /* no 32nd */
        "Sun, 06 Foo 1994 08:49:37 GMT", /* no such month */
        "Sun, 06 Nov 1994 24:00:00 GMT", /* no hour 24 */
        "Sun, 06 Nov 1994 08:49:37 GMT trailing",
        "Sun, 06 Nov 1994 08:49:37 GMT, 07 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT 000000000000000000000000000000000000000000000000", /* longer than any */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t d = -7;
        if (backoff_parse_retry_after(bad[i], NOW_MS, &d))
            fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(d, -7);
    }
    int64_t d = -7;
    assert_false(backoff_parse_retry_after(NULL, NOW_MS, &d));
    assert_int_equal(d, -7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ceiling),
        cmocka_unit_test(test_delay_is_uniform_up_to_the_ceiling),
        cmocka_unit_test(test_delay_from_the_real_source_spreads_within_bounds),
        cmocka_unit_test(test_retry_after_accepted),
        cmocka_unit_test(test_retry_after_refused_leaves_the_delay_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
