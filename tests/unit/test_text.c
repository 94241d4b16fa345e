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
        {"\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"}, /* ANSI colour */
        {"\x1b]0;owned\x07", "\\x1b]0;owned\\x07"},     /* window title */
        {"line one\r\noutpost: forged", "line one\\x0d\\x0aoutpost: forged"},
        {"tab\tkept", "tab\tkept"},
        {"del\x7f", "del\\x7f"},
        {"c1 \xc2\x9b"
         "2J",
         "c1 \\x9b2J"},                                                                     /* U+009B CSI */
        {"C:\\ProgramData\\outpost", "C:\\ProgramData\\outpost"},                           /* paths stay readable */
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

static void test_hex(void **state)
{
    (void)state;
    static const struct {
        const char *bytes;
        size_t n;
        const char *hex;
    } cases[] = {
        {"", 0, ""},
        {"\x00", 1, "00"},
        {"\x0f\xf0", 2, "0ff0"},
        {"\xde\xad\xbe\xef", 4, "deadbeef"}, /* lower case, as digests are compared */
        {"abc", 3, "616263"},
        {"\x01\x23\x45\x67\x89\xab\xcd\xef\xff", 9, "0123456789abcdefff"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        memset(out, 'x', sizeof out);
        text_hex(cases[i].bytes, cases[i].n, out);
        assert_string_equal(out, cases[i].hex);
        assert_int_equal(out[2 * cases[i].n + 1], 'x'); /* nothing written past the NUL */
        /* ... and back, digit by digit, in either case */
        for (size_t j = 0; j < cases[i].n; j++) {
            unsigned char b = (unsigned char)cases[i].bytes[j];
            assert_int_equal(text_hex_value(cases[i].hex[2 * j]) * 16 + text_hex_value(cases[i].hex[2 * j + 1]), b);
        }
    }
    assert_int_equal(text_hex_value('F'), 15);
    assert_int_equal(text_hex_value('g'), -1);
    assert_int_equal(text_hex_value('%'), -1);
}

static void test_url_redact(void **unused)
{
    (void)unused;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"http://user:pa55@mirror.example.com/fleet/", "http://mirror.example.com/fleet/"},
        {"https://user@mirror.example.com:8443/m.json?x=1", "https://mirror.example.com:8443/m.json?x=1"},
        {"https://u:p@ss@host/x", "https://host/x"}, /* an unescaped '@' in the password */
        {"https://host/a@b", "https://host/a@b"},    /* '@' in the path is not user info */
        {"file://server/share/x", "file://server/share/x"},
        {"not a url", "not a url"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = text_url_redact(cases[i].in);
        assert_non_null(out);
        assert_string_equal(out, cases[i].out);
        free(out);
    }
    assert_null(text_url_redact(NULL));
}

static void test_hex_decode(void **state)
{
    (void)state;
    assert_int_equal(text_hex_value('0'), 0);
    assert_int_equal(text_hex_value('9'), 9);
    assert_int_equal(text_hex_value('a'), 10);
    assert_int_equal(text_hex_value('F'), 15);
    assert_int_equal(text_hex_value('g'), -1);
    assert_int_equal(text_hex_value('\0'), -1);
    assert_int_equal(text_hex_value('/'), -1);

    assert_true(text_is_hex("00ff", 4, false));
    assert_true(text_is_hex("00FF", 4, false));
    assert_false(text_is_hex("00FF", 4, true));
    assert_true(text_is_hex("00ff", 4, true));
    assert_false(text_is_hex("00ff", 3, false)); /* exactly len digits */
    assert_false(text_is_hex("00fg", 4, false));
    assert_false(text_is_hex(NULL, 0, false));
    assert_true(text_is_hex("", 0, false));

    unsigned char out[4];
    assert_true(text_unhex("DEADbeef", out, 4));
    assert_memory_equal(out, "\xde\xad\xbe\xef", 4);
    assert_false(text_unhex("de-dbeef", out, 4));
    assert_false(text_unhex("dea", out, 2)); /* too short: the NUL is not a digit */

    /* the round trip with the encoder */
    unsigned char bytes[32];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (unsigned char)(i * 37);
    char hex[65];
    text_hex(bytes, sizeof bytes, hex);
    unsigned char back[32];
    assert_true(text_unhex(hex, back, sizeof back));
    assert_memory_equal(back, bytes, sizeof bytes);
}

/* Digits from the network: at least one, no sign or space, never past the
 * bound (no overflow), *p moved only on success. */
static void test_parse_digits(void **unused)
{
    (void)unused;
    const char *p = "1234x";
    int64_t v = -1;
    assert_true(text_parse_digits(&p, INT64_MAX, &v));
    assert_int_equal(v, 1234);
    assert_string_equal(p, "x");
    p = "9223372036854775807";
    assert_true(text_parse_digits(&p, INT64_MAX, &v));
    assert_int_equal(v, INT64_MAX);
    static const char *const refused[] = {"9223372036854775808", "", "x1", "-1", "+1", " 1"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        p = refused[i];
        v = 7;
        if (text_parse_digits(&p, INT64_MAX, &v) || p != refused[i] || v != 7)
            fail_msg("\"%s\" was taken", refused[i]);
    }
    p = "255";
    assert_true(text_parse_digits(&p, 255, &v));
    p = "256";
    assert_false(text_parse_digits(&p, 255, &v));
    p = "000127";
    assert_true(text_parse_digits(&p, 255, &v));
    assert_int_equal(v, 127);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_controls),
        cmocka_unit_test(test_case_helpers),
        cmocka_unit_test(test_hex),
        cmocka_unit_test(test_url_redact),
        cmocka_unit_test(test_hex_decode),
        cmocka_unit_test(test_parse_digits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
