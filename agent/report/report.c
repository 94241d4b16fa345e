/*
 * report.c — the incident report: polling with cursor and overlap, the
 * seen/failed/pending bookkeeping that makes appends exactly-once, and the
 * writing of incidents.jsonl, status.json and the metrics file (see
 * report.h for the protocol). Tracing itself is trace.c; the items shape
 * is incident.c.
 *
 * Layout: bookkeeping helpers on the state section; the working set of
 * listed incidents; the passes of one batch (decide, mark pending, append,
 * write status, commit), each a function; the page callback that lists,
 * traces and writes a page at a time; finish(), which writes the last batch
 * and moves the cursor.
 */
#include "report/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "net/api.h"
#include "net/retry_after.h"
#include "report/feeds.h"
#include "report/incident.h"
#include "report/linefile.h"
#include "core/log.h"
#include "report/metrics.h"
#include "report/newest.h"
#include "platform/platform.h"
#include "report/status.h"
#include "base/strmap.h"
#include "base/text.h"
#include "core/timefmt.h"
#include "report/trace.h"

#define LINE_MAX_BYTES (16 * 1024 * 1024) /* longest incidents.jsonl line read back */

/* ---- Bookkeeping on the "report" section --------------------------------------- */

static cJSON *object_member(cJSON *section, const char *name)
{
    cJSON *obj = cJSON_GetObjectItemCaseSensitive(section, name);
    if (cJSON_IsObject(obj))
        return obj;
    cJSON_DeleteItemFromObjectCaseSensitive(section, name);
    return cJSON_AddObjectToObject(section, name);
}

static bool time_of(const cJSON *value, int64_t *seconds)
{
    return cJSON_IsString(value) && timefmt_parse_iso8601(value->valuestring, seconds);
}

void report_start_time(const cJSON *section, int64_t now_s, int64_t initial_lookback_s, char buf[21])
{
    int64_t cursor;
    if (time_of(cJSON_GetObjectItemCaseSensitive(section, "cursor"), &cursor))
        timefmt_iso8601(cursor - REPORT_OVERLAP_S, buf);
    else
        timefmt_iso8601(now_s - initial_lookback_s, buf);
}

static bool seen_recent(const char *id, const char *time, void *threshold)
{
    (void)id;
    int64_t t;
    return timefmt_parse_iso8601(time, &t) && t >= *(const int64_t *)threshold;
}

void report_prune_seen(state_seen *seen, int64_t cursor_s)
{
    int64_t threshold = cursor_s - REPORT_OVERLAP_S - REPORT_SEEN_MARGIN_S;
    state_seen_filter(seen, seen_recent, &threshold);
}

typedef struct recovery {
    char **ids; /* pending ids, sorted */
    size_t count;
    state_seen *seen;
    cJSON *failed; /* section.failed */
    cJSON *items;  /* recovered items, for status.json; may be NULL */
    int64_t found;
} recovery;

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void recover_line(void *user, const char *line, size_t len)
{
    recovery *r = user;
    char *id = NULL;
    if (!report_line_id(line, len, &id))
        return;
    if (bsearch(&id, r->ids, r->count, sizeof *r->ids, compare_strings) && !state_seen_get(r->seen, id)) {
        cJSON *doc = cJSON_ParseWithLength(line, len);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(doc, "trigger_time");
        char now[TIMEFMT_ISO8601_SIZE];
        timefmt_iso8601(platform_time_utc_ms() / 1000, now);
        if (doc && state_seen_put(r->seen, id, cJSON_IsString(t) ? t->valuestring : now)) {
            cJSON_DeleteItemFromObjectCaseSensitive(r->failed, id);
            r->found++;
            /* The crashed run may not have written them to status.json. */
            if (r->items && cJSON_AddItemToArray(r->items, doc))
                doc = NULL;
        }
        cJSON_Delete(doc);
    }
    free(id);
}

error_code report_recover(cJSON *section, state_seen *seen, const char *jsonl_path, int jsonl_keep, cJSON *items,
                          int64_t *found, error_info *err)
{
    if (found)
        *found = 0;
    const cJSON *pending =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(section, "pending"), "ids");
    int n = cJSON_GetArraySize(pending);
    if (n <= 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(section, "pending");
        return ERR_OK;
    }
    recovery r = {.seen = seen, .failed = object_member(section, "failed"), .items = items};
    r.ids = calloc((size_t)n, sizeof *r.ids);
    if (!r.ids || !object_member(section, "seen") || !r.failed) {
        free(r.ids);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    const cJSON *id;
    cJSON_ArrayForEach(id, pending)
    {
        if (cJSON_IsString(id))
            r.ids[r.count++] = id->valuestring;
    }
    qsort(r.ids, r.count, sizeof *r.ids, compare_strings);
    error_code rc = linefile_scan(jsonl_path, jsonl_keep, LINE_MAX_BYTES, recover_line, &r, err);
    free(r.ids);
    if (rc != ERR_OK)
        return rc;
    log_info("report: recovered an interrupted append: %" PRId64 " of %d incidents had been written", r.found, n);
    if (found)
        *found = r.found;
    cJSON_DeleteItemFromObjectCaseSensitive(section, "pending");
    return ERR_OK;
}

