/* test_rollout.c — the rollout bucket (PRODUCT.md section 8) against vectors
 * computed independently with Python's hashlib:
 *
 *   import hashlib
 *   h = hashlib.sha256(bytes.fromhex(salt) + machine_id.strip().encode()).digest()
 *   int.from_bytes(h[:4], "big")
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mirror/rollout.h"

static const struct {
    const char *salt;
    const char *machine_id;
    uint32_t bucket; /* from hashlib, see above */
} vectors[] = {
    {"00", "machine-a", 0x4aa6cd1eu},                                                      /* 29.16% */
    {"deadbeef", "  4c4c4544-0042-3510-8052-b4c04f4b4d32\n", 0x0b2d56eau},                 /* trimmed; 4.37% */
    {"0123456789abcdef0123456789abcdef", "ec2a1b7e9f0d4c6e8a5b3d2f1e0c9b8a", 0x39568b16u}, /* 22.40% */
    {"ff", "\xc3\xa9-machine", 0xfb275f14u},      /* UTF-8 "é-machine"; 98.11% */
    {"a1b2c3d4e5f60718", "host-17", 0xc119f66au}, /* 75.43% */
    {"DEADBEEF", "machine-a", 0x9be169dcu},       /* upper-case hex salt; 60.89% */
};

static void test_vectors(void **unused)
{
    (void)unused;
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        uint32_t bucket = 0;
        error_info err;
        assert_int_equal(rollout_bucket(vectors[i].salt, vectors[i].machine_id, &bucket, &err), ERR_OK);
        if (bucket != vectors[i].bucket)
            fail_msg("vector %zu: bucket 0x%08x, hashlib says 0x%08x", i, bucket, vectors[i].bucket);
    }
}

static void test_threshold(void **unused)
{
    (void)unused;
    /* "00"/"machine-a" sits at 29.1608%: eligible at 29.17, not at 29.16. */
    bool eligible = false;
    error_info err;
    assert_int_equal(rollout_eligible("00", "machine-a", 29.17, &eligible, NULL, &err), ERR_OK);
    assert_true(eligible);
    assert_int_equal(rollout_eligible("00", "machine-a", 29.16, &eligible, NULL, &err), ERR_OK);
    assert_false(eligible);
    assert_false(rollout_bucket_eligible(0, 0.0));            /* 0% reaches nobody */
    assert_true(rollout_bucket_eligible(0xffffffffu, 100.0)); /* 100% reaches everybody */
    assert_true(rollout_bucket_eligible(0x7fffffffu, 50.0));
    assert_false(rollout_bucket_eligible(0x80000000u, 50.0));
}

static void test_refusals(void **unused)
{
    (void)unused;
    uint32_t bucket;
    error_info err;
    static const char *const bad_salts[] = {"", "0", "xyz0", "00 ", NULL};
    for (size_t i = 0; i < sizeof bad_salts / sizeof bad_salts[0]; i++) {
        error_clear(&err);
        assert_int_equal(rollout_bucket(bad_salts[i], "machine-a", &bucket, &err), ERR_REJECTED);
    }
    char long_salt[131];
    memset(long_salt, 'a', 130);
    long_salt[130] = '\0';
    assert_int_equal(rollout_bucket(long_salt, "m", &bucket, &err), ERR_REJECTED);
    assert_int_equal(rollout_bucket("00", " \t\r\n", &bucket, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "mirror.machine_id"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
