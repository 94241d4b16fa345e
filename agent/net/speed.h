/*
 * speed.h — how slow a transfer may go and how fast it may take its body,
 * computed once for every transport (libcurl's http(s) and file://):
 *
 *  - the minimum speed: http.min_speed bytes/s (default 1024), or half the
 *    receive cap when that is lower (a throttled download is slow on
 *    purpose); slower than it for http.low_speed_timeout ends a transfer;
 *  - the deadline: http.transfer_timeout from the attempt's start, plus,
 *    for an installer, its length at the minimum speed (the API's: the
 *    announced length; a URL GET's: what the manifest says it will be);
 *  - the receive cap (installer.max_bytes_per_second): a body is taken no
 *    faster than the cap from its first byte on.
 *
 * Pure arithmetic here, tested on its own; speed.c applies it to the
 * engine's transfers (http_int.h: speed_xfer_*).
 */
#ifndef OUTPOST_NET_SPEED_H
#define OUTPOST_NET_SPEED_H

#include <stddef.h>
#include <stdint.h>

#define SPEED_DEFAULT_MINIMUM 1024 /* bytes/s, http.min_speed's default */

/* The speed a transfer must keep up, in bytes/s (at least 1): configured
 * (SPEED_DEFAULT_MINIMUM when not positive), or half of cap when cap is
 * positive and that is lower. */
int64_t speed_minimum(int64_t configured, int64_t cap);

/* The time bytes take at minimum (> 0) bytes/s, in ms, added to an
 * installer's deadline: one second more than the whole seconds, and never
 * more than 30 days, so a hostile Content-Length near INT64_MAX cannot
 * overflow the deadline. */
int64_t speed_allowance_ms(int64_t bytes, int64_t minimum);

/* Under a receive cap of cap bytes/s (0 or less: none), with taken bytes
 * taken since from_ms: how many ms from now_ms before more may be taken
 * (0: at once). */
int64_t speed_pace_wait_ms(int64_t from_ms, int64_t taken, int64_t cap, int64_t now_ms);

/* How much a reader that paces itself (file://) takes at once: normal, or
 * an eighth of a second's worth under a cap (at least 4 KiB), so that the
 * pace is held at a fine grain. */
size_t speed_read_size(int64_t cap, size_t normal);

#endif
