/*
 * retry_after.h — the platform's Retry-After, kept between runs: state
 * section "run", member "retry_after_until" (PRODUCT.md section 6), written
 * and read only here. `update`, `check` and `report` record the time a
 * request was told to wait until; `run`, `check` and `update` (unless
 * --force) refuse to call the platform before it.
 *
 * One rule for every writer: the time is capped at 24 hours from now (a
 * platform that names next month is not obeyed that long) and rounded up
 * to the whole second, so the recorded time is never before the one asked.
 */
#ifndef OUTPOST_RETRY_AFTER_H
#define OUTPOST_RETRY_AFTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/state.h"

/* Longest wait a Retry-After may impose on later runs. */
#define RETRY_AFTER_CAP_MS (24LL * 3600 * 1000)

/* The time to record for until_ms (UTC ms) at now_ms: Unix seconds, capped
 * at now_ms + RETRY_AFTER_CAP_MS and rounded up. */
int64_t retry_after_until_s(int64_t until_ms, int64_t now_ms);

/*
 * Records until_ms in s (not saved; state_save writes it), replacing an
 * earlier time. until_ms <= 0 (no Retry-After was met) changes nothing.
 * ERR_NOMEM leaves the earlier time.
 */
MUST_CHECK error_code retry_after_record(state *s, int64_t until_ms, int64_t now_ms, error_info *err);

/*
 * Whether a recorded time is still ahead of now_ms. until (size bytes, may
 * be NULL) gets the recorded text as stored, "" when none.
 */
bool retry_after_pending(state *s, int64_t now_ms, char *until, size_t size);

#endif
