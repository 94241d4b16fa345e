/*
 * proxy.h — which proxy a transfer goes through and how it authenticates,
 * set on every libcurl handle (curl.c) from one place (PRODUCT.md section
 * 2, `proxy`, `proxy_auth`, `proxy_keytab`).
 *
 * The decision is made per origin (scheme, host, port: the API, the
 * storage host after a redirect, each mirror) and kept for the run:
 *   - `proxy` "direct": no proxy; a URL: that proxy for every origin;
 *   - "system" (or null): what the platform says for the URL
 *     (platform_proxy_for_url: WinHTTP's `netsh winhttp` setting, WPAD or
 *     the PAC script on Windows, the environment elsewhere), with its
 *     bypass list, and a PAC script's answer honoured in order ("PROXY a;
 *     PROXY b; DIRECT": the next one when the one before cannot be reached).
 * `proxy_auth` decides which schemes libcurl may answer a 407 with, and
 * whether it uses the process's own identity (empty credentials: SSPI on
 * Windows, GSS-API elsewhere) or the proxy URL's. The proxy's CONNECT
 * answer is never taken for the server's. No proxy URL is ever shown with
 * its password.
 */
#ifndef OUTPOST_NET_PROXY_H
#define OUTPOST_NET_PROXY_H

#include <stdbool.h>

#include <curl/curl.h>

#include "base/error.h"
#include "core/config.h"
#include "platform/platform.h"

/* At most this many proxies of one list are tried (a PAC answer's). */
#define PROXY_CANDIDATES_MAX 8

/* Why an origin goes where it goes (what -v says). */
typedef enum {
    PROXY_WHY_CONFIG,        /* the configuration's `proxy` URL */
    PROXY_WHY_CONFIG_DIRECT, /* `proxy` is "direct" */
    PROXY_WHY_SETTING,       /* the system's setting (environment variable, netsh winhttp) */
    PROXY_WHY_PAC,           /* a PAC script's answer */
    PROXY_WHY_BYPASS,        /* the setting's bypass list (NO_PROXY, netsh winhttp's bypass) names the host */
    PROXY_WHY_NONE           /* the system names no proxy */
} proxy_why;

/* One origin's decision: candidates in order, a NULL one meaning direct. */
typedef struct proxy_choice {
    proxy_why why;
    size_t count;
    char *candidates[PROXY_CANDIDATES_MAX]; /* libcurl proxy URLs (may hold a password), NULL: direct */
    char *source;                           /* what decided ("HTTPS_PROXY", "netsh winhttp", the PAC's URL), or NULL */
} proxy_choice;

/* Frees what a choice holds (wiping the URLs) and zeroes it. */
void proxy_choice_clear(proxy_choice *choice);

/*
 * The decision for url from the configured `proxy` and, for "system" or
 * NULL, what the platform answered for it (sys; ignored otherwise).
 * ERR_TEMPORARY (exit 75) names the PAC script when its answer names no
 * usable proxy; ERR_NOMEM; ERR_CONFIG for a URL that does not parse.
 * *out is cleared first; clear it with proxy_choice_clear.
 */
MUST_CHECK error_code proxy_choose(const char *configured, const platform_proxy *sys, const char *url,
                                   proxy_choice *out, error_info *err);

/*
 * Whether host (as in a URL, IPv6 in brackets or not) is named by a bypass
 * list: curl's NO_PROXY form (commas or spaces; "*"; a domain and its
 * subdomains, a leading dot optional; an IPv4 address or CIDR range) when
 * winhttp is false, WinHTTP's (semicolons or spaces; "<local>" for a name
 * without a dot; '*' wildcards; an optional scheme:// and :port) when true.
 * scheme ("http", "https") and port only matter to WinHTTP entries naming
 * them.
 */
bool proxy_bypassed(const char *list, bool winhttp, const char *scheme, const char *host, const char *port);

/*
 * The libcurl CURLOPT_PROXYAUTH bits for `proxy_auth` mode, and whether
 * the process's own identity is used (CURLOPT_PROXYUSERPWD ":"): when the
 * proxy URL carries no credentials (has_credentials false) and the mode
 * allows Negotiate or NTLM. sspi: libcurl has SSPI (Windows), whose NTLM
 * speaks for the process's account; elsewhere NTLM needs the URL's
 * credentials (libcurl's own NTLM has no identity of its own).
 */
unsigned long proxy_auth_bits(config_proxy_auth mode, bool has_credentials, bool sspi, bool *own_identity);

/* The scheme libcurl answered with ("Negotiate", "NTLM", "Digest",
 * "Basic"), from the schemes the proxy offered (CURLINFO_PROXYAUTH_AVAIL)
 * and those allowed, in libcurl's order of preference; NULL if none. */
const char *proxy_auth_scheme_name(unsigned long offered, unsigned long allowed);

typedef struct proxy_setup proxy_setup;

/*
 * The run's proxy setup from the configuration's `proxy` and
 * `proxy_auth`, copied (the URL wiped when freed: it may hold a password).
 * Fails with ERR_NOMEM only; *out is set on success, free it with
 * proxy_free.
 */
MUST_CHECK error_code proxy_new(const config *cfg, proxy_setup **out, error_info *err);

/* Frees the setup. NULL is ignored. */
void proxy_free(proxy_setup *p);

/*
 * Sets the proxy and its authentication on e, which is about to fetch url,
 * deciding for url's origin the first time (then *note, when note is not
 * NULL, gets the -v line saying what and why; else it is ""). Fails as
 * proxy_choose (a PAC script that cannot be fetched or run: ERR_TEMPORARY
 * naming it) or ERR_NOMEM.
 */
MUST_CHECK error_code proxy_apply(proxy_setup *p, CURL *e, const char *url, char *note, size_t note_size,
                                  error_info *err);

/*
 * After an attempt to url could not reach its proxy: moves url's origin to
 * the next candidate of its list (a PAC answer's next PROXY or DIRECT).
 * True when there is one (the retry uses it), with *note the -v line.
 */
bool proxy_next(proxy_setup *p, const char *url, char *note, size_t note_size);

/* The proxy url's origin currently goes through, as it may be shown
 * (without a password), into buf; "" when direct or not decided. */
void proxy_shown(const proxy_setup *p, const char *url, char *buf, size_t size);

/* Whether the scheme that authenticates url's origin to its proxy is still
 * to be said at -v (it goes through a proxy, and nothing was said yet). */
bool proxy_auth_unsaid(const proxy_setup *p, const char *url);

/*
 * After a transfer to url through its proxy ended with the proxy's consent:
 * the -v line naming the scheme of the last Proxy-Authorization sent
 * (sent: "Negotiate", "NTLM", "Basic", "Digest"; "" when none was needed),
 * once per origin. False (and *note "") when nothing is to be said.
 */
bool proxy_note_auth(proxy_setup *p, const char *url, const char *sent, char *note, size_t note_size);

/*
 * The message for a 407 libcurl could not answer (exit 3): names the proxy
 * url's origin went through (without its password) and what to check under
 * the configured `proxy_auth`.
 */
void proxy_refused_message(const proxy_setup *p, const char *url, char *buf, size_t size);

/* Whether the configuration names a proxy (a failure then points at `proxy` too). */
bool proxy_configured(const proxy_setup *p);

#endif
