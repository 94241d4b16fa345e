/*
 * trace.c — lineage and event-details fetching for a whole run (see
 * trace.h). Layout: an event table (open addressing on the id) holding
 * what is known of each distinct event, with a reference count of the live
 * targets naming it and a least-recently-released list of the unreferenced
 * ones (the bounded cache); the slots of traced incidents with their
 * lineages (pointers to the interned events: each id is held once, in its
 * entry's own allocation); the batch of new ids waiting for an
 * event-details call; the completion callbacks that fill all three.
 */
#include "report/trace.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "net/api.h"
#include "report/incident.h"
#include "core/log.h"
#include "base/text.h"

typedef enum {
    EVENT_QUEUED,       /* waiting in the open batch */
    EVENT_REQUESTED,    /* in an event-details call */
    EVENT_FETCHED,      /* json holds the mapped event */
    EVENT_NOT_RETURNED, /* the call succeeded without it */
    EVENT_FAILED        /* its call failed after retries */
} event_state;

typedef struct event_entry {
    char *json; /* mapped event, printed; NULL until fetched */
    event_state state;
    size_t error_index;                /* into run->errors when failed */
    size_t refs;                       /* occurrences in the lineages of live targets */
    struct event_entry *older, *newer; /* in the cache list while refs == 0 */
    bool cached;                       /* on the cache list */
    char id[];                         /* event id (one allocation with the entry) */
} event_entry;

typedef struct target {
    bool live;               /* submitted and not yet released */
    char *start_id, *end_id; /* lineage ends */
    bool done;               /* lineage call finished */
    bool failed;             /* lineage call failed */
    error_info error;        /* why */
    event_entry **events;    /* lineage, chronological: the interned entries, which
                                stay while this target's references hold them */
    size_t event_count;
} target;

typedef struct batch {
    trace_run *run;
    event_entry **entries; /* the ids of this call */
    size_t count;
} batch;

struct trace_run {
    http_client *http;
    int batch_size;
    event_entry **table; /* open addressing; NULL slots are free */
    size_t table_cap, table_used;
    target *targets; /* slots; released ones are reused */
    size_t target_count, target_cap;
    size_t *free_slots; /* released slots, reused first */
    size_t free_count;
    event_entry *cache_oldest, *cache_newest; /* unreferenced, finished events */
    size_t cache_count, cache_max;
    event_entry **open; /* ids waiting for a details call */
    size_t open_count;
    error_info *errors; /* details failures, referenced by entries */
    size_t error_count;
    error_info fatal; /* set when the run cannot go on (out of memory) */
    trace_counts counts;
};

/* ---- Event table ------------------------------------------------------------ */

static uint64_t hash_id(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static event_entry **slot_for(event_entry **table, size_t cap, const char *id)
{
    size_t i = (size_t)(hash_id(id) & (cap - 1));
    while (table[i] && strcmp(table[i]->id, id) != 0)
        i = (i + 1) & (cap - 1);
    return &table[i];
}

static bool table_grow(trace_run *run)
{
    size_t cap = run->table_cap ? run->table_cap * 2 : 1024;
    event_entry **table = calloc(cap, sizeof *table);
    if (!table)
        return false;
    for (size_t i = 0; i < run->table_cap; i++)
        if (run->table[i])
            *slot_for(table, cap, run->table[i]->id) = run->table[i];
    free(run->table);
    run->table = table;
    run->table_cap = cap;
    return true;
}

static event_entry *table_find(const trace_run *run, const char *id)
{
    return run->table_cap ? *slot_for(run->table, run->table_cap, id) : NULL;
}

/* Finds or adds id; *added tells which. NULL on out of memory. */
static event_entry *table_intern(trace_run *run, const char *id, bool *added)
{
    *added = false;
    event_entry *found = table_find(run, id);
    if (found)
        return found;
    if ((run->table_used + 1) * 2 > run->table_cap && !table_grow(run))
        return NULL;
    size_t len = strlen(id);
    event_entry *e = calloc(1, sizeof *e + len + 1);
    if (!e)
        return NULL;
    memcpy(e->id, id, len + 1);
    *slot_for(run->table, run->table_cap, id) = e;
    run->table_used++;
    *added = true;
    return e;
}

/* Removes e from the table (backward-shift deletion keeps probe chains whole). */
static void table_remove(trace_run *run, const event_entry *e)
{
    size_t mask = run->table_cap - 1;
    event_entry **slot = slot_for(run->table, run->table_cap, e->id);
    size_t hole = (size_t)(slot - run->table);
    run->table[hole] = NULL;
    for (size_t i = (hole + 1) & mask; run->table[i]; i = (i + 1) & mask) {
        size_t home = (size_t)(hash_id(run->table[i]->id) & mask);
        /* Move it into the hole unless its home lies cyclically in (hole, i]. */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            run->table[hole] = run->table[i];
            run->table[i] = NULL;
            hole = i;
        }
    }
    run->table_used--;
}

