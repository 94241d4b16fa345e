/* test_log.c — the log file (time-stamped lines, rotation by rename, a torn
 * last line ended, an unopenable file that does not stop anything) and the
 * Windows event log decision: which run outcomes give which event id,
 * level and text. Portable: the event decision is the same code on every
 * platform; only platform_event_log differs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "core/log.h"

#include "support.h"

static char *tempdir(void)
{
    return support_tempdir("log");
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* "YYYY-MM-DDThh:mm:ssZ <command>[<pid>]: " at line, and where the text starts. */
static const char *line_text(const char *line, const char *command)
{
    static const char pattern[] = "dddd-dd-ddTdd:dd:ddZ ";
    for (size_t i = 0; pattern[i]; i++) {
        if (pattern[i] == 'd' ? !isdigit((unsigned char)line[i]) : line[i] != pattern[i])
            return NULL;
    }
    line += sizeof pattern - 1;
    size_t n = strlen(command);
    if (strncmp(line, command, n) != 0 || line[n] != '[')
        return NULL;
    line += n + 1;
    if (!isdigit((unsigned char)*line))
        return NULL;
    while (isdigit((unsigned char)*line))
        line++;
    return strncmp(line, "]: ", 3) == 0 ? line + 3 : NULL;
}

static void test_lines_are_stamped(void **unused)
{
    (void)unused;
    char *dir = tempdir();
    char path[512];
    snprintf(path, sizeof path, "%s/outpost.log", dir);
    log_set_level(LOG_QUIET);
    log_start("run", path, 1024 * 1024, 3);
    log_error("run: update: the platform said \x1b[31mno\x1b[0m");
    log_warn("not shown at -q, so not logged");
    log_set_level(LOG_NORMAL);
    log_warn("shown now");
    log_stop();
    const char *text = support_slurp(path);
    assert_non_null(text);
    const char *first = line_text(text, "run");
    assert_non_null(first);
    /* The same escaped text as stderr, without "outpost: ". */
    assert_int_equal(strncmp(first, "run: update: the platform said \\x1b[31mno\\x1b[0m\n", 48), 0);
    const char *second = line_text(strchr(text, '\n') + 1, "run");
    assert_non_null(second);
    assert_string_equal(second, "warning: shown now\n");
    free(dir);
}

static void test_rotation_keeps_n_files(void **unused)
{
    (void)unused;
    char *dir = tempdir();
    char path[512], name[600];
    snprintf(path, sizeof path, "%s/outpost.log", dir);
    log_set_level(LOG_NORMAL);
    log_start("test", path, 4096, 2);
    char payload[201];
    memset(payload, 'x', 200);
    payload[200] = '\0';
    for (int i = 0; i < 100; i++)
        log_warn("%03d %s", i, payload);
    log_stop();
    /* About 250 bytes a line, 16 a file: path, path.1 and path.2 hold the
     * newest lines, each under max_bytes; path.3 never exists. */
    for (int n = 0; n <= 2; n++) {
        if (n)
            snprintf(name, sizeof name, "%s.%d", path, n);
        long size = file_size(n ? name : path);
        assert_true(size > 0);
        assert_true(size <= 4096);
        const char *text = support_slurp(n ? name : path);
        for (const char *line = text; *line; line = strchr(line, '\n') + 1)
            assert_non_null(line_text(line, "test"));
    }
    snprintf(name, sizeof name, "%s.3", path);
    assert_int_equal(file_size(name), -1);
    /* The newest line is in the live file, the one before it not lost. */
    const char *live = support_slurp(path);
    assert_non_null(strstr(live, "warning: 099 "));
    free(dir);
}

static void test_a_failed_rotation_is_said_once_and_lines_go_on(void **unused)
{
    (void)unused;
    char *dir = tempdir();
    char path[512], blocker[600];
    snprintf(path, sizeof path, "%s/outpost.log", dir);
    snprintf(blocker, sizeof blocker, "%s.1", path);
    assert_int_equal(mkdir(blocker, 0700), 0); /* outpost.log cannot be renamed onto a directory */
    log_set_level(LOG_NORMAL);
    log_start("test", path, 4096, 1);
    char payload[201];
    memset(payload, 'y', 200);
    payload[200] = '\0';
    for (int i = 0; i < 40; i++)
        log_warn("%03d %s", i, payload);
    log_stop();
    /* Every line is kept, in the live file, past max_bytes. */
    assert_true(file_size(path) > 4096);
    const char *text = support_slurp(path);
    assert_non_null(strstr(text, "warning: 000 "));
    assert_non_null(strstr(text, "warning: 039 "));
    for (const char *line = text; *line; line = strchr(line, '\n') + 1)
        assert_non_null(line_text(line, "test"));
    free(dir);
}

