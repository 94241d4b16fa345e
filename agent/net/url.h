/*
 * url.h — the URL rules of outpost's transfers, over libcurl's URL parser:
 * which URLs base_url may be (https://, or http:// to a loopback host), a
 * URL's origin (scheme, host and port: where the token may go), a Location
 * resolved against the URL it came from, and a URL as it may be shown.
 * Which redirects are followed is url.c's too, on the engine's transfers
 * (http_int.h: url_follow).
 */
#ifndef OUTPOST_NET_URL_H
#define OUTPOST_NET_URL_H

#include "base/error.h"

/*
 * Whether url may be used as base_url: https://, or http:// to a loopback
 * host (localhost, 127.0.0.0/8, ::1). Sets ERR_CONFIG naming the URL
 * otherwise.
 */
MUST_CHECK error_code url_check(const char *url, error_info *err);

/* Scheme, host and port of url as "scheme://host:port" (lower case),
 * malloc'd; NULL if unparsable. *scheme_out and *host_out (either may be
 * NULL) get malloc'd copies of the parts when it parses. */
char *url_origin(const char *url, char **scheme_out, char **host_out);

/* Resolves a Location value against the URL it came from; malloc'd, NULL
 * when either does not parse. */
char *url_resolve(const char *from, const char *location);

/* url as it may be shown or recorded: without user info, query and
 * fragment (signed storage URLs carry their secrets there). malloc'd; NULL
 * only when out of memory. */
char *url_without_query(const char *url);

#endif
