/*
 * trace.h — tracing incidents back through their chain of events: one
 * event-lineage call per incident, then event-details for every distinct
 * event id of the whole run, fetched once, in batches of
 * report.details_batch (PRODUCT.md sections 5 and 7).
 *
 * All calls go through the http client's submit/run machinery, so they run
 * concurrently under its pacing: lineage calls are queued as soon as an
 * incident is known (while the listing goes on); an event-details call is
 * queued each time a full batch of new ids has accumulated; the last,
 * partial batch when every lineage is in. The request count is therefore
 * lineage calls + ceil(distinct event ids / batch), the lower bound.
 *
 * The report works a page at a time (report.h): it submits a page's
 * lineages, drains the client (trace_drain), takes the results of the
 * incidents that are ready and releases them (trace_release). The last,
 * partial details batch stays open across pages, so the count above holds
 * for the whole run; incidents waiting for it are ready after a later page
 * fills it, or after trace_finish.
 *
 * Memory: the lineage ids of each live (not yet released) incident; one
 * printed JSON text (the mapped `items` event, a few hundred bytes) per
 * event a live incident names; and a cache of at most cache_events events
 * no live incident names any more, least recently released dropped first,
 * so that an event shared with a later page is not fetched again. An event
 * dropped from the cache and named again is fetched again: one more id in
 * some event-details batch (counted in distinct_events and evicted_events).
 */
#ifndef OUTPOST_TRACE_H
#define OUTPOST_TRACE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "net/http.h"

struct cJSON;

typedef struct trace_run trace_run;

/* Creates a run over http (borrowed; must outlive the run). batch: event ids
 * per event-details call (>= 1); cache_events: unreferenced events kept for
 * later pages. NULL on out of memory. */
trace_run *trace_run_new(http_client *http, int batch_size, size_t cache_events);

/* Frees everything; pending requests must have been run (trace_finish). */
void trace_run_free(trace_run *run);

/*
 * Queues the lineage of one incident (both ids non-empty); *index receives
 * the handle for trace_result. Ids are copied. Fails only on ERR_NOMEM /
 * ERR_INTERNAL, in which case nothing was queued.
 */
MUST_CHECK error_code trace_submit(trace_run *run, const char *start_event_id, const char *end_event_id, size_t *index,
                                   error_info *err);

/*
 * Runs every queued call to its end, sending the last partial details
 * batch once all lineages are in. Per-incident failures are kept for
 * trace_result; this fails only when the client cannot go on.
 */
MUST_CHECK error_code trace_finish(trace_run *run, error_info *err);

/*
 * Runs every submitted call to its end (lineages, and the details batches
 * they filled) but leaves the open, partial batch unsent. Fails like
 * trace_finish.
 */
MUST_CHECK error_code trace_drain(trace_run *run, error_info *err);

/* Whether index's lineage is in and none of its events waits for details
 * (after trace_drain: none is in the open batch). */
bool trace_ready(const trace_run *run, size_t index);

/* Event ids waiting in the open, partial batch. */
size_t trace_open_events(const trace_run *run);

/*
 * Forgets index (its handle may be reused by trace_submit): its events
 * nobody else names move to the cache. Only for a ready incident (or when
 * the run ends).
 */
void trace_release(trace_run *run, size_t index);

typedef struct trace_outcome {
    const char *status;    /* INCIDENT_TRACED or INCIDENT_FAILED */
    struct cJSON *events;  /* array of mapped events in lineage order (caller owns) */
    struct cJSON *missing; /* array of ids details did not return (caller owns) */
    error_info error;      /* why it failed (status failed) */
} trace_outcome;

/*
 * The outcome for index after trace_finish. On ERR_OK the caller owns
 * out->events and out->missing (NULL when failed). ERR_NOMEM otherwise.
 */
MUST_CHECK error_code trace_result(trace_run *run, size_t index, trace_outcome *out, error_info *err);

/*
 * The status trace_result would give for index (INCIDENT_TRACED or
 * INCIDENT_FAILED, with why when failed), without building its events:
 * deciding an incident needs only that. ERR_INTERNAL otherwise.
 */
MUST_CHECK error_code trace_status(const trace_run *run, size_t index, const char **status, error_info *why,
                                   error_info *err);

/* Requests by kind, for the trace and tests. */
typedef struct trace_counts {
    size_t lineage_calls;   /* event-lineage calls queued */
    size_t details_calls;   /* event-details calls queued */
    size_t distinct_events; /* event ids queued for event-details (an id dropped
                               from the cache and needed again counts again) */
    size_t evicted_events;  /* events dropped from the cache */
} trace_counts;

void trace_get_counts(const trace_run *run, trace_counts *counts);

#endif
