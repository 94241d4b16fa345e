/* test_policy.c — the fleet policy (installer/policy.h, PRODUCT.md section
 * 11): maintenance windows judged in two real zones' rules (Europe/Berlin
 * and America/New_York, 2025-2027, written out here from the tz database so
 * the test does not depend on the machine's zone files or its own zone),
 * across midnight, weeks and both clock changes, with the next window's
 * start checked against a minute-by-minute search; the version pin; the
 * deferral; and, where the C library follows TZ, the platform's own zone
 * against the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/timefmt.h"
#include "installer/policy.h"
#include "platform/platform.h"

#include "support.h"

/* ---- Two zones, as the tz database has them for 2025-2027 ---------------------------------- */

typedef struct rules {
    int32_t standard;        /* seconds east of UTC in winter */
    const int64_t (*dst)[2]; /* [start, end) of summer time, UTC */
    size_t years;
} rules;

/* EU: last Sunday of March 01:00 UTC to last Sunday of October 01:00 UTC. */
static const int64_t berlin_dst[][2] = {
    {1743296400, 1761440400}, /* 2025-03-30, 2025-10-26 */
    {1774746000, 1792890000}, /* 2026-03-29, 2026-10-25 */
    {1806195600, 1824944400}, /* 2027-03-28, 2027-10-31 */
};
/* US: second Sunday of March 02:00 EST (07:00 UTC) to first Sunday of November 02:00 EDT (06:00 UTC). */
static const int64_t new_york_dst[][2] = {
    {1741503600, 1762063200}, /* 2025-03-09, 2025-11-02 */
    {1772953200, 1793512800}, /* 2026-03-08, 2026-11-01 */
    {1805007600, 1825567200}, /* 2027-03-14, 2027-11-07 */
};
static const rules berlin = {3600, berlin_dst, 3};
static const rules new_york = {-5 * 3600, new_york_dst, 3};

static error_code rules_offset(void *user, int64_t utc_s, int32_t *offset_s, error_info *err)
{
    (void)err;
    const rules *r = user;
    *offset_s = r->standard;
    for (size_t i = 0; i < r->years; i++)
        if (utc_s >= r->dst[i][0] && utc_s < r->dst[i][1])
            *offset_s = r->standard + 3600;
    return ERR_OK;
}

static const policy_zone berlin_zone = {rules_offset, (void *)&berlin};
static const policy_zone new_york_zone = {rules_offset, (void *)&new_york};

/* Unix seconds of a UTC date and time (days from civil, Howard Hinnant's). */
static int64_t utc(int y, int m, int d, int hh, int mm)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return (era * 146097 + doe - 719468) * 86400 + hh * 3600 + mm * 60;
}

static config_window window(const char *text)
{
    config_window w;
    error_info err;
    if (config_parse_window(text, &w, &err) != ERR_OK)
        fail_msg("%s: %s", text, err.message);
    return w;
}

/* ---- Windows: a table ---------------------------------------------------------------------- */

typedef struct window_case {
    const char *name;
    const policy_zone *zone;
    const char *windows[3];
    int64_t now; /* UTC */
    bool inside;
    int64_t next; /* UTC; the next start (now when inside); -1: none within the horizon */
} window_case;

static void check_case(const window_case *c)
{
    config_window w[3];
    size_t n = 0;
    while (n < 3 && c->windows[n]) {
        w[n] = window(c->windows[n]);
        n++;
    }
    bool inside = !c->inside;
    error_info err;
    assert_int_equal(policy_in_window(w, n, c->zone, c->now, &inside, &err), ERR_OK);
    if (inside != c->inside)
        fail_msg("%s: inside %d, expected %d", c->name, inside, c->inside);
    int64_t next = 0;
    error_code rc = policy_next_window(w, n, c->zone, c->now, &next, &err);
    if (c->next < 0) {
        if (rc != ERR_NOT_FOUND)
            fail_msg("%s: expected no window, got %d (%lld)", c->name, rc, (long long)next);
        return;
    }
    if (rc != ERR_OK)
        fail_msg("%s: %s", c->name, err.message);
    if (next != c->next) {
        char got[TIMEFMT_ISO8601_SIZE], want[TIMEFMT_ISO8601_SIZE];
        timefmt_iso8601(next, got);
        timefmt_iso8601(c->next, want);
        fail_msg("%s: next window %s, expected %s", c->name, got, want);
    }
}

