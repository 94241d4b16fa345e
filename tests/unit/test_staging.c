/* test_staging.c — what is staged: prune beyond keep_versions (never the
 * rollback target), leftovers of a crashed staging cleaned, safe file
 * names, rollback, and the status section. Candidates are staged through
 * intake_stage, the one way in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/config.h"
#include "core/log.h"
#include "platform/platform.h"
#include "installer/installer_state.h"
#include "installer/intake.h"
#include "installer/staging.h"
#include "core/state.h"
#include "base/text.h"

#include "support.h"
#include "support_staging.h"

/* The staging fixture of support_staging.h: f->dir, f->cfg, f->s. */
typedef support_staging fixture;

/* A minimal PE whose content follows tag, so each one is distinct. */
static char *write_pe(fixture *f, const char *name, unsigned char tag)
{
    return support_write_pe(f->dir, name, 512, tag);
}

static void test_prune_keeps_rollback_target(void **ctx)
{
    fixture *f = *ctx;
    f->cfg.installer.keep_versions = 1;
    const char *versions[] = {"1.0", "2.0", "3.0", "4.0"};
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "s%d.exe", i);
        char *p = write_pe(f, name, (unsigned char)i);
        support_stage(f, p, versions[i]);
        free(p);
    }
    assert_false(support_staged_dir_exists(f, "1.0"));
    assert_false(support_staged_dir_exists(f, "2.0"));
    assert_true(support_staged_dir_exists(f, "3.0")); /* what rollback would use */
    assert_true(support_staged_dir_exists(f, "4.0"));

    f->cfg.installer.keep_versions = 3;
    char *p = write_pe(f, "s5.exe", 5);
    support_stage(f, p, "5.0");
    free(p);
    assert_true(support_staged_dir_exists(f, "3.0") && support_staged_dir_exists(f, "4.0") &&
                support_staged_dir_exists(f, "5.0"));
}

static void test_crash_leftovers_cleaned(void **ctx)
{
    fixture *f = *ctx;
    char path[600];
    snprintf(path, sizeof path, "%s/staging/.tmp-deadbeef/extracted", f->cfg.state_dir);
    assert_int_equal(platform_mkdirs(path, NULL), ERR_OK);
    snprintf(path, sizeof path, "%s/staging/.old-cafe", f->cfg.state_dir);
    assert_int_equal(platform_mkdirs(path, NULL), ERR_OK);
    char *p = write_pe(f, "a.exe", 1);
    support_stage(f, p, "1.0");
    free(p);
    assert_int_equal(support_staging_entries(f), 2); /* 1.0 and current */
}

static void test_file_names(void **unused)
{
    (void)unused;
    assert_true(staging_file_name_is_safe("Sensor_26.01.msi"));
    assert_true(staging_file_name_is_safe("console.exe"));
    assert_true(staging_file_name_is_safe("COM10.exe"));
    const char *bad[] = {"",
                         ".",
                         "..",
                         "a/b.exe",
                         "a\\b.exe",
                         "c:x.exe",
                         "NUL",
                         "nul.exe",
                         "COM1.msi",
                         "lpt9",
                         "con.tar.gz",
                         "x.exe.",
                         "x.exe ",
                         ".hidden",
                         "manifest.json",
                         "a\x01.exe",
                         "a|b",
                         "a?b",
                         "a*b",
                         "a<b",
                         "a\"b",
                         "CONIN$",
                         "conout$.exe",
                         "CON .exe",
                         "CON..exe",
                         "nul  ",
                         "COM0.exe",
                         "COM\xc2\xb9.exe",
                         "lpt\xc2\xb3",
                         "Manifest.json",
                         "MANIFEST.JSON"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (staging_file_name_is_safe(bad[i]))
            fail_msg("\"%s\" accepted", bad[i]);
}

static void test_rollback(void **ctx)
{
    fixture *f = *ctx;
    char *from = NULL, *to = NULL;
    error_info err;
    assert_int_equal(staging_rollback(&f->cfg, f->s, &from, &to, &err), ERR_NOT_FOUND);
    char *p = write_pe(f, "a.exe", 1);
    support_stage(f, p, "1.0");
    assert_int_equal(staging_rollback(&f->cfg, f->s, &from, &to, &err), ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "no earlier staged version"));
    char *q = write_pe(f, "b.exe", 2);
    support_stage(f, q, "2.0");
    assert_int_equal(staging_rollback(&f->cfg, f->s, &from, &to, &err), ERR_OK);
    assert_string_equal(from, "2.0");
    assert_string_equal(to, "1.0");
    free(from);
    free(to);
    char *v = support_staged_current(f);
    assert_string_equal(v, "1.0");
    free(v);
    /* A tampered rollback target is not made current. */
    support_stage(f, q, "2.0"); /* already staged: current stays 1.0 */
    char *third = write_pe(f, "c.exe", 3);
    support_stage(f, third, "3.0");
    char path[600];
    snprintf(path, sizeof path, "%s/staging/2.0/installer.exe", f->cfg.state_dir);
    FILE *t = fopen(path, "r+b");
    fputc('X', t);
    fclose(t);
    assert_int_equal(staging_rollback(&f->cfg, f->s, &from, &to, &err), ERR_REJECTED);
    v = support_staged_current(f);
    assert_string_equal(v, "3.0");
    free(v);
    free(p);
    free(q);
    free(third);
}

