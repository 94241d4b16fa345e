/* test_sha256accel.c — SHA-256 block functions (agent/crypto/sha256accel.c):
 * every implementation this CPU can run (the portable code, and x86 SHA-NI
 * or the ARMv8 crypto extensions where present: natively, or under
 * qemu-aarch64, which emulates them) against the NIST/CAVS short-message,
 * long-message and Monte Carlo vectors of sha256_vectors.inc; the same
 * vectors through mbedTLS, which in the release builds (OUTPOST_SHA256_ALT)
 * hashes through this module; and the choice of implementation, including
 * OUTPOST_SHA256_PORTABLE=1 (CTest runs this program a second time with it:
 * unit.test_sha256accel_portable). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/sha256.h>

#include "crypto/sha256accel.h"
#include "platform/platform.h"
#include "support.h"

#include "sha256_vectors.inc"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const sha256accel_impl ALL[] = {SHA256ACCEL_PORTABLE, SHA256ACCEL_X86_SHA, SHA256ACCEL_ARMV8};

/* The generator sha256_vectors.py uses for the long messages. */
static unsigned char *xorshift_message(size_t len)
{
    unsigned char *out = malloc(len ? len : 1);
    assert_non_null(out);
    uint32_t x = (uint32_t)(len * 2654435761u + 1u);
    if (x == 0)
        x = 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        out[i] = (unsigned char)x;
    }
    return out;
}

static size_t unhex(const char *hex, unsigned char *out)
{
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (unsigned char)v;
    }
    return n;
}

static void tohex(const unsigned char md[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* A whole SHA-256 over impl's block function: full blocks handed over
 * several at a time (chunk blocks per call), then FIPS 180-4 padding. */
static void sha256_with(sha256accel_impl impl, const unsigned char *msg, size_t len, size_t chunk, unsigned char md[32])
{
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    size_t full = len / 64, done = 0;
    while (done < full) {
        size_t n = full - done < chunk ? full - done : chunk;
        sha256accel_blocks(impl, h, msg + 64 * done, n);
        done += n;
    }
    unsigned char tail[128] = {0};
    size_t rest = len - 64 * full;
    if (rest)
        memcpy(tail, msg + 64 * full, rest);
    tail[rest] = 0x80;
    size_t tail_len = rest < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++)
        tail[tail_len - 1 - i] = (unsigned char)(bits >> (8 * i));
    sha256accel_blocks(impl, h, tail, tail_len / 64);
    for (int i = 0; i < 8; i++) {
        md[4 * i] = (unsigned char)(h[i] >> 24);
        md[4 * i + 1] = (unsigned char)(h[i] >> 16);
        md[4 * i + 2] = (unsigned char)(h[i] >> 8);
        md[4 * i + 3] = (unsigned char)h[i];
    }
}

/* impl 0: through mbedTLS (what the program uses). */
static void digest(sha256accel_impl impl, const unsigned char *msg, size_t len, size_t chunk, char hex[65])
{
    unsigned char md[32];
    if (impl == 0)
        assert_int_equal(mbedtls_sha256(msg, len, md, 0), 0);
    else
        sha256_with(impl, msg, len, chunk, md);
    tohex(md, hex);
}

static void check_vectors(sha256accel_impl impl)
{
    char hex[65];
    unsigned char msg[64];
    for (size_t i = 0; i < COUNT(short_msgs); i++) {
        size_t n = unhex(short_msgs[i].msg, msg);
        digest(impl, msg, n, 1, hex);
        assert_string_equal(hex, short_msgs[i].md);
    }
    for (size_t i = 0; i < COUNT(long_msgs); i++) {
        unsigned char *m = xorshift_message(long_msgs[i].len);
        digest(impl, m, long_msgs[i].len, 1 + i % 7, hex);
        assert_string_equal(hex, long_msgs[i].md);
        free(m);
    }
    unsigned char *a = malloc(1000000);
    assert_non_null(a);
    memset(a, 'a', 1000000);
    digest(impl, a, 1000000, 1000, hex);
    assert_string_equal(hex, million_a_md);
    free(a);

    /* Monte Carlo: MDi = SHA(MDi-3 || MDi-2 || MDi-1), 1,000 per checkpoint. */
    unsigned char buf[96], seed[32];
    unhex(monte_seed, seed);
    for (size_t j = 0; j < COUNT(monte_checkpoints); j++) {
        memcpy(buf, seed, 32);
        memcpy(buf + 32, seed, 32);
        memcpy(buf + 64, seed, 32);
        unsigned char md[32];
        for (int i = 3; i < 1003; i++) {
            if (impl == 0)
                assert_int_equal(mbedtls_sha256(buf, 96, md, 0), 0);
            else
                sha256_with(impl, buf, 96, 1, md);
            memmove(buf, buf + 32, 64);
            memcpy(buf + 64, md, 32);
        }
        memcpy(seed, md, 32);
        tohex(seed, hex);
        assert_string_equal(hex, monte_checkpoints[j]);
    }
}

static void test_every_available_implementation(void **state)
{
    (void)state;
    int ran = 0;
    for (size_t i = 0; i < COUNT(ALL); i++) {
        if (!sha256accel_available(ALL[i]))
            continue;
        print_message("SHA-256 vectors on %s\n", sha256accel_name(ALL[i]));
        check_vectors(ALL[i]);
        ran++;
    }
    assert_true(ran >= 1);
}

static void test_through_mbedtls(void **state)
{
    (void)state;
#ifdef OUTPOST_SHA256_ALT
    print_message("mbedTLS hashes through this module: %s\n", sha256accel_name(sha256accel_active()));
#else
    print_message("mbedTLS hashes with its own code (no MBEDTLS_SHA256_PROCESS_ALT in this build)\n");
#endif
    check_vectors(0);
}

static int choose(bool cpu_has, const char *forced)
{
    return (int)sha256accel_choose(cpu_has, forced);
}

static void test_choose(void **state)
{
    (void)state;
    sha256accel_impl cpu = SHA256ACCEL_PORTABLE;
    for (size_t i = 1; i < COUNT(ALL); i++)
        if (sha256accel_available(ALL[i]))
            cpu = ALL[i];
    /* active() reads the variable too, and platform_getenv's pointer lasts
     * only until the next read of the same variable: ask in this order. */
    sha256accel_impl active = sha256accel_active();
    const char *forced = platform_getenv("OUTPOST_SHA256_PORTABLE");
    print_message("active: %s (OUTPOST_SHA256_PORTABLE=%s, CPU SHA instructions: %s)\n", sha256accel_name(active),
                  forced ? forced : "unset", platform_cpu_has_sha256() ? "yes" : "no");
    support_check_accel_choice(choose, SHA256ACCEL_PORTABLE, (int)cpu, (int)active, forced);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choose),
        cmocka_unit_test(test_every_available_implementation),
        cmocka_unit_test(test_through_mbedtls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