static void entry_free(event_entry *e)
{
    free(e->json);
    free(e);
}

/* ---- The bounded cache of unreferenced events -------------------------------- */

static void cache_unlink(trace_run *run, event_entry *e)
{
    if (!e->cached)
        return;
    if (e->older)
        e->older->newer = e->newer;
    else
        run->cache_oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        run->cache_newest = e->older;
    e->older = e->newer = NULL;
    e->cached = false;
    run->cache_count--;
}

/* A finished event no live target names any more: kept for later pages
 * until the cache is full, then the least recently released goes. */
static void cache_put(trace_run *run, event_entry *e)
{
    e->older = run->cache_newest;
    e->newer = NULL;
    if (run->cache_newest)
        run->cache_newest->newer = e;
    else
        run->cache_oldest = e;
    run->cache_newest = e;
    e->cached = true;
    run->cache_count++;
    while (run->cache_count > run->cache_max) {
        event_entry *old = run->cache_oldest;
        cache_unlink(run, old);
        table_remove(run, old);
        entry_free(old);
        run->counts.evicted_events++;
    }
}

/* ---- Event-details ---------------------------------------------------------- */

static void set_fatal(trace_run *run, const error_info *err)
{
    if (run->fatal.code == ERR_OK)
        run->fatal = *err;
}

static void fail_batch(batch *b, const error_info *err)
{
    trace_run *run = b->run;
    error_info *grown = realloc(run->errors, (run->error_count + 1) * sizeof *grown);
    if (!grown) {
        error_info nomem;
        error_set(&nomem, ERR_NOMEM, "out of memory");
        set_fatal(run, &nomem);
        return;
    }
    run->errors = grown;
    run->errors[run->error_count] = *err;
    for (size_t i = 0; i < b->count; i++) {
        b->entries[i]->state = EVENT_FAILED;
        b->entries[i]->error_index = run->error_count;
    }
    run->error_count++;
}

static void on_details(void *user, error_code code, const error_info *err, const api_event *events, size_t count)
{
    batch *b = user;
    trace_run *run = b->run;
    if (code != ERR_OK) {
        log_info("event-details failed for %" PRIu64 " events: %s", (uint64_t)b->count, err->message);
        fail_batch(b, err);
    } else {
        for (size_t i = 0; i < count; i++) {
            event_entry *e = table_find(run, events[i].id);
            if (!e || e->state != EVENT_REQUESTED)
                continue; /* not asked for in this call, or a duplicate */
            cJSON *mapped = incident_event_new(&events[i]);
            e->json = mapped ? cJSON_PrintUnformatted(mapped) : NULL;
            cJSON_Delete(mapped);
            if (!e->json) {
                error_info nomem;
                error_set(&nomem, ERR_NOMEM, "out of memory while mapping events");
                set_fatal(run, &nomem);
                continue;
            }
            e->state = EVENT_FETCHED;
        }
        for (size_t i = 0; i < b->count; i++)
            if (b->entries[i]->state == EVENT_REQUESTED)
                b->entries[i]->state = EVENT_NOT_RETURNED;
    }
    free(b->entries);
    free(b);
}

/* Sends the open batch as one event-details call. */
static void flush_open(trace_run *run)
{
    if (!run->open_count)
        return;
    batch *b = calloc(1, sizeof *b);
    const char **ids = malloc(run->open_count * sizeof *ids);
    error_info err;
    if (!b || !ids) {
        error_set(&err, ERR_NOMEM, "out of memory");
        goto fail;
    }
    b->run = run;
    b->entries = run->open;
    b->count = run->open_count;
    for (size_t i = 0; i < b->count; i++) {
        ids[i] = b->entries[i]->id;
        b->entries[i]->state = EVENT_REQUESTED;
    }
    run->open = NULL;
    run->open_count = 0;
    if (api_event_details_submit(run->http, ids, b->count, API_DETAILS_POST, on_details, b, &err) != ERR_OK) {
        fail_batch(b, &err);
        free(b->entries);
        free(b);
        free(ids);
        set_fatal(run, &err);
        return;
    }
    run->counts.details_calls++;
    free(ids);
    return;
fail:
    free(b);
    free(ids);
    set_fatal(run, &err);
}

