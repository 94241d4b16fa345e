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

typedef struct fixture {
    char *dir;
    config cfg;
    state *s;
} fixture;

static void init_config(config *cfg, const char *state_dir)
{
    error_info err;
    assert_int_equal(config_init_defaults(cfg, &err), ERR_OK);
    free(cfg->state_dir);
    cfg->state_dir = text_dup(state_dir);
    free(cfg->installer.verify.trusted_ca_file);
    cfg->installer.verify.trusted_ca_file = NULL;
    cfg->installer.verify.require_signature = false;
    assert_int_equal(platform_mkdirs(state_dir, &err), ERR_OK);
}

static int setup(void **ctx)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = support_tempdir("bundle");
    char *state_dir = platform_path_join(f->dir, "state");
    init_config(&f->cfg, state_dir);
    free(state_dir);
    error_info err;
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

static void stage_pe(fixture *f, const char *version)
{
    unsigned char pe[4096] = {0};
    pe[0] = 'M';
    pe[1] = 'Z';
    pe[0x3C] = 0x80;
    memcpy(pe + 0x80, "PE\0\0", 4);
    for (size_t i = 0x100; i < sizeof pe; i++)
        pe[i] = (unsigned char)(i * 7);
    char *path = platform_path_join(f->dir, "SensorSetup.exe");
    assert_int_equal(platform_write_atomic(path, pe, sizeof pe, NULL), ERR_OK);
    intake_candidate c = {.path = path, .version = version, .file_name = "SensorSetup.exe", .expected_length = -1};
    intake_result r;
    error_info err;
    assert_int_equal(intake_stage(&f->cfg, f->s, &c, &r, &err), ERR_OK);
    free(r.path);
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

        char fresh_dir[600];
        snprintf(fresh_dir, sizeof fresh_dir, "%s/fresh%d", f->dir, i);
        config fresh;
        init_config(&fresh, fresh_dir);
        state *s;
        assert_int_equal(state_load(fresh_dir, &s, &err), ERR_OK);
        intake_candidate c = {.path = out, .version = NULL, .file_name = "b", .expected_length = -1};
        intake_result r;
        assert_int_equal(intake_stage(&fresh, s, &c, &r, &err), ERR_OK);
        assert_string_equal(r.version, "7.8.9-rc1");
        assert_string_equal(r.file_name, "SensorSetup.exe");
        free(r.path);
        /* A contradicting --version is refused. */
        c.version = "7.8.9";
        c.force = true;
        assert_int_equal(intake_stage(&fresh, s, &c, &r, &err), ERR_REJECTED);
        state_free(s);
        config_free(&fresh);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_zip_reproducible, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tar_gz_reproducible, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_staged, setup, teardown),
        cmocka_unit_test(test_parse_format),
        cmocka_unit_test_setup_teardown(test_restage_in_fresh_state, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
