/*
 * test_support.h — small portable helpers for the unit tests, so the same
 * test file builds and runs natively, under wine (Windows) and under qemu
 * (arm64): scratch directories and files, environment variables, and making
 * a file private or readable by other users.
 *
 * Header-only (static functions), built on the platform layer where it has
 * what is needed; the few OS calls it makes are here, not in the tests.
 * Paths returned are malloc'd; the caller frees them with free().
 */
#ifndef OUTPOST_TEST_SUPPORT_H
#define OUTPOST_TEST_SUPPORT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"

#ifdef _WIN32
/*
 * POSIX calls the unit tests use that MinGW lacks or declares differently:
 * CMake force-includes this header into every unit test on Windows
 * (tests/CMakeLists.txt), and tests/unit/support_win32.c implements them,
 * so test files need no #ifdef. MinGW's own declarations come first, then
 * the two-argument mkdir and a chmod that also writes group/other read
 * access into the file's DACL (what platform_check_secret_file reads).
 */
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
#else
#include <sys/stat.h>
#endif

/* Where scratch files go: $OUTPOST_TEST_TMP (set by CTest), else the
 * system's temporary directory. */
static inline const char *test_tmp_base(void)
{
    const char *base = getenv("OUTPOST_TEST_TMP");
    if (base && *base)
        return base;
#ifdef _WIN32
    base = getenv("TEMP");
    if (base && *base)
        return base;
    return ".";
#else
    base = getenv("TMPDIR");
    return base && *base ? base : "/tmp";
#endif
}

/* A new, empty directory "<base>/<prefix>-<16 hex digits>"; NULL on failure
 * (with a message on stderr). */
static inline char *test_make_temp_dir(const char *prefix)
{
    error_info err;
    const char *base = test_tmp_base();
    if (platform_mkdirs(base, &err) != ERR_OK) {
        fprintf(stderr, "test_make_temp_dir: %s\n", err.message);
        return NULL;
    }
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned char rnd[8];
        if (platform_random_bytes(rnd, sizeof rnd, &err) != ERR_OK)
            return NULL;
        char name[128];
        snprintf(name, sizeof name, "%s-%02x%02x%02x%02x%02x%02x%02x%02x", prefix, rnd[0], rnd[1], rnd[2], rnd[3],
                 rnd[4], rnd[5], rnd[6], rnd[7]);
        char *dir = platform_path_join(base, name);
        if (!dir)
            return NULL;
        if (platform_path_stat(dir, NULL) == PLATFORM_PATH_NONE && platform_mkdirs(dir, &err) == ERR_OK)
            return dir;
        free(dir);
    }
    fprintf(stderr, "test_make_temp_dir: cannot create a directory under %s\n", base);
    return NULL;
}

/* Writes text to a new file "<dir>/<name>"; returns its path or NULL. */
static inline char *test_write_file(const char *dir, const char *name, const char *text)
{
    char *path = platform_path_join(dir, name);
    if (!path)
        return NULL;
    FILE *f = platform_fopen(path, "wb");
    if (!f || fwrite(text, 1, strlen(text), f) != strlen(text)) {
        if (f)
            fclose(f);
        free(path);
        return NULL;
    }
    if (fclose(f) != 0) {
        free(path);
        return NULL;
    }
    return path;
}

/* setenv(name, value, 1) / unsetenv(name); 0 on success. */
static inline int test_setenv(const char *name, const char *value)
{
    return setenv(name, value, 1);
}

static inline int test_unsetenv(const char *name)
{
    return unsetenv(name);
}

#endif
