/*
 * ratelimit.c — the request pacer (see ratelimit.h for the model).
 *
 * Layout: the endpoint table (concurrency), the log of recent starts
 * (contract mode), the set of counted requests in flight (to discount what
 * the server may not have counted yet), then acquire and release.
 */
#include "net/ratelimit.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENDPOINTS 32
#define MAX_LOG 4096
/* Two announced resets closer than this are the same window. */
#define SAME_WINDOW_MS 500

struct ratelimit {
    int max_in_flight;              /* per endpoint */
    char *endpoints[MAX_ENDPOINTS]; /* names seen so far */
    int in_flight[MAX_ENDPOINTS];   /* requests in flight per endpoint */
    int endpoint_count;
    int untracked_in_flight; /* requests with no endpoint slot */

    int per_window;    /* contract: starts allowed per window */
    int64_t window_ms; /* contract window */
    int64_t *log;      /* ring of recent start times */
    int log_head, log_count;

    uint64_t *flying; /* seqs of counted requests in flight */
    size_t flying_count, flying_cap;
    uint64_t seq; /* last seq handed out */

    ratelimit_mode mode;
    bool ever_headers;        /* some answer carried the headers */
    bool probe_out;           /* a probe is in flight */
    int64_t budget;           /* headers mode: starts left in this window */
    int64_t window_remaining; /* headers mode: lowest Remaining seen in this window */
    int64_t reset_at;         /* headers mode: when the window resets */
    int64_t reset_key;        /* headers mode: the window's reset as announced (see learn_headers) */
    int64_t last_reset_key;   /* latest reset announced, any mode */
    int64_t pause_until;      /* 429: nothing starts before this */
    int64_t guard_ms;
};

ratelimit *ratelimit_new(int per_minute, int64_t window_ms, int max_in_flight)
{
    ratelimit *rl = calloc(1, sizeof *rl);
    if (!rl)
        return NULL;
    if (per_minute < 1)
        per_minute = 1;
    if (window_ms < 1)
        window_ms = 60000;
    rl->per_window = per_minute;
    rl->window_ms = window_ms;
    if (rl->per_window > MAX_LOG) {
        /* Same rate over a proportionally shorter window. */
        rl->window_ms = window_ms * MAX_LOG / per_minute;
        if (rl->window_ms < 1)
            rl->window_ms = 1;
        rl->per_window = MAX_LOG;
    }
    rl->log = calloc((size_t)rl->per_window, sizeof *rl->log);
    rl->max_in_flight = max_in_flight < 1 ? 1 : max_in_flight;
    rl->mode = RATELIMIT_PROBE;
    rl->guard_ms = RATELIMIT_GUARD_MS;
    rl->last_reset_key = INT64_MIN;
    rl->pause_until = INT64_MIN;
    if (!rl->log) {
        free(rl);
        return NULL;
    }
    return rl;
}

void ratelimit_free(ratelimit *rl)
{
    if (!rl)
        return;
    for (int i = 0; i < rl->endpoint_count; i++)
        free(rl->endpoints[i]);
    free(rl->log);
    free(rl->flying);
    free(rl);
}

/* ---- Endpoints ---------------------------------------------------------- */

static int endpoint_find(const ratelimit *rl, const char *name)
{
    for (int i = 0; i < rl->endpoint_count; i++)
        if (strcmp(rl->endpoints[i], name) == 0)
            return i;
    return -1;
}

static int endpoint_slot(ratelimit *rl, const char *name)
{
    int i = endpoint_find(rl, name);
    if (i >= 0 || rl->endpoint_count == MAX_ENDPOINTS)
        return i;
    size_t len = strlen(name);
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, name, len + 1);
    rl->endpoints[rl->endpoint_count] = copy;
    rl->in_flight[rl->endpoint_count] = 0;
    return rl->endpoint_count++;
}

int ratelimit_in_flight(const ratelimit *rl, const char *endpoint)
{
    if (endpoint) {
        int i = endpoint_find(rl, endpoint);
        return i < 0 ? 0 : rl->in_flight[i];
    }
    int total = rl->untracked_in_flight;
    for (int i = 0; i < rl->endpoint_count; i++)
        total += rl->in_flight[i];
    return total;
}

/* ---- Contract log ----------------------------------------------------------- */

static void log_prune(ratelimit *rl, int64_t now)
{
    while (rl->log_count > 0 && rl->log[rl->log_head] <= now - rl->window_ms) {
        rl->log_head = (rl->log_head + 1) % rl->per_window;
        rl->log_count--;
    }
}

static void log_add(ratelimit *rl, int64_t now)
{
    log_prune(rl, now);
    if (rl->log_count == rl->per_window) { /* headers allowed more: forget the oldest */
        rl->log_head = (rl->log_head + 1) % rl->per_window;
        rl->log_count--;
    }
    rl->log[(rl->log_head + rl->log_count) % rl->per_window] = now;
    rl->log_count++;
}

