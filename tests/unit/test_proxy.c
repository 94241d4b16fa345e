/* test_proxy.c — the proxy decision (agent/net/proxy.c): configured vs
 * the system's setting vs a PAC answer (in order) vs the bypass lists
 * (curl's NO_PROXY, WinHTTP's) vs direct; the authentication schemes under
 * proxy_auth; the setup applied to a handle, the next candidate after an
 * unreachable proxy, and the messages never showing a password. Runs on
 * both platforms (under wine for Windows). Transfers through a real proxy
 * are tests/integration/test_proxy*.py's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "net/proxy.h"

static platform_proxy sys_of(platform_proxy_kind kind, const char *proxies, const char *bypass, const char *source)
{
    platform_proxy p = {kind, (char *)proxies, (char *)bypass, (char *)source};
    return p;
}

/* The choice's candidates joined as "a | b | DIRECT". */
static const char *joined(const proxy_choice *c)
{
    static char buf[1024];
    buf[0] = '\0';
    for (size_t i = 0; i < c->count; i++) {
        if (i)
            strcat(buf, " | ");
        strcat(buf, c->candidates[i] ? c->candidates[i] : "DIRECT");
    }
    return buf;
}

static void choose(const char *configured, platform_proxy *sys, const char *url, proxy_why why, const char *expect)
{
    proxy_choice c;
    error_info err;
    assert_int_equal(proxy_choose(configured, sys, url, &c, &err), ERR_OK);
    assert_int_equal(c.why, why);
    assert_string_equal(joined(&c), expect);
    proxy_choice_clear(&c);
}

static void test_configured_wins_over_the_system(void **unused)
{
    (void)unused;
    platform_proxy env = sys_of(PLATFORM_PROXY_URL, "http://env-proxy:8080", NULL, "HTTPS_PROXY");
    choose("http://u:p@conf:3128", &env, "https://api.example.com/x", PROXY_WHY_CONFIG, "http://u:p@conf:3128");
    choose("direct", &env, "https://api.example.com/x", PROXY_WHY_CONFIG_DIRECT, "DIRECT");
    choose("system", &env, "https://api.example.com/x", PROXY_WHY_SETTING, "http://env-proxy:8080");
    choose(NULL, &env, "https://api.example.com/x", PROXY_WHY_SETTING, "http://env-proxy:8080");
    platform_proxy none = sys_of(PLATFORM_PROXY_NONE, NULL, NULL, "no https_proxy");
    choose(NULL, &none, "https://api.example.com/x", PROXY_WHY_NONE, "DIRECT");
    choose(NULL, NULL, "https://api.example.com/x", PROXY_WHY_NONE, "DIRECT");
}

static void test_environment_bypass_is_curls_no_proxy(void **unused)
{
    (void)unused;
    platform_proxy env =
        sys_of(PLATFORM_PROXY_URL, "http://p:1", "localhost, .corp.example,10.0.0.0/8 192.168.1.7", "HTTPS_PROXY");
    choose(NULL, &env, "https://LOCALHOST:8443/", PROXY_WHY_BYPASS, "DIRECT");
    choose(NULL, &env, "https://a.b.corp.example/", PROXY_WHY_BYPASS, "DIRECT");
    choose(NULL, &env, "https://corp.example/", PROXY_WHY_BYPASS, "DIRECT");
    choose(NULL, &env, "https://10.20.30.40/", PROXY_WHY_BYPASS, "DIRECT");
    choose(NULL, &env, "https://192.168.1.7/", PROXY_WHY_BYPASS, "DIRECT");
    choose(NULL, &env, "https://192.168.1.8/", PROXY_WHY_SETTING, "http://p:1");
    choose(NULL, &env, "https://notcorp.example/", PROXY_WHY_SETTING, "http://p:1");
    choose(NULL, &env, "https://11.0.0.1/", PROXY_WHY_SETTING, "http://p:1");
    assert_true(proxy_bypassed("*", false, "https", "anything.example", "443"));
    assert_true(proxy_bypassed("::1", false, "https", "[::1]", "443"));
    assert_false(proxy_bypassed("", false, "https", "a", "443"));
    assert_false(proxy_bypassed(NULL, false, "https", "a", "443"));
}

