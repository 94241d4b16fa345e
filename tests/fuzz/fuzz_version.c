/*
 * fuzz_version.c — libFuzzer target for installer version strings
 * (version.h): validity and ordering. The input is split at its first NUL
 * byte into two versions a and b. Besides memory errors, it checks the
 * properties the staging code relies on: a valid version holds only
 * [0-9A-Za-z.+-], is at most 64 characters and cannot name another
 * directory; comparison is antisymmetric and reflexive.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "installer/version.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_valid(const char *v)
{
    error_info err;
    if (!version_is_valid(v, &err)) {
        if (err.code != ERR_REJECTED || err.message[0] == '\0')
            abort();
        return;
    }
    size_t len = strlen(v);
    if (len == 0 || len > VERSION_MAX_LENGTH ||
        strspn(v, "0123456789abcdefghijklmnopqrstuvwxyz"
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ.+-") != len)
        abort();
    if (v[0] == '.' || strcmp(v, "..") == 0)
        abort();
    if (version_compare(v, v) != 0)
        abort();
}

static int sign(int x)
{
    return (x > 0) - (x < 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 2);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    copy[size + 1] = '\0';
    const char *a = copy;
    const char *b = copy + strlen(copy) + 1; /* "" when there is no NUL */
    check_valid(a);
    check_valid(b);
    if (sign(version_compare(a, b)) != -sign(version_compare(b, a)))
        abort();
    free(copy);
    return 0;
}
