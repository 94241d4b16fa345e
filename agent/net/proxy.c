/*
 * proxy.c — the proxy of every transfer (see proxy.h): the decision per
 * origin (configured, the platform's setting or PAC answer, bypass list,
 * direct), kept for the run; the authentication schemes under
 * `proxy_auth`; the -v lines saying what was chosen and why.
 */
#include "net/proxy.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/text.h"
#include "net/url.h"
#include "platform/platform.h"

/* ---- Decisions --------------------------------------------------------------------------- */

void proxy_choice_clear(proxy_choice *choice)
{
    for (size_t i = 0; i < choice->count; i++)
        dynbuf_secret_free(choice->candidates[i]);
    free(choice->source);
    memset(choice, 0, sizeof *choice);
}

/* Appends a candidate (a copy of url, or NULL for direct); false when out of memory. */
static bool add_candidate(proxy_choice *c, const char *url, size_t len)
{
    if (c->count >= PROXY_CANDIDATES_MAX)
        return true; /* the rest of a long list is never reached in practice */
    char *copy = NULL;
    if (url) {
        copy = malloc(len + 1);
        if (!copy)
            return false;
        memcpy(copy, url, len);
        copy[len] = '\0';
    }
    c->candidates[c->count++] = copy;
    return true;
}

/* Appends scheme_prefix + host:port (len bytes at hostport). */
static bool add_hostport(proxy_choice *c, const char *scheme_prefix, const char *hostport, size_t len)
{
    char buf[600];
    int n = snprintf(buf, sizeof buf, "%s%.*s", scheme_prefix, (int)(len < 500 ? len : 500), hostport);
    return add_candidate(c, buf, (size_t)n);
}

static bool is_separator(char ch, const char *separators)
{
    return ch && strchr(separators, ch) != NULL;
}

/* The next token of list between separators: *at moves past it; false at the end. */
static bool next_token(const char **at, const char *separators, const char **start, size_t *len)
{
    const char *p = *at;
    while (is_separator(*p, separators))
        p++;
    if (!*p)
        return false;
    const char *q = p;
    while (*q && !is_separator(*q, separators))
        q++;
    *start = p;
    *len = (size_t)(q - p);
    *at = q;
    return true;
}

/* A PAC answer ("PROXY a:1; HTTPS b:2; SOCKS5 c:3; DIRECT") into candidates, in order. */
static bool parse_pac_answer(const char *answer, proxy_choice *c)
{
    const char *at = answer, *item;
    size_t len;
    while (next_token(&at, ";", &item, &len)) {
        while (len && isspace((unsigned char)*item)) {
            item++;
            len--;
        }
        while (len && isspace((unsigned char)item[len - 1]))
            len--;
        size_t word = 0;
        while (word < len && !isspace((unsigned char)item[word]))
            word++;
        const char *arg = item + word;
        size_t arg_len = len - word;
        while (arg_len && isspace((unsigned char)*arg)) {
            arg++;
            arg_len--;
        }
        static const struct {
            const char *keyword, *prefix;
        } kinds[] = {{"PROXY", "http://"},   {"HTTP", "http://"},     {"HTTPS", "https://"},
                     {"SOCKS", "socks4://"}, {"SOCKS4", "socks4://"}, {"SOCKS5", "socks5h://"}};
        if (word == 6 && text_equal_nocase_n(item, "DIRECT", 6) && arg_len == 0) {
            if (!add_candidate(c, NULL, 0))
                return false;
            continue;
        }
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            if (word == strlen(kinds[k].keyword) && text_equal_nocase_n(item, kinds[k].keyword, word) && arg_len) {
                if (!add_hostport(c, kinds[k].prefix, arg, arg_len))
                    return false;
                break;
            }
        /* Anything else (an unknown keyword) is skipped, as browsers do. */
    }
    return true;
}

/* WinHTTP's static list: "host:port", "http=h:p;https=h:p", "socks=h:p", entries
 * separated by semicolons or spaces; those for url's scheme, or for any. */
