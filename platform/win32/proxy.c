/*
 * proxy.c — the machine's proxy on Windows (platform.h,
 * platform_proxy_for_url): what WinHTTP uses for a service, as Windows
 * Update and Google's updater take it. In order: the machine-wide WinHTTP
 * setting (`netsh winhttp set proxy`, the registry value WinHttpSettings);
 * the PAC script the account's or the machine policy's Internet settings
 * name (AutoConfigURL), evaluated by WinHTTP for the URL; the proxy
 * variables of outpost's environment (HTTPS_PROXY..., as before WinHTTP
 * was asked, for whoever set them for the service); WPAD auto-detection
 * (DHCP, then DNS "wpad") when the settings ask for it, its script
 * evaluated the same way. One WinHTTP session serves the run, so WinHTTP's
 * own cache of the script and of a failed detection is kept between URLs.
 */
#include "platform/win32/win32_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <winhttp.h>
#define SECURITY_WIN32
#include <secext.h>

#include "base/text.h"

static HINTERNET proxy_session;
static SRWLOCK proxy_lock = SRWLOCK_INIT;

/* The run's WinHTTP session for the autoproxy calls, opened the first time. */
static HINTERNET session(void)
{
    AcquireSRWLockExclusive(&proxy_lock);
    if (!proxy_session) {
        proxy_session =
            WinHttpOpen(L"outpost", WINHTTP_ACCESS_TYPE_NO_PROXY, WINHTTP_NO_PROXY_NAME, WINHTTP_NO_PROXY_BYPASS, 0);
        /* A PAC script or WPAD that does not answer must not hold the run:
         * resolve, connect, send and receive are bounded. */
        if (proxy_session)
            WinHttpSetTimeouts(proxy_session, 10000, 10000, 15000, 15000);
    }
    HINTERNET h = proxy_session;
    ReleaseSRWLockExclusive(&proxy_lock);
    return h;
}

/* WinHTTP's errors have no text in the system's message table. */
static const char *winhttp_reason(DWORD e, char *buf, size_t size)
{
    switch (e) {
    case ERROR_WINHTTP_UNABLE_TO_DOWNLOAD_SCRIPT: return "the script could not be downloaded";
    case ERROR_WINHTTP_BAD_AUTO_PROXY_SCRIPT: return "the script failed to run (a syntax or run-time error)";
    case ERROR_WINHTTP_AUTODETECTION_FAILED: return "no script was found";
    case ERROR_WINHTTP_TIMEOUT: return "timed out";
    case ERROR_WINHTTP_NAME_NOT_RESOLVED: return "its host name does not resolve";
    case ERROR_WINHTTP_CANNOT_CONNECT: return "cannot connect to its server";
    case ERROR_WINHTTP_UNRECOGNIZED_SCHEME: return "its URL is not http:// or https://";
    default: break;
    }
    snprintf(buf, size, "WinHTTP error %lu", (unsigned long)e);
    return buf;
}

/* "a:1;b:2 DIRECT socks=c:3" (WinHttpGetProxyForUrl's list) as a PAC answer. */
static char *as_pac_answer(const wchar_t *list)
{
    char *narrow = win32_narrow(list);
    if (!narrow)
        return NULL;
    size_t cap = strlen(narrow) * 2 + 16, len = 0;
    char *out = malloc(cap);
    if (!out) {
        free(narrow);
        return NULL;
    }
    out[0] = '\0';
    for (char *tok = strtok(narrow, "; \t"); tok; tok = strtok(NULL, "; \t")) {
        const char *keyword = "PROXY";
        if (text_equal_nocase(tok, "DIRECT")) {
            keyword = "DIRECT";
            tok = NULL;
        } else if (text_equal_nocase_n(tok, "socks=", 6)) {
            keyword = "SOCKS";
            tok += 6;
        } else if (strchr(tok, '=')) {
            tok = strchr(tok, '=') + 1; /* "http=host:port": the proxy for that scheme */
        }
        len += (size_t)snprintf(out + len, cap - len, "%s%s%s%s", len ? "; " : "", keyword, tok ? " " : "",
                                tok ? tok : "");
    }
    free(narrow);
    return out;
}

