/*
 * feed.h — how the files other programs read (status.json, incidents.jsonl,
 * the metrics file) are written so that report.readers_group can read them
 * and nobody else can (PRODUCT.md section 2): a SIEM shipper, node_exporter
 * or a compliance script runs as a user in that group, never as root.
 */
#ifndef OUTPOST_FEED_H
#define OUTPOST_FEED_H

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

/* Lets readers_group read path (a feed file, or the state directory, then
 * 0750). NULL readers_group: ERR_OK, nothing changed. The message names
 * report.readers_group when the group does not exist. */
MUST_CHECK error_code feed_share(const char *path, const char *readers_group, error_info *err);

#endif
