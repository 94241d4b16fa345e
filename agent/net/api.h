/*
 * api.h — the Security Platform API v2.0 routes as outpost uses them, over
 * http.h: the client of the platform (its token route, the envelope's
 * errors in messages), request builders for the six routes, the response
 * envelope, and typed, defaulted views of incidents and events.
 *
 * Envelope (API document 2.1): `type` is ignored (it varies between
 * deployments); `size`, `resources`, `errors` and `page_response` are
 * type-checked when present. `resources` must be an array on every route
 * that returns one. A missing or mistyped field is ERR_PROTOCOL with the
 * endpoint and the field named: "event-details: field `resources` is not an
 * array", "incidents/list: resources[3].risk_score is not a number".
 *
 * Views (api_incident, api_event) borrow from the parsed JSON: their strings
 * and cJSON pointers are valid as long as the envelope (or, in a callback,
 * the callback) lives. They apply the document's defaults (blocked false,
 * data_size 0 as a 64-bit integer), read absent or null members as NULL,
 * treat enumeration values ending in "unspecified" (protobuf zero values,
 * any case: "SEVERITY_UNSPECIFIED") as NULL, and ignore unknown fields.
 *
 * Error codes are those of http.h, plus ERR_PROTOCOL for answers that do not
 * fit the document. Every function fills *err with a line naming the route.
 */
#ifndef OUTPOST_API_H
#define OUTPOST_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "net/http.h"

struct cJSON;

/* Route paths (appended to base_url). */
#define API_ROUTE_TOKEN "/v2/auth/token/access" /* the token exchange (token.h) */
#define API_ROUTE_INCIDENTS "/v2/incidents/list"
#define API_ROUTE_LINEAGE "/v2/event-lineage"
#define API_ROUTE_DETAILS "/v2/event-details"
/* The installer route is "/v2/installer/<platform>/latest". */

/* The installer route's answer names the version it serves. */
#define API_HEADER_INSTALLER_VERSION "X-Installer-Version"

/* ---- Client ------------------------------------------------------------------ */

/*
 * The run's client of the platform: http_client_new with the API's service
 * (the token exchanged from api_key at API_ROUTE_TOKEN, the envelope's first
 * error quoted in failure messages, a 404 pointing at `base_url`). api_key
 * is copied; the caller may wipe and free it at once. Fails with ERR_CONFIG
 * for an empty key or an unusable base_url, as http_client_new otherwise.
 */
MUST_CHECK error_code api_client_new(const config *cfg, const char *api_key, const http_options *opts,
                                     http_client **client, error_info *err);

/* ---- Envelope ------------------------------------------------------------- */

typedef struct api_envelope {
    struct cJSON *root;            /* the parsed answer; owned (api_envelope_free) */
    const struct cJSON *resources; /* array; NULL when null (read as empty) or absent
                                      (an error when required) */
    const struct cJSON *errors;    /* array of Error objects, or NULL when absent */
    int64_t size;                  /* `size`, -1 when absent */
    bool has_page_response;        /* page_response present (and an object) */
    const char *next_id;           /* page_response.next_id; NULL when absent, null or "" */
    int64_t total;                 /* page_response.total, -1 when absent */
} api_envelope;

/*
 * Parses body (len bytes, need not be NUL-terminated) as an envelope.
 * Bytes that are not valid UTF-8 are read as U+FFFD (JSON is UTF-8, and
 * what outpost writes from the answer must be too).
 * endpoint names the route in errors ("incidents/list"). With
 * require_resources, an absent `resources` is an error; a present one must
 * be an array either way. Numbers must be integers where the document says
 * integer. On success *env owns the tree (api_envelope_free); on failure
 * *env is zeroed and nothing needs freeing.
 */
MUST_CHECK error_code api_envelope_parse(const char *endpoint, const char *body, size_t len, bool require_resources,
                                         api_envelope *env, error_info *err);

/* Frees the tree; *env is zeroed. NULL and zeroed envelopes are ignored. */
void api_envelope_free(api_envelope *env);

/*
 * The first error's "code: message" from an envelope-shaped body (for error
 * messages), written to buf; "" when there is none or body is not JSON.
 * Never fails.
 */
void api_envelope_first_error(const char *body, size_t len, char *buf, size_t size);

/* ---- Views -------------------------------------------------------------------- */

