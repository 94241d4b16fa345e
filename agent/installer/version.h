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

#endif
