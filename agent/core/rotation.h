/*
 * rotation.h — the rotation by rename that the log file (core/log.c) and
 * the feed files (report/linefile.c) share: path.(keep-1) -> path.keep ...
 * path -> path.1, and the torn-last-line check both make before appending.
 * Log shippers follow a rotated file by inode, so a file is only ever
 * renamed, never copied or rewritten.
 */
#ifndef OUTPOST_ROTATION_H
#define OUTPOST_ROTATION_H

#include <stdbool.h>

#include "base/error.h"

/* "<path>.<n>", malloc'd (the caller frees it); NULL when out of memory. */
char *rotation_name(const char *path, int n);

/*
 * Shifts path.(keep-1) -> path.keep, ..., path -> path.1, oldest first, so
 * that a crash in between leaves a gap, never an overwritten newer file;
 * path.keep is replaced (the oldest dropped). Files that do not exist are
 * skipped. On failure the files not yet moved stay where they were.
 */
MUST_CHECK error_code rotation_shift(const char *path, int keep, error_info *err);

/* Whether the file's last byte is a newline (or it is empty, absent or
 * unreadable): false means a killed writer left a partial last line. */
bool rotation_ends_with_newline(const char *path);

#endif
