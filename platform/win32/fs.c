/*
 * win32.c — the platform layer (platform.h) for Windows 10 / Server 2016 and
 * later: files and atomic replacement, the single-instance lock, clocks and
 * randomness, running programs with a timeout, threads, host facts, the
 * registry's software inventory and the API key file's access list.
 *
 * Layout follows platform.h section by section. Strings are UTF-8 at the
 * interface and UTF-16 underneath: every path goes through widen() before it
 * reaches a ...W function, so non-ASCII paths work whatever the ANSI code
 * page. OS errors are translated once: win_code() maps GetLastError() to an
 * error_code (errno values from the C runtime go through common.c's table),
 * messages carry FormatMessage's text, and the raw value is kept in
 * os_error. Handles are created non-inheritable; platform_spawn hands
 * the child exactly stdin (the null device), stdout and stderr, through an
 * explicit handle list (libraries' handles, Winsock sockets, may be
 * inheritable), and spawns nothing when the list cannot be set.
 *
 * Choices where Windows differs from POSIX (README.md, "Windows notes for
 * administrators", says what they mean for whoever runs outpost):
 *  - the secret file check reads the file's DACL and refuses read access for
 *    Everyone, Authenticated Users, Users, Guests and Anonymous;
 *  - state_dir is created with a protected DACL (SYSTEM, Administrators, the
 *    running user) and a directory is trusted by its owner and DACL
 *    (platform_win32_dir_trusted), where POSIX looks at owner and mode bits;
 *  - the lock is LockFileEx on a byte range past the PID text, so the PID
 *    stays readable while the lock is held;
 *  - renames over a file retry briefly on sharing violations, which virus
 *    scanners and indexers cause by opening fresh files for a moment.
 */
#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0A00 /* Windows 10: GetSystemTimePreciseAsFileTime, handle lists */
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef UNICODE
#define UNICODE
#endif

#include "platform/platform.h"
#include "platform/crash_point.h"
#include "platform/private_dir.h"
#include "platform/win32_error.h"

#include <windows.h>

#include <wincrypt.h>

#include <aclapi.h>
#include <bcrypt.h>
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <knownfolders.h>
#include <process.h>
#include <sddl.h>
#include <shlobj.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#if defined(__x86_64__) || defined(__i386__)
#endif

/* How long a rename waits out another process's open handle on the target
 * (virus scanners, indexers, a log shipper reading status.json). */
#define RENAME_RETRY_MS 2000
/* Longest value read from the registry (characters). */
#define REGISTRY_VALUE_MAX 1024
/* Where the lock's byte range starts: far past the PID text, so readers of
 * the lock file are not blocked by the lock. */
#define LOCK_OFFSET_HIGH 0x7fffffffUL

/* ---- UTF-8 <-> UTF-16 ---------------------------------------------------- */

/* UTF-16 copy of a UTF-8 string; malloc'd. NULL on invalid UTF-8 (errno
 * EINVAL) or out of memory (errno ENOMEM). */
static wchar_t *widen(const char *utf8)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, NULL, 0);
    if (n <= 0) {
        errno = EINVAL;
        return NULL;
    }
    wchar_t *wide = malloc((size_t)n * sizeof *wide);
    if (!wide) {
        errno = ENOMEM;
        return NULL;
    }
    if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, wide, n) != n) {
        free(wide);
        errno = EINVAL;
        return NULL;
    }
    return wide;
}

/* UTF-8 copy of the first len characters of a UTF-16 string (len < 0: up to
 * the NUL); malloc'd, NULL on failure. Unpaired surrogates become U+FFFD. */
static char *narrow_n(const wchar_t *wide, int len)
{
    if (len == 0)
        return strdup("");
    int n = WideCharToMultiByte(CP_UTF8, 0, wide, len, NULL, 0, NULL, NULL);
    if (n <= 0)
        return NULL;
    char *utf8 = malloc((size_t)n + 1);
    if (!utf8)
        return NULL;
    if (WideCharToMultiByte(CP_UTF8, 0, wide, len, utf8, n, NULL, NULL) != n) {
        free(utf8);
        return NULL;
    }
    utf8[n] = '\0';
    return utf8;
}

static char *narrow(const wchar_t *wide)
{
    return narrow_n(wide, (int)wcslen(wide));
}

/* ---- Error translation --------------------------------------------------- */

/* The error_code for a GetLastError() value (platform.h conventions): the
 * Win32 twin of platform_os_error_code's errno table. */
error_code platform_win32_error_code(unsigned long e)
{
    switch (e) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_DRIVE:
    case ERROR_BAD_NETPATH:
    case ERROR_BAD_NET_NAME: return ERR_NOT_FOUND;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL: return ERR_DISK_FULL;
    case ERROR_ACCESS_DENIED:
    case ERROR_PRIVILEGE_NOT_HELD: return ERR_PERMISSION;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY: return ERR_NOMEM;
    default: return ERR_IO;
    }
}

static MUST_CHECK error_code win_code(DWORD e)
{
    return platform_win32_error_code(e);
}

/* The system's text for e, one line without the final period, into buf. */
static const char *win_message(DWORD e, char *buf, size_t size)
{
    wchar_t text[256];
    DWORD n =
        FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e,
                       MAKELANGID(LANG_NEUTRAL, SUBLANG_DEFAULT), text, (DWORD)(sizeof text / sizeof text[0]), NULL);
    while (n > 0 && (text[n - 1] == L'\r' || text[n - 1] == L'\n' || text[n - 1] == L' ' || text[n - 1] == L'.'))
        n--;
    char *utf8 = n > 0 ? narrow_n(text, (int)n) : NULL;
    if (utf8)
        snprintf(buf, size, "%s", utf8);
    else
        snprintf(buf, size, "Windows error %lu", (unsigned long)e);
    free(utf8);
    return buf;
}

/* Fills err with "<what> <path>: <system text>" and the matching code. */
static MUST_CHECK error_code fail_win(error_info *err, DWORD e, const char *what, const char *path)
{
    char text[256];
    return error_set_os(err, win_code(e), (int)e, "%s %s: %s", what, path, win_message(e, text, sizeof text));
}

/* As fail_win but always ERR_IO: for walks and removals, where "not found"
 * would mislead the caller. */
static MUST_CHECK error_code fail_io(error_info *err, DWORD e, const char *what, const char *path)
{
    char text[256];
    return error_set_os(err, ERR_IO, (int)e, "%s %s: %s", what, path, win_message(e, text, sizeof text));
}

static error_code fail_nomem(error_info *err) /* fills err; the code is for convenience */
{
    return error_set_os(err, ERR_NOMEM, ERROR_NOT_ENOUGH_MEMORY, "out of memory");
}

/* widen() for a path, with the error filled in on failure. */
static MUST_CHECK error_code widen_path(const char *path, wchar_t **wide, error_info *err)
{
    *wide = widen(path);
    if (*wide)
        return ERR_OK;
    if (errno == ENOMEM)
        return fail_nomem(err);
    return error_set(err, ERR_IO, "invalid path %s: not valid UTF-8", path);
}

/* ---- Small path helpers -------------------------------------------------- */

static bool is_sep(wchar_t c)
{
    return c == L'\\' || c == L'/';
}

static bool is_sep8(char c)
{
    return c == '\\' || c == '/';
}

/* Directory holding path ("." when it has none); malloc'd, NULL on OOM. */
static wchar_t *parent_dir_w(const wchar_t *path)
{
    size_t len = wcslen(path);
    while (len > 0 && !is_sep(path[len - 1]))
        len--;
    if (len == 0)
        return _wcsdup(L".");
    /* Keep the separator of a root ("C:\", "\") but drop any other. */
    if (len > 1 && !(len == 3 && path[1] == L':'))
        len--;
    wchar_t *dir = malloc((len + 1) * sizeof *dir);
    if (!dir)
        return NULL;
    memcpy(dir, path, len * sizeof *dir);
    dir[len] = L'\0';
    return dir;
}

/* "<dir>\<name>" in UTF-16; malloc'd, NULL on OOM. */
static wchar_t *join_w(const wchar_t *dir, const wchar_t *name)
{
    size_t dir_len = wcslen(dir), name_len = wcslen(name);
    bool need_sep = dir_len > 0 && !is_sep(dir[dir_len - 1]);
    wchar_t *joined = malloc((dir_len + need_sep + name_len + 1) * sizeof *joined);
    if (!joined)
        return NULL;
    memcpy(joined, dir, dir_len * sizeof *joined);
    if (need_sep)
        joined[dir_len] = L'\\';
    memcpy(joined + dir_len + need_sep, name, (name_len + 1) * sizeof *joined);
    return joined;
}

/* MoveFileExW that replaces the target and reaches the disk before
 * returning, retrying while another process briefly holds the target open. */
static BOOL move_replace(const wchar_t *from, const wchar_t *to)
{
    DWORD waited = 0, pause = 10;
    for (;;) {
        if (MoveFileExW(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
            return TRUE;
        DWORD e = GetLastError();
        if ((e != ERROR_ACCESS_DENIED && e != ERROR_SHARING_VIOLATION) || waited >= RENAME_RETRY_MS) {
            SetLastError(e);
            return FALSE;
        }
        Sleep(pause);
        waited += pause;
        if (pause < 200)
            pause *= 2;
    }
}

/* ---- Files --------------------------------------------------------------- */

char platform_path_separator(void)
{
    return '\\';
}

char *platform_path_join(const char *dir, const char *name)
{
    size_t dir_len = strlen(dir);
    size_t name_len = strlen(name);
    bool need_sep = dir_len > 0 && !is_sep8(dir[dir_len - 1]);
    char *joined = malloc(dir_len + need_sep + name_len + 1);
    if (!joined)
        return NULL;
    memcpy(joined, dir, dir_len);
    if (need_sep)
        joined[dir_len] = '\\';
    memcpy(joined + dir_len + need_sep, name, name_len + 1);
    return joined;
}

FILE *platform_fopen_private(const char *path, const char *mode)
{
    /* Created inside state_dir, the file inherits its private access list. */
    return platform_fopen(path, mode);
}

FILE *platform_fopen(const char *path, const char *mode)
{
    wchar_t wmode[16];
    size_t mode_len = strlen(mode);
    if (mode_len + 2 > sizeof wmode / sizeof wmode[0]) {
        errno = EINVAL;
        return NULL;
    }
    for (size_t i = 0; i <= mode_len; i++)
        wmode[i] = (wchar_t)(unsigned char)mode[i];
    wchar_t *wpath = widen(path);
    if (!wpath)
        return NULL;
    /* "N": not inherited by spawned processes (_O_NOINHERIT). Older CRTs that
     * reject the letter get the flag cleared on the handle instead. */
    wmode[mode_len] = L'N';
    wmode[mode_len + 1] = L'\0';
    FILE *f = _wfopen(wpath, wmode);
    if (!f && errno == EINVAL) {
        wmode[mode_len] = L'\0';
        f = _wfopen(wpath, wmode);
    }
    free(wpath);
    if (f) {
        HANDLE h = (HANDLE)_get_osfhandle(_fileno(f));
        if (h != INVALID_HANDLE_VALUE)
            SetHandleInformation(h, HANDLE_FLAG_INHERIT, 0);
    }
    return f;
}

error_code platform_fsync_file(FILE *f, error_info *err)
{
    crash_point("fsync", NULL);
    if (fflush(f) != 0)
        return platform_os_error(err, errno, "cannot write file");
    HANDLE h = (HANDLE)_get_osfhandle(_fileno(f));
    if (h == INVALID_HANDLE_VALUE)
        return error_set(err, ERR_IO, "cannot flush file to disk: no handle");
    /* A pipe or console has nothing to flush to disk. */
    if (GetFileType(h) != FILE_TYPE_DISK)
        return ERR_OK;
    if (!FlushFileBuffers(h)) {
        DWORD e = GetLastError();
        char text[256];
        return error_set_os(err, win_code(e), (int)e, "cannot flush file to disk: %s",
                            win_message(e, text, sizeof text));
    }
    return ERR_OK;
}

/* Windows has no call that starts writing a range without waiting for it:
 * only the stdio buffer is handed over; platform_fsync_file does the rest. */
void platform_start_writeback(FILE *f, uint64_t offset, uint64_t length)
{
    (void)offset;
    (void)length;
    (void)fflush(f);
}

/* NTFS journals the new directory entry; flushing a handle on the
 * directory writes that journal out. A volume or account that cannot
 * (FAT, no write access to the directory) counts as done, as on POSIX. */
error_code platform_sync_parent_dir(const char *path, error_info *err)
{
    crash_point("sync_parent_dir", path);
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    wchar_t *dir = parent_dir_w(wpath);
    free(wpath);
    if (!dir)
        return fail_nomem(err);
    HANDLE h = CreateFileW(dir, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
    free(dir);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND)
            return fail_win(err, e, "cannot flush the directory of", path);
        return ERR_OK;
    }
    if (!FlushFileBuffers(h)) {
        DWORD e = GetLastError();
        if (e != ERROR_ACCESS_DENIED && e != ERROR_INVALID_FUNCTION && e != ERROR_INVALID_PARAMETER &&
            e != ERROR_NOT_SUPPORTED)
            rc = fail_win(err, e, "cannot flush the directory of", path);
    }
    CloseHandle(h);
    return rc;
}

error_code platform_append(FILE *f, const void *data, size_t len, error_info *err)
{
    crash_point("append", NULL);
    const unsigned char *p = data;
    while (len > 0) {
        errno = 0;
        size_t n = fwrite(p, 1, len, f);
        if (n == 0) {
            int e = errno ? errno : EIO;
            return error_set_os(err, e == ENOSPC ? ERR_DISK_FULL : ERR_IO, e, "%s", strerror(e));
        }
        p += n;
        len -= n;
    }
    return ERR_OK;
}

/* Writes all len bytes to h. FALSE with GetLastError() on failure. */
static BOOL write_all(HANDLE h, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len > 0) {
        DWORD chunk = len > (1u << 30) ? (1u << 30) : (DWORD)len;
        DWORD written = 0;
        if (!WriteFile(h, p, chunk, &written, NULL))
            return FALSE;
        if (written == 0) {
            SetLastError(ERROR_WRITE_FAULT);
            return FALSE;
        }
        p += written;
        len -= written;
    }
    return TRUE;
}

/* Creates "<path>.<16 hex digits>.tmp" exclusively; sets *handle and the
 * malloc'd *tmp_path on success. */
