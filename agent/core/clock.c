/*
 * clock.c — the default clock_source (the platform's clocks and random
 * source) and the helpers the http layer uses to read any clock_source.
 */
#include "core/clock.h"

#include "platform/platform.h"

static int64_t default_monotonic(void *ctx)
{
    (void)ctx;
    return platform_monotonic_ms();
}

static int64_t default_utc(void *ctx)
{
    (void)ctx;
    return platform_time_utc_ms();
}

static void default_sleep(void *ctx, int64_t ms)
{
    (void)ctx;
    platform_sleep_ms(ms < 0 ? 0 : ms);
}

static MUST_CHECK error_code default_random(void *ctx, void *buf, size_t len, error_info *err)
{
    (void)ctx;
    return platform_random_bytes(buf, len, err);
}

static const clock_source default_source = {
    default_monotonic, default_utc, default_sleep, default_random, NULL,
};

const clock_source *clock_default(void)
{
    return &default_source;
}

int64_t clock_now_ms(const clock_source *c)
{
    if (!c)
        c = &default_source;
    return c->monotonic_ms(c->ctx);
}

int64_t clock_utc_ms(const clock_source *c)
{
    if (!c)
        c = &default_source;
    return c->utc_ms(c->ctx);
}

void clock_sleep_ms(const clock_source *c, int64_t ms)
{
    if (!c)
        c = &default_source;
    c->sleep_ms(c->ctx, ms < 0 ? 0 : ms);
}

/* A 64-bit mix of the clocks, used only when the random source fails. */
static uint64_t fallback_random(const clock_source *c)
{
    static uint64_t counter;
    uint64_t x =
        (uint64_t)c->monotonic_ms(c->ctx) ^ ((uint64_t)c->utc_ms(c->ctx) << 17) ^ ++counter * 0x9E3779B97F4A7C15ULL;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

int64_t clock_random_upto(const clock_source *c, int64_t bound)
{
    if (!c)
        c = &default_source;
    if (bound <= 0)
        return 0;
    uint64_t range = (uint64_t)bound + 1;
    /* Rejection sampling: values at or above limit would bias the modulo. */
    uint64_t limit = UINT64_MAX - (UINT64_MAX % range);
    for (int tries = 0; tries < 16; tries++) {
        uint64_t r = 0;
        if (c->random_bytes(c->ctx, &r, sizeof r, NULL) != ERR_OK)
            r = fallback_random(c);
        if (r < limit)
            return (int64_t)(r % range);
    }
    return (int64_t)(fallback_random(c) % range);
}
