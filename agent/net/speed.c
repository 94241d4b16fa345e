/*
 * speed.c — the minimum speed, the deadline and the receive cap of every
 * transfer (see speed.h): the arithmetic, then its use on the engine's
 * transfers, which curl.c (libcurl's low-speed limit, its progress
 * callback, pausing a transfer) and file.c (reading a file:// URL) share,
 * so neither computes them again.
 */
#include "net/speed.h"

#include "net/http_int.h"

int64_t speed_minimum(int64_t configured, int64_t cap)
{
    int64_t v = configured > 0 ? configured : SPEED_DEFAULT_MINIMUM;
    if (cap > 0 && v > cap / 2)
        v = cap / 2 > 0 ? cap / 2 : 1;
    return v;
}

int64_t speed_allowance_ms(int64_t bytes, int64_t minimum)
{
    const int64_t cap_s = 30 * 86400;
    int64_t s = bytes / minimum; /* capped before the second is added: at 1 byte/s INT64_MAX + 1 would overflow */
    return (s >= cap_s ? cap_s : s + 1) * 1000;
}

int64_t speed_pace_wait_ms(int64_t from_ms, int64_t taken, int64_t cap, int64_t now_ms)
{
    if (cap <= 0)
        return 0;
    int64_t due = from_ms + taken * 1000 / cap;
    return due > now_ms ? due - now_ms : 0;
}

size_t speed_read_size(int64_t cap, size_t normal)
{
    if (cap > 0 && (int64_t)normal > cap / 8)
        return cap / 8 > 4096 ? (size_t)(cap / 8) : 4096;
    return normal;
}

/* ---- On the engine's transfers ------------------------------------------------- */

/* The receive cap of x's body: a stream's, while its body is handed on. */
static int64_t receive_cap(const xfer *x)
{
    return x->kind == XFER_STREAM && x->delivering ? x->stream->max_bytes_per_second : 0;
}

int64_t speed_xfer_minimum(const http_client *c, const xfer *x)
{
    return speed_minimum(c->cfg.min_speed, x->stream ? x->stream->max_bytes_per_second : 0);
}

void speed_xfer_start(http_client *c, xfer *x, int64_t now)
{
    x->deadline_ms = now + c->cfg.transfer_timeout_s * 1000;
    if (x->stream && x->stream->expected_bytes > 0)
        x->deadline_ms += speed_allowance_ms(x->stream->expected_bytes, speed_xfer_minimum(c, x));
}

void speed_xfer_body(xfer *x, int64_t now, int64_t length)
{
    x->paced_from_ms = now;
    x->paced_bytes = 0;
    if (x->delivering && x->stream->scale_deadline && length > 0)
        x->deadline_ms += speed_allowance_ms(length, speed_xfer_minimum(x->client, x));
}

bool speed_xfer_late(const xfer *x, int64_t now)
{
    return now > x->deadline_ms;
}

int64_t speed_xfer_wait(const xfer *x, int64_t now)
{
    return speed_pace_wait_ms(x->paced_from_ms, x->paced_bytes, receive_cap(x), now);
}

void speed_xfer_took(xfer *x, size_t len)
{
    x->paced_bytes += (int64_t)len;
}