static MUST_CHECK error_code open_temp(const wchar_t *wpath, const char *path, HANDLE *handle, wchar_t **tmp_path,
                                       error_info *err)
{
    size_t size = wcslen(wpath) + 1 + 16 + 4 + 1;
    wchar_t *tmp = malloc(size * sizeof *tmp);
    if (!tmp)
        return fail_nomem(err);
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned char rnd[8];
        if (platform_random_bytes(rnd, sizeof rnd, NULL) != ERR_OK) {
            /* Uniqueness, not secrecy, is what matters here. */
            uint64_t v = ((uint64_t)GetCurrentProcessId() << 32) ^ GetTickCount64() ^ (uint64_t)attempt;
            memcpy(rnd, &v, sizeof rnd);
        }
        swprintf(tmp, size, L"%ls.%02x%02x%02x%02x%02x%02x%02x%02x.tmp", wpath, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
                 rnd[5], rnd[6], rnd[7]);
        HANDLE h = CreateFileW(tmp, GENERIC_WRITE | DELETE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
        if (h != INVALID_HANDLE_VALUE) {
            *handle = h;
            *tmp_path = tmp;
            return ERR_OK;
        }
        DWORD e = GetLastError();
        if (e != ERROR_FILE_EXISTS && e != ERROR_ALREADY_EXISTS) {
            free(tmp);
            return fail_win(err, e, "cannot create a temporary file to replace", path);
        }
    }
    free(tmp);
    return error_set(err, ERR_IO, "cannot create a temporary file to replace %s: too many name collisions", path);
}

error_code platform_write_atomic(const char *path, const void *data, size_t len, error_info *err)
{
    wchar_t *wpath = NULL, *tmp = NULL;
    HANDLE h = INVALID_HANDLE_VALUE;
    crash_point("write_atomic", path);
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    rc = open_temp(wpath, path, &h, &tmp, err);
    if (rc != ERR_OK)
        goto cleanup;

    const char *what = NULL;
    DWORD e = 0;
    if (!write_all(h, data, len))
        e = GetLastError(), what = "cannot write";
    else if (!FlushFileBuffers(h))
        e = GetLastError(), what = "cannot flush to disk";
    CloseHandle(h);
    if (!what)
        crash_point("write_atomic_rename", path); /* leaves the flushed temporary file behind */
    if (!what && !move_replace(tmp, wpath))
        e = GetLastError(), what = "cannot rename the temporary file over";
    if (what) {
        DeleteFileW(tmp);
        rc = fail_win(err, e, what, path);
    }

cleanup:
    free(tmp);
    free(wpath);
    return rc;
}

error_code platform_write_new_file(const char *path, const void *data, size_t len, bool owner_only, error_info *err)
{
    crash_point("write_new_file", path);
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* Owner only: a protected DACL (nothing inherited) for the owner, SYSTEM
     * and Administrators; otherwise the folder's inherited permissions. */
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
    PSECURITY_DESCRIPTOR sd = NULL;
    if (owner_only) {
        if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(L"D:P(A;;FA;;;OW)(A;;FA;;;SY)(A;;FA;;;BA)",
                                                                  SDDL_REVISION_1, &sd, NULL)) {
            free(wpath);
            return fail_win(err, GetLastError(), "cannot prepare the permissions of", path);
        }
        sa.lpSecurityDescriptor = sd;
    }
    HANDLE h = CreateFileW(wpath, GENERIC_WRITE, 0, owner_only ? &sa : NULL, CREATE_NEW,
                           FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    if (sd)
        LocalFree(sd);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        free(wpath);
        if (e == ERROR_FILE_EXISTS || e == ERROR_ALREADY_EXISTS)
            return error_set_os(err, ERR_IO, (int)e,
                                "%s already exists; it is not replaced (remove it first, or "
                                "choose another name)",
                                path);
        return fail_win(err, e, "cannot create", path);
    }
    const char *what = NULL;
    DWORD e = 0;
    if (!write_all(h, data, len))
        e = GetLastError(), what = "cannot write";
    else if (!FlushFileBuffers(h))
        e = GetLastError(), what = "cannot flush to disk";
    CloseHandle(h);
    if (what) {
        DeleteFileW(wpath);
        rc = fail_win(err, e, what, path);
    }
    free(wpath);
    return rc;
}

error_code platform_rename(const char *from, const char *to, error_info *err)
{
    crash_point("rename", to);
    wchar_t *wfrom = NULL, *wto = NULL;
    error_code rc = widen_path(from, &wfrom, err);
    if (rc == ERR_OK)
        rc = widen_path(to, &wto, err);
    if (rc == ERR_OK && !move_replace(wfrom, wto)) {
        DWORD e = GetLastError();
        char text[256];
        if (e == ERROR_NOT_SAME_DEVICE)
            rc = error_set_os(err, ERR_IO, (int)e, "cannot rename %s to %s: they are on different volumes", from, to);
        else
            rc = error_set_os(err, win_code(e), (int)e, "cannot rename %s to %s: %s", from, to,
                              win_message(e, text, sizeof text));
    }
    free(wfrom);
    free(wto);
    return rc;
}

/* Reads from h until end of file into a buffer of at most limit bytes (+NUL);
 * one byte past limit proves the file too large. */
static MUST_CHECK error_code read_handle(HANDLE h, const char *path, size_t limit, size_t hint, char **data,
                                         size_t *len, error_info *err)
{
    size_t cap = (hint < limit ? hint : limit) + 1;
    char *buf = malloc(cap);
    if (!buf)
        return fail_nomem(err);
    size_t used = 0;
    for (;;) {
        if (used == cap - 1) {
            if (cap - 1 == limit) {
                /* Full at the cap: one more byte means too large. */
                char probe;
                DWORD got = 0;
                if (!ReadFile(h, &probe, 1, &got, NULL)) {
                    DWORD e = GetLastError();
                    free(buf);
                    return fail_win(err, e, "cannot read", path);
                }
                if (got == 0)
                    break;
                free(buf);
                return error_set(err, ERR_IO, "%s is larger than the limit of %zu bytes", path, limit);
            }
            size_t grow = cap < 65536 ? 65536 : cap;
            size_t room = limit + 1 - cap;
            char *bigger = realloc(buf, cap + (grow < room ? grow : room));
            if (!bigger) {
                free(buf);
                return fail_nomem(err);
            }
            buf = bigger;
            cap += grow < room ? grow : room;
        }
        size_t want = cap - 1 - used;
        DWORD got = 0;
        if (!ReadFile(h, buf + used, want > (1u << 30) ? (1u << 30) : (DWORD)want, &got, NULL)) {
            DWORD e = GetLastError();
            if (e == ERROR_BROKEN_PIPE || e == ERROR_HANDLE_EOF)
                break;
            free(buf);
            return fail_win(err, e, "cannot read", path);
        }
        if (got == 0)
            break;
        used += got;
    }
    buf[used] = '\0';
    *data = buf;
    if (len)
        *len = used;
    return ERR_OK;
}

error_code platform_read_file(const char *path, size_t max_size, char **data, size_t *len, error_info *err)
{
    size_t limit = max_size > SIZE_MAX - 1 ? SIZE_MAX - 1 : max_size;
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs != INVALID_FILE_ATTRIBUTES && (attrs & FILE_ATTRIBUTE_DIRECTORY)) {
        free(wpath);
        return error_set_os(err, ERR_IO, ERROR_DIRECTORY, "cannot read %s: it is a directory", path);
    }
    /* Others may keep reading, writing or renaming the file meanwhile, as
     * POSIX lets them. */
    HANDLE h = CreateFileW(wpath, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_SEQUENTIAL_SCAN, NULL);
    free(wpath);
    if (h == INVALID_HANDLE_VALUE)
        return fail_win(err, GetLastError(), "cannot open", path);
    LARGE_INTEGER size;
    size_t hint = 4096;
    if (GetFileSizeEx(h, &size) && size.QuadPart > 0)
        hint = (uint64_t)size.QuadPart > (uint64_t)limit ? limit : (size_t)size.QuadPart;
    rc = read_handle(h, path, limit, hint, data, len, err);
    CloseHandle(h);
    return rc;
}

/* DeleteFileW that also removes a read-only file (outpost's own files may
 * have been marked read-only by a copy tool). */
static BOOL delete_file(const wchar_t *wpath)
{
    if (DeleteFileW(wpath))
        return TRUE;
    DWORD e = GetLastError();
    if (e != ERROR_ACCESS_DENIED)
        return FALSE;
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs == INVALID_FILE_ATTRIBUTES || !(attrs & FILE_ATTRIBUTE_READONLY)) {
        SetLastError(e);
        return FALSE;
    }
    SetFileAttributesW(wpath, attrs & ~(DWORD)FILE_ATTRIBUTE_READONLY);
    return DeleteFileW(wpath);
}

error_code platform_remove_file(const char *path, error_info *err)
{
    crash_point("remove", path);
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    if (!delete_file(wpath)) {
        DWORD e = GetLastError();
        if (e != ERROR_FILE_NOT_FOUND && e != ERROR_PATH_NOT_FOUND)
            rc = fail_io(err, e, "cannot remove", path);
    }
    free(wpath);
    return rc;
}

/*
 * Removes what is inside directory wdir (path: the UTF-8 form for
 * messages). A reparse point (symbolic link, junction, mount point) is
 * removed itself and never entered, so the walk cannot leave the tree.
 */
static MUST_CHECK error_code empty_dir(const wchar_t *wdir, const char *path, error_info *err)
{
    wchar_t *pattern = join_w(wdir, L"*");
    if (!pattern)
        return fail_nomem(err);
    WIN32_FIND_DATAW fd;
    HANDLE find = FindFirstFileExW(pattern, FindExInfoBasic, &fd, FindExSearchNameMatch, NULL, 0);
    free(pattern);
    if (find == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        return e == ERROR_FILE_NOT_FOUND ? ERR_OK : fail_io(err, e, "cannot list", path);
    }
    error_code rc = ERR_OK;
    do {
        if (wcscmp(fd.cFileName, L".") == 0 || wcscmp(fd.cFileName, L"..") == 0)
            continue;
        wchar_t *child = join_w(wdir, fd.cFileName);
        if (!child) {
            rc = fail_nomem(err);
            break;
        }
        DWORD attrs = fd.dwFileAttributes;
        crash_point("remove_tree_entry", path); /* a half-removed tree is a state of its own */
        BOOL ok;
        if (attrs & FILE_ATTRIBUTE_DIRECTORY) {
            if (!(attrs & FILE_ATTRIBUTE_REPARSE_POINT))
                rc = empty_dir(child, path, err);
            ok = rc == ERR_OK && RemoveDirectoryW(child);
        } else {
            ok = delete_file(child);
        }
        if (rc == ERR_OK && !ok) {
            DWORD e = GetLastError();
            if (e != ERROR_FILE_NOT_FOUND && e != ERROR_PATH_NOT_FOUND) {
                char *name = narrow(child);
                rc = fail_io(err, e, "cannot remove", name ? name : path);
                free(name);
            }
        }
        free(child);
    } while (rc == ERR_OK && FindNextFileW(find, &fd));
    if (rc == ERR_OK && GetLastError() != ERROR_NO_MORE_FILES)
        rc = fail_io(err, GetLastError(), "cannot list", path);
    FindClose(find);
    return rc;
}

error_code platform_remove_tree(const char *path, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs == INVALID_FILE_ATTRIBUTES) {
        DWORD e = GetLastError();
        if (e != ERROR_FILE_NOT_FOUND && e != ERROR_PATH_NOT_FOUND)
            rc = fail_io(err, e, "cannot remove", path);
    } else if (!(attrs & FILE_ATTRIBUTE_DIRECTORY)) {
        crash_point("remove", path);
        if (!delete_file(wpath))
            rc = fail_io(err, GetLastError(), "cannot remove", path);
    } else {
        crash_point("remove_tree", path);
        /* A link to a directory: remove the link, not what it points to. */
        if (!(attrs & FILE_ATTRIBUTE_REPARSE_POINT))
            rc = empty_dir(wpath, path, err);
        if (rc == ERR_OK && !RemoveDirectoryW(wpath) && GetLastError() != ERROR_FILE_NOT_FOUND)
            rc = fail_io(err, GetLastError(), "cannot remove", path);
    }
    free(wpath);
    return rc;
}

/* Length of the part of path that names a root and is never created: "C:\",
 * "\\server\share\", "\\?\C:\", or a leading "\". */
static size_t root_length(const wchar_t *p)
{
    if (wcsncmp(p, L"\\\\?\\", 4) == 0 || wcsncmp(p, L"\\\\.\\", 4) == 0) {
        size_t n = 4;
        if (p[n] && p[n + 1] == L':')
            return p[n + 2] ? n + 3 : n + 2;
        while (p[n] && !is_sep(p[n]))
            n++;
        return p[n] ? n + 1 : n;
    }
    if (is_sep(p[0]) && is_sep(p[1])) { /* \\server\share\ */
        size_t n = 2;
        for (int parts = 0; parts < 2 && p[n]; parts++) {
            while (p[n] && !is_sep(p[n]))
                n++;
            if (p[n])
                n++;
        }
        return n;
    }
    if (p[0] && p[1] == L':')
        return is_sep(p[2]) ? 3 : 2;
    return is_sep(p[0]) ? 1 : 0;
}

/* CreateDirectoryW of one level with security sa (NULL: inherited from the
 * parent): success if it now exists as a directory. */
static MUST_CHECK error_code mkdir_one(const wchar_t *dir, const char *full, SECURITY_ATTRIBUTES *sa, error_info *err)
{
    if (CreateDirectoryW(dir, sa))
        return ERR_OK;
    DWORD e = GetLastError();
    DWORD attrs = GetFileAttributesW(dir);
    if (attrs != INVALID_FILE_ATTRIBUTES) {
        if (attrs & FILE_ATTRIBUTE_DIRECTORY)
            return ERR_OK;
        char *name = narrow(dir);
        error_code rc =
            error_set_os(err, ERR_IO, ERROR_ALREADY_EXISTS,
                         "cannot create directory %s: %s exists and is not a directory", full, name ? name : full);
        free(name);
        return rc;
    }
    /* Parents are made first: a missing one here is a race, not "not found". */
    error_code code = win_code(e) == ERR_NOT_FOUND ? ERR_IO : win_code(e);
    char text[256];
    return error_set_os(err, code, (int)e, "cannot create directory %s: %s", full, win_message(e, text, sizeof text));
}

/* platform_mkdirs, every new level created with security sa. */
static MUST_CHECK error_code mkdirs_with(const char *path, SECURITY_ATTRIBUTES *sa, error_info *err)
{
    if (path[0] == '\0')
        return error_set(err, ERR_IO, "cannot create a directory with an empty name");
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* Create each prefix ending at a separator (after the root), then the
     * whole path. */
    size_t start = root_length(wpath);
    for (wchar_t *p = wpath + start;; p++) {
        if (*p != L'\0' && !is_sep(*p))
            continue;
        if (p == wpath + start || is_sep(p[-1])) {
            if (*p == L'\0')
                break;
            continue; /* "a\\b" or a trailing separator: nothing new */
        }
        wchar_t saved = *p;
        *p = L'\0';
        rc = mkdir_one(wpath, path, sa, err);
        *p = saved;
        if (rc != ERR_OK || saved == L'\0')
            break;
    }
    free(wpath);
    return rc;
}

