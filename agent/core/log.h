/*
 * log.h — what outpost says on stderr while it works.
 *
 * Errors are printed once, by main.c (and run's per-part lines), with
 * log_error; the rest is warnings, progress notes (-v) and request traces
 * (-vv). Every line is "outpost: ..." with control characters escaped
 * (text_escape_controls): messages quote what the network sent. Nothing
 * here may carry a secret: callers never pass the API key or an access
 * token.
 */
#ifndef OUTPOST_LOG_H
#define OUTPOST_LOG_H

#include "base/error.h" /* OUTPOST_PRINTF */

typedef enum {
    LOG_QUIET = -1,   /* errors only (printed by main.c) */
    LOG_NORMAL = 0,   /* warnings */
    LOG_VERBOSE = 1,  /* what outpost is doing */
    LOG_TRACE = 2     /* every request */
} log_level;

void log_set_level(int level);
int log_get_level(void);

/* An error line: printed whatever the level, -q included. */
void log_error(const char *fmt, ...)
    OUTPOST_PRINTF(1, 2);
void log_warn(const char *fmt, ...)
    OUTPOST_PRINTF(1, 2);
void log_info(const char *fmt, ...)
    OUTPOST_PRINTF(1, 2);
void log_trace(const char *fmt, ...)
    OUTPOST_PRINTF(1, 2);
#endif