static void test_window_table(void **unused)
{
    (void)unused;
    const policy_zone *B = &berlin_zone, *NY = &new_york_zone;
    static const char *weeknights = "Mon-Fri 22:00-05:00";
    const window_case cases[] = {
        /* Across midnight: the days are the days a window starts. 2026-01-09 is a Friday; CET is UTC+1. */
        {"Friday night", B, {weeknights}, utc(2026, 1, 9, 21, 0), true, utc(2026, 1, 9, 21, 0)},
        {"Friday's window on Saturday morning",
         B,
         {weeknights},
         utc(2026, 1, 10, 3, 59),
         true,
         utc(2026, 1, 10, 3, 59)},
        {"Saturday 05:00 it has ended", B, {weeknights}, utc(2026, 1, 10, 4, 0), false, utc(2026, 1, 12, 21, 0)},
        {"Friday 21:59", B, {weeknights}, utc(2026, 1, 9, 20, 59), false, utc(2026, 1, 9, 21, 0)},
        {"Monday 03:00: Sunday starts none", B, {weeknights}, utc(2026, 1, 12, 2, 0), false, utc(2026, 1, 12, 21, 0)},
        {"Tuesday 03:00: Monday's", B, {weeknights}, utc(2026, 1, 13, 2, 0), true, utc(2026, 1, 13, 2, 0)},
        {"Sunday into Monday", B, {"Sun 22:00-05:00"}, utc(2026, 1, 12, 3, 30), true, utc(2026, 1, 12, 3, 30)},
        {"the end is not inside", B, {"daily 02:00-04:00"}, utc(2026, 1, 14, 3, 0), false, utc(2026, 1, 15, 1, 0)},
        {"until 24:00", B, {"daily 23:00-24:00"}, utc(2026, 1, 14, 22, 59), true, utc(2026, 1, 14, 22, 59)},
        {"24:00 is the next day", B, {"daily 23:00-24:00"}, utc(2026, 1, 14, 23, 0), false, utc(2026, 1, 15, 22, 0)},
        {"a week ahead", B, {"Sat 01:00-06:00"}, utc(2026, 1, 10, 5, 0), false, utc(2026, 1, 17, 0, 0)},
        {"the earliest of two",
         B,
         {"Sat 01:00-06:00", "Wed 12:00-13:00"},
         utc(2026, 1, 11, 0, 0),
         false,
         utc(2026, 1, 14, 11, 0)},
        {"a list of days", B, {"Mon,Wed 02:00-04:00"}, utc(2026, 1, 12, 3, 0), false, utc(2026, 1, 14, 1, 0)},
        {"a range that wraps", B, {"Fri-Mon 23:00-01:30"}, utc(2026, 1, 13, 0, 0), true, utc(2026, 1, 13, 0, 0)},
        {"no windows: any time", B, {NULL}, utc(2026, 1, 13, 0, 0), true, utc(2026, 1, 13, 0, 0)},
        {"summer time", B, {"daily 02:00-04:00"}, utc(2026, 7, 1, 0, 30), true, utc(2026, 7, 1, 0, 30)},
        {"summer time, before", B, {"daily 02:00-04:00"}, utc(2026, 6, 30, 23, 30), false, utc(2026, 7, 1, 0, 0)},
        {"New York winter", NY, {"Mon-Fri 22:00-05:00"}, utc(2026, 1, 10, 9, 59), true, utc(2026, 1, 10, 9, 59)},
        {"New York winter, after", NY, {"Mon-Fri 22:00-05:00"}, utc(2026, 1, 10, 10, 0), false, utc(2026, 1, 13, 3, 0)},

        /* Berlin, spring 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00 UTC. */
        {"spring: before the change", B, {"daily 02:00-04:00"}, utc(2026, 3, 29, 0, 50), false, utc(2026, 3, 29, 1, 0)},
        {"spring: 03:00 CEST is inside",
         B,
         {"daily 02:00-04:00"},
         utc(2026, 3, 29, 1, 0),
         true,
         utc(2026, 3, 29, 1, 0)},
        {"spring: 04:00 CEST ends it", B, {"daily 02:00-04:00"}, utc(2026, 3, 29, 2, 0), false, utc(2026, 3, 30, 0, 0)},
        {"spring: a window inside the skipped hour has no time",
         B,
         {"Sun 02:00-03:00"},
         utc(2026, 3, 29, 0, 0),
         false,
         utc(2026, 4, 5, 0, 0)},
        {"spring: the skipped hour every day",
         B,
         {"daily 02:15-02:45"},
         utc(2026, 3, 28, 12, 0),
         false,
         utc(2026, 3, 30, 0, 15)},
        {"spring: across midnight before it",
         B,
         {"Sat 23:00-02:30"},
         utc(2026, 3, 29, 0, 59),
         true,
         utc(2026, 3, 29, 0, 59)},
        {"spring: across midnight, ended by the jump",
         B,
         {"Sat 23:00-02:30"},
         utc(2026, 3, 29, 1, 0),
         false,
         utc(2026, 4, 4, 21, 0)},
        /* Berlin, autumn 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00 UTC. */
        {"autumn: the first 02:00", B, {"Sun 02:00-03:00"}, utc(2026, 10, 24, 12, 0), false, utc(2026, 10, 25, 0, 0)},
        {"autumn: the repeated hour, first time",
         B,
         {"Sun 02:00-03:00"},
         utc(2026, 10, 25, 0, 30),
         true,
         utc(2026, 10, 25, 0, 30)},
        {"autumn: the repeated hour, second time",
         B,
         {"Sun 02:00-03:00"},
         utc(2026, 10, 25, 1, 59),
         true,
         utc(2026, 10, 25, 1, 59)},
        {"autumn: 03:00 CET ends it", B, {"Sun 02:00-03:00"}, utc(2026, 10, 25, 2, 0), false, utc(2026, 11, 1, 1, 0)},
        {"autumn: a window starting in the repeated hour starts at the first",
         B,
         {"Sun 02:30-05:00"},
         utc(2026, 10, 25, 0, 0),
         false,
         utc(2026, 10, 25, 0, 30)},

        /* New York, spring 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00 UTC. */
        {"NY spring: Saturday night across the change",
         NY,
         {"Sat 23:00-03:30"},
         utc(2026, 3, 8, 6, 59),
         true,
         utc(2026, 3, 8, 6, 59)},
        {"NY spring: 03:00 EDT", NY, {"Sat 23:00-03:30"}, utc(2026, 3, 8, 7, 0), true, utc(2026, 3, 8, 7, 0)},
        {"NY spring: 03:30 EDT ends it",
         NY,
         {"Sat 23:00-03:30"},
         utc(2026, 3, 8, 7, 30),
         false,
         utc(2026, 3, 15, 3, 0)},
        {"NY spring: 02:00-03:00 skipped",
         NY,
         {"Sun 02:00-03:00"},
         utc(2026, 3, 7, 12, 0),
         false,
         utc(2026, 3, 15, 6, 0)},
        {"NY spring: the window begins at the jump",
         NY,
         {"daily 02:30-04:00"},
         utc(2026, 3, 8, 6, 0),
         false,
         utc(2026, 3, 8, 7, 0)},
        /* New York, autumn 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00 UTC. */
        {"NY autumn: 01:30 EDT", NY, {"daily 01:30-02:30"}, utc(2026, 11, 1, 5, 30), true, utc(2026, 11, 1, 5, 30)},
        {"NY autumn: 01:00 EST is before it again",
         NY,
         {"daily 01:30-02:30"},
         utc(2026, 11, 1, 6, 10),
         false,
         utc(2026, 11, 1, 6, 30)},
        {"NY autumn: 01:30 EST, the second time",
         NY,
         {"daily 01:30-02:30"},
         utc(2026, 11, 1, 6, 30),
         true,
         utc(2026, 11, 1, 6, 30)},
        {"NY autumn: 02:30 EST ends it",
         NY,
         {"daily 01:30-02:30"},
         utc(2026, 11, 1, 7, 30),
         false,
         utc(2026, 11, 2, 6, 30)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i]);
}

