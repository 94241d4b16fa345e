/*
 * feed.h — how the files other programs read (status.json, incidents.jsonl,
 * the metrics file) are written so that report.readers_group can read them
 * and nobody else can (PRODUCT.md section 2): a SIEM shipper, node_exporter
 * or a compliance script runs as a user in that group, never as root.
 */
#ifndef OUTPOST_FEED_H
#define OUTPOST_FEED_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/*
 * Replaces path with data atomically, as platform_write_atomic does. With
 * readers_group (not NULL), the new file is readable by that group (0640,
 * or its Windows entry) before it takes the name, so a reader never meets
 * the file private; without, it is owner-only.
 */
MUST_CHECK error_code feed_write(const char *path, const char *data, size_t len, const char *readers_group,
                                 error_info *err);

/*
 * feed_write in pieces, for a file too large to hold whole first
 * (status.json): feed_open starts the replacement (platform_atomic_open),
 * feed_put appends through a buffer of FEED_BUFFER bytes, feed_commit
 * writes the rest, shares the file with readers_group and renames it over
 * path, as feed_write does. feed_put returns false once anything failed
 * (sticky: later puts do nothing), so a writer may put many small pieces
 * and let feed_commit report the first failure. feed_commit and
 * feed_abort free f whatever happens; abort leaves the old file as it was.
 * readers_group is borrowed until then.
 */
#define FEED_BUFFER (64 * 1024)
typedef struct feed_stream feed_stream;
MUST_CHECK error_code feed_open(const char *path, const char *readers_group, feed_stream **out, error_info *err);
bool feed_put(feed_stream *f, const void *data, size_t len);
MUST_CHECK error_code feed_commit(feed_stream *f, error_info *err);
void feed_abort(feed_stream *f);

/* Lets readers_group read path (a feed file, or the state directory, then
 * 0750). NULL readers_group: ERR_OK, nothing changed. The message names
 * report.readers_group when the group does not exist. */
MUST_CHECK error_code feed_share(const char *path, const char *readers_group, error_info *err);

#endif
