/* test_deploy.c — deploy: placeholder replacement, quoting for --dry-run,
 * exit-code judgement (0 / 3010 / 1641 / others), and real runs through
 * /bin/sh scripts written here that also write the installed-version file,
 * so the re-read check is exercised: success, failure, wrong version after
 * exit 0, no version source, timeout, nothing staged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/config.h"
#include "installer/deploy.h"
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

/* The installed-version file the test scripts write (malloc'd path). */
static char *version_file(const fixture *f)
{
    return platform_path_join(f->dir, "installed-version");
}

static void set_command(config *cfg, const char *const *argv)
{
    for (size_t i = 0; i < cfg->deploy.command_count; i++)
        free(cfg->deploy.command[i]);
    free(cfg->deploy.command);
    size_t n = 0;
    while (argv[n])
        n++;
    cfg->deploy.command = calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        cfg->deploy.command[i] = text_dup(argv[i]);
    cfg->deploy.command_count = n;
}

/* Stages a minimal PE as version and sets deploy.command to run script with
 * sh, passing the installer path and the installed-version file. */
static void prepare(fixture *f, const char *version, const char *script)
{
    char *path = support_write_pe(f->dir, "Setup.exe", 512, 0);
    support_stage(f, path, version);
    free(path);
    char *versions = version_file(f);
    const char *argv[] = {"/bin/sh", "-c", script, "sh", "{installer}", versions, NULL};
    set_command(&f->cfg, argv);
    free(versions);
}

static void use_version_file(fixture *f, const char *initial)
{
    char *versions = version_file(f);
    assert_int_equal(platform_write_atomic(versions, initial, strlen(initial), NULL), ERR_OK);
    f->cfg.installer.installed_version_file = versions;
}

static const cJSON *installer_member(fixture *f, const char *name)
{
    return cJSON_GetObjectItem(state_section(f->s, "installer"), name);
}

static void test_build_argv(void **unused)
{
    (void)unused;
    config_deploy d = {0};
    char *cmd[] = {"msiexec", "/i", "{installer}", "/l*v", "{installer}.log", "/i{installer}", "X", NULL};
    d.command = cmd;
    d.command_count = 7;
    char **argv = NULL;
    error_info err;
    bool uses_log = true;
    deploy_target target = {.installer = "C:\\state\\s.msi", .log = "C:\\state\\logs\\d.log", .msi = true};
    assert_int_equal(deploy_build_argv(&d, &target, &argv, &uses_log, &err), ERR_OK);
    assert_false(uses_log);
    assert_string_equal(argv[0], "msiexec");
    assert_string_equal(argv[2], "C:\\state\\s.msi");
    assert_string_equal(argv[4], "C:\\state\\s.msi.log");
    assert_string_equal(argv[5], "/iC:\\state\\s.msi");
    assert_string_equal(argv[6], "X");
    assert_null(argv[7]);
    deploy_free_argv(argv);
    d.command_count = 0;
    assert_int_equal(deploy_build_argv(&d, &target, &argv, NULL, &err), ERR_CONFIG);
}

/* deploy.command null: the default follows the staged format. */
static void test_default_command_by_format(void **unused)
{
    (void)unused;
    char *pe_args[] = {"/quiet", "/norestart", NULL};
    config_deploy d = {.command = NULL, .pe_args = pe_args, .pe_args_count = 2};
    char **argv = NULL;
    error_info err;
    bool uses_log = false;
    deploy_target msi = {.installer = "C:\\s\\installer.msi", .log = "C:\\s\\logs\\d.log", .msi = true};
    assert_int_equal(deploy_build_argv(&d, &msi, &argv, &uses_log, &err), ERR_OK);
    char *line = deploy_format_argv(argv);
    assert_string_equal(line, "msiexec /i C:\\s\\installer.msi /qn /norestart /l*v C:\\s\\logs\\d.log");
    assert_true(uses_log);
    free(line);
    deploy_free_argv(argv);

    deploy_target pe = {.installer = "C:\\Program Data\\s\\installer.exe", .log = "x.log", .msi = false};
    assert_int_equal(deploy_build_argv(&d, &pe, &argv, &uses_log, &err), ERR_OK);
    assert_false(uses_log);
    assert_string_equal(argv[0], "C:\\Program Data\\s\\installer.exe");
    assert_string_equal(argv[1], "/quiet");
    assert_string_equal(argv[2], "/norestart");
    assert_null(argv[3]);
    line = deploy_format_argv(argv);
    assert_string_equal(line, "\"C:\\Program Data\\s\\installer.exe\" /quiet /norestart");
    free(line);
    deploy_free_argv(argv);

    d.pe_args_count = 0;
    assert_int_equal(deploy_build_argv(&d, &pe, &argv, NULL, &err), ERR_OK);
    assert_null(argv[1]);
    deploy_free_argv(argv);
}

