/*
 * test_cms.c — unit tests of the PKCS#7 / CMS SignedData reader
 * (authenticode/cms.c) on DER built here byte by byte: elements read and
 * refused by the DER reader, the two ASN.1 time forms, digests named by
 * OID, attribute lookup (absent, once, repeated), and SignedData structures
 * the reader must refuse with the reason a user then reads. Whole
 * signatures are tests/unit/test_authenticode.c's and the integration
 * tests'.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "authenticode/cms.h"

static span span_of(const unsigned char *p, size_t len)
{
    span s = {(unsigned char *)p, len};
    return s;
}

/* ---- DER ------------------------------------------------------------------- */

static void test_der_reads_elements_in_order(void **state)
{
    (void)state;
    /* SEQUENCE { INTEGER 5, OCTET STRING "ab" } then NULL */
    static const unsigned char der[] = {0x30, 0x07, 0x02, 0x01, 0x05, 0x04, 0x02, 'a', 'b', 0x05, 0x00};
    der_reader d = der_of(span_of(der, sizeof der));
    span contents, element;
    assert_false(der_read(&d, MBEDTLS_ASN1_INTEGER, &contents, NULL)); /* wrong tag: unmoved */
    assert_true(der_peek(&d, TAG_SEQUENCE));
    assert_true(der_read(&d, TAG_SEQUENCE, &contents, &element));
    assert_int_equal(contents.len, 7);
    assert_ptr_equal(element.p, der);
    assert_int_equal(element.len, 9);
    der_reader in = der_of(contents);
    span value;
    assert_true(der_read(&in, MBEDTLS_ASN1_INTEGER, &value, NULL));
    assert_int_equal(value.len, 1);
    assert_int_equal(value.p[0], 5);
    assert_true(der_skip(&in));
    assert_true(der_done(&in));
    assert_false(der_skip(&in)); /* nothing left */
    assert_false(der_done(&d));
    assert_true(der_read(&d, MBEDTLS_ASN1_NULL, NULL, NULL));
    assert_true(der_done(&d));
}

static void test_der_refuses_lengths_past_the_end(void **state)
{
    (void)state;
    static const unsigned char der[] = {0x30, 0x09, 0x02, 0x01, 0x05};
    der_reader d = der_of(span_of(der, sizeof der));
    assert_false(der_read(&d, TAG_SEQUENCE, NULL, NULL));
    assert_ptr_equal(d.p, der);
    der_reader empty = der_of(span_of(NULL, 0));
    assert_true(der_done(&empty));
    assert_false(der_peek(&empty, TAG_SEQUENCE));
}

static void test_algorithm_and_digests(void **state)
{
    (void)state;
    /* AlgorithmIdentifier { sha256, NULL } */
    static const unsigned char alg[] = {0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
                                        0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00};
    der_reader d = der_of(span_of(alg, sizeof alg));
    span oid;
    assert_true(der_read_algorithm(&d, &oid));
    mbedtls_md_type_t md;
    assert_true(md_from_oid(oid, &md));
    assert_int_equal(md, MBEDTLS_MD_SHA256);
    assert_string_equal(md_name(md), "sha256");
    authenticode_policy strict = {0}, old = {.allow_sha1 = true};
    assert_true(md_allowed(MBEDTLS_MD_SHA256, &strict));
    assert_false(md_allowed(MBEDTLS_MD_SHA1, &strict));
    assert_true(md_allowed(MBEDTLS_MD_SHA1, &old));
    assert_false(md_allowed(MBEDTLS_MD_MD5, &old));
    unsigned char out[MBEDTLS_MD_MAX_SIZE];
    assert_int_equal(md_hash(MBEDTLS_MD_SHA256, (const unsigned char *)"abc", 3, out), 32);
    static const unsigned char abc_sha256_start[] = {0xba, 0x78, 0x16, 0xbf};
    assert_memory_equal(out, abc_sha256_start, sizeof abc_sha256_start);
    assert_true(digest_equals(span_of(out, 32), out, 32));
    assert_false(digest_equals(span_of(out, 31), out, 32));
}

static void test_oid_is(void **state)
{
    (void)state;
    static const unsigned char signed_data[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02};
    assert_true(oid_is(span_of(signed_data, sizeof signed_data), OID_SIGNED_DATA));
    assert_false(oid_is(span_of(signed_data, sizeof signed_data - 1), OID_SIGNED_DATA));
    assert_false(oid_is_raw(signed_data, sizeof signed_data, OID_SPC_INDIRECT_DATA));
}

/* ---- Times ----------------------------------------------------------------- */

static bool read_time(const char *text, int tag, int64_t *out)
{
    unsigned char der[64];
    size_t len = strlen(text);
    der[0] = (unsigned char)tag;
    der[1] = (unsigned char)len;
    memcpy(der + 2, text, len);
    der_reader d = der_of(span_of(der, len + 2));
    return der_read_time(&d, out);
}

