/*
 * report.h — the incident report (PRODUCT.md section 5): poll the incident
 * list since the cursor, trace what is new, append it to incidents.jsonl,
 * write status.json's "incidents", and only then move the cursor.
 *
 * State section "report" (state.h), owned here:
 *   cursor        ISO time: start of the last complete poll (held back to
 *                 the oldest incident still failing)
 *   seen          {incident id: trigger_time} of incidents already appended,
 *                 pruned once older than cursor - overlap - margin; held
 *                 by the state as a compact set (state_seen_of), not as
 *                 cJSON members
 *   failed        {incident id: {first_failed_at, trigger_time}} of
 *                 incidents whose lineage or details could not be fetched
 *   pending       {ids: [...], at} the batch being appended right now
 *
 * A page at a time: each listed page's lineages and event details are
 * fetched, the incidents that are ready written as one batch, and dropped
 * before the next page is listed, so memory does not grow with the
 * backlog. The last details batch of a page is usually partial: it stays
 * open for the next page (the request count stays pages + lineage calls +
 * ceil(events / batch)), and the incidents whose events wait in it are
 * written with a later batch, unless more than REPORT_CARRY_MAX wait (then
 * it is sent early: one more request). Events no pending incident names
 * stay in a cache of REPORT_EVENT_CACHE events for later pages (trace.h);
 * one evicted and named again is fetched again.
 *
 * Exactly once, whatever instant the process dies at; for each batch:
 *   1. state saved with `pending` = the ids about to be appended (and the
 *      previous batches' ids in `seen`);
 *   2. lines appended to incidents.jsonl, fsynced;
 *   3. status.json replaced atomically (the cursor not moved);
 * and after the last batch:
 *   4. state saved: ids into `seen`, `pending` cleared, cursor moved.
 * A run that finds `pending` (a crash between 1 and the next save) scans
 * incidents.jsonl and its rotated files for those ids: found ones are
 * marked seen (they were written) and put into status.json, the others are
 * traced and appended again by this run. Batches saved in `seen` are
 * skipped when the next run lists them again: a crash between pages loses
 * nothing and the cursor stays where it was until a run completes.
 * Before the first 1 nothing was written; after 4 all is done.
 *
 * status.json's items are the newest keep_incidents of this run's
 * incidents and of the items status.json held before the run (read once
 * at its start), the same whichever order the pages came in.
 *
 * Polls start at cursor - REPORT_OVERLAP_S (first run: now -
 * report.initial_lookback), sorted `trigger_time asc`, so a listing cut
 * short by an error has delivered the oldest incidents, which are still
 * reported; the cursor then stays where it was.
 */
#ifndef OUTPOST_REPORT_H
#define OUTPOST_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "base/error.h"
#include "net/http.h"
#include "core/state.h"

struct cJSON;

#define REPORT_OVERLAP_S 300                /* re-poll this far behind the cursor */
#define REPORT_SEEN_MARGIN_S 3600           /* keep seen ids this much longer */
#define REPORT_FAILED_GIVE_UP_S (24 * 3600) /* append failed incidents after this long */
#define REPORT_SORT "trigger_time asc"
#define REPORT_EVENT_CACHE 4096 /* finished events kept for later pages */
#define REPORT_CARRY_MAX 1000   /* incidents waiting for the open details batch */

typedef struct report_options {
    int64_t now_s;          /* poll start (UTC seconds); 0: the clock */
    const char *started_at; /* ISO time the command started, for last_run */
    bool write_last_run;    /* `report` alone: write last_run too */
    bool progress;          /* a progress line on stderr (a terminal) */
} report_options;

typedef struct report_summary {
    int pages;             /* incident list pages fetched */
    int64_t listed;        /* incidents listed */
    int64_t already_seen;  /* listed but appended by an earlier run (or older
                              than the seen window: start_time - margin) */
    int64_t new_count;     /* appended to incidents.jsonl this run */
    int64_t traced;        /* of those, traced */
    int64_t untraceable;   /* of those, without lineage ids */
    int64_t failed;        /* lineage/details failed (appended or not) */
    int64_t recovered;     /* pending ids found written after a crash */
    bool listing_complete; /* every page was read */
    size_t lineage_calls, details_calls, distinct_events;
    http_stats stats; /* the client's counters at the end */
} report_summary;

/*
 * Runs the report over http with state s (saved here, twice). Writes
 * incidents.jsonl, status.json (its "incidents", and "last_run" when
 * opts->write_last_run) and the metrics file when configured. Failures of
 * single incidents do not stop the others; the error returned is the
 * listing's, else the first incident's failure (with the number that
 * failed), else a write failure. summary may be NULL.
 */
MUST_CHECK error_code report_run(const config *cfg, http_client *http, state *s, const report_options *opts,
                                 report_summary *summary, error_info *err);

/* ---- Bookkeeping, exposed for tests ------------------------------------------ */

/* The start_time of the next poll for section at now_s (ISO, into buf). */
void report_start_time(const struct cJSON *section, int64_t now_s, int64_t initial_lookback_s, char buf[21]);

/*
 * Resolves a `pending` batch left by a crash: ids found in the JSON-lines
 * file (or its rotated files) move to seen (the state's set), and their items are added to
 * the array items (may be NULL) so that status.json gets them too;
 * `pending` is removed. Returns how many were found through *found (may
 * be NULL).
 */
MUST_CHECK error_code report_recover(struct cJSON *section, state_seen *seen, const char *jsonl_path, int jsonl_keep,
                                     struct cJSON *items, int64_t *found, error_info *err);

/* Drops seen ids whose time is older than cursor - overlap - margin (or
 * is not a time). */
void report_prune_seen(state_seen *seen, int64_t cursor_s);

#endif
