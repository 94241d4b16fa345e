/*
 * error.h — outpost's one error vocabulary.
 *
 * Every function that can fail returns an error_code and fills an error_info
 * the caller can print. One table (ERROR_TABLE) gives each code its symbolic
 * name, its short meaning and the process exit code it maps to, so main.c
 * prints the message once and exits with the right number.
 */
#ifndef OUTPOST_ERROR_H
#define OUTPOST_ERROR_H

#include <stddef.h>
#include <stdio.h> /* on mingw-w64 this defines __MINGW_PRINTF_FORMAT */

/*
 * printf-style checking of format strings. mingw-w64 checks against the
 * printf its build uses (gnu_printf with __USE_MINGW_ANSI_STDIO), which is
 * what __MINGW_PRINTF_FORMAT names; plain "printf" there means Microsoft's.
 */
#if defined(__MINGW_PRINTF_FORMAT)
#define OUTPOST_PRINTF(fmt, args) __attribute__((format(__MINGW_PRINTF_FORMAT, fmt, args)))
#elif defined(__GNUC__)
#define OUTPOST_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define OUTPOST_PRINTF(fmt, args)
#endif

/* X(name, exit code, short meaning). Exit codes are PRODUCT.md section 1. */
#define ERROR_TABLE(X)                                                                                                 \
    X(OK, 0, "success")                                                                                                \
    X(USAGE, 2, "usage error")                                                                                         \
    X(CONFIG, 2, "configuration error")                                                                                \
    X(AUTH, 3, "authentication failed")                                                                                \
    X(FORBIDDEN, 3, "permission denied by the platform")                                                               \
    X(REJECTED, 4, "installer rejected by verification")                                                               \
    X(LOCKED, 5, "another instance holds the lock")                                                                    \
    X(TEMPORARY, 75, "temporary failure")                                                                              \
    X(IO, 1, "file system error")                                                                                      \
    X(DISK_FULL, 1, "not enough disk space")                                                                           \
    X(NOMEM, 1, "out of memory")                                                                                       \
    X(TLS, 1, "TLS failure")                                                                                           \
    X(NETWORK, 1, "network error")                                                                                     \
    X(HTTP, 1, "unexpected HTTP answer")                                                                               \
    X(PROTOCOL, 1, "malformed answer from the platform")                                                               \
    X(NOT_FOUND, 1, "not found")                                                                                       \
    X(PERMISSION, 1, "unsafe ownership or permissions")                                                                \
    X(TIMEOUT, 1, "timed out")                                                                                         \
    X(SPAWN, 1, "could not run a program")                                                                             \
    X(NOT_IMPLEMENTED, 1, "not implemented")                                                                           \
    X(INTERNAL, 1, "internal error")

typedef enum {
#define ERROR_ENUM(name, exit_code, meaning) ERR_##name,
    ERROR_TABLE(ERROR_ENUM)
#undef ERROR_ENUM
        ERR__COUNT
} error_code;

/* Marks every function that returns an error_code: a caller that drops the
 * result gets a warning (an error in CI). Where dropping it is the decision
 * (best-effort cleanup after another failure), the call says so with
 * ERROR_IGNORE; GCC does not accept a cast to void for this. error_set and
 * its kin return the code only for convenience and are not marked. */
#if defined(__GNUC__) || defined(__clang__)
#define MUST_CHECK __attribute__((warn_unused_result))
#else
#define MUST_CHECK
#endif
#define ERROR_IGNORE(call)                                                                                             \
    do {                                                                                                               \
        error_code ignored_ = (call);                                                                                  \
        (void)ignored_;                                                                                                \
    } while (0)

#define ERROR_MESSAGE_MAX 512

typedef struct error_info {
    error_code code;                 /* ERR_OK when nothing failed */
    int os_error;                    /* raw errno / GetLastError(), 0 if none */
    char message[ERROR_MESSAGE_MAX]; /* one line: what failed, why, what to do */
} error_info;

/* Resets *err to ERR_OK with an empty message. err may be NULL. */
void error_clear(error_info *err);

/*
 * Sets err->code and formats err->message (printf-style, truncated to fit).
 * Returns code so callers can write `return error_set(err, ERR_IO, ...)`.
 * err may be NULL, in which case only the code is returned.
 */
error_code error_set(error_info *err, error_code code, const char *fmt, ...) OUTPOST_PRINTF(3, 4);

/* As error_set, and records os_error (errno or GetLastError()). */
error_code error_set_os(error_info *err, error_code code, int os_error, const char *fmt, ...) OUTPOST_PRINTF(4, 5);

/*
 * Puts "context: " in front of the existing message, keeping the code.
 * Used as an error travels up ("event-details: " + "field `resources` ...").
 * Returns err->code (ERR_OK if err is NULL).
 */
error_code error_prefix(error_info *err, const char *fmt, ...) OUTPOST_PRINTF(2, 3);

/* Process exit code for code (PRODUCT.md section 1). */
int error_exit_code(error_code code);

/* Short meaning of code ("temporary failure"); never NULL. */
const char *error_meaning(error_code code);

/* Symbolic name without the ERR_ prefix ("TEMPORARY"); never NULL. */
const char *error_name(error_code code);

/*
 * Ranks exit codes for `run`, which reports the most serious outcome:
 * 4, then 3, then 1, then 75, then 0 (PRODUCT.md section 1). Returns the
 * more serious of two exit codes.
 */
int error_worse_exit(int a, int b);

#endif