/* ---- The working set: listed incidents not yet written ------------------------------ */

typedef enum {
    OUTCOME_APPEND,     /* new: append and mark seen */
    OUTCOME_STATUS_ONLY /* failed, not yet for 24 h: status.json only */
} outcome_kind;

typedef struct listed {
    cJSON *item;    /* the item without lineage; owned */
    char *start_id; /* lineage ends, NULL when absent */
    char *end_id;
    bool traceable;
    bool tracing;       /* holds trace_index (released once written) */
    size_t trace_index; /* for trace_result */
    bool ready;         /* its lineage and events are in: written by this batch */
    const char *status; /* lineage status once decided */
    outcome_kind outcome;
} listed;

typedef struct report_ctx {
    const config *cfg;
    http_client *http;
    state *s;
    const report_options *opts;
    const char *start_time; /* this poll's start_time */
    cJSON *section;         /* state "report" */
    state_seen *seen;       /* the state's */
    cJSON *failed;
    trace_run *trace;
    listed *list; /* the working set: this page, and earlier incidents
                     still waiting for the open details batch */
    size_t count, cap;
    strmap *listed_ids;  /* id -> item of the working set */
    newest *keep;        /* the newest items: status.json's before this run,
                            replaced or joined by this run's */
    cJSON *status_doc;   /* status.json as it was, without "incidents": the
                            members this run does not write; may be NULL */
    cJSON *still_failed; /* {id: true} of incidents left failed by this run */
    bool hold;           /* some incident was left failed: the cursor stays before it */
    int64_t hold_s;      /* the earliest trigger time of those */
    int64_t now_s;
    int64_t oldest_s; /* incidents older than this are past the seen window */
    report_summary sum;
    error_info first_failure; /* first incident that failed */
    bool stopped;             /* a batch could not be written: stop, commit nothing more */
    bool progress;            /* a person watches: a progress line on stderr */
} report_ctx;

static bool listed_already(const report_ctx *ctx, const char *id)
{
    return cJSON_GetObjectItemCaseSensitive(ctx->still_failed, id) || strmap_get(ctx->listed_ids, id);
}

/* Lets the trace forget l's lineage (its events go to the cache). */
static void listed_untrace(report_ctx *ctx, listed *l)
{
    if (l->tracing)
        trace_release(ctx->trace, l->trace_index);
    l->tracing = false;
}

static void listed_free(report_ctx *ctx, listed *l)
{
    listed_untrace(ctx, l);
    if (l->item && strmap_get(ctx->listed_ids, incident_item_id(l->item)) == l->item)
        strmap_remove(ctx->listed_ids, incident_item_id(l->item));
    cJSON_Delete(l->item);
    free(l->start_id);
    free(l->end_id);
}

static MUST_CHECK error_code add_listed(report_ctx *ctx, const api_incident *inc, error_info *err)
{
    if (ctx->count == ctx->cap) {
        size_t cap = ctx->cap ? ctx->cap * 2 : 256;
        listed *grown = realloc(ctx->list, cap * sizeof *grown);
        if (!grown)
            return error_set(err, ERR_NOMEM, "out of memory");
        ctx->list = grown;
        ctx->cap = cap;
    }
    listed *l = &ctx->list[ctx->count];
    *l = (listed){.item = incident_item_new(inc)};
    bool traceable = inc->start_event_id && inc->end_event_id;
    l->start_id = text_dup(inc->start_event_id);
    l->end_id = text_dup(inc->end_event_id);
    error_code rc = ERR_OK;
    if (!l->item || (inc->start_event_id && !l->start_id) || (inc->end_event_id && !l->end_id))
        rc = error_set(err, ERR_NOMEM, "out of memory");
    else if (traceable)
        rc = trace_submit(ctx->trace, l->start_id, l->end_id, &l->trace_index, err);
    if (rc == ERR_OK && !strmap_put(ctx->listed_ids, incident_item_id(l->item), l->item))
        rc = error_set(err, ERR_NOMEM, "out of memory");
    if (rc != ERR_OK) {
        listed_free(ctx, l);
        return rc;
    }
    l->traceable = l->tracing = traceable;
    ctx->count++;
    return ERR_OK;
}

