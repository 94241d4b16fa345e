/* test_error.c — the error table: exit codes, messages, context prefixes,
 * and the severity order `run` uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "base/error.h"

static void test_exit_codes(void **state)
{
    (void)state;
    assert_int_equal(error_exit_code(ERR_OK), 0);
    assert_int_equal(error_exit_code(ERR_USAGE), 2);
    assert_int_equal(error_exit_code(ERR_CONFIG), 2);
    assert_int_equal(error_exit_code(ERR_AUTH), 3);
    assert_int_equal(error_exit_code(ERR_FORBIDDEN), 3);
    assert_int_equal(error_exit_code(ERR_REJECTED), 4);
    assert_int_equal(error_exit_code(ERR_LOCKED), 5);
    assert_int_equal(error_exit_code(ERR_TEMPORARY), 75);
    assert_int_equal(error_exit_code(ERR_TLS), 1);
    assert_int_equal(error_exit_code(ERR_IO), 1);
    assert_int_equal(error_exit_code((error_code)999), 1);
    assert_string_equal(error_name(ERR_TEMPORARY), "TEMPORARY");
    assert_string_equal(error_meaning((error_code)-1), "unknown error");
}

static void test_messages(void **state)
{
    (void)state;
    error_info err;
    error_clear(&err);
    assert_int_equal(error_set(&err, ERR_PROTOCOL, "field `%s` is not an array", "resources"), ERR_PROTOCOL);
    assert_int_equal(error_prefix(&err, "event-details"), ERR_PROTOCOL);
    assert_string_equal(err.message, "event-details: field `resources` is not an array");
    assert_int_equal(error_set_os(&err, ERR_IO, 28, "disk"), ERR_IO);
    assert_int_equal(err.os_error, 28);
    /* Long messages are truncated, never overflowed. */
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    error_set(&err, ERR_IO, "%s", big);
    error_prefix(&err, "%s", big);
    assert_int_equal(strlen(err.message), ERROR_MESSAGE_MAX - 1);
    assert_int_equal(error_set(NULL, ERR_AUTH, "ignored"), ERR_AUTH);
}

static void test_run_severity_order(void **state)
{
    (void)state;
    /* 4, 3, 1, 75, 0: a rejected installer wins over everything. */
    assert_int_equal(error_worse_exit(0, 75), 75);
    assert_int_equal(error_worse_exit(75, 1), 1);
    assert_int_equal(error_worse_exit(1, 3), 3);
    assert_int_equal(error_worse_exit(3, 4), 4);
    assert_int_equal(error_worse_exit(4, 75), 4);
    assert_int_equal(error_worse_exit(3, 0), 3);
    assert_int_equal(error_worse_exit(1, 75), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_run_severity_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