static void test_status_section(void **ctx)
{
    fixture *f = *ctx;
    assert_int_equal(installer_state_set_latest(f->s, "2.0", "2026-11-21T10:00:00Z", true, NULL), ERR_OK);
    f->cfg.installer.installed_version = text_dup("1.0");
    cJSON *out = NULL;
    error_info err;
    assert_int_equal(staging_status_section(&f->cfg, f->s, &out, &err), ERR_OK);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(out, "staged")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(out, "update_available")));
    cJSON_Delete(out);
    char *p = write_pe(f, "a.exe", 1);
    support_stage(f, p, "2.0");
    assert_int_equal(staging_status_section(&f->cfg, f->s, &out, &err), ERR_OK);
    cJSON *staged = cJSON_GetObjectItem(out, "staged");
    assert_string_equal(cJSON_GetObjectItem(staged, "version")->valuestring, "2.0");
    assert_string_equal(cJSON_GetObjectItem(staged, "signature")->valuestring, "skipped");
    assert_string_equal(cJSON_GetObjectItem(out, "installed_version")->valuestring, "1.0");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(out, "deployed")));
    cJSON_Delete(out);
    free(p);
}

/* ---- The manifest's typed view ---------------------------------------------- */

static const char *good_manifest =
    "{\"manifest_version\": 1, \"version\": \"1.2.3\", \"file_name\": \"Setup.msi\", \"staged_file\": "
    "\"installer.msi\", \"size\": 512, \"sha256\": "
    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"source_url\": "
    "\"https://x.example/i\", \"etag\": null, \"staged_at\": \"2026-11-21T10:00:00Z\", \"verification\": "
    "{\"format\": \"msi\", \"signature\": {\"result\": \"valid\", \"signer\": \"CN=Example\", "
    "\"signer_cert_sha256\": \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"}, "
    "\"version_binding\": {\"status\": \"bound\"}}}";

static void test_manifest_view_reads_every_member(void **ctx)
{
    (void)ctx;
    cJSON *doc = cJSON_Parse(good_manifest);
    staging_manifest m;
    error_info err;
    assert_int_equal(staging_manifest_from_json(doc, &m, &err), ERR_OK);
    assert_string_equal(m.version, "1.2.3");
    assert_string_equal(m.file_name, "Setup.msi");
    assert_string_equal(m.staged_file, "installer.msi");
    assert_int_equal(m.size, 512);
    assert_string_equal(m.staged_at, "2026-11-21T10:00:00Z");
    assert_string_equal(m.source_url, "https://x.example/i");
    assert_null(m.etag);
    assert_string_equal(m.signature, "valid");
    assert_string_equal(m.signer, "CN=Example");
    assert_int_equal(strlen(m.signer_cert_sha256), 64);
    assert_string_equal(m.version_binding, "bound");
    assert_true(staging_manifest_is_msi(&m));

    cJSON *st = staging_manifest_to_status(&m, "/s/installer.msi");
    const char *names[] = {"version",   "path",      "file_name",       "sha256", "size",
                           "staged_at", "signature", "version_binding", "signer", "verified_signature"};
    int count = 0;
    for (const cJSON *it = st->child; it; it = it->next)
        count++;
    assert_int_equal(count, (int)(sizeof names / sizeof names[0]));
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_non_null(cJSON_GetObjectItemCaseSensitive(st, names[i]));
    assert_string_equal(cJSON_GetObjectItem(st, "path")->valuestring, "/s/installer.msi");
    /* the signature that carried the verdict: what the manifest says, nothing invented */
    const cJSON *by = cJSON_GetObjectItem(st, "verified_signature");
    assert_string_equal(cJSON_GetObjectItem(by, "signer_cert_sha256")->valuestring, m.signer_cert_sha256);
    assert_null(cJSON_GetObjectItem(by, "signature_index"));
    assert_null(cJSON_GetObjectItem(by, "timestamp"));
    cJSON_Delete(st);
    staging_manifest_free(&m);
    cJSON_Delete(doc);
}

/* A manifest written before staged_file, staged_at and version binding
 * existed still reads: the installer under file_name, nulls in the status. */
