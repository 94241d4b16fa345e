/*
 * http.h — outpost's transfer engine: the one way anything talks to the
 * platform, a fleet mirror or a file:// share. It knows HTTP, not the
 * platform's API: what it needs of a service behind base_url (the token
 * route, how its error answers read) it is told through an http_service
 * (api.c's api_client_new describes the platform's).
 *
 * One http_client per run. It owns:
 *  - one libcurl multi handle and its connection cache (keep-alive, TLS
 *    session reuse; connections idle for 50 s are not reused), with
 *    base_url (an optional path prefix such as "/public" is kept; a
 *    trailing slash is harmless), the CA file (for every host, redirect
 *    targets included), the pinned public key (the platform's host only),
 *    the proxy (proxy.h: config `proxy`, else the machine's, per host;
 *    the schemes `proxy_auth` allows, Negotiate and NTLM with the
 *    process's own identity), connect and low-speed timeouts;
 *  - the access token (token.h): exchanged from the service's secret (the
 *    API key) before the first call, renewed before it expires, renewed
 *    once on a 401;
 *  - the pacing (ratelimit.h): the documented 60 requests per minute per key
 *    and 5 in flight per endpoint until the server's X-RateLimit-Remaining /
 *    X-RateLimit-Reset headers say otherwise, so a healthy server never has
 *    to answer 429 (resets are read on the server's clock, estimated from
 *    its Date headers, so an endpoint whose clock runs fast does not call
 *    early);
 *  - retries (backoff.h): 429, 500, 502, 503 and network failures, with
 *    exponential backoff and full jitter, honouring Retry-After, bounded by
 *    config http.max_attempts and http.max_retry_wait_s;
 *  - the counters status.json reports (api_calls, 429s, retries).
 *
 * Four ways to make requests:
 *  - http_call: one JSON request, synchronous; the body is handed back.
 *  - http_submit + http_run: many JSON requests, each with a completion
 *    callback, run concurrently through the multi handle under the pacing
 *    and concurrency rules. Results arrive one by one, so a caller can
 *    process and drop them as they come (memory stays bounded).
 *  - http_stream_get: a streaming GET (the installer route) that hands the
 *    final response's headers and then body chunks to the caller as they
 *    arrive; nothing is buffered; the caller may stop after the headers.
 *  - http_url_get / http_url_read: a GET of any URL (the fleet mirror,
 *    PRODUCT.md section 8): https://, http:// and file:// alike, with no
 *    token, no pacing and no retry (the next mirror, or the next run, is the
 *    retry), conditional (If-None-Match / If-Modified-Since, 304) and ranged.
 *
 * Every transfer, whatever its kind, has (PRODUCT.md section 8):
 *  - an overall deadline: http.transfer_timeout from the attempt's start,
 *    plus, for an installer, its length at http.min_speed (the API's: the
 *    announced length; a URL GET's: expected_bytes, what the manifest
 *    says; a metadata answer's announced length never extends it); past it
 *    the transfer is aborted with ERR_TEMPORARY and not retried;
 *  - a minimum speed: slower than http.min_speed bytes/s (half the receive
 *    cap when a cap is lower) for http.low_speed_timeout is a network
 *    failure (retried for the API, ERR_TEMPORARY for a URL GET);
 *  - a cap on what is read of a body that is not handed on (an error page,
 *    a redirect's body): HTTP_ERROR_BODY_KEEP bytes are kept for the
 *    message and the transfer stops there, so an endless error body costs
 *    a few KiB, not the run.
 * TLS trust (tls.h), the proxy (proxy.h), protocols, redirects (url.h:
 * never https:// to http://) and these limits (speed.h) are each set up in
 * one place for every transfer; http_int.h maps the engine's files.
 *
 * Errors (error.h), one line each, naming the method and route:
 *  ERR_AUTH       token exchange refused, or 401 again after one renewal, or
 *                 the proxy refused its credentials (407) (exit 3), never retried
 *  ERR_FORBIDDEN  403 (exit 3), never retried
 *  ERR_TEMPORARY  429 / 500 / 502 / 503 / network failure after the last
 *                 attempt or when the retry budget is spent (exit 75)
 *  ERR_TLS        unknown CA, wrong host name, pinned key mismatch (exit 1),
 *                 never retried
 *  ERR_NETWORK    a host name (or the proxy's) that does not resolve (exit 1,
 *                 "check `base_url`"), never retried: a wrong URL, not a
 *                 passing failure (PRODUCT.md section 1)
 *  ERR_PROTOCOL   response over the size cap, unusable redirect (https:// to
 *                 http:// included), token answer without a token, a second
 *                 response on one transfer
 *  ERR_HTTP       any other non-2xx status (400, 404, 409, ...), never retried;
 *                 the message carries the gist of the error answer and, for
 *                 a 404, the service's advice (the platform's: the API's
 *                 envelope error, and to check `base_url`)
 *  ERR_CONFIG     unusable base_url (http:// to a host that is not loopback)
 *
 * Secrets: the API key and the access token never reach a log line, the
 * trace, an error message, a file or an argv. The client keeps its own
 * copies and wipes them before freeing. (libcurl keeps an internal copy of
 * the bearer token while a transfer is set up; it is not ours to wipe.)
 *
 * Proxies are transparent: the proxy's answers (its CONNECT's "200
 * Connection established", a 407 that libcurl answers itself with the
 * credentials) never count as the server's response; only the final
 * response's headers are read, never trailers after a chunked body.
 *
 * Threads: an http_client is used from one thread. Callbacks run on that
 * thread, from inside http_run / http_call / http_stream_get.
 */
