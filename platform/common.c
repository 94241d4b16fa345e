/*
 * common.c — the parts of platform.h whose code is the same on every
 * system, built beside platform/posix/ or platform/win32/ (CMakeLists.txt):
 *  - the errno half of error translation: errno means the same in glibc,
 *    the BSDs' libc and the Windows C runtime, so one table serves every
 *    platform and a full quota is "disk full" on every path. GetLastError()
 *    values, which only Windows has, are translated by win32/error.c
 *    (platform_win32_error_code);
 *  - 64-bit file sizes and offsets over a stdio stream. fseek and ftell
 *    take a `long`, 32 bits on Windows; the 64-bit pair is fseeko/ftello
 *    with a 64-bit off_t on POSIX and _fseeki64/_ftelli64 in the Windows C
 *    runtime, the one difference here. Going through the stream (rather
 *    than pread, or ReadFile with an OVERLAPPED offset, under it) keeps the
 *    FILE coherent on both: its buffer is dropped at each seek, its
 *    position is known, so reads and writes through it may follow, and a
 *    stream without a descriptor (fmemopen, which the fuzzers use) works
 *    as a file does;
 *  - path and file helpers written over the calls above (the directory
 *    part of a path, a temporary name, copying a file), and freeing a list
 *    of names and building one (names.h);
 *  - the shorthands of platform_spawn_with that each side's process.c
 *    implements (platform_spawn, platform_spawn_to_file,
 *    platform_spawn_env);
 *  - freeing what each side's proxy.c answered (platform_proxy_clear).
 * (The CPU's crypto instructions are cpu.c's, beside this file.)
 */
#if !defined(_WIN32) && !defined(_FILE_OFFSET_BITS)
#define _FILE_OFFSET_BITS 64
#endif

#include "platform/platform.h"
#include "platform/names.h"

#include "base/dynbuf.h"
#include "base/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
typedef __int64 file_offset;
#define seek_to(f, offset, whence) _fseeki64((f), (offset), (whence))
#define tell_at(f) _ftelli64(f)
#else
#include <sys/types.h>
typedef off_t file_offset;
#define seek_to(f, offset, whence) fseeko((f), (offset), (whence))
#define tell_at(f) ftello(f)
#endif
_Static_assert(sizeof(file_offset) == 8, "file offsets must be 64-bit");

/* ---- OS errors ----------------------------------------------------------- */

error_code platform_os_error_code(int os_error)
{
    switch (os_error) {
    case ENOSPC:
#ifdef EDQUOT
    case EDQUOT: /* a full quota is a full disk to the user: free space or raise the quota */
#endif
        return ERR_DISK_FULL;
    case ENOENT: return ERR_NOT_FOUND;
    case EACCES:
    case EPERM: return ERR_PERMISSION;
    case ENOMEM: return ERR_NOMEM;
    default: return ERR_IO;
    }
}

const char *platform_os_error_text(int os_error, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    if (os_error == 0) {
        /* A stdio call that failed without saying why (errno untouched). */
        snprintf(buf, size, "the system gave no reason");
        return buf;
    }
#ifdef _WIN32
    /* The C runtime's strerror keeps its text per thread. */
    snprintf(buf, size, "%s", strerror(os_error));
#else
    /* XSI strerror_r: outpost_core is built without _GNU_SOURCE. */
    if (strerror_r(os_error, buf, size) != 0)
        snprintf(buf, size, "error %d", os_error);
#endif
    return buf;
}

static MUST_CHECK error_code os_error_v(error_info *err, int os_error, const char *fmt, va_list ap)
    OUTPOST_PRINTF(3, 0);
static MUST_CHECK error_code os_error_v(error_info *err, int os_error, const char *fmt, va_list ap)
{
    error_code code = platform_os_error_code(os_error);
    if (!err)
        return code;
    char what[ERROR_MESSAGE_MAX];
    vsnprintf(what, sizeof what, fmt, ap);
    char text[128];
    return error_set_os(err, code, os_error, "%s: %s", what, platform_os_error_text(os_error, text, sizeof text));
}

error_code platform_os_error(error_info *err, int os_error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_code code = os_error_v(err, os_error, fmt, ap);
    va_end(ap);
    return code;
}

