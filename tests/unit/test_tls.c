/* test_tls.c — TLS in one place (agent/net/tls.c): the handshake order and
 * the kept session reach libcurl only where it runs over outpost's own
 * mbedTLS (the release builds), never elsewhere (the Debian build, whose
 * libcurl would receive another library's structure); a setup without a
 * session file keeps nothing; tls.ca_file is read when the setup is made
 * (what libcurl gets is the bytes judged), so a missing one is a
 * configuration error there. Real handshakes, pinned keys and CA files are
 * the integration tests' (test_api_client.py, test_mirror.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <curl/curl.h>

#include "net/tls.h"
#include "platform/platform.h"
#include "support.h"

/* The release builds set OUTPOST_CURL_MBEDTLS, and their libcurl reports
 * the same mbedTLS: the order is applied. Elsewhere it must not be (the
 * callback would receive another library's structure). */
static void test_applied_only_over_the_same_mbedtls(void **unused)
{
    (void)unused;
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    print_message("libcurl TLS: %s\n", v->ssl_version ? v->ssl_version : "(none)");
#ifdef OUTPOST_CURL_MBEDTLS
    assert_true(tls_uses_our_mbedtls());
#else
    assert_false(tls_uses_our_mbedtls());
#endif
}

/* Without a session file nothing is kept, whatever the handle shows; the
 * options go on a handle that has not connected yet. */
static void test_no_session_file_keeps_nothing(void **unused)
{
    (void)unused;
    tls_setup *t = NULL;
    error_info err;
    assert_int_equal(tls_new("/nonexistent/ca.pem", "sha256//AAAA", NULL, &t, &err), ERR_CONFIG);
    assert_null(t);
    assert_non_null(strstr(err.message, "tls.ca_file"));
    char *dir = support_tempdir("tls");
    char *ca = platform_path_join(dir, "ca.pem");
    assert_non_null(ca);
    assert_int_equal(platform_write_atomic(ca, "-----BEGIN CERTIFICATE-----\n", 28, &err), ERR_OK);
    assert_int_equal(tls_new(ca, "sha256//AAAA", NULL, &t, &err), ERR_OK);
    free(ca);
    support_tempdir_remove(dir);
    CURL *e = curl_easy_init();
    assert_non_null(e);
    tls_apply(t, e, true);
    tls_apply(t, e, false);
    assert_int_equal(tls_keep_session(t, e), TLSSESSION_NONE);
    assert_int_equal(tls_keep_session(NULL, e), TLSSESSION_NONE);
    curl_easy_cleanup(e);
    tls_free(t);
    tls_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_applied_only_over_the_same_mbedtls),
        cmocka_unit_test(test_no_session_file_keeps_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
