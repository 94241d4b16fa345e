/*
 * url.c — the URL rules (url.h) and the URL of each transfer: where it
 * starts (base_url and the route, or the URL of a URL GET, again on every
 * retry: signed storage URLs expire) and which redirects it follows, by
 * hand rather than by libcurl so that the rules do not depend on libcurl's
 * version: at most MAX_REDIRECTS hops; https:// (or http:// to loopback)
 * for the platform's transfers, https:// or http:// for a URL GET; never
 * from https:// to http://. The token goes only where the URL stays on
 * base_url's origin (same_origin).
 */
#include "net/url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base/text.h"
#include "net/http_int.h"

#define MAX_REDIRECTS 5

static bool host_is_loopback(const char *host)
{
    if (text_equal_nocase(host, "localhost") || strcmp(host, "[::1]") == 0 || strcmp(host, "::1") == 0)
        return true;
    const char *p = host;
    int64_t part[4];
    for (int i = 0; i < 4; i++) {
        if ((i > 0 && *p++ != '.') || !text_parse_digits(&p, 255, &part[i]))
            return false;
    }
    return *p == '\0' && part[0] == 127;
}

char *url_origin(const char *url, char **scheme_out, char **host_out)
{
    CURLU *u = curl_url();
    if (!u)
        return NULL;
    char *scheme = NULL, *host = NULL, *port = NULL, *origin = NULL;
    if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        size_t n = strlen(scheme) + strlen(host) + strlen(port) + 5;
        origin = malloc(n);
        if (origin) {
            snprintf(origin, n, "%s://%s:%s", scheme, host, port);
            for (char *p = origin; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                    *p = (char)(*p - 'A' + 'a');
        }
        if (scheme_out)
            *scheme_out = text_dup(scheme);
        if (host_out)
            *host_out = text_dup(host);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return origin;
}

error_code url_check(const char *url, error_info *err)
{
    char *scheme = NULL, *host = NULL;
    char *origin = url ? url_origin(url, &scheme, &host) : NULL;
    error_code rc = ERR_OK;
    if (!origin || !scheme || !host)
        rc = error_set(err, ERR_CONFIG, "\"%.200s\" is not a usable URL", url ? url : "(none)");
    else if (text_equal_nocase(scheme, "https"))
        rc = ERR_OK;
    else if (text_equal_nocase(scheme, "http") && host_is_loopback(host))
        rc = ERR_OK;
    else if (text_equal_nocase(scheme, "http"))
        rc = error_set(err, ERR_CONFIG,
                       "\"%.200s\" uses http:// to a host that is not loopback; only https:// is allowed there", url);
    else
        rc = error_set(err, ERR_CONFIG, "\"%.200s\" is not an https:// URL", url);
    free(origin);
    free(scheme);
    free(host);
    return rc;
}

char *url_resolve(const char *from, const char *location)
{
    CURLU *u = curl_url();
    if (!u)
        return NULL;
    char *out = NULL, *resolved = NULL;
    if (curl_url_set(u, CURLUPART_URL, from, 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_URL, location, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_URL, &resolved, 0) == CURLUE_OK)
        out = text_dup(resolved);
    curl_free(resolved);
    curl_url_cleanup(u);
    return out;
}

char *url_without_query(const char *url)
{
    CURLU *u = curl_url();
    char *out = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
        curl_url_set(u, CURLUPART_USER, NULL, 0);
        curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
        curl_url_set(u, CURLUPART_OPTIONS, NULL, 0);
        curl_url_set(u, CURLUPART_QUERY, NULL, 0);
        curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
        char *clean = NULL;
        if (curl_url_get(u, CURLUPART_URL, &clean, 0) == CURLUE_OK)
            out = text_dup(clean);
        curl_free(clean);
    }
    curl_url_cleanup(u);
    if (!out) /* not parsable: cut at the first '?', '#' or '@' */
        out = text_dup_n(url, strcspn(url, "?#@"));
    return out;
}

/* ---- A transfer's URL -------------------------------------------------------- */

void url_forget_hops(xfer *x)
{
    for (int i = 0; i < HTTP_KEEP_HEADERS_MAX; i++) {
        free(x->hop_kept[i]);
        x->hop_kept[i] = NULL;
    }
}

void url_set_start(http_client *c, xfer *x)
{
    size_t n = strlen(c->base_url) + strlen(x->route) + 1;
    char *url = x->direct ? text_dup(x->route) : malloc(n);
    if (url && !x->direct)
        snprintf(url, n, "%s%s", c->base_url, x->route);
    free(x->url);
    x->url = url;
    x->same_origin = !x->direct;
    x->redirects = 0;
    url_forget_hops(x);
}

error_code url_follow(http_client *c, xfer *x, error_info *why)
{
    const char *location = x->headers[H_LOCATION];
    if (!location || !*location)
        return error_set(why, ERR_PROTOCOL, "redirect (HTTP %ld) without a Location header", x->status);
    if (x->redirects >= MAX_REDIRECTS)
        return error_set(why, ERR_PROTOCOL, "more than %d redirects; giving up", MAX_REDIRECTS);
    char *target = url_resolve(x->url, location);
    error_info check;
    bool web = target && (text_equal_nocase_n(target, "https://", 8) || text_equal_nocase_n(target, "http://", 7));
    if (x->direct && target && !web) {
        char *shown = url_without_query(target);
        error_set(why, ERR_PROTOCOL, "refused a redirect to %.200s: only https:// and http:// are followed",
                  shown ? shown : "another scheme");
        free(shown);
        free(target);
        return ERR_PROTOCOL;
    }
    if (!target || (!x->direct && url_check(target, &check) != ERR_OK)) {
        char *shown = target ? url_without_query(target) : NULL;
        error_set(why, ERR_PROTOCOL, "refused a redirect to %.200s: only https:// (or http:// to loopback) is followed",
                  shown ? shown : location);
        free(shown);
        free(target);
        return ERR_PROTOCOL;
    }
    /* Schemes compare without regard to case (RFC 3986 3.1): HTTPS:// is TLS too. */
    if (text_equal_nocase_n(x->url, "https://", 8) && !text_equal_nocase_n(target, "https://", 8)) {
        /* Once on TLS, never off it (PRODUCT.md section 9): http:// is
         * allowed to a loopback base_url for tests and local gateways, but
         * an https:// answer redirecting to it would hand the rest of the
         * download, and what it decides, to anything listening there. */
        char *shown = url_without_query(target);
        error_set(why, ERR_PROTOCOL,
                  "refused a redirect from https:// to %.200s: a transfer that started on https:// never continues "
                  "without TLS; the platform or its storage host must redirect to https://",
                  shown ? shown : "an http:// URL");
        free(shown);
        free(target);
        return ERR_PROTOCOL;
    }
    char *origin = url_origin(target, NULL, NULL);
    free(x->url);
    x->url = target;
    x->same_origin = !x->direct && origin && strcmp(origin, c->origin) == 0;
    free(origin);
    x->redirects++;
    x->hop_pending = true;
    return ERR_OK;
}
