/* test_sha256.c — the streaming SHA-256 (agent/crypto/sha256.c): the FIPS
 * 180-2 / NIST example vectors, and random splits of a long message against
 * mbedTLS, on every block function this CPU can run (the portable code and
 * the CPU's, when it has one; CTest also runs this program with
 * OUTPOST_SHA256_PORTABLE=1: unit.test_sha256_portable). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/sha256.h>

#include "crypto/sha256.h"

static const sha256accel_impl ALL[] = {SHA256ACCEL_PORTABLE, SHA256ACCEL_X86_SHA, SHA256ACCEL_ARMV8};
#define NIMPL (sizeof(ALL) / sizeof(ALL[0]))

static void tohex(const unsigned char md[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void check_vector(sha256accel_impl impl, const char *msg, size_t repeat, const char *want)
{
    sha256_ctx ctx;
    sha256_init_with(&ctx, impl);
    for (size_t i = 0; i < repeat; i++)
        sha256_update(&ctx, msg, strlen(msg));
    unsigned char md[32];
    char hex[65];
    sha256_finish(&ctx, md);
    tohex(md, hex);
    assert_string_equal(hex, want);
}

static void test_fips_vectors(void **state)
{
    (void)state;
    int ran = 0;
    for (size_t k = 0; k < NIMPL; k++) {
        if (!sha256accel_available(ALL[k]))
            continue;
        ran++;
        check_vector(ALL[k], "", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        check_vector(ALL[k], "abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        check_vector(ALL[k], "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
                     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        check_vector(ALL[k],
                     "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsm"
                     "nopqrstnopqrstu",
                     1, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
        check_vector(ALL[k], "a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        check_vector(ALL[k], "aaaaaaaaaa", 100000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }
    assert_true(ran >= 1);
}

/* Any split of a message gives mbedTLS's digest, at every length around the
 * padding boundaries (55, 56, 63, 64 bytes into the last block). */
static void test_random_splits_match_mbedtls(void **state)
{
    (void)state;
    size_t len = 300000;
    unsigned char *msg = malloc(len);
    assert_non_null(msg);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        msg[i] = (unsigned char)x;
    }
    static const size_t lengths[] = {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 4095, 65536, 300000};
    for (size_t k = 0; k < NIMPL; k++) {
        if (!sha256accel_available(ALL[k]))
            continue;
        for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
            size_t n = lengths[l];
            unsigned char want[32], got[32];
            assert_int_equal(mbedtls_sha256(msg, n, want, 0), 0);
            for (int trial = 0; trial < 8; trial++) {
                sha256_ctx ctx;
                sha256_init_with(&ctx, ALL[k]);
                size_t done = 0;
                while (done < n) {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    /* small pieces mostly, a big one now and then */
                    size_t piece = (x % 4 == 0) ? x % 70000 : x % 130;
                    if (piece > n - done)
                        piece = n - done;
                    sha256_update(&ctx, msg + done, piece);
                    done += piece;
                }
                sha256_finish(&ctx, got);
                assert_memory_equal(got, want, 32);
            }
        }
    }
    free(msg);
}

/* sha256_init uses the process's chosen block function. */
static void test_init_uses_active(void **state)
{
    (void)state;
    sha256_ctx ctx;
    sha256_init(&ctx);
    assert_int_equal(ctx.impl, sha256accel_active());
    const char *forced = getenv("OUTPOST_SHA256_PORTABLE");
    if (forced && strcmp(forced, "1") == 0)
        assert_int_equal(ctx.impl, SHA256ACCEL_PORTABLE);
    check_vector(ctx.impl, "abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips_vectors),
        cmocka_unit_test(test_random_splits_match_mbedtls),
        cmocka_unit_test(test_init_uses_active),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