error_code platform_mkdirs(const char *path, error_info *err)
{
    return mkdirs_with(path, NULL, err);
}

/* The SID of the user this process runs as (the token's user), malloc'd;
 * NULL on failure. */
static PSID current_user_sid(void)
{
    HANDLE token = NULL;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token))
        return NULL;
    DWORD size = 0;
    GetTokenInformation(token, TokenUser, NULL, 0, &size);
    TOKEN_USER *info = size ? malloc(size) : NULL;
    PSID sid = NULL;
    if (info && GetTokenInformation(token, TokenUser, info, size, &size)) {
        DWORD len = GetLengthSid(info->User.Sid);
        sid = malloc(len);
        if (sid && !CopySid(len, sid, info->User.Sid)) {
            free(sid);
            sid = NULL;
        }
    }
    free(info);
    CloseHandle(token);
    return sid;
}

/* The private directory's security descriptor (platform_mkdirs_private):
 * *sd is LocalFree'd by the caller. what names the operation for errors. */
static MUST_CHECK error_code private_dir_sd(const char *path, const char *what, PSECURITY_DESCRIPTOR *sd,
                                            error_info *err)
{
    /* P: protected, nothing inherited from the parent; OICI: what is created
     * below inherits the same three entries. The user running outpost is
     * named too, so a non-elevated run can use what it creates; as SYSTEM
     * that entry is the SYSTEM one again and is left out. */
    PSID user = current_user_sid();
    if (!user)
        return error_set_os(err, ERR_IO, (int)GetLastError(), "%s %s: cannot read the user this process runs as", what,
                            path);
    wchar_t *user_text = NULL;
    BOOL ok = ConvertSidToStringSidW(user, &user_text);
    free(user);
    if (!ok)
        return error_set_os(err, ERR_IO, (int)GetLastError(), "%s %s: cannot name its owner", what, path);
    wchar_t sddl[256];
    if (wcscmp(user_text, L"S-1-5-18") == 0)
        swprintf(sddl, sizeof sddl / sizeof sddl[0], L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)");
    else
        swprintf(sddl, sizeof sddl / sizeof sddl[0], L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;%ls)",
                 user_text);
    LocalFree(user_text);
    if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1, sd, NULL))
        return error_set_os(err, ERR_IO, (int)GetLastError(), "%s %s: cannot build its access list", what, path);
    return ERR_OK;
}

error_code platform_mkdirs_private(const char *path, error_info *err)
{
    PSECURITY_DESCRIPTOR sd = NULL;
    error_code rc = private_dir_sd(path, "cannot create directory", &sd, err);
    if (rc != ERR_OK)
        return rc;
    SECURITY_ATTRIBUTES sa = {sizeof sa, sd, FALSE};
    rc = mkdirs_with(path, &sa, err);
    LocalFree(sd);
    return rc;
}

/* Enables the privilege name in this process's token when the token holds
 * it (an elevated administrator's does, disabled); anything else is ignored. */
static void enable_privilege(const wchar_t *name)
{
    HANDLE token = NULL;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &token))
        return;
    TOKEN_PRIVILEGES tp;
    memset(&tp, 0, sizeof tp);
    tp.PrivilegeCount = 1;
    tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
    if (LookupPrivilegeValueW(NULL, name, &tp.Privileges[0].Luid))
        (void)AdjustTokenPrivileges(token, FALSE, &tp, 0, NULL, NULL);
    CloseHandle(token);
}

/*
 * Everything below dir: owned by owner (NULL: left as it is) and stripped
 * of its explicit entries, so that it keeps only what it inherits from
 * dir's protected list: what TreeSetNamedSecurityInfoW does with
 * TREE_SEC_INFO_RESET, walked here because wine does not implement that
 * call (the MSI test runs `service install` under wine). A reparse point
 * is neither followed nor changed: platform_check_private_dir refuses it.
 */
static DWORD reset_children(const wchar_t *dir, PSID owner, PACL empty, int depth)
{
    if (depth > 64)
        return ERROR_CANT_RESOLVE_FILENAME;
    size_t n = wcslen(dir);
    wchar_t *pattern = malloc((n + 3) * sizeof *pattern);
    if (!pattern)
        return ERROR_NOT_ENOUGH_MEMORY;
    wcscpy(pattern, dir);
    wcscat(pattern, L"\\*");
    WIN32_FIND_DATAW found;
    HANDLE h = FindFirstFileW(pattern, &found);
    free(pattern);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        return e == ERROR_FILE_NOT_FOUND || e == ERROR_NO_MORE_FILES ? ERROR_SUCCESS : e;
    }
    DWORD e = ERROR_SUCCESS;
    do {
        if (wcscmp(found.cFileName, L".") == 0 || wcscmp(found.cFileName, L"..") == 0 ||
            (found.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT))
            continue;
        wchar_t *child = malloc((n + 2 + wcslen(found.cFileName)) * sizeof *child);
        if (!child) {
            e = ERROR_NOT_ENOUGH_MEMORY;
            break;
        }
        wcscpy(child, dir);
        wcscat(child, L"\\");
        wcscat(child, found.cFileName);
        SECURITY_INFORMATION what = DACL_SECURITY_INFORMATION | UNPROTECTED_DACL_SECURITY_INFORMATION;
        if (owner)
            what |= OWNER_SECURITY_INFORMATION;
        e = SetNamedSecurityInfoW(child, SE_FILE_OBJECT, what, owner, NULL, empty, NULL);
        if (e == ERROR_SUCCESS && (found.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
            e = reset_children(child, owner, empty, depth + 1);
        free(child);
    } while (e == ERROR_SUCCESS && FindNextFileW(h, &found));
    if (e == ERROR_SUCCESS && GetLastError() != ERROR_NO_MORE_FILES)
        e = GetLastError();
    FindClose(h);
    return e;
}

/* The directory gets owner (NULL: left as it is) and the protected list
 * dacl; everything below it is reset to inherit that list. */
static DWORD protect_tree(const wchar_t *dir, PSID owner, PACL dacl)
{
    ACL empty;
    if (!InitializeAcl(&empty, sizeof empty, ACL_REVISION))
        return GetLastError();
    SECURITY_INFORMATION what = DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION;
    if (owner)
        what |= OWNER_SECURITY_INFORMATION;
    DWORD e = SetNamedSecurityInfoW((LPWSTR)dir, SE_FILE_OBJECT, what, owner, NULL, dacl, NULL);
    return e == ERROR_SUCCESS ? reset_children(dir, owner, &empty, 0) : e;
}

error_code platform_make_private_dir(const char *path, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    PSECURITY_DESCRIPTOR sd = NULL;
    rc = private_dir_sd(path, "cannot make directory private:", &sd, err);
    if (rc != ERR_OK) {
        free(wpath);
        return rc;
    }
    BOOL present = FALSE, defaulted = FALSE;
    PACL dacl = NULL;
    PSID admins = NULL;
    DWORD e = ERROR_SUCCESS;
    if (!GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted) ||
        !ConvertStringSidToSidW(L"S-1-5-32-544", &admins)) {
        e = GetLastError();
    } else {
        /* Whatever a user planted inside (a file the MSI keeps, say) must
         * stop being theirs: an owner can always rewrite its access list.
         * Taking ownership of a file whose list shuts out Administrators
         * needs these two privileges, which an elevated token holds but
         * has not enabled. */
        enable_privilege(L"SeTakeOwnershipPrivilege");
        enable_privilege(L"SeRestorePrivilege");
        /* The directory: owned by Administrators, PROTECTED (the parent's
         * entries stop applying). Everything below: the same owner, its
         * explicit entries dropped, so each child keeps only what it
         * inherits from this protected list (protect_tree). */
        e = protect_tree(wpath, admins, dacl);
        /* Not elevated enough to take ownership: the access list still
         * goes on, and platform_check_private_dir judges the owners. */
        if (e == ERROR_ACCESS_DENIED || e == ERROR_INVALID_OWNER || e == ERROR_PRIVILEGE_NOT_HELD)
            e = protect_tree(wpath, NULL, dacl);
    }
    LocalFree(admins);
    LocalFree(sd);
    free(wpath);
    if (e != ERROR_SUCCESS)
        return fail_win(err, e, "cannot set the access list of", path);
    return ERR_OK;
}

platform_path_kind platform_path_stat(const char *path, uint64_t *size)
{
    wchar_t *wpath = widen(path);
    if (!wpath)
        return PLATFORM_PATH_NONE;
    WIN32_FILE_ATTRIBUTE_DATA data;
    BOOL ok = GetFileAttributesExW(wpath, GetFileExInfoStandard, &data);
    free(wpath);
    if (!ok)
        return PLATFORM_PATH_NONE;
    if (data.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
        return PLATFORM_PATH_OTHER;
    if (data.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
        return PLATFORM_PATH_DIR;
    if (data.dwFileAttributes & FILE_ATTRIBUTE_DEVICE)
        return PLATFORM_PATH_OTHER;
    if (size)
        *size = ((uint64_t)data.nFileSizeHigh << 32) | data.nFileSizeLow;
    return PLATFORM_PATH_FILE;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void platform_free_names(char **names, size_t count)
{
    if (!names)
        return;
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

/* Appends a copy of name to *list (growing it). */
static MUST_CHECK error_code names_append(char ***list, size_t *used, size_t *cap, const wchar_t *name, error_info *err)
{
    if (*used == *cap) {
        size_t new_cap = *cap ? *cap * 2 : 16;
        char **bigger = realloc(*list, new_cap * sizeof **list);
        if (!bigger)
            return fail_nomem(err);
        *list = bigger;
        *cap = new_cap;
    }
    char *copy = narrow(name);
    if (!copy)
        return fail_nomem(err);
    (*list)[(*used)++] = copy;
    return ERR_OK;
}

error_code platform_list_dir(const char *path, char ***names, size_t *count, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs == INVALID_FILE_ATTRIBUTES) {
        rc = fail_win(err, GetLastError(), "cannot list", path);
        free(wpath);
        return rc;
    }
    if (!(attrs & FILE_ATTRIBUTE_DIRECTORY)) {
        free(wpath);
        return error_set_os(err, ERR_IO, ERROR_DIRECTORY, "cannot list %s: not a directory", path);
    }
    wchar_t *pattern = join_w(wpath, L"*");
    free(wpath);
    if (!pattern)
        return fail_nomem(err);
    WIN32_FIND_DATAW fd;
    HANDLE find = FindFirstFileExW(pattern, FindExInfoBasic, &fd, FindExSearchNameMatch, NULL, 0);
    free(pattern);
    char **list = NULL;
    size_t used = 0, cap = 0;
    if (find == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        if (e != ERROR_FILE_NOT_FOUND)
            return fail_win(err, e, "cannot list", path);
    } else {
        do {
            if (wcscmp(fd.cFileName, L".") == 0 || wcscmp(fd.cFileName, L"..") == 0)
                continue;
            rc = names_append(&list, &used, &cap, fd.cFileName, err);
        } while (rc == ERR_OK && FindNextFileW(find, &fd));
        if (rc == ERR_OK && GetLastError() != ERROR_NO_MORE_FILES)
            rc = fail_io(err, GetLastError(), "cannot list", path);
        FindClose(find);
    }
    if (rc != ERR_OK) {
        platform_free_names(list, used);
        return rc;
    }
    if (used > 1)
        qsort(list, used, sizeof *list, compare_names);
    *names = list;
    *count = used;
    return ERR_OK;
}

error_code platform_free_space(const char *path, uint64_t *bytes, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    ULARGE_INTEGER avail;
    BOOL ok = GetDiskFreeSpaceExW(wpath, &avail, NULL, NULL);
    if (!ok) {
        /* It wants a directory; statvfs accepts a file too. */
        wchar_t *dir = parent_dir_w(wpath);
        ok = dir && GetDiskFreeSpaceExW(dir, &avail, NULL, NULL);
        free(dir);
    }
    if (ok)
        *bytes = avail.QuadPart;
    else
        rc = fail_win(err, GetLastError(), "cannot read the free space of", path);
    free(wpath);
    return rc;
}

/* ---- The API key file's access list -------------------------------------- */

/* Groups whose read access makes a secret readable by other users. */
static const struct {
    const char *sid;  /* string SID: language-independent */
    const char *name; /* what an administrator sees in the Security tab */
} broad_groups[] = {
    {"S-1-1-0", "Everyone"},    {"S-1-5-11", "Authenticated Users"}, {"S-1-5-32-545", "Users"},
    {"S-1-5-32-546", "Guests"}, {"S-1-5-7", "ANONYMOUS LOGON"},
};
#define BROAD_GROUPS (sizeof broad_groups / sizeof broad_groups[0])

/* Access rights that let a holder read the file's content. */
#define READ_RIGHTS (FILE_READ_DATA | GENERIC_READ | GENERIC_ALL | MAXIMUM_ALLOWED)

/*
 * Walks the DACL in order, as Windows evaluates it, for the broad groups
 * only: a deny ACE for a group (or for Everyone, which contains them all)
 * seen before an allow ACE cancels it. Returns the index of the first group
 * an allow ACE grants read access to, or -1. Inherit-only ACEs do not apply
 * to the file itself.
 */
static int dacl_broad_reader(ACL *dacl, PSID sids[BROAD_GROUPS])
{
    bool denied[BROAD_GROUPS] = {false};
    for (DWORD i = 0; i < dacl->AceCount; i++) {
        ACE_HEADER *ace;
        if (!GetAce(dacl, i, (void **)&ace) || (ace->AceFlags & INHERIT_ONLY_ACE))
            continue;
        ACCESS_MASK mask;
        PSID sid;
        if (ace->AceType == ACCESS_ALLOWED_ACE_TYPE) {
            mask = ((ACCESS_ALLOWED_ACE *)ace)->Mask;
            sid = &((ACCESS_ALLOWED_ACE *)ace)->SidStart;
        } else if (ace->AceType == ACCESS_DENIED_ACE_TYPE) {
            mask = ((ACCESS_DENIED_ACE *)ace)->Mask;
            sid = &((ACCESS_DENIED_ACE *)ace)->SidStart;
        } else {
            continue;
        }
        if (!(mask & READ_RIGHTS))
            continue;
        for (size_t g = 0; g < BROAD_GROUPS; g++) {
            if (!sids[g] || !EqualSid(sid, sids[g]))
                continue;
            if (ace->AceType == ACCESS_DENIED_ACE_TYPE) {
                if (g == 0) /* Everyone */
                    memset(denied, 1, sizeof denied);
                denied[g] = true;
            } else if (!denied[g]) {
                return (int)g;
            }
        }
    }
    return -1;
}

/*
 * Windows has no mode bits: a file's DACL decides who may read it. The key
 * is refused when an allow ACE gives read access to a group that holds
 * other users (the list above); named accounts, SYSTEM and Administrators
 * are the owner's business. A missing DACL (NULL) grants everyone everything.
 */
error_code platform_check_secret_file(const char *path, error_info *err)
{
    wchar_t *wpath = widen(path);
    if (!wpath)
        return error_set(err, ERR_CONFIG, "API key file %s: the path is not valid UTF-8", path);
    error_code rc = ERR_OK;
    PSECURITY_DESCRIPTOR sd = NULL;
    PSID sids[BROAD_GROUPS] = {NULL};
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs == INVALID_FILE_ATTRIBUTES) {
        DWORD e = GetLastError();
        char text[256];
        if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND)
            rc = error_set_os(err, ERR_CONFIG, (int)e, "API key file %s does not exist", path);
        else
            rc = error_set_os(err, ERR_CONFIG, (int)e, "cannot read API key file %s: %s", path,
                              win_message(e, text, sizeof text));
        goto cleanup;
    }
    if (attrs & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE)) {
        rc = error_set(err, ERR_CONFIG, "API key file %s is not a regular file", path);
        goto cleanup;
    }
    ACL *dacl = NULL;
    DWORD e = GetNamedSecurityInfoW(wpath, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, &dacl, NULL, &sd);
    if (e != ERROR_SUCCESS) {
        char text[256];
        rc = error_set_os(err, ERR_CONFIG, (int)e, "cannot read the permissions of API key file %s: %s", path,
                          win_message(e, text, sizeof text));
        goto cleanup;
    }
    int reader = -1;
    if (!dacl) {
        reader = 0;
    } else {
        for (size_t g = 0; g < BROAD_GROUPS; g++)
            if (!ConvertStringSidToSidA(broad_groups[g].sid, &sids[g]))
                sids[g] = NULL;
        reader = dacl_broad_reader(dacl, sids);
    }
    if (reader >= 0)
        rc = error_set(err, ERR_CONFIG,
                       "API key file %s is readable by %s; run: icacls \"%s\" /inheritance:r /grant:r "
                       "*S-1-5-18:F *S-1-5-32-544:F \"%%USERNAME%%:R\"",
                       path, broad_groups[reader].name, path);
    else /* its owner, writers and path as for every trusted file */
        rc = platform_check_trusted_file("API key file", path, false, err);

cleanup:
    for (size_t g = 0; g < BROAD_GROUPS; g++)
        LocalFree(sids[g]);
    LocalFree(sd);
    free(wpath);
    return rc;
}

