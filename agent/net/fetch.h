/*
 * fetch.h — a plain GET of a public URL, for the fleet mirror (PRODUCT.md
 * section 8): no API key, no token, no pacing; https://, http:// and
 * file:// URLs alike, because the manifest's signature, not the transport,
 * carries the trust.
 *
 * http(s) goes through libcurl with the configuration's TLS CA, proxy and
 * timeouts; up to 5 redirects are followed, never from https to http.
 * file:// is read through the platform layer (the cross builds' libcurl has
 * no file: support, and a Windows file share is a common distribution
 * point): file:///srv/mirror/x, file:///C:/mirror/x and
 * file://server/share/x (a UNC path) all work.
 *
 * Conditional GET: If-None-Match / If-Modified-Since are sent when given;
 * a 304 answer is status 304 with no body.
 *
 * Ranges (to resume a download): with range_from > 0 the request asks for
 * bytes range_from- only. The server may answer 206 with a Content-Range
 * that starts there (result->range_start = range_from) or ignore the range
 * and send the whole file with 200 (range_start = 0); on_start is called
 * once before the first body byte so the caller can tell which. A 206 that
 * starts anywhere else is ERR_HTTP (nothing is handed on). file:// honours
 * the range itself (status 206).
 *
 * Errors, one line each naming the URL:
 *  ERR_TEMPORARY  network failure or timeout, 429/5xx (try the next mirror / later)
 *  ERR_TLS        certificate or host name failure
 *  ERR_HTTP       any other status but 200 and 304 (404 included)
 *  ERR_NOT_FOUND  a file:// path that does not exist
 *  ERR_IO         a file:// path that cannot be read
 */
#ifndef OUTPOST_FETCH_H
#define OUTPOST_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/config.h"

/* Called with each body chunk (borrowed). Return false to stop the transfer
 * (fetch_get then returns ERR_OK with result->stopped). */
typedef bool (*fetch_data_fn)(void *user, const void *data, size_t len);

struct fetch_result;
/* Called once, with the final response's status, headers and range_start
 * filled in, before its first body byte. Return false to stop the transfer
 * (fetch_get then returns ERR_OK with result->stopped). */
typedef bool (*fetch_start_fn)(void *user, const struct fetch_result *result);

typedef struct fetch_request {
    const char *url;
    const char *if_none_match;     /* an ETag from an earlier answer, or NULL */
    const char *if_modified_since; /* a Last-Modified from an earlier answer, or NULL */
    int64_t max_bytes;             /* with on_data NULL: keep at most this many body bytes and
                                      stop (result->too_large) when more come; <= 0: 64 KiB */
    fetch_data_fn on_data;         /* NULL: the body is kept in result->body */
    fetch_start_fn on_start;       /* may be NULL */
    void *user;                    /* passed to on_data and on_start */
    int64_t range_from;            /* > 0: ask for the bytes from this offset on (see above) */
} fetch_request;

typedef struct fetch_result {
    long status;            /* 200, 206 (a range was asked for), 304 */
    char *etag;             /* malloc'd, or NULL */
    char *last_modified;    /* malloc'd, or NULL */
    int64_t content_length; /* of this response's body; -1 when not announced */
    int64_t range_start;    /* offset of the first body byte in the file: 0 unless a 206 */
    char *body;             /* kept body (on_data NULL), NUL-terminated; NULL for 304 */
    size_t body_len;
    int64_t body_bytes; /* body bytes received (all of them, kept or handed on) */
    bool too_large;     /* more than max_bytes came; body holds max_bytes */
    bool stopped;       /* on_data asked to stop */
} fetch_result;

/* GETs request->url as described above. Free result with fetch_result_free
 * whatever the outcome. */
MUST_CHECK error_code fetch_get(const config *cfg, const fetch_request *request, fetch_result *result, error_info *err);

void fetch_result_free(fetch_result *result);

/*
 * The local path a file:// URL names (percent-escapes decoded), malloc'd;
 * NULL when url is not a usable file:// URL.
 */
char *fetch_file_url_path(const char *url);

#endif
