/* test_manifest.c — the fleet mirror's signed manifest (PRODUCT.md section 8):
 * the envelope, signatures with several keys (rotation), every refusal and
 * its exit code, seq/expiry with an injected clock, and a manifest signed by
 * an independent implementation (OpenSSL) that outpost must accept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/text.h"
#include "core/timefmt.h"
#include "mirror/manifest.h"
#include "mirror/signkey.h"

/* Made with: openssl ecparam -name prime256v1 -genkey -noout; openssl ec -pubout;
 * key id: openssl pkey -pubin -outform DER | sha256sum. */
static const char openssl_public_pem[] = "-----BEGIN PUBLIC KEY-----\n"
                                         "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEV/RuUt8RDupNJw3sFM2BuLcaZlNr\n"
                                         "OQOtcER/lbnPcJt8NLu6SuztJCyR/H5caajB54wItc3Dixyi61cPnx5Lpw==\n"
                                         "-----END PUBLIC KEY-----\n";
static const char openssl_private_pem[] = "-----BEGIN EC PRIVATE KEY-----\n"
                                          "MHcCAQEEIOiXL/pExJCb6Aqtk31T3SQD5OhWIcVEcrp6UpJ+p31FoAoGCCqGSM49\n"
                                          "AwEHoUQDQgAEV/RuUt8RDupNJw3sFM2BuLcaZlNrOQOtcER/lbnPcJt8NLu6Suzt\n"
                                          "JCyR/H5caajB54wItc3Dixyi61cPnx5Lpw==\n"
                                          "-----END EC PRIVATE KEY-----\n";
static const char openssl_keyid[] = "fe17703153c864638b3fdb599b020efb3d9f8097e80cb85901ab86dcebe42378";

/* A payload (seq 7, issued 2026-01-10, expires 2026-01-24, an unknown field
 * "future_field") signed with `openssl dgst -sha256 -sign` over
 * "outpost-manifest-v1\n" + payload. */
static const char openssl_envelope[] =
    "{\"payload\": \"eyJzY2hlbWEiOjEsInNlcSI6NywiaXNzdWVkX2F0IjoiMjAyNi0wMS0xMFQwMDowMDowMFoiLCJleHBpcmVzX2F"
    "0IjoiMjAyNi0wMS0yNFQwMDowMDowMFoiLCJjaGFubmVsIjoic3RhYmxlIiwicGxhdGZvcm0iOiJ3aW5kb3dzIiwidmVyc2lvbiI"
    "6IjI2LjAxLjAzLjI0MzI5IiwiZmlsZV9uYW1lIjoic2Vuc29yLmV4ZSIsImxlbmd0aCI6MTIzNCwic2hhMjU2IjoiYWJhYmFiYWJ"
    "hYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYiIsInBhdGgiOiJpbnN0YWxsZXJ"
    "zL2FiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWIuZXhlIiwic2l"
    "nbmVyIjp7InN1YmplY3QiOiJDPVVTLCBPPUV4YW1wbGUsIENOPUV4YW1wbGUgQ29kZSBTaWduaW5nIiwiY2VydF9zaGEyNTYiOiJ"
    "jZGNkY2RjZGNkY2RjZGNkY2RjZGNkY2RjZGNkY2RjZGNkY2RjZGNkY2RjZGNkY2RjZGNkY2RjZGNkY2RjZGNkIn0sInJvbGxvdXQ"
    "iOnsicGVyY2VudCI6MTAwLCJzYWx0IjoiMDAxMTIyMzM0NDU1NjY3NyJ9LCJhbGxvd19kb3duZ3JhZGUiOmZhbHNlLCJmdXR1cmV"
    "fZmllbGQiOnsieCI6MX19\", \"signatures\": [{\"keyid\": \"fe17703153c864638b3fdb599b020efb3d9f8097e80cb85901"
    "ab86dcebe42378\", \"sig\": \"MEYCIQD6LuEfRo6Fhce+KlTYaUw9Hy98bV2dLiQMrgM1z2PR9AIhALBh6ZgMND7SlkMB8pNw/oR"
    "ZqTt3SBvUR1RvjSojH+IZ\"}]}";

#define NOW ((int64_t)1768003200) /* 2026-01-10T00:00:00Z, the injected clock */
#define DAY ((int64_t)86400)