/* ms until the contract allows one more start (0: now). */
static int64_t log_wait(ratelimit *rl, int64_t now)
{
    log_prune(rl, now);
    if (rl->log_count < rl->per_window)
        return 0;
    return rl->log[rl->log_head] + rl->window_ms - now;
}

/* ---- Counted requests in flight ------------------------------------------------ */

static bool flying_add(ratelimit *rl, uint64_t seq)
{
    if (rl->flying_count == rl->flying_cap) {
        size_t cap = rl->flying_cap ? rl->flying_cap * 2 : 16;
        uint64_t *grown = realloc(rl->flying, cap * sizeof *grown);
        if (!grown)
            return false;
        rl->flying = grown;
        rl->flying_cap = cap;
    }
    rl->flying[rl->flying_count++] = seq;
    return true;
}

static void flying_remove(ratelimit *rl, uint64_t seq)
{
    for (size_t i = 0; i < rl->flying_count; i++) {
        if (rl->flying[i] == seq) {
            rl->flying[i] = rl->flying[--rl->flying_count];
            return;
        }
    }
}

/* ---- Acquire ---------------------------------------------------------------- */

static int64_t budget_wait(ratelimit *rl, int64_t now)
{
    if (now < rl->pause_until)
        return rl->pause_until - now;
    if (rl->mode == RATELIMIT_HEADERS && now >= rl->reset_at + rl->guard_ms)
        rl->mode = RATELIMIT_PROBE; /* the window the budget belonged to is over */
    switch (rl->mode) {
    case RATELIMIT_PROBE:
        if (rl->probe_out)
            return RATELIMIT_WAIT_COMPLETION;
        return rl->ever_headers ? 0 : log_wait(rl, now);
    case RATELIMIT_HEADERS:
        if (rl->budget > 0)
            return 0;
        return rl->reset_at + rl->guard_ms - now;
    case RATELIMIT_CONTRACT: return log_wait(rl, now);
    }
    return 0;
}

int64_t ratelimit_acquire(ratelimit *rl, const char *endpoint, bool counted, bool learn, int64_t now_ms,
                          ratelimit_ticket *ticket)
{
    int slot = -1;
    if (endpoint) {
        slot = endpoint_slot(rl, endpoint);
        if (slot >= 0 && rl->in_flight[slot] >= rl->max_in_flight)
            return RATELIMIT_WAIT_COMPLETION;
    }
    ticket->seq = 0;
    ticket->probe = false;
    ticket->learn = false;
    if (counted) {
        int64_t wait = budget_wait(rl, now_ms);
        if (wait > 0)
            return wait;
        if (!flying_add(rl, rl->seq + 1))
            return 1; /* out of memory: try again shortly */
        ticket->seq = ++rl->seq;
        ticket->learn = learn;
        if (rl->mode == RATELIMIT_PROBE) {
            ticket->probe = true;
            rl->probe_out = true;
        } else if (rl->mode == RATELIMIT_HEADERS) {
            rl->budget--;
        }
        log_add(rl, now_ms);
    }
    ticket->endpoint = slot;
    if (slot >= 0)
        rl->in_flight[slot]++;
    else
        rl->untracked_in_flight++;
    return 0;
}

/* ---- Release: learning from the answer ---------------------------------------- */

static void learn_headers(ratelimit *rl, const ratelimit_ticket *ticket, int64_t now, const ratelimit_answer *a)
{
    int64_t reset_at;
    if (a->has_reset) {
        reset_at = now + a->reset_in_ms;
    } else {
        /* No reset announced: assume the budget renews one contract
         * interval from now at the latest, and re-probe then. */
        reset_at = now + rl->window_ms / rl->per_window;
    }
    /* Which window the answer belongs to: by the reset the server announced
     * when it says so on its own clock. Our estimate of when that is
     * (reset_at) moves as the caller refines its idea of the server's clock
     * (a Date header has whole seconds: the first answer may put the reset
     * up to a second late), so two answers of one window could otherwise
     * look a second apart, the later, better one taken for a late answer
     * from an older window, and the worse estimate kept. */
    bool by_server = a->has_reset && a->has_reset_utc;
    int64_t key = by_server ? a->reset_utc_ms : reset_at;
    bool known = rl->last_reset_key != INT64_MIN;
    if (known && key < rl->last_reset_key - SAME_WINDOW_MS)
        return; /* a late answer from a window already over */
    bool same =
        rl->mode == RATELIMIT_HEADERS && key <= rl->reset_key + SAME_WINDOW_MS && key >= rl->reset_key - SAME_WINDOW_MS;
    if (!same && rl->mode != RATELIMIT_HEADERS && known && key <= rl->last_reset_key + SAME_WINDOW_MS && !ticket->probe)
        return; /* a late answer from the window that just ended */

    rl->ever_headers = true;
    if (same) {
        /* Within a window Remaining only goes down: the lowest value seen
         * already counts every request answered with a higher one. */
        if (a->remaining < rl->window_remaining)
            rl->window_remaining = a->remaining;
        if (by_server) {
            /* Every estimate of the announced reset errs late (the caller
             * reads the server's clock from below): the earliest is the
             * closest. */
            if (reset_at < rl->reset_at)
                rl->reset_at = reset_at;
        } else if (reset_at > rl->reset_at) {
            rl->reset_at = reset_at;
        }
        if (key > rl->reset_key)
            rl->reset_key = key;
    } else {
        rl->mode = RATELIMIT_HEADERS;
        rl->window_remaining = a->remaining;
        rl->reset_at = reset_at;
        rl->reset_key = key;
    }
    /* Requests still in flight may not have been counted yet. */
    rl->budget = rl->window_remaining - (int64_t)rl->flying_count;
    if (rl->budget <= 0 && rl->reset_at <= now && ticket->probe) {
        /* Spent, and the announced reset is already here: the server's
         * clock or rounding puts resets later than announced. Wait a guard
         * from now, and a longer one from now on. */
        rl->reset_at = now;
        rl->guard_ms = rl->guard_ms * 2 > RATELIMIT_GUARD_MAX_MS ? RATELIMIT_GUARD_MAX_MS : rl->guard_ms * 2;
    }
    if (key > rl->last_reset_key)
        rl->last_reset_key = key;
}