static bool queue_event(trace_run *run, event_entry *e)
{
    if (!run->open) {
        run->open = malloc((size_t)run->batch_size * sizeof *run->open);
        if (!run->open)
            return false;
    }
    e->state = EVENT_QUEUED;
    run->open[run->open_count++] = e;
    if (run->open_count == (size_t)run->batch_size)
        flush_open(run);
    return true;
}

/* ---- Event-lineage ------------------------------------------------------------- */

typedef struct lineage_ctx {
    trace_run *run;
    size_t index;
} lineage_ctx;

static bool keep_lineage(trace_run *run, target *t, const char *const *ids, size_t count)
{
    t->events = calloc(count ? count : 1, sizeof *t->events);
    if (!t->events)
        return false;
    for (size_t i = 0; i < count; i++) {
        bool added;
        event_entry *e = table_intern(run, ids[i], &added);
        if (!e)
            return false;
        cache_unlink(run, e);
        e->refs++;
        t->events[t->event_count++] = e;
        if (added) {
            run->counts.distinct_events++;
            if (!queue_event(run, e))
                return false;
        }
    }
    return true;
}

static void on_lineage(void *user, error_code code, const error_info *err, const char *const *ids, size_t count)
{
    lineage_ctx *ctx = user;
    trace_run *run = ctx->run;
    target *t = &run->targets[ctx->index];
    free(ctx);
    t->done = true;
    if (code != ERR_OK) {
        log_info("event-lineage failed (%s → %s): %s", t->start_id, t->end_id, err->message);
        t->failed = true;
        t->error = *err;
        return;
    }
    if (!keep_lineage(run, t, ids, count)) {
        error_info nomem;
        error_set(&nomem, ERR_NOMEM, "out of memory while tracing incidents");
        set_fatal(run, &nomem);
    }
}

/* ---- Public ----------------------------------------------------------------- */

trace_run *trace_run_new(http_client *http, int batch_size, size_t cache_events)
{
    trace_run *run = calloc(1, sizeof *run);
    if (!run)
        return NULL;
    run->http = http;
    run->batch_size = batch_size < 1 ? 1 : batch_size;
    run->cache_max = cache_events;
    error_clear(&run->fatal);
    return run;
}

void trace_run_free(trace_run *run)
{
    if (!run)
        return;
    for (size_t i = 0; i < run->table_cap; i++)
        if (run->table[i])
            entry_free(run->table[i]);
    free(run->table);
    for (size_t i = 0; i < run->target_count; i++) {
        free(run->targets[i].start_id);
        free(run->targets[i].end_id);
        free(run->targets[i].events);
    }
    free(run->targets);
    free(run->free_slots);
    free(run->open);
    free(run->errors);
    free(run);
}

/* A free target slot (reused or new), or false on out of memory. */
static bool take_slot(trace_run *run, size_t *index)
{
    if (run->free_count) {
        *index = run->free_slots[--run->free_count];
        return true;
    }
    if (run->target_count == run->target_cap) {
        size_t cap = run->target_cap ? run->target_cap * 2 : 64;
        target *grown = realloc(run->targets, cap * sizeof *grown);
        if (!grown)
            return false;
        run->targets = grown;
        run->target_cap = cap;
        size_t *slots = realloc(run->free_slots, cap * sizeof *slots);
        if (!slots)
            return false;
        run->free_slots = slots;
    }
    run->targets[run->target_count] = (target){0};
    *index = run->target_count++;
    return true;
}

static void give_slot(trace_run *run, size_t index)
{
    target *t = &run->targets[index];
    free(t->start_id);
    free(t->end_id);
    free(t->events);
    *t = (target){0};
    run->free_slots[run->free_count++] = index; /* room: free_slots grows with targets */
}

