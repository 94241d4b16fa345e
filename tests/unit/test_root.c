/* test_root.c — the mirror's root of trust (PRODUCT.md section 8.1) as
 * conformance scenarios after TUF's: rotation 1 -> 2 -> 3 with changing
 * thresholds; a root N+1 signed only by the new keys, only by the old ones,
 * by one key twice, with its version skipped or repeated; expiry judged on
 * the final root only (the clock passed in); a manifest signed by a key the
 * root dropped or by too few manifest keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mirror/envelope.h"
#include "mirror/manifest.h"
#include "mirror/root.h"
#include "mirror/signkey.h"

#define NOW 1767225600 /* 2026-01-01T00:00:00Z */
#define DAY 86400
#define KEYS 8

static signkey *k[KEYS]; /* k[0..3] root keys, k[4..7] manifest keys */

static int setup(void **unused)
{
    (void)unused;
    for (int i = 0; i < KEYS; i++)
        if (signkey_generate(&k[i], NULL) != ERR_OK)
            return -1;
    return 0;
}

static int teardown(void **unused)
{
    (void)unused;
    for (int i = 0; i < KEYS; i++)
        signkey_free(k[i]);
    return 0;
}

/* A root signed by each key in signers (NULL-terminated; a key may repeat). */
static char *make_root(int64_t version, int64_t expires_at, signkey *const *root_keys, size_t root_count,
                       size_t root_threshold, signkey *const *manifest_keys, size_t manifest_count,
                       size_t manifest_threshold, signkey *const *signers)
{
    root_spec spec = {version,        expires_at,    root_keys,      root_count,
                      root_threshold, manifest_keys, manifest_count, manifest_threshold};
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(root_write_unsigned(&spec, &text, &len, NULL), ERR_OK);
    envelope env;
    assert_int_equal(envelope_open(text, len, &env, NULL), ERR_OK);
    free(text);
    for (size_t i = 0; signers && signers[i]; i++) {
        if (i > 0 && signers[i] == signers[i - 1]) {
            /* The same key twice: a second copy of its signature. */
            envelope_signature *last = &env.sigs[env.sig_count - 1], *copy = &env.sigs[env.sig_count++];
            *copy = *last;
            copy->sig = malloc(last->sig_len);
            memcpy(copy->sig, last->sig, last->sig_len);
            continue;
        }
        assert_int_equal(envelope_add_signature(&env, ROOT_CONTEXT, signers[i], NULL), ERR_OK);
    }
    assert_int_equal(envelope_write(&env, &text, &len, NULL), ERR_OK);
    envelope_free(&env);
    return text;
}

static error_code next_of(const root *trusted, const char *text, root *next, error_info *err)
{
    return root_open_next(trusted, text, strlen(text), "roots/N.root.json", next, err);
}

/* Version 1: root keys k0,k1 (threshold 1), manifest key k4. */
static void root_v1(root *r)
{
    signkey *rk[] = {k[0], k[1]}, *mk[] = {k[4]}, *signers[] = {k[0], NULL};
    char *text = make_root(1, NOW + 365 * DAY, rk, 2, 1, mk, 1, 1, signers);
    error_info err;
    assert_int_equal(root_open_trusted(text, strlen(text), "root_file", r, &err), ERR_OK);
    free(text);
}

static void test_trusted_root(void **unused)
{
    (void)unused;
    root r;
    root_v1(&r);
    assert_int_equal(r.version, 1);
    assert_int_equal(r.root_key_count, 2);
    assert_int_equal(r.manifest_threshold, 1);
    root_free(&r);

    /* Unsigned, or signed by a key that is not its own: refused. */
    signkey *rk[] = {k[0], k[1]}, *mk[] = {k[4]}, *none[] = {NULL}, *stranger[] = {k[2], NULL};
    error_info err;
    char *text = make_root(1, NOW + DAY, rk, 2, 1, mk, 1, 1, none);
    assert_int_equal(root_open_trusted(text, strlen(text), "root_file", &r, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "signed by 0 of its own 2 root keys, 1 needed"));
    free(text);
    text = make_root(1, NOW + DAY, rk, 2, 1, mk, 1, 1, stranger);
    assert_int_equal(root_open_trusted(text, strlen(text), "root_file", &r, &err), ERR_REJECTED);
    free(text);

    /* Not an envelope; a payload edited after signing. */
    assert_int_equal(root_open_trusted("<html>", 6, "root_file", &r, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "not a signed root"));
}

/* 1 -> 2 -> 3: version 2 adds k2 and raises the root threshold to 2;
 * version 3 drops k0, keeps threshold 2 and swaps the manifest key. */