/* ---- Private directories ------------------------------------------------- */

/* Rights that let a holder put, replace or remove something in a directory,
 * or give itself those rights. */
#define DIR_WRITE_RIGHTS                                                                                               \
    (FILE_ADD_FILE | FILE_ADD_SUBDIRECTORY | FILE_DELETE_CHILD | DELETE | WRITE_DAC | WRITE_OWNER | GENERIC_WRITE |    \
     GENERIC_ALL | MAXIMUM_ALLOWED)

/* Principals at least as privileged as outpost's service account. */
static const char *const trusted_sids[] = {
    "S-1-5-18",                                                       /* SYSTEM */
    "S-1-5-32-544",                                                   /* Administrators */
    "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464", /* TrustedInstaller */
};
#define TRUSTED_SIDS (sizeof trusted_sids / sizeof trusted_sids[0])

/* Whether sid is one of trusted_sids, or user. */
static bool sid_is_trusted(PSID sid, PSID user)
{
    if (user && EqualSid(sid, user))
        return true;
    for (size_t i = 0; i < TRUSTED_SIDS; i++) {
        PSID known = NULL;
        if (!ConvertStringSidToSidA(trusted_sids[i], &known))
            continue;
        bool same = EqualSid(sid, known);
        LocalFree(known);
        if (same)
            return true;
    }
    return false;
}

/* Whether sid is the well-known SID in text (string form). */
static bool sid_is(PSID sid, const char *text)
{
    PSID known = NULL;
    if (!ConvertStringSidToSidA(text, &known))
        return false;
    bool same = EqualSid(sid, known);
    LocalFree(known);
    return same;
}

/* "Users (S-1-5-32-545)" for a broad group, else the SID's string form. */
static void describe_sid(PSID sid, char *out, size_t size)
{
    char *text = NULL;
    if (!ConvertSidToStringSidA(sid, &text)) {
        snprintf(out, size, "an unreadable SID");
        return;
    }
    const char *name = NULL;
    for (size_t g = 0; g < BROAD_GROUPS; g++)
        if (strcmp(text, broad_groups[g].sid) == 0)
            name = broad_groups[g].name;
    if (name)
        snprintf(out, size, "%s (%s)", name, text);
    else
        snprintf(out, size, "%s", text);
    LocalFree(text);
}

/* Rights that let a holder change a file's contents or replace it. */
#define FILE_WRITE_RIGHTS                                                                                              \
    (FILE_WRITE_DATA | FILE_APPEND_DATA | DELETE | WRITE_DAC | WRITE_OWNER | GENERIC_WRITE | GENERIC_ALL |             \
     MAXIMUM_ALLOWED)
/* Rights that let a holder read a file's contents. */
#define FILE_READ_RIGHTS (FILE_READ_DATA | GENERIC_READ | GENERIC_ALL | MAXIMUM_ALLOWED)

static bool sd_trusted(const void *sd_in, const void *user_in, DWORD write_mask, DWORD read_mask, char *why,
                       size_t size);

bool platform_win32_dir_trusted(const void *sd_in, const void *user_in, char *why, size_t size)
{
    return sd_trusted(sd_in, user_in, DIR_WRITE_RIGHTS, 0, why, size);
}

bool platform_win32_file_trusted(const void *sd_in, const void *user_in, bool secret, char *why, size_t size)
{
    return sd_trusted(sd_in, user_in, FILE_WRITE_RIGHTS, secret ? FILE_READ_RIGHTS : 0, why, size);
}

/* The owner is one of trusted_sids or user, and no allow entry grants
 * write_mask (or read_mask) to anyone else. */
static bool sd_trusted(const void *sd_in, const void *user_in, DWORD write_mask, DWORD read_mask, char *why,
                       size_t size)
{
    PSECURITY_DESCRIPTOR sd = (PSECURITY_DESCRIPTOR)sd_in;
    PSID user = (PSID)user_in;
    PSID owner = NULL;
    BOOL defaulted = FALSE;
    char who[128];
    if (!GetSecurityDescriptorOwner(sd, &owner, &defaulted) || !owner) {
        snprintf(why, size, "without an owner");
        return false;
    }
    if (!sid_is_trusted(owner, user)) {
        describe_sid(owner, who, sizeof who);
        snprintf(why, size, "owned by %s", who);
        return false;
    }
    BOOL present = FALSE;
    ACL *dacl = NULL;
    if (!GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted) || !present || !dacl) {
        snprintf(why, size, "without an access list (everyone may write to it)");
        return false;
    }
    for (DWORD i = 0; i < dacl->AceCount; i++) {
        ACE_HEADER *ace;
        if (!GetAce(dacl, i, (void **)&ace))
            continue;
        /* The callback (conditional) form has the same layout; deny, audit
         * and label entries grant nothing. Inherit-only entries count: they
         * are what files and folders created here will grant. */
        if (ace->AceType != ACCESS_ALLOWED_ACE_TYPE && ace->AceType != ACCESS_ALLOWED_CALLBACK_ACE_TYPE)
            continue;
        ACCESS_ALLOWED_ACE *allow = (ACCESS_ALLOWED_ACE *)ace;
        PSID sid = &allow->SidStart;
        if (!(allow->Mask & (write_mask | read_mask)) || sid_is_trusted(sid, user) || EqualSid(sid, owner) ||
            sid_is(sid, "S-1-3-0") /* CREATOR OWNER */ || sid_is(sid, "S-1-3-4") /* OWNER RIGHTS */)
            continue;
        describe_sid(sid, who, sizeof who);
        snprintf(why, size, "%s by %s", allow->Mask & write_mask ? "writable" : "readable", who);
        return false;
    }
    return true;
}

/*
 * Judges every directory of the full path wfull from its drive (or share)
 * down to and including the last when last_too: none may be a reparse point
 * (a junction or link would let its owner point it elsewhere later), and
 * each one above the last must have a trusted owner (an owner can always
 * rewrite the access list). The drive's root is not judged: Windows keeps
 * it. what names the checked object in the refusal (ERR_PERMISSION or, for
 * trusted files, code).
 */
static MUST_CHECK error_code judge_parents_w(const wchar_t *wfull, const char *path, bool last_too, error_code code,
                                             error_info *err)
{
    size_t len = wcslen(wfull);
    wchar_t *prefix = malloc((len + 1) * sizeof *prefix);
    if (!prefix)
        return fail_nomem(err);
    PSID user = current_user_sid();
    error_code rc = ERR_OK;
    /* Past "C:\" or "\\server\share\": the first component Windows does not keep. */
    size_t start = 3;
    if (len > 2 && is_sep(wfull[0]) && is_sep(wfull[1])) {
        int seps = 0;
        for (start = 2; start < len && seps < 2; start++)
            seps += is_sep(wfull[start]);
    }
    for (size_t i = start; i <= len && rc == ERR_OK; i++) {
        if (i < len && !is_sep(wfull[i]))
            continue;
        bool last = i == len || (i == len - 1);
        memcpy(prefix, wfull, i * sizeof *prefix);
        prefix[i] = L'\0';
        char *here = narrow(prefix);
        DWORD attrs = GetFileAttributesW(prefix);
        if (attrs == INVALID_FILE_ATTRIBUTES) {
            rc = fail_win(err, GetLastError(), "cannot read the permissions of", here ? here : path);
        } else if ((attrs & FILE_ATTRIBUTE_REPARSE_POINT) && (!last || last_too)) {
            rc = error_set(err, code,
                           "%s%s%s is a reparse point (a junction or symbolic link), which its owner could point "
                           "elsewhere; refusing it. Use the real path, or remove the link: rmdir \"%s\"",
                           here ? here : path, last ? "" : ", above ", last ? "" : path, here ? here : path);
        } else if (!last) {
            PSID owner = NULL;
            PSECURITY_DESCRIPTOR sd = NULL;
            DWORD e = GetNamedSecurityInfoW(prefix, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION, &owner, NULL, NULL,
                                            NULL, &sd);
            char who[128];
            if (e != ERROR_SUCCESS) {
                rc = fail_io(err, e, "cannot read the owner of", here ? here : path);
            } else if (!owner || !sid_is_trusted(owner, user)) {
                if (owner)
                    describe_sid(owner, who, sizeof who);
                rc = error_set(err, code,
                               "%s, a folder above %s, is owned by %s, so another user could change what outpost "
                               "runs; refusing it. Run as an administrator: icacls \"%s\" /setowner *S-1-5-32-544",
                               here ? here : path, path, owner ? who : "nobody", here ? here : path);
            }
            LocalFree(sd);
        }
        free(here);
        if (i == len - 1)
            break; /* a trailing separator: the last was judged */
    }
    free(user);
    free(prefix);
    return rc;
}

/* The full path of wpath (GetFullPathNameW), malloc'd; NULL on failure. */
static wchar_t *full_path_w(const wchar_t *wpath)
{
    DWORD n = GetFullPathNameW(wpath, 0, NULL, NULL);
    wchar_t *full = n ? malloc(n * sizeof *full) : NULL;
    if (full && GetFullPathNameW(wpath, n, full, NULL) == 0) {
        free(full);
        full = NULL;
    }
    return full;
}

error_code platform_check_private_dir(const char *path, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    PSECURITY_DESCRIPTOR sd = NULL;
    PSID user = NULL;
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs == INVALID_FILE_ATTRIBUTES) {
        rc = fail_win(err, GetLastError(), "cannot read the permissions of", path);
        goto cleanup;
    }
    wchar_t *full = full_path_w(wpath);
    rc = full ? judge_parents_w(full, path, true, ERR_PERMISSION, err) : fail_nomem(err);
    free(full);
    if (rc != ERR_OK)
        goto cleanup;
    if (!(attrs & FILE_ATTRIBUTE_DIRECTORY)) {
        rc = error_set(err, ERR_IO, "%s is not a directory", path);
        goto cleanup;
    }
    PSID owner = NULL;
    ACL *dacl = NULL;
    DWORD e = GetNamedSecurityInfoW(wpath, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                                    &owner, NULL, &dacl, NULL, &sd);
    if (e != ERROR_SUCCESS) {
        rc = fail_io(err, e, "cannot read the permissions of", path);
        goto cleanup;
    }
    user = current_user_sid();
    char why[160];
    if (!platform_win32_dir_trusted(sd, user, why, sizeof why))
        rc = error_set(err, ERR_PERMISSION,
                       "%s is %s, so another user could change what outpost runs; refusing it. Run as an "
                       "administrator: icacls \"%s\" /setowner *S-1-5-32-544 /T && icacls \"%s\" /inheritance:r "
                       "/grant:r *S-1-5-18:(OI)(CI)F *S-1-5-32-544:(OI)(CI)F && icacls \"%s\\*\" /reset /T /C (or "
                       "`outpost service install`, which does all of it)",
                       path, why, path, path, path);

cleanup:
    free(user);
    LocalFree(sd);
    free(wpath);
    return rc;
}

/*
 * The state directory's handle (PRODUCT.md section 9). Windows has no
 * openat, so the file functions keep using names here; what the handle
 * gives instead is that, opened without FILE_SHARE_DELETE, the directory
 * cannot be renamed, removed or replaced by another while outpost holds
 * it (a rename of the directory or of a parent fails with a sharing
 * violation), and FILE_FLAG_OPEN_REPARSE_POINT opens a junction or link
 * itself, which is refused. Only real Windows can confirm the sharing
 * semantics for directories (README, security notes); wine follows them.
 */
static HANDLE state_root = INVALID_HANDLE_VALUE;