/* CommandLineToArgvW's rules: the cases people get wrong. */
static void test_quote_windows_arg(void **unused)
{
    (void)unused;
    static const struct {
        const char *arg, *quoted;
    } cases[] = {
        {"/qn", "/qn"},
        {"C:\\dir\\file.msi", "C:\\dir\\file.msi"}, /* backslashes alone are literal */
        {"", "\"\""},                               /* an empty argument stays one */
        {"My Setup.msi", "\"My Setup.msi\""},
        {"tab\there", "\"tab\there\""},
        {"say \"hi\"", "\"say \\\"hi\\\"\""}, /* inner quotes escaped */
        {"a\"b", "\"a\\\"b\""},
        {"C:\\Program Files\\", "\"C:\\Program Files\\\\\""}, /* a trailing backslash doubled before the quote */
        {"C:\\a dir\\\\", "\"C:\\a dir\\\\\\\\\""},           /* two become four */
        {"x\\\"y z", "\"x\\\\\\\"y z\""},                     /* backslash then quote: 2n+1 */
        {"INSTALLDIR=C:\\Program Files\\Sensor", "\"INSTALLDIR=C:\\Program Files\\Sensor\""},
        {"a\\b c", "\"a\\b c\""}, /* backslashes not before a quote stay single */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *q = deploy_quote_windows_arg(cases[i].arg);
        if (!q || strcmp(q, cases[i].quoted) != 0)
            fail_msg("case %zu: [%s] quoted as [%s], want [%s]", i, cases[i].arg, q ? q : "(null)", cases[i].quoted);
        free(q);
    }
}

static void test_format_argv(void **unused)
{
    (void)unused;
    char *argv[] = {"C:\\Windows\\System32\\msiexec.exe",
                    "/i",
                    "C:\\ProgramData\\outpost\\staging\\1.0\\My Setup.msi",
                    "it's",
                    "",
                    "/qn",
                    NULL};
    char *line = deploy_format_argv(argv);
    assert_string_equal(
        line, "C:\\Windows\\System32\\msiexec.exe /i \"C:\\ProgramData\\outpost\\staging\\1.0\\My Setup.msi\" "
              "it's \"\" /qn");
    free(line);
    char *spaced[] = {"C:\\Program Files\\x.exe", NULL};
    line = deploy_format_argv(spaced);
    assert_string_equal(line, "\"C:\\Program Files\\x.exe\"");
    free(line);
}

static void test_exit_codes(void **unused)
{
    (void)unused;
    bool reboot = true;
    assert_true(deploy_exit_is_success(0, &reboot));
    assert_false(reboot);
    assert_true(deploy_exit_is_success(3010, &reboot));
    assert_true(reboot);
    assert_true(deploy_exit_is_success(1641, &reboot));
    assert_true(reboot);
    assert_false(deploy_exit_is_success(1, &reboot));
    assert_false(deploy_exit_is_success(1603, &reboot));
    assert_false(deploy_exit_is_success(194, &reboot)); /* 3010 & 0xff is not 3010 */
}