error_code platform_stdio_error(error_info *err, const char *fmt, ...)
{
    int os_error = errno; /* first, before any call can change it */
    va_list ap;
    va_start(ap, fmt);
    error_code code = os_error_v(err, os_error, fmt, ap);
    va_end(ap);
    return code;
}

/* ---- 64-bit file offsets ------------------------------------------------- */

error_code platform_file_size(FILE *f, uint64_t *size, error_info *err)
{
    file_offset here = tell_at(f);
    if (here < 0 || seek_to(f, 0, SEEK_END) != 0)
        return platform_os_error(err, errno, "cannot find the size of the file");
    file_offset end = tell_at(f);
    int e = errno;
    if (seek_to(f, here, SEEK_SET) != 0)
        return platform_os_error(err, errno, "cannot find the size of the file");
    if (end < 0)
        return platform_os_error(err, e, "cannot find the size of the file");
    *size = (uint64_t)end;
    return ERR_OK;
}

error_code platform_seek(FILE *f, uint64_t offset, error_info *err)
{
    if (offset > (uint64_t)INT64_MAX)
        return platform_os_error(err, EINVAL, "cannot seek to offset %llu", (unsigned long long)offset);
    if (seek_to(f, (file_offset)offset, SEEK_SET) != 0)
        return platform_os_error(err, errno, "cannot seek to offset %llu", (unsigned long long)offset);
    return ERR_OK;
}

error_code platform_read_at(FILE *f, uint64_t offset, void *buf, size_t len, error_info *err)
{
    error_code rc = platform_seek(f, offset, err);
    if (rc != ERR_OK || len == 0)
        return rc;
    errno = 0;
    size_t got = fread(buf, 1, len, f);
    if (got == len)
        return ERR_OK;
    if (ferror(f)) {
        int e = errno;
        clearerr(f); /* the next read says its own reason */
        return platform_os_error(err, e, "cannot read %zu bytes at offset %llu", len, (unsigned long long)offset);
    }
    return error_set(err, ERR_IO, "cannot read %zu bytes at offset %llu: the file ends after %zu of them", len,
                     (unsigned long long)offset, got);
}

/* ---- Paths and whole files ----------------------------------------------- */

static bool is_separator(char c)
{
    return c == '/' || c == platform_path_separator();
}

char *platform_path_dir(const char *path)
{
    const char *last = NULL;
    for (const char *p = path; *p; p++)
        if (is_separator(*p))
            last = p;
    const char *end = last;
    while (end && end > path && is_separator(end[-1]))
        end--;
    size_t len;
    if (!last)
        return text_dup(".");
    if (end == path || (end - path == 2 && path[1] == ':'))
        len = (size_t)(end - path) + 1; /* the root: "/", "C:\" */
    else
        len = (size_t)(end - path);
    char *dir = malloc(len + 1);
    if (!dir)
        return NULL;
    memcpy(dir, path, len);
    dir[len] = '\0';
    return dir;
}

error_code platform_temp_name(const char *path, char **tmp, error_info *err)
{
    *tmp = NULL;
    unsigned char rnd[8];
    error_code rc = platform_random_bytes(rnd, sizeof rnd, err);
    if (rc != ERR_OK)
        return rc;
    char hex[2 * sizeof rnd + 1];
    text_hex(rnd, sizeof rnd, hex);
    size_t size = strlen(path) + sizeof hex + sizeof ".tmp" + 1;
    *tmp = malloc(size);
    if (!*tmp)
        return platform_os_error(err, ENOMEM, "out of memory");
    snprintf(*tmp, size, "%s.%s.tmp", path, hex);
    return ERR_OK;
}

/* One piece, on either platform's platform_atomic_* (same crash points). */
error_code platform_write_atomic(const char *path, const void *data, size_t len, error_info *err)
{
    platform_atomic_file *f = NULL;
    error_code rc = platform_atomic_open(path, false, &f, err);
    if (rc == ERR_OK && (rc = platform_atomic_write(f, data, len, err)) != ERR_OK)
        platform_atomic_abort(f);
    else if (rc == ERR_OK)
        rc = platform_atomic_commit(f, NULL, err);
    return rc;
}

