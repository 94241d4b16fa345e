/* test_tlssession.c — state_dir/tls-session (agent/net/tlssession.c): the
 * file's layout (a session comes back only under the key it was saved with:
 * host, port and the digest of the CA material and the pinned key; a file of
 * another key is left alone, a damaged, truncated or older-layout file is
 * told apart so that it is removed) and the lifetime rules (at most 24 h after
 * the full handshake, never past the leaf certificate's notAfter, never
 * stretched by resuming). The mbedTLS part (offering and keeping sessions,
 * eviction) is tested against nginx by tests/integration/test_tls_session.py
 * and test_mirror.py. */
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
#define T0 INT64_C(1767225600) /* 2026-01-01T00:00:00Z */
#define HOUR INT64_C(3600)

static void test_round_trip_under_the_same_key(void **unused)
{
    (void)unused;
    size_t len = 0, blob_len = 0;
    unsigned char *file = tlssession_encode(KEY, T0 + HOUR, SESSION_BLOB, sizeof SESSION_BLOB, &len);
    assert_non_null(file);
    const unsigned char *blob = NULL;
    int64_t not_after = 0;
    assert_int_equal(tlssession_decode(file, len, KEY, &not_after, &blob, &blob_len), TLSSESSION_OURS);
    assert_int_equal(not_after, T0 + HOUR);
    assert_int_equal(blob_len, sizeof SESSION_BLOB);
    assert_memory_equal(blob, SESSION_BLOB, sizeof SESSION_BLOB);
    free(file);
}

static void test_another_key_is_another_hosts_or_trusts(void **unused)
{
    (void)unused;
    size_t len = 0, blob_len = 0;
    unsigned char *file = tlssession_encode(KEY, T0 + HOUR, SESSION_BLOB, sizeof SESSION_BLOB, &len);
    assert_non_null(file);
    const unsigned char *blob = NULL;
    int64_t not_after = 0;
    static const char *const others[] = {
        "mirror.example.com:8443 0123abcd", /* port */
        "other.example.com:443 0123abcd",   /* host */
        "mirror.example.com:443 0123abce",  /* CA material or pinned key */
        "mirror.example.com:443 0123",
    };
    for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
        assert_int_equal(tlssession_decode(file, len, others[i], &not_after, &blob, &blob_len), TLSSESSION_OTHER_KEY);
        assert_null(blob);
        assert_int_equal(blob_len, 0);
    }
    free(file);
}

static void test_damaged_truncated_or_older_files_are_told_apart(void **unused)
{
    (void)unused;
    size_t len = 0, blob_len = 0;
    unsigned char *file = tlssession_encode(KEY, T0 + HOUR, SESSION_BLOB, sizeof SESSION_BLOB, &len);
    assert_non_null(file);
    const unsigned char *blob = NULL;
    int64_t not_after = 0;
    /* cut before the blob, inside the not-after line, inside the key */
    size_t header = len - sizeof SESSION_BLOB;
    assert_int_equal(tlssession_decode(file, header, KEY, &not_after, &blob, &blob_len), TLSSESSION_DAMAGED);
    assert_int_equal(tlssession_decode(file, header - 3, KEY, &not_after, &blob, &blob_len), TLSSESSION_DAMAGED);
    assert_int_equal(tlssession_decode(file, 30, KEY, &not_after, &blob, &blob_len), TLSSESSION_DAMAGED);
    /* another magic */
    file[0] = 'X';
    assert_int_equal(tlssession_decode(file, len, KEY, &not_after, &blob, &blob_len), TLSSESSION_DAMAGED);
    free(file);
    /* version 1 (no lifetime of outpost's own) */
    static const char v1[] = "outpost-tls-session 1\nmirror.example.com:443 0123abcd\n\x01\x02";
    assert_int_equal(tlssession_decode((const unsigned char *)v1, sizeof v1 - 1, KEY, &not_after, &blob, &blob_len),
                     TLSSESSION_DAMAGED);
    /* a not-after that is not a number, or zero */
    static const char bad[] = "outpost-tls-session 2\nmirror.example.com:443 0123abcd\n17x\n\x01\x02";
    assert_int_equal(tlssession_decode((const unsigned char *)bad, sizeof bad - 1, KEY, &not_after, &blob, &blob_len),
                     TLSSESSION_DAMAGED);
    static const char zero[] = "outpost-tls-session 2\nmirror.example.com:443 0123abcd\n0\n\x01\x02";
    assert_int_equal(tlssession_decode((const unsigned char *)zero, sizeof zero - 1, KEY, &not_after, &blob, &blob_len),
                     TLSSESSION_DAMAGED);
    assert_int_equal(tlssession_decode((const unsigned char *)"", 0, KEY, &not_after, &blob, &blob_len),
                     TLSSESSION_DAMAGED);
    assert_int_equal(tlssession_decode(NULL, 0, KEY, &not_after, &blob, &blob_len), TLSSESSION_DAMAGED);
    assert_null(blob);
}

