/*
 * proxy.c — the proxy of every transfer (see proxy.h): today the
 * configuration's `proxy` URL or libcurl's environment variables, with any
 * authentication scheme libcurl offers.
 */
#include "net/proxy.h"

#include <stdlib.h>

#include "base/dynbuf.h"
#include "base/text.h"

struct proxy_setup {
    char *url; /* the configuration's `proxy` (may hold a password), or NULL: the environment's */
};

error_code proxy_new(const char *configured, proxy_setup **out, error_info *err)
{
    proxy_setup *p = calloc(1, sizeof *p);
    if (p && configured)
        p->url = text_dup(configured);
    if (!p || (configured && !p->url)) {
        free(p);
        return error_set(err, ERR_NOMEM, "out of memory creating the HTTP client");
    }
    *out = p;
    return ERR_OK;
}

void proxy_free(proxy_setup *p)
{
    if (!p)
        return;
    dynbuf_secret_free(p->url);
    free(p);
}

void proxy_apply(const proxy_setup *p, CURL *e, const char *url)
{
    (void)url; /* the same proxy for every URL until the system's settings (PAC) land */
    if (p->url)
        curl_easy_setopt(e, CURLOPT_PROXY, p->url);
    curl_easy_setopt(e, CURLOPT_PROXYAUTH, (long)CURLAUTH_ANY);
    /* The proxy's answer to CONNECT ("200 Connection established") is not
     * the server's: without this libcurl hands it to the header callback
     * as if it were the response (issue 13). */
    curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
}

bool proxy_configured(const proxy_setup *p)
{
    return p && p->url;
}
