/* test_bundle.c — bundle: two runs give identical bytes (zip and tar.gz),
 * whatever the umask and the files' modification times; the gzip header
 * carries no time; nothing staged is an error; a bundle stages again in a
 * fresh state directory with the version read from its manifest. */
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
#include <utime.h>

#include "installer/bundle.h"
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

static void stage_pe(fixture *f, const char *version)
{
    char *path = support_write_pe(f->dir, "SensorSetup.exe", 4096, 0);
    support_stage(f, path, version);
    free(path);
}

static char *slurp(const char *path, size_t *len)
{
    char *data = NULL;
    assert_int_equal(platform_read_file(path, 1 << 24, &data, len, NULL), ERR_OK);
    return data;
}

static void touch_staged(fixture *f, const char *version, time_t when)
{
    char path[600];
    struct utimbuf times = {when, when};
    snprintf(path, sizeof path, "%s/staging/%s/installer.exe", f->cfg.state_dir, version);
    assert_int_equal(utime(path, &times), 0);
    snprintf(path, sizeof path, "%s/staging/%s/manifest.json", f->cfg.state_dir, version);
    assert_int_equal(utime(path, &times), 0);
}

static void check_reproducible(fixture *f, bundle_format format, const char *ext)
{
    char one[600], two[600];
    snprintf(one, sizeof one, "%s/one.%s", f->dir, ext);
    snprintf(two, sizeof two, "%s/two.%s", f->dir, ext);
    error_info err;
    mode_t old = umask(022);
    touch_staged(f, "4.5.6", 1000000);
    assert_int_equal(bundle_write(&f->cfg, format, one, NULL, &err), ERR_OK);
    umask(077);
    touch_staged(f, "4.5.6", 2000000000);
    char *written = NULL;
    assert_int_equal(bundle_write(&f->cfg, format, two, &written, &err), ERR_OK);
    umask(old);
    assert_string_equal(written, two);
    free(written);
    size_t len1, len2;
    char *a = slurp(one, &len1), *b = slurp(two, &len2);
    assert_true(len1 > 0);
    assert_int_equal(len1, len2);
    assert_memory_equal(a, b, len1);
    if (format == BUNDLE_TAR_GZ) {
        assert_int_equal((unsigned char)a[0], 0x1f);
        assert_int_equal(a[3] & 0x08, 0);               /* FNAME flag: no file name */
        assert_int_equal(a[4] | a[5] | a[6] | a[7], 0); /* MTIME: none */
    } else {
        assert_memory_equal(a, "PK\3\4", 4);
    }
    free(a);
    free(b);
}

static void test_zip_reproducible(void **ctx)
{
    fixture *f = *ctx;
    stage_pe(f, "4.5.6");
    check_reproducible(f, BUNDLE_ZIP, "zip");
}

static void test_tar_gz_reproducible(void **ctx)
{
    fixture *f = *ctx;
    stage_pe(f, "4.5.6");
    check_reproducible(f, BUNDLE_TAR_GZ, "tar.gz");
}

static void test_nothing_staged(void **ctx)
{
    fixture *f = *ctx;
    char out[600];
    snprintf(out, sizeof out, "%s/x.zip", f->dir);
    error_info err;
    assert_int_equal(bundle_write(&f->cfg, BUNDLE_ZIP, out, NULL, &err), ERR_NOT_FOUND);
    assert_int_equal(access(out, F_OK), -1);
}

static void test_parse_format(void **unused)
{
    (void)unused;
    bundle_format fmt;
    error_info err;
    assert_int_equal(bundle_parse_format(NULL, &fmt, &err), ERR_OK);
    assert_int_equal(fmt, BUNDLE_ZIP);
    assert_int_equal(bundle_parse_format("tar.gz", &fmt, &err), ERR_OK);
    assert_int_equal(fmt, BUNDLE_TAR_GZ);
    assert_int_equal(bundle_parse_format("rar", &fmt, &err), ERR_USAGE);
}

static void test_restage_in_fresh_state(void **ctx)
{
    fixture *f = *ctx;
    stage_pe(f, "7.8.9-rc1");
    const char *exts[] = {"zip", "tar.gz"};
    for (int i = 0; i < 2; i++) {
        char out[600];
        snprintf(out, sizeof out, "%s/b.%s", f->dir, exts[i]);
        error_info err;
        assert_int_equal(bundle_write(&f->cfg, i ? BUNDLE_TAR_GZ : BUNDLE_ZIP, out, NULL, &err), ERR_OK);

        support_staging *fresh = support_staging_new("bundle-fresh");
        intake_candidate c = {.path = out, .version = NULL, .file_name = "b", .expected_length = -1};
        intake_result r;
        assert_int_equal(intake_stage(&fresh->cfg, fresh->s, &c, &r, &err), ERR_OK);
        assert_string_equal(r.version, "7.8.9-rc1");
        assert_string_equal(r.file_name, "SensorSetup.exe");
        free(r.path);
        /* A contradicting --version is refused. */
        c.version = "7.8.9";
        c.force = true;
        assert_int_equal(intake_stage(&fresh->cfg, fresh->s, &c, &r, &err), ERR_REJECTED);
        support_staging_free(fresh);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SUPPORT_STAGING_TEST(test_zip_reproducible),       SUPPORT_STAGING_TEST(test_tar_gz_reproducible),
        SUPPORT_STAGING_TEST(test_nothing_staged),         cmocka_unit_test(test_parse_format),
        SUPPORT_STAGING_TEST(test_restage_in_fresh_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