error_code trace_submit(trace_run *run, const char *start_event_id, const char *end_event_id, size_t *index,
                        error_info *err)
{
    size_t slot;
    if (!take_slot(run, &slot))
        return error_set(err, ERR_NOMEM, "out of memory");
    target *t = &run->targets[slot];
    lineage_ctx *ctx = malloc(sizeof *ctx);
    t->start_id = text_dup(start_event_id);
    t->end_id = text_dup(end_event_id);
    if (!ctx || !t->start_id || !t->end_id) {
        free(ctx);
        give_slot(run, slot);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    *ctx = (lineage_ctx){run, slot};
    /* Live before the call: the callback may already run inside it. */
    t->live = true;
    error_code rc = api_event_lineage_submit(run->http, start_event_id, end_event_id, on_lineage, ctx, err);
    if (rc != ERR_OK) {
        free(ctx);
        give_slot(run, slot);
        return rc;
    }
    run->counts.lineage_calls++;
    *index = slot;
    return ERR_OK;
}

error_code trace_drain(trace_run *run, error_info *err)
{
    error_code rc = http_run(run->http, 0, err);
    if (rc != ERR_OK)
        return rc;
    if (run->fatal.code != ERR_OK) {
        *err = run->fatal;
        return err->code;
    }
    return ERR_OK;
}

bool trace_ready(const trace_run *run, size_t index)
{
    const target *t = &run->targets[index];
    if (!t->done)
        return false;
    for (size_t i = 0; i < t->event_count; i++) {
        const event_entry *e = t->events[i];
        if (e->state == EVENT_QUEUED || e->state == EVENT_REQUESTED)
            return false;
    }
    return true;
}

size_t trace_open_events(const trace_run *run)
{
    return run->open_count;
}

void trace_release(trace_run *run, size_t index)
{
    target *t = &run->targets[index];
    if (!t->live)
        return;
    for (size_t i = 0; i < t->event_count; i++) {
        event_entry *e = t->events[i];
        if (e->refs == 0 || --e->refs > 0)
            continue;
        /* Still waiting for its details: the answer fills it; it is freed with the run. */
        if (e->state != EVENT_QUEUED && e->state != EVENT_REQUESTED)
            cache_put(run, e);
    }
    give_slot(run, index);
}

error_code trace_finish(trace_run *run, error_info *err)
{
    error_code rc = http_run(run->http, 0, err);
    if (rc != ERR_OK)
        return rc;
    flush_open(run);
    return trace_drain(run, err);
}

static MUST_CHECK error_code build_events(trace_run *run, const target *t, trace_outcome *out)
{
    out->events = cJSON_CreateArray();
    out->missing = cJSON_CreateArray();
    if (!out->events || !out->missing)
        return ERR_NOMEM;
    for (size_t i = 0; i < t->event_count; i++) {
        const event_entry *e = t->events[i];
        if (e->state == EVENT_FAILED) {
            out->status = INCIDENT_FAILED;
            out->error = run->errors[e->error_index];
            return ERR_OK;
        }
        cJSON *item = e->state == EVENT_FETCHED ? cJSON_Parse(e->json) : cJSON_CreateString(e->id);
        cJSON *into = e->state == EVENT_FETCHED ? out->events : out->missing;
        if (!item || !cJSON_AddItemToArray(into, item)) {
            cJSON_Delete(item);
            return ERR_NOMEM;
        }
    }
    return ERR_OK;
}

error_code trace_status(const trace_run *run, size_t index, const char **status, error_info *why, error_info *err)
{
    *status = INCIDENT_TRACED;
    error_clear(why);
    const target *t = &run->targets[index];
    if (!t->live)
        return error_set(err, ERR_INTERNAL, "trace_status on a released incident");
    if (t->failed || !t->done) {
        *status = INCIDENT_FAILED;
        if (t->failed)
            *why = t->error;
        else
            error_set(why, ERR_INTERNAL, "event-lineage never completed");
        return ERR_OK;
    }
    /* As build_events decides it: the first failed event in lineage order. */
    for (size_t i = 0; i < t->event_count; i++) {
        const event_entry *e = t->events[i];
        if (e->state == EVENT_FAILED) {
            *status = INCIDENT_FAILED;
            *why = run->errors[e->error_index];
            return ERR_OK;
        }
    }
    return ERR_OK;
}

error_code trace_result(trace_run *run, size_t index, trace_outcome *out, error_info *err)
{
    *out = (trace_outcome){.status = INCIDENT_TRACED};
    error_clear(&out->error);
    const target *t = &run->targets[index];
    if (!t->live)
        return error_set(err, ERR_INTERNAL, "trace_result on a released incident");
    if (t->failed || !t->done) {
        out->status = INCIDENT_FAILED;
        if (t->failed)
            out->error = t->error;
        else
            error_set(&out->error, ERR_INTERNAL, "event-lineage never completed");
        return ERR_OK;
    }
    error_code rc = build_events(run, t, out);
    if (rc != ERR_OK || strcmp(out->status, INCIDENT_FAILED) == 0) {
        cJSON_Delete(out->events);
        cJSON_Delete(out->missing);
        out->events = out->missing = NULL;
    }
    if (rc != ERR_OK)
        return error_set(err, rc, "out of memory while building the report");
    return ERR_OK;
}

void trace_get_counts(const trace_run *run, trace_counts *counts)
{
    *counts = run->counts;
}