static bool parse_winhttp_list(const char *list, const char *scheme, proxy_choice *c)
{
    const char *at = list, *item;
    size_t len;
    while (next_token(&at, "; \t", &item, &len)) {
        const char *eq = memchr(item, '=', len);
        const char *prefix = "http://";
        if (eq) {
            size_t name = (size_t)(eq - item);
            bool socks = name == 5 && text_equal_nocase_n(item, "socks", 5);
            bool mine = name == strlen(scheme) && text_equal_nocase_n(item, scheme, name);
            if (!socks && !mine)
                continue;
            if (socks)
                prefix = "socks4://";
            len -= name + 1;
            item = eq + 1;
        }
        if (!len)
            continue;
        if (memchr(item, ':', len) && strstr(item, "://") && (size_t)(strstr(item, "://") - item) < len)
            prefix = ""; /* already a URL: "http://host:port" */
        if (!add_hostport(c, prefix, item, len))
            return false;
    }
    return true;
}

/* Host without IPv6 brackets, lower case, into buf. */
static void bare_host(const char *host, char *buf, size_t size)
{
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
        host++;
        n -= 2;
    }
    if (n >= size)
        n = size - 1;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)tolower((unsigned char)host[i]);
    buf[n] = '\0';
}

static bool parse_ipv4(const char *s, size_t len, unsigned long *out)
{
    unsigned long value = 0;
    int parts = 0;
    size_t i = 0;
    while (parts < 4) {
        if (i >= len || !isdigit((unsigned char)s[i]))
            return false;
        unsigned long part = 0;
        size_t digits = 0;
        while (i < len && isdigit((unsigned char)s[i]) && digits < 4) {
            part = part * 10 + (unsigned long)(s[i++] - '0');
            digits++;
        }
        if (part > 255)
            return false;
        value = (value << 8) | part;
        if (++parts < 4) {
            if (i >= len || s[i] != '.')
                return false;
            i++;
        }
    }
    if (i != len)
        return false;
    *out = value;
    return true;
}

/* A glob with '*' (any run) against text, without regard to case. */
static bool glob_match(const char *pattern, size_t plen, const char *text)
{
    if (plen == 0)
        return *text == '\0';
    if (*pattern == '*') {
        for (const char *t = text;; t++) {
            if (glob_match(pattern + 1, plen - 1, t))
                return true;
            if (!*t)
                return false;
        }
    }
    return *text && tolower((unsigned char)*pattern) == tolower((unsigned char)*text) &&
           glob_match(pattern + 1, plen - 1, text + 1);
}

/* One curl NO_PROXY entry against host (bare, lower case). */
static bool no_proxy_entry_matches(const char *entry, size_t len, const char *host)
{
    if (len == 1 && entry[0] == '*')
        return true;
    const char *slash = memchr(entry, '/', len);
    unsigned long ip, net;
    if (slash && parse_ipv4(host, strlen(host), &ip) && parse_ipv4(entry, (size_t)(slash - entry), &net)) {
        int bits = atoi(slash + 1);
        if (bits < 0 || bits > 32)
            return false;
        unsigned long mask = bits == 0 ? 0 : (0xffffffffUL << (32 - bits)) & 0xffffffffUL;
        return (ip & mask) == (net & mask);
    }
    if (entry[0] == '.') {
        entry++;
        len--;
    }
    if (len >= 2 && entry[0] == '[' && entry[len - 1] == ']') {
        entry++;
        len -= 2;
    }
    size_t hlen = strlen(host);
    if (len == 0 || len > hlen || !text_equal_nocase_n(host + hlen - len, entry, len))
        return false;
    return hlen == len || host[hlen - len - 1] == '.';
}