static signkey *public_of(const signkey *key)
{
    char *pem = NULL;
    signkey *pub = NULL;
    assert_int_equal(signkey_public_pem(key, &pem, NULL), ERR_OK);
    assert_int_equal(signkey_parse_public(pem, &pub, NULL), ERR_OK);
    free(pem);
    return pub;
}

static void sample(manifest *m, int64_t seq)
{
    memset(m, 0, sizeof *m);
    m->schema = 1;
    m->seq = seq;
    m->issued_at = NOW;
    m->expires_at = NOW + 14 * DAY;
    m->channel = "stable";
    m->platform = "windows";
    m->version = "26.01.03.24329";
    m->file_name = "sensor.exe";
    m->length = 4096;
    memset(m->sha256, 'a', 64);
    m->path = "installers/aaaa.exe";
    m->signed_installer = true;
    m->signer_subject = "C=US, O=Example, CN=Example Code Signing";
    memset(m->signer_cert_sha256, 'b', 64);
    m->rollout_percent = 12.5;
    m->rollout_salt = "00ff";
}

/* The payload of sample() with one field replaced (raw JSON text), signed. */
static char *signed_envelope(const char *field, const char *raw_json, int64_t seq, signkey *const *keys, size_t n)
{
    manifest m;
    sample(&m, seq);
    char *json = NULL;
    assert_int_equal(manifest_payload_json(&m, &json, NULL), ERR_OK);
    if (field) {
        cJSON *o = cJSON_Parse(json);
        cJSON_DeleteItemFromObjectCaseSensitive(o, field);
        if (raw_json)
            cJSON_AddItemToObject(o, field, cJSON_CreateRaw(raw_json)); /* verbatim: cJSON rounds big numbers */
        free(json);
        json = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
    }
    char *env = NULL;
    size_t len = 0;
    assert_int_equal(manifest_sign(json, strlen(json), keys, n, &env, &len, NULL), ERR_OK);
    free(json);
    return env;
}

static manifest_verdict open_verdict(const char *env, signkey *const *keys, size_t n, error_code *code)
{
    manifest m;
    manifest_verdict v = MANIFEST_OK;
    error_info err;
    error_clear(&err);
    *code = manifest_open(env, strlen(env), keys, n, &m, &v, &err);
    if (*code == ERR_OK)
        manifest_free(&m);
    else
        assert_true(strlen(err.message) > 0);
    return v;
}

static void test_openssl_interop(void **unused)
{
    (void)unused;
    signkey *pub = NULL;
    assert_int_equal(signkey_parse_public(openssl_public_pem, &pub, NULL), ERR_OK);
    assert_string_equal(signkey_id(pub), openssl_keyid);
    signkey *priv = NULL;
    assert_int_equal(signkey_parse_private(openssl_private_pem, strlen(openssl_private_pem), "test key", &priv, NULL),
                     ERR_OK);
    assert_string_equal(signkey_id(priv), openssl_keyid); /* the key id is the public key's, private or not */

    manifest m;
    manifest_verdict v;
    error_info err;
    assert_int_equal(manifest_open(openssl_envelope, strlen(openssl_envelope), &pub, 1, &m, &v, &err), ERR_OK);
    assert_int_equal(m.seq, 7);
    assert_string_equal(m.version, "26.01.03.24329");
    assert_int_equal(m.length, 1234);
    assert_string_equal(m.signer_subject, "C=US, O=Example, CN=Example Code Signing");
    assert_string_equal(m.keyid, openssl_keyid);
    manifest_expect e = {.now_s = NOW, .channel = "stable", .platform = "windows", .highest_seq = -1};
    assert_int_equal(manifest_check(&m, &e, &v, &err), ERR_OK);
    manifest_free(&m);
    signkey_free(pub);
    signkey_free(priv);
}

