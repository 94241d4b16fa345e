/*
 * response.c — reading an answer, the same for every transport (libcurl,
 * file://, the tests' fake): the status line (interim 1xx and a 401 / 407
 * that libcurl answers itself do not count; a second final answer is
 * refused), the headers the engine reads and those a stream's caller named,
 * trailers told apart from headers, the body with its caps (a JSON answer's
 * http.max_response_bytes; HTTP_ERROR_BODY_KEEP of an error page or a
 * redirect's body, read no further), and what a stream's caller is handed:
 * its headers once (Content-Range parsed, a conditional GET's 304) and then
 * its body.
 */
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "net/http_int.h"
#include "net/speed.h"
#include "net/url.h"

static const char *const header_names[H__COUNT] = {
    "retry-after",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "location",
    "content-length",
    "content-range",
    "content-type",
    "etag",
    "last-modified",
    "content-disposition",
    "date",
};

/* ---- The status line and the headers --------------------------------------------- */

static void deliver_headers(xfer *x);

/* A whole string of digits (a Content-Length); -1 when it is anything else. */
static int64_t parse_int64(const char *s)
{
    int64_t v;
    if (!s || !text_parse_digits(&s, INT64_MAX, &v) || *s)
        return -1;
    return v;
}

/* The status code of a status line ("HTTP/1.1 200 OK", "HTTP/2 206"); 0 if
 * it has none. */
static long status_code(const char *line, size_t len)
{
    const char *sp = memchr(line, ' ', len);
    char digits[4];
    if (!sp || (size_t)(line + len - sp) < 4)
        return 0;
    memcpy(digits, sp + 1, 3);
    digits[3] = '\0';
    const char *p = digits;
    int64_t v;
    return text_parse_digits(&p, 999, &v) && *p == '\0' && v >= 100 ? (long)v : 0;
}

/*
 * Whether a response whose headers just ended is the transfer's last. One
 * libcurl transfer shows one final response: the proxy's CONNECT answers
 * are suppressed (CURLOPT_SUPPRESS_CONNECT_HEADERS), redirects are ours.
 * What may come before it is an interim 1xx, or a 401 / 407 that libcurl
 * answers itself with credentials (proxy authentication to a plain http://
 * origin) and follows with the real request on the same transfer.
 */
static bool is_final_status(long status)
{
    return status >= 200 && status != 401 && status != 407;
}

/* Replaces *slot with a copy of the n bytes at v. */
static void keep_value(xfer *x, char **slot, const char *v, size_t n)
{
    free(*slot);
    *slot = text_dup_n(v, n);
    if (!*slot)
        x->out_of_memory = true;
}

void response_clear(xfer *x)
{
    for (int i = 0; i < H__COUNT; i++) {
        free(x->headers[i]);
        x->headers[i] = NULL;
    }
    for (int i = 0; i < HTTP_KEEP_HEADERS_MAX; i++) {
        free(x->kept[i]);
        x->kept[i] = NULL;
    }
}

void response_reset(xfer *x)
{
    response_clear(x);
    x->status = 0;
    x->headers_done = false;
    x->final_ended = false;
    x->second_response = false;
    dynbuf_free(&x->response);
    x->too_large = false;
    x->stopped = false;
    x->delivering = false;
    x->out_of_memory = false;
    x->body_capped = false;
    x->deadline_hit = false;
    x->paused = false;
    x->errbuf[0] = '\0';
}

bool response_header_line(xfer *x, const char *line, size_t len)
{
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n'))
        len--;
    if (x->final_ended) {
        if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
            /* Never mixed with the first: its headers may already be in the
             * caller's hands (a download has started writing). */
            x->second_response = true;
            return false;
        }
        return true; /* trailers after a chunked body: not the response's headers */
    }
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        /* A new response (after an interim one): start over, body included. */
        x->status = status_code(line, len);
        x->headers_done = false;
        response_clear(x);
        dynbuf_free(&x->response);
        return true;
    }
    if (len == 0) {
        if (x->status >= 200) {
            x->headers_done = true;
            x->final_ended = is_final_status(x->status);
            if (x->kind == XFER_STREAM && x->final_ended)
                deliver_headers(x);
            if (x->kind != XFER_STREAM && x->headers[H_CONTENT_LENGTH] && x->status >= 200 && x->status < 300 &&
                parse_int64(x->headers[H_CONTENT_LENGTH]) > x->client->cfg.max_response_bytes)
                x->too_large = true;
        }
        return !x->stopped && !x->too_large;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon)
        return true;
    size_t name_len = (size_t)(colon - line);
    const char *v = colon + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    for (int i = 0; i < H__COUNT; i++) {
        if (strlen(header_names[i]) == name_len && text_equal_nocase_n(line, header_names[i], name_len)) {
            keep_value(x, &x->headers[i], v, (size_t)(end - v));
            break;
        }
    }
    for (size_t i = 0; x->stream && i < x->stream->keep_count; i++) {
        const char *name = x->stream->keep_headers[i];
        if (strlen(name) == name_len && text_equal_nocase_n(line, name, name_len))
            keep_value(x, &x->kept[i], v, (size_t)(end - v));
    }
    return true;
}