/* One WinHTTP bypass entry against scheme, host (bare, lower case) and port. */
static bool winhttp_entry_matches(const char *entry, size_t len, const char *scheme, const char *host, const char *port)
{
    if (len == 7 && text_equal_nocase_n(entry, "<local>", 7))
        return strchr(host, '.') == NULL && strchr(host, ':') == NULL;
    const char *sep = NULL;
    for (size_t i = 0; i + 3 <= len; i++)
        if (memcmp(entry + i, "://", 3) == 0) {
            sep = entry + i;
            break;
        }
    if (sep) {
        size_t slen = (size_t)(sep - entry);
        if (!(slen == strlen(scheme) && text_equal_nocase_n(entry, scheme, slen)))
            return false;
        len -= slen + 3;
        entry = sep + 3;
    }
    /* host[:port]: a port is the digits after the last colon, outside brackets. */
    const char *colon = NULL;
    for (size_t i = len; i > 0; i--) {
        if (entry[i - 1] == ':') {
            colon = entry + i - 1;
            break;
        }
        if (!isdigit((unsigned char)entry[i - 1]) && entry[i - 1] != '*')
            break;
    }
    if (colon && memchr(entry, ':', (size_t)(colon - entry)) && entry[0] != '[')
        colon = NULL; /* a bare IPv6 address */
    if (colon) {
        size_t plen = len - (size_t)(colon - entry) - 1;
        if (!glob_match(colon + 1, plen, port))
            return false;
        len = (size_t)(colon - entry);
    }
    if (len >= 2 && entry[0] == '[' && entry[len - 1] == ']') {
        entry++;
        len -= 2;
    }
    return glob_match(entry, len, host);
}

bool proxy_bypassed(const char *list, bool winhttp, const char *scheme, const char *host, const char *port)
{
    if (!list || !host)
        return false;
    char bare[300];
    bare_host(host, bare, sizeof bare);
    const char *at = list, *entry;
    size_t len;
    while (next_token(&at, winhttp ? "; \t\r\n" : ", \t\r\n", &entry, &len)) {
        if (winhttp ? winhttp_entry_matches(entry, len, scheme ? scheme : "", bare, port ? port : "")
                    : no_proxy_entry_matches(entry, len, bare))
            return true;
    }
    return false;
}

static MUST_CHECK error_code set_source(proxy_choice *out, const char *source, error_info *err)
{
    if (source && !(out->source = text_dup(source)))
        return error_set(err, ERR_NOMEM, "out of memory choosing the proxy");
    return ERR_OK;
}

error_code proxy_choose(const char *configured, const platform_proxy *sys, const char *url, proxy_choice *out,
                        error_info *err)
{
    memset(out, 0, sizeof *out);
    if (configured && strcmp(configured, "direct") == 0) {
        out->why = PROXY_WHY_CONFIG_DIRECT;
        return add_candidate(out, NULL, 0) ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory choosing the proxy");
    }
    if (configured && strcmp(configured, "system") != 0) {
        out->why = PROXY_WHY_CONFIG;
        if (!add_candidate(out, configured, strlen(configured)))
            return error_set(err, ERR_NOMEM, "out of memory choosing the proxy");
        return set_source(out, "`proxy`", err);
    }
    if (!sys || sys->kind == PLATFORM_PROXY_NONE || !sys->proxies) {
        out->why = PROXY_WHY_NONE;
        error_code rc = set_source(out, sys ? sys->source : NULL, err);
        if (rc == ERR_OK && !add_candidate(out, NULL, 0))
            rc = error_set(err, ERR_NOMEM, "out of memory choosing the proxy");
        if (rc != ERR_OK)
            proxy_choice_clear(out);
        return rc;
    }
    char *scheme = NULL, *host = NULL;
    char *origin = url_origin(url, &scheme, &host);
    if (!origin || !scheme || !host) {
        free(origin);
        free(scheme);
        free(host);
        return error_set(err, ERR_CONFIG, "cannot choose a proxy for \"%.200s\": not a URL", url);
    }
    const char *port = strrchr(origin, ':') + 1;
    error_code rc = set_source(out, sys->source, err);
    bool winhttp_form = sys->kind != PLATFORM_PROXY_URL;
    bool ok = true;
    if (rc != ERR_OK) {
        ok = true;
    } else if (proxy_bypassed(sys->bypass, winhttp_form, scheme, host, port)) {
        out->why = PROXY_WHY_BYPASS;
        ok = add_candidate(out, NULL, 0);
    } else if (sys->kind == PLATFORM_PROXY_URL) {
        out->why = PROXY_WHY_SETTING;
        ok = add_candidate(out, sys->proxies, strlen(sys->proxies));
    } else if (sys->kind == PLATFORM_PROXY_WINHTTP) {
        out->why = PROXY_WHY_SETTING;
        ok = parse_winhttp_list(sys->proxies, scheme, out);
        if (ok && out->count == 0) {
            out->why = PROXY_WHY_NONE; /* e.g. only "http=..." for an https URL */
            ok = add_candidate(out, NULL, 0);
        }
    } else {
        out->why = PROXY_WHY_PAC;
        ok = parse_pac_answer(sys->proxies, out);
        if (ok && out->count == 0)
            rc = error_set(err, ERR_TEMPORARY,
                           "the proxy script %s answered \"%.200s\" for %s, which names no proxy outpost can use "
                           "(PROXY, HTTPS, SOCKS, SOCKS5 or DIRECT); correct the script",
                           sys->source ? sys->source : "(PAC)", sys->proxies, origin);
    }
    if (rc == ERR_OK && !ok)
        rc = error_set(err, ERR_NOMEM, "out of memory choosing the proxy");
    if (rc != ERR_OK)
        proxy_choice_clear(out);
    free(origin);
    free(scheme);
    free(host);
    return rc;
}