/* WinHTTP's answer for url from the script at pac_url (NULL: WPAD's). */
static MUST_CHECK error_code evaluate(const char *url, const wchar_t *pac_url, platform_proxy *out, bool *found,
                                      char *wpad_note, size_t wpad_note_size, error_info *err)
{
    *found = false;
    HINTERNET h = session();
    char *named = pac_url ? win32_narrow(pac_url) : NULL;
    char source[600];
    snprintf(source, sizeof source, "%s%s", pac_url ? "PAC " : "WPAD", named ? named : "");
    free(named);
    if (!h)
        return error_set_os(err, ERR_TEMPORARY, (int)GetLastError(),
                            "cannot ask WinHTTP for the proxy of %s (%s): WinHttpOpen failed", url, source);
    wchar_t *wurl = win32_widen(url);
    if (!wurl)
        return win32_fail_nomem(err);
    WINHTTP_AUTOPROXY_OPTIONS options;
    memset(&options, 0, sizeof options);
    if (pac_url) {
        options.dwFlags = WINHTTP_AUTOPROXY_CONFIG_URL;
        options.lpszAutoConfigUrl = pac_url;
    } else {
        options.dwFlags = WINHTTP_AUTOPROXY_AUTO_DETECT;
        options.dwAutoDetectFlags = WINHTTP_AUTO_DETECT_TYPE_DHCP | WINHTTP_AUTO_DETECT_TYPE_DNS_A;
    }
    /* A script behind an authenticating server is fetched as the account
     * outpost runs as (SYSTEM: the computer account). */
    options.fAutoLogonIfChallenged = TRUE;
    WINHTTP_PROXY_INFO info;
    memset(&info, 0, sizeof info);
    BOOL ok = WinHttpGetProxyForUrl(h, wurl, &options, &info);
    DWORD e = ok ? 0 : GetLastError();
    free(wurl);
    error_code rc = ERR_OK;
    if (!ok && !pac_url && e != ERROR_WINHTTP_BAD_AUTO_PROXY_SCRIPT) {
        /* No WPAD on this network (or none that answers): no proxy, said at -v. */
        char buf[64];
        snprintf(wpad_note, wpad_note_size, "WPAD: %s", winhttp_reason(e, buf, sizeof buf));
    } else if (!ok) {
        char buf[64];
        rc = error_set_os(err, ERR_TEMPORARY, (int)e,
                          "the proxy script %s could not be used for %s: %s; the next run tries again (check the "
                          "script, or set the proxy with `netsh winhttp set proxy` or `proxy`)",
                          pac_url ? source + 4 : "that WPAD found", url, winhttp_reason(e, buf, sizeof buf));
    } else if (info.dwAccessType == WINHTTP_ACCESS_TYPE_NAMED_PROXY && info.lpszProxy) {
        out->kind = PLATFORM_PROXY_PAC;
        out->proxies = as_pac_answer(info.lpszProxy);
        out->bypass = info.lpszProxyBypass ? win32_narrow(info.lpszProxyBypass) : NULL;
        out->source = text_dup(source);
        if (!out->proxies || !out->source || (info.lpszProxyBypass && !out->bypass))
            rc = win32_fail_nomem(err);
        *found = rc == ERR_OK;
    } else {
        /* The script answered DIRECT. */
        out->kind = PLATFORM_PROXY_PAC;
        out->proxies = text_dup("DIRECT");
        out->source = text_dup(source);
        rc = out->proxies && out->source ? ERR_OK : win32_fail_nomem(err);
        *found = rc == ERR_OK;
    }
    if (info.lpszProxy)
        GlobalFree(info.lpszProxy);
    if (info.lpszProxyBypass)
        GlobalFree(info.lpszProxyBypass);
    return rc;
}

