/*
 * test_timestamp.c — unit tests of the search for a signature's trusted
 * time (authenticode/timestamp.c) in unsigned attributes built here: none,
 * another kind of attribute, and an RFC 3161 token or a legacy
 * countersignature that cannot be read, each ignored with the note the
 * verdict then quotes. Timestamps that verify need a timestamping
 * authority: tests/integration/test_authenticode.py signs with one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "authenticode/timestamp.h"

/* Runs timestamp_find over the unsigned attributes attrs (the contents of
 * the [1] element); *note receives why a timestamp was ignored. */
static bool find(const unsigned char *attrs, size_t len, int64_t *when, char *note, size_t note_size)
{
    authenticode_policy policy = {.now = 1800000000};
    authenticode_result result;
    memset(&result, 0, sizeof result);
    verify_ctx v;
    memset(&v, 0, sizeof v);
    v.policy = &policy;
    v.result = &result;
    v.now = policy.now;
    mbedtls_x509_crt_init(&v.trusted);
    mbedtls_x509_crt_init(&v.ts_trusted);
    mbedtls_x509_crt carried;
    mbedtls_x509_crt_init(&carried);
    cms_signer primary;
    memset(&primary, 0, sizeof primary);
    static unsigned char signature[] = {1, 2, 3, 4};
    primary.signature.p = signature;
    primary.signature.len = sizeof signature;
    primary.unsigned_attrs.p = (unsigned char *)attrs;
    primary.unsigned_attrs.len = len;
    const char *kind = NULL;
    bool found = timestamp_find(&v, &primary, &carried, when, &kind, note, note_size);
    assert_true(!found || kind != NULL);
    return found;
}

/* Attribute { 1.3.6.1.4.1.311.3.3.1 (RFC 3161 token), SET { INTEGER 0 } } */
#define RFC3161_NOT_A_TOKEN                                                                                            \
    0x30, 0x11, 0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x03, 0x03, 0x01, 0x31, 0x03, 0x02, 0x01, 0x00
/* Attribute { 1.2.840.113549.1.9.6 (countersignature), SET { INTEGER 0 } } */
#define COUNTERSIGNATURE_NOT_A_SIGNER                                                                                  \
    0x30, 0x10, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x06, 0x31, 0x03, 0x02, 0x01, 0x00
/* Attribute { 1.3.6.1.4.1.311.2.4.1 (a nested signature), SET { INTEGER 0 } } */
#define NESTED_SIGNATURE                                                                                               \
    0x30, 0x11, 0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x04, 0x01, 0x31, 0x03, 0x02, 0x01, 0x00

static void test_no_timestamp_means_now(void **state)
{
    (void)state;
    int64_t when = 42;
    char note[160] = "stale";
    assert_false(find(NULL, 0, &when, note, sizeof note));
    assert_int_equal(when, 42); /* untouched: the caller judges at now */
    assert_string_equal(note, "");
    static const unsigned char nested[] = {NESTED_SIGNATURE};
    assert_false(find(nested, sizeof nested, &when, note, sizeof note));
    assert_string_equal(note, ""); /* not a timestamp: nothing to say */
}

static void test_unreadable_timestamps_are_ignored_and_said(void **state)
{
    (void)state;
    int64_t when = 42;
    char note[160];
    static const unsigned char token[] = {RFC3161_NOT_A_TOKEN};
    assert_false(find(token, sizeof token, &when, note, sizeof note));
    assert_string_equal(note, "RFC 3161 token: malformed");
    static const unsigned char legacy[] = {COUNTERSIGNATURE_NOT_A_SIGNER};
    assert_false(find(legacy, sizeof legacy, &when, note, sizeof note));
    assert_string_equal(note, "countersignature is malformed");
    /* Every attribute is tried: the last one's failure is what is said. */
    static const unsigned char both[] = {RFC3161_NOT_A_TOKEN, NESTED_SIGNATURE, COUNTERSIGNATURE_NOT_A_SIGNER};
    assert_false(find(both, sizeof both, &when, note, sizeof note));
    assert_string_equal(note, "countersignature is malformed");
    assert_int_equal(when, 42);
}

static void test_a_broken_attribute_list_ends_the_search(void **state)
{
    (void)state;
    int64_t when = 42;
    char note[160];
    static const unsigned char broken[] = {0x04, 0x01, 0x00};
    assert_false(find(broken, sizeof broken, &when, note, sizeof note));
    assert_string_equal(note, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_timestamp_means_now),
        cmocka_unit_test(test_unreadable_timestamps_are_ignored_and_said),
        cmocka_unit_test(test_a_broken_attribute_list_ends_the_search),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
