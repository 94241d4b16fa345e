/*
 * version.h — installer version strings (PRODUCT.md section 4.1).
 *
 * A version is dotted numbers with an optional suffix after '-' or '+':
 * "26.01.03.24329-0de7ab+", "3.2.0-rc1", "24.3.0". Numeric parts compare
 * numerically (leading zeros allowed, missing parts are 0); a suffix naming a
 * pre-release (alpha, beta, rc, pre, preview, optionally numbered, any case)
 * sorts before the plain release; any other suffix is build metadata and
 * does not change the order. Versions are used in paths, so a string that is
 * empty, over 64 characters, or holds anything but [0-9A-Za-z.+-] is invalid.
 */
#ifndef OUTPOST_VERSION_H
#define OUTPOST_VERSION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define VERSION_MAX_LENGTH 64

/*
 * Whether text is a usable version: the character and length rules above,
 * at least one leading numeric part, and nothing that could name another
 * directory ("." or ".." alone, a leading '.'). On false, *err (may be NULL)
 * says why, as ERR_REJECTED.
 */
bool version_is_valid(const char *text, error_info *err);

/*
 * Compares two valid versions: <0 when a is older than b, 0 when they are the
 * same release ("26.01.03.24329-0de7ab+" equals "26.01.03.24329"), >0 when a
 * is newer. "3.2.0-rc1" < "3.2.0-rc2" < "3.2.0"; "alpha" < "beta" < "pre" =
 * "preview" < "rc". Invalid input compares as older than anything valid.
 */
int version_compare(const char *a, const char *b);

/* Whether latest is an update for installed (any valid version is newer than
 * none; NULL latest never is): status.json's and check's update_available. */
bool version_is_update(const char *latest, const char *installed);

/*
 * Compares only the numeric parts of two versions, numerically, with the
 * rules above (leading zeros allowed, missing parts are 0), and ignores any
 * suffix: "26.1.3.24329" equals "26.01.03.24329-0de7ab+" and "3.2.0-rc1".
 * This is how the version inside a signed installer is bound to the version
 * it was offered under (PRODUCT.md 4.3). Text without leading digits
 * compares as 0.
 */
int version_compare_numbers(const char *a, const char *b);

/*
 * The leading numeric parts of a version as a file's own metadata states it
 * (a PE version resource, an MSI ProductVersion), written dotted into out:
 * "26.01.03.24329-0de7ab" -> "26.01.03.24329", "26, 1, 3, 24329" (the old
 * resource-compiler style) -> "26.1.3.24329", " 5.2.1 (build 7)" -> "5.2.1".
 * Parts are separated by '.' or ',' with optional spaces around a comma.
 * False (out "") when text does not start with a digit after spaces, or
 * when the numbers do not fit in size bytes.
 */
bool version_numbers_of(const char *text, char *out, size_t size);

#endif
