/*
 * retry_after.h — the platform's and the fleet mirror's Retry-After, kept
 * between runs: state section "run", members "retry_after_until" (the
 * platform, PRODUCT.md section 6) and "mirror_retry_after_until" (a mirror
 * holding its fleet back, section 11), written and read only here.
 * `update`, `check` and `report` record the time a request was told to wait
 * until; `run`, `check` and `update` (unless --force) refuse to call the
 * platform, or the mirror, before it.
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

/* Who asked: the platform's API, or the fleet mirror (any of mirror.urls). */
typedef enum { RETRY_AFTER_PLATFORM, RETRY_AFTER_MIRROR } retry_after_who;

/*
 * Records until_ms for who in s (not saved; state_save writes it),
 * replacing an earlier time. until_ms <= 0 (no Retry-After was met)
 * changes nothing. ERR_NOMEM leaves the earlier time.
 */
MUST_CHECK error_code retry_after_record_for(state *s, retry_after_who who, int64_t until_ms, int64_t now_ms,
                                             error_info *err);

/*
 * Whether who's recorded time is still ahead of now_ms. until (size bytes,
 * may be NULL) gets the recorded text as stored, "" when none.
 */
bool retry_after_pending_for(state *s, retry_after_who who, int64_t now_ms, char *until, size_t size);

/* The platform's: retry_after_record_for and retry_after_pending_for with RETRY_AFTER_PLATFORM. */
MUST_CHECK error_code retry_after_record(state *s, int64_t until_ms, int64_t now_ms, error_info *err);
bool retry_after_pending(state *s, int64_t now_ms, char *until, size_t size);

#endif