#ifndef OUTPOST_HTTP_H
#define OUTPOST_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/clock.h"
#include "core/config.h"
#include "base/error.h"

typedef struct http_client http_client;
struct http_fake;
struct token_state;

/* What is kept (and read) of a body that is not handed on: an error page or
 * a redirect's body, for the message. */
#define HTTP_ERROR_BODY_KEEP (8 * 1024)

/* The most response headers a stream request may name in keep_headers. */
#define HTTP_KEEP_HEADERS_MAX 4

/* ---- Client -------------------------------------------------------------- */

typedef struct http_options {
    const clock_source *clock;    /* NULL: clock_default() */
    int verbosity;                /* 0: silent; 1: one trace line per attempt;
                                     2: also pacing and token decisions */
    FILE *trace;                  /* where the trace goes; NULL: stderr */
    const struct http_fake *fake; /* a transport that replaces libcurl, for unit tests
                                     (net/http_fake.h; copied); NULL: libcurl */
    bool keep_tls_session;        /* resume the TLS session kept in state_dir and keep the new
                                     one (tlssession.h): only for a run that holds state_dir's
                                     lock, as every writer under it must */
} http_options;

/*
 * What the engine needs to know of the service behind base_url beyond HTTP
 * (api.c describes the platform's API; the engine knows no route of it):
 * how the bearer token its routes want is obtained, and how its error
 * answers read. The engine sends the exchange like any request (paced,
 * retried), before the first call and whenever the token is due or was
 * refused once with a 401, and sends the token to base_url's origin only.
 * A static description: the client keeps the pointer.
 */
typedef struct http_service {
    const char *token_route; /* the exchange, POSTed to base_url + token_route */
    const char *token_label; /* its name in errors and the trace */
    /* The exchange's JSON body for the secret, malloc'd, its length in
     * *len; it holds the secret (the engine wipes it). NULL: out of memory. */
    char *(*token_body)(const char *secret, size_t *len);
    /* Reads a 2xx answer of the exchange into *token (token.h), sent at
     * sent_at_ms on the client's monotonic clock; never quotes the body. */
    error_code (*token_accept)(struct token_state *token, const char *body, size_t len, int64_t sent_at_ms,
                               error_info *err);
    const char *token_refused_advice; /* what to do when the exchange is refused (400, 401) */
    /* The gist of an error answer's body as one short line into buf ("" when
     * there is none); NULL: error bodies are not quoted. */
    void (*error_detail)(const char *body, size_t len, char *buf, size_t size);
    const char *not_found_advice; /* added to the message of a 404 from base_url; NULL: none */
} http_service;

/*
 * Creates the run's client from cfg (base_url, tls_ca_file,
 * tls_pinned_public_key, proxy, config_http), the service behind base_url
 * and its secret (api.c's api_client_new passes the platform's API and the
 * API key). Everything needed is copied but service (static): cfg and
 * secret may be freed (and the secret wiped) as soon as this returns. opts
 * may be NULL (defaults). No request is made here; the first token exchange
 * happens with the first call.
 * service and secret NULL make a client for URL GETs only (the mirror
 * without the platform): base_url is then not needed, and the route calls
 * fail with ERR_CONFIG.
 * Fails with ERR_CONFIG (no base_url, a base_url that is not https:// or
 * http:// to a loopback host, a service without a secret) or ERR_NOMEM /
 * ERR_INTERNAL. *client is set on success only; free it with
 * http_client_free.
 */