static void test_rotation_chain(void **unused)
{
    (void)unused;
    root r1, r2, r3;
    error_info err;
    root_v1(&r1);
    signkey *rk2[] = {k[0], k[1], k[2]}, *mk2[] = {k[4], k[5]};
    signkey *s2[] = {k[0], k[1], k[2], NULL};
    char *t2 = make_root(2, NOW + 365 * DAY, rk2, 3, 2, mk2, 2, 1, s2);
    assert_int_equal(next_of(&r1, t2, &r2, &err), ERR_OK);
    assert_int_equal(r2.root_threshold, 2);

    signkey *rk3[] = {k[1], k[2], k[3]}, *mk3[] = {k[5], k[6]};
    /* Version 3 needs 2 of version 2's keys {k0,k1,k2} and 2 of its own {k1,k2,k3}. */
    signkey *s3[] = {k[1], k[2], NULL};
    char *t3 = make_root(3, NOW + 365 * DAY, rk3, 3, 2, mk3, 2, 2, s3);
    assert_int_equal(next_of(&r2, t3, &r3, &err), ERR_OK);
    assert_int_equal(r3.version, 3);
    assert_int_equal(r3.manifest_threshold, 2);
    assert_int_equal(root_check_expiry(&r3, NOW, &err), ERR_OK);

    /* Version 3 straight from version 1 is refused: versions are walked one by one. */
    root skipped;
    assert_int_equal(next_of(&r1, t3, &skipped, &err), ERR_REJECTED);
    free(t2);
    free(t3);
    root_free(&r1);
    root_free(&r2);
    root_free(&r3);
}

/* Each way a root N+1 can fail, against version 1 (root keys k0,k1, threshold 1)
 * for a version 2 with root keys k2,k3 (threshold 2). */