/* ---- Deciding and building ------------------------------------------------------ */

static const char *item_trigger_time(const listed *l)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(l->item, "trigger_time");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* Records a failure in `failed` and tells whether it has lasted 24 h. */
static bool failed_long_enough(report_ctx *ctx, const listed *l)
{
    const char *id = incident_item_id(l->item);
    cJSON *entry = cJSON_GetObjectItemCaseSensitive(ctx->failed, id);
    int64_t first;
    if (!cJSON_IsObject(entry) || !time_of(cJSON_GetObjectItemCaseSensitive(entry, "first_failed_at"), &first)) {
        char now[TIMEFMT_ISO8601_SIZE];
        timefmt_iso8601(ctx->now_s, now);
        cJSON_DeleteItemFromObjectCaseSensitive(ctx->failed, id);
        entry = cJSON_AddObjectToObject(ctx->failed, id);
        if (entry) {
            cJSON_AddStringToObject(entry, "first_failed_at", now);
            const char *t = item_trigger_time(l);
            if (t)
                cJSON_AddStringToObject(entry, "trigger_time", t);
        }
        return false;
    }
    return ctx->now_s - first >= REPORT_FAILED_GIVE_UP_S;
}

/* Decides each ready incident's status and whether it is appended. */
static MUST_CHECK error_code decide(report_ctx *ctx, error_info *err)
{
    for (size_t i = 0; i < ctx->count; i++) {
        listed *l = &ctx->list[i];
        if (!l->ready)
            continue;
        l->outcome = OUTCOME_APPEND;
        if (!l->traceable) {
            l->status = INCIDENT_UNTRACEABLE;
            continue;
        }
        error_info why;
        error_code rc = trace_status(ctx->trace, l->trace_index, &l->status, &why, err);
        if (rc != ERR_OK)
            return rc;
        if (strcmp(l->status, INCIDENT_FAILED) != 0)
            continue;
        ctx->sum.failed++;
        if (ctx->first_failure.code == ERR_OK)
            ctx->first_failure = why;
        if (!failed_long_enough(ctx, l))
            l->outcome = OUTCOME_STATUS_ONLY;
    }
    return ERR_OK;
}

/* The full item of l (its lineage added); caller owns it. */
static MUST_CHECK error_code build_item(report_ctx *ctx, const listed *l, cJSON **out, error_info *err)
{
    cJSON *item = cJSON_Duplicate(l->item, 1);
    if (!item)
        return error_set(err, ERR_NOMEM, "out of memory");
    cJSON *events = NULL, *missing = NULL;
    if (l->traceable) {
        trace_outcome o;
        error_code rc = trace_result(ctx->trace, l->trace_index, &o, err);
        if (rc != ERR_OK) {
            cJSON_Delete(item);
            return rc;
        }
        events = o.events;
        missing = o.missing;
    }
    error_code rc = incident_set_lineage(item, l->status, l->start_id, l->end_id, events, missing, err);
    if (rc != ERR_OK) {
        cJSON_Delete(item);
        return rc;
    }
    *out = item;
    return ERR_OK;
}

/* ---- Step 1: pending ---------------------------------------------------------- */

static MUST_CHECK error_code mark_pending(report_ctx *ctx, error_info *err)
{
    cJSON_DeleteItemFromObjectCaseSensitive(ctx->section, "pending");
    cJSON *pending = cJSON_AddObjectToObject(ctx->section, "pending");
    cJSON *ids = pending ? cJSON_AddArrayToObject(pending, "ids") : NULL;
    if (!ids)
        return error_set(err, ERR_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < ctx->count; i++) {
        if (!ctx->list[i].ready || ctx->list[i].outcome != OUTCOME_APPEND)
            continue;
        cJSON *id = cJSON_CreateString(incident_item_id(ctx->list[i].item));
        if (!id || !cJSON_AddItemToArray(ids, id)) {
            cJSON_Delete(id);
            return error_set(err, ERR_NOMEM, "out of memory");
        }
        n++;
    }
    if (n == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(ctx->section, "pending");
        return ERR_OK;
    }
    /* Also saves what earlier batches committed in memory (their seen ids). */
    return state_save(ctx->s, err);
}

/* ---- Step 2: append, and keep the newest items for the status file ---------------- */

/* Appends l's line to feed; with first (incidents.jsonl), also counts it
 * and keeps its item among the newest (status-only ones go there only). */