/* ---- Authentication -------------------------------------------------------------------------- */

unsigned long proxy_auth_bits(config_proxy_auth mode, bool has_credentials, bool sspi, bool *own_identity)
{
    unsigned long bits = CURLAUTH_NONE;
    /* NTLM with the process's identity exists only through SSPI. */
    bool ntlm_own = sspi;
    switch (mode) {
    case CONFIG_PROXY_AUTH_AUTO:
        bits = CURLAUTH_NEGOTIATE;
        if (has_credentials)
            bits |= CURLAUTH_NTLM | CURLAUTH_DIGEST | CURLAUTH_BASIC;
        else if (ntlm_own)
            bits |= CURLAUTH_NTLM;
        break;
    case CONFIG_PROXY_AUTH_NEGOTIATE: bits = CURLAUTH_NEGOTIATE; break;
    case CONFIG_PROXY_AUTH_NTLM: bits = CURLAUTH_NTLM; break;
    case CONFIG_PROXY_AUTH_BASIC: bits = CURLAUTH_BASIC | CURLAUTH_DIGEST; break;
    case CONFIG_PROXY_AUTH_NONE: bits = CURLAUTH_NONE; break;
    }
    /* Negotiate always speaks for the process (libcurl's GSS-API and SSPI
     * ignore a user name for it); NTLM does through SSPI when the URL has none. */
    bool own = !has_credentials && (bits & (CURLAUTH_NEGOTIATE | CURLAUTH_NTLM)) != 0;
    if (own_identity)
        *own_identity = own;
    return bits;
}

const char *proxy_auth_scheme_name(unsigned long offered, unsigned long allowed)
{
    unsigned long both = offered & allowed;
    /* libcurl's order of preference (http.c: pickoneauth). */
    if (both & CURLAUTH_NEGOTIATE)
        return "Negotiate";
    if (both & CURLAUTH_DIGEST)
        return "Digest";
    if (both & CURLAUTH_NTLM)
        return "NTLM";
    if (both & CURLAUTH_BASIC)
        return "Basic";
    return NULL;
}

static const char *proxy_auth_name(config_proxy_auth mode)
{
    switch (mode) {
    case CONFIG_PROXY_AUTH_AUTO: return "auto";
    case CONFIG_PROXY_AUTH_NEGOTIATE: return "negotiate";
    case CONFIG_PROXY_AUTH_NTLM: return "ntlm";
    case CONFIG_PROXY_AUTH_BASIC: return "basic";
    case CONFIG_PROXY_AUTH_NONE: return "none";
    }
    return "";
}

/* ---- The run's setup: one decision per origin ------------------------------------------------ */

