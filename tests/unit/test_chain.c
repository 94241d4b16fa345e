/*
 * test_chain.c — unit tests of certificates and chains (authenticode/chain.c)
 * with one throwaway EC root (support.h), valid from 2026-11-21 to 2126-10-28: a CA
 * file's certificates read from PEM and DER with what cannot be read named,
 * a signer found by issuer and serial number, and the chain judged at the
 * time it is given (not the clock's), before, during and after the
 * certificate's validity. Real chains, CRLs and timestamps are
 * tests/integration/test_authenticode.py's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "authenticode/chain.h"
#include "support.h"

/* The root parsed from its PEM, as a CA file holding it alone gives it. */
static void load_root(mbedtls_x509_crt *root)
{
    char notes[256] = "";
    unsigned unreadable = 0;
    mbedtls_x509_crt_init(root);
    certs_parse_ca(support_ec_root_pem, strlen(support_ec_root_pem), "test root", root, notes, sizeof notes,
                   &unreadable);
    assert_int_equal(unreadable, 0);
    assert_string_equal(notes, "");
    assert_true(root->raw.len > 0);
}

static void test_ca_file_in_pem_and_der_names_what_it_cannot_read(void **state)
{
    (void)state;
    mbedtls_x509_crt root;
    load_root(&root);

    /* PEM: the root, then a block that is no certificate. */
    char pem[2048];
    snprintf(pem, sizeof pem, "%s-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", support_ec_root_pem);
    mbedtls_x509_crt chain;
    mbedtls_x509_crt_init(&chain);
    char notes[512] = "";
    unsigned unreadable = 0;
    certs_parse_ca(pem, strlen(pem), "CA file ca.pem", &chain, notes, sizeof notes, &unreadable);
    assert_int_equal(unreadable, 1);
    assert_non_null(strstr(notes, "certificate 2 of CA file ca.pem cannot be read"));
    assert_int_equal(chain.raw.len, root.raw.len);
    mbedtls_x509_crt_free(&chain);

    /* DER back to back: the root, then bytes that are no certificate. */
    unsigned char der[1024] = {0}; /* NUL-terminated, as a file read by platform_read_file is */
    assert_true(root.raw.len + 3 <= sizeof der);
    memcpy(der, root.raw.p, root.raw.len);
    memcpy(der + root.raw.len, "\x05\x00", 2);
    mbedtls_x509_crt_init(&chain);
    notes[0] = '\0';
    unreadable = 0;
    certs_parse_ca((const char *)der, root.raw.len + 2, "CA file ca.der", &chain, notes, sizeof notes, &unreadable);
    assert_int_equal(unreadable, 1);
    assert_string_equal(notes, "CA file ca.der holds bytes after certificate 1 that are not a certificate");
    assert_memory_equal(chain.raw.p, root.raw.p, root.raw.len);
    mbedtls_x509_crt_free(&chain);
    mbedtls_x509_crt_free(&root);
}

static void test_signer_found_by_issuer_and_serial(void **state)
{
    (void)state;
    mbedtls_x509_crt root;
    load_root(&root);
    cms_signer s;
    memset(&s, 0, sizeof s);
    s.issuer.p = root.issuer_raw.p;
    s.issuer.len = root.issuer_raw.len;
    s.serial.p = root.serial.p;
    s.serial.len = root.serial.len;
    assert_ptr_equal(certs_find(&root, &s), &root);
    unsigned char other_serial[] = {0x01};
    s.serial.p = other_serial;
    s.serial.len = sizeof other_serial;
    assert_null(certs_find(&root, &s));
    /* A CA certificate names no code-signing usage. */
    assert_false(certs_has_eku(&root, OID_EKU_CODE_SIGNING));
    mbedtls_x509_crt_free(&root);
}

/* The root judged as its own signer at when; why is the failure. */
static bool judge_at(int64_t when, char *why, size_t why_size)
{
    mbedtls_x509_crt root;
    load_root(&root);
    authenticode_policy policy = {0};
    chain_judging judging = chain_at(when);
    bool revoked = true;
    bool ok = chain_verify(&root, &root, &root, &judging, &policy, why, why_size, &revoked);
    assert_false(revoked);
    mbedtls_x509_crt_free(&root);
    return ok;
}

static void test_chain_judged_at_the_given_time(void **state)
{
    (void)state;
    char why[200];
    assert_true(judge_at(1800000000, why, sizeof why)); /* 2027-01-15 */
    assert_string_equal(why, "");
    assert_false(judge_at(1700000000, why, sizeof why)); /* 2023-11-14, before its validity */
    assert_string_equal(why, "a certificate of the chain was not yet valid at 2023-11-14T22:13:20Z");
    assert_false(judge_at(5000000000, why, sizeof why)); /* 2128-06-11, after it */
    assert_string_equal(why, "a certificate of the chain had expired at 2128-06-11T08:53:20Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ca_file_in_pem_and_der_names_what_it_cannot_read),
        cmocka_unit_test(test_signer_found_by_issuer_and_serial),
        cmocka_unit_test(test_chain_judged_at_the_given_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