/* ---- Windows: the next start against a minute-by-minute search ----------------------------- */

/* For starts every 170 minutes over four weeks around each clock change:
 * the next start is inside a window and no minute before it is. */
static void sweep(const policy_zone *zone, const char *const *texts, size_t n, int64_t from, int64_t to)
{
    config_window w[4];
    for (size_t i = 0; i < n; i++)
        w[i] = window(texts[i]);
    error_info err;
    for (int64_t now = from; now < to; now += 170 * 60) {
        int64_t next = 0;
        assert_int_equal(policy_next_window(w, n, zone, now, &next, &err), ERR_OK);
        bool inside = false;
        assert_int_equal(policy_in_window(w, n, zone, next, &inside, &err), ERR_OK);
        assert_true(inside);
        /* Minutes are the windows' grain, and the clock changes on the hour. */
        for (int64_t t = ((now + 59) / 60) * 60; t < next; t += 60) {
            assert_int_equal(policy_in_window(w, n, zone, t, &inside, &err), ERR_OK);
            if (inside) {
                char a[TIMEFMT_ISO8601_SIZE], b[TIMEFMT_ISO8601_SIZE];
                timefmt_iso8601(t, a);
                timefmt_iso8601(next, b);
                fail_msg("%s: %s is inside, before the next start %s", texts[0], a, b);
            }
        }
    }
}

