/*
 * http_int.h — the part of http.h that only net/'s engine sees: the
 * transfer (xfer), its stream context and the client's state, shared by the
 * files of the engine. Callers outside net/ include http.h.
 */
#ifndef OUTPOST_NET_HTTP_INT_H
#define OUTPOST_NET_HTTP_INT_H

#include <curl/curl.h>

#include "base/dynbuf.h"
#include "net/http.h"
#include "net/http_fake.h"
#include "net/ratelimit.h"
#include "net/tls.h"
#include "net/token.h"

/* ---- Response headers we read ------------------------------------------------- */

enum {
    H_RETRY_AFTER,
    H_RL_REMAINING,
    H_RL_RESET,
    H_LOCATION,
    H_CONTENT_LENGTH,
    H_CONTENT_RANGE,
    H_CONTENT_TYPE,
    H_ETAG,
    H_LAST_MODIFIED,
    H_CONTENT_DISPOSITION,
    H_DATE,
    H__COUNT
};

/* ---- Xfers ---------------------------------------------------------------------- */

typedef enum {
    XFER_JSON,  /* submitted JSON request */
    XFER_TOKEN, /* the client's own token exchange */
    XFER_STREAM /* http_stream_get, http_url_get */
} xfer_kind;

typedef struct stream_ctx stream_ctx;

typedef struct xfer {
    struct xfer *next;     /* waiting list link */
    struct xfer *run_next; /* running list link */
    struct xfer *run_prev;
    http_client *client;
    xfer_kind kind;
    http_method method;
    char *route;    /* as submitted, query included */
    char *endpoint; /* route without the query: the pacing key */
    char *label;    /* name in errors and the trace */
    char *body;     /* POST body (the token exchange's holds the key) */
    size_t body_len;
    http_done_fn done;
    void *user;
    stream_ctx *stream; /* XFER_STREAM only */
    bool direct;        /* a URL GET: no token, no pacing, one attempt, mirror redirect rules */

    int attempts;           /* attempts started, redirect hops excluded */
    int auth_renewals;      /* 401s answered by a renewal */
    int64_t waited_ms;      /* time spent waiting to retry */
    int64_t not_before;     /* monotonic ms before which it must not start */
    int64_t retry_after_ms; /* last Retry-After seen, -1 none */

    /* The current attempt. */
    CURL *easy;
    struct curl_slist *request_headers;
    bool running; /* in the multi handle / being faked */
    ratelimit_ticket ticket;
    int64_t started_ms;
    uint64_t token_generation; /* token sent, 0 if none */
    char *url;                 /* this attempt's URL (redirects change it) */
    bool same_origin;          /* url is on base_url's scheme, host and port */
    int redirects;
    bool hop_pending;                      /* the next start follows a redirect (not a retry) */
    long status;                           /* status of the response being read */
    bool headers_done;                     /* blank line after a final status seen */
    bool final_ended;                      /* the final response's headers ended: later header
                                              lines are trailers, a later status line a second
                                              response */
    bool second_response;                  /* a second final response came on this attempt */
    char *headers[H__COUNT];               /* values of this response's headers */
    char *kept[HTTP_KEEP_HEADERS_MAX];     /* values of the stream's keep_headers in this response */
    char *hop_kept[HTTP_KEEP_HEADERS_MAX]; /* the same from the last redirect hop that carried them */
    dynbuf response;                       /* JSON body, or a failed answer's start; secret for the token exchange */
    bool too_large;                        /* body went over the cap */
    bool stopped;                          /* a stream callback said stop */
    bool delivering;                       /* stream body goes to on_data */
    bool out_of_memory;
    bool body_capped;    /* a body not handed on reached HTTP_ERROR_BODY_KEEP: stopped there */
    int64_t deadline_ms; /* on the client's clock: past it the attempt is aborted */
    bool deadline_hit;
    int64_t paced_from_ms; /* the receive cap: when the body started, */
    int64_t paced_bytes;   /* how much of it was taken since, */
    int64_t resume_at_ms;  /* and, while paused, when to take more */
    bool paused;
    char errbuf[CURL_ERROR_SIZE];
} xfer;

struct stream_ctx {
    const http_stream_callbacks *callbacks;
    const char *range; /* request headers, borrowed from the caller's request */
    const char *if_range;
    const char *if_none_match;
    const char *if_modified_since;
    const char *const *keep_headers; /* further headers the caller reads, borrowed; keep_count of them */
    size_t keep_count;
    int64_t max_bytes_per_second;
    int64_t expected_bytes; /* > 0: the deadline grows by it at min_speed */
    bool scale_deadline;    /* the deadline grows by the announced length (the API's installer) */
    http_stream_result result;
    bool finished;
    error_code code;
    error_info err;
};

struct http_client {
    char *base_url; /* without trailing slash */
    char *origin;   /* "https://host:443" of base_url */
    config_http cfg;
    char *proxy;
    tls_setup *tls;              /* CA, options, kept session (tls.h); NULL with the fake transport */
    const http_service *service; /* what base_url's routes need beyond HTTP (static); NULL: URL GETs only */
    char *secret;                /* the service's secret ("" without a service), wiped on free */
    token_state token;
    xfer *token_xfer; /* exchange queued or running, NULL if none */

    const clock_source *clock;
    int verbosity;
    FILE *trace;
    http_fake_fn fake;
    void *fake_ctx;

    bool curl_initialised; /* curl_global_init done: undone on free */
    CURLM *multi;
    CURLSH *share;
    CURL *idle[8]; /* easy handles kept for reuse */
    int idle_count;
    ratelimit *rl;
    bool have_offset;         /* server_offset_ms is known */
    int64_t server_offset_ms; /* lower bound of (server clock - our clock), from Date */

    xfer *waiting_head, *waiting_tail;
    xfer *running_head; /* attempts in flight */
    size_t running;     /* how many */
    size_t pending;     /* submitted JSON xfers not yet completed */
    bool driving;       /* inside drive(): no nested drive */
    http_stats stats;
};

typedef enum {
    OUTCOME_RESPONSE,   /* an HTTP answer came (maybe cut short by us) */
    OUTCOME_NETWORK,    /* connect failure, reset, timeout, partial body: retryable */
    OUTCOME_TLS,        /* certificate, host name or pin: final */
    OUTCOME_CONFIG,     /* unusable URL or protocol */
    OUTCOME_PROXY_AUTH, /* the proxy refused the CONNECT with 407: final */
    OUTCOME_RESOLVE,    /* the host name does not resolve: final (a wrong URL) */
    OUTCOME_NOT_FOUND,  /* a file:// path that does not exist: final */
    OUTCOME_DEADLINE,   /* the overall deadline passed: final */
    OUTCOME_OTHER,      /* anything else libcurl reports: final */
    OUTCOME_NOMEM
} attempt_outcome;

#endif
