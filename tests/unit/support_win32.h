/*
 * support_win32.h — POSIX calls the unit tests use that MinGW lacks or
 * declares differently, so the same test files build and run under wine.
 *
 * Windows builds only: tests/CMakeLists.txt force-includes this header into
 * every unit test when targeting Windows, and support_win32.c implements it,
 * so test files need no platform conditionals. MinGW's own declarations come
 * first, then the two-argument mkdir and a chmod that also writes group/other
 * read access into the file's DACL (what platform_check_secret_file reads).
 */
#ifndef OUTPOST_SUPPORT_WIN32_H
#define OUTPOST_SUPPORT_WIN32_H

#include <direct.h>
#include <io.h>
#include <sys/stat.h>
#include <sys/types.h>

char *mkdtemp(char *template_path);
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
int test_mkdir(const char *path, int mode);
int test_chmod(const char *path, int mode);
#define mkdir(path, mode) test_mkdir((path), (mode))
#define chmod(path, mode) test_chmod((path), (mode))

#endif
