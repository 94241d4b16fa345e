/*
 * incident.h — the `items` shape of PRODUCT.md section 5: one incident and
 * the events of its lineage as status.json and incidents.jsonl carry them,
 * and the views built over a list of items (newest-first merge, hosts).
 *
 * Pure data mapping: no I/O, no HTTP. The input views (api_incident,
 * api_event) already apply the API document's defaults (blocked false,
 * data_size 0, "...unspecified" enumerations as NULL); here absent values
 * become JSON null for the incident's own fields, and absent source /
 * destination members are omitted from events.
 */
#ifndef OUTPOST_INCIDENT_H
#define OUTPOST_INCIDENT_H

#include <stddef.h>

#include "net/api.h"
#include "base/error.h"

struct cJSON;

/* lineage.status values */
#define INCIDENT_TRACED "traced"
#define INCIDENT_UNTRACEABLE "untraceable"
#define INCIDENT_FAILED "failed"

/*
 * The item for inc, without its "lineage" member (incident_set_lineage adds
 * it): id, trigger_time, policy, dataset, user, risk_score, ai_severity,
 * blocked, created_by, in that order. Absent values are null. Returns a new
 * object the caller owns (cJSON_Delete), NULL on out of memory.
 */
struct cJSON *incident_item_new(const api_incident *inc);

/*
 * One event of a lineage: id, timestamp, kind, hostname, sensor_kind, user,
 * blocked, data_size (an exact 64-bit integer), then source and destination
 * only when the event has them, each with only the members present.
 * Returns a new object the caller owns, NULL on out of memory.
 */
struct cJSON *incident_event_new(const api_event *event);

/*
 * Adds (or replaces) item's "lineage": {status, start_event_id,
 * end_event_id, events, missing_event_ids}. start/end may be NULL (null).
 * events and missing are arrays taken over by the item (NULL: []); on
 * failure they are freed too. Returns ERR_OK or ERR_NOMEM.
 */
MUST_CHECK error_code incident_set_lineage(struct cJSON *item, const char *status, const char *start_event_id,
                                           const char *end_event_id, struct cJSON *events, struct cJSON *missing,
                                           error_info *err);

/*
 * Orders two items newest first: by trigger_time descending (null last),
 * then by id, so that the order is total and stable across runs.
 * Negative when a comes first.
 */
int incident_compare_newest(const struct cJSON *a, const struct cJSON *b);

/*
 * The newest keep items of current and previous together, newest first.
 * An id present in both keeps current's version. Neither input is changed;
 * *out is a new array the caller owns, of references to the items (not
 * copies: the items are most of status.json): free it before either input
 * changes.
 */
MUST_CHECK error_code incident_merge_items(const struct cJSON *current, const struct cJSON *previous, int keep,
                                           struct cJSON **out, error_info *err);

/*
 * The "hosts" array aggregated over items by the hostnames of their events:
 * {hostname, incidents (items touching the host), last_incident_at (latest
 * trigger_time, null when none had one), max_risk_score (null when none
 * had one)}. Sorted by incidents descending, then last_incident_at
 * descending, then hostname. *out is a new array the caller owns.
 */
MUST_CHECK error_code incident_hosts(const struct cJSON *items, struct cJSON **out, error_info *err);

/* incident_hosts one item at a time, for items not held together
 * (report/newest): begin (NULL when out of memory; end reports it), count
 * each item (what it keeps is copied: the item may go at once; a NULL item,
 * one that could not be had, makes end fail), end builds the array and
 * frees acc whatever happens. */
typedef struct incident_hosts_acc incident_hosts_acc;
incident_hosts_acc *incident_hosts_begin(void);
void incident_hosts_count(incident_hosts_acc *acc, const struct cJSON *item);
MUST_CHECK error_code incident_hosts_end(incident_hosts_acc *acc, struct cJSON **out, error_info *err);

/*
 * What a feed with one field per thing takes from an item's chain (OCSF,
 * CEF): the user (the item's, else the first event's that has one), and
 * from the first event that has each, the hostname, the destination's
 * domain and URL, and the source with a file name. Borrowed from item;
 * NULL when none has it.
 */
typedef struct incident_chain_firsts {
    const char *user, *host, *domain, *url;
    const struct cJSON *source; /* the event's "source" object */
} incident_chain_firsts;

void incident_chain_firsts_of(const struct cJSON *item, incident_chain_firsts *out);

/* The id of an item ("" when it has none). Borrowed. */
const char *incident_item_id(const struct cJSON *item);

#endif
