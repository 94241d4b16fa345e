/*
 * bundle.h — packs the current staged installer and its manifest into a
 * reproducible archive (PRODUCT.md section 1, `bundle`), for pipelines that
 * stage once and ship to many machines; `outpost stage BUNDLE` reads the
 * version back from the manifest inside.
 *
 * Same staged files, same bytes: entries sorted bytewise by name, mtime
 * fixed to the manifest's staged_at, uid/gid 0 with no user or group names,
 * mode 0644, no extended attributes; tar.gz is plain ustar (no pax headers
 * that carry times) in a gzip stream whose header holds no name or time.
 */
#ifndef OUTPOST_BUNDLE_H
#define OUTPOST_BUNDLE_H

#include "core/config.h"
#include "base/error.h"

typedef enum { BUNDLE_ZIP = 0, BUNDLE_TAR_GZ } bundle_format;

/*
 * Parses "zip" / "tar.gz" (NULL: zip). ERR_USAGE on anything else.
 */
MUST_CHECK error_code bundle_parse_format(const char *text, bundle_format *format, error_info *err);

/*
 * Writes the bundle of the current staged version to output (NULL:
 * "outpost-<version>.zip" or ".tar.gz" in the current directory) through a
 * temporary file in the same directory renamed into place. The staged file
 * is checked against its manifest first. *written (may be NULL) receives
 * the path written, malloc'd. ERR_NOT_FOUND when nothing is staged.
 */
MUST_CHECK error_code bundle_write(const config *cfg, bundle_format format, const char *output, char **written,
                                   error_info *err);

#endif