MUST_CHECK error_code http_client_new(const config *cfg, const http_service *service, const char *secret,
                                      const http_options *opts, http_client **client, error_info *err);

/* Wipes the secrets, closes the connections, frees everything. Submitted
 * requests still pending are dropped without their callbacks. NULL is ignored. */
void http_client_free(http_client *client);

/* Whether the client holds a service's secret (it can call base_url's routes). */
bool http_client_has_key(const http_client *client);

/* Changes the trace level (the --verbose flag) after creation. */
void http_client_set_verbosity(http_client *client, int verbosity);

/* ---- Counters -------------------------------------------------------------- */

typedef struct http_stats {
    int64_t api_calls;                /* every HTTP request sent: token exchanges, retries
                                         and redirect hops included (status.json api_calls) */
    int64_t token_exchanges;          /* POST /v2/auth/token/access requests */
    int64_t retries;                  /* attempts beyond the first, all causes */
    int64_t responses_429;            /* 429 answers seen */
    int64_t max_in_flight;            /* most requests ever in flight at once, all endpoints */
    int64_t retry_after_until_ms;     /* UTC ms before which the platform asked not to be
                                         called again, when a Retry-After longer than this
                                         run could wait made a request fail; 0 if none.
                                         The caller records it in state so that the next
                                         scheduled run does not call before it (capped at
                                         24 h from now). */
    int64_t url_retry_after_until_ms; /* a URL GET (the fleet mirror) answered with a
                                         Retry-After, any status: UTC ms it asked
                                         not to be asked again before (capped as
                                         retry_after_until_ms); 0 if none */
    int64_t retry_wait_longest_ms;    /* longest single wait before a retry that the
                                         client planned (backoff or Retry-After),
                                         as decided, not as measured; 0 if none */
    int64_t retry_wait_most_ms;       /* the most waiting planned for any one request
                                         over all its retries (what http.max_retry_wait
                                         caps); 0 if none */
} http_stats;

/* Copies the counters. */
void http_client_stats(const http_client *client, http_stats *stats);

/* ---- JSON requests ----------------------------------------------------------- */

typedef enum { HTTP_GET, HTTP_POST } http_method;

typedef struct http_request {
    http_method method; /* HTTP_GET or HTTP_POST */
    const char *route;  /* appended to base_url: "/v2/incidents/list"; may
                           carry a query ("?ids=a,b"), already escaped. Copied. */
    const char *body;   /* POST body (JSON, sent as application/json); copied.
                           NULL for GET. */
    size_t body_len;    /* bytes in body; 0 with a non-NULL body: strlen(body) */
    const char *label;  /* name used in errors and the trace, e.g. "event-details";
                           NULL: the route without its query. Copied. */
} http_request;

/* The answer handed to a completion callback. Everything is borrowed: valid
 * during the callback only (copy what you keep). */
typedef struct http_response {
    long status;      /* final HTTP status (2xx when code is ERR_OK), 0 if none */
    const char *body; /* NUL-terminated body (may be ""), never NULL */
    size_t body_len;  /* bytes in body, without the NUL */
    int attempts;     /* attempts made, >= 1 */
} http_response;

/*
 * Completion callback of a submitted request. code is ERR_OK for a 2xx
 * answer; otherwise err says why (err is never NULL) and response->status
 * holds the last status seen (0 for network/TLS failures). The callback may
 * submit further requests (e.g. event-details after event-lineage).
 */
typedef void (*http_done_fn)(void *user, error_code code, const error_info *err, const http_response *response);

/*
 * Queues a request; it is sent from http_run (or any other call that drives
 * the client) when the pacing allows. done is called exactly once, unless the
 * client is freed first. Fails only on ERR_NOMEM or an invalid request
 * (ERR_INTERNAL), in which case done is never called.
 * Requests run concurrently, at most config http.max_in_flight (5) per
 * endpoint (the route without its query) and within the rate budget;
 * completions come in any order.
 */
MUST_CHECK error_code http_submit(http_client *client, const http_request *request, http_done_fn done, void *user,
                                  error_info *err);

/*
 * Drives the client until at most max_pending submitted requests are still
 * unfinished (0: until all are done), calling completion callbacks as
 * answers arrive. A caller with many requests can submit a window of them,
 * run down to a low-water mark, submit more, and so hold only that window
 * in memory. Per-request failures go to the callbacks; http_run itself fails
 * only when the client cannot go on (ERR_NOMEM, ERR_INTERNAL).
 */