typedef struct origin_entry {
    char *origin;        /* "scheme://host:port" */
    proxy_choice choice; /* its candidates */
    size_t at;           /* the one in use */
    bool auth_noted;     /* the -v line on its authentication was written */
} origin_entry;

struct proxy_setup {
    char *configured; /* `proxy` (may hold a password); NULL: "system" */
    config_proxy_auth auth;
    bool sspi; /* libcurl authenticates with SSPI (Windows) */
    origin_entry *origins;
    size_t origin_count;
};

error_code proxy_new(const config *cfg, proxy_setup **out, error_info *err)
{
    proxy_setup *p = calloc(1, sizeof *p);
    const char *configured = cfg->proxy;
    if (p && configured)
        p->configured = text_dup(configured);
    if (!p || (configured && !p->configured)) {
        free(p);
        return error_set(err, ERR_NOMEM, "out of memory creating the HTTP client");
    }
    p->auth = cfg->proxy_auth;
    const curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    p->sspi = info && (info->features & CURL_VERSION_SSPI);
    bool gss = info && (info->features & CURL_VERSION_GSSAPI);
    error_code rc = ERR_OK;
    /* libcurl without SPNEGO drops Negotiate from CURLOPT_PROXYAUTH and
     * refuses the option, which would leave its default (Basic) in force:
     * a restriction it cannot keep is a configuration error, said once. */
    if (cfg->proxy_auth == CONFIG_PROXY_AUTH_NEGOTIATE && !gss && !p->sspi)
        rc = error_set(err, ERR_CONFIG,
                       "`proxy_auth` is \"negotiate\" but this build's libcurl has no GSS-API or SSPI (Kerberos): "
                       "the static Linux release binaries have none; build outpost against the distribution's "
                       "libcurl (docs/development.md) or choose another `proxy_auth`");
    else if (cfg->proxy_keytab && !gss && !p->sspi)
        rc = error_set(err, ERR_CONFIG,
                       "`proxy_keytab` is set but this build's libcurl has no GSS-API (Kerberos): the static "
                       "release binaries have none; build outpost against the distribution's libcurl "
                       "(docs/development.md) or remove the key");
    else if (cfg->proxy_keytab)
        rc = platform_kerberos_use_keytab(cfg->proxy_keytab, err);
    if (rc != ERR_OK) {
        proxy_free(p);
        return rc;
    }
    *out = p;
    return ERR_OK;
}

void proxy_free(proxy_setup *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->origin_count; i++) {
        free(p->origins[i].origin);
        proxy_choice_clear(&p->origins[i].choice);
    }
    free(p->origins);
    dynbuf_secret_free(p->configured);
    free(p);
}

static origin_entry *find_origin(const proxy_setup *p, const char *url)
{
    char *origin = url_origin(url, NULL, NULL);
    origin_entry *found = NULL;
    for (size_t i = 0; origin && i < p->origin_count && !found; i++)
        if (strcmp(p->origins[i].origin, origin) == 0)
            found = &p->origins[i];
    free(origin);
    return found;
}

static const char *why_words(const proxy_choice *c)
{
    switch (c->why) {
    case PROXY_WHY_CONFIG: return "the configuration's `proxy`";
    case PROXY_WHY_CONFIG_DIRECT: return "`proxy` is \"direct\"";
    case PROXY_WHY_SETTING: return "the system's setting";
    case PROXY_WHY_PAC: return "the PAC script's answer";
    case PROXY_WHY_BYPASS: return "the setting's bypass list names the host";
    case PROXY_WHY_NONE: return "the system names no proxy";
    }
    return "";
}

/* "proxy for ORIGIN: URL (why, source[, candidate i of n])" into note. */
static void describe(const origin_entry *o, char *note, size_t size)
{
    if (!note || !size)
        return;
    const char *candidate = o->choice.candidates[o->at];
    char *shown = candidate ? text_url_redact(candidate) : NULL;
    char order[40] = "";
    if (o->choice.count > 1)
        snprintf(order, sizeof order, ", %zu of %zu", o->at + 1, o->choice.count);
    snprintf(note, size, "proxy for %s: %s (%s%s%s%s)", o->origin,
             candidate ? (shown ? shown : "(out of memory)") : "direct", why_words(&o->choice),
             o->choice.source ? ": " : "", o->choice.source ? o->choice.source : "", order);
    free(shown);
}

