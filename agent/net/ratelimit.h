/*
 * ratelimit.h — pacing requests so that a healthy platform never answers 429.
 *
 * Two limits apply (API document section 8): requests per API key within a
 * window, and requests in flight per endpoint (5). This module decides, for
 * a request about to start, whether it may start now, and learns from each
 * answer. It does no I/O and reads no clock: the caller passes the
 * monotonic time, so tests drive windows without sleeping.
 *
 * The budget, in three modes:
 *  - probe: nothing is known about the current window (first request of the
 *    run, or the window the server announced has reset). One request goes
 *    alone; its answer tells the new budget. Costs one round trip per window.
 *  - headers: the last answers carried X-RateLimit-Remaining (and Reset).
 *    The budget is the lowest Remaining seen in the window (answers arrive
 *    out of order; within a window Remaining only goes down, so the lowest
 *    value counts every request answered with a higher one) minus every
 *    request still in flight (the server may not have counted those yet),
 *    minus each request started since. Requests are sent
 *    as fast as the concurrency allows until the budget is spent, then
 *    nothing until the announced reset (plus a small guard), then a probe.
 *    Bursting up to Remaining (rather than spreading it until the reset)
 *    reaches the allowed rate even when latency is high, and the probe after
 *    each reset keeps it safe against sliding windows and resets that come
 *    later than announced. Cost: one round trip per window, plus the
 *    rounding of a Reset given in whole seconds (a window that opens with
 *    its first request and announces its end rounded up lasts, for us, one
 *    second longer: under 2% at the documented 60 s window).
 *  - contract: answers carry no rate headers: at most per_minute request
 *    starts in any sliding 60-second window (the documented 60 per minute).
 * A 429 pauses everything until its Retry-After (or the reset) and widens
 * the guard. Requests not counted against the key (redirect hops to another
 * host) only take a concurrency slot. Token exchanges are counted, but
 * their answers' headers are ignored: whether the platform counts them is
 * not documented, and counting them is the safe side either way.
 */
#ifndef OUTPOST_RATELIMIT_H
#define OUTPOST_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ratelimit ratelimit;

/* ratelimit_acquire's answer when the request must wait for another one to
 * complete (endpoint at its concurrency cap, or a probe in flight). */
#define RATELIMIT_WAIT_COMPLETION INT64_MAX

/* Wait after an announced reset before the probe (the Reset header has
 * one-second resolution on some servers); doubled (up to the max) after a 429. */
#define RATELIMIT_GUARD_MS 50
#define RATELIMIT_GUARD_MAX_MS 2000

typedef struct ratelimit_ticket {
    uint64_t seq; /* start order among counted requests; 0: not counted */
    int endpoint; /* index of its endpoint, -1 when not tracked */
    bool probe;   /* it was sent alone to learn the window */
    bool learn;   /* its answer's headers are used */
} ratelimit_ticket;

/* What one answer said about the limit. */
typedef struct ratelimit_answer {
    bool has_remaining; /* X-RateLimit-Remaining present and numeric */
    int64_t remaining;
    bool has_reset;         /* X-RateLimit-Reset present and numeric */
    int64_t reset_in_ms;    /* time from the answer until the reset, >= 0 */
    bool has_reset_utc;     /* reset_utc_ms is set (X-RateLimit-Reset parsed) */
    int64_t reset_utc_ms;   /* the reset as announced, on the server's clock (Unix ms) */
    bool too_many;          /* the answer was 429 */
    int64_t retry_after_ms; /* Retry-After, -1 when absent */
} ratelimit_answer;

typedef enum { RATELIMIT_PROBE, RATELIMIT_HEADERS, RATELIMIT_CONTRACT } ratelimit_mode;

/*
 * A limiter for per_minute requests per 60 s (the contract, used until the
 * server's headers say otherwise) and max_in_flight per endpoint. window_ms
 * is the contract window (60000; tests may shorten it). Returns NULL on out
 * of memory. Free with ratelimit_free.
 */
ratelimit *ratelimit_new(int per_minute, int64_t window_ms, int max_in_flight);
void ratelimit_free(ratelimit *rl);

/*
 * May a request to endpoint (a route without query, e.g. "/v2/event-details")
 * start at now_ms? Returns 0 and fills *ticket when it may (it is then
 * counted as started and in flight: pass the ticket to ratelimit_release
 * when it completes); otherwise the milliseconds to wait before asking again,
 * or RATELIMIT_WAIT_COMPLETION. counted: whether it spends the API key's
 * budget; learn: whether its answer's rate headers are to be believed.
 */
int64_t ratelimit_acquire(ratelimit *rl, const char *endpoint, bool counted, bool learn, int64_t now_ms,
                          ratelimit_ticket *ticket);

/* A started request completed at now_ms. answer is NULL when no HTTP answer
 * came (network failure). */
void ratelimit_release(ratelimit *rl, const ratelimit_ticket *ticket, int64_t now_ms, const ratelimit_answer *answer);

/* Parses X-RateLimit-Remaining (a non-negative integer). */
bool ratelimit_parse_remaining(const char *value, int64_t *remaining);

/*
 * Parses X-RateLimit-Reset into the time until the reset: a Unix timestamp
 * in seconds (fraction allowed) as documented; a value below 10^9 is read as
 * seconds from now, a value above 10^12 as a timestamp in milliseconds
 * (both seen in the wild). A reset in the past gives 0.
 */
bool ratelimit_parse_reset(const char *value, int64_t now_utc_ms, int64_t *reset_in_ms);

/*
 * The same header as the reset on the server's clock, in Unix milliseconds
 * (a relative value is added to now_utc_ms). Answers of one window announce
 * the same value even while our estimate of the server's clock, and so
 * reset_in_ms, is still being refined: the pacer tells windows apart by it.
 */
bool ratelimit_parse_reset_utc(const char *value, int64_t now_utc_ms, int64_t *reset_utc_ms);

/* Introspection for traces and tests. */
ratelimit_mode ratelimit_get_mode(const ratelimit *rl);
int64_t ratelimit_budget(const ratelimit *rl);                      /* headers mode: starts left */
int ratelimit_in_flight(const ratelimit *rl, const char *endpoint); /* NULL: all endpoints */
int64_t ratelimit_guard_ms(const ratelimit *rl);

#endif
