/*
 * error.c — the error table's messages and exit codes, and the helpers that
 * fill an error_info as a failure travels up to main.c.
 */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int exit_code;
    const char *meaning;
} error_rows[] = {
#define ERROR_ROW(name, exit_code, meaning) {#name, exit_code, meaning},
    ERROR_TABLE(ERROR_ROW)
#undef ERROR_ROW
};

void error_clear(error_info *err)
{
    if (!err)
        return;
    err->code = ERR_OK;
    err->os_error = 0;
    err->message[0] = '\0';
}

static void error_vset(error_info *err, error_code code, int os_error, const char *fmt, va_list ap)
{
    err->code = code;
    err->os_error = os_error;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
}

error_code error_set(error_info *err, error_code code, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, code, 0, fmt, ap);
    va_end(ap);
    return code;
}

error_code error_set_os(error_info *err, error_code code, int os_error, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, code, os_error, fmt, ap);
    va_end(ap);
    return code;
}

error_code error_prefix(error_info *err, const char *fmt, ...)
{
    if (!err)
        return ERR_OK;
    char context[ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
    /* context + ": " + old message, truncated to fit; built by hand because
     * the truncation is intended and snprintf would warn about it. */
    char joined[ERROR_MESSAGE_MAX];
    size_t used = strlen(context);
    memcpy(joined, context, used + 1);
    if (err->message[0] && used + 2 < sizeof joined) {
        memcpy(joined + used, ": ", 3);
        used += 2;
        size_t rest = strlen(err->message);
        if (rest > sizeof joined - 1 - used)
            rest = sizeof joined - 1 - used;
        memcpy(joined + used, err->message, rest);
        joined[used + rest] = '\0';
    }
    memcpy(err->message, joined, sizeof joined);
    return err->code;
}

static int error_valid(error_code code)
{
    return (int)code >= 0 && code < ERR__COUNT;
}

int error_exit_code(error_code code)
{
    return error_valid(code) ? error_rows[code].exit_code : 1;
}

const char *error_meaning(error_code code)
{
    return error_valid(code) ? error_rows[code].meaning : "unknown error";
}

const char *error_name(error_code code)
{
    return error_valid(code) ? error_rows[code].name : "UNKNOWN";
}

static int exit_rank(int exit_code)
{
    switch (exit_code) {
    case 4: return 5;
    case 3: return 4;
    case 0: return 0;
    case 75: return 2;
    default: return 3; /* 1 and anything unexpected */
    }
}

int error_worse_exit(int a, int b)
{
    return exit_rank(b) > exit_rank(a) ? b : a;
}
