/*
 * source_api.h — the platform's installer route as the source of the
 * installer offer (PRODUCT.md section 4.1): the answer's headers are the
 * offer. The fleet mirror is the other source (source_mirror.h); both are
 * downloaded by download.c, and everything after (verification, staging,
 * deploy, status) is shared.
 */
#ifndef OUTPOST_SOURCE_API_H
#define OUTPOST_SOURCE_API_H

#include "base/error.h"
#include "installer/download.h"
#include "net/http.h"

/*
 * Makes the offer of the installer route's answer h: its X-Installer-Version
 * (absent or invalid: ERR_REJECTED, PRODUCT.md 4.1), the file name reduced
 * from Content-Disposition (disposition_file_name; *file_name malloc'd or
 * NULL, the caller frees it), total_length, the final URL. offer's strings
 * are borrowed from h and *file_name. file_name NULL: the name is not
 * wanted (check) and Content-Disposition is not read.
 */
MUST_CHECK error_code source_api_offer(const http_stream_headers *h, int64_t total_length, download_offer *offer,
                                       char **file_name, error_info *err);

/*
 * check: one GET of the installer route for platform that stops after the
 * answer's headers (PRODUCT.md 4.1: no HEAD, no validators needed, at most
 * 64 KiB of body read); *version (malloc'd; the caller frees it) is its
 * X-Installer-Version, which must be there and valid (else ERR_REJECTED):
 * the answer judged as the offer (source_api_offer), without its file name.
 */
MUST_CHECK error_code source_api_latest(http_client *http, const char *platform, char **version, error_info *err);

#endif