static void test_torn_last_line_is_ended(void **unused)
{
    (void)unused;
    char *dir = tempdir();
    char path[512];
    snprintf(path, sizeof path, "%s/outpost.log", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("2026-01-01T00:00:00Z run[1]: a line\n2026-01-01T00:00:01Z run[1]: killed in the midd", f);
    fclose(f);
    log_set_level(LOG_NORMAL);
    log_start("run", path, 1024 * 1024, 3);
    log_warn("next run");
    log_stop();
    const char *text = support_slurp(path);
    const char *torn = strstr(text, "killed in the midd\n");
    assert_non_null(torn);
    const char *next = line_text(torn + strlen("killed in the midd\n"), "run");
    assert_non_null(next);
    assert_string_equal(next, "warning: next run\n");
    free(dir);
}

static void test_unopenable_file_changes_nothing(void **unused)
{
    (void)unused;
    char *dir = tempdir();
    char path[512];
    snprintf(path, sizeof path, "%s/no-such-dir/outpost.log", dir);
    log_set_level(LOG_NORMAL);
    log_start("run", path, 4096, 1);
    log_warn("first");  /* the open fails: one warning on stderr */
    log_warn("second"); /* no second attempt, no crash */
    log_stop();
    assert_int_equal(file_size(path), -1);
    free(dir);
}

/* ---- The event log decision --------------------------------------------- */

static const struct {
    int exit_code, parts, failed;
    log_event_id id;
    platform_event_level level;
} decisions[] = {
    {0, 2, 0, LOG_EVENT_NONE, 0},
    {3010, 2, 0, LOG_EVENT_NONE, 0}, /* deployed, reboot pending */
    {1, 2, 2, LOG_EVENT_RUN_FAILED, PLATFORM_EVENT_ERROR},
    {4, 1, 1, LOG_EVENT_RUN_FAILED, PLATFORM_EVENT_ERROR}, /* installer rejected */
    {3, 2, 2, LOG_EVENT_RUN_FAILED, PLATFORM_EVENT_ERROR},
    {2, 0, 0, LOG_EVENT_RUN_FAILED, PLATFORM_EVENT_ERROR},  /* configuration error: never started */
    {1, 0, 0, LOG_EVENT_RUN_FAILED, PLATFORM_EVENT_ERROR},  /* state directory refused */
    {4, 2, 1, LOG_EVENT_RUN_PARTIAL, PLATFORM_EVENT_ERROR}, /* update rejected, report fine */
    {1, 3, 1, LOG_EVENT_RUN_PARTIAL, PLATFORM_EVENT_ERROR},
    {75, 2, 2, LOG_EVENT_RUN_TEMPORARY, PLATFORM_EVENT_WARNING},
    {75, 2, 1, LOG_EVENT_RUN_TEMPORARY, PLATFORM_EVENT_WARNING},
    {5, 0, 0, LOG_EVENT_RUN_LOCKED, PLATFORM_EVENT_WARNING},
};

static void test_event_decisions(void **unused)
{
    (void)unused;
    for (size_t i = 0; i < sizeof decisions / sizeof decisions[0]; i++) {
        log_event event;
        bool wanted = log_run_event_prepare(decisions[i].exit_code, decisions[i].parts, decisions[i].failed, &event);
        if (event.id != decisions[i].id || wanted != (decisions[i].id != LOG_EVENT_NONE))
            fail_msg("case %zu (exit %d): event %d, wanted %d", i, decisions[i].exit_code, (int)event.id,
                     (int)decisions[i].id);
        if (wanted)
            assert_int_equal(event.level, decisions[i].level);
    }
}

static void test_event_text_is_the_error_lines(void **unused)
{
    (void)unused;
    log_forget_errors();
    log_set_level(LOG_QUIET);
    log_error("run: update: cannot reach https://t.example.com: timed out");
    log_warn("a warning is not an error line");
    log_error("run: report: the platform said \x07");
    log_event event;
    assert_true(log_run_event_prepare(75, 2, 2, &event));
    assert_string_equal(event.text, "run: update: cannot reach https://t.example.com: timed out\n"
                                    "run: report: the platform said \\x07\n"
                                    "outpost run: exit code 75");
    /* Too many lines: the text is cut, says so, and still ends with the exit code. */
    char long_line[300];
    memset(long_line, 'e', sizeof long_line - 1);
    long_line[sizeof long_line - 1] = '\0';
    for (int i = 0; i < 40; i++)
        log_error("run: %s", long_line);
    assert_true(log_run_event_prepare(1, 1, 1, &event));
    assert_true(strlen(event.text) < sizeof event.text);
    assert_non_null(strstr(event.text, "(more error lines in the log file)\n"));
    const char *tail = "outpost run: exit code 1";
    assert_string_equal(event.text + strlen(event.text) - strlen(tail), tail);
    /* Writing it: a no-op on POSIX, ReportEventW on Windows (wine's stub);
     * neither may fail the caller. */
    log_run_event(1, 1, 1);
    log_forget_errors();
    log_set_level(LOG_NORMAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_are_stamped),
        cmocka_unit_test(test_rotation_keeps_n_files),
        cmocka_unit_test(test_a_failed_rotation_is_said_once_and_lines_go_on),
        cmocka_unit_test(test_torn_last_line_is_ended),
        cmocka_unit_test(test_unopenable_file_changes_nothing),
        cmocka_unit_test(test_event_decisions),
        cmocka_unit_test(test_event_text_is_the_error_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
