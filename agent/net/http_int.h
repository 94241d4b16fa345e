/*
 * http_int.h — the transfer engine's own part, shared by its files and
 * seen by nothing else: callers include http.h, and scripts/check-layering
 * refuses this header outside net/. The engine is split by job, as curl's
 * lib/ is:
 *
 *   http.c      the client, its queues, the token exchange, the drive loop
 *               and the public entry points
 *   response.c  reading an answer: status line, headers, body and its caps,
 *               what a stream's caller is handed (ranges, conditional GET)
 *   outcome.c   what an ended attempt means: done, failed, retried
 *               (backoff, Retry-After), renewed, redirected; libcurl's
 *               result codes sorted
 *   url.c       the URL rules (url.h), a transfer's start and its redirects
 *   speed.c     the minimum speed, the deadline and the receive cap, once
 *               for every transport (speed.h)
 *   curl.c      libcurl: the multi handle, the pool of easy handles, their
 *               options and callbacks
 *   file.c      file:// URLs through the platform layer
 *   fake.c      the unit tests' transport (http_fake.h)
 *   proxy.c, tls.c  what every easy handle is given (proxy.h, tls.h)
 *
 * Whatever the transport, what arrives goes to response.c, and an attempt's
 * end goes back to http.c as an attempt_end, which outcome.c turns into a
 * verdict that http.c acts on: calls run one way, from http.c down.
 */
#ifndef OUTPOST_NET_HTTP_INT_H
#define OUTPOST_NET_HTTP_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <curl/curl.h>

#include "base/dynbuf.h"
#include "core/log.h"
#include "net/http.h"
#include "net/http_fake.h"
#include "net/proxy.h"
#include "net/ratelimit.h"
#include "net/tls.h"
#include "net/token.h"

/* ---- Response headers the engine reads (response.c names them) ------------------- */

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
    char proxy_scheme[16]; /* of the last Proxy-Authorization sent (for -v), "" when none */
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
    proxy_setup *proxy;          /* the proxy of every transfer (proxy.h) */
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
    OUTCOME_RESPONSE,     /* an HTTP answer came (maybe cut short by us) */
    OUTCOME_NETWORK,      /* connect failure, reset, timeout, partial body: retryable */
    OUTCOME_TLS,          /* certificate, host name or pin: final */
    OUTCOME_CONFIG,       /* unusable URL or protocol */
    OUTCOME_PROXY_AUTH,   /* the proxy refused the CONNECT with 407: final */
    OUTCOME_PROXY_SCRIPT, /* the machine's proxy script could not be fetched or run: final, exit 75 */
    OUTCOME_RESOLVE,      /* the host name does not resolve: final (a wrong URL) */
    OUTCOME_NOT_FOUND,    /* a file:// path that does not exist: final */
    OUTCOME_DEADLINE,     /* the overall deadline passed: final */
    OUTCOME_OTHER,        /* anything else libcurl reports: final */
    OUTCOME_NOMEM
} attempt_outcome;

/* How an attempt ended, as its transport saw it (curl.c, file.c, fake.c). */
typedef struct attempt_end {
    attempt_outcome outcome;         /* what happened */
    char message[ERROR_MESSAGE_MAX]; /* libcurl's or the transport's words; "" when none */
} attempt_end;

/* What becomes of an xfer whose attempt ended: outcome.c decides, http.c acts. */
typedef struct outcome_verdict {
    bool again;      /* another attempt (a retry, a renewal, a redirect hop) from x->not_before */
    error_code code; /* otherwise the xfer completes with this (ERR_OK: done) */
    error_info err;  /* and this error */
} outcome_verdict;

/* A line of the client's trace when its verbosity is at least level (1: one
 * line per attempt; 2: pacing, token and TLS session decisions too): to
 * the options' trace file, else to stderr through log.c (escaped, and into
 * the log file too). Never handed a secret. */
static inline void http_trace(http_client *c, int level, const char *fmt, ...) OUTPOST_PRINTF(3, 4);

static inline void http_trace(http_client *c, int level, const char *fmt, ...)
{
    if (c->verbosity < level)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (!c->trace) {
        char line[2048];
        vsnprintf(line, sizeof line, fmt, ap);
        va_end(ap);
        log_always("%s", line);
        return;
    }
    fputs("outpost: ", c->trace);
    vfprintf(c->trace, fmt, ap);
    fputc('\n', c->trace);
    va_end(ap);
    fflush(c->trace);
}

static inline const char *xfer_method(const xfer *x)
{
    return x->method == HTTP_POST ? "POST" : "GET";
}

/* ---- response.c: reading an answer ------------------------------------------------ */

/* One header line of x's answer (a status line, a header, the blank line
 * that ends them, or a trailer), CRLF included or not. Returns false to
 * abort the transfer (stopped by the caller, over a cap, out of memory, a
 * second final answer). */
bool response_header_line(xfer *x, const char *line, size_t len);

/* Body bytes of x's answer: handed on to a stream's caller, or kept (a JSON
 * answer up to http.max_response_bytes, an error page's or a redirect's
 * first HTTP_ERROR_BODY_KEEP bytes). Returns false to abort the transfer. */
bool response_body(xfer *x, const char *data, size_t len);