static void test_window_sweep(void **unused)
{
    (void)unused;
    static const char *const sets[][3] = {
        {"Mon-Fri 22:00-05:00", NULL, NULL},
        {"Sat 01:00-06:00", "Sun 02:00-03:00", NULL},
        {"daily 02:00-04:00", NULL, NULL},
        {"daily 01:30-02:30", NULL, NULL},
        {"Sat 23:00-02:30", "Wed 12:00-12:01", NULL},
    };
    const int64_t week = 7 * 86400;
    const int64_t changes[] = {berlin_dst[1][0], berlin_dst[1][1], new_york_dst[1][0], new_york_dst[1][1]};
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        size_t n = sets[s][1] ? (sets[s][2] ? 3 : 2) : 1;
        for (size_t c = 0; c < 4; c++)
            sweep(c < 2 ? &berlin_zone : &new_york_zone, sets[s], n, changes[c] - 2 * week, changes[c] + 2 * week);
    }
}

static void test_window_local_text(void **unused)
{
    (void)unused;
    char text[40];
    policy_local_text(&berlin_zone, utc(2026, 3, 29, 1, 0), text, sizeof text);
    assert_string_equal(text, "2026-03-29 03:00");
    policy_local_text(&new_york_zone, utc(2026, 11, 1, 6, 30), text, sizeof text);
    assert_string_equal(text, "2026-11-01 01:30");
}

/* The platform's zone (platform_local_offset) agrees with the table where
 * the C library follows TZ (POSIX; under wine the zone is the host's). */
static void test_platform_zone_agrees(void **unused)
{
    (void)unused;
    const struct {
        const char *tz;
        const rules *r;
    } zones[] = {{"Europe/Berlin", &berlin}, {"America/New_York", &new_york}};
    char *saved = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
    for (size_t z = 0; z < 2; z++) {
        if (setenv("TZ", zones[z].tz, 1) != 0)
            skip();
        int32_t probe = 0;
        error_info err;
        if (platform_local_offset(utc(2026, 7, 1, 12, 0), &probe, &err) != ERR_OK ||
            probe != zones[z].r->standard + 3600) {
            print_message("TZ=%s is not followed here (offset %d): skipped\n", zones[z].tz, (int)probe);
            continue;
        }
        for (size_t y = 0; y < zones[z].r->years; y++) {
            for (int k = 0; k < 2; k++) {
                for (int64_t t = zones[z].r->dst[y][k] - 2; t <= zones[z].r->dst[y][k] + 1; t++) {
                    int32_t want = 0, got = 0;
                    assert_int_equal(rules_offset((void *)zones[z].r, t, &want, NULL), ERR_OK);
                    assert_int_equal(platform_local_offset(t, &got, &err), ERR_OK);
                    if (got != want)
                        fail_msg("TZ=%s at %lld: offset %d, the table says %d", zones[z].tz, (long long)t, got, want);
                }
            }
        }
    }
    if (saved) {
        setenv("TZ", saved, 1);
        free(saved);
    } else {
        unsetenv("TZ");
    }
}