/* One incident of the incident list (API document 2.4). Strings borrowed. */
typedef struct api_incident {
    const char *id;             /* never NULL or empty */
    const char *user;           /* user.local_username, or NULL */
    const char *policy;         /* policy.name, or NULL */
    const char *dataset;        /* dataset.name, or NULL */
    const char *trigger_time;   /* ISO 8601, or NULL */
    double risk_score;          /* 0 when absent */
    bool has_risk_score;        /* risk_score was present */
    bool blocked;               /* false when absent */
    const char *ai_severity;    /* NULL when absent or "...unspecified" */
    const char *created_by;     /* NULL when absent or "...unspecified" */
    const char *start_event_id; /* event_lineage_id.start_event_id; NULL when absent, null or "" */
    const char *end_event_id;   /* event_lineage_id.end_event_id; same */
    const struct cJSON *json;   /* the whole incident object */
} api_incident;

/* One event detail record (API document 2.5). Strings borrowed. */
typedef struct api_event {
    const char *id;                  /* never NULL or empty */
    const char *timestamp;           /* ISO 8601, or NULL */
    const char *kind;                /* action.kind; NULL when absent or "...unspecified" */
    bool blocked;                    /* action.blocked; false when absent */
    int64_t data_size;               /* action.data_size; 0 when absent (a decimal string
                                        is accepted too: protobuf's int64 JSON form) */
    const char *hostname;            /* action.hostname */
    const char *sensor_kind;         /* action.sensor_kind; NULL when absent or "...unspecified" */
    const char *user;                /* user.local_username */
    const char *user_id;             /* user.id */
    bool has_source;                 /* `source` present (an object) */
    const char *source_file;         /* source.file.name */
    const char *source_path;         /* source.local_file.path */
    const struct cJSON *source_tags; /* source.content.tags: array of strings, or NULL when absent */
    bool has_destination;            /* `destination` present (an object) */
    const char *destination_file;    /* destination.file.name */
    const char *destination_path;    /* destination.local_file.path */
    const char *destination_domain;  /* destination.web.domain */
    const char *destination_url;     /* destination.web.url */
    const struct cJSON *email_to;    /* destination.email.to: array of strings, or NULL when absent */
    const char *email_subject;       /* destination.email.subject */
    const struct cJSON *json;        /* the whole event object */
} api_event;

/*
 * Fills *incident from one element of the incident list's `resources`.
 * endpoint and index name the element in errors ("incidents/list:
 * resources[3].blocked is not a boolean"). Absent or null members are NULL /
 * defaults; a member of the wrong type is ERR_PROTOCOL; a missing or empty
 * `id` is ERR_PROTOCOL.
 */
MUST_CHECK error_code api_incident_view(const char *endpoint, size_t index, const struct cJSON *object,
                                        api_incident *incident, error_info *err);

/* Same for one element of event-details' `resources`. */
MUST_CHECK error_code api_event_view(const char *endpoint, size_t index, const struct cJSON *object, api_event *event,
                                     error_info *err);

/* Whether an enumeration value means "no value" (ends in "unspecified", any case). */
bool api_enum_unspecified(const char *value);

/* ---- Incident list (paged) --------------------------------------------------- */

typedef struct api_incident_query {
    const struct cJSON *filter; /* report.filter, passed through; borrowed; may be NULL */
    const char *start_time;     /* set as filter.start_time (overrides the filter's); NULL: not set */
    int page_size;              /* page_request.size, 1..1000; 0: not sent (server default 50) */
    const char *sort_by;        /* page_request.sort_by ("trigger_time asc"); NULL: not sent */
    bool include_ai_summaries;  /* sent only when true */
    /* Called with on_page's user after every page but the last, once the
     * page's answer is freed and before the next one is requested, so that
     * the caller can do its work with the least memory held; NULL: none.
     * Anything but ERR_OK stops paging, like on_page. */
    error_code (*between_pages)(void *user, error_info *err);
} api_incident_query;

typedef struct api_page_info {
    int page;            /* 1 for the first page */
    int64_t total;       /* page_response.total, -1 when absent */
    const char *next_id; /* token of the next page, NULL on the last page */
} api_page_info;

/*
 * Called once per page with its incidents (borrowed: valid during the call).
 * Return ERR_OK to go on; anything else stops paging and is returned by
 * api_incidents_list with the callback's *err.
 */
typedef error_code (*api_incident_page_fn)(void *user, const api_incident *incidents, size_t count,
                                           const api_page_info *page, error_info *err);

typedef struct api_list_summary {
    int pages;         /* pages fetched */
    int64_t incidents; /* incidents handed to on_page */
    int64_t total;     /* last page_response.total seen, -1 if none */
} api_list_summary;

