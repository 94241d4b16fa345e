/*
 * log.c — leveled messages on stderr, the log file that repeats them, and
 * the Windows event log entry of a failed run (see log.h).
 *
 * One place writes every line: log_line escapes it once and hands the same
 * text to stderr, to the log file and, for errors, to the memory the event
 * text is built from. The file's state is shared by the report's worker
 * threads, so it sits behind a mutex (created by log_start; before that
 * there is one thread and no file).
 */
#include "core/log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "core/rotation.h"
#include "core/timefmt.h"
#include "platform/platform.h"

static int current_level = LOG_NORMAL;

/* The log file. path NULL: none; broken: it failed once and was said so. */
static struct {
    char *path;
    const char *command;
    int64_t max_bytes;
    int keep;
    platform_append_file *file;
    uint64_t size; /* as far as this process knows */
    bool broken;
    bool rotate_warned;
    platform_mutex *mutex;
} lf;

/* The error lines printed so far, for the event text. */
static char errors_seen[LOG_EVENT_TEXT_MAX - 128]; /* room for the last line */
static size_t errors_len;
static bool errors_truncated;

void log_set_level(int level)
{
    current_level = level;
}

int log_get_level(void)
{
    return current_level;
}

/* Said on stderr only (never into the file being complained about), and
 * whatever the level: the administrator asked for the file. */
static void file_warning(const char *what, const char *why)
{
    fprintf(stderr, "outpost: warning: %s (log.file %s): %s; its lines go to stderr only\n", what, lf.path,
            why[0] ? why : "unknown error");
}

static bool open_file(void)
{
    error_info err;
    error_clear(&err);
    if (platform_append_open(lf.path, &lf.file, &lf.size, &err) != ERR_OK) {
        lf.file = NULL;
        lf.broken = true;
        file_warning("cannot open the log file", err.message);
        return false;
    }
    /* A process killed mid-line left a partial last line: end it, so this
     * run's first line starts on a line of its own. */
    if (lf.size > 0 && !rotation_ends_with_newline(lf.path) && platform_append_write(lf.file, "\n", 1, &err) == ERR_OK)
        lf.size++;
    return true;
}

/* path.(keep-1) -> path.keep, ..., path -> path.1, oldest first, so a crash
 * in between leaves a gap, never a lost newer file. A rotation that fails
 * (another program holds a file open) is said once and not retried by
 * this process; the lines then go on into the current file, past max_bytes. */
static void rotate(void)
{
    platform_append_close(lf.file);
    lf.file = NULL;
    error_info err;
    error_clear(&err);
    if (rotation_shift(lf.path, lf.keep, &err) != ERR_OK) {
        if (!lf.rotate_warned)
            file_warning("cannot rotate the log file", err.message[0] ? err.message : "out of memory");
        lf.rotate_warned = true;
    }
    open_file();
}

/* Appends "<time> <command>[<pid>]: <text>\n" in one write. Under lf.mutex. */
static void file_line(const char *tag, const char *text)
{
    if (!lf.path || lf.broken)
        return;
    if (!lf.file && !open_file())
        return;
    char stamp[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, stamp);
#define LINE_FORMAT "%s %s[%ld]: %s%s\n"
    int len = snprintf(NULL, 0, LINE_FORMAT, stamp, lf.command, platform_process_id(), tag, text);
    char *line = len > 0 ? malloc((size_t)len + 1) : NULL;
    if (!line)
        return;
    snprintf(line, (size_t)len + 1, LINE_FORMAT, stamp, lf.command, platform_process_id(), tag, text);
    /* After a failed rotation, not again in this process: on Windows each
     * attempt waits out the other program's handle. */
    if (lf.size > 0 && lf.size + (uint64_t)len > (uint64_t)lf.max_bytes && !lf.rotate_warned)
        rotate();
    error_info err;
    error_clear(&err);
    if (lf.file && platform_append_write(lf.file, line, (size_t)len, &err) == ERR_OK) {
        lf.size += (uint64_t)len;
    } else if (lf.file) {
        file_warning("cannot write the log file", err.message);
        platform_append_close(lf.file);
        lf.file = NULL;
        lf.broken = true;
    }
    free(line);
#undef LINE_FORMAT
}

