/*
 * clock.h — the time and randomness outpost's API client runs on, as an
 * interface tests can replace.
 *
 * The http layer (pacing, backoff, token expiry) never calls the platform's
 * clocks directly: it goes through a clock_source, a small table of function
 * pointers. clock_default() wraps platform_monotonic_ms, platform_time_utc_ms,
 * platform_sleep_ms and platform_random_bytes; a unit test hands down a fake
 * whose sleep merely advances its own counter, so rate windows, Retry-After
 * and a 15-minute token lifetime are exercised in microseconds.
 */
#ifndef OUTPOST_CLOCK_H
#define OUTPOST_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct clock_source {
    int64_t (*monotonic_ms)(void *ctx);      /* never goes back; arbitrary origin */
    int64_t (*utc_ms)(void *ctx);            /* wall clock, ms since the Unix epoch */
    void (*sleep_ms)(void *ctx, int64_t ms); /* waits at least ms (0 yields) */
    error_code (*random_bytes)(void *ctx, void *buf, size_t len, error_info *err);
    void *ctx; /* passed to every function */
} clock_source;

/* The platform's clocks and secure random source. Static; never NULL. */
const clock_source *clock_default(void);

/* Convenience wrappers; c may be NULL for clock_default(). */
int64_t clock_now_ms(const clock_source *c);
int64_t clock_utc_ms(const clock_source *c);
void clock_sleep_ms(const clock_source *c, int64_t ms);

/*
 * A uniformly distributed integer in [0, bound] (inclusive; bound <= 0
 * gives 0), from the clock's random source without modulo bias. If the
 * random source fails, falls back to a value derived from the clocks:
 * jitter must never stop a request.
 */
int64_t clock_random_upto(const clock_source *c, int64_t bound);

#endif
