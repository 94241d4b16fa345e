/* test_url.c — the URL rules (agent/net/url.c): which URLs base_url may
 * be, a URL's origin (where the token may go), a Location resolved against
 * the URL it came from, and a URL as it may be shown (no credentials, query
 * or fragment). Which redirects are followed is test_http.c's, through the
 * client. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "net/url.h"

static void test_check_url(void **state)
{
    (void)state;
    error_info err;
    assert_int_equal(url_check("https://tenant.example.com", &err), ERR_OK);
    assert_int_equal(url_check("http://127.0.0.1:8080/public", &err), ERR_OK);
    assert_int_equal(url_check("http://localhost:1", &err), ERR_OK);
    assert_int_equal(url_check("http://[::1]:1", &err), ERR_OK);
    assert_int_equal(url_check("http://tenant.example.com", &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "http://"));
    assert_int_equal(url_check("http://127.0.0.1.example.com", &err), ERR_CONFIG);
    assert_int_equal(url_check("http://127.255.255.254:1", &err), ERR_OK);
    assert_int_equal(url_check("http://128.0.0.1", &err), ERR_CONFIG);
    assert_int_equal(url_check("http://1.0.0.127", &err), ERR_CONFIG);
    /* Octets are parsed with overflow checks (sscanf "%u" wrapped this one to
     * 127.0.0.1 and let a name that is not loopback use http://). */
    assert_int_equal(url_check("http://127.0.0.4294967297/", &err), ERR_CONFIG);
    assert_int_equal(url_check("http://127.0.0.256/", &err), ERR_CONFIG);
    assert_int_equal(url_check("ftp://tenant.example.com", &err), ERR_CONFIG);
    assert_int_equal(url_check("not a url", &err), ERR_CONFIG);
}

static void test_origin(void **unused)
{
    (void)unused;
    char *scheme = NULL, *host = NULL;
    char *origin = url_origin("HTTPS://Tenant.Example.COM/public/v2?x=1", &scheme, &host);
    assert_string_equal(origin, "https://tenant.example.com:443");
    assert_non_null(scheme);
    assert_non_null(host);
    free(origin);
    free(scheme);
    free(host);
    origin = url_origin("http://127.0.0.1:8080/", NULL, NULL);
    assert_string_equal(origin, "http://127.0.0.1:8080");
    free(origin);
    /* Another port is another origin: the token does not go there. */
    char *a = url_origin("https://tenant.example.com/", NULL, NULL);
    char *b = url_origin("https://tenant.example.com:8443/", NULL, NULL);
    assert_string_not_equal(a, b);
    free(a);
    free(b);
    assert_null(url_origin("not a url", NULL, NULL));
}

static void test_resolve(void **unused)
{
    (void)unused;
    static const struct {
        const char *from, *location, *want;
    } cases[] = {
        {"https://t.example.com/v2/installer/windows/latest", "https://cdn.example.net/f.exe?sig=1",
         "https://cdn.example.net/f.exe?sig=1"},
        {"https://t.example.com/v2/installer/windows/latest", "/files/f.exe", "https://t.example.com/files/f.exe"},
        {"https://t.example.com/v2/installer/windows/latest", "f.exe",
         "https://t.example.com/v2/installer/windows/f.exe"},
        {"https://t.example.com/a/b", "//cdn.example.net/x", "https://cdn.example.net/x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = url_resolve(cases[i].from, cases[i].location);
        if (!got || strcmp(got, cases[i].want) != 0)
            fail_msg("%s + %s: got %s, want %s", cases[i].from, cases[i].location, got ? got : "(null)", cases[i].want);
        free(got);
    }
}

static void test_shown_without_secrets(void **unused)
{
    (void)unused;
    char *shown = url_without_query("https://user:pw@storage.example.net/f.exe?sig=secret#frag");
    assert_string_equal(shown, "https://storage.example.net/f.exe");
    free(shown);
    shown = url_without_query("file:///srv/mirror/manifest.json");
    assert_string_equal(shown, "file:///srv/mirror/manifest.json");
    free(shown);
    /* Not parsable: cut at the first '?', '#' or '@'. */
    shown = url_without_query("::no scheme::?sig=secret");
    assert_string_equal(shown, "::no scheme::");
    free(shown);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_url),
        cmocka_unit_test(test_origin),
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_shown_without_secrets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