static void test_success_verified(void **ctx)
{
    fixture *f = *ctx;
    prepare(f, "2.0.0-abc", "test -f \"$1\" && echo 2.0.0 > \"$2\"");
    use_version_file(f, "1.0.0\n");
    deploy_outcome out;
    error_info err;
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_OK);
    assert_int_equal(out.exit_code, 0);
    assert_false(out.reboot_required);
    assert_string_equal(out.verified, "yes");
    const cJSON *deployed = installer_member(f, "deployed");
    assert_string_equal(cJSON_GetObjectItem(deployed, "version")->valuestring, "2.0.0-abc");
    assert_string_equal(cJSON_GetObjectItem(deployed, "verified")->valuestring, "yes");
    assert_string_equal(installer_member(f, "deployed_version")->valuestring, "2.0.0-abc");
    /* Saved: a fresh load sees it. */
    state *again;
    assert_int_equal(state_load(f->cfg.state_dir, &again, &err), ERR_OK);
    assert_non_null(cJSON_GetObjectItem(state_section(again, "installer"), "deployed"));
    state_free(again);
}

static void test_failure_exit_code(void **ctx)
{
    fixture *f = *ctx;
    prepare(f, "2.0", "exit 3");
    use_version_file(f, "1.0\n");
    deploy_outcome out;
    error_info err;
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_SPAWN);
    assert_int_equal(error_exit_code(err.code), 1);
    assert_non_null(strstr(err.message, "exited with code 3"));
    assert_null(installer_member(f, "deployed"));
    assert_int_equal(cJSON_GetObjectItem(installer_member(f, "deploy_failure"), "exit_code")->valueint, 3);
    char *v = NULL;
    assert_int_equal(staging_current_version(&f->cfg, &v, NULL), ERR_OK);
    assert_string_equal(v, "2.0"); /* staged versions and current untouched */
    free(v);
    assert_true(staging_has_verified(&f->cfg, "2.0"));
}

static void test_exit_zero_wrong_version(void **ctx)
{
    fixture *f = *ctx;
    prepare(f, "2.0", "exit 0");
    use_version_file(f, "1.0\n");
    deploy_outcome out;
    error_info err;
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_SPAWN);
    assert_string_equal(out.verified, "no");
    assert_non_null(strstr(err.message, "still 1.0"));
    assert_null(installer_member(f, "deployed"));
}

static void test_no_version_source_unverified(void **ctx)
{
    fixture *f = *ctx;
    prepare(f, "2.0", "exit 0");
    deploy_outcome out;
    error_info err;
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_OK);
    assert_string_equal(out.verified, "unverified");
    /* A second deploy: the state's own record is not an independent source. */
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_OK);
    assert_string_equal(out.verified, "unverified");
}

static void test_timeout(void **ctx)
{
    fixture *f = *ctx;
    prepare(f, "2.0", "sleep 30");
    f->cfg.deploy.timeout_s = 1;
    deploy_outcome out;
    error_info err;
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_TIMEOUT);
    assert_true(out.timed_out);
    assert_non_null(strstr(err.message, "timeout"));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(installer_member(f, "deploy_failure"), "timed_out")));
}

static void test_nothing_staged(void **ctx)
{
    fixture *f = *ctx;
    deploy_outcome out;
    error_info err;
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_NOT_FOUND);
    assert_string_equal(err.message, "nothing is staged; run outpost update first");
}

static void test_tampered_not_run(void **ctx)
{
    fixture *f = *ctx;
    char marker[600];
    snprintf(marker, sizeof marker, "touch '%s/ran'", f->dir);
    prepare(f, "2.0", marker);
    char path[600];
    snprintf(path, sizeof path, "%s/staging/2.0/installer.exe", f->cfg.state_dir);
    FILE *t = fopen(path, "ab");
    fputc('X', t);
    fclose(t);
    deploy_outcome out;
    error_info err;
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_REJECTED);
    snprintf(path, sizeof path, "%s/ran", f->dir);
    assert_int_equal(access(path, F_OK), -1);
}

/* A staged directory others may write is refused before the installer
 * runs: another user could have planted a DLL beside it. */
