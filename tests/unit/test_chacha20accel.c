/* test_chacha20accel.c — the ChaCha20 keystream (agent/crypto/chacha20accel.c):
 * the portable code against RFC 8439's vectors (appendix A.1 #1 and #4,
 * A.2 #2); the vector code of this architecture (SSE2 on x86-64, NEON on
 * AArch64: natively, under qemu-aarch64 or under wine) against the same
 * vectors and against the portable code at every block count up to 40,
 * across the counter's wrap and in place; and, in the release builds
 * (OUTPOST_CHACHA20_ALT), mbedTLS's ChaCha20 and ChaCha20-Poly1305
 * self-tests, which then run through this module, and arbitrary splits of
 * one message into update calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/chacha20accel.h"

#ifdef OUTPOST_CHACHA20_ALT
#include <mbedtls/chacha20.h>
#include <mbedtls/chachapoly.h>
#endif

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const chacha20accel_impl ALL[] = {CHACHA20ACCEL_PORTABLE, CHACHA20ACCEL_SSE2, CHACHA20ACCEL_NEON};

/* RFC 8439 A.2 #2: the plaintext and its ciphertext under key 0...01,
 * nonce 0...02, counter 1. */
static const char RFC_TEXT[] =
    "Any submission to the IETF intended by the Contributor for publication as all or part of an IETF "
    "Internet-Draft or RFC and any statement made within the context of an IETF activity is considered an "
    "\"IETF Contribution\". Such statements include oral statements in IETF sessions, as well as written and "
    "electronic communications made at any time or place, which are addressed to";
static const char RFC_CIPHER_HEX[] =
    "a3fbf07df3fa2fde4f376ca23e82737041605d9f4f4f57bd8cff2c1d4b7955ec2a97948bd3722915c8f3d337f7d370050e9e96d6"
    "47b7c39f56e031ca5eb6250d4042e02785ececfa4b4bb5e8ead0440e20b6e8db09d881a7c6132f420e52795042bdfa7773d8a905"
    "1447b3291ce1411c680465552aa6c405b7764d5e87bea85ad00f8449ed8f72d0d662ab052691ca66424bc86d2df80ea41f43abf9"
    "37d3259dc4b2d0dfb48a6c9139ddd7f76966e928e635553ba76c5c879d7b35d49eb2e62b0871cdac638939e25e8a1e0ef9d5280f"
    "a8ca328b351c3c765989cbcf3daa8b6ccc3aaf9f3979c92b3720fc88dc95ed84a1be059c6499b9fda236e7e818b04b0bc39c1e87"
    "6b193bfe5569753f88128cc08aaa9b63d1a16f80ef2554d7189c411f5869ca52c5b83fa36ff216b9c1d30062bebcfd2dc5bce091"
    "1934fda79a86f6e698ced759c3ff9b6477338f3da4f9cd8514ea9982ccafb341b2384dd902f3d1ab7ac61dd29c6f21ba5b862f37"
    "30e37cfdc4fd806c22f221";

/* RFC 8439 A.1 #1: the keystream of key 0, nonce 0, counter 0. */
static const char RFC_A1_BLOCK0_HEX[] = "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
                                        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586";

static void unhex(const char *hex, unsigned char *out, size_t len)
{
    assert_int_equal(strlen(hex), 2 * len);
    for (size_t i = 0; i < len; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (unsigned char)v;
    }
}

static void rfc_key_nonce(unsigned char key[32], unsigned char nonce[12])
{
    memset(key, 0, 32);
    memset(nonce, 0, 12);
    key[31] = 1;
    nonce[11] = 2;
}

/* The whole blocks of A.2 #2 (5 of them, so the vector code runs one pass
 * of four and the portable code the fifth), then the partial last one by
 * way of a zero-padded block. */
static void check_rfc(chacha20accel_impl impl)
{
    size_t len = sizeof RFC_TEXT - 1;
    unsigned char key[32], nonce[12], want[sizeof RFC_TEXT - 1], got[5 * 64 + 64];
    uint32_t state[16];
    rfc_key_nonce(key, nonce);
    unhex(RFC_CIPHER_HEX, want, len);
    chacha20accel_init_state(state, key, 1, nonce);
    memset(got, 0, sizeof got);
    memcpy(got, RFC_TEXT, len);
    chacha20accel_xor_blocks(impl, state, got, got, 6);
    assert_memory_equal(got, want, len);

    unsigned char zeros[64] = {0}, block[64], want_block[64];
    memset(key, 0, 32);
    memset(nonce, 0, 12);
    chacha20accel_init_state(state, key, 0, nonce);
    chacha20accel_xor_blocks(impl, state, zeros, block, 1);
    unhex(RFC_A1_BLOCK0_HEX, want_block, 64);
    assert_memory_equal(block, want_block, 64);
}

