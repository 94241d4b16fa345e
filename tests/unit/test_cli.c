/* test_cli.c — command-line parsing: global options before or after the
 * command, per-command options, usage errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cli/cli.h"

#define MAX_ARGS 16

static error_code parse(const char *line, cli_options *opts, error_info *err)
{
    static char buf[512];
    char *argv[MAX_ARGS] = {"outpost"};
    int argc = 1;
    strncpy(buf, line, sizeof buf - 1);
    for (char *tok = strtok(buf, " "); tok && argc < MAX_ARGS - 1; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    return cli_parse(argc, argv, opts, err);
}

static void test_global_options_anywhere(void **state)
{
    (void)state;
    cli_options a, b;
    error_info err;
    assert_int_equal(parse("status --json", &a, &err), ERR_OK);
    assert_int_equal(parse("--json status", &b, &err), ERR_OK);
    assert_int_equal(a.command, CLI_STATUS);
    assert_int_equal(b.command, CLI_STATUS);
    assert_true(a.json && b.json);

    assert_int_equal(parse("-c /etc/o.json --state-dir /tmp/s -v -v run", &a, &err), ERR_OK);
    assert_int_equal(a.command, CLI_RUN);
    assert_string_equal(a.config_path, "/etc/o.json");
    assert_string_equal(a.state_dir, "/tmp/s");
    assert_int_equal(a.verbosity, 2);

    assert_int_equal(parse("run --config=/x.json -q", &a, &err), ERR_OK);
    assert_string_equal(a.config_path, "/x.json");
    assert_int_equal(a.verbosity, -1);
}

static void test_command_options(void **state)
{
    (void)state;
    cli_options o;
    error_info err;
    assert_int_equal(parse("update --force --allow-downgrade", &o, &err), ERR_OK);
    assert_true(o.force && o.allow_downgrade);
    assert_int_equal(parse("stage /tmp/setup.exe --version 1.2.3", &o, &err), ERR_OK);
    assert_string_equal(o.file, "/tmp/setup.exe");
    assert_string_equal(o.version, "1.2.3");
    assert_int_equal(parse("--version 1.2.3 stage f.msi --allow-downgrade", &o, &err), ERR_OK);
    assert_string_equal(o.version, "1.2.3");
    assert_string_equal(o.file, "f.msi");
    assert_true(o.allow_downgrade);
    assert_int_equal(parse("deploy --dry-run", &o, &err), ERR_OK);
    assert_true(o.dry_run);
    assert_int_equal(parse("bundle --format tar.gz -o out.tgz", &o, &err), ERR_OK);
    assert_string_equal(o.format, "tar.gz");
    assert_string_equal(o.output, "out.tgz");
}

/* root and mirror keep their own words in order; global options keep their meaning anywhere. */
static void test_root_and_mirror_words(void **state)
{
    (void)state;
    cli_options o;
    error_info err;
    assert_int_equal(parse("root init --root-key a.pub --json --root-key b.pub -o 1.root.json -c /x.json", &o, &err),
                     ERR_OK);
    assert_int_equal(o.command, CLI_ROOT);
    assert_true(o.json);
    assert_string_equal(o.config_path, "/x.json");
    assert_int_equal(o.arg_count, 7);
    assert_string_equal(o.args[0], "init");
    assert_string_equal(o.args[4], "b.pub");
    assert_string_equal(o.args[6], "1.root.json");
    assert_int_equal(parse("-q mirror verify https://m.example/ --machine-id host-1", &o, &err), ERR_OK);
    assert_int_equal(o.command, CLI_MIRROR);
    assert_int_equal(o.verbosity, -1);
    assert_int_equal(o.arg_count, 4);
    assert_int_equal(parse("root", &o, &err), ERR_USAGE);
    assert_int_equal(parse("mirror list", &o, &err), ERR_USAGE);
    assert_int_equal(parse("root --help", &o, &err), ERR_OK);
    assert_true(o.help);
}

static void test_version_and_help(void **state)
{
    (void)state;
    cli_options o;
    error_info err;
    assert_int_equal(parse("--version", &o, &err), ERR_OK);
    assert_int_equal(o.command, CLI_VERSION);
    assert_int_equal(parse("version", &o, &err), ERR_OK);
    assert_int_equal(o.command, CLI_VERSION);
    assert_int_equal(parse("help update", &o, &err), ERR_OK);
    assert_true(o.help);
    assert_int_equal(o.help_topic, CLI_UPDATE);
    assert_int_equal(parse("check --help", &o, &err), ERR_OK);
    assert_true(o.help);
    assert_int_equal(o.help_topic, CLI_CHECK);
    assert_int_equal(parse("-h", &o, &err), ERR_OK);
    assert_true(o.help);
    assert_int_equal(o.help_topic, CLI_NONE);
}

static void test_usage_errors(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        const char *mention;
    } cases[] = {
        {"", "no command"},
        {"frobnicate", "frobnicate"},
        {"check --force", "--force"},
        {"status --dry-run", "--dry-run"},
        {"check --bogus", "--bogus"},
        {"stage", "FILE"},
        {"stage a.exe b.exe", "b.exe"},
        {"check extra", "extra"},
        {"bundle --format rar", "rar"},
        {"run -c", "--config"},
        {"help nothing", "nothing"},
        {"check --version", "--version"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_options o;
        error_info err;
        error_code rc = parse(cases[i].line, &o, &err);
        if (rc != ERR_USAGE || !strstr(err.message, cases[i].mention))
            fail_msg("\"%s\": rc=%d message=\"%s\"", cases[i].line, rc, err.message);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_global_options_anywhere),
        cmocka_unit_test(test_command_options),
        cmocka_unit_test(test_root_and_mirror_words),
        cmocka_unit_test(test_version_and_help),
        cmocka_unit_test(test_usage_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
