/* test_tlsprefs.c — the order of TLS key-exchange groups (agent/net/tlsprefs.c):
 * X25519, P-256, P-384, P-521 first when the library has them, every other
 * supported group kept after them, none twice, none invented; and the
 * cipher suites, AES-GCM first only where it runs on the CPU's
 * instructions; with outpost's GCM hook (AES only), no other block cipher
 * reaches GCM. Whether the order reaches libcurl is test_tls.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <mbedtls/cipher.h>
#include <mbedtls/ecp.h>
#include <mbedtls/gcm.h>
#include <mbedtls/ssl.h>
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

/* outpost's GCM hook (cross/mbedtls/gcm_alt.h, agent/crypto/gcmaccel.c)
 * is GCM over AES: Mbed TLS built with it must offer no suite whose GCM
 * runs on another block cipher (the Camellia- and ARIA-GCM suites: a
 * server picking one failed the handshake, and Mbed TLS's own suites failed
 * their vectors), and have no such cipher at all. */
static void test_gcm_suites_are_aes_only(void **unused)
{
    (void)unused;
#ifdef OUTPOST_GCM_ALT
    size_t gcm = 0;
    for (const int *id = mbedtls_ssl_list_ciphersuites(); *id; id++) {
        const mbedtls_ssl_ciphersuite_t *cs = mbedtls_ssl_ciphersuite_from_id(*id);
        assert_non_null(cs);
        const char *name = mbedtls_ssl_ciphersuite_get_name(cs);
        if (strstr(name, "CAMELLIA") || strstr(name, "ARIA"))
            fail_msg("Mbed TLS offers %s", name);
        if (strstr(name, "GCM")) {
            assert_non_null(strstr(name, "AES"));
            gcm++;
        }
    }
    assert_true(gcm >= 4); /* TLS 1.3's two and ECDHE's at least */
    static const mbedtls_cipher_type_t others[] = {MBEDTLS_CIPHER_CAMELLIA_128_GCM, MBEDTLS_CIPHER_CAMELLIA_256_GCM,
                                                   MBEDTLS_CIPHER_ARIA_128_GCM,     MBEDTLS_CIPHER_ARIA_256_GCM,
                                                   MBEDTLS_CIPHER_CAMELLIA_128_CBC, MBEDTLS_CIPHER_ARIA_128_CBC};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        assert_null(mbedtls_cipher_info_from_type(others[i]));
    mbedtls_gcm_context g;
    mbedtls_gcm_init(&g);
    static const unsigned char key[16] = {0};
    assert_int_not_equal(mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_CAMELLIA, key, 128), 0);
    mbedtls_gcm_free(&g);
    print_message("%u GCM suites, all AES\n", (unsigned)gcm);
#else
    print_message("Mbed TLS's own GCM in this build (no OUTPOST_GCM_ALT): any block cipher may use it\n");
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preferred_first_then_the_rest_in_order),
        cmocka_unit_test(test_only_groups_the_library_has),
        cmocka_unit_test(test_capacity_is_respected_and_terminated),
        cmocka_unit_test(test_aes_gcm_suites_first_only_when_asked),
        cmocka_unit_test(test_gcm_suites_are_aes_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
