/* test_installed.c — where the installed version comes from: configuration,
 * version file, OS inventory (none on POSIX), the last deployed version in
 * state; and what an unusable version file does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/config.h"
#include "installer/installed.h"
#include "core/log.h"
#include "core/state.h"
#include "base/text.h"

#include "support.h"

typedef struct fixture {
    char *dir;  /* support_tempdir */
    char *file; /* dir/version.txt */
    config cfg;
    state *s;
} fixture;

static int setup(void **ctx)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = support_tempdir("installed");
    f->file = platform_path_join(f->dir, "version.txt");
    error_info err;
    assert_int_equal(config_init_defaults(&f->cfg, &err), ERR_OK);
    assert_int_equal(state_load(f->dir, &f->s, &err), ERR_OK);
    log_set_level(LOG_QUIET);
    *ctx = f;
    return 0;
}

static int teardown(void **ctx)
{
    fixture *f = *ctx;
    state_free(f->s);
    config_free(&f->cfg);
    free(f->file);
    support_tempdir_remove(f->dir);
    free(f);
    return 0;
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void expect_version(fixture *f, const char *version, const char *source)
{
    char *v = (char *)"sentinel";
    const char *src = "sentinel";
    error_info err;
    error_clear(&err);
    if (installed_version_get(&f->cfg, f->s, &v, &src, &err) != ERR_OK)
        fail_msg("unexpected error: %s", err.message);
    if (!version) {
        assert_null(v);
        assert_null(src);
        return;
    }
    assert_non_null(v);
    assert_string_equal(v, version);
    assert_string_equal(src, source);
    free(v);
}

static void test_none_known(void **ctx)
{
    fixture *f = *ctx;
    expect_version(f, NULL, NULL);
    /* a state section without deployed_version, and a NULL state */
    cJSON_AddStringToObject(state_section(f->s, "installer"), "latest_version", "9.9");
    expect_version(f, NULL, NULL);
    char *v = (char *)"x";
    error_info err;
    assert_int_equal(installed_version_get(&f->cfg, NULL, &v, NULL, &err), ERR_OK);
    assert_null(v);
}

static void test_order_of_sources(void **ctx)
{
    fixture *f = *ctx;
    cJSON_AddStringToObject(state_section(f->s, "installer"), "deployed_version", "1.0.0");
    expect_version(f, "1.0.0", "state");

    write_text(f->file, "\xEF\xBB\xBF  24.3.0-abc \r\nsecond line\n");
    f->cfg.installer.installed_version_file = text_dup(f->file);
    expect_version(f, "24.3.0-abc", "file");

    f->cfg.installer.installed_version = text_dup("26.01.03.24329");
    expect_version(f, "26.01.03.24329", "config");
}

/* A version file the configuration names is an explicit statement: when it
 * does not exist that is a configuration error, not a fall-through to the
 * state (PRODUCT.md section 2: never a silent fallback). */
static void test_missing_file_is_config_error(void **ctx)
{
    fixture *f = *ctx;
    cJSON_AddStringToObject(state_section(f->s, "installer"), "deployed_version", "2.0");
    f->cfg.installer.installed_version_file = text_dup("/nonexistent/outpost/version.txt");
    char *v = (char *)"sentinel";
    error_info err;
    error_clear(&err);
    assert_int_equal(installed_version_get(&f->cfg, f->s, &v, NULL, &err), ERR_CONFIG);
    assert_null(v);
    assert_string_equal(err.message, "installer.installed_version_file: /nonexistent/outpost/version.txt does not "
                                     "exist; create the file or correct the key");
}

static void test_bad_file_is_config_error(void **ctx)
{
    fixture *f = *ctx;
    static const char *const bad[] = {"", "\n\n", "../../etc\n", "version 1.2\n", "1.2/3"};
    f->cfg.installer.installed_version_file = text_dup(f->file);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(f->file, bad[i]);
        char *v = (char *)"sentinel";
        error_info err;
        error_clear(&err);
        assert_int_equal(installed_version_get(&f->cfg, f->s, &v, NULL, &err), ERR_CONFIG);
        assert_null(v);
        assert_non_null(strstr(err.message, "installed_version_file"));
        assert_non_null(strstr(err.message, f->file));
    }
    /* over the size cap */
    char *big = malloc(10000);
    memset(big, '1', 9999);
    big[9999] = '\0';
    write_text(f->file, big);
    free(big);
    char *v = NULL;
    error_info err;
    assert_int_equal(installed_version_get(&f->cfg, f->s, &v, NULL, &err), ERR_CONFIG);
}

static void test_bad_config_value(void **ctx)
{
    fixture *f = *ctx;
    f->cfg.installer.installed_version = text_dup("../x");
    char *v = NULL;
    error_info err;
    assert_int_equal(installed_version_get(&f->cfg, f->s, &v, NULL, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "installer.installed_version"));
}

static void test_bad_state_value_ignored(void **ctx)
{
    fixture *f = *ctx;
    cJSON_AddStringToObject(state_section(f->s, "installer"), "deployed_version", "../../etc");
    expect_version(f, NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_none_known, setup, teardown),
        cmocka_unit_test_setup_teardown(test_order_of_sources, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file_is_config_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_file_is_config_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_config_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_state_value_ignored, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