static void test_winhttp_setting_and_bypass(void **unused)
{
    (void)unused;
    /* netsh winhttp set proxy proxy-server="http=a:80;https=b:8443" bypass-list="<local>;*.corp.example;10.*" */
    platform_proxy w =
        sys_of(PLATFORM_PROXY_WINHTTP, "http=a:80;https=b:8443", "<local>;*.corp.example;10.*", "netsh winhttp");
    choose(NULL, &w, "https://api.example.com/", PROXY_WHY_SETTING, "http://b:8443");
    choose(NULL, &w, "http://api.example.com/", PROXY_WHY_SETTING, "http://a:80");
    choose(NULL, &w, "https://intranet/", PROXY_WHY_BYPASS, "DIRECT");
    choose(NULL, &w, "https://files.corp.example/", PROXY_WHY_BYPASS, "DIRECT");
    choose(NULL, &w, "https://10.1.2.3:8443/", PROXY_WHY_BYPASS, "DIRECT");
    choose(NULL, &w, "https://corp.example.evil/", PROXY_WHY_SETTING, "http://b:8443");
    /* One proxy for every scheme; a socks entry; only an http= entry for an https URL. */
    platform_proxy one = sys_of(PLATFORM_PROXY_WINHTTP, "proxy.corp:3128", NULL, "netsh winhttp");
    choose(NULL, &one, "https://api.example.com/", PROXY_WHY_SETTING, "http://proxy.corp:3128");
    platform_proxy socks = sys_of(PLATFORM_PROXY_WINHTTP, "socks=s:1080", NULL, "netsh winhttp");
    choose(NULL, &socks, "https://api.example.com/", PROXY_WHY_SETTING, "socks4://s:1080");
    platform_proxy http_only = sys_of(PLATFORM_PROXY_WINHTTP, "http=a:80", NULL, "netsh winhttp");
    choose(NULL, &http_only, "https://api.example.com/", PROXY_WHY_NONE, "DIRECT");
    /* Entries with a scheme and a port. */
    assert_true(proxy_bypassed("https://*.example.com:8443", true, "https", "a.example.com", "8443"));
    assert_false(proxy_bypassed("https://*.example.com:8443", true, "https", "a.example.com", "443"));
    assert_false(proxy_bypassed("http://*.example.com", true, "https", "a.example.com", "443"));
    assert_true(proxy_bypassed("<LOCAL>", true, "https", "intranet", "443"));
    assert_false(proxy_bypassed("<local>", true, "https", "127.0.0.1", "443"));
}

static void test_pac_answer_in_order(void **unused)
{
    (void)unused;
    platform_proxy pac = sys_of(PLATFORM_PROXY_PAC, "PROXY a.corp:8080; PROXY b.corp:8080; DIRECT", NULL,
                                "PAC http://wpad.corp/wpad.dat");
    choose(NULL, &pac, "https://api.example.com/", PROXY_WHY_PAC, "http://a.corp:8080 | http://b.corp:8080 | DIRECT");
    platform_proxy kinds =
        sys_of(PLATFORM_PROXY_PAC, "direct;HTTPS s:443 ;SOCKS5 c:1080;socks d:1;FTP x:1;  PROXY e:1", NULL, "PAC");
    choose(NULL, &kinds, "https://api.example.com/", PROXY_WHY_PAC,
           "DIRECT | https://s:443 | socks5h://c:1080 | socks4://d:1 | http://e:1");
    /* An answer naming nothing usable is exit 75 naming the script. */
    platform_proxy bad = sys_of(PLATFORM_PROXY_PAC, "FTP x:1; BOGUS", NULL, "PAC http://wpad.corp/wpad.dat");
    proxy_choice c;
    error_info err;
    assert_int_equal(proxy_choose(NULL, &bad, "https://api.example.com/", &c, &err), ERR_TEMPORARY);
    assert_non_null(strstr(err.message, "http://wpad.corp/wpad.dat"));
    assert_int_equal(c.count, 0);
    /* A bypass list that came with the PAC result (WinHTTP form) still applies. */
    platform_proxy with_bypass = sys_of(PLATFORM_PROXY_PAC, "PROXY a:1", "*.local.example", "PAC");
    choose(NULL, &with_bypass, "https://x.local.example/", PROXY_WHY_BYPASS, "DIRECT");
}