void ratelimit_release(ratelimit *rl, const ratelimit_ticket *ticket, int64_t now_ms, const ratelimit_answer *answer)
{
    if (ticket->endpoint >= 0) {
        if (rl->in_flight[ticket->endpoint] > 0)
            rl->in_flight[ticket->endpoint]--;
    } else if (rl->untracked_in_flight > 0) {
        rl->untracked_in_flight--;
    }
    if (ticket->seq == 0)
        return;
    flying_remove(rl, ticket->seq);
    if (ticket->probe)
        rl->probe_out = false;
    if (!answer || !ticket->learn)
        return;

    if (answer->too_many) {
        int64_t wait = answer->retry_after_ms >= 0 ? answer->retry_after_ms : -1;
        if (answer->has_reset && answer->reset_in_ms > wait)
            wait = answer->reset_in_ms;
        if (wait < 0)
            wait = rl->window_ms / rl->per_window;
        if (now_ms + wait > rl->pause_until)
            rl->pause_until = now_ms + wait;
        rl->guard_ms = rl->guard_ms * 2 + 100;
        if (rl->guard_ms > RATELIMIT_GUARD_MAX_MS)
            rl->guard_ms = RATELIMIT_GUARD_MAX_MS;
        rl->mode = RATELIMIT_PROBE;
        rl->ever_headers = rl->ever_headers || answer->has_remaining;
        return;
    }
    if (answer->has_remaining) {
        learn_headers(rl, ticket, now_ms, answer);
    } else if (rl->mode == RATELIMIT_PROBE && ticket->probe) {
        rl->mode = RATELIMIT_CONTRACT; /* this server sends no rate headers */
    }
}

/* ---- Parsing -------------------------------------------------------------------- */

static bool parse_decimal(const char *value, double *out)
{
    if (!value)
        return false;
    while (*value == ' ' || *value == '\t')
        value++;
    if (!isdigit((unsigned char)*value))
        return false;
    char *end = NULL;
    double v = strtod(value, &end);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (*end != '\0' || !(v >= 0) || v > 1e15)
        return false;
    *out = v;
    return true;
}

bool ratelimit_parse_remaining(const char *value, int64_t *remaining)
{
    double v;
    if (!parse_decimal(value, &v))
        return false;
    *remaining = (int64_t)v;
    return true;
}

bool ratelimit_parse_reset_utc(const char *value, int64_t now_utc_ms, int64_t *reset_utc_ms)
{
    double v;
    if (!parse_decimal(value, &v))
        return false;
    if (v < 1e9)
        *reset_utc_ms = now_utc_ms + (int64_t)(v * 1000.0); /* seconds from now */
    else if (v > 1e12)
        *reset_utc_ms = (int64_t)v; /* epoch milliseconds */
    else
        *reset_utc_ms = (int64_t)(v * 1000.0); /* epoch seconds, as documented */
    return true;
}

bool ratelimit_parse_reset(const char *value, int64_t now_utc_ms, int64_t *reset_in_ms)
{
    int64_t at;
    if (!ratelimit_parse_reset_utc(value, now_utc_ms, &at))
        return false;
    int64_t in = at - now_utc_ms;
    *reset_in_ms = in > 0 ? in : 0;
    return true;
}

ratelimit_mode ratelimit_get_mode(const ratelimit *rl)
{
    return rl->mode;
}

int64_t ratelimit_budget(const ratelimit *rl)
{
    return rl->budget;
}

int64_t ratelimit_guard_ms(const ratelimit *rl)
{
    return rl->guard_ms;
}
