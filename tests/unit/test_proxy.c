/* test_proxy.c — the proxy setup (agent/net/proxy.c): a configured proxy
 * is kept (and named in failures), none means the environment's; the
 * options go on a handle that has not connected. Transfers through a real
 * proxy are tests/integration/test_proxy.py's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <curl/curl.h>

#include "net/proxy.h"

static void test_configured_or_the_environment(void **unused)
{
    (void)unused;
    error_info err;
    proxy_setup *none = NULL, *configured = NULL;
    assert_int_equal(proxy_new(NULL, &none, &err), ERR_OK);
    assert_false(proxy_configured(none));
    char url[] = "http://user:secret@proxy.example.net:3128";
    assert_int_equal(proxy_new(url, &configured, &err), ERR_OK);
    memset(url, 'x', sizeof url - 1); /* copied: the caller may wipe its own */
    assert_true(proxy_configured(configured));
    assert_false(proxy_configured(NULL));
    CURL *e = curl_easy_init();
    assert_non_null(e);
    proxy_apply(none, e, "https://tenant.example.com/v2/incidents/list");
    proxy_apply(configured, e, "https://tenant.example.com/v2/incidents/list");
    curl_easy_cleanup(e);
    proxy_free(none);
    proxy_free(configured);
    proxy_free(NULL);
}

/* The advice for a refused proxy login never carries the proxy URL (it may
 * hold the password): it tells where the credentials go. */
static void test_auth_advice_names_where_credentials_go(void **unused)
{
    (void)unused;
    assert_non_null(strstr(PROXY_AUTH_ADVICE, "407"));
    assert_non_null(strstr(PROXY_AUTH_ADVICE, "`proxy`"));
    assert_non_null(strstr(PROXY_AUTH_ADVICE, "HTTPS_PROXY"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configured_or_the_environment),
        cmocka_unit_test(test_auth_advice_names_where_credentials_go),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