static void test_roundtrip_and_determinism(void **unused)
{
    (void)unused;
    signkey *key = NULL;
    assert_int_equal(signkey_generate(&key, NULL), ERR_OK);
    assert_true(signkey_can_sign(key));
    assert_int_equal(strlen(signkey_id(key)), 64);
    signkey *pub = public_of(key);
    assert_false(signkey_can_sign(pub));
    assert_string_equal(signkey_id(pub), signkey_id(key));

    /* RFC 6979: the same key and bytes give the same signature. */
    uint8_t s1[SIGNKEY_SIG_MAX], s2[SIGNKEY_SIG_MAX];
    size_t n1 = 0, n2 = 0;
    assert_int_equal(signkey_sign(key, "abc", 3, s1, &n1, NULL), ERR_OK);
    assert_int_equal(signkey_sign(key, "abc", 3, s2, &n2, NULL), ERR_OK);
    assert_int_equal(n1, n2);
    assert_memory_equal(s1, s2, n1);
    assert_true(signkey_verify(pub, "abc", 3, s1, n1));
    assert_false(signkey_verify(pub, "abd", 3, s1, n1));

    /* The private PEM reloads to the same key. */
    char *pem = NULL;
    assert_int_equal(signkey_private_pem(key, &pem, NULL), ERR_OK);
    signkey *again = NULL;
    assert_int_equal(signkey_parse_private(pem, strlen(pem), "pem", &again, NULL), ERR_OK);
    assert_string_equal(signkey_id(again), signkey_id(key));
    signkey_pem_free(pem);

    char *env = signed_envelope(NULL, NULL, 3, &key, 1);
    manifest m;
    manifest_verdict v;
    error_info err;
    assert_int_equal(manifest_open(env, strlen(env), &pub, 1, &m, &v, &err), ERR_OK);
    assert_int_equal(m.seq, 3);
    assert_int_equal(m.issued_at, NOW);
    assert_int_equal(m.expires_at, NOW + 14 * DAY);
    assert_string_equal(m.channel, "stable");
    assert_string_equal(m.path, "installers/aaaa.exe");
    assert_true(m.rollout_percent == 12.5);
    assert_string_equal(m.rollout_salt, "00ff");
    assert_true(m.signed_installer);
    assert_false(m.allow_downgrade);
    manifest_free(&m);
    free(env);
    signkey_free(again);
    signkey_free(pub);
    signkey_free(key);
}

/* Rotation: several pinned keys; a manifest may carry several signatures. */
static void test_rotation(void **unused)
{
    (void)unused;
    signkey *old_key = NULL, *new_key = NULL, *stranger = NULL;
    assert_int_equal(signkey_generate(&old_key, NULL), ERR_OK);
    assert_int_equal(signkey_generate(&new_key, NULL), ERR_OK);
    assert_int_equal(signkey_generate(&stranger, NULL), ERR_OK);
    signkey *old_pub = public_of(old_key), *new_pub = public_of(new_key), *stranger_pub = public_of(stranger);

    signkey *both_signers[] = {old_key, new_key};
    char *both = signed_envelope(NULL, NULL, 1, both_signers, 2);
    char *new_only = signed_envelope(NULL, NULL, 1, &new_key, 1);
    char *old_only = signed_envelope(NULL, NULL, 1, &old_key, 1);
    signkey *pinned_both[] = {old_pub, new_pub};
    signkey *pinned_stranger_first[] = {stranger_pub, new_pub};
    error_code code;

    /* During the rotation: manifests carry both signatures; old and new endpoints accept. */
    assert_int_equal(open_verdict(both, &old_pub, 1, &code), MANIFEST_OK);
    assert_int_equal(open_verdict(both, &new_pub, 1, &code), MANIFEST_OK);
    /* Endpoints that pin both accept either signer. */
    assert_int_equal(open_verdict(new_only, pinned_both, 2, &code), MANIFEST_OK);
    assert_int_equal(open_verdict(old_only, pinned_both, 2, &code), MANIFEST_OK);
    assert_int_equal(open_verdict(new_only, pinned_stranger_first, 2, &code), MANIFEST_OK);
    /* After it: the old key is dropped from the fleet; its manifests are unknown. */
    assert_int_equal(open_verdict(old_only, &new_pub, 1, &code), MANIFEST_UNKNOWN_KEY);
    assert_int_equal(code, ERR_REJECTED);
    assert_int_equal(open_verdict(new_only, &stranger_pub, 1, &code), MANIFEST_UNKNOWN_KEY);

    /* A signature under a pinned key id that does not verify does not spoil a good one. */
    cJSON *o = cJSON_Parse(new_only);
    cJSON *sigs = cJSON_GetObjectItem(o, "signatures");
    cJSON *forged = cJSON_CreateObject();
    cJSON_AddStringToObject(forged, "keyid", signkey_id(old_pub));
    cJSON_AddStringToObject(forged, "sig", "MEUCIQDmZm9yZ2Vk");
    cJSON_InsertItemInArray(sigs, 0, forged);
    char *mixed = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    assert_int_equal(open_verdict(mixed, pinned_both, 2, &code), MANIFEST_OK);
    assert_int_equal(open_verdict(mixed, &old_pub, 1, &code), MANIFEST_BAD_SIGNATURE);
    assert_int_equal(code, ERR_REJECTED);

    free(mixed);
    free(both);
    free(new_only);
    free(old_only);
    signkey_free(old_pub);
    signkey_free(new_pub);
    signkey_free(stranger_pub);
    signkey_free(old_key);
    signkey_free(new_key);
    signkey_free(stranger);
}