static MUST_CHECK error_code append_one(report_ctx *ctx, const feed_writer *feed, linefile_writer *w, bool first,
                                        const listed *l, error_info *err)
{
    if (!first && l->outcome != OUTCOME_APPEND)
        return ERR_OK;
    cJSON *item = NULL;
    error_code rc = build_item(ctx, l, &item, err);
    if (rc != ERR_OK)
        return rc;
    if (l->outcome == OUTCOME_APPEND) {
        char *line = NULL;
        rc = feed->format(item, &line, err);
        if (rc == ERR_OK)
            rc = linefile_append(w, line, strlen(line), err);
        free(line);
        if (rc != ERR_OK || !first) {
            cJSON_Delete(item);
            return rc;
        }
        ctx->sum.new_count++;
        if (strcmp(l->status, INCIDENT_TRACED) == 0)
            ctx->sum.traced++;
        else if (strcmp(l->status, INCIDENT_UNTRACEABLE) == 0)
            ctx->sum.untraceable++;
    }
    rc = newest_add(ctx->keep, item, err);
    cJSON_Delete(item);
    return rc;
}

/* Appends the ready incidents to one feed and syncs its file. */
static MUST_CHECK error_code append_feed(report_ctx *ctx, const feed_file *feed, bool first, error_info *err)
{
    char *path = config_state_path(ctx->cfg, feed->name);
    if (!path)
        return error_set(err, ERR_NOMEM, "out of memory");
    linefile_writer *w = NULL;
    error_code rc = linefile_open(path, ctx->cfg->report.jsonl_max_bytes, ctx->cfg->report.jsonl_keep,
                                  ctx->cfg->report.readers_group, &w, err);
    free(path);
    for (size_t i = 0; rc == ERR_OK && i < ctx->count; i++)
        if (ctx->list[i].ready)
            rc = append_one(ctx, feed->writer, w, first, &ctx->list[i], err);
    error_info close_err;
    error_code closed = linefile_close(w, &close_err);
    if (rc == ERR_OK && closed != ERR_OK) {
        *err = close_err;
        rc = closed;
    }
    return rc == ERR_OK ? ERR_OK : error_prefix(err, "cannot append to the %s", feed->writer->what);
}

/* Each enabled feed in turn, incidents.jsonl first, each synced before the
 * next is written (the crash protocol of feeds.h). */
static MUST_CHECK error_code append_ready(report_ctx *ctx, error_info *err)
{
    feed_file feeds[FEEDS_MAX];
    size_t n = feeds_enabled(ctx->cfg, feeds);
    error_code rc = ERR_OK;
    for (size_t i = 0; rc == ERR_OK && i < n; i++)
        rc = append_feed(ctx, &feeds[i], i == 0, err);
    return rc;
}

/* ---- Step 3: status.json ---------------------------------------------------------- */

/* `report` alone: its outcome as status.json's last_run. */
static MUST_CHECK error_code last_run_object(const report_options *opts, const error_info *outcome, bool partial,
                                             cJSON **out, error_info *err)
{
    char now[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, now);
    cJSON *errors = cJSON_CreateArray();
    error_code rc = errors ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK && outcome->code != ERR_OK)
        rc = status_run_error(errors, "report", outcome->message, err);
    status_run run = {.started_at = opts->started_at ? opts->started_at : now,
                      .finished_at = now,
                      .result = outcome->code == ERR_OK ? "ok"
                                : partial               ? "partial"
                                                        : "failed",
                      .exit_code = error_exit_code(outcome->code),
                      .errors = errors};
    if (rc == ERR_OK)
        rc = status_last_run(&run, out, err);
    cJSON_Delete(errors);
    return rc;
}

/* Reads status.json once, before this run writes it: its items join this
 * run's newest in every status.json of the run, as a single write at the
 * end would, and the members this run does not write (installer, and
 * last_run when the report is part of `run`) are kept from it rather than
 * read back, items and all, at every write. The items are read one at a
 * time into the compact store, never as one tree. */
static void read_previous(report_ctx *ctx)
{
    char *path = config_state_path(ctx->cfg, ctx->cfg->report.status_file);
    char *text = NULL;
    size_t len = 0;
    cJSON *doc = NULL;
    error_info ignored;
    if (path && platform_read_file(path, STATUS_MAX_BYTES, &text, &len, &ignored) == ERR_OK &&
        newest_load_status(ctx->keep, text, len, &doc, &ignored) != ERR_OK)
        doc = NULL;
    free(text);
    free(path);
    ctx->status_doc = doc ? doc : cJSON_CreateObject(); /* none (or unreadable): nothing to keep */
}