MUST_CHECK error_code http_run(http_client *client, size_t max_pending, error_info *err);

/* Number of submitted requests not yet completed. */
size_t http_pending(const http_client *client);

/*
 * One JSON request, synchronous: submits it and drives the client until it
 * completes (other pending requests make progress, and their callbacks may
 * run, meanwhile). On ERR_OK (a 2xx answer) *body is a malloc'd
 * NUL-terminated copy of the body, *body_len its length (may be NULL) and
 * *status (may be NULL) the status; the caller frees *body with free().
 * On failure *body is NULL and *status holds the last status seen (0 if none).
 */
MUST_CHECK error_code http_call(http_client *client, const http_request *request, char **body, size_t *body_len,
                                long *status, error_info *err);

/* ---- Streaming GET (the installer route) ------------------------------------- */

/* The final response's status and headers (after redirects), borrowed: valid
 * during the on_headers callback only. Absent headers are NULL / -1. */
typedef struct http_stream_headers {
    long status;               /* 200, 206, or 416 (Range not satisfiable) */
    int64_t content_length;    /* Content-Length, -1 when absent */
    const char *content_range; /* raw Content-Range ("bytes 100-199/200") */
    int64_t range_start;       /* parsed Content-Range, -1 when absent/unparsable */
    int64_t range_end;         /* inclusive */
    int64_t range_total;       /* -1 when absent or "*" */
    const char *content_type;
    const char *etag;
    const char *last_modified;
    const char *content_disposition;
    const char *const *keep_names; /* the request's keep_headers (NULL: none) */
    const char *const *kept;       /* their values, in the same order: the final response's,
                                      or the last redirect hop's that carried one; NULL when
                                      absent (read them with http_stream_header) */
    const char *url;               /* URL of the final response, without user info, query or
                                      fragment (signed storage URLs carry secrets there) */
    int redirects;                 /* redirect hops followed */
} http_stream_headers;

/* The value of the response header name (any case), which the request named
 * in keep_headers; NULL when absent or not named. Borrowed like h. */
const char *http_stream_header(const http_stream_headers *h, const char *name);

typedef enum {
    HTTP_STREAM_CONTINUE = 0, /* keep reading */
    HTTP_STREAM_STOP = 1      /* abort the transfer now; http_stream_get returns ERR_OK */
} http_stream_action;

typedef struct http_stream_callbacks {
    /* Called once with the final response's headers before any body byte
     * (interim answers and a proxy's own answers are not shown; a second
     * final response on the same transfer ends it with ERR_PROTOCOL instead).
     * Return HTTP_STREAM_STOP to stop here (a version check reads no body
     * beyond what libcurl already buffered: well under 64 KiB). */
    http_stream_action (*on_headers)(void *user, const http_stream_headers *headers);
    /* Called with each body chunk as it arrives (data is borrowed). May be NULL
     * to discard the body. Return HTTP_STREAM_STOP to abort the transfer.
     * Not called for a 416 answer (its body is an error page). */
    http_stream_action (*on_data)(void *user, const void *data, size_t len);
    void *user;
} http_stream_callbacks;

typedef struct http_stream_request {
    const char *route;               /* appended to base_url: "/v2/installer/windows/latest" */
    const char *range;               /* Range header value ("bytes=1048576-"), or NULL */
    const char *if_range;            /* If-Range value (an ETag or an HTTP date), or NULL;
                                        only sent with range */
    int64_t max_bytes_per_second;    /* receive cap; 0: none */
    const char *label;               /* name in errors and trace; NULL: the route */
    const char *const *keep_headers; /* NULL-terminated names of further response headers to
                                        hand to on_headers (at most HTTP_KEEP_HEADERS_MAX), the
                                        service's own ("X-Installer-Version"); NULL: none */
} http_stream_request;

typedef struct http_stream_result {
    long status;            /* final status, 0 if none */
    int64_t body_bytes;     /* body bytes handed to on_data */
    bool stopped;           /* a callback returned HTTP_STREAM_STOP */
    bool headers_delivered; /* on_headers was called */
} http_stream_result;