/* Remembers an error line for the event text; what does not fit is cut. */
static void remember_error(const char *text)
{
    size_t n = strlen(text);
    size_t room = sizeof errors_seen - errors_len;
    if (n + 2 > room) {
        errors_truncated = true;
        return;
    }
    memcpy(errors_seen + errors_len, text, n);
    errors_len += n;
    errors_seen[errors_len++] = '\n';
    errors_seen[errors_len] = '\0';
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
    const char *shown = safe ? safe : "(message not shown: out of memory)";
    if (lf.mutex)
        platform_mutex_lock(lf.mutex);
    fprintf(stderr, "outpost: %s%s\n", tag, shown);
    file_line(tag, shown);
    if (level == LOG_QUIET)
        remember_error(shown);
    if (lf.mutex)
        platform_mutex_unlock(lf.mutex);
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

void log_always(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* Not LOG_QUIET: that level is the errors, remembered for the event. */
    log_line(LOG_QUIET - 1, "", fmt, ap);
    va_end(ap);
}

void log_file_only(const char *fmt, ...)
{
    if (!lf.path)
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    char *safe = text_escape_controls(text);
    if (lf.mutex)
        platform_mutex_lock(lf.mutex);
    file_line("", safe ? safe : text);
    if (lf.mutex)
        platform_mutex_unlock(lf.mutex);
    free(safe);
}

void log_start(const char *command, const char *path, int64_t max_bytes, int keep)
{
    log_stop();
    lf.command = command ? command : "outpost";
    lf.max_bytes = max_bytes > 0 ? max_bytes : 1024 * 1024;
    lf.keep = keep > 0 ? keep : 1;
    lf.mutex = platform_mutex_new();
    if (path && (lf.path = text_dup(path)) == NULL)
        fprintf(stderr, "outpost: warning: out of memory; no log file\n");
}

void log_stop(void)
{
    platform_append_close(lf.file);
    free(lf.path);
    platform_mutex_free(lf.mutex);
    memset(&lf, 0, sizeof lf);
}

/* ---- The event log ----------------------------------------------------------- */

void log_forget_errors(void)
{
    errors_len = 0;
    errors_seen[0] = '\0';
    errors_truncated = false;
}

bool log_run_event_prepare(int exit_code, int parts, int failed, log_event *event)
{
    memset(event, 0, sizeof *event);
    /* 3010: deployed, a reboot is needed; status and SCCM/Intune say so. */
    if (exit_code == 0 || exit_code == 3010 || (parts > 0 && failed == 0))
        return false;
    if (exit_code == 5) {
        event->id = LOG_EVENT_RUN_LOCKED;
        event->level = PLATFORM_EVENT_WARNING;
    } else if (exit_code == 75) {
        event->id = LOG_EVENT_RUN_TEMPORARY;
        event->level = PLATFORM_EVENT_WARNING;
    } else if (parts > 0 && failed < parts) {
        event->id = LOG_EVENT_RUN_PARTIAL;
        event->level = PLATFORM_EVENT_ERROR;
    } else {
        event->id = LOG_EVENT_RUN_FAILED;
        event->level = PLATFORM_EVENT_ERROR;
    }
    snprintf(event->text, sizeof event->text, "%s%soutpost run: exit code %d", errors_seen,
             errors_truncated ? "(more error lines in the log file)\n" : "", exit_code);
    return true;
}

void log_run_event(int exit_code, int parts, int failed)
{
    log_event event;
    if (!log_run_event_prepare(exit_code, parts, failed, &event))
        return;
    error_info err;
    error_clear(&err);
    if (platform_event_log(event.level, (unsigned)event.id, event.text, &err) != ERR_OK)
        log_warn("cannot write event %d to the system log: %s", (int)event.id, err.message);
}
