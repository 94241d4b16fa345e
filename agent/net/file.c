/*
 * file.c — file:// URLs (the fleet mirror on a share or a local disk), read
 * through the platform layer: the cross builds' libcurl has no file:
 * support, and a Windows share is a common distribution point. The file is
 * shown to response.c as an HTTP answer would be (200, 206 from a Range's
 * offset, 416 past the end), and speed.c's receive cap and deadline hold
 * here too: a share that drips is stopped like a server.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "net/http_int.h"
#include "net/speed.h"
#include "platform/platform.h"

#define FILE_CHUNK (256 * 1024)

char *file_url_path(const char *url)
{
    if (!url || !text_equal_nocase_n(url, "file://", 7))
        return NULL;
    const char *rest = url + 7;
    if (!rest[0])
        return NULL;
    char *raw;
    if (rest[0] == '/') {
        /* file:///C:/x -> C:/x; file:///srv/x -> /srv/x */
        if (((rest[1] >= 'a' && rest[1] <= 'z') || (rest[1] >= 'A' && rest[1] <= 'Z')) &&
            (rest[2] == ':' || rest[2] == '|'))
            rest++;
        raw = text_dup(rest);
    } else if (text_equal_nocase_n(rest, "localhost/", 10)) {
        raw = text_dup(rest + 9);
    } else {
        /* file://server/share/x: a UNC path, //server/share/x */
        size_t n = strlen(rest);
        raw = malloc(n + 3);
        if (raw)
            snprintf(raw, n + 3, "//%s", rest);
    }
    if (!raw)
        return NULL;
    char *out = raw;
    for (char *in = raw; *in; in++) {
        if (*in == '%' && text_hex_value(in[1]) >= 0 && text_hex_value(in[2]) >= 0) {
            char c = (char)(text_hex_value(in[1]) * 16 + text_hex_value(in[2]));
            if (c == '\0') {
                free(raw);
                return NULL;
            }
            *out++ = c;
            in += 2;
        } else if (*in == '?' || *in == '#') {
            break;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
    if (!raw[0]) {
        free(raw);
        return NULL;
    }
    return raw;
}

/* The N of a "bytes=N-" Range value; 0 when there is none. */
static int64_t range_from(const char *range)
{
    int64_t from = 0;
    const char *p = range;
    if (!p || !text_starts_with(p, "bytes="))
        return 0;
    p += 6;
    return text_parse_digits(&p, INT64_MAX, &from) && *p == '-' ? from : 0;
}

/* Ends the attempt with outcome and its message. */
static void end_with(attempt_end *end, attempt_outcome outcome, const char *message)
{
    end->outcome = outcome;
    snprintf(end->message, sizeof end->message, "%s", message);
}

/*
 * A file:// URL, read through the platform layer (the cross builds' libcurl
 * has no file: support, and a Windows share is a common distribution
 * point) and shown to the response readers as an HTTP answer would be: 200,
 * 206 from a Range's offset, 416 past the end. The receive cap and the
 * deadline hold here too: a share that drips is stopped like a server.
 */
void file_attempt(http_client *c, xfer *x, attempt_end *end)
{
    char *message = end->message;
    char *path = file_url_path(x->url);
    if (!path) {
        end_with(end, OUTCOME_CONFIG,
                 "not a usable file:// URL (file:///path, file:///C:/path or file://server/share/path)");
        return;
    }
    /* One open, judged through its handle: a FIFO or device swapped in is
     * refused, never waited on (a run must end), and a link is not followed. */
    uint64_t size = 0;
    FILE *f = NULL;
    error_info why;
    error_code opened = platform_open_regular(path, &f, &size, &why);
    free(path);
    if (opened != ERR_OK) {
        end_with(end, OUTCOME_NOT_FOUND, opened == ERR_NOT_FOUND ? "no such file" : why.message);
        return;
    }
    const stream_ctx *s = x->stream;
    int64_t from = range_from(s->range);
    long status = from > 0 ? ((uint64_t)from < size ? 206 : 416) : 200;
    char line[160];
    snprintf(line, sizeof line, "HTTP/1.1 %ld File", status);
    bool go = response_header_line(x, line, strlen(line));
    if (status == 416) {
        snprintf(line, sizeof line, "Content-Range: bytes */%" PRIu64, size);
        go = go && response_header_line(x, line, strlen(line));
    } else {
        snprintf(line, sizeof line, "Content-Length: %" PRIu64, size - (uint64_t)from);
        go = go && response_header_line(x, line, strlen(line));
        if (status == 206) {
            snprintf(line, sizeof line, "Content-Range: bytes %" PRId64 "-%" PRIu64 "/%" PRIu64, from, size - 1, size);
            go = go && response_header_line(x, line, strlen(line));
        }
    }
    go = go && response_header_line(x, "", 0);
    attempt_outcome outcome = OUTCOME_RESPONSE;
    size_t chunk = speed_read_size(s->max_bytes_per_second, FILE_CHUNK);
    char *buf = go && status != 416 ? malloc(chunk) : NULL;
    if (go && status != 416 && !buf)
        outcome = OUTCOME_NOMEM;
    if (buf && from > 0 && platform_seek(f, (uint64_t)from, NULL) != ERR_OK) {
        outcome = OUTCOME_NETWORK;
        snprintf(message, sizeof end->message, "read error (is the share reachable?)");
    }
    while (buf && outcome == OUTCOME_RESPONSE) {
        size_t n = fread(buf, 1, chunk, f);
        if (n > 0 && !response_body(x, buf, n))
            break;
        speed_xfer_took(x, n);
        if (n < chunk) {
            if (ferror(f)) {
                outcome = OUTCOME_NETWORK;
                snprintf(message, sizeof end->message, "read error (is the share reachable?)");
            }
            break;
        }
        /* The receive cap, as libcurl's transfers keep it: never ahead of the rate. */
        int64_t now = clock_now_ms(c->clock);
        int64_t wait = speed_xfer_wait(x, now);
        if (wait > 0) {
            clock_sleep_ms(c->clock, wait);
            now = clock_now_ms(c->clock);
        }
        if (speed_xfer_late(x, now)) {
            outcome = OUTCOME_DEADLINE;
            break;
        }
    }
    free(buf);
    fclose(f);
    end->outcome = outcome;
}