/*
 * Streams a GET: authenticates it, paces it like any request, follows at
 * most 5 redirects by hand (301, 302, 303, 307, 308; https:// only, http://
 * only to a loopback host and only from http://, never from https://; the
 * Authorization header is sent only to the base_url's scheme, host and
 * port, never to a storage host it redirects to; Range / If-Range are sent
 * on every hop). Redirects are followed by
 * this module rather than by libcurl so that the rule does not depend on
 * the libcurl version (7.88 already drops a custom Authorization header on
 * a host change, older releases did not); a retry starts again from the
 * platform's route (signed storage URLs expire). Redirect hops to another
 * host do not spend the platform's rate budget but do count in api_calls.
 * 429 / 5xx / network failures before on_headers are retried like any
 * request; the bodies of redirects and failed attempts are discarded,
 * never handed to on_data.
 * on_headers sees 200, 206 or 416; any other final status is an error
 * (401 → one renewal, 403 → ERR_FORBIDDEN, others ERR_HTTP) and no callback
 * runs. Once on_headers has run, the transfer is not retried here: a failure
 * mid-body returns ERR_TEMPORARY (connection lost, timeout) with
 * result->body_bytes telling how much was delivered, so the caller can
 * resume with a Range request. No response size cap applies to the body.
 * result may be NULL. Returns ERR_OK when the body was read to its end or a
 * callback stopped the transfer.
 */
MUST_CHECK error_code http_stream_get(http_client *client, const http_stream_request *request,
                                      const http_stream_callbacks *callbacks, http_stream_result *result,
                                      error_info *err);

/* ---- GET of a URL (the fleet mirror) -------------------------------------------- */

typedef struct http_url_request {
    const char *url;               /* https://, http:// (any host) or file:// (file:///path,
                                      file:///C:/path, file://server/share/path); may carry
                                      user:password@, which is never shown or recorded */
    const char *label;             /* name in errors and the trace; NULL: the URL without
                                      credentials, query or fragment */
    const char *range;             /* Range value ("bytes=N-"), or NULL */
    const char *if_range;          /* If-Range value, only sent with range; or NULL */
    const char *if_none_match;     /* an ETag from an earlier answer, or NULL */
    const char *if_modified_since; /* a Last-Modified from an earlier answer, or NULL */
    int64_t max_bytes_per_second;  /* receive cap (file:// too); 0: none */
    int64_t expected_bytes;        /* body length known ahead (a manifest's installer):
                                      the deadline grows by it at http.min_speed; 0: unknown */
} http_url_request;

/*
 * GETs request->url and streams it as http_stream_get does (on_headers sees
 * 200, 206, 416 and, for a conditional request, 304 with no body), with no
 * token, no pacing and one attempt. Redirects: at most 5, to https:// or
 * http://, never from https:// to http://. file:// is read through the
 * platform layer with the same callbacks, range (206 from the offset; 416
 * past the end), receive cap and deadline.
 * Errors, one line each naming the URL (without credentials):
 *  ERR_TEMPORARY  network failure, reset, timeout, too slow, deadline passed,
 *                 429 / 5xx, a redirect loop, a file:// read error
 *  ERR_NETWORK    the host name does not resolve (exit 1: check the URL)
 *  ERR_TLS        certificate or host name failure (exit 1)
 *  ERR_HTTP       any other status (401, 403, 404, ...) (exit 1)
 *  ERR_PROTOCOL   a refused redirect (https:// to http://, another scheme)
 *  ERR_NOT_FOUND  a file:// path that does not exist
 *  ERR_CONFIG     a URL that is not https://, http:// or file://
 *  ERR_AUTH       the proxy refused its credentials (407)
 */
MUST_CHECK error_code http_url_get(http_client *client, const http_url_request *request,
                                   const http_stream_callbacks *callbacks, http_stream_result *result, error_info *err);

/* A small body read whole (a manifest). */
typedef struct http_url_body {
    long status;         /* 200 (206 never: no range is asked), or 304 */
    char *body;          /* malloc'd, NUL-terminated; NULL for 304 */
    size_t body_len;     /* bytes in body */
    bool too_large;      /* more than max_bytes came: the transfer stopped there */
    char *etag;          /* malloc'd validator, or NULL */
    char *last_modified; /* malloc'd validator, or NULL */
} http_url_body;

/*
 * http_url_get keeping at most max_bytes of the body (more: out->too_large,
 * and the transfer stops). Free out with http_url_body_free in every case.
 */
MUST_CHECK error_code http_url_read(http_client *client, const http_url_request *request, size_t max_bytes,
                                    http_url_body *out, error_info *err);

void http_url_body_free(http_url_body *body);

#endif
