/* log.c — leveled messages on stderr (see log.h). */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/text.h"

static int current_level = LOG_NORMAL;

void log_set_level(int level)
{
    current_level = level;
}

int log_get_level(void)
{
    return current_level;
}

/* Every line goes out through here, its control characters escaped: an
 * error message often quotes what the platform or a file said. */
static void log_line(int level, const char *tag, const char *fmt, va_list ap)
{
    if (current_level < level)
        return;
    char small[1024];
    va_list again;
    va_copy(again, ap);
    int len = vsnprintf(small, sizeof small, fmt, ap);
    char *text = small;
    if (len >= (int)sizeof small && (text = malloc((size_t)len + 1)) != NULL)
        vsnprintf(text, (size_t)len + 1, fmt, again);
    va_end(again);
    if (len < 0 || !text)
        text = small; /* cannot happen with outpost's formats; print what fitted */
    char *safe = text_escape_controls(text);
    fprintf(stderr, "outpost: %s%s\n", tag, safe ? safe : "(message not shown: out of memory)");
    free(safe);
    if (text != small)
        free(text);
}

void log_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line(LOG_QUIET, "", fmt, ap);
    va_end(ap);
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