error_code platform_state_root_open(const char *path, error_info *err)
{
    platform_state_root_close();
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    HANDLE h = CreateFileW(wpath, FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | READ_CONTROL,
                           FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING,
                           FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    DWORD e = GetLastError();
    free(wpath);
    if (h == INVALID_HANDLE_VALUE)
        return fail_win(err, e, "cannot open the state directory", path);
    BY_HANDLE_FILE_INFORMATION info;
    if (!GetFileInformationByHandle(h, &info))
        rc = fail_io(err, GetLastError(), "cannot read the state directory", path);
    else if (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
        rc = error_set(err, ERR_PERMISSION,
                       "the state directory %s is a reparse point (a junction or link); refusing it", path);
    else if (!(info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
        rc = error_set(err, ERR_IO, "%s is not a directory", path);
    if (rc != ERR_OK) {
        CloseHandle(h);
        return rc;
    }
    state_root = h;
    return ERR_OK;
}

void platform_state_root_close(void)
{
    if (state_root != INVALID_HANDLE_VALUE)
        CloseHandle(state_root);
    state_root = INVALID_HANDLE_VALUE;
}

error_code platform_check_trusted_file(const char *what, const char *path, bool secret, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return error_set(err, ERR_CONFIG, "%s %s: not a valid UTF-8 path", what, path);
    PSECURITY_DESCRIPTOR sd = NULL;
    PSID user = NULL;
    wchar_t *full = NULL;
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs == INVALID_FILE_ATTRIBUTES) {
        DWORD e = GetLastError();
        rc = win_code(e) == ERR_NOT_FOUND ? error_set_os(err, ERR_NOT_FOUND, (int)e, "%s %s does not exist", what, path)
                                          : fail_win(err, e, "cannot read", path);
        if (rc != ERR_NOT_FOUND)
            rc = err ? (err->code = ERR_CONFIG) : ERR_CONFIG;
        goto cleanup;
    }
    if (attrs & FILE_ATTRIBUTE_DIRECTORY) {
        rc = error_set(err, ERR_CONFIG, "%s %s is not a regular file", what, path);
        goto cleanup;
    }
    /* Links anywhere in the path (the file included) are refused: their
     * owner could point them elsewhere; the folders above need trusted owners. */
    full = full_path_w(wpath);
    rc = full ? judge_parents_w(full, path, true, ERR_CONFIG, err) : fail_nomem(err);
    if (rc != ERR_OK)
        goto cleanup;
    PSID owner = NULL;
    ACL *dacl = NULL;
    DWORD e = GetNamedSecurityInfoW(wpath, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                                    &owner, NULL, &dacl, NULL, &sd);
    if (e != ERROR_SUCCESS) {
        rc = fail_io(err, e, "cannot read the permissions of", path);
        if (err)
            err->code = ERR_CONFIG;
        rc = ERR_CONFIG;
        goto cleanup;
    }
    user = current_user_sid();
    char why[160];
    if (!platform_win32_file_trusted(sd, user, secret, why, sizeof why))
        rc = error_set(err, ERR_CONFIG,
                       "%s %s is %s, so another user could %s; refusing it. Run as an administrator: icacls \"%s\" "
                       "/setowner *S-1-5-32-544 && icacls \"%s\" /inheritance:r /grant:r *S-1-5-18:F "
                       "*S-1-5-32-544:F%s",
                       what, path, why, secret ? "read or replace it" : "change what outpost trusts or runs", path,
                       path, secret ? "" : " *S-1-5-32-545:R");

cleanup:
    free(user);
    free(full);
    LocalFree(sd);
    free(wpath);
    return rc;
}

/* ---- Single-instance lock ------------------------------------------------ */

struct platform_lock {
    HANDLE file; /* open lock file holding the byte-range lock; closing releases it */
};

error_code platform_lock_acquire(const char *path, platform_lock **lock, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* Shared open: a second instance must get as far as LockFileEx to learn
     * that the lock is held, and a human may read the PID. */
    HANDLE h = CreateFileW(wpath, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    free(wpath);
    if (h == INVALID_HANDLE_VALUE)
        return fail_win(err, GetLastError(), "cannot open the lock file", path);
    OVERLAPPED at = {0};
    at.OffsetHigh = LOCK_OFFSET_HIGH;
    if (!LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &at)) {
        DWORD e = GetLastError();
        CloseHandle(h);
        if (e == ERROR_LOCK_VIOLATION || e == ERROR_IO_PENDING)
            return error_set_os(err, ERR_LOCKED, (int)e, "another outpost run holds the lock %s", path);
        return fail_win(err, e, "cannot lock", path);
    }
    platform_lock *l = malloc(sizeof *l);
    if (!l) {
        CloseHandle(h);
        return fail_nomem(err);
    }
    l->file = h;
    /* The PID is informational (for a human looking at a stuck lock). */
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%lu\r\n", (unsigned long)GetCurrentProcessId());
    DWORD written;
    if (n > 0 && SetFilePointer(h, 0, NULL, FILE_BEGIN) == 0 && SetEndOfFile(h))
        (void)WriteFile(h, pid, (DWORD)n, &written, NULL);
    *lock = l;
    return ERR_OK;
}

void platform_lock_release(platform_lock *lock)
{
    if (!lock)
        return;
    OVERLAPPED at = {0};
    at.OffsetHigh = LOCK_OFFSET_HIGH;
    (void)UnlockFileEx(lock->file, 0, 1, 0, &at);
    CloseHandle(lock->file);
    free(lock);
}

/* ---- Time and randomness ------------------------------------------------- */

/* 100 ns intervals between 1601-01-01 (FILETIME) and 1970-01-01. */
#define FILETIME_UNIX_EPOCH 116444736000000000LL

int64_t platform_time_utc_ms(void)
{
    FILETIME ft;
    GetSystemTimePreciseAsFileTime(&ft);
    int64_t t = (int64_t)(((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime);
    return (t - FILETIME_UNIX_EPOCH) / 10000;
}

int64_t platform_monotonic_ms(void)
{
    static LARGE_INTEGER frequency; /* constant since boot; a race writes the same value */
    if (frequency.QuadPart == 0 && !QueryPerformanceFrequency(&frequency))
        return (int64_t)GetTickCount64();
    LARGE_INTEGER now;
    if (!QueryPerformanceCounter(&now))
        return (int64_t)GetTickCount64();
    int64_t f = frequency.QuadPart;
    /* Split to avoid overflowing counter * 1000. */
    return now.QuadPart / f * 1000 + now.QuadPart % f * 1000 / f;
}

void platform_sleep_ms(int64_t ms)
{
    if (ms <= 0) {
        SwitchToThread();
        return;
    }
    while (ms > 0) {
        DWORD chunk = ms > 0x7fffffff ? 0x7fffffff : (DWORD)ms;
        Sleep(chunk);
        ms -= chunk;
    }
}

error_code platform_random_bytes(void *buf, size_t len, error_info *err)
{
    unsigned char *p = buf;
    while (len > 0) {
        ULONG chunk = len > 0x40000000u ? 0x40000000u : (ULONG)len;
        NTSTATUS status = BCryptGenRandom(NULL, p, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG);
        if (status < 0)
            return error_set_os(err, ERR_INTERNAL, (int)status,
                                "cannot read random bytes: BCryptGenRandom failed (0x%08lx)", (unsigned long)status);
        p += chunk;
        len -= chunk;
    }
    return ERR_OK;
}

/* ---- Processes ----------------------------------------------------------- */

/* Growable UTF-16 buffer for building a command line. */
typedef struct wbuf {
    wchar_t *s;  /* NUL-terminated content */
    size_t len;  /* characters used, NUL excluded */
    size_t cap;  /* characters allocated */
    bool failed; /* an allocation failed; content is incomplete */
} wbuf;

static void wbuf_put(wbuf *b, const wchar_t *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap : 256);
        while (cap < b->len + n + 1)
            cap *= 2;
        wchar_t *bigger = realloc(b->s, cap * sizeof *bigger);
        if (!bigger) {
            b->failed = true;
            return;
        }
        b->s = bigger;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n * sizeof *s);
    b->len += n;
    b->s[b->len] = L'\0';
}

static void wbuf_repeat(wbuf *b, wchar_t c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        wbuf_put(b, &c, 1);
}

/*
 * Appends one argument quoted so that CommandLineToArgvW and the C runtime
 * give it back unchanged: no quotes when it needs none; otherwise quotes
 * around it, backslashes doubled where they precede a quote (or the closing
 * quote), and inner quotes escaped.
 */
static void quote_arg(wbuf *b, const wchar_t *arg)
{
    if (arg[0] && !wcspbrk(arg, L" \t\n\v\"")) {
        wbuf_put(b, arg, wcslen(arg));
        return;
    }
    wbuf_put(b, L"\"", 1);
    for (const wchar_t *p = arg;; p++) {
        size_t backslashes = 0;
        while (*p == L'\\') {
            backslashes++;
            p++;
        }
        if (*p == L'\0') {
            wbuf_repeat(b, L'\\', backslashes * 2);
            break;
        }
        if (*p == L'"') {
            wbuf_repeat(b, L'\\', backslashes * 2 + 1);
            wbuf_put(b, L"\"", 1);
        } else {
            wbuf_repeat(b, L'\\', backslashes);
            wbuf_put(b, p, 1);
        }
    }
    wbuf_put(b, L"\"", 1);
}

/* The command line for argv (UTF-16, malloc'd) or NULL with err filled. The
 * program name is parsed without escapes by Windows, so it is only put in
 * quotes; a quote inside it cannot be passed at all. */
static wchar_t *command_line(const char *const argv[], error_info *err)
{
    wbuf b = {0};
    for (size_t i = 0; argv[i]; i++) {
        wchar_t *arg = widen(argv[i]);
        if (!arg) {
            free(b.s);
            error_set(err, ERR_SPAWN, "cannot run %s: argument %zu is not valid UTF-8", argv[0], i);
            return NULL;
        }
        if (i > 0) {
            wbuf_put(&b, L" ", 1);
            quote_arg(&b, arg);
        } else if (wcschr(arg, L'"')) {
            free(arg);
            free(b.s);
            error_set(err, ERR_SPAWN, "cannot run %s: a program name cannot contain a quote", argv[0]);
            return NULL;
        } else {
            wbuf_put(&b, L"\"", 1);
            wbuf_put(&b, arg, wcslen(arg));
            wbuf_put(&b, L"\"", 1);
        }
        free(arg);
    }
    if (b.failed || !b.s) {
        free(b.s);
        fail_nomem(err);
        return NULL;
    }
    return b.s;
}

/* Whether wpath names an existing file (not a directory). */
static bool is_file_w(const wchar_t *wpath)
{
    DWORD attrs = GetFileAttributesW(wpath);
    return attrs != INVALID_FILE_ATTRIBUTES && !(attrs & FILE_ATTRIBUTE_DIRECTORY);
}

/*
 * The program to run for argv0: as given when it holds a separator;
 * otherwise the first PATH directory holding argv0, or argv0 + ".exe"/".com".
 * Unlike CreateProcess's own search, the current directory and outpost's
 * own directory are not searched (a planted msiexec.exe there must not win).
 * Malloc'd; NULL when nothing is found (or on OOM).
 */
static wchar_t *find_program(const wchar_t *argv0)
{
    if (wcspbrk(argv0, L"\\/:"))
        return _wcsdup(argv0);
    DWORD n = GetEnvironmentVariableW(L"PATH", NULL, 0);
    if (n == 0)
        return NULL;
    wchar_t *path = malloc(n * sizeof *path);
    if (!path)
        return NULL;
    GetEnvironmentVariableW(L"PATH", path, n);
    static const wchar_t *const suffixes[] = {L"", L".exe", L".com"};
    bool has_ext = wcschr(argv0, L'.') != NULL;
    wchar_t *found = NULL;
    for (wchar_t *dir = path; dir && !found;) {
        wchar_t *end = wcschr(dir, L';');
        if (end)
            *end = L'\0';
        for (size_t s = has_ext ? 0 : 1; *dir && s < 3 && !found; s++) {
            size_t size = wcslen(argv0) + 5;
            wchar_t *name = malloc(size * sizeof *name);
            if (!name)
                break;
            swprintf(name, size, L"%ls%ls", argv0, suffixes[s]);
            wchar_t *candidate = join_w(dir, name);
            free(name);
            if (candidate && is_file_w(candidate))
                found = candidate;
            else
                free(candidate);
        }
        dir = end ? end + 1 : NULL;
    }
    free(path);
    return found;
}

/* An inheritable duplicate of h (or of the null device when h is unusable),
 * for the child's standard handles; NULL on failure. */
static HANDLE inheritable(HANDLE h, bool for_reading)
{
    HANDLE dup = NULL;
    if (h && h != INVALID_HANDLE_VALUE &&
        DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &dup, 0, TRUE, DUPLICATE_SAME_ACCESS))
        return dup;
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    dup = CreateFileW(L"NUL", for_reading ? GENERIC_READ : GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &sa,
                      OPEN_EXISTING, 0, NULL);
    return dup == INVALID_HANDLE_VALUE ? NULL : dup;
}

/* A job object that kills every process in it when the handle closes. */
static HANDLE kill_on_close_job(void)
{
    HANDLE job = CreateJobObjectW(NULL, NULL);
    if (!job)
        return NULL;
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
    memset(&limits, 0, sizeof limits);
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    if (!SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits)) {
        CloseHandle(job);
        return NULL;
    }
    return job;
}

/* Lets the processes left in the job outlive it (after a normal exit, an
 * installer's helper processes must finish their work). */
static void job_release(HANDLE job)
{
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
    memset(&limits, 0, sizeof limits);
    SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits);
    CloseHandle(job);
}

/* The state of one platform_spawn, so that cleanup is in one place. */
typedef struct spawn_ctx {
    wchar_t *program;                  /* resolved program path */
    wchar_t *cmdline;                  /* quoted command line */
    wchar_t *environment;              /* the child's environment block, NULL: ours */
    wchar_t *cwd;                      /* the child's working directory, NULL: ours */
    HANDLE std[3];                     /* the child's stdin, stdout, stderr */
    LPPROC_THREAD_ATTRIBUTE_LIST list; /* inherit exactly std[] */
    HANDLE job;                        /* kills the tree at the timeout */
    PROCESS_INFORMATION pi;            /* the child */
} spawn_ctx;

static void spawn_ctx_free(spawn_ctx *c)
{
    free(c->program);
    free(c->cmdline);
    free(c->environment);
    free(c->cwd);
    for (int i = 0; i < 3; i++)
        if (c->std[i])
            CloseHandle(c->std[i]);
    if (c->list) {
        DeleteProcThreadAttributeList(c->list);
        free(c->list);
    }
    if (c->pi.hThread)
        CloseHandle(c->pi.hThread);
    if (c->pi.hProcess)
        CloseHandle(c->pi.hProcess);
}

/* Builds the attribute list that restricts inheritance to c->std. Without
 * it the child would inherit every inheritable handle of the process, and
 * libraries create some (Winsock sockets are inheritable by default), so a
 * failure means no spawn. */
static MUST_CHECK error_code spawn_handle_list(spawn_ctx *c, const char *name, error_info *err)
{
    SIZE_T size = 0;
    InitializeProcThreadAttributeList(NULL, 1, 0, &size);
    LPPROC_THREAD_ATTRIBUTE_LIST list = size ? malloc(size) : NULL;
    if (!list)
        return fail_nomem(err);
    if (!InitializeProcThreadAttributeList(list, 1, 0, &size)) {
        DWORD e = GetLastError();
        free(list);
        return error_set_os(err, ERR_SPAWN, (int)e, "cannot run %s: cannot limit the handles it inherits", name);
    }
    if (!UpdateProcThreadAttribute(list, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, c->std, sizeof c->std, NULL, NULL)) {
        DWORD e = GetLastError();
        DeleteProcThreadAttributeList(list);
        free(list);
        return error_set_os(err, ERR_SPAWN, (int)e, "cannot run %s: cannot limit the handles it inherits", name);
    }
    c->list = list;
    return ERR_OK;
}

