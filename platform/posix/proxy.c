/*
 * proxy.c — the machine's proxy on POSIX systems (platform.h,
 * platform_proxy_for_url): the environment variables libcurl reads, looked
 * up here so that outpost decides (and -v says) which one applies.
 */
#include "platform/platform.h"

#include <stdlib.h>
#include <string.h>

#include "base/text.h"

/* The first of names that is set and not empty, its name in *which. */
static const char *first_set(const char *const *names, size_t count, const char **which)
{
    for (size_t i = 0; i < count; i++) {
        const char *value = platform_getenv(names[i]);
        if (value && value[0]) {
            *which = names[i];
            return value;
        }
    }
    return NULL;
}

error_code platform_proxy_for_url(const char *url, platform_proxy *out, error_info *err)
{
    memset(out, 0, sizeof *out);
    /* libcurl's own rules: <scheme>_proxy in lower case (HTTPS_PROXY in
     * upper case too, never HTTP_PROXY: a CGI program's HTTP_PROXY comes
     * from the request's "Proxy:" header), then all_proxy. */
    static const char *const https_names[] = {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
    static const char *const http_names[] = {"http_proxy", "all_proxy", "ALL_PROXY"};
    static const char *const no_proxy_names[] = {"no_proxy", "NO_PROXY"};
    bool https = text_equal_nocase_n(url, "https:", 6);
    const char *which = NULL, *bypass_name = NULL;
    const char *value = https ? first_set(https_names, 4, &which) : first_set(http_names, 3, &which);
    if (!value) {
        out->kind = PLATFORM_PROXY_NONE;
        out->source = text_dup(https ? "no https_proxy, HTTPS_PROXY or ALL_PROXY in the environment"
                                     : "no http_proxy or ALL_PROXY in the environment");
        return out->source ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory reading the proxy settings");
    }
    const char *bypass = first_set(no_proxy_names, 2, &bypass_name);
    out->kind = PLATFORM_PROXY_URL;
    out->proxies = text_dup(value);
    out->source = text_dup(which);
    out->bypass = bypass ? text_dup(bypass) : NULL;
    if (!out->proxies || !out->source || (bypass && !out->bypass)) {
        platform_proxy_clear(out);
        return error_set(err, ERR_NOMEM, "out of memory reading the proxy settings");
    }
    return ERR_OK;
}

bool platform_proxy_identity(char *buf, size_t size)
{
    if (size)
        buf[0] = '\0';
    return false;
}