/* ---- The pin ------------------------------------------------------------------------------- */

static void test_pin(void **unused)
{
    (void)unused;
    char why[512];
    assert_true(policy_pin_takes(NULL, "27.0", "26.1.3", false, why, sizeof why));
    assert_string_equal(why, "");
    assert_true(policy_pin_takes(NULL, "25.0", "26.1.3", false, why, sizeof why)); /* update_decide's to refuse */
    assert_true(policy_pin_takes("26.1.", "26.1.4", "26.1.3", false, why, sizeof why));
    assert_true(policy_pin_takes("26.1.", "26.1.4", NULL, false, why, sizeof why));
    assert_false(policy_pin_takes("26.1.", "26.2.0", "26.1.3", false, why, sizeof why));
    assert_string_equal(why, "not taken: 26.2.0 is outside target_version_prefix 26.1.");
    /* A prefix is text: 26.10 is not under "26.1." */
    assert_false(policy_pin_takes("26.1.", "26.10.0", "26.1.3", false, why, sizeof why));
    /* Pinned below the installed version: a downgrade, only when allowed. */
    assert_false(policy_pin_takes("26.1.", "26.1.4", "26.2.0", false, why, sizeof why));
    assert_non_null(strstr(why, "not taken: 26.1.4 (target_version_prefix 26.1.) is older than the installed 26.2.0"));
    assert_non_null(strstr(why, "allow_downgrade"));
    assert_true(policy_pin_takes("26.1.", "26.1.4", "26.2.0", true, why, sizeof why));
    assert_true(policy_pin_takes("26.1.", "26.1.4", "26.1.4", false, why, sizeof why)); /* equal: up to date */
}

/* ---- Deferral ------------------------------------------------------------------------------ */

typedef struct machine {
    bool metered, battery;
    int asked_metered, asked_battery;
} machine;

static bool fake_metered(void *user, char *detail, size_t size)
{
    machine *m = user;
    m->asked_metered++;
    snprintf(detail, size, "fake network");
    return m->metered;
}

static bool fake_battery(void *user, char *detail, size_t size)
{
    machine *m = user;
    m->asked_battery++;
    snprintf(detail, size, "fake power");
    return m->battery;
}

static int64_t fake_now(void *user)
{
    (void)user;
    return 0;
}

static void test_deferral(void **unused)
{
    (void)unused;
    machine m = {0};
    policy_env env = {fake_now, &berlin_zone, fake_metered, fake_battery, &m};
    config_installer inst = {0};
    char detail[100];
    m.metered = m.battery = true;
    /* Not asked for: neither is even looked at. */
    assert_int_equal(policy_deferral(&inst, &env, detail, sizeof detail), POLICY_DEFER_NONE);
    assert_int_equal(m.asked_metered + m.asked_battery, 0);
    inst.defer_battery = true;
    assert_int_equal(policy_deferral(&inst, &env, detail, sizeof detail), POLICY_DEFER_BATTERY);
    assert_string_equal(detail, "fake power");
    assert_int_equal(m.asked_metered, 0);
    inst.defer_metered = true;
    assert_int_equal(policy_deferral(&inst, &env, detail, sizeof detail), POLICY_DEFER_METERED);
    m.metered = false;
    assert_int_equal(policy_deferral(&inst, &env, detail, sizeof detail), POLICY_DEFER_BATTERY);
    m.battery = false;
    assert_int_equal(policy_deferral(&inst, &env, detail, sizeof detail), POLICY_DEFER_NONE);
    assert_string_equal(policy_defer_text(POLICY_DEFER_METERED), "metered connection");
    assert_string_equal(policy_defer_name(POLICY_DEFER_BATTERY), "battery");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_table),
        cmocka_unit_test(test_window_sweep),
        cmocka_unit_test(test_window_local_text),
        cmocka_unit_test(test_platform_zone_agrees),
        cmocka_unit_test(test_pin),
        cmocka_unit_test(test_deferral),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