#define COPY_CHUNK (1024 * 1024) /* one hasher slot (installer/verify.c) */
/* Every this many bytes the copy asks the OS to start writing them (a hint,
 * platform_start_writeback): the final fsync of a large file then waits for
 * the last stretch only, instead of for the whole file at once. */
#define COPY_WRITEBACK (8 * 1024 * 1024)

error_code platform_copy_file(const char *from, const char *to,
                              void (*observe)(void *user, const void *data, size_t len), void *user, error_info *err)
{
    FILE *in = platform_fopen(from, "rb");
    if (!in)
        return platform_stdio_error(err, "cannot open %s", from);
    FILE *out = platform_fopen(to, "wb");
    error_code rc = out ? ERR_OK : platform_stdio_error(err, "cannot create %s", to);
    char *buf = rc == ERR_OK ? malloc(COPY_CHUNK) : NULL;
    if (rc == ERR_OK && !buf)
        rc = platform_os_error(err, ENOMEM, "out of memory");
    size_t n = 0;
    uint64_t copied = 0, started = 0; /* bytes written; of those, handed to writeback */
    while (rc == ERR_OK && (n = fread(buf, 1, COPY_CHUNK, in)) > 0) {
        if (observe)
            observe(user, buf, n);
        if (fwrite(buf, 1, n, out) != n)
            rc = platform_stdio_error(err, "cannot write %s", to);
        copied += n;
        if (rc == ERR_OK && copied - started >= COPY_WRITEBACK) {
            platform_start_writeback(out, started, copied - started);
            started = copied;
        }
    }
    if (rc == ERR_OK && ferror(in))
        rc = platform_stdio_error(err, "cannot read %s", from);
    if (rc == ERR_OK)
        rc = platform_fsync_file(out, err);
    if (out && fclose(out) != 0 && rc == ERR_OK)
        rc = platform_stdio_error(err, "cannot write %s", to);
    fclose(in);
    free(buf);
    if (rc != ERR_OK && out)
        ERROR_IGNORE(platform_remove_file(to, NULL));
    return rc;
}

void platform_free_names(char **names, size_t count)
{
    if (!names)
        return;
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

bool platform_names_push(platform_names *names, char *name)
{
    if (!name)
        return false;
    if (names->used == names->cap) {
        size_t cap = names->cap ? names->cap * 2 : 16;
        char **bigger = realloc(names->list, cap * sizeof *bigger);
        if (!bigger) {
            free(name);
            return false;
        }
        names->list = bigger;
        names->cap = cap;
    }
    names->list[names->used++] = name;
    return true;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

error_code platform_names_finish(platform_names *names, error_code rc, bool sort, char ***out, size_t *count)
{
    if (rc != ERR_OK) {
        platform_free_names(names->list, names->used);
    } else {
        if (sort && names->used > 1)
            qsort(names->list, names->used, sizeof *names->list, compare_names);
        *out = names->list;
        *count = names->used;
    }
    *names = (platform_names){0};
    return rc;
}

/* ---- The shorthands of platform_spawn_with ------------------------------- */

error_code platform_spawn(const char *const argv[], int64_t timeout_ms, platform_spawn_result *result, error_info *err)
{
    return platform_spawn_env(argv, NULL, NULL, timeout_ms, result, err);
}

error_code platform_spawn_to_file(const char *const argv[], const char *output_path, int64_t timeout_ms,
                                  platform_spawn_result *result, error_info *err)
{
    return platform_spawn_env(argv, NULL, output_path, timeout_ms, result, err);
}

error_code platform_spawn_env(const char *const argv[], const char *const envp[], const char *output_path,
                              int64_t timeout_ms, platform_spawn_result *result, error_info *err)
{
    platform_spawn_options options = {.envp = envp, .output_path = output_path};
    return platform_spawn_with(argv, &options, timeout_ms, result, err);
}

void platform_proxy_clear(platform_proxy *out)
{
    dynbuf_secret_free(out->proxies);
    free(out->bypass);
    free(out->source);
    memset(out, 0, sizeof *out);
}
