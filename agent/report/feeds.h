/*
 * feeds.h — the line feeds the report appends each incident to, once:
 * incidents.jsonl (report.jsonl_file, always), the OCSF file
 * (report.ocsf_file) and the CEF file (report.cef_file) (PRODUCT.md
 * section 5). A feed is a writer behind one interface (feed_writer: one
 * line per incident item, and the incident id back from a line); all of
 * them share one append path (report/linefile.h: append, rotate by
 * jsonl_max_bytes/jsonl_keep, readers group, fsync) and one crash protocol:
 *
 * - the report marks a batch's ids `pending` and saves the state;
 * - each enabled feed in turn, incidents.jsonl first, gets the batch's lines
 *   and is fsynced before the next feed is written to, so a line in a later
 *   feed implies the line in incidents.jsonl, even across a power cut;
 * - after a crash, ids found in incidents.jsonl count as written, and
 *   feeds_recover appends to each later feed the lines it lacks, built from
 *   the item incidents.jsonl holds (a dedupe by incident id over the
 *   pending batch only, never the whole file).
 * The metrics file and status.json are snapshots, not feeds.
 */
#ifndef OUTPOST_FEEDS_H
#define OUTPOST_FEEDS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "core/config.h"

struct cJSON;

/* One feed format. */
typedef struct feed_writer {
    const char *what; /* "incidents file", ... for messages */
    /* The line for one item (the incidents.jsonl shape), without newline
     * and containing none; *line is malloc'd, the caller frees it. */
    MUST_CHECK error_code (*format)(const struct cJSON *item, char **line, error_info *err);
    /* The incident id of a line format wrote, malloc'd; false when the
     * line is not one (a torn line, another program's). */
    bool (*line_id)(const char *line, size_t len, char **id);
} feed_writer;

/* The three feeds. */
extern const feed_writer feed_jsonl, feed_ocsf, feed_cef;

/* An enabled feed: its writer and its file (the configured name). */
typedef struct feed_file {
    const feed_writer *writer;
    const char *name; /* borrowed from the configuration */
} feed_file;

#define FEEDS_MAX 3

/* The enabled feeds of cfg, incidents.jsonl first; returns how many. */
size_t feeds_enabled(const config *cfg, feed_file out[FEEDS_MAX]);

/* The id of a JSON line written by the report, or false (malloc'd *id). */
bool report_line_id(const char *line, size_t len, char **id);

/*
 * After a crash: items (an array of the pending items that incidents.jsonl
 * holds) are appended to each later enabled feed that does not hold them
 * yet (its file and rotated files scanned for their ids), and each such
 * file synced. Appends nothing when all hold them.
 */
MUST_CHECK error_code feeds_recover(const config *cfg, const struct cJSON *items, error_info *err);

#endif