static void test_writable_staged_dir_not_run(void **ctx)
{
    fixture *f = *ctx;
    char marker[600];
    snprintf(marker, sizeof marker, "touch '%s/ran'", f->dir);
    prepare(f, "2.0", marker);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/staging/2.0", f->cfg.state_dir);
    assert_int_equal(chmod(dir, 0777), 0);
    deploy_outcome out;
    error_info err;
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_PERMISSION);
    assert_non_null(strstr(err.message, dir));
    assert_non_null(strstr(err.message, "chmod go-w"));
    char ran[600];
    snprintf(ran, sizeof ran, "%s/ran", f->dir);
    assert_int_equal(access(ran, F_OK), -1);
    /* Fixed as the message says: it runs. */
    assert_int_equal(chmod(dir, 0700), 0);
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_OK);
    assert_int_equal(access(ran, F_OK), 0);
}

/* Same size, other bytes: only the hash right before the run can tell. */
static void test_swapped_same_size_not_run(void **ctx)
{
    fixture *f = *ctx;
    char marker[600];
    snprintf(marker, sizeof marker, "touch '%s/ran'", f->dir);
    prepare(f, "2.0", marker);
    char path[600];
    snprintf(path, sizeof path, "%s/staging/2.0/installer.exe", f->cfg.state_dir);
    FILE *t = fopen(path, "r+b");
    assert_non_null(t);
    assert_int_equal(fseek(t, 300, SEEK_SET), 0);
    fputc('X', t);
    fclose(t);
    deploy_outcome out;
    error_info err;
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "no longer matches its manifest"));
    snprintf(path, sizeof path, "%s/ran", f->dir);
    assert_int_equal(access(path, F_OK), -1);
}

/* What the installer's environment keeps and drops (PRODUCT.md section 9). */
/* run deploys when deploy is enabled and the current staged version is not
 * the one deployed: never with nothing staged, never twice. */
static void test_deploy_wanted(void **ctx)
{
    fixture *f = *ctx;
    assert_false(deploy_wanted(&f->cfg)); /* deploy.enabled is false by default */
    f->cfg.deploy.enabled = true;
    assert_false(deploy_wanted(&f->cfg)); /* nothing staged */
    prepare(f, "2.0", "exit 0");
    assert_true(deploy_wanted(&f->cfg));
    deploy_outcome out;
    error_info err;
    assert_int_equal(deploy_run(&f->cfg, f->s, &out, &err), ERR_OK);
    assert_false(deploy_wanted(&f->cfg));
    f->cfg.deploy.enabled = false;
    char *next = support_write_pe(f->dir, "next.exe", 1024, 9);
    support_stage(f, next, "3.0");
    free(next);
    assert_false(deploy_wanted(&f->cfg));
    f->cfg.deploy.enabled = true;
    assert_true(deploy_wanted(&f->cfg));
}