/* Envelope refusals: each its own verdict; a body that is no envelope at
 * all (an error page, empty, truncated) is 75, a signature problem 4. */
static void test_envelope_refusals(void **unused)
{
    (void)unused;
    signkey *key = NULL;
    assert_int_equal(signkey_generate(&key, NULL), ERR_OK);
    signkey *pub = public_of(key);
    error_code code;

    assert_int_equal(open_verdict("<html><body>Welcome to nginx!</body></html>", &pub, 1, &code), MANIFEST_MALFORMED);
    assert_int_equal(code, ERR_TEMPORARY);
    assert_int_equal(open_verdict("", &pub, 1, &code), MANIFEST_MALFORMED);
    assert_int_equal(code, ERR_TEMPORARY);
    assert_int_equal(open_verdict("{\"payload\": \"e30=\", \"signa", &pub, 1, &code), MANIFEST_MALFORMED);
    assert_int_equal(code, ERR_TEMPORARY);
    assert_int_equal(open_verdict("{\"payload\": 5, \"signatures\": []}", &pub, 1, &code), MANIFEST_MALFORMED);
    assert_int_equal(open_verdict("{\"payload\": \"e30=\"}", &pub, 1, &code), MANIFEST_MALFORMED);
    assert_int_equal(open_verdict("{\"payload\": \"%%%\", \"signatures\": []}", &pub, 1, &code), MANIFEST_MALFORMED);
    assert_int_equal(open_verdict("{\"payload\": \"e30=\", \"signatures\": []}", &pub, 1, &code), MANIFEST_UNKNOWN_KEY);

    /* Over 64 KiB: refused before it is parsed. */
    size_t big_len = MANIFEST_MAX_BYTES + 1;
    char *big = malloc(big_len + 1);
    memset(big, ' ', big_len);
    big[big_len] = '\0';
    manifest m;
    manifest_verdict v;
    error_info err;
    assert_int_equal(manifest_open(big, big_len, &pub, 1, &m, &v, &err), ERR_REJECTED);
    assert_int_equal(v, MANIFEST_TOO_LARGE);
    free(big);

    /* Payload edited after signing: the signature no longer covers it. */
    char *env = signed_envelope(NULL, NULL, 5, &key, 1);
    cJSON *o = cJSON_Parse(env);
    const char *b64 = cJSON_GetStringValue(cJSON_GetObjectItem(o, "payload"));
    manifest sm;
    sample(&sm, 5);
    sm.version = "99.0";
    char *edited = NULL;
    assert_int_equal(manifest_payload_json(&sm, &edited, NULL), ERR_OK);
    assert_non_null(b64);
    /* re-sign with a throwaway key, then put back only the original signature */
    signkey *other = NULL;
    assert_int_equal(signkey_generate(&other, NULL), ERR_OK);
    char *other_env = NULL;
    size_t other_len;
    assert_int_equal(manifest_sign(edited, strlen(edited), &other, 1, &other_env, &other_len, NULL), ERR_OK);
    cJSON *oe = cJSON_Parse(other_env);
    cJSON_ReplaceItemInObject(oe, "signatures", cJSON_Duplicate(cJSON_GetObjectItem(o, "signatures"), 1));
    char *tampered = cJSON_PrintUnformatted(oe);
    assert_int_equal(open_verdict(tampered, &pub, 1, &code), MANIFEST_BAD_SIGNATURE);
    assert_int_equal(code, ERR_REJECTED);
    cJSON_Delete(oe);
    cJSON_Delete(o);
    free(tampered);
    free(other_env);
    free(edited);
    free(env);
    signkey_free(other);
    signkey_free(pub);
    signkey_free(key);
}