static cJSON *incidents_member(report_ctx *ctx, const char *cursor, const char *polled_at, cJSON *items, cJSON *hosts)
{
    http_client_stats(ctx->http, &ctx->sum.stats);
    cJSON *m = cJSON_CreateObject();
    bool ok = m && cJSON_AddStringToObject(m, "cursor", cursor) && cJSON_AddStringToObject(m, "polled_at", polled_at) &&
              cJSON_AddNumberToObject(m, "new", (double)ctx->sum.new_count) &&
              cJSON_AddNumberToObject(m, "traced", (double)ctx->sum.traced) &&
              cJSON_AddNumberToObject(m, "untraceable", (double)ctx->sum.untraceable) &&
              cJSON_AddNumberToObject(m, "failed", (double)ctx->sum.failed) &&
              cJSON_AddNumberToObject(m, "api_calls", (double)ctx->sum.stats.api_calls) &&
              cJSON_AddNumberToObject(m, "responses_429", (double)ctx->sum.stats.responses_429);
    if (ok) {
        cJSON_AddItemToObject(m, "items", items);
        cJSON_AddItemToObject(m, "hosts", hosts);
        return m;
    }
    cJSON_Delete(m);
    cJSON_Delete(items);
    cJSON_Delete(hosts);
    return NULL;
}

/* Writes status.json's "incidents" (and "last_run" when last_run). */
static MUST_CHECK error_code write_status(report_ctx *ctx, const char *cursor, bool last_run, const error_info *outcome,
                                          error_info *err)
{
    char polled_at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(ctx->now_s, polled_at);
    cJSON *items = status_items_placeholder(), *hosts = NULL;
    error_code rc = items ? newest_hosts(ctx->keep, &hosts, err) : error_set(err, ERR_NOMEM, "out of memory");
    if (rc != ERR_OK) {
        cJSON_Delete(items);
        return rc;
    }
    status_parts parts = {.incidents = incidents_member(ctx, cursor, polled_at, items, hosts),
                          .previous = ctx->status_doc,
                          .items = ctx->keep};
    if (!parts.incidents)
        rc = error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK && last_run)
        rc = last_run_object(ctx->opts, outcome, ctx->sum.new_count > 0, &parts.last_run, err);
    if (rc == ERR_OK)
        rc = status_write(ctx->cfg, &parts, err);
    cJSON_Delete(parts.incidents);
    cJSON_Delete(parts.last_run);
    return rc;
}

static void write_metrics(const config *cfg, int64_t responses_429)
{
    if (!cfg->report.metrics_file)
        return;
    cJSON *doc = NULL;
    error_info err;
    char *path = config_state_path(cfg, cfg->report.metrics_file);
    if (path && status_read(cfg, &doc, &err) == ERR_OK &&
        metrics_write(path, doc, responses_429, cfg->report.readers_group, &err) != ERR_OK)
        log_warn("report: %s", err.message);
    cJSON_Delete(doc);
    free(path);
}

/* ---- Step 4: commit ------------------------------------------------------------ */

/* The cursor to store: the poll's start when the listing was complete (else
 * the cursor as it was), never past an incident still failing. */
static int64_t next_cursor(const report_ctx *ctx, bool listing_complete)
{
    int64_t cursor, start = 0;
    timefmt_parse_iso8601(ctx->start_time, &start);
    if (listing_complete)
        cursor = ctx->now_s;
    else if (!time_of(cJSON_GetObjectItemCaseSensitive(ctx->section, "cursor"), &cursor))
        cursor = start + REPORT_OVERLAP_S;
    if (ctx->hold && ctx->hold_s < cursor)
        cursor = ctx->hold_s;
    return cursor;
}

/*
 * The written batch, in memory: appended ids into `seen` (and out of
 * `failed`), incidents left failed remembered for the cursor, `pending`
 * cleared. Saved by the next batch's mark_pending or the final commit; a
 * crash before that finds `pending` and recovers the batch from the file.
 */