static void test_no_key_with_a_newline_no_empty_session_no_lifetime(void **unused)
{
    (void)unused;
    size_t len = 0;
    assert_null(tlssession_encode("host:443\nforged", T0, SESSION_BLOB, sizeof SESSION_BLOB, &len));
    assert_null(tlssession_encode(KEY, T0, SESSION_BLOB, 0, &len));
    assert_null(tlssession_encode(KEY, 0, SESSION_BLOB, sizeof SESSION_BLOB, &len));
}

/* The finding: a 30-day ticket and a certificate that ends in 12
 * seconds were resumed past the certificate's end. The kept end is the
 * soonest of 24 h, notAfter and what a resumed session inherits. */
static void test_lifetime_is_24h_or_the_certificate_whichever_is_sooner(void **unused)
{
    (void)unused;
    assert_int_equal(tlssession_not_after(T0, 0, 0), T0 + 24 * HOUR);
    assert_int_equal(tlssession_not_after(T0, T0 + 12, 0), T0 + 12);
    assert_int_equal(tlssession_not_after(T0, T0 + 30 * 24 * HOUR, 0), T0 + 24 * HOUR);
    /* resuming never stretches it: a session from a resumed handshake
     * keeps the end of the one it came from */
    assert_int_equal(tlssession_not_after(T0 + 20 * HOUR, T0 + 30 * 24 * HOUR, T0 + 24 * HOUR), T0 + 24 * HOUR);
    assert_int_equal(tlssession_not_after(T0, T0 + 5, T0 + HOUR), T0 + 5);
}

static void test_usable_before_its_end_and_not_from_the_future(void **unused)
{
    (void)unused;
    int64_t end = tlssession_not_after(T0, T0 + 12, 0);
    assert_true(tlssession_usable(T0, end));
    assert_true(tlssession_usable(T0 + 11, end));
    assert_false(tlssession_usable(T0 + 12, end)); /* the certificate's end */
    assert_false(tlssession_usable(T0 + 13, end));
    end = tlssession_not_after(T0, 0, 0);
    assert_true(tlssession_usable(T0 + 24 * HOUR - 1, end));
    assert_false(tlssession_usable(T0 + 25 * HOUR, end)); /* 24 h after the full handshake */
    /* an end further than 24 h ahead was not written by this clock */
    assert_false(tlssession_usable(T0 - HOUR, end));
    assert_false(tlssession_usable(T0, T0 + 24 * HOUR + 1));
}

static void test_nothing_is_kept_without_a_path_or_trust(void **unused)
{
    (void)unused;
    /* no path: offer nothing, keep nothing, never crash */
    assert_null(tlssession_new(NULL, "/etc/ca.pem", NULL, 0, NULL, NULL));
    assert_null(tlssession_new("/tmp/tls-session", NULL, NULL, 0, NULL, "sha256//AAAA"));
    assert_int_equal(tlssession_keep(NULL, NULL, "https://tenant.example.com/"), TLSSESSION_NONE);
    tlssession_offer(NULL, NULL, NULL, "https://tenant.example.com/");
    tlssession_failed(NULL);
    tlssession_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_under_the_same_key),
        cmocka_unit_test(test_another_key_is_another_hosts_or_trusts),
        cmocka_unit_test(test_damaged_truncated_or_older_files_are_told_apart),
        cmocka_unit_test(test_no_key_with_a_newline_no_empty_session_no_lifetime),
        cmocka_unit_test(test_lifetime_is_24h_or_the_certificate_whichever_is_sooner),
        cmocka_unit_test(test_usable_before_its_end_and_not_from_the_future),
        cmocka_unit_test(test_nothing_is_kept_without_a_path_or_trust),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