static void test_child_environment_filter(void **unused)
{
    (void)unused;
    static const struct {
        const char *entry;
        bool passed;
    } cases[] = {
        {"PATH=/usr/bin:/bin", true},
        {"SystemRoot=C:\\Windows", true},
        {"TEMP=C:\\Temp", true},
        {"HOME=/root", true},
        {"=C:=C:\\dir", true},
        {"OUTPOST_PROXY_NOTE=1", false},
        {"OUTPOST_API_KEY=secret", false},
        {"outpost_config=/etc/x", false},
        {"OUTPOST_=x", false},
        {"http_proxy=http://u:p@proxy:3128", false},
        {"HTTPS_PROXY=http://u:p@proxy:3128", false},
        {"Https_Proxy=http://u:p@proxy:3128", false},
        {"ALL_PROXY=socks5://u:p@proxy", false},
        {"all_proxy=socks5://u:p@proxy", false},
        {"no_proxy=localhost", false},
        {"KRB5_CLIENT_KTNAME=FILE:/proc/self/fd/5", false},
        {"KRB5CCNAME=MEMORY:outpost-1", false},
        {"krb5_ktname=FILE:/etc/krb5.keytab", false},
        {"KRB5_CONFIG=/etc/krb5.conf", true},
        {"PROXY=x", true},       /* not *_PROXY */
        {"MY_PROXYCFG=x", true}, /* ends otherwise */
        {"OUTPOSTX=1", true},
        {"LANG=C.UTF-8", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (deploy_env_is_passed(cases[i].entry) != cases[i].passed)
            fail_msg("%s: expected %s", cases[i].entry, cases[i].passed ? "passed" : "dropped");
}

/* The installer sees neither OUTPOST_* nor proxy variables, nor a
 * descriptor outpost left open without close-on-exec. */
static void test_child_environment_and_descriptors(void **ctx)
{
    fixture *f = *ctx;
    char script[1200];
    /* exec >FILE: no descriptor saved aside by the shell for a redirection;
     * the listing holds 0-2 and maybe 3, the directory being read. */
    snprintf(script, sizeof script, "env > '%s/env.txt'; exec > '%s/fd.txt'; ls /proc/$$/fd", f->dir, f->dir);
    prepare(f, "2.0", script);
    setenv("OUTPOST_API_KEY", "secret-key-value", 1);
    setenv("https_proxy", "http://user:pw@127.0.0.1:9", 1);
    setenv("DEPLOY_TEST_KEPT", "yes", 1);
    char leak_path[600];
    snprintf(leak_path, sizeof leak_path, "%s/leak", f->dir);
    /* No close-on-exec, like a library's socket; a high number, so that it
     * cannot be mistaken for the listing's own descriptor. */
    int leak = open(leak_path, O_WRONLY | O_CREAT, 0600);
    assert_true(leak >= 0);
    assert_int_equal(dup2(leak, 47), 47);
    close(leak);
    deploy_outcome out;
    error_info err;
    error_code rc = deploy_run(&f->cfg, f->s, &out, &err);
    close(47);
    unsetenv("OUTPOST_API_KEY");
    unsetenv("https_proxy");
    unsetenv("DEPLOY_TEST_KEPT");
    assert_int_equal(rc, ERR_OK);
    char path[600], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/env.txt", f->dir);
    assert_int_equal(platform_read_file(path, 1 << 20, &text, &len, &err), ERR_OK);
    assert_null(strstr(text, "OUTPOST_API_KEY"));
    assert_null(strstr(text, "secret-key-value"));
    assert_null(strstr(text, "https_proxy"));
    assert_non_null(strstr(text, "DEPLOY_TEST_KEPT=yes"));
    assert_non_null(strstr(text, "PATH="));
    free(text);
    if (access("/proc/self/fd", F_OK) != 0)
        return;
    snprintf(path, sizeof path, "%s/fd.txt", f->dir);
    assert_int_equal(platform_read_file(path, 1 << 20, &text, &len, &err), ERR_OK);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (atoi(line) > 3)
            fail_msg("the installer inherited descriptor %s", line);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_argv),
        cmocka_unit_test(test_default_command_by_format),
        cmocka_unit_test(test_quote_windows_arg),
        cmocka_unit_test(test_format_argv),
        cmocka_unit_test(test_exit_codes),
        SUPPORT_STAGING_TEST(test_success_verified),
        SUPPORT_STAGING_TEST(test_failure_exit_code),
        SUPPORT_STAGING_TEST(test_exit_zero_wrong_version),
        SUPPORT_STAGING_TEST(test_no_version_source_unverified),
        SUPPORT_STAGING_TEST(test_timeout),
        SUPPORT_STAGING_TEST(test_nothing_staged),
        SUPPORT_STAGING_TEST(test_tampered_not_run),
        SUPPORT_STAGING_TEST(test_writable_staged_dir_not_run),
        SUPPORT_STAGING_TEST(test_swapped_same_size_not_run),
        SUPPORT_STAGING_TEST(test_deploy_wanted),
        cmocka_unit_test(test_child_environment_filter),
        SUPPORT_STAGING_TEST(test_child_environment_and_descriptors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