static void test_rfc8439_vectors(void **unused)
{
    (void)unused;
    int ran = 0;
    for (size_t i = 0; i < COUNT(ALL); i++) {
        if (!chacha20accel_available(ALL[i]))
            continue;
        print_message("RFC 8439 vectors on %s\n", chacha20accel_name(ALL[i]));
        check_rfc(ALL[i]);
        ran++;
    }
    assert_true(ran >= 1);
}

/* Every block count from 0 to 40 (whole passes of four and the rest), with
 * the counter starting 5 blocks before its wrap, in place and not. */
static void test_vector_code_matches_portable(void **unused)
{
    (void)unused;
    chacha20accel_impl impl = chacha20accel_active();
    print_message("active: %s\n", chacha20accel_name(impl));
    unsigned char key[32], nonce[12];
    for (int i = 0; i < 32; i++)
        key[i] = (unsigned char)(7 * i + 3);
    for (int i = 0; i < 12; i++)
        nonce[i] = (unsigned char)(0xa0 + i);
    enum { MAX = 40 };
    unsigned char *in = malloc(64 * MAX), *want = malloc(64 * MAX), *got = malloc(64 * MAX);
    assert_non_null(in);
    assert_non_null(want);
    assert_non_null(got);
    for (size_t i = 0; i < 64 * MAX; i++)
        in[i] = (unsigned char)(i * 131 + 17);
    uint32_t state[16];
    for (size_t n = 0; n <= MAX; n++) {
        chacha20accel_init_state(state, key, 0xfffffffbu, nonce);
        chacha20accel_xor_blocks(CHACHA20ACCEL_PORTABLE, state, in, want, n);
        memset(got, 0x5a, 64 * MAX);
        chacha20accel_xor_blocks(impl, state, in, got, n);
        assert_memory_equal(got, want, 64 * n);
        if (n < MAX)
            assert_int_equal(got[64 * n], 0x5a); /* nothing written past the last block */
        memcpy(got, in, 64 * MAX);
        chacha20accel_xor_blocks(impl, state, got, got, n);
        assert_memory_equal(got, want, 64 * n);
    }
    free(in);
    free(want);
    free(got);
}

#ifdef OUTPOST_CHACHA20_ALT
static void test_mbedtls_self_tests_run_through_this_module(void **unused)
{
    (void)unused;
    assert_int_equal(mbedtls_chacha20_self_test(1), 0);
    assert_int_equal(mbedtls_chachapoly_self_test(1), 0);
}

/* A.2 #2 cut into pieces of 1 to 200 bytes (a leftover keystream used up,
 * whole blocks, a partial block kept) equals the RFC's ciphertext. */
static void test_mbedtls_update_in_any_pieces(void **unused)
{
    (void)unused;
    size_t len = sizeof RFC_TEXT - 1;
    unsigned char key[32], nonce[12], want[sizeof RFC_TEXT - 1], got[sizeof RFC_TEXT - 1];
    rfc_key_nonce(key, nonce);
    unhex(RFC_CIPHER_HEX, want, len);
    uint32_t x = 12345;
    for (int trial = 0; trial < 200; trial++) {
        mbedtls_chacha20_context ctx;
        mbedtls_chacha20_init(&ctx);
        assert_int_equal(mbedtls_chacha20_setkey(&ctx, key), 0);
        assert_int_equal(mbedtls_chacha20_starts(&ctx, nonce, 1), 0);
        size_t done = 0;
        while (done < len) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            size_t piece = 1 + x % (trial < 100 ? 70 : 200);
            if (piece > len - done)
                piece = len - done;
            assert_int_equal(mbedtls_chacha20_update(&ctx, piece, (const unsigned char *)RFC_TEXT + done, got + done),
                             0);
            done += piece;
        }
        mbedtls_chacha20_free(&ctx);
        assert_memory_equal(got, want, len);
    }
    assert_int_equal(mbedtls_chacha20_crypt(key, nonce, 1, len, (const unsigned char *)RFC_TEXT, got), 0);
    assert_memory_equal(got, want, len);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc8439_vectors),
        cmocka_unit_test(test_vector_code_matches_portable),
#ifdef OUTPOST_CHACHA20_ALT
        cmocka_unit_test(test_mbedtls_self_tests_run_through_this_module),
        cmocka_unit_test(test_mbedtls_update_in_any_pieces),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
