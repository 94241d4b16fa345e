/*
 * crash_point.c — the counter behind crash_point.h, compiled into the test
 * binary outpost-crashpoints only. Portable C: the same file serves the
 * POSIX and the Win32 platform layer.
 *
 * The counter is atomic because the download's writer thread flushes the
 * part file while the main thread may be elsewhere; the points of one run
 * still come in the same order every time (the writer is the only thread
 * that writes while the transfer runs), which is what makes a point's
 * number mean the same state from one run to the next.
 */
#include "platform/crash_point.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "platform/platform.h"

static atomic_ulong reached; /* points counted so far in this process */

/* OUTPOST_CRASH_AFTER as a number; 0 (never) when unset or not a number. */
static unsigned long crash_at(void)
{
    const char *text = platform_getenv("OUTPOST_CRASH_AFTER");
    if (!text || !*text)
        return 0;
    char *end = NULL;
    unsigned long n = strtoul(text, &end, 10);
    return *end == '\0' ? n : 0;
}

/* Appends one line to OUTPOST_CRASH_LOG, opened and closed each time so that
 * the line is in the file (the OS's cache) before the process can end. */
static void log_point(unsigned long n, const char *op, const char *path, bool fatal)
{
    const char *log = platform_getenv("OUTPOST_CRASH_LOG");
    FILE *f = log && *log ? platform_fopen(log, "ab") : NULL;
    if (!f)
        return;
    fprintf(f, "%lu %s %s%s\n", n, op, path ? path : "-", fatal ? " crash" : "");
    fclose(f);
}

void crash_point(const char *op, const char *path)
{
    unsigned long n = atomic_fetch_add(&reached, 1) + 1;
    bool fatal = n == crash_at();
    log_point(n, op, path, fatal);
    if (fatal)
        _Exit(CRASH_POINT_EXIT);
}
