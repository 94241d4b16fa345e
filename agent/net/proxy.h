/*
 * proxy.h — which proxy a transfer goes through and how it authenticates,
 * set on every libcurl handle (curl.c) from one place.
 *
 * Today: the configuration's `proxy` URL when set (credentials may be in
 * it: never shown), else libcurl's own HTTPS_PROXY / NO_PROXY handling;
 * any scheme libcurl can answer a 407 with (Basic, Digest, NTLM,
 * Negotiate). The proxy's CONNECT answer is never taken for the server's.
 * The system's settings (WinHTTP, WPAD and PAC scripts, evaluated per URL)
 * and the machine's own identity (PRODUCT.md section 2, `proxy_auth`) will
 * land here, behind the same calls: proxy_apply is handed each transfer's
 * URL for that reason.
 */
#ifndef OUTPOST_NET_PROXY_H
#define OUTPOST_NET_PROXY_H

#include <stdbool.h>

#include <curl/curl.h>

#include "base/error.h"

/* What a 407 that libcurl could not answer says (exit 3). Never names the
 * proxy URL: it may carry the password. */
#define PROXY_AUTH_ADVICE                                                                                              \
    "the proxy refused outpost's credentials (HTTP 407 Proxy Authentication Required); put the right user name and "   \
    "password in the `proxy` URL (http://user:password@host:port) or in HTTPS_PROXY"

typedef struct proxy_setup proxy_setup;

/*
 * The run's proxy setup from the configuration's `proxy` (NULL: the
 * environment's), copied (and wiped when freed: it may hold a password).
 * Fails with ERR_NOMEM only; *out is set on success, free it with
 * proxy_free.
 */
MUST_CHECK error_code proxy_new(const char *configured, proxy_setup **out, error_info *err);

/* Frees the setup. NULL is ignored. */
void proxy_free(proxy_setup *p);

/* Sets the proxy and its authentication on e, which is about to fetch url. */
void proxy_apply(const proxy_setup *p, CURL *e, const char *url);

/* Whether the configuration names a proxy (a failure then points at `proxy` too). */
bool proxy_configured(const proxy_setup *p);

#endif
