/* test_intake.c — taking in a candidate: staged and made current, downgrade
 * refusal, already staged, rejected candidates leave staging/ untouched,
 * the name on disk chosen by outpost, unsafe names, archives holding an
 * installer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/config.h"
#include "core/log.h"
#include "platform/platform.h"
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

static void test_stage_and_switch(void **ctx)
{
    fixture *f = *ctx;
    char *one = write_pe(f, "Sensor.exe", 1);
    intake_result r;
    error_info err;
    assert_int_equal(support_stage_as(f, one, "26.01.03.24329-0de7ab+", false, false, &r, &err), ERR_OK);
    assert_false(r.already_staged);
    assert_string_equal(r.file_name, "Sensor.exe");
    assert_string_equal(r.signature, "skipped");
    assert_int_equal(r.size, 512);
    assert_int_equal(platform_path_stat(r.path, NULL), PLATFORM_PATH_FILE);
    free(r.path);
    char *v = support_staged_current(f);
    assert_string_equal(v, "26.01.03.24329-0de7ab+");
    free(v);
    assert_true(staging_has_verified(&f->cfg, "26.01.03.24329-0de7ab+"));
    /* The source was copied, not moved. */
    assert_int_equal(platform_path_stat(one, NULL), PLATFORM_PATH_FILE);

    char *two = write_pe(f, "Sensor2.exe", 2);
    support_stage(f, two, "26.02.0");
    v = support_staged_current(f);
    assert_string_equal(v, "26.02.0");
    free(v);
    /* Only version directories and `current` remain: no temporary directory. */
    assert_int_equal(support_staging_entries(f), 3);
    free(one);
    free(two);
}

static void test_downgrade(void **ctx)
{
    fixture *f = *ctx;
    f->cfg.installer.installed_version = text_dup("2.0.0");
    char *p = write_pe(f, "old.exe", 1);
    intake_result r;
    error_info err;
    assert_int_equal(support_stage_as(f, p, "1.9.9", false, false, &r, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "--allow-downgrade"));
    assert_int_equal(support_staging_entries(f), 0);
    assert_int_equal(support_stage_as(f, p, "1.9.9", true, false, &r, &err), ERR_OK);
    free(r.path);
    /* The installed version with a build suffix is the same release, not a downgrade. */
    char *q = write_pe(f, "same.exe", 2);
    assert_int_equal(support_stage_as(f, q, "2.0.0-abcdef", false, false, &r, &err), ERR_OK);
    free(r.path);
    free(p);
    free(q);
}

static void test_already_staged(void **ctx)
{
    fixture *f = *ctx;
    char *p = write_pe(f, "a.exe", 1);
    support_stage(f, p, "1.0");
    char *q = write_pe(f, "b.exe", 2);
    support_stage(f, q, "2.0");
    intake_result r;
    error_info err;
    assert_int_equal(support_stage_as(f, p, "1.0", false, false, &r, &err), ERR_OK);
    assert_true(r.already_staged);
    assert_string_equal(r.file_name, "a.exe");
    free(r.path);
    char *v = support_staged_current(f);
    assert_string_equal(v, "2.0"); /* no change */
    free(v);
    assert_int_equal(support_stage_as(f, p, "1.0", false, true, &r, &err), ERR_OK);
    assert_false(r.already_staged);
    free(r.path);
    v = support_staged_current(f);
    assert_string_equal(v, "1.0");
    free(v);
    free(p);
    free(q);
}

static void test_rejections_leave_staging_alone(void **ctx)
{
    fixture *f = *ctx;
    char *p = write_pe(f, "a.exe", 1);
    support_stage(f, p, "1.0");
    char *html = platform_path_join(f->dir, "page.exe");
    const char *page = "<html><body>502 Bad Gateway</body></html>";
    assert_int_equal(platform_write_atomic(html, page, strlen(page), NULL), ERR_OK);
    intake_result r;
    error_info err;
    assert_int_equal(support_stage_as(f, html, "2.0", false, false, &r, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "not a Windows installer (PE or MSI)"));
    assert_int_equal(support_stage_as(f, p, "../2.0", false, false, &r, &err), ERR_REJECTED);
    assert_int_equal(support_stage_as(f, p, "", false, false, &r, &err), ERR_REJECTED);

    f->cfg.installer.verify.expected_sha256 =
        text_dup("00000000000000000000000000000000000000000000000000000000000000ff");
    char *q = write_pe(f, "b.exe", 2);
    assert_int_equal(support_stage_as(f, q, "2.0", false, false, &r, &err), ERR_REJECTED);
    intake_candidate c = {.path = q, .version = "2.0", .file_name = "b.exe", .expected_length = 100};
    free(f->cfg.installer.verify.expected_sha256);
    f->cfg.installer.verify.expected_sha256 = NULL;
    assert_int_equal(intake_stage(&f->cfg, f->s, &c, &r, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "length"));

    assert_int_equal(support_staging_entries(f), 2);
    char *v = support_staged_current(f);
    assert_string_equal(v, "1.0");
    free(v);
    /* No version given and not a bundle: a usage error. */
    assert_int_equal(support_stage_as(f, q, NULL, false, false, &r, &err), ERR_USAGE);
    free(p);
    free(q);
    free(html);
}

/* The server's name is recorded; the file on disk is named by outpost, so
 * "setup&x.exe" never reaches a `cmd /c` wrapper and "Manifest.json" never
 * meets manifest.json on a case-insensitive file system. */
