/*
 * crash_point.h — deterministic crash points for the crash tests, as
 * SQLite's crash testing stops its VFS at a chosen I/O call.
 *
 * Every platform function that changes what is on disk (atomic write,
 * rename, fsync, append, removal) calls crash_point() before it acts. In the
 * test binary outpost-crashpoints (built with OUTPOST_CRASH_POINTS, see the
 * top CMakeLists.txt; never the shipped `outpost`) that counts the points
 * reached, and the one numbered OUTPOST_CRASH_AFTER ends the process on the
 * spot with _Exit: no stdio buffer flushed, no atexit handler, no cleanup,
 * what a kill or a power cut leaves as far as the process goes. Everything
 * before that point was done, nothing after it. OUTPOST_CRASH_LOG names a
 * file that gets one line per point reached ("<n> <op> <path>", and "crash"
 * on the fatal one), so a test learns how many points a command has and
 * can say which one broke an invariant. In every other build crash_point()
 * is an empty inline function. tests/integration/test_crash_points.py
 * drives it. agent/ never includes this header.
 */
#ifndef OUTPOST_CRASH_POINT_H
#define OUTPOST_CRASH_POINT_H

/* Exit status of a process stopped at a crash point (no outpost exit code). */
#define CRASH_POINT_EXIT 99

#ifdef OUTPOST_CRASH_POINTS
/* Counts one point: op names the operation ("rename", "fsync", ...), path
 * what it acts on (may be NULL). Does not return at the chosen point. */
void crash_point(const char *op, const char *path);
#else
static inline void crash_point(const char *op, const char *path)
{
    (void)op;
    (void)path;
}
#endif

#endif
