/* test_speed.c — the minimum speed, the deadline's allowance and the
 * receive cap's pace (agent/net/speed.c), the arithmetic libcurl's
 * transfers and file:// share: the default and a cap's half, no overflow
 * from a hostile length, the pace never ahead of the cap. Their effect on
 * real transfers is test_http.c's (file://) and the integration tests'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "net/speed.h"

static void test_minimum_is_the_setting_or_half_the_cap(void **unused)
{
    (void)unused;
    assert_int_equal(speed_minimum(0, 0), SPEED_DEFAULT_MINIMUM);
    assert_int_equal(speed_minimum(-5, 0), SPEED_DEFAULT_MINIMUM);
    assert_int_equal(speed_minimum(4096, 0), 4096);
    assert_int_equal(speed_minimum(4096, 100000), 4096); /* the cap's half is higher */
    assert_int_equal(speed_minimum(4096, 2000), 1000);   /* a throttled download is slow on purpose */
    assert_int_equal(speed_minimum(4096, 1), 1);         /* never 0: it divides */
}

static void test_allowance_grows_with_the_length_and_is_capped(void **unused)
{
    (void)unused;
    assert_int_equal(speed_allowance_ms(0, 1024), 1000);
    assert_int_equal(speed_allowance_ms(1024 * 60, 1024), 61000);
    assert_int_equal(speed_allowance_ms(100LL * 1024 * 1024, 1024 * 1024), 101000);
    /* A Content-Length near INT64_MAX at 1 byte/s: 30 days, no overflow. */
    assert_int_equal(speed_allowance_ms(INT64_MAX, 1), 30LL * 86400 * 1000);
    assert_int_equal(speed_allowance_ms(INT64_MAX - 1, 1024), 30LL * 86400 * 1000);
}

static void test_pace_never_runs_ahead_of_the_cap(void **unused)
{
    (void)unused;
    assert_int_equal(speed_pace_wait_ms(0, 1000000, 0, 0), 0);    /* no cap */
    assert_int_equal(speed_pace_wait_ms(0, 1000000, -1, 0), 0);   /* no cap */
    assert_int_equal(speed_pace_wait_ms(1000, 0, 1000, 1000), 0); /* nothing taken yet */
    /* 1000 bytes at 1000 bytes/s: not before 1 s after the start. */
    assert_int_equal(speed_pace_wait_ms(1000, 1000, 1000, 1000), 1000);
    assert_int_equal(speed_pace_wait_ms(1000, 1000, 1000, 1600), 400);
    assert_int_equal(speed_pace_wait_ms(1000, 1000, 1000, 2000), 0);
    assert_int_equal(speed_pace_wait_ms(1000, 1000, 1000, 5000), 0); /* behind: at once */
}

static void test_read_size_follows_the_cap(void **unused)
{
    (void)unused;
    assert_int_equal(speed_read_size(0, 262144), 262144);
    assert_int_equal(speed_read_size(8 * 1024 * 1024, 262144), 262144);
    assert_int_equal(speed_read_size(800000, 262144), 100000); /* an eighth of a second */
    assert_int_equal(speed_read_size(1000, 262144), 4096);     /* but at least 4 KiB */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimum_is_the_setting_or_half_the_cap),
        cmocka_unit_test(test_allowance_grows_with_the_length_and_is_capped),
        cmocka_unit_test(test_pace_never_runs_ahead_of_the_cap),
        cmocka_unit_test(test_read_size_follows_the_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
