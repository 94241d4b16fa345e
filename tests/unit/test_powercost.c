/* test_powercost.c — the rules installer.defer_on judges the Windows
 * answers by (platform/powercost.c), as numbers, on every system: on Linux
 * and, in the Windows build, under wine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "platform/platform.h"

/* The Windows answers installer.defer_on judges (powercost.c), as numbers:
 * the network list manager's cost flags and GetSystemPowerStatus's fields. */
static void test_windows_cost_and_power_rules(void **unused)
{
    (void)unused;
    char detail[100];
    static const struct {
        uint32_t cost;
        bool metered;
    } costs[] = {
        {0x0, false},           /* NLM_CONNECTION_COST_UNKNOWN */
        {0x1, false},           /* UNRESTRICTED: Ethernet, ordinary Wi-Fi */
        {0x2, true},            /* FIXED: a connection set as metered */
        {0x4, true},            /* VARIABLE: pay per byte */
        {0x1 | 0x20000, false}, /* unrestricted, CONGESTED: not a cost */
        {0x2 | 0x80000, true},  /* fixed, APPROACHINGDATALIMIT */
        {0x10000, true},        /* OVERDATALIMIT */
        {0x1 | 0x40000, true},  /* ROAMING */
    };
    for (size_t i = 0; i < sizeof costs / sizeof costs[0]; i++)
        if (platform_cost_metered(costs[i].cost, detail, sizeof detail) != costs[i].metered)
            fail_msg("cost 0x%lx: metered should be %d", (unsigned long)costs[i].cost, costs[i].metered);
    platform_cost_metered(0x2, detail, sizeof detail);
    assert_string_equal(detail, "network cost 0x2 (metered)");
    platform_cost_metered(0x0, detail, sizeof detail);
    assert_string_equal(detail, "network cost 0x0 (unknown: not metered)");

    /* ACLineStatus (0 offline, 1 online, 255 unknown), BatteryFlag (128 no battery, 255 unknown), percent */
    assert_true(platform_power_status_on_battery(0, 1, 80, detail, sizeof detail));
    assert_string_equal(detail, "on battery, 80% left");
    assert_true(platform_power_status_on_battery(0, 255, 255, detail, sizeof detail));
    assert_string_equal(detail, "on battery");
    assert_false(platform_power_status_on_battery(1, 8, 40, detail, sizeof detail)); /* charging */
    assert_false(platform_power_status_on_battery(255, 1, 50, detail, sizeof detail));
    assert_string_equal(detail, "AC power unknown: mains power");
    assert_false(platform_power_status_on_battery(0, 128, 255, detail, sizeof detail)); /* a desktop */
    assert_string_equal(detail, "no system battery");
    assert_false(platform_power_status_on_battery(1, 128, 255, NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows_cost_and_power_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
