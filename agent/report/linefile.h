/*
 * linefile.h — the append-only file of one line per incident that every
 * feed writes (incidents.jsonl, the OCSF and the CEF file: report/feed.h)
 * and log shippers follow, rotated by rename (PRODUCT.md section 5).
 *
 * Lines are only ever appended, never rewritten in place (shippers identify
 * files by inode or content fingerprint). Before a line would take the file
 * past max_bytes, the file is rotated: name.(keep-1) → name.keep, ...,
 * name → name.1, and the oldest beyond keep is removed; a line is never split
 * across files. A crash between two renames leaves a gap in the numbering,
 * never a lost or doubled file. linefile_close flushes and fsyncs.
 */
#ifndef OUTPOST_LINEFILE_H
#define OUTPOST_LINEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct linefile_writer linefile_writer;

/*
 * Opens path for appending (created if missing). max_bytes: rotate past
 * this size; keep: rotated files kept (>= 1). If a previous run was killed
 * in the middle of a line, the file does not end in a newline: one is
 * appended first so that the next line starts clean (the fragment stays
 * as an unparsable line; nothing is rewritten). readers_group (NULL:
 * none) may read the file, and each new one after a rotation
 * (report/feed.h). *out is freed by linefile_close.
 */
MUST_CHECK error_code linefile_open(const char *path, int64_t max_bytes, int keep, const char *readers_group,
                                    linefile_writer **out, error_info *err);

/*
 * Appends one line (len bytes, without the newline; it must not contain a
 * newline), rotating first when it would not fit. Written with a single
 * write of the whole line where the C library allows.
 */
MUST_CHECK error_code linefile_append(linefile_writer *w, const char *line, size_t len, error_info *err);

/* Flushes everything appended so far to stable storage. */
MUST_CHECK error_code linefile_sync(linefile_writer *w, error_info *err);

/* Syncs (unless w is NULL), closes and frees. Returns the sync's result. */
MUST_CHECK error_code linefile_close(linefile_writer *w, error_info *err);

/* Rotations done by this writer (for tests and the trace). */
int linefile_rotations(const linefile_writer *w);

/*
 * Calls fn(user, line, len) for every complete line (ending in a newline)
 * of path and its rotated files name.keep ... name.1, name (oldest first).
 * Lines longer than max_line are skipped. Missing files are skipped. Used
 * to recover after a crash which lines of a batch were written.
 */
MUST_CHECK error_code linefile_scan(const char *path, int keep, size_t max_line,
                                    void (*fn)(void *user, const char *line, size_t len), void *user, error_info *err);

#endif