static void test_times_in_both_forms(void **state)
{
    (void)state;
    int64_t t = 0;
    assert_true(read_time("260102030405Z", MBEDTLS_ASN1_UTC_TIME, &t));
    assert_int_equal(t, 1767323045); /* 2026-01-02T03:04:05Z */
    assert_true(read_time("491231235959Z", MBEDTLS_ASN1_UTC_TIME, &t));
    assert_int_equal(t, 2524607999); /* 2049: YY below 50 is 20YY */
    assert_true(read_time("500101000000Z", MBEDTLS_ASN1_UTC_TIME, &t));
    assert_int_equal(t, -631152000); /* 1950 */
    assert_true(read_time("20260102030405Z", MBEDTLS_ASN1_GENERALIZED_TIME, &t));
    assert_int_equal(t, 1767323045);
    assert_true(read_time("20260102030405.123Z", MBEDTLS_ASN1_GENERALIZED_TIME, &t));
    assert_int_equal(t, 1767323045); /* fractions are dropped */

    static const struct {
        const char *text;
        int tag;
    } refused[] = {
        {"2601020304Z", MBEDTLS_ASN1_UTC_TIME},                 /* no seconds */
        {"260102030405", MBEDTLS_ASN1_UTC_TIME},                /* no Z */
        {"261302030405Z", MBEDTLS_ASN1_UTC_TIME},               /* month 13 */
        {"20260102030405+0100", MBEDTLS_ASN1_GENERALIZED_TIME}, /* an offset, not UTC */
        {"2026010203040xZ", MBEDTLS_ASN1_GENERALIZED_TIME},     /* not a digit */
        {"20260102030405Z", MBEDTLS_ASN1_OCTET_STRING},         /* not a time */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        assert_false(read_time(refused[i].text, refused[i].tag, &t));
}

/* ---- Attributes ------------------------------------------------------------ */

static void test_attributes_absent_once_repeated(void **state)
{
    (void)state;
    /* Attribute { contentType (1.2.840.113549.1.9.3), SET { OID 1.2.3 } } */
#define CONTENT_TYPE_ATTR                                                                                              \
    0x30, 0x10, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x03, 0x31, 0x03, 0x06, 0x01, 0x2a
    static const unsigned char once[] = {CONTENT_TYPE_ATTR};
    static const unsigned char twice[] = {CONTENT_TYPE_ATTR, CONTENT_TYPE_ATTR};
    static const unsigned char broken[] = {0x30, 0x02, 0x05, 0x00};
#undef CONTENT_TYPE_ATTR
    span values = {NULL, 0}, value;
    assert_int_equal(cms_find_attribute(span_of(once, sizeof once), OID_MESSAGE_DIGEST, &values), 0);
    assert_int_equal(cms_find_attribute(span_of(once, sizeof once), OID_CONTENT_TYPE, &values), 1);
    assert_true(cms_single_value(values, &value));
    assert_int_equal(value.len, 3);
    assert_int_equal(value.p[0], MBEDTLS_ASN1_OID);
    assert_int_equal(cms_find_attribute(span_of(twice, sizeof twice), OID_CONTENT_TYPE, &values), -1);
    assert_int_equal(cms_find_attribute(span_of(broken, sizeof broken), OID_CONTENT_TYPE, &values), -1);
    static const unsigned char two_values[] = {0x06, 0x01, 0x2a, 0x06, 0x01, 0x2b};
    assert_false(cms_single_value(span_of(two_values, sizeof two_values), &value));
}

/* ---- SignedData ------------------------------------------------------------ */

static void test_signed_data_refused_with_its_reason(void **state)
{
    (void)state;
    cms_signed_data sd;
    const char *why = NULL;
    /* ContentInfo { data (1.2.840.113549.1.7.1), [0] {} } */
    static const unsigned char not_signed_data[] = {0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86,
                                                    0xf7, 0x0d, 0x01, 0x07, 0x01, 0xa0, 0x00};
    assert_false(cms_parse_signed_data(span_of(not_signed_data, sizeof not_signed_data), &sd, &why));
    assert_string_equal(why, "PKCS#7 content is not SignedData");
    /* ContentInfo { signedData, [0] { SignedData { version 1, SET {}, SEQUENCE { OID 1.2 }, SET {} } } } */
    static const unsigned char no_signer[] = {0x30, 0x1b, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d,
                                              0x01, 0x07, 0x02, 0xa0, 0x0e, 0x30, 0x0c, 0x02, 0x01, 0x01,
                                              0x31, 0x00, 0x30, 0x03, 0x06, 0x01, 0x2a, 0x31, 0x00, 0x00};
    assert_false(cms_parse_signed_data(span_of(no_signer, sizeof no_signer - 1), &sd, &why));
    assert_string_equal(why, "PKCS#7 SignedData has no signer");
    /* The same with a byte after the ContentInfo: it must fill its element exactly. */
    assert_false(cms_parse_signed_data(span_of(no_signer, sizeof no_signer), &sd, &why));
    assert_string_equal(why, "PKCS#7 SignedData is malformed");
    static const unsigned char garbage[] = {0x04, 0x01, 0x00};
    assert_false(cms_parse_signed_data(span_of(garbage, sizeof garbage), &sd, &why));
    assert_string_equal(why, "PKCS#7 SignedData is malformed");
}

static void test_signer_named_by_key_identifier_is_unsupported(void **state)
{
    (void)state;
    cms_signer s;
    const char *why = NULL;
    /* SignerInfo { version 3, [0] subjectKeyIdentifier, ... } */
    static const unsigned char ski[] = {0x30, 0x08, 0x02, 0x01, 0x03, 0x80, 0x03, 0x01, 0x02, 0x03};
    assert_false(cms_parse_signer(span_of(ski, sizeof ski), &s, &why));
    assert_string_equal(why, "SignerInfo names its certificate by key identifier (unsupported)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_der_reads_elements_in_order),
        cmocka_unit_test(test_der_refuses_lengths_past_the_end),
        cmocka_unit_test(test_algorithm_and_digests),
        cmocka_unit_test(test_oid_is),
        cmocka_unit_test(test_times_in_both_forms),
        cmocka_unit_test(test_attributes_absent_once_repeated),
        cmocka_unit_test(test_signed_data_refused_with_its_reason),
        cmocka_unit_test(test_signer_named_by_key_identifier_is_unsupported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