static MUST_CHECK error_code commit_batch(report_ctx *ctx, error_info *err)
{
    char when[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(ctx->now_s, when);
    for (size_t i = 0; i < ctx->count; i++) {
        const listed *l = &ctx->list[i];
        if (!l->ready)
            continue;
        const char *id = incident_item_id(l->item);
        const char *t = item_trigger_time(l);
        if (l->outcome == OUTCOME_STATUS_ONLY) {
            int64_t at;
            if (!t || !timefmt_parse_iso8601(t, &at)) {
                timefmt_parse_iso8601(ctx->start_time, &at);
                at += REPORT_OVERLAP_S; /* unknown time: hold at this poll's start */
            }
            if (!ctx->hold || at < ctx->hold_s)
                ctx->hold_s = at;
            ctx->hold = true;
            if (!cJSON_AddTrueToObject(ctx->still_failed, id))
                return error_set(err, ERR_NOMEM, "out of memory");
            continue;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(ctx->failed, id);
        if (!state_seen_put(ctx->seen, id, t ? t : when))
            return error_set(err, ERR_NOMEM, "out of memory");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(ctx->section, "pending");
    return ERR_OK;
}

/* After a complete listing, failed incidents no longer listed leave `failed`
 * (appended ones left it with their batch). */
static void forget_failed(report_ctx *ctx)
{
    if (!ctx->sum.listing_complete)
        return;
    cJSON *entry = ctx->failed->child;
    while (entry) {
        cJSON *next = entry->next;
        if (!cJSON_GetObjectItemCaseSensitive(ctx->still_failed, entry->string)) {
            log_warn("report: incident %s failed earlier and is no longer listed; forgetting it", entry->string);
            cJSON_Delete(cJSON_DetachItemViaPointer(ctx->failed, entry));
        }
        entry = next;
    }
}

static MUST_CHECK error_code commit(report_ctx *ctx, int64_t cursor, error_info *err)
{
    char when[TIMEFMT_ISO8601_SIZE];
    forget_failed(ctx);
    cJSON_DeleteItemFromObjectCaseSensitive(ctx->section, "pending");
    timefmt_iso8601(cursor, when);
    cJSON_DeleteItemFromObjectCaseSensitive(ctx->section, "cursor");
    if (!cJSON_AddStringToObject(ctx->section, "cursor", when))
        return error_set(err, ERR_NOMEM, "out of memory");
    report_prune_seen(ctx->seen, cursor);
    error_code rc = retry_after_record(ctx->s, ctx->sum.stats.retry_after_until_ms, platform_time_utc_ms(), err);
    return rc == ERR_OK ? state_save(ctx->s, err) : rc;
}

/* ---- One batch: the ready part of the working set ------------------------------------ */

/* Marks the ready incidents; true when any is. */
static bool mark_ready(report_ctx *ctx, size_t *waiting)
{
    bool any = false;
    *waiting = 0;
    for (size_t i = 0; i < ctx->count; i++) {
        listed *l = &ctx->list[i];
        l->ready = !l->traceable || trace_ready(ctx->trace, l->trace_index);
        any |= l->ready;
        *waiting += !l->ready;
    }
    return any;
}

/* Drops the written incidents from the working set, keeping the others in order. */
static void drop_ready(report_ctx *ctx)
{
    size_t kept = 0;
    for (size_t i = 0; i < ctx->count; i++) {
        if (ctx->list[i].ready)
            listed_free(ctx, &ctx->list[i]);
        else
            ctx->list[kept++] = ctx->list[i];
    }
    ctx->count = kept;
}

/* The cursor status.json shows between batches: the one a stop here would keep. */
static void interim_cursor(const report_ctx *ctx, char text[TIMEFMT_ISO8601_SIZE])
{
    timefmt_iso8601(next_cursor(ctx, false), text);
}

/*
 * Traces, writes and drops what is ready. Between pages (last false) the
 * open details batch stays unsent, so incidents whose events wait in it
 * stay for a later page, unless more than REPORT_CARRY_MAX wait: then it is
 * sent now. With last, it is sent and everything is written; status.json
 * and the commit are left to finish().
 */
static MUST_CHECK error_code process_batch(report_ctx *ctx, bool last, error_info *err)
{
    error_code rc = last ? trace_finish(ctx->trace, err) : trace_drain(ctx->trace, err);
    size_t waiting = 0;
    if (rc == ERR_OK && !mark_ready(ctx, &waiting) && !last && waiting == 0)
        return ERR_OK;
    if (rc == ERR_OK && !last && waiting > REPORT_CARRY_MAX) {
        log_info("report: %" PRIu64 " incidents wait for %" PRIu64 " events; sending their batch early",
                 (uint64_t)waiting, (uint64_t)trace_open_events(ctx->trace));
        if ((rc = trace_finish(ctx->trace, err)) == ERR_OK)
            mark_ready(ctx, &waiting);
    }
    if (rc == ERR_OK)
        rc = decide(ctx, err);
    if (rc == ERR_OK)
        rc = mark_pending(ctx, err);
    if (rc == ERR_OK)
        rc = append_ready(ctx, err);
    /* Written: their lineages are not needed any more, and status.json is
     * built with the least held. */
    for (size_t i = 0; rc == ERR_OK && i < ctx->count; i++)
        if (ctx->list[i].ready)
            listed_untrace(ctx, &ctx->list[i]);
    if (rc == ERR_OK && !last) {
        char cursor[TIMEFMT_ISO8601_SIZE];
        error_info none;
        error_clear(&none);
        interim_cursor(ctx, cursor);
        rc = write_status(ctx, cursor, false, &none, err);
    }
    if (rc == ERR_OK)
        rc = commit_batch(ctx, err);
    if (rc == ERR_OK)
        drop_ready(ctx);
    return rc;
}

/* ---- Listing ---------------------------------------------------------------- */

static MUST_CHECK error_code on_page(void *user, const api_incident *incidents, size_t count, const api_page_info *page,
                                     error_info *err)
{
    report_ctx *ctx = user;
    ctx->sum.pages = page->page;
    for (size_t i = 0; i < count; i++) {
        ctx->sum.listed++;
        int64_t t;
        /* Seen, or older than the seen window reaches: a server that ignored
         * start_time would otherwise make us append them again. */
        if (state_seen_get(ctx->seen, incidents[i].id) ||
            (incidents[i].trigger_time && timefmt_parse_iso8601(incidents[i].trigger_time, &t) && t < ctx->oldest_s)) {
            ctx->sum.already_seen++;
            continue;
        }
        if (listed_already(ctx, incidents[i].id))
            continue; /* a page boundary shifted under us */
        error_code rc = add_listed(ctx, &incidents[i], err);
        if (rc != ERR_OK) {
            ctx->stopped = true;
            return rc;
        }
    }
    log_info("report: page %d: %" PRIu64 " incidents", page->page, (uint64_t)count);
    if (ctx->progress)
        fprintf(stderr, "\routpost: report: %d page%s, %" PRId64 " incidents listed, %zu to trace...", page->page,
                page->page == 1 ? "" : "s", ctx->sum.listed, ctx->count);
    return ERR_OK;
}

/* A page listed and freed, another to come: trace and write what is ready.
 * (The last page is written by finish(), with the cursor.) */
static MUST_CHECK error_code between_pages(void *user, error_info *err)
{
    report_ctx *ctx = user;
    error_code rc = process_batch(ctx, false, err);
    if (rc != ERR_OK)
        ctx->stopped = true;
    return rc;
}

static MUST_CHECK error_code list_incidents(report_ctx *ctx, error_info *err)
{
    api_incident_query query = {
        .filter = ctx->cfg->report.filter,
        .start_time = ctx->start_time,
        .page_size = ctx->cfg->report.page_size,
        .sort_by = REPORT_SORT,
        .between_pages = between_pages,
    };
    api_list_summary summary;
    error_code rc = api_incidents_list(ctx->http, &query, on_page, ctx, &summary, err);
    ctx->sum.listing_complete = rc == ERR_OK;
    return rc;
}

/* ---- The report ---------------------------------------------------------------- */

static void free_ctx(report_ctx *ctx)
{
    for (size_t i = 0; i < ctx->count; i++)
        listed_free(ctx, &ctx->list[i]);
    free(ctx->list);
    newest_free(ctx->keep);
    trace_run_free(ctx->trace);
    strmap_free(ctx->listed_ids);
    cJSON_Delete(ctx->status_doc);
    cJSON_Delete(ctx->still_failed);
}

/* The error the report returns: the listing's, else the incidents'. */
static void outcome_of(const report_ctx *ctx, const error_info *listing, error_info *outcome)
{
    error_clear(outcome);
    if (listing->code != ERR_OK) {
        *outcome = *listing;
        error_prefix(outcome, "listing incidents");
    } else if (ctx->sum.failed > 0) {
        error_set(outcome, ctx->first_failure.code,
                  "%" PRId64 " incidents could not be traced (first: %s); the next run retries them", ctx->sum.failed,
                  ctx->first_failure.message);
    }
}

/* The last batch, status.json with the new cursor, the commit. */
static MUST_CHECK error_code finish(report_ctx *ctx, const error_info *listing, error_info *err)
{
    error_code rc = process_batch(ctx, true, err);
    if (rc != ERR_OK)
        return rc;
    error_info outcome;
    outcome_of(ctx, listing, &outcome);
    int64_t cursor = next_cursor(ctx, ctx->sum.listing_complete);
    char cursor_text[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(cursor, cursor_text);
    rc = write_status(ctx, cursor_text, ctx->opts->write_last_run, &outcome, err);
    if (rc == ERR_OK)
        rc = commit(ctx, cursor, err);
    if (rc != ERR_OK)
        return rc;
    write_metrics(ctx->cfg, ctx->sum.stats.responses_429);
    if (outcome.code != ERR_OK)
        *err = outcome;
    return outcome.code;
}

/* Recovers a crashed run's batch; its items join this run's newest. */
static MUST_CHECK error_code recover(report_ctx *ctx, error_info *err)
{
    cJSON *recovered = cJSON_CreateArray();
    char *jsonl_path = config_state_path(ctx->cfg, ctx->cfg->report.jsonl_file);
    error_code rc = recovered && jsonl_path
                        ? report_recover(ctx->section, ctx->seen, jsonl_path, ctx->cfg->report.jsonl_keep, recovered,
                                         &ctx->sum.recovered, err)
                        : error_set(err, ERR_NOMEM, "out of memory");
    free(jsonl_path);
    if (rc == ERR_OK)
        rc = feeds_recover(ctx->cfg, recovered, err);
    const cJSON *item;
    cJSON_ArrayForEach(item, recovered)
    {
        if (rc == ERR_OK)
            rc = newest_add(ctx->keep, item, err);
    }
    cJSON_Delete(recovered);
    return rc;
}

error_code report_run(const config *cfg, http_client *http, state *s, const report_options *opts,
                      report_summary *summary, error_info *err)
{
    report_ctx ctx = {.cfg = cfg,
                      .http = http,
                      .s = s,
                      .opts = opts,
                      .now_s = opts->now_s ? opts->now_s : platform_time_utc_ms() / 1000,
                      .keep = newest_new(cfg->report.keep_incidents),
                      .progress = opts->progress};
    error_clear(&ctx.first_failure);
    ctx.section = state_section(s, "report");
    /* The set itself is the state's; the member keeps its place in the section. */
    ctx.seen = ctx.section && object_member(ctx.section, "seen") ? state_seen_of(s) : NULL;
    ctx.failed = ctx.section ? object_member(ctx.section, "failed") : NULL;
    ctx.trace = trace_run_new(http, cfg->report.details_batch, REPORT_EVENT_CACHE);
    ctx.still_failed = cJSON_CreateObject();
    ctx.listed_ids = strmap_new();
    if (!ctx.section || !ctx.seen || !ctx.failed || !ctx.trace || !ctx.still_failed || !ctx.listed_ids || !ctx.keep) {
        free_ctx(&ctx);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    read_previous(&ctx);
    error_code rc = recover(&ctx, err);
    if (rc != ERR_OK) {
        free_ctx(&ctx);
        return rc;
    }
    char start_time[TIMEFMT_ISO8601_SIZE];
    report_start_time(ctx.section, ctx.now_s, cfg->report.initial_lookback_s, start_time);
    ctx.start_time = start_time;
    timefmt_parse_iso8601(start_time, &ctx.oldest_s);
    ctx.oldest_s -= REPORT_SEEN_MARGIN_S;
    log_info("report: polling incidents since %s", start_time);

    error_info listing;
    error_clear(&listing);
    ERROR_IGNORE(list_incidents(&ctx, &listing)); /* listing carries it */
    if (ctx.stopped) {
        *err = listing; /* a batch could not be traced or written: the callback's error */
        rc = err->code;
        error_info ignored;
        ERROR_IGNORE(trace_drain(ctx.trace, &ignored)); /* no callback may outlive the run */
    } else {
        if (listing.code != ERR_OK)
            log_info("report: listing incidents stopped: %s", listing.message);
        if (ctx.progress)
            fprintf(stderr,
                    "\routpost: report: %d page%s, %" PRId64 " incidents listed, tracing %zu (paced by the "
                    "API's rate limit)...\n",
                    ctx.sum.pages, ctx.sum.pages == 1 ? "" : "s", ctx.sum.listed, ctx.count);
        rc = finish(&ctx, &listing, err);
    }

    trace_counts counts;
    trace_get_counts(ctx.trace, &counts);
    ctx.sum.lineage_calls = counts.lineage_calls;
    ctx.sum.details_calls = counts.details_calls;
    ctx.sum.distinct_events = counts.distinct_events;
    http_client_stats(http, &ctx.sum.stats);
    log_info("report: %" PRId64 " listed, %" PRId64 " new (%" PRId64 " traced, %" PRId64 " untraceable), %" PRId64
             " failed; %" PRIu64 " lineage and %" PRIu64 " event-details calls for %" PRIu64 " events (%" PRIu64
             " dropped from the cache); %" PRId64 " API calls",
             ctx.sum.listed, ctx.sum.new_count, ctx.sum.traced, ctx.sum.untraceable, ctx.sum.failed,
             (uint64_t)counts.lineage_calls, (uint64_t)counts.details_calls, (uint64_t)counts.distinct_events,
             (uint64_t)counts.evicted_events, ctx.sum.stats.api_calls);
    if (summary)
        *summary = ctx.sum;
    free_ctx(&ctx);
    return rc;
}