/* url's origin entry, deciding it the first time (*fresh then true). */
static MUST_CHECK error_code origin_for(proxy_setup *p, const char *url, origin_entry **out, bool *fresh,
                                        error_info *err)
{
    *fresh = false;
    if ((*out = find_origin(p, url)) != NULL)
        return ERR_OK;
    char *origin = url_origin(url, NULL, NULL);
    if (!origin)
        return error_set(err, ERR_CONFIG, "cannot choose a proxy for \"%.200s\": not a URL", url);
    platform_proxy sys;
    memset(&sys, 0, sizeof sys);
    bool system = !p->configured || strcmp(p->configured, "system") == 0;
    error_code rc = system ? platform_proxy_for_url(url, &sys, err) : ERR_OK;
    proxy_choice choice;
    memset(&choice, 0, sizeof choice);
    if (rc == ERR_OK)
        rc = proxy_choose(p->configured, system ? &sys : NULL, url, &choice, err);
    platform_proxy_clear(&sys);
    origin_entry *grown = NULL;
    if (rc == ERR_OK) {
        grown = realloc(p->origins, (p->origin_count + 1) * sizeof *grown);
        if (!grown) {
            proxy_choice_clear(&choice);
            rc = error_set(err, ERR_NOMEM, "out of memory choosing the proxy");
        }
    }
    if (rc != ERR_OK) {
        free(origin);
        return rc;
    }
    p->origins = grown;
    origin_entry *o = &p->origins[p->origin_count++];
    memset(o, 0, sizeof *o);
    o->origin = origin;
    o->choice = choice;
    *out = o;
    *fresh = true;
    return ERR_OK;
}

/* Whether the proxy URL carries "user[:password]@". */
static bool has_user_info(const char *proxy_url)
{
    const char *start = strstr(proxy_url, "://");
    start = start ? start + 3 : proxy_url;
    const char *at = strchr(start, '@');
    const char *slash = strchr(start, '/');
    return at && (!slash || at < slash);
}

error_code proxy_apply(proxy_setup *p, CURL *e, const char *url, char *note, size_t note_size, error_info *err)
{
    if (note && note_size)
        note[0] = '\0';
    origin_entry *o = NULL;
    bool fresh = false;
    error_code rc = origin_for(p, url, &o, &fresh, err);
    if (rc != ERR_OK)
        return rc;
    if (fresh)
        describe(o, note, note_size);
    const char *candidate = o->choice.candidates[o->at];
    /* "" is direct, and keeps libcurl from reading the environment itself:
     * the decision above is the only one. */
    curl_easy_setopt(e, CURLOPT_PROXY, candidate ? candidate : "");
    bool own = false;
    unsigned long bits = proxy_auth_bits(p->auth, candidate && has_user_info(candidate), p->sspi, &own);
    /* Refused when libcurl has none of the schemes (it then keeps Basic),
     * as "auto" without credentials on a libcurl without GSS-API: then no
     * scheme at all (a proxy that asks gets exit 3), never one the
     * configuration did not allow. */
    if (curl_easy_setopt(e, CURLOPT_PROXYAUTH, bits) != CURLE_OK) {
        if (p->auth != CONFIG_PROXY_AUTH_AUTO)
            return error_set(err, ERR_CONFIG, "`proxy_auth` \"%s\": this build's libcurl has none of its schemes",
                             proxy_auth_name(p->auth));
        curl_easy_setopt(e, CURLOPT_PROXYAUTH, (unsigned long)CURLAUTH_NONE);
        own = false;
    }
    /* Empty credentials: Negotiate (GSS-API, SSPI) and SSPI's NTLM speak
     * for the process's own identity. NULL leaves the URL's. */
    curl_easy_setopt(e, CURLOPT_PROXYUSERPWD, candidate && own ? ":" : NULL);
    /* The proxy's answer to CONNECT ("200 Connection established") is not
     * the server's: without this libcurl hands it to the header callback
     * as if it were the response (issue 13). */
    curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    return ERR_OK;
}