static void test_next_refusals(void **unused)
{
    (void)unused;
    root r1, next;
    error_info err;
    root_v1(&r1);
    signkey *rk[] = {k[2], k[3]}, *mk[] = {k[4]};
    static const struct {
        const char *what;
        int64_t version;
        int signers[5]; /* indexes into k, -1 ends */
        const char *message;
    } cases[] = {
        {"only the new keys", 2, {2, 3, -1}, "signed by 0 of version 1's 2 root keys, 1 needed"},
        {"only the old keys", 2, {0, 1, -1}, "signed by 0 of its own 2 root keys, 2 needed"},
        {"one new key twice", 2, {0, 2, 2, -1}, "signed by 1 of its own 2 root keys, 2 needed"},
        {"version skipped", 3, {0, 2, 3, -1}, "says version 3 where version 2 must follow"},
        {"version repeated", 1, {0, 2, 3, -1}, "says version 1 where version 2 must follow"},
        {"unsigned", 2, {-1}, "signed by 0 of version 1's"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        signkey *signers[6] = {NULL};
        for (int j = 0; cases[i].signers[j] >= 0; j++)
            signers[j] = k[cases[i].signers[j]];
        char *text = make_root(cases[i].version, NOW + DAY, rk, 2, 2, mk, 1, 1, signers);
        error_code rc = next_of(&r1, text, &next, &err);
        if (rc != ERR_REJECTED || !strstr(err.message, cases[i].message))
            fail_msg("%s: %s (%s)", cases[i].what, error_name(rc), err.message);
        free(text);
    }
    /* The same with enough signatures is accepted (the cases fail for their reason only). */
    signkey *good[] = {k[0], k[2], k[3], NULL};
    char *text = make_root(2, NOW + DAY, rk, 2, 2, mk, 1, 1, good);
    assert_int_equal(next_of(&r1, text, &next, &err), ERR_OK);
    root_free(&next);
    /* Edited after signing: every signature fails. */
    cJSON *o = cJSON_Parse(text);
    cJSON_ReplaceItemInObject(o, "payload", cJSON_CreateString("eyJzY2hlbWEiOjF9"));
    char *edited = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    assert_int_equal(next_of(&r1, edited, &next, &err), ERR_REJECTED);
    free(edited);
    free(text);
    root_free(&r1);
}

/* An expired intermediate root followed by a valid one is walked; expiry is judged on the final root. */
static void test_expiry(void **unused)
{
    (void)unused;
    root r1, r2, r3;
    error_info err;
    signkey *rk[] = {k[0]}, *mk[] = {k[4]}, *s[] = {k[0], NULL};
    char *t1 = make_root(1, NOW - 30 * DAY, rk, 1, 1, mk, 1, 1, s);
    char *t2 = make_root(2, NOW - DAY, rk, 1, 1, mk, 1, 1, s);
    char *t3 = make_root(3, NOW + 10 * DAY, rk, 1, 1, mk, 1, 1, s);
    assert_int_equal(root_open_trusted(t1, strlen(t1), "root_file", &r1, &err), ERR_OK);
    assert_int_equal(root_check_expiry(&r1, NOW, &err), ERR_TEMPORARY);
    assert_non_null(strstr(err.message, "mirror root expired at 2025-12-02T00:00:00Z"));
    assert_int_equal(next_of(&r1, t2, &r2, &err), ERR_OK);
    assert_int_equal(root_check_expiry(&r2, NOW, &err), ERR_TEMPORARY);
    assert_int_equal(next_of(&r2, t3, &r3, &err), ERR_OK);
    assert_int_equal(root_check_expiry(&r3, NOW, &err), ERR_OK);
    assert_int_equal(root_check_expiry(&r3, NOW + 10 * DAY, &err), ERR_TEMPORARY); /* at the second it expires */
    free(t1);
    free(t2);
    free(t3);
    root_free(&r1);
    root_free(&r2);
    root_free(&r3);
}

static char *signed_manifest(signkey *const *keys, size_t n)
{
    static const char payload[] =
        "{\"schema\":1,\"seq\":5,\"issued_at\":\"2026-01-01T00:00:00Z\",\"expires_at\":\"2026-01-15T00:00:00Z\","
        "\"channel\":\"stable\",\"platform\":\"windows\",\"version\":\"1.2.3\",\"file_name\":\"s.exe\",\"length\":10,"
        "\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"path\":\"installers/a.exe\","
        "\"signer\":null,\"rollout\":{\"percent\":100,\"salt\":"
        "\"0000000000000000000000000000000000000000000000000000000000000000\"}}";
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(manifest_sign(payload, strlen(payload), keys, n, &text, &len, NULL), ERR_OK);
    return text;
}

/* The manifest needs manifest_threshold of the trusted root's manifest keys. */
static void test_manifest_keys(void **unused)
{
    (void)unused;
    root r1, r2;
    error_info err;
    root_v1(&r1); /* manifest key k4 */
    signkey *rk[] = {k[0], k[1]}, *mk[] = {k[5], k[6]}, *s[] = {k[0], NULL};
    char *t2 = make_root(2, NOW + DAY, rk, 2, 1, mk, 2, 2, s); /* k4 dropped; k5 and k6, both needed */
    assert_int_equal(next_of(&r1, t2, &r2, &err), ERR_OK);

    manifest m;
    manifest_verdict v;
    char *by_k4 = signed_manifest(&k[4], 1);
    assert_int_equal(manifest_open_threshold(by_k4, strlen(by_k4), r1.manifest_keys, r1.manifest_key_count,
                                             r1.manifest_threshold, &m, &v, &err),
                     ERR_OK);
    manifest_free(&m);
    /* Signed by the key the root dropped: refused, 4. */
    assert_int_equal(manifest_open_threshold(by_k4, strlen(by_k4), r2.manifest_keys, r2.manifest_key_count,
                                             r2.manifest_threshold, &m, &v, &err),
                     ERR_REJECTED);
    assert_int_equal(v, MANIFEST_UNKNOWN_KEY);
    /* One of the two needed: refused. Both: accepted. */
    char *by_k5 = signed_manifest(&k[5], 1);
    assert_int_equal(manifest_open_threshold(by_k5, strlen(by_k5), r2.manifest_keys, r2.manifest_key_count,
                                             r2.manifest_threshold, &m, &v, &err),
                     ERR_REJECTED);
    assert_non_null(strstr(err.message, "by 1 of the root's manifest keys, and the root asks for 2"));
    char *by_both = signed_manifest(&k[5], 2);
    assert_int_equal(manifest_open_threshold(by_both, strlen(by_both), r2.manifest_keys, r2.manifest_key_count,
                                             r2.manifest_threshold, &m, &v, &err),
                     ERR_OK);
    manifest_free(&m);
    /* A manifest signature never counts as a root signature (another context). */
    root r3;
    envelope env;
    assert_int_equal(envelope_open(t2, strlen(t2), &env, NULL), ERR_OK);
    assert_int_equal(envelope_count(&env, MANIFEST_CONTEXT, rk, 2, NULL, NULL), 0);
    envelope_free(&env);
    (void)r3;

    char ids[200];
    root_manifest_keyids(&r2, ids, sizeof ids);
    assert_int_equal(strlen(ids), 64 * 2 + 1);
    free(by_k4);
    free(by_k5);
    free(by_both);
    free(t2);
    root_free(&r1);
    root_free(&r2);
}

/* What root_write_unsigned refuses (the ceremony's usage errors). */
static void test_write_refusals(void **unused)
{
    (void)unused;
    signkey *rk[] = {k[0], k[0]}, *mk[] = {k[4]};
    char *text = NULL;
    size_t len = 0;
    error_info err;
    root_spec twice = {1, NOW, rk, 2, 1, mk, 1, 1};
    assert_int_equal(root_write_unsigned(&twice, &text, &len, &err), ERR_USAGE);
    root_spec high = {1, NOW, rk, 1, 2, mk, 1, 1};
    assert_int_equal(root_write_unsigned(&high, &text, &len, &err), ERR_USAGE);
    root_spec zero = {1, NOW, rk, 1, 1, mk, 1, 0};
    assert_int_equal(root_write_unsigned(&zero, &text, &len, &err), ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trusted_root),  cmocka_unit_test(test_rotation_chain),
        cmocka_unit_test(test_next_refusals), cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_manifest_keys), cmocka_unit_test(test_write_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