/* Payload refusals, after a good signature: unknown schema, missing or bad fields. */
static void test_payload_refusals(void **unused)
{
    (void)unused;
    signkey *key = NULL;
    assert_int_equal(signkey_generate(&key, NULL), ERR_OK);
    signkey *pub = public_of(key);
    static const struct {
        const char *field;
        const char *raw; /* NULL: removed */
        manifest_verdict verdict;
    } cases[] = {
        {"schema", "2", MANIFEST_UNKNOWN_SCHEMA},
        {"schema", "\"1\"", MANIFEST_BAD_PAYLOAD},
        {"schema", "1.5", MANIFEST_OK}, /* a minor revision of major schema 1 */
        {"seq", NULL, MANIFEST_BAD_PAYLOAD},
        {"seq", "-1", MANIFEST_BAD_PAYLOAD},
        {"seq", "1.5", MANIFEST_BAD_PAYLOAD},
        {"seq", "0", MANIFEST_BAD_PAYLOAD},
        {"seq", "\"12\"", MANIFEST_BAD_PAYLOAD},
        {"seq", "9007199254740991", MANIFEST_OK},          /* 2^53 - 1, the highest */
        {"seq", "9007199254740992", MANIFEST_BAD_PAYLOAD}, /* 2^53 */
        {"seq", "9007199254740993", MANIFEST_BAD_PAYLOAD}, /* reads as 2^53 in a double */
        {"seq", "1e300", MANIFEST_BAD_PAYLOAD},
        {"expires_at", "\"tomorrow\"", MANIFEST_BAD_PAYLOAD},
        {"channel", "\"\"", MANIFEST_BAD_PAYLOAD},
        {"length", "0", MANIFEST_BAD_PAYLOAD},
        {"sha256", "\"abc\"", MANIFEST_BAD_PAYLOAD},
        {"path", "\"../secret.exe\"", MANIFEST_BAD_PAYLOAD},
        {"path", "\"/etc/passwd\"", MANIFEST_BAD_PAYLOAD},
        {"path", "\"https://evil.example/x.exe\"", MANIFEST_BAD_PAYLOAD},
        {"path", "\"installers/a/../../b.exe\"", MANIFEST_BAD_PAYLOAD},
        {"signer", "null", MANIFEST_OK},
        {"signer", "{\"subject\": \"x\"}", MANIFEST_BAD_PAYLOAD},
        {"rollout", "{\"percent\": 101, \"salt\": \"00\"}", MANIFEST_BAD_PAYLOAD},
        {"rollout", "{\"percent\": 50, \"salt\": \"0\"}", MANIFEST_BAD_PAYLOAD},
        {"allow_downgrade", "\"yes\"", MANIFEST_BAD_PAYLOAD},
        {"allow_downgrade", NULL, MANIFEST_OK},
        {"unknown_future_field", "[1, 2]", MANIFEST_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *env = signed_envelope(cases[i].field, cases[i].raw, 1, &key, 1);
        error_code code;
        manifest_verdict v = open_verdict(env, &pub, 1, &code);
        if (v != cases[i].verdict)
            fail_msg("%s=%s: verdict %s, want %s", cases[i].field, cases[i].raw ? cases[i].raw : "(removed)",
                     manifest_verdict_name(v), manifest_verdict_name(cases[i].verdict));
        assert_int_equal(code, cases[i].verdict == MANIFEST_OK ? ERR_OK : ERR_REJECTED);
        free(env);
    }
    signkey_free(pub);
    signkey_free(key);
}

/* The rules with an injected clock and the highest seq seen. */
static void test_rules(void **unused)
{
    (void)unused;
    manifest m;
    sample(&m, 10);
    memset(m.payload_sha256, 'c', 64);
    char same[65], other[65];
    memset(same, 'c', 64);
    same[64] = '\0';
    memset(other, 'd', 64);
    other[64] = '\0';
    static const struct {
        int64_t now;
        const char *channel, *platform;
        int64_t highest;
        int which_sha; /* 0: none, 1: same bytes, 2: other bytes */
        manifest_verdict verdict;
        error_code code;
        const char *says;
    } cases[] = {
        {NOW, "stable", "windows", -1, 0, MANIFEST_OK, ERR_OK, NULL},
        {NOW + 14 * DAY - 1, "stable", "windows", -1, 0, MANIFEST_OK, ERR_OK, NULL},
        {NOW + 14 * DAY, "stable", "windows", -1, 0, MANIFEST_EXPIRED, ERR_TEMPORARY, "re-run publish"},
        {NOW + 30 * DAY, "stable", "windows", -1, 0, MANIFEST_EXPIRED, ERR_TEMPORARY, "expired at"},
        {NOW - 300, "stable", "windows", -1, 0, MANIFEST_OK, ERR_OK, NULL}, /* 5 minutes of skew allowed */
        {NOW - 301, "stable", "windows", -1, 0, MANIFEST_FUTURE, ERR_TEMPORARY, "in the future"},
        {NOW, "stable", "windows", 9, 0, MANIFEST_OK, ERR_OK, NULL},
        {NOW, "stable", "windows", 10, 1, MANIFEST_OK, ERR_OK, NULL}, /* the same manifest again */
        {NOW, "stable", "windows", 10, 0, MANIFEST_OK, ERR_OK, NULL},
        {NOW, "stable", "windows", 11, 0, MANIFEST_OLD_SEQ, ERR_TEMPORARY, "mirror serving an old copy"},
        {NOW, "stable", "windows", 10, 2, MANIFEST_SEQ_CONFLICT, ERR_REJECTED, "other contents"},
        {NOW, "beta", "windows", -1, 0, MANIFEST_WRONG_CHANNEL, ERR_REJECTED, "mirror.channel"},
        {NOW, "stable", "linux", -1, 0, MANIFEST_WRONG_PLATFORM, ERR_REJECTED, "installer.platform"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        manifest_expect e = {
            .now_s = cases[i].now,
            .channel = cases[i].channel,
            .platform = cases[i].platform,
            .highest_seq = cases[i].highest,
            .highest_payload_sha256 = cases[i].which_sha == 1   ? same
                                      : cases[i].which_sha == 2 ? other
                                                                : NULL,
        };
        manifest_verdict v;
        error_info err;
        error_clear(&err);
        error_code code = manifest_check(&m, &e, &v, &err);
        if (v != cases[i].verdict || code != cases[i].code)
            fail_msg("case %zu: verdict %s code %d, want %s %d (%s)", i, manifest_verdict_name(v), code,
                     manifest_verdict_name(cases[i].verdict), cases[i].code, err.message);
        if (cases[i].says && !strstr(err.message, cases[i].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.message, cases[i].says);
    }
    /* Exit codes as section 8 gives them. */
    assert_int_equal(error_exit_code(manifest_verdict_code(MANIFEST_EXPIRED)), 75);
    assert_int_equal(error_exit_code(manifest_verdict_code(MANIFEST_OLD_SEQ)), 75);
    assert_int_equal(error_exit_code(manifest_verdict_code(MANIFEST_SEQ_CONFLICT)), 4);
    assert_int_equal(error_exit_code(manifest_verdict_code(MANIFEST_UNKNOWN_KEY)), 4);
}

static void test_bad_keys(void **unused)
{
    (void)unused;
    signkey *key = NULL;
    error_info err;
    assert_int_equal(signkey_parse_public("/nonexistent/key.pem", &key, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "/nonexistent/key.pem"));
    assert_int_equal(signkey_parse_public("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", &key, &err),
                     ERR_CONFIG);
    assert_int_equal(signkey_parse_private("junk", 4, "junk key", &key, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "junk key"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openssl_interop),  cmocka_unit_test(test_roundtrip_and_determinism),
        cmocka_unit_test(test_rotation),         cmocka_unit_test(test_envelope_refusals),
        cmocka_unit_test(test_payload_refusals), cmocka_unit_test(test_rules),
        cmocka_unit_test(test_bad_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
