/*
 * http_fake.h — a transport that replaces libcurl in unit tests: the tests
 * answer each attempt from a function (http_options.fake), and the engine
 * (fake.c) reads the answer through the same response code libcurl's
 * answers go through. Only tests include this header; the program never
 * sets http_options.fake.
 */
#ifndef OUTPOST_NET_HTTP_FAKE_H
#define OUTPOST_NET_HTTP_FAKE_H

#include <stddef.h>

#include "base/error.h"

/*
 * What a fake transport answers for one attempt. The fake fills it; the
 * client takes ownership of body and headers and frees them with free().
 */
typedef struct http_fake_response {
    long status;     /* HTTP status, e.g. 200 */
    char *headers;   /* malloc'd "Name: value\r\n" lines, or NULL. An empty
                        line ends a response's headers early, and what
                        follows (from an "HTTP/1.1 200 OK" status line on)
                        is a further response on the same transfer, as
                        libcurl shows interim answers: a 1xx, a proxy's
                        407 it answers itself, a CONNECT answer */
    char *body;      /* malloc'd body (need not be NUL-terminated), or NULL */
    size_t body_len; /* bytes in body */
    char *trailers;  /* malloc'd trailer lines after the body (chunked
                        encoding), or NULL */
} http_fake_response;

/*
 * A transport that replaces libcurl, for unit tests of the layers above
 * (report, installer) and of this one: every attempt the client would send
 * (token exchanges, retries and redirects included) is handed to fake
 * instead, with the full URL. Returning ERR_NETWORK, ERR_TIMEOUT or
 * ERR_TEMPORARY simulates a network failure (retried); ERR_TLS a TLS failure.
 * Pacing, retries and token renewal run exactly as with libcurl, on the
 * options' clock. body is NUL-terminated for convenience (body_len excludes
 * the NUL); for the token exchange it holds the API key.
 */
typedef error_code (*http_fake_fn)(void *ctx, const char *method, const char *url, const char *body, size_t body_len,
                                   const char *extra_headers, /* "Range: ...\r\n" lines or "" */
                                   http_fake_response *response, error_info *err);

/* What http_options.fake points to. */
typedef struct http_fake {
    http_fake_fn answer; /* answers every attempt */
    void *ctx;           /* passed to answer */
} http_fake;

#endif
