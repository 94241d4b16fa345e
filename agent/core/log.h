/*
 * log.h — what outpost says on stderr while it works.
 *
 * Errors are printed once, by main.c (and run's per-part lines), with
 * log_error; the rest is warnings, progress notes (-v) and request traces
 * (-vv). Every line is "outpost: ..." with control characters escaped
 * (text_escape_controls): messages quote what the network sent. Nothing
 * here may carry a secret: callers never pass the API key or an access
 * token. The same lines go to the log file (log_start) and, for a
 * failed `run`, into its Windows event log entry (log_run_event).
 */
#ifndef OUTPOST_LOG_H
#define OUTPOST_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h" /* OUTPOST_PRINTF */
#include "platform/platform.h"

typedef enum {
    LOG_QUIET = -1,  /* errors only (printed by main.c) */
    LOG_NORMAL = 0,  /* warnings */
    LOG_VERBOSE = 1, /* what outpost is doing */
    LOG_TRACE = 2    /* every request */
} log_level;

void log_set_level(int level);
int log_get_level(void);

/* An error line: printed whatever the level, -q included. */
void log_error(const char *fmt, ...) OUTPOST_PRINTF(1, 2);
void log_warn(const char *fmt, ...) OUTPOST_PRINTF(1, 2);
void log_info(const char *fmt, ...) OUTPOST_PRINTF(1, 2);
void log_trace(const char *fmt, ...) OUTPOST_PRINTF(1, 2);
/* A line whatever the level: its caller has decided (the http trace). */
void log_always(const char *fmt, ...) OUTPOST_PRINTF(1, 2);

/*
 * The log file (log.file, PRODUCT.md section 2), started by main.c once the
 * configuration is read: from then on every line this module writes to
 * stderr is also appended to path (NULL: no file) as
 *
 *   2026-11-23T23:40:00Z run[4242]: <the stderr line without "outpost: ">
 *
 * (UTC, RFC 3339; the command, the process id). The file is opened at the
 * first line, created owner-only, one write per line (a killed process
 * leaves at worst a partial last line, which the next one ends before it
 * writes), and rotated by rename once a line would take it past max_bytes:
 * path.(keep-1) -> path.keep ... path -> path.1, the oldest dropped. If it
 * cannot be opened or written, one warning on stderr says so (whatever -q
 * says) and outpost carries on: a log is never worth failing a run for.
 * command names the lines ("run"); it must outlive log_stop.
 */
void log_start(const char *command, const char *path, int64_t max_bytes, int keep);
void log_stop(void);

/* A line for the log file only (nothing on stderr, whatever the level):
 * the one line every command that writes state leaves there (PRODUCT.md
 * section 10). Nothing when no log file was started. */
void log_file_only(const char *fmt, ...) OUTPOST_PRINTF(1, 2);

/*
 * The Application event log entry of a scheduled run (PRODUCT.md section
 * 10; Windows only, platform_event_log is a no-op elsewhere). The ids are
 * the README's table; Task Scheduler runs `run`, so only `run` writes one.
 */
typedef enum {
    LOG_EVENT_NONE = 0,
    LOG_EVENT_RUN_FAILED = 1000,    /* error: no part succeeded, or run could not start (exit 1-4) */
    LOG_EVENT_RUN_PARTIAL = 1001,   /* error: a part failed, another succeeded (exit 1-4) */
    LOG_EVENT_RUN_TEMPORARY = 1002, /* warning: only temporary failures (exit 75): tried again next time */
    LOG_EVENT_RUN_LOCKED = 1003     /* warning: another outpost held the lock (exit 5) */
} log_event_id;

#define LOG_EVENT_TEXT_MAX 4096

typedef struct log_event {
    log_event_id id;
    platform_event_level level;
    char text[LOG_EVENT_TEXT_MAX]; /* the run's error lines as on stderr, then "exit code N" */
} log_event;

/*
 * Which entry a run that ended with exit_code deserves: parts is how many
 * parts it attempted (0: it did not start: configuration, lock, state
 * directory), failed how many failed. The text is every error line printed
 * since the process started (log_error, without "outpost: "), then
 * "outpost run: exit code N". Returns false (id LOG_EVENT_NONE) when the
 * run succeeded (exit 0, or 3010 asking for a reboot).
 */
bool log_run_event_prepare(int exit_code, int parts, int failed, log_event *event);

/* log_run_event_prepare, then platform_event_log; a failure to write the
 * entry is one warning on stderr, never the run's failure. */
void log_run_event(int exit_code, int parts, int failed);

/* Forgets the error lines remembered for the event text (for tests). */
void log_forget_errors(void);
#endif