/* The UTF-16 environment block for envp ("A=1\0B=2\0\0"), malloc'd, or
 * NULL with err filled. */
static wchar_t *environment_block(const char *const envp[], const char *name, error_info *err)
{
    wbuf b = {0};
    for (size_t i = 0; envp[i]; i++) {
        wchar_t *var = widen(envp[i]);
        if (!var) {
            free(b.s);
            error_set(err, ERR_SPAWN, "cannot run %s: environment entry %zu is not valid UTF-8", name, i);
            return NULL;
        }
        wbuf_put(&b, var, wcslen(var) + 1); /* with its terminator */
        free(var);
    }
    wbuf_put(&b, L"\0", 2); /* the block's end; an empty block needs two */
    if (b.failed || !b.s) {
        free(b.s);
        fail_nomem(err);
        return NULL;
    }
    return b.s;
}

error_code platform_environment(char ***vars, size_t *count, error_info *err)
{
    wchar_t *block = GetEnvironmentStringsW();
    if (!block)
        return fail_nomem(err);
    char **list = NULL;
    size_t used = 0, cap = 0;
    error_code rc = ERR_OK;
    for (const wchar_t *p = block; *p && rc == ERR_OK; p += wcslen(p) + 1)
        rc = names_append(&list, &used, &cap, p, err);
    FreeEnvironmentStringsW(block);
    if (rc != ERR_OK) {
        platform_free_names(list, used);
        return rc;
    }
    *vars = list;
    *count = used;
    return ERR_OK;
}

/* Starts the child suspended, puts it in the job, resumes it. */
static MUST_CHECK error_code spawn_start(spawn_ctx *c, const char *name, error_info *err)
{
    STARTUPINFOEXW si;
    memset(&si, 0, sizeof si);
    si.StartupInfo.cb = sizeof si;
    si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    si.StartupInfo.hStdInput = c->std[0];
    si.StartupInfo.hStdOutput = c->std[1];
    si.StartupInfo.hStdError = c->std[2];
    DWORD flags = CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT;
    si.lpAttributeList = c->list;
    flags |= EXTENDED_STARTUPINFO_PRESENT;
    /* The child starts in c->cwd (its staging folder), never in outpost's
     * working directory, where anyone might have put a DLL. */
    if (!CreateProcessW(c->program, c->cmdline, NULL, NULL, TRUE, flags, c->environment, c->cwd, &si.StartupInfo,
                        &c->pi)) {
        DWORD e = GetLastError();
        char text[256];
        memset(&c->pi, 0, sizeof c->pi);
        return error_set_os(err, ERR_SPAWN, (int)e, "cannot run %s: %s", name, win_message(e, text, sizeof text));
    }
    /* Without the job (a parent job forbidding nesting) only the child itself
     * can be killed at the timeout. */
    if (c->job && !AssignProcessToJobObject(c->job, c->pi.hProcess)) {
        CloseHandle(c->job);
        c->job = NULL;
    }
    ResumeThread(c->pi.hThread);
    return ERR_OK;
}

/* An inheritable handle appending to path (created when missing), or NULL. */
static HANDLE append_handle(const char *path)
{
    wchar_t *wide = widen(path);
    if (!wide)
        return NULL;
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    HANDLE h = CreateFileW(wide, FILE_APPEND_DATA | SYNCHRONIZE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           &sa, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    free(wide);
    return h == INVALID_HANDLE_VALUE ? NULL : h;
}

/* ---- Held files (the installer hashed is the installer run) --------------- */

struct platform_held_file {
    FILE *stream;  /* over the handle (_open_osfhandle); closing it closes the handle */
    wchar_t *path; /* the name it was opened by */
};

error_code platform_held_open(const char *path, platform_held_file **file, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* FILE_SHARE_READ only: while held, nobody may write, rename or delete
     * it, so msiexec (or the installer itself) reads what was hashed. A
     * reparse point is opened as itself, and refused. */
    HANDLE h = CreateFileW(wpath, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING,
                           FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        rc = fail_win(err, GetLastError(), "cannot open", path);
        free(wpath);
        return rc;
    }
    BY_HANDLE_FILE_INFORMATION info;
    if (!GetFileInformationByHandle(h, &info) ||
        (info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT))) {
        CloseHandle(h);
        free(wpath);
        return error_set(err, ERR_IO, "%s is not a regular file (or is a link); refusing it", path);
    }
    platform_held_file *held = calloc(1, sizeof *held);
    int fd = held ? _open_osfhandle((intptr_t)h, _O_RDONLY | _O_BINARY) : -1;
    if (fd < 0) {
        CloseHandle(h);
        free(held);
        free(wpath);
        return fail_nomem(err);
    }
    held->stream = _fdopen(fd, "rb");
    if (!held->stream) {
        _close(fd);
        free(held);
        free(wpath);
        return fail_nomem(err);
    }
    held->path = wpath;
    *file = held;
    return ERR_OK;
}

FILE *platform_held_stream(platform_held_file *file)
{
    return file->stream;
}

void platform_held_close(platform_held_file *file)
{
    if (!file)
        return;
    fclose(file->stream);
    free(file->path);
    free(file);
}

char *platform_system_program(const char *name)
{
    wchar_t dir[MAX_PATH];
    UINT n = GetSystemDirectoryW(dir, MAX_PATH);
    if (n == 0 || n >= MAX_PATH)
        return NULL;
    char *dir8 = narrow(dir);
    char *path = dir8 ? platform_path_join(dir8, name) : NULL;
    free(dir8);
    return path;
}

void platform_harden_process(void)
{
    /* DLLs from the system directories and the program's own, never the
     * current directory or PATH (a DLL planted there must not load). */
    SetDefaultDllDirectories(LOAD_LIBRARY_SEARCH_DEFAULT_DIRS);
    SetDllDirectoryW(L"");
    /* No Windows Error Reporting heap in a crash report (the API key is on
     * the heap), and no dialog waiting for a click in a service. kernel32
     * exports WerSetFlags; looked up so that no import library is needed. */
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
    typedef HRESULT(WINAPI * wer_set_flags_fn)(DWORD);
    FARPROC proc = GetProcAddress(GetModuleHandleW(L"kernel32.dll"), "WerSetFlags");
    if (proc) {
        wer_set_flags_fn wer_set_flags;
        memcpy(&wer_set_flags, &proc, sizeof wer_set_flags);
        (void)wer_set_flags(0x00000001 /* WER_FAULT_REPORTING_FLAG_NOHEAP */);
    }
}

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

error_code platform_spawn_with(const char *const argv[], const platform_spawn_options *options, int64_t timeout_ms,
                               platform_spawn_result *result, error_info *err)
{
    if (!argv || !argv[0] || !argv[0][0])
        return error_set(err, ERR_SPAWN, "cannot run a program: the command is empty");
    const char *const *envp = options->envp;
    const char *output_path = options->output_path;
    spawn_ctx c;
    memset(&c, 0, sizeof c);
    error_code rc = ERR_OK;
    /* A held program is run by its full name: the handle held denies write
     * and delete sharing, so the file under that name is the one hashed. */
    if (options->program && !wcspbrk(options->program->path, L"\\/:")) {
        rc = error_set(err, ERR_SPAWN, "cannot run %s: a held program needs its full path", argv[0]);
        goto cleanup;
    }
    if (options->cwd && !(c.cwd = widen(options->cwd))) {
        rc = error_set(err, ERR_SPAWN, "cannot run %s: the working directory is not valid UTF-8", argv[0]);
        goto cleanup;
    }
    wchar_t *argv0 = widen(argv[0]);
    if (!argv0) {
        rc = error_set(err, ERR_SPAWN, "cannot run %s: the name is not valid UTF-8", argv[0]);
        goto cleanup;
    }
    c.program = find_program(argv0);
    free(argv0);
    if (!c.program) {
        rc = error_set_os(err, ERR_SPAWN, ERROR_FILE_NOT_FOUND, "cannot run %s: not found in PATH", argv[0]);
        goto cleanup;
    }
    c.cmdline = command_line(argv, err);
    if (!c.cmdline) {
        rc = ERR_SPAWN;
        goto cleanup;
    }
    c.std[0] = inheritable(NULL, true); /* the null device */
    if (output_path) {
        c.std[1] = append_handle(output_path);
        if (!c.std[1]) {
            DWORD e = GetLastError();
            char text[256];
            rc = error_set_os(err, ERR_SPAWN, (int)e, "cannot run %s: cannot open its output file %s: %s", argv[0],
                              output_path, win_message(e, text, sizeof text));
            goto cleanup;
        }
        c.std[2] = inheritable(c.std[1], false);
    } else {
        c.std[1] = inheritable(GetStdHandle(STD_OUTPUT_HANDLE), false);
        c.std[2] = inheritable(GetStdHandle(STD_ERROR_HANDLE), false);
    }
    if (!c.std[0] || !c.std[1] || !c.std[2]) {
        rc = error_set_os(err, ERR_SPAWN, (int)GetLastError(), "cannot run %s: cannot set up its standard handles",
                          argv[0]);
        goto cleanup;
    }
    if (envp && !(c.environment = environment_block(envp, argv[0], err))) {
        rc = ERR_SPAWN;
        goto cleanup;
    }
    rc = spawn_handle_list(&c, argv[0], err);
    if (rc != ERR_OK)
        goto cleanup;
    c.job = kill_on_close_job();
    rc = spawn_start(&c, argv[0], err);
    if (rc != ERR_OK)
        goto cleanup;

    DWORD wait_ms = INFINITE;
    if (timeout_ms > 0)
        wait_ms = timeout_ms >= (int64_t)INFINITE ? INFINITE - 1 : (DWORD)timeout_ms;
    DWORD waited = WaitForSingleObject(c.pi.hProcess, wait_ms);
    result->timed_out = false;
    if (waited == WAIT_TIMEOUT) {
        if (!c.job || !TerminateJobObject(c.job, 1))
            TerminateProcess(c.pi.hProcess, 1);
        WaitForSingleObject(c.pi.hProcess, INFINITE);
        result->timed_out = true;
    } else if (waited != WAIT_OBJECT_0) {
        DWORD e = GetLastError();
        TerminateProcess(c.pi.hProcess, 1);
        rc = error_set_os(err, ERR_SPAWN, (int)e, "cannot wait for %s", argv[0]);
        goto cleanup;
    }
    DWORD code = 1;
    GetExitCodeProcess(c.pi.hProcess, &code);
    result->exit_code = (int)code;

cleanup:
    if (c.job) {
        /* At a timeout the whole tree was ended already; after a normal exit
         * the child's helpers may finish (closing would kill them). */
        if (rc == ERR_OK)
            job_release(c.job);
        else
            CloseHandle(c.job);
    }
    spawn_ctx_free(&c);
    return rc;
}

/* ---- Threads ------------------------------------------------------------- */

struct platform_thread {
    HANDLE handle;         /* the running thread */
    void (*fn)(void *arg); /* what it runs */
    void *arg;             /* fn's argument */
};

struct platform_mutex {
    SRWLOCK lock;
};

struct platform_cond {
    CONDITION_VARIABLE cond;
};

static unsigned __stdcall thread_main(void *arg)
{
    platform_thread *thread = arg;
    thread->fn(thread->arg);
    return 0;
}

error_code platform_thread_start(platform_thread **thread, void (*fn)(void *arg), void *arg, error_info *err)
{
    platform_thread *t = malloc(sizeof *t);
    if (!t)
        return fail_nomem(err);
    t->fn = fn;
    t->arg = arg;
    /* _beginthreadex, not CreateThread: the C runtime's per-thread state
     * (errno, strtok) is set up for the new thread. */
    uintptr_t h = _beginthreadex(NULL, 0, thread_main, t, 0, NULL);
    if (h == 0) {
        int e = errno;
        free(t);
        return error_set_os(err, e == EAGAIN ? ERR_NOMEM : ERR_INTERNAL, e, "cannot start a thread: %s", strerror(e));
    }
    t->handle = (HANDLE)h;
    *thread = t;
    return ERR_OK;
}

void platform_thread_join(platform_thread *thread)
{
    if (!thread)
        return;
    WaitForSingleObject(thread->handle, INFINITE);
    CloseHandle(thread->handle);
    free(thread);
}

platform_mutex *platform_mutex_new(void)
{
    platform_mutex *m = malloc(sizeof *m);
    if (!m)
        return NULL;
    InitializeSRWLock(&m->lock);
    return m;
}

void platform_mutex_free(platform_mutex *m)
{
    free(m); /* SRW locks need no destruction */
}

void platform_mutex_lock(platform_mutex *m)
{
    AcquireSRWLockExclusive(&m->lock);
}

void platform_mutex_unlock(platform_mutex *m)
{
    ReleaseSRWLockExclusive(&m->lock);
}

platform_cond *platform_cond_new(void)
{
    platform_cond *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    InitializeConditionVariable(&c->cond);
    return c;
}

void platform_cond_free(platform_cond *c)
{
    free(c);
}

void platform_cond_wait(platform_cond *c, platform_mutex *m)
{
    /* Spurious wakeups are allowed, as with pthread_cond_wait. */
    if (!SleepConditionVariableSRW(&c->cond, &m->lock, INFINITE, 0))
        abort();
}

void platform_cond_broadcast(platform_cond *c)
{
    WakeAllConditionVariable(&c->cond);
}

/* ---- Host and environment ------------------------------------------------ */

void platform_hostname(char *buf, size_t size)
{
    if (!buf || size == 0)
        return;
    wchar_t name[256];
    DWORD n = (DWORD)(sizeof name / sizeof name[0]);
    char *utf8 = NULL;
    if (GetComputerNameExW(ComputerNameDnsHostname, name, &n) && n > 0)
        utf8 = narrow_n(name, (int)n);
    snprintf(buf, size, "%s", utf8 && *utf8 ? utf8 : "unknown");
    free(utf8);
}

const char *platform_os_name(void)
{
    return "windows";
}

/* IsWow64Process2 (Windows 10 1709+) tells the real machine even to an x64
 * program emulated on ARM64, where GetNativeSystemInfo says AMD64. */
typedef BOOL(WINAPI *is_wow64_process2_fn)(HANDLE, USHORT *, USHORT *);

static const char *machine_name(USHORT machine)
{
    switch (machine) {
    case IMAGE_FILE_MACHINE_AMD64: return "x86_64";
    case IMAGE_FILE_MACHINE_ARM64: return "aarch64";
    case IMAGE_FILE_MACHINE_I386: return "x86";
    case IMAGE_FILE_MACHINE_ARMNT: return "arm";
    default: return NULL;
    }
}

