/*
 * backoff.h — how long the http layer waits before retrying a request.
 *
 * Exponential backoff with full jitter: the n-th retry waits a uniformly
 * random time in [0, min(cap, base * 2^(n-1))], so a fleet of agents that
 * failed together does not retry together. A server's Retry-After (delta
 * seconds or an HTTP date) replaces the computed delay. Pure functions: the
 * random source and the current time are passed in.
 */
#ifndef OUTPOST_BACKOFF_H
#define OUTPOST_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"

#define BACKOFF_BASE_MS 500  /* ceiling of the first retry's delay */
#define BACKOFF_CAP_MS 30000 /* ceiling of any computed delay */

/* The exponential ceiling for retry number retry (1 for the first retry):
 * min(cap_ms, base_ms * 2^(retry-1)); base_ms for retry < 1. */
int64_t backoff_ceiling_ms(int retry, int64_t base_ms, int64_t cap_ms);

/* A full-jitter delay for retry number retry: uniform in [0, ceiling]. */
int64_t backoff_delay_ms(int retry, int64_t base_ms, int64_t cap_ms, const clock_source *clock);

/*
 * Parses a Retry-After value: delta seconds ("120") or an HTTP date in any
 * of the three forms RFC 9110 makes recipients accept (IMF-fixdate
 * "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850, asctime). now_utc_ms is the
 * current wall-clock time; a date in the past gives 0. Surrounding spaces
 * are ignored. The date forms are timefmt_parse_http_date's. Returns false (and leaves *delay_ms alone) when the value
 * is neither form.
 */
bool backoff_parse_retry_after(const char *value, int64_t now_utc_ms, int64_t *delay_ms);

#endif
