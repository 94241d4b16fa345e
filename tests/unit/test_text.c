/* test_text.c — the portable string helpers (agent/base/text.c), above all
 * the escaping of control characters before text reaches a terminal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/text.h"

static void test_escape_controls(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"plain text", "plain text"},
        {"", ""},
        {"\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"},           /* ANSI colour */
        {"\x1b]0;owned\x07", "\\x1b]0;owned\\x07"},               /* window title */
        {"line one\r\noutpost: forged", "line one\\x0d\\x0aoutpost: forged"},
        {"tab\tkept", "tab\tkept"},
        {"del\x7f", "del\\x7f"},
        {"c1 \xc2\x9b" "2J", "c1 \\x9b2J"},                        /* U+009B CSI */
        {"C:\\ProgramData\\outpost", "C:\\ProgramData\\outpost"}, /* paths stay readable */
        {"M\xc3\xbcller \xe2\x80\x94 \xc2\xa0ok", "M\xc3\xbcller \xe2\x80\x94 \xc2\xa0ok"}, /* UTF-8 kept */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = text_escape_controls(cases[i].in);
        assert_non_null(got);
        assert_string_equal(got, cases[i].out);
        free(got);
    }
    assert_null(text_escape_controls(NULL));
}

static void test_case_helpers(void **state)
{
    (void)state;
    assert_true(text_equal_nocase("Content-Length", "content-length"));
    assert_false(text_equal_nocase("Content-Length", "content-lengt"));
    assert_true(text_equal_nocase_n("X-Installer-Version: 1", "x-installer-version", 19));
    assert_true(text_starts_with("https://x", "https://"));
    assert_false(text_starts_with("http", "https://"));
    char *copy = text_dup_n("abcdef", 3);
    assert_string_equal(copy, "abc");
    free(copy);
    assert_null(text_dup(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_controls),
        cmocka_unit_test(test_case_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
