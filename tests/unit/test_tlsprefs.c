/* test_tlsprefs.c — the order of TLS key-exchange groups (agent/net/tlsprefs.c):
 * X25519, P-256, P-384, P-521 first when the library has them, every other
 * supported group kept after them, none twice, none invented; and the
 * cipher suites, AES-GCM first only where it runs on the CPU's
 * instructions. Whether the order reaches libcurl is test_tls.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <mbedtls/ecp.h>
#include <mbedtls/ssl_ciphersuites.h>

#include "net/tlsprefs.h"

static void test_preferred_first_then_the_rest_in_order(void **unused)
{
    (void)unused;
    /* mbedTLS 2.28's own order: largest first, X25519 near the end. */
    const int supported[] = {MBEDTLS_ECP_DP_SECP521R1,  MBEDTLS_ECP_DP_BP512R1,   MBEDTLS_ECP_DP_SECP384R1,
                             MBEDTLS_ECP_DP_BP384R1,    MBEDTLS_ECP_DP_SECP256R1, MBEDTLS_ECP_DP_SECP256K1,
                             MBEDTLS_ECP_DP_CURVE25519, MBEDTLS_ECP_DP_CURVE448,  0};
    const int want[] = {MBEDTLS_ECP_DP_CURVE25519, MBEDTLS_ECP_DP_SECP256R1, MBEDTLS_ECP_DP_SECP384R1,
                        MBEDTLS_ECP_DP_SECP521R1,  MBEDTLS_ECP_DP_BP512R1,   MBEDTLS_ECP_DP_BP384R1,
                        MBEDTLS_ECP_DP_SECP256K1,  MBEDTLS_ECP_DP_CURVE448,  0};
    int out[16];
    assert_int_equal(tlsprefs_order_groups(supported, out, 16), 8);
    assert_memory_equal(out, want, sizeof want);
}

static void test_only_groups_the_library_has(void **unused)
{
    (void)unused;
    const int supported[] = {MBEDTLS_ECP_DP_SECP384R1, MBEDTLS_ECP_DP_SECP256R1, 0};
    const int want[] = {MBEDTLS_ECP_DP_SECP256R1, MBEDTLS_ECP_DP_SECP384R1, 0};
    int out[16];
    assert_int_equal(tlsprefs_order_groups(supported, out, 16), 2);
    assert_memory_equal(out, want, sizeof want);

    const int none[] = {0};
    assert_int_equal(tlsprefs_order_groups(none, out, 16), 0);
    assert_int_equal(out[0], 0);
}

static void test_capacity_is_respected_and_terminated(void **unused)
{
    (void)unused;
    const int supported[] = {MBEDTLS_ECP_DP_SECP521R1, MBEDTLS_ECP_DP_SECP384R1, MBEDTLS_ECP_DP_SECP256R1,
                             MBEDTLS_ECP_DP_CURVE25519, 0};
    int out[3] = {-1, -1, -1};
    assert_int_equal(tlsprefs_order_groups(supported, out, 3), 2);
    assert_int_equal(out[0], MBEDTLS_ECP_DP_CURVE25519);
    assert_int_equal(out[1], MBEDTLS_ECP_DP_SECP256R1);
    assert_int_equal(out[2], 0);
}

/* With AES-GCM first: the four ECDHE AES-GCM suites the library has, AES-128
 * before AES-256, then the rest (ChaCha20-Poly1305 first among them, as
 * mbedTLS had it) in order; without: the library's order untouched. */
static void test_aes_gcm_suites_first_only_when_asked(void **unused)
{
    (void)unused;
    const int supported[] = {MBEDTLS_TLS1_3_AES_256_GCM_SHA384,
                             MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256,
                             MBEDTLS_TLS1_3_AES_128_GCM_SHA256,
                             MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
                             MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
                             MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
                             MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
                             MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
                             MBEDTLS_TLS_RSA_WITH_AES_128_GCM_SHA256,
                             0};
    const int want[] = {MBEDTLS_TLS1_3_AES_128_GCM_SHA256,
                        MBEDTLS_TLS1_3_AES_256_GCM_SHA384,
                        MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
                        MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
                        MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
                        MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256,
                        MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
                        MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
                        MBEDTLS_TLS_RSA_WITH_AES_128_GCM_SHA256,
                        0};
    int out[16];
    assert_int_equal(tlsprefs_order_suites(supported, 1, out, 16), 9);
    assert_memory_equal(out, want, sizeof want);
    assert_int_equal(tlsprefs_order_suites(supported, 0, out, 16), 9);
    assert_memory_equal(out, supported, sizeof supported);
    print_message("AES-GCM offered first in this build: %s\n", tlsprefs_aes_gcm_first() ? "yes" : "no");
#ifndef OUTPOST_GCM_ALT
    assert_false(tlsprefs_aes_gcm_first());
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preferred_first_then_the_rest_in_order),
        cmocka_unit_test(test_only_groups_the_library_has),
        cmocka_unit_test(test_capacity_is_respected_and_terminated),
        cmocka_unit_test(test_aes_gcm_suites_first_only_when_asked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