const char *platform_arch(void)
{
    HMODULE kernel = GetModuleHandleW(L"kernel32.dll");
    is_wow64_process2_fn fn =
        kernel ? (is_wow64_process2_fn)(void (*)(void))GetProcAddress(kernel, "IsWow64Process2") : NULL;
    USHORT process_machine = 0, native_machine = 0;
    if (fn && fn(GetCurrentProcess(), &process_machine, &native_machine)) {
        const char *name = machine_name(native_machine);
        if (name)
            return name;
    }
    SYSTEM_INFO info;
    GetNativeSystemInfo(&info);
    switch (info.wProcessorArchitecture) {
    case PROCESSOR_ARCHITECTURE_AMD64: return "x86_64";
    case PROCESSOR_ARCHITECTURE_ARM64: return "aarch64";
    case PROCESSOR_ARCHITECTURE_INTEL: return "x86";
    case PROCESSOR_ARCHITECTURE_ARM: return "arm";
    default: return "unknown";
    }
}

/* The UTF-8 values handed out by platform_getenv, one per variable name;
 * a new call for a name replaces (and frees) that name's previous value. */
typedef struct env_entry {
    char *name;             /* as asked for */
    char *value;            /* last value returned, NULL when unset */
    struct env_entry *next; /* next cached variable */
} env_entry;

static env_entry *env_cache;
static SRWLOCK env_lock = SRWLOCK_INIT;

/* The variable's value as malloc'd UTF-8; NULL when unset (or on failure). */
static char *read_env(const char *name)
{
    wchar_t *wname = widen(name);
    if (!wname)
        return NULL;
    char *value = NULL;
    DWORD n = GetEnvironmentVariableW(wname, NULL, 0);
    /* The value can change between the two calls: retry with the new size. */
    for (int attempt = 0; n > 0 && attempt < 4 && !value; attempt++) {
        wchar_t *wide = malloc(n * sizeof *wide);
        if (!wide)
            break;
        DWORD got = GetEnvironmentVariableW(wname, wide, n);
        if (got < n)
            value = narrow_n(wide, (int)got);
        else
            n = got;
        free(wide);
    }
    free(wname);
    return value;
}

const char *platform_getenv(const char *name)
{
    char *value = read_env(name);
    AcquireSRWLockExclusive(&env_lock);
    env_entry *e = env_cache;
    while (e && strcmp(e->name, name) != 0)
        e = e->next;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (e)
            e->name = strdup(name);
        if (!e || !e->name) {
            free(e);
            ReleaseSRWLockExclusive(&env_lock);
            free(value);
            return NULL;
        }
        e->next = env_cache;
        env_cache = e;
    }
    free(e->value);
    e->value = value;
    ReleaseSRWLockExclusive(&env_lock);
    return value;
}

bool platform_is_terminal(FILE *stream)
{
    if (!stream)
        return false;
    int fd = _fileno(stream);
    if (fd < 0)
        return false;
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    DWORD mode;
    /* GetConsoleMode succeeds only on a console; _isatty is also true for
     * the NUL device. */
    return h != INVALID_HANDLE_VALUE && GetConsoleMode(h, &mode);
}

/* %ProgramData%\outpost (normally C:\ProgramData\outpost) + suffix; the
 * known-folder API first, the environment variable, then the default. */
static char *program_data_path(const char *suffix)
{
    char *base = NULL;
    wchar_t *known = NULL;
    if (SUCCEEDED(SHGetKnownFolderPath(&FOLDERID_ProgramData, KF_FLAG_DEFAULT, NULL, &known)) && known)
        base = narrow(known);
    CoTaskMemFree(known);
    if (!base) {
        char *env = read_env("ProgramData");
        base = env && *env ? env : NULL;
        if (!base)
            free(env);
    }
    if (!base)
        base = strdup("C:\\ProgramData");
    if (!base)
        return NULL;
    size_t size = strlen(base) + strlen("\\outpost") + strlen(suffix) + 1;
    char *path = malloc(size);
    if (path)
        snprintf(path, size, "%s\\outpost%s", base, suffix);
    free(base);
    return path;
}

char *platform_default_config_path(void)
{
    return program_data_path("\\outpost.json");
}

char *platform_default_state_dir(void)
{
    return program_data_path("\\state");
}

/* A REG_SZ / REG_EXPAND_SZ value of key as malloc'd UTF-8; NULL when absent,
 * of another type or longer than REGISTRY_VALUE_MAX characters. */
static char *registry_string(HKEY key, const wchar_t *value_name)
{
    wchar_t value[REGISTRY_VALUE_MAX + 1];
    DWORD type = 0, size = sizeof value - sizeof value[0];
    if (RegQueryValueExW(key, value_name, NULL, &type, (BYTE *)value, &size) != ERROR_SUCCESS)
        return NULL;
    if (type != REG_SZ && type != REG_EXPAND_SZ)
        return NULL;
    size_t chars = size / sizeof value[0];
    value[chars] = L'\0'; /* the stored string need not be terminated */
    while (chars > 0 && value[chars - 1] == L'\0')
        chars--;
    return narrow_n(value, (int)chars);
}

error_code platform_machine_id(char *buf, size_t size, error_info *err)
{
    HKEY key;
    char *value = NULL;
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, L"SOFTWARE\\Microsoft\\Cryptography", 0, KEY_READ | KEY_WOW64_64KEY, &key) ==
        ERROR_SUCCESS) {
        value = registry_string(key, L"MachineGuid");
        RegCloseKey(key);
    }
    size_t n = value ? strlen(value) : 0;
    if (n == 0 || n >= size) {
        free(value);
        return error_set(err, ERR_NOT_FOUND,
                         "this machine has no MachineGuid in HKLM\\SOFTWARE\\Microsoft\\Cryptography");
    }
    memcpy(buf, value, n + 1);
    free(value);
    return ERR_OK;
}

/* Whether s starts with prefix, ignoring case (ordinal, as Windows compares
 * names). */
static bool starts_with_nocase(const wchar_t *s, const wchar_t *prefix)
{
    size_t n = wcslen(prefix);
    return wcslen(s) >= n && CompareStringOrdinal(s, (int)n, prefix, (int)n, TRUE) == CSTR_EQUAL;
}

/* Searches one registry view (KEY_WOW64_64KEY or _32KEY) of the Uninstall
 * key; the first entry whose DisplayName starts with wname and that has a
 * DisplayVersion wins. Sets *version (malloc'd) when found. */
static void search_uninstall(REGSAM view, const wchar_t *wname, char **version)
{
    HKEY root;
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, L"SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Uninstall", 0,
                      KEY_READ | view, &root) != ERROR_SUCCESS)
        return;
    wchar_t sub[256];
    for (DWORD i = 0; !*version; i++) {
        DWORD sub_len = (DWORD)(sizeof sub / sizeof sub[0]);
        LONG rc = RegEnumKeyExW(root, i, sub, &sub_len, NULL, NULL, NULL, NULL);
        if (rc == ERROR_NO_MORE_ITEMS)
            break;
        if (rc != ERROR_SUCCESS)
            continue;
        HKEY entry;
        if (RegOpenKeyExW(root, sub, 0, KEY_READ | view, &entry) != ERROR_SUCCESS)
            continue;
        char *display = registry_string(entry, L"DisplayName");
        wchar_t *wdisplay = display ? widen(display) : NULL;
        if (wdisplay && starts_with_nocase(wdisplay, wname)) {
            char *v = registry_string(entry, L"DisplayVersion");
            if (v && *v)
                *version = v;
            else
                free(v);
        }
        free(wdisplay);
        free(display);
        RegCloseKey(entry);
    }
    RegCloseKey(root);
}

error_code platform_installed_version(const char *display_name, char **version, error_info *err)
{
    if (!display_name || !*display_name)
        return error_set(err, ERR_NOT_FOUND, "cannot read the installed version: no product name given");
    wchar_t *wname = widen(display_name);
    if (!wname)
        return error_set(err, ERR_NOT_FOUND, "cannot read the installed version of %s: the name is not valid UTF-8",
                         display_name);
    char *found = NULL;
    /* 64-bit programs first, then 32-bit ones (WOW6432Node). */
    search_uninstall(KEY_WOW64_64KEY, wname, &found);
    if (!found)
        search_uninstall(KEY_WOW64_32KEY, wname, &found);
    free(wname);
    if (!found)
        return error_set(err, ERR_NOT_FOUND,
                         "%s is not installed: no entry under the registry's Uninstall keys has a DisplayName "
                         "starting with it",
                         display_name);
    *version = found;
    return ERR_OK;
}

const char *platform_system_ca_file(void)
{
    return NULL; /* the ROOT store, through platform_system_ca_bundle */
}

/* Whether cert's enhanced key usage (its extension and the store's
 * properties) allows code signing: no usage restriction at all counts. */
static bool cert_allows_code_signing(PCCERT_CONTEXT cert)
{
    DWORD size = 0;
    if (!CertGetEnhancedKeyUsage(cert, 0, NULL, &size))
        return GetLastError() == (DWORD)CRYPT_E_NOT_FOUND;
    CERT_ENHKEY_USAGE *usage = malloc(size);
    if (!usage)
        return false;
    bool ok = false;
    if (CertGetEnhancedKeyUsage(cert, 0, usage, &size)) {
        if (usage->cUsageIdentifier == 0)
            ok = GetLastError() == (DWORD)CRYPT_E_NOT_FOUND; /* else: valid for no usage */
        for (DWORD i = 0; i < usage->cUsageIdentifier && !ok; i++)
            ok = strcmp(usage->rgpszUsageIdentifier[i], szOID_PKIX_KP_CODE_SIGNING) == 0;
    }
    free(usage);
    return ok;
}

/* The certificates of store (only those allowing code signing when
 * code_signing) as one PEM bundle; what names it in messages. */
static MUST_CHECK error_code store_to_pem(HCERTSTORE store, bool code_signing, const char *what, char **pem,
                                          size_t *len, error_info *err)
{
    char *bundle = NULL;
    size_t used = 0;
    error_code rc = ERR_OK;
    PCCERT_CONTEXT cert = NULL;
    while ((cert = CertEnumCertificatesInStore(store, cert)) != NULL) {
        if (cert->dwCertEncodingType != X509_ASN_ENCODING || (code_signing && !cert_allows_code_signing(cert)))
            continue;
        DWORD need = 0;
        if (!CryptBinaryToStringA(cert->pbCertEncoded, cert->cbCertEncoded, CRYPT_STRING_BASE64HEADER, NULL, &need))
            continue;
        char *grown = realloc(bundle, used + need + 1);
        if (!grown) {
            rc = error_set(err, ERR_NOMEM, "out of memory reading %s", what);
            CertFreeCertificateContext(cert);
            break;
        }
        bundle = grown;
        DWORD written = need;
        if (CryptBinaryToStringA(cert->pbCertEncoded, cert->cbCertEncoded, CRYPT_STRING_BASE64HEADER, bundle + used,
                                 &written))
            used += written; /* written excludes the NUL */
    }
    CertCloseStore(store, 0);
    if (rc == ERR_OK && used == 0)
        rc = error_set(err, ERR_NOT_FOUND, "%s is empty", what);
    if (rc != ERR_OK) {
        free(bundle);
        return rc;
    }
    bundle[used] = '\0';
    *pem = bundle;
    *len = used;
    return ERR_OK;
}

error_code platform_system_ca_bundle(char **pem, size_t *len, error_info *err)
{
    HCERTSTORE store = CertOpenSystemStoreW(0, L"ROOT");
    if (!store)
        return error_set_os(err, ERR_NOT_FOUND, (int)GetLastError(), "cannot open the Windows ROOT certificate store");
    return store_to_pem(store, false, "the Windows ROOT certificate store", pem, len, err);
}

error_code platform_system_code_signing_roots(char **pem, size_t *len, error_info *err)
{
    HCERTSTORE store = CertOpenStore(CERT_STORE_PROV_SYSTEM_W, 0, 0,
                                     CERT_SYSTEM_STORE_LOCAL_MACHINE | CERT_STORE_READONLY_FLAG, L"ROOT");
    if (!store)
        return error_set_os(err, ERR_NOT_FOUND, (int)GetLastError(),
                            "cannot open the machine's ROOT certificate store");
    return store_to_pem(store, true, "the machine's ROOT certificate store (code signing)", pem, len, err);
}

void platform_boot_id(char *buf, size_t size)
{
    if (size == 0)
        return;
    /* The boot time, to the minute: now minus the time since boot. Two
     * readings a few ms apart can straddle a minute; that only costs a
     * resume its unflushed tail, never correctness. */
    FILETIME ft;
    GetSystemTimeAsFileTime(&ft);
    ULONGLONG now_100ns = ((ULONGLONG)ft.dwHighDateTime << 32) | ft.dwLowDateTime;
    ULONGLONG boot_min = (now_100ns / 10000ULL - GetTickCount64()) / 60000ULL;
    snprintf(buf, size, "boot-%llu", (unsigned long long)boot_min);
}

/* ---- The log file and the system log ------------------------------------- */

struct platform_append_file {
    HANDLE handle;
};