static void test_staged_file_gets_outposts_name(void **ctx)
{
    fixture *f = *ctx;
    char *p = write_pe(f, "a.exe", 1);
    intake_candidate c = {.path = p, .version = "1.0", .file_name = "setup&x.exe", .expected_length = -1};
    intake_result r;
    error_info err;
    assert_int_equal(intake_stage(&f->cfg, f->s, &c, &r, &err), ERR_OK);
    assert_string_equal(r.file_name, "setup&x.exe");
    char *dir = platform_path_join(f->cfg.state_dir, "staging");
    char *vdir = platform_path_join(dir, "1.0");
    char *want = platform_path_join(vdir, "installer.exe");
    assert_string_equal(r.path, want);
    assert_int_equal(platform_path_stat(want, NULL), PLATFORM_PATH_FILE);
    free(want);
    want = platform_path_join(vdir, "setup&x.exe");
    assert_int_equal(platform_path_stat(want, NULL), PLATFORM_PATH_NONE);
    free(want);
    free(r.path);

    staging_manifest m;
    char *installer = NULL;
    assert_int_equal(staging_current(&f->cfg, NULL, &m, &installer, &err), ERR_OK);
    assert_string_equal(m.file_name, "setup&x.exe");
    assert_string_equal(m.staged_file, "installer.exe");
    assert_non_null(strstr(installer, "installer.exe"));
    staging_manifest_free(&m);
    free(installer);
    assert_true(staging_has_verified(&f->cfg, "1.0"));

    /* A manifest naming another file on disk is damaged, not followed. */
    want = platform_path_join(vdir, "manifest.json");
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(platform_read_file(want, 1 << 20, &text, &len, &err), ERR_OK);
    char *at = strstr(text, "\"installer.exe\"");
    assert_non_null(at);
    memcpy(at + 1, "evilpath", 8);
    assert_int_equal(platform_write_atomic(want, text, len, &err), ERR_OK);
    free(text);
    assert_false(staging_has_verified(&f->cfg, "1.0"));
    free(want);
    free(vdir);
    free(dir);
    free(p);
}

static void test_unsafe_candidate_name_rejected(void **ctx)
{
    fixture *f = *ctx;
    char *p = write_pe(f, "a.exe", 1);
    intake_candidate c = {.path = p, .version = "1.0", .file_name = "..\\evil.exe", .expected_length = -1};
    intake_result r;
    error_info err;
    assert_int_equal(intake_stage(&f->cfg, f->s, &c, &r, &err), ERR_REJECTED);
    c.file_name = NULL; /* a name made from the version */
    assert_int_equal(intake_stage(&f->cfg, f->s, &c, &r, &err), ERR_OK);
    assert_string_equal(r.file_name, "installer-1.0.exe");
    free(r.path);
    free(p);
}

static void make_zip(const char *path, const char *const *names, const char *const *files, size_t count)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_zip(a);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < count; i++) {
        char *data;
        size_t len;
        assert_int_equal(platform_read_file(files[i], 1 << 20, &data, &len, NULL), ERR_OK);
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, names[i]);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, (la_int64_t)len);
        archive_write_header(a, e);
        archive_write_data(a, data, len);
        archive_entry_free(e);
        free(data);
    }
    archive_write_close(a);
    archive_write_free(a);
}

static void test_archive_holding_installer(void **ctx)
{
    fixture *f = *ctx;
    char *pe = write_pe(f, "inner.exe", 7);
    char *readme = platform_path_join(f->dir, "readme.txt");
    assert_int_equal(platform_write_atomic(readme, "read me", 7, NULL), ERR_OK);
    char *zip = platform_path_join(f->dir, "pkg.zip");
    const char *names[] = {"docs/readme.txt", "bin/SensorSetup.exe"};
    const char *files[] = {readme, pe};
    make_zip(zip, names, files, 2);
    intake_result r;
    error_info err;
    assert_int_equal(support_stage_as(f, zip, "3.1", false, false, &r, &err), ERR_OK);
    assert_string_equal(r.file_name, "SensorSetup.exe");
    assert_int_equal(r.size, 512);
    free(r.path);

    /* Two installers: which one is meant is not ours to guess. */
    const char *two[] = {"a.exe", "b.exe"};
    const char *two_files[] = {pe, pe};
    make_zip(zip, two, two_files, 2);
    assert_int_equal(support_stage_as(f, zip, "3.2", false, false, &r, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "exactly one"));
    const char *none[] = {"readme.txt"};
    make_zip(zip, none, files, 1);
    assert_int_equal(support_stage_as(f, zip, "3.2", false, false, &r, &err), ERR_REJECTED);
    assert_false(support_staged_dir_exists(f, "3.2"));
    free(pe);
    free(readme);
    free(zip);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SUPPORT_STAGING_TEST(test_stage_and_switch),
        SUPPORT_STAGING_TEST(test_downgrade),
        SUPPORT_STAGING_TEST(test_already_staged),
        SUPPORT_STAGING_TEST(test_rejections_leave_staging_alone),
        SUPPORT_STAGING_TEST(test_unsafe_candidate_name_rejected),
        SUPPORT_STAGING_TEST(test_archive_holding_installer),
        SUPPORT_STAGING_TEST(test_staged_file_gets_outposts_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