bool proxy_next(proxy_setup *p, const char *url, char *note, size_t note_size)
{
    if (note && note_size)
        note[0] = '\0';
    origin_entry *o = find_origin(p, url);
    if (!o || o->at + 1 >= o->choice.count || !o->choice.candidates[o->at])
        return false;
    o->at++;
    describe(o, note, note_size);
    return true;
}

void proxy_shown(const proxy_setup *p, const char *url, char *buf, size_t size)
{
    buf[0] = '\0';
    const origin_entry *o = find_origin(p, url);
    const char *candidate = o ? o->choice.candidates[o->at] : NULL;
    if (!candidate)
        return;
    char *shown = text_url_redact(candidate);
    snprintf(buf, size, "%s", shown ? shown : "the proxy");
    free(shown);
}

bool proxy_auth_unsaid(const proxy_setup *p, const char *url)
{
    const origin_entry *o = find_origin(p, url);
    return o && o->choice.candidates[o->at] && !o->auth_noted;
}

bool proxy_note_auth(proxy_setup *p, const char *url, const char *sent, char *note, size_t note_size)
{
    note[0] = '\0';
    origin_entry *o = find_origin(p, url);
    const char *candidate = o ? o->choice.candidates[o->at] : NULL;
    if (!candidate || o->auth_noted)
        return false;
    o->auth_noted = true;
    bool own = false;
    (void)proxy_auth_bits(p->auth, has_user_info(candidate), p->sspi, &own);
    bool as_self = sent[0] && (text_equal_nocase(sent, "Negotiate") || (own && text_equal_nocase(sent, "NTLM")));
    const char *whose = !sent[0]  ? ""
                        : as_self ? " with the process's own identity"
                                  : " with the proxy URL's credentials";
    char named[300] = ""; /* which account the proxy saw (CORP\\HOST$), where the OS says */
    if (as_self)
        (void)platform_proxy_identity(named, sizeof named);
    char shown[300];
    proxy_shown(p, url, shown, sizeof shown);
    snprintf(note, note_size, "proxy %s for %s: %s%s%s%s%s%s", shown, o->origin,
             sent[0] ? "authenticated with " : "no authentication asked", sent, whose, named[0] ? " (" : "", named,
             named[0] ? ")" : "");
    return true;
}

void proxy_refused_message(const proxy_setup *p, const char *url, char *buf, size_t size)
{
    char shown[300];
    proxy_shown(p, url, shown, sizeof shown);
    const origin_entry *o = find_origin(p, url);
    const char *candidate = o ? o->choice.candidates[o->at] : NULL;
    bool own = false;
    (void)proxy_auth_bits(p->auth, candidate && has_user_info(candidate), p->sspi, &own);
    const char *advice =
        p->auth == CONFIG_PROXY_AUTH_NONE ? "`proxy_auth` is \"none\"; allow a scheme the proxy offers"
        : own ? "check that the proxy accepts this machine's own identity (Windows: the account outpost runs as, "
                "SYSTEM being the computer account; elsewhere the Kerberos keytab `proxy_keytab` or the credentials "
                "cache), or put a user name and password in the `proxy` URL (http://user:password@host:port)"
              : "put the right user name and password in the `proxy` URL (http://user:password@host:port) or in "
                "HTTPS_PROXY";
    snprintf(buf, size,
             "the proxy %s refused outpost's credentials (HTTP 407 Proxy Authentication Required, `proxy_auth` "
             "\"%s\"); %s",
             shown[0] ? shown : "(unknown)", proxy_auth_name(p->auth), advice);
}

bool proxy_configured(const proxy_setup *p)
{
    return p && p->configured && strcmp(p->configured, "system") != 0 && strcmp(p->configured, "direct") != 0;
}