static void test_auth_bits_under_proxy_auth(void **unused)
{
    (void)unused;
    bool own = false;
    /* auto without credentials: Negotiate with the process's identity;
     * NTLM too only through SSPI (Windows), which has one. */
    assert_int_equal(proxy_auth_bits(CONFIG_PROXY_AUTH_AUTO, false, false, &own), CURLAUTH_NEGOTIATE);
    assert_true(own);
    assert_int_equal(proxy_auth_bits(CONFIG_PROXY_AUTH_AUTO, false, true, &own), CURLAUTH_NEGOTIATE | CURLAUTH_NTLM);
    assert_true(own);
    /* auto with the URL's credentials: everything but NTLM_WB, with them. */
    assert_int_equal(proxy_auth_bits(CONFIG_PROXY_AUTH_AUTO, true, false, &own),
                     CURLAUTH_NEGOTIATE | CURLAUTH_NTLM | CURLAUTH_DIGEST | CURLAUTH_BASIC);
    assert_false(own);
    assert_int_equal(proxy_auth_bits(CONFIG_PROXY_AUTH_NEGOTIATE, false, false, &own), CURLAUTH_NEGOTIATE);
    assert_true(own);
    assert_int_equal(proxy_auth_bits(CONFIG_PROXY_AUTH_NTLM, true, false, &own), CURLAUTH_NTLM);
    assert_false(own);
    assert_int_equal(proxy_auth_bits(CONFIG_PROXY_AUTH_NTLM, false, true, &own), CURLAUTH_NTLM);
    assert_true(own);
    assert_int_equal(proxy_auth_bits(CONFIG_PROXY_AUTH_BASIC, true, false, &own), CURLAUTH_BASIC | CURLAUTH_DIGEST);
    assert_false(own);
    assert_int_equal(proxy_auth_bits(CONFIG_PROXY_AUTH_NONE, false, false, &own), CURLAUTH_NONE);
    assert_false(own);
    /* Which one libcurl answers with: its order of preference. */
    unsigned long all = CURLAUTH_NEGOTIATE | CURLAUTH_NTLM | CURLAUTH_DIGEST | CURLAUTH_BASIC;
    assert_string_equal(proxy_auth_scheme_name(CURLAUTH_NEGOTIATE | CURLAUTH_BASIC, all), "Negotiate");
    assert_string_equal(proxy_auth_scheme_name(CURLAUTH_NTLM | CURLAUTH_BASIC, all), "NTLM");
    assert_string_equal(proxy_auth_scheme_name(CURLAUTH_NTLM | CURLAUTH_BASIC, CURLAUTH_BASIC), "Basic");
    assert_null(proxy_auth_scheme_name(CURLAUTH_BASIC, CURLAUTH_NEGOTIATE));
}

/* The setup: a configured proxy is applied and named in failures without
 * its password; the next candidate after an unreachable one. */
static void test_setup_applies_and_names_without_password(void **unused)
{
    (void)unused;
    error_info err;
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    char url[] = "http://user:secret@proxy.example.net:3128";
    cfg.proxy = url;
    proxy_setup *p = NULL;
    assert_int_equal(proxy_new(&cfg, &p, &err), ERR_OK);
    memset(url, 'x', sizeof url - 1); /* copied: the caller may wipe its own */
    assert_true(proxy_configured(p));
    CURL *e = curl_easy_init();
    assert_non_null(e);
    char note[600], msg[600];
    assert_int_equal(proxy_apply(p, e, "https://tenant.example.com/v2/x", note, sizeof note, &err), ERR_OK);
    assert_non_null(strstr(note, "https://tenant.example.com:443"));
    assert_non_null(strstr(note, "proxy.example.net:3128"));
    assert_null(strstr(note, "secret"));
    /* decided once per origin: no second line */
    assert_int_equal(proxy_apply(p, e, "https://tenant.example.com/v2/y", note, sizeof note, &err), ERR_OK);
    assert_string_equal(note, "");
    proxy_refused_message(p, "https://tenant.example.com/v2/x", msg, sizeof msg);
    assert_non_null(strstr(msg, "proxy.example.net:3128"));
    assert_non_null(strstr(msg, "407"));
    assert_null(strstr(msg, "secret"));
    /* one candidate: nothing to move to */
    assert_false(proxy_next(p, "https://tenant.example.com/v2/x", note, sizeof note));
    assert_true(proxy_auth_unsaid(p, "https://tenant.example.com/"));
    assert_true(proxy_note_auth(p, "https://tenant.example.com/", "Basic", note, sizeof note));
    assert_non_null(strstr(note, "authenticated with Basic with the proxy URL's credentials"));
    assert_null(strstr(note, "secret"));
    assert_false(proxy_auth_unsaid(p, "https://tenant.example.com/"));
    assert_false(proxy_note_auth(p, "https://tenant.example.com/", "Basic", note, sizeof note));
    curl_easy_cleanup(e);
    proxy_free(p);
    proxy_free(NULL);

    cfg.proxy = "direct";
    assert_int_equal(proxy_new(&cfg, &p, &err), ERR_OK);
    assert_false(proxy_configured(p));
    e = curl_easy_init();
    assert_int_equal(proxy_apply(p, e, "https://tenant.example.com/", note, sizeof note, &err), ERR_OK);
    assert_non_null(strstr(note, "direct"));
    curl_easy_cleanup(e);
    proxy_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configured_wins_over_the_system),
        cmocka_unit_test(test_environment_bypass_is_curls_no_proxy),
        cmocka_unit_test(test_winhttp_setting_and_bypass),
        cmocka_unit_test(test_pac_answer_in_order),
        cmocka_unit_test(test_auth_bits_under_proxy_auth),
        cmocka_unit_test(test_setup_applies_and_names_without_password),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
