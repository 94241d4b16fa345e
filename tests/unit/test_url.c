/* test_url.c — the URL rules (agent/net/url.c): which URLs base_url may
 * be. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
