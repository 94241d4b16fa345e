/* test_tlssession.c — the layout of state_dir/tls-session (agent/net/tlssession.c):
 * a session comes back only under the key it was saved with (host, port and
 * the CA material's digest); a file of another key, another layout or cut
 * short gives nothing, so the handshake is a full one. The mbedTLS part
 * (offering and keeping sessions) is tested against nginx by
 * tests/integration/test_mirror.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "net/tlssession.h"

static const char KEY[] = "mirror.example.com:443 0123abcd";
static const unsigned char SESSION_BLOB[] = {0x00, 0x02, 0x1c, '\n', 0xff, 0x00, 0x41};

static void test_round_trip_under_the_same_key(void **unused)
{
    (void)unused;
    size_t len = 0, blob_len = 0;
    unsigned char *file = tlssession_encode(KEY, SESSION_BLOB, sizeof SESSION_BLOB, &len);
    assert_non_null(file);
    const unsigned char *blob = tlssession_decode(file, len, KEY, &blob_len);
    assert_non_null(blob);
    assert_int_equal(blob_len, sizeof SESSION_BLOB);
    assert_memory_equal(blob, SESSION_BLOB, sizeof SESSION_BLOB);
    free(file);
}

static void test_another_key_gets_nothing(void **unused)
{
    (void)unused;
    size_t len = 0, blob_len = 1;
    unsigned char *file = tlssession_encode(KEY, SESSION_BLOB, sizeof SESSION_BLOB, &len);
    assert_non_null(file);
    /* another port, another host, other trust, a prefix of the key */
    assert_null(tlssession_decode(file, len, "mirror.example.com:8443 0123abcd", &blob_len));
    assert_null(tlssession_decode(file, len, "other.example.com:443 0123abcd", &blob_len));
    assert_null(tlssession_decode(file, len, "mirror.example.com:443 0123abce", &blob_len));
    assert_null(tlssession_decode(file, len, "mirror.example.com:443 0123", &blob_len));
    assert_int_equal(blob_len, 0);
    free(file);
}

static void test_damaged_or_foreign_files_get_nothing(void **unused)
{
    (void)unused;
    size_t len = 0, blob_len = 0;
    unsigned char *file = tlssession_encode(KEY, SESSION_BLOB, sizeof SESSION_BLOB, &len);
    assert_non_null(file);
    /* cut before the blob */
    assert_null(tlssession_decode(file, len - sizeof SESSION_BLOB, KEY, &blob_len));
    /* another layout version */
    file[20] = '2';
    assert_null(tlssession_decode(file, len, KEY, &blob_len));
    free(file);
    assert_null(tlssession_decode((const unsigned char *)"", 0, KEY, &blob_len));
    assert_null(tlssession_decode(NULL, 0, KEY, &blob_len));
}

static void test_no_key_with_a_newline_and_no_empty_session(void **unused)
{
    (void)unused;
    size_t len = 0;
    assert_null(tlssession_encode("host:443\nforged", SESSION_BLOB, sizeof SESSION_BLOB, &len));
    assert_null(tlssession_encode(KEY, SESSION_BLOB, 0, &len));
}

static void test_nothing_is_kept_without_a_path_or_trust(void **unused)
{
    (void)unused;
    /* Whatever the build: no file to keep it in, or no CA material to bind it to. */
    assert_null(tlssession_new(NULL, "/etc/ca.pem", NULL, 0, NULL));
    assert_null(tlssession_new("/tmp/tls-session", NULL, NULL, 0, NULL));
    /* NULL is a valid "keep nothing" store everywhere */
    assert_int_equal(tlssession_keep(NULL, NULL, "https://tenant.example.com/"), TLSSESSION_NONE);
    tlssession_offer(NULL, NULL, NULL, "https://tenant.example.com/");
    tlssession_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_under_the_same_key),
        cmocka_unit_test(test_another_key_gets_nothing),
        cmocka_unit_test(test_damaged_or_foreign_files_get_nothing),
        cmocka_unit_test(test_no_key_with_a_newline_and_no_empty_session),
        cmocka_unit_test(test_nothing_is_kept_without_a_path_or_trust),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