static void test_manifest_view_old_manifest(void **ctx)
{
    (void)ctx;
    cJSON *doc = cJSON_Parse("{\"version\": \"1.0\", \"file_name\": \"Setup.exe\", \"size\": 1, \"sha256\": "
                             "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}");
    staging_manifest m;
    assert_int_equal(staging_manifest_from_json(doc, &m, NULL), ERR_OK);
    assert_string_equal(m.staged_file, "Setup.exe");
    assert_string_equal(m.signature, "skipped");
    assert_null(m.signer);
    assert_false(staging_manifest_is_msi(&m));
    /* An archive holding an MSI: the installer's format is the inner one
     * (deploy then runs msiexec, not the file itself). */
    snprintf(m.format, sizeof m.format, "zip");
    snprintf(m.inner_format, sizeof m.inner_format, "msi");
    assert_true(staging_manifest_is_msi(&m));
    snprintf(m.inner_format, sizeof m.inner_format, "pe");
    assert_false(staging_manifest_is_msi(&m));
    cJSON *st = staging_manifest_to_status(&m, NULL);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(st, "staged_at")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(st, "version_binding")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(st, "signer")));
    cJSON_Delete(st);
    staging_manifest_free(&m);
    cJSON_Delete(doc);
}

/* Each damage gives ERR_IO and a message naming the member. */
static void test_manifest_view_names_what_is_wrong(void **ctx)
{
    (void)ctx;
    static const struct {
        const char *member;  /* replaced in good_manifest... */
        const char *value;   /* ...by this JSON value (NULL: removed) */
        const char *message; /* expected in the error */
    } damage[] = {
        {"version", NULL, "field `version` is missing"},
        {"version", "7", "field `version` is not a string"},
        {"version", "\"../x\"", "field `version` is not a valid version"},
        {"file_name", NULL, "field `file_name` is missing"},
        {"file_name", "\"a/b.exe\"", "field `file_name` is not a safe file name"},
        {"staged_file", "\"evil.dll\"", "field `staged_file` is not installer.exe or installer.msi"},
        {"size", NULL, "field `size` is missing"},
        {"size", "\"512\"", "field `size` is not a number"},
        {"size", "-1", "field `size` is not a byte count"},
        {"size", "1.5", "field `size` is not a byte count"},
        {"sha256", NULL, "field `sha256` is missing"},
        {"sha256", "\"ABC\"", "field `sha256` is not 64 lower-case hex digits"},
        {"source_url", "[]", "field `source_url` is not a string"},
        {"verification", "3", "field `verification` is not an object"},
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        cJSON *doc = cJSON_Parse(good_manifest);
        if (damage[i].value)
            cJSON_ReplaceItemInObject(doc, damage[i].member, cJSON_Parse(damage[i].value));
        else
            cJSON_DeleteItemFromObject(doc, damage[i].member);
        staging_manifest m;
        error_info err;
        error_clear(&err);
        error_code rc = staging_manifest_from_json(doc, &m, &err);
        if (rc != ERR_IO || !strstr(err.message, damage[i].message))
            fail_msg("%s=%s: rc %d, \"%s\"; expected \"%s\"", damage[i].member,
                     damage[i].value ? damage[i].value : "(removed)", rc, err.message, damage[i].message);
        cJSON_Delete(doc);
    }
    staging_manifest m;
    error_info err;
    cJSON *array = cJSON_CreateArray();
    assert_int_equal(staging_manifest_from_json(array, &m, &err), ERR_IO);
    assert_non_null(strstr(err.message, "not a JSON object"));
    cJSON_Delete(array);
}

/* A damaged manifest on disk: the staged version is not trusted, and the
 * error names the file and the member. */
static void test_damaged_manifest_on_disk(void **ctx)
{
    fixture *f = *ctx;
    char *a = write_pe(f, "a.exe", 1);
    support_stage(f, a, "1.0");
    char *staging = platform_path_join(f->cfg.state_dir, "staging");
    char *vdir = platform_path_join(staging, "1.0");
    char *path = platform_path_join(vdir, "manifest.json");
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(platform_read_file(path, 1 << 20, &text, &len, NULL), ERR_OK);
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    cJSON_ReplaceItemInObject(doc, "size", cJSON_CreateString("512"));
    text = cJSON_Print(doc);
    assert_int_equal(platform_write_atomic(path, text, strlen(text), NULL), ERR_OK);
    free(text);
    cJSON_Delete(doc);
    staging_manifest m;
    char *installer = NULL;
    error_info err;
    assert_int_equal(staging_current(&f->cfg, NULL, &m, &installer, &err), ERR_IO);
    assert_non_null(strstr(err.message, "manifest.json: field `size` is not a number"));
    assert_null(installer);
    assert_false(staging_has_verified(&f->cfg, "1.0"));
    free(path);
    free(vdir);
    free(staging);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SUPPORT_STAGING_TEST(test_prune_keeps_rollback_target),
        SUPPORT_STAGING_TEST(test_crash_leftovers_cleaned),
        cmocka_unit_test(test_file_names),
        SUPPORT_STAGING_TEST(test_rollback),
        SUPPORT_STAGING_TEST(test_status_section),
        cmocka_unit_test(test_manifest_view_reads_every_member),
        cmocka_unit_test(test_manifest_view_old_manifest),
        cmocka_unit_test(test_manifest_view_names_what_is_wrong),
        SUPPORT_STAGING_TEST(test_damaged_manifest_on_disk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