/*
 * Lists incidents: POST /v2/incidents/list with filter and page_request,
 * then follows page_response.next_id, one page at a time (only one page is
 * held in memory). Paging ends on an absent, null or empty next_id. A
 * next_id the server already gave in this listing would loop forever: that
 * is ERR_PROTOCOL ("incidents/list: the server repeated page token ...;
 * stopping"), so that a caller never advances its cursor past incidents it
 * did not see. Every page's incidents are validated (api_incident_view)
 * before on_page sees any of them. summary may be NULL.
 */
MUST_CHECK error_code api_incidents_list(http_client *http, const api_incident_query *query,
                                         api_incident_page_fn on_page, void *user, api_list_summary *summary,
                                         error_info *err);

/* ---- Event lineage --------------------------------------------------------- */

/*
 * Completion of an event-lineage call: on ERR_OK ids holds count event
 * identifiers in chronological order (borrowed: valid during the call);
 * otherwise err says why (never NULL) and ids is NULL.
 */
typedef void (*api_lineage_fn)(void *user, error_code code, const error_info *err, const char *const *ids,
                               size_t count);

/*
 * Queues POST /v2/event-lineage {start_event_id, end_event_id}; done runs
 * from http_run (or any call that drives the client). Both ids must be
 * non-empty (ERR_INTERNAL otherwise, and done is not called). `resources`
 * must be an array of non-empty strings.
 */
MUST_CHECK error_code api_event_lineage_submit(http_client *http, const char *start_event_id, const char *end_event_id,
                                               api_lineage_fn done, void *user, error_info *err);

/*
 * The same, synchronous. On success *ids is a malloc'd array of *count
 * malloc'd strings: free it with api_strings_free.
 */
MUST_CHECK error_code api_event_lineage(http_client *http, const char *start_event_id, const char *end_event_id,
                                        char ***ids, size_t *count, error_info *err);

void api_strings_free(char **strings, size_t count);

/* ---- Event details ------------------------------------------------------------ */

/*
 * Completion of an event-details call: on ERR_OK events holds the count
 * records the server returned (borrowed: valid during the call; in the
 * server's order; ids it did not return are simply absent); otherwise err
 * says why and events is NULL.
 */
typedef void (*api_details_fn)(void *user, error_code code, const error_info *err, const api_event *events,
                               size_t count);

typedef enum {
    API_DETAILS_POST = 0, /* POST /v2/event-details {"ids": [...]} (default) */
    API_DETAILS_GET       /* GET /v2/event-details?ids=a,b&include_content=false */
} api_details_method;

/*
 * Queues one event-details call for ids[0..count) (1 <= count; the caller
 * batches: the document's example uses 50 per call). ids are copied.
 */
MUST_CHECK error_code api_event_details_submit(http_client *http, const char *const *ids, size_t count,
                                               api_details_method method, api_details_fn done, void *user,
                                               error_info *err);

/* A synchronous event-details call's result: events borrow from env. */
typedef struct api_details {
    api_envelope env;  /* owns the JSON */
    api_event *events; /* malloc'd array of count views */
    size_t count;
} api_details;

/* The same, synchronous; free *details with api_details_free (also on failure). */
MUST_CHECK error_code api_event_details(http_client *http, const char *const *ids, size_t count,
                                        api_details_method method, api_details *details, error_info *err);
void api_details_free(api_details *details);

/* ---- Installer ---------------------------------------------------------------- */

typedef struct api_installer_request {
    const char *platform; /* "windows" (config installer.platform) */
    const char *range;    /* as http_stream_request */
    const char *if_range;
    int64_t max_bytes_per_second;
} api_installer_request;

/*
 * GET /v2/installer/<platform>/latest, streamed: see http_stream_get for the
 * redirect, retry and callback rules. A version check passes an on_headers
 * that returns HTTP_STREAM_STOP; the headers carry status, Content-Length,
 * Content-Range, ETag, Last-Modified, Content-Disposition and
 * X-Installer-Version (api_installer_version: from whichever hop carried
 * it). platform must be [A-Za-z0-9_-]+ (ERR_CONFIG otherwise).
 */
MUST_CHECK error_code api_installer_get(http_client *http, const api_installer_request *request,
                                        const http_stream_callbacks *callbacks, http_stream_result *result,
                                        error_info *err);

/* X-Installer-Version of an answer of api_installer_get (the final
 * response's, or the last redirect hop's that carried one), borrowed like
 * h; NULL when none carried it. */
const char *api_installer_version(const http_stream_headers *h);

#endif