/* Forgets x's answer before its next attempt (headers, status, body, flags). */
void response_reset(xfer *x);

/* Frees the header values of x's answer. */
void response_clear(xfer *x);

/*
 * Content-Range (RFC 9110 section 14.4) into h's range_start, range_end and
 * range_total: "bytes FIRST-LAST/COMPLETE", the same with an asterisk for
 * COMPLETE (unknown), or an asterisk for FIRST-LAST (a 416's "bytes *" "/COMPLETE").
 * Anything else, a value that does not fit in 63 bits, or LAST before FIRST
 * leaves all three at -1 (the download then does not take the answer as
 * continuing its partial).
 */
void response_parse_content_range(const char *value, http_stream_headers *h);

/* ---- outcome.c: what an ended attempt means ------------------------------------------- */

/* Decides what becomes of x, whose attempt ended as end says (x is off the
 * running list): releases its pacing ticket with what the answer said,
 * traces the attempt, and fills *verdict. */
void outcome_decide(http_client *c, xfer *x, const attempt_end *end, outcome_verdict *verdict);

/* The outcome of a libcurl result code; errbuf (libcurl's error text) tells
 * a handshake cut by the network from a TLS verdict. */
attempt_outcome outcome_of_curl(CURLcode cc, const char *errbuf);

/* ---- url.c: a transfer's URL ------------------------------------------------------------ */

/* Sets x's URL to where it starts: base_url + route, or a URL GET's URL;
 * no redirect hops, their carried headers forgotten (x->url NULL when out
 * of memory). */
void url_set_start(http_client *c, xfer *x);

/* Follows the redirect x's answer asked for (its Location) when the rules
 * allow it: x's URL, origin and hop count change. Otherwise ERR_PROTOCOL
 * and why (without x's label). */
MUST_CHECK error_code url_follow(http_client *c, xfer *x, error_info *why);

/* Frees the header values x's redirect hops carried. */
void url_forget_hops(xfer *x);

/* ---- speed.c: the minimum speed, the deadline and the receive cap --------------------- */

/* The speed x must keep up, in bytes/s (http.min_speed, or half its cap). */
int64_t speed_xfer_minimum(const http_client *c, const xfer *x);

/* Sets x's deadline as its attempt starts at now: http.transfer_timeout,
 * plus a URL GET's expected length at the minimum speed. */
void speed_xfer_start(http_client *c, xfer *x, int64_t now);

/* x's stream body starts at now (its headers were handed on), with length
 * announced (-1: not): the receive cap counts from here, and an installer's
 * deadline grows by the length at the minimum speed. */
void speed_xfer_body(xfer *x, int64_t now, int64_t length);

/* Whether x's deadline has passed at now. */
bool speed_xfer_late(const xfer *x, int64_t now);

/* How many ms from now before x's body may take more under its receive
 * cap (0: at once); speed_xfer_took counts what it took. */
int64_t speed_xfer_wait(const xfer *x, int64_t now);
void speed_xfer_took(xfer *x, size_t len);

/* ---- curl.c: libcurl --------------------------------------------------------------------- */

/* Initialises libcurl and makes c's multi handle and share (DNS, TLS
 * sessions); curl_pool_close undoes it, the idle easy handles included. */
MUST_CHECK error_code curl_pool_open(http_client *c, error_info *err);
void curl_pool_close(http_client *c);

/* Lets libcurl move every transfer on; waits up to timeout_ms for one of
 * them to have something to do (false: libcurl's multi interface failed). */
void curl_pool_perform(http_client *c);
bool curl_pool_wait(http_client *c, long timeout_ms);

/* Resumes the transfers paused by the receive cap whose time came; returns
 * the ms until the next one is due (-1: none paused). */
int64_t curl_pool_resume(http_client *c);

/* Starts x's attempt on an easy handle of the pool; false when it could
 * not (nothing is left running), with *end saying why: out of memory, or
 * the proxy for its URL could not be chosen (OUTCOME_PROXY_SCRIPT). */
bool curl_attempt_start(http_client *c, xfer *x, attempt_end *end);

/* The next attempt libcurl finished: *x and how it ended; false when none. */
bool curl_attempt_collect(http_client *c, xfer **x, attempt_end *end);

/* Takes x's attempt off libcurl (the client is freed or the call abandoned). */
void curl_attempt_drop(http_client *c, xfer *x);

/* The request headers of x's attempt as "Name: value" lines (Range,
 * If-Range, If-None-Match, If-Modified-Since; Accept and Content-Type for
 * JSON); the bearer token is added separately. *ok false when out of
 * memory. */
struct curl_slist *curl_request_headers(const xfer *x, bool *ok);

/* ---- file.c and fake.c: the other transports -------------------------------------------- */

/* Reads x's file:// URL as its attempt; the attempt has ended on return. */
void file_attempt(http_client *c, xfer *x, attempt_end *end);

/* The local path a file:// URL names (percent-escapes decoded), malloc'd;
 * NULL when url is not a usable file:// URL. file:///C:/x is C:/x,
 * file://server/share/x is the UNC path //server/share/x. */
char *file_url_path(const char *url);

/* Asks the test's fake transport for x's attempt; the attempt has ended on return. */
void fake_attempt(http_client *c, xfer *x, attempt_end *end);

#endif
