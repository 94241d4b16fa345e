/* test_retry_after.c — the one rule for state "run".retry_after_until:
 * capped at 24 h from now, rounded up to the whole second (never before
 * the time the platform named, never one second past it), recorded and
 * read back, the earlier time replaced (and kept when memory runs out). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/log.h"
#include "core/state.h"
#include "core/timefmt.h"
#include "net/retry_after.h"
#include "platform/platform.h"

#include "support.h"

#define NOW_MS 1795255200250LL /* 2026-11-21T10:00:00.250Z */
#define HOUR_MS (3600LL * 1000)

static void test_rule(void **unused)
{
    (void)unused;
    static const struct {
        const char *what;
        int64_t until_ms;
        int64_t expected_s;
    } cases[] = {
        {"a fraction of a second rounds up", NOW_MS + 1500, 1795255202},
        {"a whole second stays that second", 1795255210000LL, 1795255210},
        {"one millisecond past a second is the next one", 1795255210001LL, 1795255211},
        {"one hour ahead", NOW_MS + HOUR_MS, 1795255200 + 3601},
        {"exactly 24 hours ahead is kept", NOW_MS + 24 * HOUR_MS, 1795255200 + 86401},
        {"beyond 24 hours is capped at 24 hours", NOW_MS + 30 * 24 * HOUR_MS, 1795255200 + 86401},
        {"already past stays past", NOW_MS - 5000, 1795255196},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t got = retry_after_until_s(cases[i].until_ms, NOW_MS);
        if (got != cases[i].expected_s)
            fail_msg("%s: %lld, expected %lld", cases[i].what, (long long)got, (long long)cases[i].expected_s);
    }
}

typedef support_state_fixture fixture;

static int setup(void **ctx)
{
    return support_state_setup(ctx, "retry-after");
}

static int teardown(void **ctx)
{
    return support_state_teardown(ctx);
}

static void test_record_and_pending(void **ctx)
{
    fixture *f = *ctx;
    char until[TIMEFMT_ISO8601_SIZE];
    assert_false(retry_after_pending(f->s, NOW_MS, until, sizeof until));
    assert_string_equal(until, "");
    /* No Retry-After met: nothing recorded. */
    assert_int_equal(retry_after_record(f->s, 0, NOW_MS, NULL), ERR_OK);
    assert_int_equal(cJSON_GetArraySize(state_section(f->s, "run")), 0);

    assert_int_equal(retry_after_record(f->s, NOW_MS + 120000, NOW_MS, NULL), ERR_OK);
    assert_true(retry_after_pending(f->s, NOW_MS, until, sizeof until));
    assert_string_equal(until, "2026-11-21T10:02:01Z");
    assert_true(retry_after_pending(f->s, 1795255320999LL, NULL, 0));
    assert_false(retry_after_pending(f->s, 1795255321000LL, NULL, 0));

    /* A later answer replaces the time (also with a shorter one). */
    assert_int_equal(retry_after_record(f->s, NOW_MS + 1000, NOW_MS, NULL), ERR_OK);
    assert_true(retry_after_pending(f->s, NOW_MS, until, sizeof until));
    assert_string_equal(until, "2026-11-21T10:00:02Z");
    assert_int_equal(cJSON_GetArraySize(state_section(f->s, "run")), 1);

    /* Saved and loaded again, it still holds. */
    assert_int_equal(state_save(f->s, NULL), ERR_OK);
    state *again = NULL;
    assert_int_equal(state_load(f->dir, &again, NULL), ERR_OK);
    assert_true(retry_after_pending(again, NOW_MS, NULL, 0));
    state_free(again);
}

/* The mirror's time (PRODUCT.md section 11) is kept beside the platform's,
 * by the same rule, and neither holds the other back. */
static void test_mirror_and_platform_apart(void **ctx)
{
    fixture *f = *ctx;
    char until[TIMEFMT_ISO8601_SIZE];
    assert_int_equal(retry_after_record_for(f->s, RETRY_AFTER_MIRROR, NOW_MS + 30LL * 3600 * 1000, NOW_MS, NULL),
                     ERR_OK);
    assert_true(retry_after_pending_for(f->s, RETRY_AFTER_MIRROR, NOW_MS, until, sizeof until));
    assert_string_equal(until, "2026-11-22T10:00:01Z"); /* capped at 24 h */
    assert_false(retry_after_pending(f->s, NOW_MS, NULL, 0));
    assert_int_equal(retry_after_record(f->s, NOW_MS + 60000, NOW_MS, NULL), ERR_OK);
    assert_true(retry_after_pending_for(f->s, RETRY_AFTER_PLATFORM, NOW_MS, until, sizeof until));
    assert_string_equal(until, "2026-11-21T10:01:01Z");
    assert_true(retry_after_pending_for(f->s, RETRY_AFTER_MIRROR, NOW_MS, until, sizeof until));
    assert_string_equal(until, "2026-11-22T10:00:01Z");
}

static void test_unreadable_time_is_not_pending(void **ctx)
{
    fixture *f = *ctx;
    cJSON_AddStringToObject(state_section(f->s, "run"), "retry_after_until", "next tuesday");
    char until[TIMEFMT_ISO8601_SIZE + 16];
    assert_false(retry_after_pending(f->s, NOW_MS, until, sizeof until));
    assert_string_equal(until, "next tuesday");
}

/* Out of memory is reported and keeps the earlier time: a run never
 * forgets a Retry-After half-way through recording a new one. */
static void test_out_of_memory_keeps_the_earlier_time(void **ctx)
{
    fixture *f = *ctx;
    assert_int_equal(retry_after_record(f->s, NOW_MS + 60000, NOW_MS, NULL), ERR_OK);
    char until[TIMEFMT_ISO8601_SIZE];
    for (int n = 0;; n++) {
        error_info err;
        error_clear(&err);
        support_cjson_fail_after(n);
        error_code rc = retry_after_record(f->s, NOW_MS + 120000, NOW_MS, &err);
        support_cjson_fail_after(-1);
        if (rc == ERR_OK)
            break;
        assert_int_equal(err.code, ERR_NOMEM);
        assert_true(retry_after_pending(f->s, NOW_MS, until, sizeof until));
        assert_string_equal(until, "2026-11-21T10:01:01Z");
    }
    assert_true(retry_after_pending(f->s, NOW_MS, until, sizeof until));
    assert_string_equal(until, "2026-11-21T10:02:01Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule),
        cmocka_unit_test_setup_teardown(test_record_and_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mirror_and_platform_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_time_is_not_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_memory_keeps_the_earlier_time, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
