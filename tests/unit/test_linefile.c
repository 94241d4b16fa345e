/* test_linefile.c — the feeds' line file (incidents.jsonl and the others):
 * append, rotation by rename that never splits a line, a torn last line
 * completed, the recovery scan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/linefile.h"

#include "support.h"

static char *tempdir(void)
{
    return support_tempdir("linefile");
}

static void test_append_and_rotate(void **unused)
{
    (void)unused;
    char *dir = tempdir();
    char path[512];
    snprintf(path, sizeof path, "%s/incidents.jsonl", dir);
    linefile_writer *w = NULL;
    assert_int_equal(linefile_open(path, 4096, 2, NULL, &w, NULL), ERR_OK);
    char line[1500];
    for (int i = 0; i < 10; i++) {
        memset(line, 'a' + i, sizeof line);
        assert_int_equal(linefile_append(w, line, sizeof line, NULL), ERR_OK);
    }
    /* 1501 bytes a line, 2 lines per 4096-byte file: 5 files' worth,
     * 4 rotations, 2 rotated files kept. */
    assert_int_equal(linefile_rotations(w), 4);
    assert_int_equal(linefile_close(w, NULL), ERR_OK);
    char name[600];
    const char expect[][2] = {{'i', 'j'}, {'g', 'h'}, {'e', 'f'}};
    for (int n = 0; n < 3; n++) {
        if (n)
            snprintf(name, sizeof name, "%s.%d", path, n);
        const char *text = support_slurp(n ? name : path);
        assert_non_null(text);
        assert_int_equal(strlen(text), 2 * 1501);
        assert_int_equal(text[0], expect[n][0]);
        assert_int_equal(text[1500], '\n');
        assert_int_equal(text[1501], expect[n][1]);
        assert_int_equal(text[3001], '\n');
    }
    snprintf(name, sizeof name, "%s.3", path);
    assert_null(support_slurp(name));
    free(dir);
}

static void test_line_larger_than_the_limit_gets_its_own_file(void **unused)
{
    (void)unused;
    char *dir = tempdir();
    char path[512];
    snprintf(path, sizeof path, "%s/x.jsonl", dir);
    linefile_writer *w = NULL;
    assert_int_equal(linefile_open(path, 4096, 5, NULL, &w, NULL), ERR_OK);
    static char big[6000];
    memset(big, 'b', sizeof big);
    assert_int_equal(linefile_append(w, "{}", 2, NULL), ERR_OK);
    assert_int_equal(linefile_append(w, big, sizeof big, NULL), ERR_OK);
    assert_int_equal(linefile_append(w, "{}", 2, NULL), ERR_OK);
    assert_int_equal(linefile_rotations(w), 2);
    assert_int_equal(linefile_close(w, NULL), ERR_OK);
    assert_string_equal(support_slurp(path), "{}\n");
    free(dir);
}

static int lines_seen;
static void count_line(void *user, const char *line, size_t len)
{
    (void)user;
    (void)line;
    assert_true(len > 0);
    lines_seen++;
}

static void test_torn_line_is_completed_and_skipped_by_scan(void **unused)
{
    (void)unused;
    char *dir = tempdir();
    char path[512];
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    FILE *f = fopen(path, "wb");
    fputs("{\"id\":\"1\"}\n{\"id\":\"2\",\"trunc", f); /* a run killed mid-line */
    fclose(f);
    lines_seen = 0;
    assert_int_equal(linefile_scan(path, 5, 1024, count_line, NULL, NULL), ERR_OK);
    assert_int_equal(lines_seen, 1);
    linefile_writer *w = NULL;
    assert_int_equal(linefile_open(path, 1 << 20, 5, NULL, &w, NULL), ERR_OK);
    assert_int_equal(linefile_append(w, "{\"id\":\"3\"}", 10, NULL), ERR_OK);
    assert_int_equal(linefile_close(w, NULL), ERR_OK);
    assert_string_equal(support_slurp(path), "{\"id\":\"1\"}\n{\"id\":\"2\",\"trunc\n{\"id\":\"3\"}\n");
    lines_seen = 0;
    assert_int_equal(linefile_scan(path, 5, 1024, count_line, NULL, NULL), ERR_OK);
    assert_int_equal(lines_seen, 3);
    free(dir);
}

static size_t longest_seen;
static void longest_line(void *user, const char *line, size_t len)
{
    (void)user;
    assert_int_equal(strlen(line), len);
    lines_seen++;
    longest_seen = len > longest_seen ? len : longest_seen;
}

/* linefile_scan's contract: a line of max_line bytes is read, a longer one is
 * skipped, and the lines after it are read again. */
static void test_scan_skips_lines_longer_than_max_line(void **unused)
{
    (void)unused;
    static const struct {
        size_t max_line;
        size_t lengths[3];
        int seen;
        size_t longest;
    } cases[] = {
        {1024, {1024, 10, 0}, 2, 1024},
        {1024, {1025, 10, 0}, 1, 10},
        {1024, {4000, 1025, 3}, 1, 3},
        {100000, {99999, 100000, 100001}, 2, 100000},
    };
    char *dir = tempdir();
    char path[512];
    snprintf(path, sizeof path, "%s/long.jsonl", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "wb");
        for (size_t k = 0; k < 3; k++) {
            for (size_t n = 0; n < cases[i].lengths[k]; n++)
                fputc('x', f);
            if (cases[i].lengths[k])
                fputc('\n', f);
        }
        fclose(f);
        lines_seen = 0;
        longest_seen = 0;
        assert_int_equal(linefile_scan(path, 0, cases[i].max_line, longest_line, NULL, NULL), ERR_OK);
        if (lines_seen != cases[i].seen || longest_seen != cases[i].longest)
            fail_msg("case %zu: %d lines, longest %zu", i, lines_seen, longest_seen);
    }
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_rotate),
        cmocka_unit_test(test_scan_skips_lines_longer_than_max_line),
        cmocka_unit_test(test_line_larger_than_the_limit_gets_its_own_file),
        cmocka_unit_test(test_torn_line_is_completed_and_skipped_by_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