error_code platform_append_open(const char *path, platform_append_file **file, uint64_t *size, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* A new file gets the owner-only DACL (it applies only when OPEN_ALWAYS
     * creates); inside state_dir it would inherit the same protection.
     * FILE_APPEND_DATA alone: every WriteFile goes to the current end of
     * the file, as O_APPEND. FILE_SHARE_DELETE: another outpost may rotate
     * (rename) the file while this one holds it. */
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
    PSECURITY_DESCRIPTOR sd = NULL;
    if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(L"D:P(A;;FA;;;OW)(A;;FA;;;SY)(A;;FA;;;BA)",
                                                              SDDL_REVISION_1, &sd, NULL)) {
        free(wpath);
        return fail_win(err, GetLastError(), "cannot prepare the permissions of", path);
    }
    sa.lpSecurityDescriptor = sd;
    HANDLE h =
        CreateFileW(wpath, FILE_APPEND_DATA | SYNCHRONIZE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, &sa,
                    OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    DWORD e = GetLastError();
    LocalFree(sd);
    free(wpath);
    if (h == INVALID_HANDLE_VALUE)
        return fail_win(err, e, "cannot open for appending", path);
    BY_HANDLE_FILE_INFORMATION info;
    if (!GetFileInformationByHandle(h, &info) || (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
        CloseHandle(h);
        return error_set(err, ERR_IO, "cannot append to %s: it is a link (reparse point), not a file", path);
    }
    platform_append_file *f = malloc(sizeof *f);
    if (!f) {
        CloseHandle(h);
        return fail_nomem(err);
    }
    f->handle = h;
    if (size)
        *size = ((uint64_t)info.nFileSizeHigh << 32) | info.nFileSizeLow;
    *file = f;
    return ERR_OK;
}

error_code platform_append_write(platform_append_file *file, const void *data, size_t len, error_info *err)
{
    crash_point("append_log", NULL);
    if (!write_all(file->handle, data, len)) {
        DWORD e = GetLastError();
        char text[256];
        return error_set_os(err, win_code(e), (int)e, "cannot append to the log file: %s",
                            win_message(e, text, sizeof text));
    }
    return ERR_OK;
}

void platform_append_close(platform_append_file *file)
{
    if (!file)
        return;
    CloseHandle(file->handle);
    free(file);
}

long platform_process_id(void)
{
    return (long)GetCurrentProcessId();
}

static const char *interrupt_message;

/* Runs on a thread of its own that Windows starts for the console event. */
static BOOL WINAPI on_console_control(DWORD type)
{
    if (type != CTRL_C_EVENT && type != CTRL_BREAK_EVENT)
        return FALSE;
    HANDLE out = GetStdHandle(STD_ERROR_HANDLE);
    DWORD written = 0;
    if (interrupt_message && out && out != INVALID_HANDLE_VALUE)
        WriteFile(out, interrupt_message, (DWORD)strlen(interrupt_message), &written, NULL);
    TerminateProcess(GetCurrentProcess(), 130);
    return TRUE;
}

void platform_exit_on_interrupt(const char *message)
{
    interrupt_message = message;
    SetConsoleCtrlHandler(on_console_control, TRUE);
}

/* The SID of report.readers_group: an "S-1-..." string (*from_text is then
 * set, LocalFree it) or a name looked up into sid_buf. ERR_CONFIG when
 * there is no such group. */
static error_code group_sid(const char *group, BYTE sid_buf[SECURITY_MAX_SID_SIZE], PSID *sid, PSID *from_text,
                            error_info *err)
{
    *sid = NULL;
    *from_text = NULL;
    wchar_t *wgroup = widen(group);
    error_code rc = ERR_OK;
    if (!wgroup) {
        rc = error_set(err, ERR_NOMEM, "out of memory");
    } else if (wcsncmp(wgroup, L"S-1-", 4) == 0) {
        if (ConvertStringSidToSidW(wgroup, from_text))
            *sid = *from_text;
        else
            rc = error_set_os(err, ERR_CONFIG, (int)GetLastError(), "\"%s\" is not a valid SID", group);
    } else {
        DWORD sid_size = SECURITY_MAX_SID_SIZE, domain_size = 256;
        wchar_t domain[256];
        SID_NAME_USE use;
        if (LookupAccountNameW(NULL, wgroup, sid_buf, &sid_size, domain, &domain_size, &use))
            *sid = sid_buf;
        else
            rc = error_set_os(err, ERR_CONFIG, (int)GetLastError(), "there is no group \"%s\" on this machine", group);
    }
    free(wgroup);
    return rc;
}

error_code platform_group_exists(const char *group, error_info *err)
{
    BYTE sid_buf[SECURITY_MAX_SID_SIZE];
    PSID sid = NULL, from_text = NULL;
    error_code rc = group_sid(group, sid_buf, &sid, &from_text, err);
    LocalFree(from_text);
    return rc;
}

error_code platform_share_with_group(const char *path, const char *group, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    PSID sid = NULL, from_text = NULL;
    BYTE sid_buf[SECURITY_MAX_SID_SIZE];
    rc = group_sid(group, sid_buf, &sid, &from_text, err);
    DWORD attributes = rc == ERR_OK ? GetFileAttributesW(wpath) : INVALID_FILE_ATTRIBUTES;
    bool dir = attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY);
    PACL old = NULL, acl = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    DWORD e = ERROR_SUCCESS;
    if (rc == ERR_OK) {
        EXPLICIT_ACCESS_W ea;
        memset(&ea, 0, sizeof ea);
        ea.grfAccessPermissions =
            dir ? FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES | READ_CONTROL | SYNCHRONIZE
                : FILE_GENERIC_READ;
        ea.grfAccessMode = GRANT_ACCESS;
        ea.grfInheritance = NO_INHERITANCE;
        ea.Trustee.TrusteeForm = TRUSTEE_IS_SID;
        ea.Trustee.TrusteeType = TRUSTEE_IS_GROUP;
        ea.Trustee.ptstrName = (LPWSTR)sid;
        e = GetNamedSecurityInfoW(wpath, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, &old, NULL, &sd);
        if (e == ERROR_SUCCESS)
            e = SetEntriesInAclW(1, &ea, old, &acl);
        /* A protected list (the state directory's) stays protected. */
        SECURITY_DESCRIPTOR_CONTROL control = 0;
        DWORD revision = 0;
        SECURITY_INFORMATION what = DACL_SECURITY_INFORMATION;
        if (e == ERROR_SUCCESS && GetSecurityDescriptorControl(sd, &control, &revision) &&
            (control & SE_DACL_PROTECTED))
            what |= PROTECTED_DACL_SECURITY_INFORMATION;
        if (e == ERROR_SUCCESS)
            e = SetNamedSecurityInfoW(wpath, SE_FILE_OBJECT, what, NULL, NULL, acl, NULL);
        if (e != ERROR_SUCCESS)
            rc = fail_win(err, e, "cannot give the readers group access to", path);
    }
    LocalFree(acl);
    LocalFree(sd);
    LocalFree(from_text);
    free(wpath);
    return rc;
}

error_code platform_inventory_write(const platform_inventory_value *values, size_t count, error_info *err)
{
    HKEY key;
    LONG e = RegCreateKeyExW(HKEY_LOCAL_MACHINE, L"SOFTWARE\\outpost", 0, NULL, 0, KEY_SET_VALUE | KEY_WOW64_64KEY,
                             NULL, &key, NULL);
    if (e != ERROR_SUCCESS)
        return error_set_os(err, platform_win32_error_code((unsigned long)e), (int)e,
                            "cannot open HKLM\\SOFTWARE\\outpost for the inventory values");
    error_code rc = ERR_OK;
    for (size_t i = 0; i < count && rc == ERR_OK; i++) {
        wchar_t *name = widen(values[i].name);
        wchar_t *text = values[i].text ? widen(values[i].text) : NULL;
        if (!name || (values[i].text && !text)) {
            rc = error_set(err, ERR_NOMEM, "out of memory");
        } else if (values[i].is_number) {
            DWORD number = values[i].number;
            e = RegSetValueExW(key, name, 0, REG_DWORD, (const BYTE *)&number, sizeof number);
        } else if (text) {
            e = RegSetValueExW(key, name, 0, REG_SZ, (const BYTE *)text, (DWORD)((wcslen(text) + 1) * sizeof *text));
        } else {
            e = RegDeleteValueW(key, name);
            if (e == ERROR_FILE_NOT_FOUND)
                e = ERROR_SUCCESS;
        }
        if (rc == ERR_OK && e != ERROR_SUCCESS)
            rc = error_set_os(err, platform_win32_error_code((unsigned long)e), (int)e,
                              "cannot write HKLM\\SOFTWARE\\outpost\\%s", values[i].name);
        free(name);
        free(text);
    }
    RegCloseKey(key);
    return rc;
}

error_code platform_make_world_readable(const char *path, error_info *err)
{
    (void)path;
    (void)err;
    return ERR_OK;
}

/*
 * ReportEventW with the text as the single insertion string. The event id
 * has no severity bits (the message table, cross/windows/outpost-events.mc,
 * declares each id with "%1"), so Event Viewer shows it as is; the level
 * comes from the event type. When the source is not registered (no MSI),
 * Windows still records the entry, and Event Viewer shows the text under
 * "the following information was included with the event".
 */
error_code platform_event_log(platform_event_level level, unsigned event_id, const char *text, error_info *err)
{
    /* Line ends as Event Viewer's text box shows them: CRLF. */
    size_t lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    char *crlf = malloc(strlen(text) + lines + 1);
    if (!crlf)
        return fail_nomem(err);
    char *q = crlf;
    for (const char *p = text; *p; p++) {
        if (*p == '\n' && (p == text || p[-1] != '\r'))
            *q++ = '\r';
        *q++ = *p;
    }
    *q = '\0';
    wchar_t *wtext = widen(crlf);
    free(crlf);
    if (!wtext)
        return fail_nomem(err);
    HANDLE source = RegisterEventSourceW(NULL, L"outpost");
    if (!source) {
        DWORD e = GetLastError();
        free(wtext);
        return fail_win(err, e, "cannot open the Application event log for", "source outpost");
    }
    WORD type = level == PLATFORM_EVENT_ERROR     ? EVENTLOG_ERROR_TYPE
                : level == PLATFORM_EVENT_WARNING ? EVENTLOG_WARNING_TYPE
                                                  : EVENTLOG_INFORMATION_TYPE;
    LPCWSTR strings[1] = {wtext};
    BOOL ok = ReportEventW(source, type, 0, (DWORD)event_id, NULL, 1, 0, strings, NULL);
    DWORD e = ok ? 0 : GetLastError();
    DeregisterEventSource(source);
    free(wtext);
    if (!ok)
        return fail_win(err, e, "cannot write to the Application event log as", "source outpost");
    return ERR_OK;
}

/* ---- The scheduled task ---------------------------------------------------- */

error_code platform_executable_path(char **path, error_info *err)
{
    DWORD cap = MAX_PATH;
    for (int attempt = 0; attempt < 6; attempt++, cap *= 4) {
        wchar_t *buf = malloc(cap * sizeof *buf);
        if (!buf)
            return fail_nomem(err);
        DWORD n = GetModuleFileNameW(NULL, buf, cap);
        if (n == 0) {
            DWORD e = GetLastError();
            free(buf);
            return fail_win(err, e, "cannot find this program's file:", "GetModuleFileNameW");
        }
        if (n < cap) {
            char *utf8 = narrow_n(buf, (int)n);
            free(buf);
            if (!utf8)
                return fail_nomem(err);
            *path = utf8;
            return ERR_OK;
        }
        free(buf);
    }
    return error_set(err, ERR_IO, "cannot find this program's file: its path is too long");
}

/* %SystemRoot%\System32\<name> as UTF-8, malloc'd: schtasks is run by its
 * full path, never looked up in PATH. NULL on failure. */
static char *system_file(const wchar_t *name)
{
    wchar_t dir[MAX_PATH];
    UINT n = GetSystemDirectoryW(dir, MAX_PATH);
    if (n == 0 || n >= MAX_PATH - wcslen(name) - 2)
        return NULL;
    wchar_t full[MAX_PATH];
    swprintf(full, MAX_PATH, L"%ls\\%ls", dir, name);
    return narrow(full);
}

/* Runs schtasks.exe with args (after the program), waiting up to a minute.
 * Its output goes to ours. *exit_code is its exit status. */
static MUST_CHECK error_code run_schtasks(const char *const args[], int *exit_code, error_info *err)
{
    char *exe = system_file(L"schtasks.exe");
    if (!exe)
        return error_set(err, ERR_SPAWN, "cannot find schtasks.exe in the system directory");
    const char *argv[12] = {exe};
    size_t n = 1;
    for (; args[n - 1] && n < sizeof argv / sizeof argv[0] - 1; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    platform_spawn_result result = {0};
    error_code rc = platform_spawn(argv, 60000, &result, err);
    free(exe);
    if (rc != ERR_OK)
        return rc;
    if (result.timed_out)
        return error_set(err, ERR_SPAWN,
                         "schtasks.exe did not finish within a minute; the task may be half registered");
    *exit_code = result.exit_code;
    return ERR_OK;
}

error_code platform_task_register(const char *name, const char *xml, error_info *err)
{
    /* schtasks /XML reads UTF-16 with a byte-order mark. */
    wchar_t *wide = widen(xml);
    if (!wide)
        return error_set(err, ERR_INTERNAL, "the task definition is not valid UTF-8");
    size_t chars = wcslen(wide);
    unsigned char *bytes = malloc(2 + chars * 2);
    if (!bytes) {
        free(wide);
        return fail_nomem(err);
    }
    bytes[0] = 0xff;
    bytes[1] = 0xfe;
    for (size_t i = 0; i < chars; i++) {
        bytes[2 + 2 * i] = (unsigned char)(wide[i] & 0xff);
        bytes[3 + 2 * i] = (unsigned char)(wide[i] >> 8);
    }
    free(wide);

    /* A fresh, owner-only file: nobody else may swap the definition of a
     * SYSTEM task between this write and schtasks reading it. */
    wchar_t temp_dir[MAX_PATH + 1];
    DWORD n = GetTempPathW(MAX_PATH + 1, temp_dir);
    char *dir = n > 0 && n <= MAX_PATH ? narrow_n(temp_dir, (int)n) : NULL;
    unsigned char rnd[8] = {0};
    if (platform_random_bytes(rnd, sizeof rnd, err) != ERR_OK) {
        free(dir);
        free(bytes);
        return error_prefix(err, "cannot register the scheduled task %s", name);
    }
    char file_name[64];
    snprintf(file_name, sizeof file_name, "outpost-task-%02x%02x%02x%02x%02x%02x%02x%02x.xml", rnd[0], rnd[1], rnd[2],
             rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    char *file = dir ? platform_path_join(dir, file_name) : NULL;
    free(dir);
    if (!file) {
        free(bytes);
        return error_set(err, ERR_IO, "cannot register the scheduled task %s: no temporary directory", name);
    }
    error_code rc = platform_write_new_file(file, bytes, 2 + chars * 2, true, err);
    free(bytes);
    if (rc != ERR_OK) {
        free(file);
        return error_prefix(err, "cannot register the scheduled task");
    }
    const char *args[] = {"/Create", "/TN", name, "/XML", file, "/F", NULL};
    int code = 0;
    rc = run_schtasks(args, &code, err);
    ERROR_IGNORE(platform_remove_file(file, NULL)); /* a stray temp file must not fail a registered task */
    free(file);
    if (rc == ERR_OK && code != 0)
        rc = error_set(err, ERR_SPAWN,
                       "schtasks /Create /TN %s failed with exit code %d (its message is above); registering a "
                       "SYSTEM task needs an elevated prompt",
                       name, code);
    return rc;
}

error_code platform_task_delete(const char *name, error_info *err)
{
    const char *args[] = {"/Delete", "/TN", name, "/F", NULL};
    int code = 0;
    error_code rc = run_schtasks(args, &code, err);
    if (rc != ERR_OK || code == 0)
        return rc;
    /* schtasks says "cannot find the file" for a missing task with the same
     * exit code as for a refusal: the task store (System32\Tasks, one file
     * per task) tells them apart. */
    char *tasks = system_file(L"Tasks");
    char *stored = tasks ? platform_path_join(tasks, name[0] == '\\' ? name + 1 : name) : NULL;
    bool exists = !stored || platform_path_stat(stored, NULL) != PLATFORM_PATH_NONE;
    free(tasks);
    free(stored);
    if (!exists)
        return ERR_OK;
    return error_set(err, ERR_SPAWN,
                     "schtasks /Delete /TN %s failed with exit code %d (its message is above); removing a SYSTEM "
                     "task needs an elevated prompt",
                     name, code);
}
