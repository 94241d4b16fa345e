/* log.c — leveled messages on stderr (see log.h). */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

static int current_level = LOG_NORMAL;

void log_set_level(int level)
{
    current_level = level;
}

int log_get_level(void)
{
    return current_level;
}

static void log_line(int level, const char *tag, const char *fmt, va_list ap)
{
    if (current_level < level)
        return;
    fprintf(stderr, "outpost: %s", tag);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line(LOG_NORMAL, "warning: ", fmt, ap);
    va_end(ap);
}

void log_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line(LOG_VERBOSE, "", fmt, ap);
    va_end(ap);
}

void log_trace(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line(LOG_TRACE, "", fmt, ap);
    va_end(ap);
}