/* ---- The body ------------------------------------------------------------------- */

bool response_body(xfer *x, const char *data, size_t len)
{
    if (x->kind == XFER_STREAM && x->delivering) {
        stream_ctx *s = x->stream;
        if (s->callbacks->on_data && s->callbacks->on_data(s->callbacks->user, data, len) == HTTP_STREAM_STOP) {
            x->stopped = true;
            s->result.stopped = true;
            s->result.body_bytes += (int64_t)len;
            return false;
        }
        s->result.body_bytes += (int64_t)len;
        return true;
    }
    bool success = x->status >= 200 && x->status < 300;
    if (x->kind == XFER_STREAM || !success) {
        /* A redirect's or failure's body: keep the start for the message,
         * and read no further (an endless error page must not hold the run). */
        size_t room = x->response.len < HTTP_ERROR_BODY_KEEP ? HTTP_ERROR_BODY_KEEP - x->response.len : 0;
        bool capped = len > room;
        if (capped)
            len = room;
        if (len && !dynbuf_append(&x->response, data, len))
            x->out_of_memory = true;
        if (capped)
            x->body_capped = true;
        return !x->out_of_memory && !capped;
    }
    if ((int64_t)(x->response.len + len) > x->client->cfg.max_response_bytes) {
        x->too_large = true;
        return false;
    }
    if (!dynbuf_append(&x->response, data, len)) {
        x->out_of_memory = true;
        return false;
    }
    return true;
}

/* ---- A stream's headers to its caller ----------------------------------------------- */

void response_parse_content_range(const char *value, http_stream_headers *h)
{
    h->range_start = h->range_end = h->range_total = -1;
    if (!value || !text_starts_with(value, "bytes "))
        return;
    const char *p = value + 6;
    while (*p == ' ')
        p++;
    int64_t first = -1, last = -1, total = -1;
    if (*p == '*') {
        p++;
    } else if (!text_parse_digits(&p, INT64_MAX, &first) || *p++ != '-' || !text_parse_digits(&p, INT64_MAX, &last) ||
               last < first) {
        return;
    }
    if (*p++ != '/')
        return;
    if (*p == '*' && first >= 0)
        p++;
    else if (!text_parse_digits(&p, INT64_MAX, &total) || (first >= 0 && last >= total))
        return;
    if (*p)
        return;
    h->range_start = first;
    h->range_end = last;
    h->range_total = total;
}

/* Called at the end of a stream response's headers: hands the final
 * response's headers to the caller when it is one to deliver (200, 206,
 * 416, and a URL GET's 304 to a conditional request). */
static void deliver_headers(xfer *x)
{
    stream_ctx *s = x->stream;
    for (size_t i = 0; x->status >= 300 && x->status < 400 && i < s->keep_count; i++) {
        /* A redirect that names the value (the installer route's version):
         * kept in case the storage host's answer does not (the final
         * answer's own value wins). */
        if (x->kept[i])
            keep_value(x, &x->hop_kept[i], x->kept[i], strlen(x->kept[i]));
    }
    if (x->status != 200 && x->status != 206 && x->status != 416 && !(x->direct && x->status == 304))
        return;
    http_stream_headers h;
    memset(&h, 0, sizeof h);
    h.status = x->status;
    h.content_length = parse_int64(x->headers[H_CONTENT_LENGTH]);
    h.content_range = x->headers[H_CONTENT_RANGE];
    response_parse_content_range(h.content_range, &h);
    h.content_type = x->headers[H_CONTENT_TYPE];
    h.etag = x->headers[H_ETAG];
    h.last_modified = x->headers[H_LAST_MODIFIED];
    h.content_disposition = x->headers[H_CONTENT_DISPOSITION];
    const char *kept[HTTP_KEEP_HEADERS_MAX];
    for (size_t i = 0; i < s->keep_count; i++)
        kept[i] = x->kept[i] ? x->kept[i] : x->hop_kept[i];
    h.keep_names = s->keep_count ? s->keep_headers : NULL;
    h.kept = s->keep_count ? kept : NULL;
    char *url = url_without_query(x->url);
    h.url = url ? url : "";
    h.redirects = x->redirects;
    s->result.status = x->status;
    s->result.headers_delivered = true;
    x->delivering = x->status != 416 && x->status != 304;
    speed_xfer_body(x, clock_now_ms(x->client->clock), h.content_length);
    if (s->callbacks->on_headers && s->callbacks->on_headers(s->callbacks->user, &h) == HTTP_STREAM_STOP) {
        x->stopped = true;
        s->result.stopped = true;
    }
    free(url);
}
