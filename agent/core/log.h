/*
 * log.h — what outpost says on stderr while it works.
 *
 * Errors are printed once by main.c; this is for warnings, progress notes
 * (-v) and request traces (-vv). Nothing here may carry a secret: callers
 * never pass the API key or an access token.
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

void log_warn(const char *fmt, ...)
    OUTPOST_PRINTF(1, 2);
void log_info(const char *fmt, ...)
    OUTPOST_PRINTF(1, 2);
void log_trace(const char *fmt, ...)
    OUTPOST_PRINTF(1, 2);
#endif
