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

typedef struct fixture {
    char *dir; /* scratch: state_dir is dir/state */
    config cfg;
    state *s;
} fixture;

static int setup(void **ctx)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = support_tempdir("staging");
    error_info err;
    assert_int_equal(config_init_defaults(&f->cfg, &err), ERR_OK);
    free(f->cfg.state_dir);
    f->cfg.state_dir = platform_path_join(f->dir, "state");
    free(f->cfg.installer.verify.trusted_ca_file);
    f->cfg.installer.verify.trusted_ca_file = NULL;
    f->cfg.installer.verify.require_signature = false;
    assert_int_equal(platform_mkdirs(f->cfg.state_dir, &err), ERR_OK);
    assert_int_equal(state_load(f->cfg.state_dir, &f->s, &err), ERR_OK);
    log_set_level(-1);
    *ctx = f;
    return 0;
}

static int teardown(void **ctx)
{
    fixture *f = *ctx;
    state_free(f->s);
    ERROR_IGNORE(platform_remove_tree(f->dir, NULL));
    config_free(&f->cfg);
    free(f->dir);
    free(f);
    return 0;
}

/* A minimal PE (MZ + PE\0\0) whose tail byte makes each one distinct. */
static char *write_pe(fixture *f, const char *name, unsigned char tag)
{
    unsigned char buf[512] = {0};
    buf[0] = 'M';
    buf[1] = 'Z';
    buf[0x3C] = 0x80;
    memcpy(buf + 0x80, "PE\0\0", 4);
    buf[511] = tag;
    char *path = platform_path_join(f->dir, name);
    assert_int_equal(platform_write_atomic(path, buf, sizeof buf, NULL), ERR_OK);
    return path;
}

static error_code stage(fixture *f, const char *path, const char *version, bool downgrade, bool force, intake_result *r,
                        error_info *err)
{
    const char *name = strrchr(path, platform_path_separator()) + 1;
    intake_candidate c = {.path = path,
                          .version = version,
                          .file_name = name,
                          .source_url = path,
                          .expected_length = -1,
                          .allow_downgrade = downgrade,
                          .force = force};
    error_code rc = intake_stage(&f->cfg, f->s, &c, r, err);
    return rc;
}

static void stage_ok(fixture *f, const char *path, const char *version)
{
    intake_result r;
    error_info err;
    error_code rc = stage(f, path, version, false, false, &r, &err);
    if (rc != ERR_OK)
        fail_msg("staging %s failed: %s", version, err.message);
    free(r.path);
}

static char *current(fixture *f)
{
    char *v = NULL;
    assert_int_equal(staging_current_version(&f->cfg, &v, NULL), ERR_OK);
    return v;
}

static bool staged_dir_exists(fixture *f, const char *version)
{
    char path[600];
    snprintf(path, sizeof path, "%s/staging/%s", f->cfg.state_dir, version);
    return platform_path_stat(path, NULL) == PLATFORM_PATH_DIR;
}

static size_t staging_entries(fixture *f)
{
    char path[600];
    snprintf(path, sizeof path, "%s/staging", f->cfg.state_dir);
    char **names;
    size_t count = 0;
    if (platform_list_dir(path, &names, &count, NULL) != ERR_OK)
        return 0;
    platform_free_names(names, count);
    return count;
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
        stage_ok(f, p, versions[i]);
        free(p);
    }
    assert_false(staged_dir_exists(f, "1.0"));
    assert_false(staged_dir_exists(f, "2.0"));
    assert_true(staged_dir_exists(f, "3.0")); /* what rollback would use */
    assert_true(staged_dir_exists(f, "4.0"));

    f->cfg.installer.keep_versions = 3;
    char *p = write_pe(f, "s5.exe", 5);
    stage_ok(f, p, "5.0");
    free(p);
    assert_true(staged_dir_exists(f, "3.0") && staged_dir_exists(f, "4.0") && staged_dir_exists(f, "5.0"));
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
    stage_ok(f, p, "1.0");
    free(p);
    assert_int_equal(staging_entries(f), 2); /* 1.0 and current */
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
    stage_ok(f, p, "1.0");
    assert_int_equal(staging_rollback(&f->cfg, f->s, &from, &to, &err), ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "no earlier staged version"));
    char *q = write_pe(f, "b.exe", 2);
    stage_ok(f, q, "2.0");
    assert_int_equal(staging_rollback(&f->cfg, f->s, &from, &to, &err), ERR_OK);
    assert_string_equal(from, "2.0");
    assert_string_equal(to, "1.0");
    free(from);
    free(to);
    char *v = current(f);
    assert_string_equal(v, "1.0");
    free(v);
    /* A tampered rollback target is not made current. */
    stage_ok(f, q, "2.0"); /* already staged: current stays 1.0 */
    char *third = write_pe(f, "c.exe", 3);
    stage_ok(f, third, "3.0");
    char path[600];
    snprintf(path, sizeof path, "%s/staging/2.0/installer.exe", f->cfg.state_dir);
    FILE *t = fopen(path, "r+b");
    fputc('X', t);
    fclose(t);
    assert_int_equal(staging_rollback(&f->cfg, f->s, &from, &to, &err), ERR_REJECTED);
    v = current(f);
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
    stage_ok(f, p, "2.0");
    assert_int_equal(staging_status_section(&f->cfg, f->s, &out, &err), ERR_OK);
    cJSON *staged = cJSON_GetObjectItem(out, "staged");
    assert_string_equal(cJSON_GetObjectItem(staged, "version")->valuestring, "2.0");
    assert_string_equal(cJSON_GetObjectItem(staged, "signature")->valuestring, "skipped");
    assert_string_equal(cJSON_GetObjectItem(out, "installed_version")->valuestring, "1.0");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(out, "deployed")));
    cJSON_Delete(out);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prune_keeps_rollback_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_leftovers_cleaned, setup, teardown),
        cmocka_unit_test(test_file_names),
        cmocka_unit_test_setup_teardown(test_rollback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_section, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