/* The proxy variables of outpost's environment, as libcurl reads them. */
static MUST_CHECK error_code from_environment(const char *url, platform_proxy *out, bool *found, error_info *err)
{
    static const char *const https_names[] = {"HTTPS_PROXY", "ALL_PROXY"};
    static const char *const http_names[] = {"http_proxy", "ALL_PROXY"};
    bool https = text_equal_nocase_n(url, "https:", 6);
    const char *const *names = https ? https_names : http_names;
    *found = false;
    for (size_t i = 0; i < 2 && !*found; i++) {
        const char *value = platform_getenv(names[i]);
        if (!value || !value[0])
            continue;
        out->kind = PLATFORM_PROXY_URL;
        out->proxies = text_dup(value);
        out->source = text_dup(names[i]);
        const char *bypass = platform_getenv("NO_PROXY");
        out->bypass = bypass && bypass[0] ? text_dup(bypass) : NULL;
        if (!out->proxies || !out->source || (bypass && bypass[0] && !out->bypass))
            return win32_fail_nomem(err);
        *found = true;
    }
    return ERR_OK;
}

error_code platform_proxy_for_url(const char *url, platform_proxy *out, error_info *err)
{
    memset(out, 0, sizeof *out);
    error_code rc = ERR_OK;
    bool found = false;
    char wpad_note[120] = "WPAD not asked for";
    /* 1. netsh winhttp set proxy: the machine's setting for services. */
    WINHTTP_PROXY_INFO fixed;
    memset(&fixed, 0, sizeof fixed);
    if (WinHttpGetDefaultProxyConfiguration(&fixed) && fixed.dwAccessType == WINHTTP_ACCESS_TYPE_NAMED_PROXY &&
        fixed.lpszProxy && fixed.lpszProxy[0]) {
        out->kind = PLATFORM_PROXY_WINHTTP;
        out->proxies = win32_narrow(fixed.lpszProxy);
        out->bypass = fixed.lpszProxyBypass ? win32_narrow(fixed.lpszProxyBypass) : NULL;
        out->source = text_dup("netsh winhttp");
        if (!out->proxies || !out->source || (fixed.lpszProxyBypass && !out->bypass))
            rc = win32_fail_nomem(err);
        found = true;
    }
    if (fixed.lpszProxy)
        GlobalFree(fixed.lpszProxy);
    if (fixed.lpszProxyBypass)
        GlobalFree(fixed.lpszProxyBypass);
    /* 2. The PAC script the Internet settings (or their policy) name. */
    WINHTTP_CURRENT_USER_IE_PROXY_CONFIG ie;
    memset(&ie, 0, sizeof ie);
    bool have_ie = !found && rc == ERR_OK && WinHttpGetIEProxyConfigForCurrentUser(&ie);
    if (have_ie && ie.lpszAutoConfigUrl && ie.lpszAutoConfigUrl[0])
        rc = evaluate(url, ie.lpszAutoConfigUrl, out, &found, wpad_note, sizeof wpad_note, err);
    /* 3. The environment's variables. */
    if (!found && rc == ERR_OK)
        rc = from_environment(url, out, &found, err);
    /* 4. WPAD, when the settings ask for detection (Windows' default) or cannot be read. */
    if (!found && rc == ERR_OK && (!have_ie || ie.fAutoDetect))
        rc = evaluate(url, NULL, out, &found, wpad_note, sizeof wpad_note, err);
    if (ie.lpszAutoConfigUrl)
        GlobalFree(ie.lpszAutoConfigUrl);
    if (ie.lpszProxy)
        GlobalFree(ie.lpszProxy);
    if (ie.lpszProxyBypass)
        GlobalFree(ie.lpszProxyBypass);
    if (rc != ERR_OK) {
        platform_proxy_clear(out);
        return rc;
    }
    if (!found) {
        out->kind = PLATFORM_PROXY_NONE;
        char none[200];
        snprintf(none, sizeof none, "no netsh winhttp proxy, PAC script or HTTPS_PROXY; %s", wpad_note);
        out->source = text_dup(none);
        if (!out->source)
            return win32_fail_nomem(err);
    }
    return ERR_OK;
}

bool platform_proxy_identity(char *buf, size_t size)
{
    if (!size)
        return false;
    buf[0] = '\0';
    wchar_t name[512];
    ULONG len = (ULONG)(sizeof name / sizeof name[0]);
    if (!GetUserNameExW(NameSamCompatible, name, &len))
        return false;
    char *utf8 = win32_narrow(name);
    if (!utf8)
        return false;
    snprintf(buf, size, "%s", utf8);
    free(utf8);
    return buf[0] != '\0';
}
