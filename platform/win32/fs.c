/*
 * fs.c — files for Windows (platform.h, "Files"): _wfopen with UTF-8 names
 * and handles no child inherits, FlushFileBuffers, atomic replacement (a
 * flushed temporary file moved over the old one, retried while a scanner
 * holds it), whole-file reads with a cap, removal that never leaves the tree
 * through a reparse point, directories (the state directory's created with
 * acl.c's protected list) and listing. Each write, rename, flush and removal
 * passes a crash point (crash_point.h) for the crash tests.
 */
#include "platform/win32/win32_int.h"
#include "platform/crash_point.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>

/* How long a rename waits out another process's open handle on the target
 * (virus scanners, indexers, a log shipper reading status.json). */
#define RENAME_RETRY_MS 2000

bool win32_is_sep(wchar_t c)
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
    while (len > 0 && !win32_is_sep(path[len - 1]))
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

wchar_t *win32_join_w(const wchar_t *dir, const wchar_t *name)
{
    size_t dir_len = wcslen(dir), name_len = wcslen(name);
    bool need_sep = dir_len > 0 && !win32_is_sep(dir[dir_len - 1]);
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

error_code platform_open_regular(const char *path, FILE **f, uint64_t *size, error_info *err)
{
    *f = NULL;
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* A reparse point is opened as itself, and refused; a pipe or device is
     * not FILE_TYPE_DISK. */
    HANDLE h = win32_create_file(wpath, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                                 OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT);
    free(wpath);
    if (h == INVALID_HANDLE_VALUE)
        return win32_fail(err, GetLastError(), "cannot open", path);
    BY_HANDLE_FILE_INFORMATION info;
    if (GetFileType(h) != FILE_TYPE_DISK || !GetFileInformationByHandle(h, &info) ||
        (info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT))) {
        CloseHandle(h);
        return error_set(err, ERR_IO, "%s is not a regular file (a link, directory or device); refusing it", path);
    }
    int fd = _open_osfhandle((intptr_t)h, _O_RDONLY | _O_BINARY);
    if (fd < 0) {
        CloseHandle(h);
        return win32_fail_nomem(err);
    }
    *f = _fdopen(fd, "rb");
    if (!*f) {
        _close(fd);
        return win32_fail_nomem(err);
    }
    *size = ((uint64_t)info.nFileSizeHigh << 32) | info.nFileSizeLow;
    return ERR_OK;
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
    wchar_t *wpath = win32_widen(path);
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
        return error_set_os(err, platform_win32_error_code(e), (int)e, "cannot flush file to disk: %s",
                            win32_message(e, text, sizeof text));
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
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    wchar_t *dir = parent_dir_w(wpath);
    free(wpath);
    if (!dir)
        return win32_fail_nomem(err);
    HANDLE h = CreateFileW(dir, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
    free(dir);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND)
            return win32_fail(err, e, "cannot flush the directory of", path);
        return ERR_OK;
    }
    if (!FlushFileBuffers(h)) {
        DWORD e = GetLastError();
        if (e != ERROR_ACCESS_DENIED && e != ERROR_INVALID_FUNCTION && e != ERROR_INVALID_PARAMETER &&
            e != ERROR_NOT_SUPPORTED)
            rc = win32_fail(err, e, "cannot flush the directory of", path);
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

BOOL win32_write_all(HANDLE h, const void *data, size_t len)
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

/* Creates "<path>.<16 hex digits>.tmp" exclusively (with the security
 * attributes sa, NULL: the folder's inherited ones); sets *handle and the
 * malloc'd *tmp_path on success. */
static MUST_CHECK error_code open_temp(const wchar_t *wpath, const char *path, SECURITY_ATTRIBUTES *sa, HANDLE *handle,
                                       wchar_t **tmp_path, error_info *err)
{
    size_t size = wcslen(wpath) + 1 + 16 + 4 + 1;
    wchar_t *tmp = malloc(size * sizeof *tmp);
    if (!tmp)
        return win32_fail_nomem(err);
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned char rnd[8];
        if (platform_random_bytes(rnd, sizeof rnd, NULL) != ERR_OK) {
            /* Uniqueness, not secrecy, is what matters here. */
            uint64_t v = ((uint64_t)GetCurrentProcessId() << 32) ^ GetTickCount64() ^ (uint64_t)attempt;
            memcpy(rnd, &v, sizeof rnd);
        }
        swprintf(tmp, size, L"%ls.%02x%02x%02x%02x%02x%02x%02x%02x.tmp", wpath, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
                 rnd[5], rnd[6], rnd[7]);
        HANDLE h = win32_create_file(tmp, GENERIC_WRITE | DELETE, 0, sa, CREATE_NEW, FILE_ATTRIBUTE_NORMAL);
        if (h != INVALID_HANDLE_VALUE) {
            *handle = h;
            *tmp_path = tmp;
            return ERR_OK;
        }
        DWORD e = GetLastError();
        if (e != ERROR_FILE_EXISTS && e != ERROR_ALREADY_EXISTS) {
            free(tmp);
            return win32_fail(err, e, "cannot create a temporary file to replace", path);
        }
    }
    free(tmp);
    return error_set(err, ERR_IO, "cannot create a temporary file to replace %s: too many name collisions", path);
}

/* A replacement being written (platform.h): the temporary file open for
 * writing and the first failure (sticky). */
struct platform_atomic_file {
    char *path;       /* the file replaced, UTF-8 */
    wchar_t *wpath;   /* the same, for the calls */
    wchar_t *tmp;     /* "<path>.<16 hex digits>.tmp" */
    HANDLE h;         /* the temporary file, open */
    DWORD error;      /* first GetLastError() of a step, 0 while all is well */
    const char *what; /* which step failed */
};

static void atomic_free(platform_atomic_file *f)
{
    free(f->tmp);
    free(f->wpath);
    free(f->path);
    free(f);
}

error_code platform_atomic_open(const char *path, bool owner_only, platform_atomic_file **out, error_info *err)
{
    *out = NULL;
    platform_atomic_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = _strdup(path))) {
        free(f);
        return win32_fail_nomem(err);
    }
    crash_point("write_atomic", path);
    error_code rc = win32_widen_path(path, &f->wpath, err);
    /* Owner only: a protected DACL (nothing inherited) for the owner, SYSTEM
     * and Administrators; otherwise the folder's inherited permissions. */
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
    PSECURITY_DESCRIPTOR sd = NULL;
    if (rc == ERR_OK && owner_only && (rc = win32_owner_only_sd(path, &sd, err)) == ERR_OK)
        sa.lpSecurityDescriptor = sd;
    if (rc == ERR_OK)
        rc = open_temp(f->wpath, path, owner_only ? &sa : NULL, &f->h, &f->tmp, err);
    if (sd)
        LocalFree(sd);
    if (rc != ERR_OK) {
        atomic_free(f);
        return rc;
    }
    *out = f;
    return ERR_OK;
}

error_code platform_atomic_write(platform_atomic_file *f, const void *data, size_t len, error_info *err)
{
    if (!f->what && !win32_write_all(f->h, data, len))
        f->error = GetLastError(), f->what = "cannot write";
    return f->what ? win32_fail(err, f->error, f->what, f->path) : ERR_OK;
}

void platform_atomic_abort(platform_atomic_file *f)
{
    if (!f)
        return;
    CloseHandle(f->h);
    DeleteFileW(f->tmp);
    atomic_free(f);
}

error_code platform_atomic_commit(platform_atomic_file *f, const char *readers_group, error_info *err)
{
    if (!f->what && !FlushFileBuffers(f->h))
        f->error = GetLastError(), f->what = "cannot flush to disk";
    CloseHandle(f->h);
    error_code rc = f->what ? win32_fail(err, f->error, f->what, f->path) : ERR_OK;
    if (rc == ERR_OK && readers_group) {
        /* Shared by the name of the temporary file, now that no handle holds
         * it: the path as given and the suffix open_temp added (ASCII). */
        size_t n = strlen(f->path), suffix = sizeof ".0123456789abcdef.tmp" - 1;
        char *tmp8 = malloc(n + suffix + 1);
        if (tmp8) {
            memcpy(tmp8, f->path, n);
            const wchar_t *w = f->tmp + wcslen(f->tmp) - suffix;
            for (size_t i = 0; i <= suffix; i++)
                tmp8[n + i] = (char)w[i];
        }
        rc = tmp8 ? platform_share_with_group(tmp8, readers_group, err) : win32_fail_nomem(err);
        free(tmp8);
    }
    if (rc == ERR_OK)
        crash_point("write_atomic_rename", f->path); /* leaves the flushed temporary file behind */
    if (rc == ERR_OK && !move_replace(f->tmp, f->wpath))
        rc = win32_fail(err, GetLastError(), "cannot rename the temporary file over", f->path);
    if (rc != ERR_OK)
        DeleteFileW(f->tmp);
    atomic_free(f);
    return rc;
}

error_code platform_write_new_file(const char *path, const void *data, size_t len, bool owner_only, error_info *err)
{
    crash_point("write_new_file", path);
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* Owner only: a protected DACL (nothing inherited) for the owner, SYSTEM
     * and Administrators; otherwise the folder's inherited permissions. */
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
    PSECURITY_DESCRIPTOR sd = NULL;
    if (owner_only) {
        rc = win32_owner_only_sd(path, &sd, err);
        if (rc != ERR_OK) {
            free(wpath);
            return rc;
        }
        sa.lpSecurityDescriptor = sd;
    }
    HANDLE h = win32_create_file(wpath, GENERIC_WRITE, 0, owner_only ? &sa : NULL, CREATE_NEW,
                                 FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT);
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
        return win32_fail(err, e, "cannot create", path);
    }
    const char *what = NULL;
    DWORD e = 0;
    if (!win32_write_all(h, data, len))
        e = GetLastError(), what = "cannot write";
    else if (!FlushFileBuffers(h))
        e = GetLastError(), what = "cannot flush to disk";
    CloseHandle(h);
    if (what) {
        DeleteFileW(wpath);
        rc = win32_fail(err, e, what, path);
    }
    free(wpath);
    return rc;
}

error_code platform_rename(const char *from, const char *to, error_info *err)
{
    crash_point("rename", to);
    wchar_t *wfrom = NULL, *wto = NULL;
    error_code rc = win32_widen_path(from, &wfrom, err);
    if (rc == ERR_OK)
        rc = win32_widen_path(to, &wto, err);
    if (rc == ERR_OK && !move_replace(wfrom, wto)) {
        DWORD e = GetLastError();
        char text[256];
        if (e == ERROR_NOT_SAME_DEVICE)
            rc = error_set_os(err, ERR_IO, (int)e, "cannot rename %s to %s: they are on different volumes", from, to);
        else
            rc = error_set_os(err, platform_win32_error_code(e), (int)e, "cannot rename %s to %s: %s", from, to,
                              win32_message(e, text, sizeof text));
    }
    free(wfrom);
    free(wto);
    return rc;
}

error_code win32_read_handle(HANDLE h, const char *path, size_t limit, size_t hint, char **data, size_t *len,
                             error_info *err)
{
    size_t cap = (hint < limit ? hint : limit) + 1;
    char *buf = malloc(cap);
    if (!buf)
        return win32_fail_nomem(err);
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
                    return win32_fail(err, e, "cannot read", path);
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
                return win32_fail_nomem(err);
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
            return win32_fail(err, e, "cannot read", path);
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
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs != INVALID_FILE_ATTRIBUTES && (attrs & FILE_ATTRIBUTE_DIRECTORY)) {
        free(wpath);
        return error_set_os(err, ERR_IO, ERROR_DIRECTORY, "cannot read %s: it is a directory", path);
    }
    /* Others may keep reading, writing or renaming the file meanwhile, as
     * POSIX lets them. */
    HANDLE h = win32_create_file(wpath, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                                 OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_SEQUENTIAL_SCAN);
    free(wpath);
    if (h == INVALID_HANDLE_VALUE)
        return win32_fail(err, GetLastError(), "cannot open", path);
    LARGE_INTEGER size;
    size_t hint = 4096;
    if (GetFileSizeEx(h, &size) && size.QuadPart > 0)
        hint = (uint64_t)size.QuadPart > (uint64_t)limit ? limit : (size_t)size.QuadPart;
    rc = win32_read_handle(h, path, limit, hint, data, len, err);
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
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    if (!delete_file(wpath)) {
        DWORD e = GetLastError();
        if (e != ERROR_FILE_NOT_FOUND && e != ERROR_PATH_NOT_FOUND)
            rc = win32_fail_io(err, e, "cannot remove", path);
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
    wchar_t *pattern = win32_join_w(wdir, L"*");
    if (!pattern)
        return win32_fail_nomem(err);
    WIN32_FIND_DATAW fd;
    HANDLE find = FindFirstFileExW(pattern, FindExInfoBasic, &fd, FindExSearchNameMatch, NULL, 0);
    free(pattern);
    if (find == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        return e == ERROR_FILE_NOT_FOUND ? ERR_OK : win32_fail_io(err, e, "cannot list", path);
    }
    error_code rc = ERR_OK;
    do {
        if (wcscmp(fd.cFileName, L".") == 0 || wcscmp(fd.cFileName, L"..") == 0)
            continue;
        wchar_t *child = win32_join_w(wdir, fd.cFileName);
        if (!child) {
            rc = win32_fail_nomem(err);
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
                char *name = win32_narrow(child);
                rc = win32_fail_io(err, e, "cannot remove", name ? name : path);
                free(name);
            }
        }
        free(child);
    } while (rc == ERR_OK && FindNextFileW(find, &fd));
    if (rc == ERR_OK && GetLastError() != ERROR_NO_MORE_FILES)
        rc = win32_fail_io(err, GetLastError(), "cannot list", path);
    FindClose(find);
    return rc;
}

error_code platform_remove_tree(const char *path, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs == INVALID_FILE_ATTRIBUTES) {
        DWORD e = GetLastError();
        if (e != ERROR_FILE_NOT_FOUND && e != ERROR_PATH_NOT_FOUND)
            rc = win32_fail_io(err, e, "cannot remove", path);
    } else if (!(attrs & FILE_ATTRIBUTE_DIRECTORY)) {
        crash_point("remove", path);
        if (!delete_file(wpath))
            rc = win32_fail_io(err, GetLastError(), "cannot remove", path);
    } else {
        crash_point("remove_tree", path);
        /* A link to a directory: remove the link, not what it points to. */
        if (!(attrs & FILE_ATTRIBUTE_REPARSE_POINT))
            rc = empty_dir(wpath, path, err);
        if (rc == ERR_OK && !RemoveDirectoryW(wpath) && GetLastError() != ERROR_FILE_NOT_FOUND)
            rc = win32_fail_io(err, GetLastError(), "cannot remove", path);
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
        while (p[n] && !win32_is_sep(p[n]))
            n++;
        return p[n] ? n + 1 : n;
    }
    if (win32_is_sep(p[0]) && win32_is_sep(p[1])) { /* \\server\share\ */
        size_t n = 2;
        for (int parts = 0; parts < 2 && p[n]; parts++) {
            while (p[n] && !win32_is_sep(p[n]))
                n++;
            if (p[n])
                n++;
        }
        return n;
    }
    if (p[0] && p[1] == L':')
        return win32_is_sep(p[2]) ? 3 : 2;
    return win32_is_sep(p[0]) ? 1 : 0;
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
        char *name = win32_narrow(dir);
        error_code rc =
            error_set_os(err, ERR_IO, ERROR_ALREADY_EXISTS,
                         "cannot create directory %s: %s exists and is not a directory", full, name ? name : full);
        free(name);
        return rc;
    }
    /* Parents are made first: a missing one here is a race, not "not found". */
    error_code code = platform_win32_error_code(e) == ERR_NOT_FOUND ? ERR_IO : platform_win32_error_code(e);
    char text[256];
    return error_set_os(err, code, (int)e, "cannot create directory %s: %s", full, win32_message(e, text, sizeof text));
}

/* platform_mkdirs, every new level created with security sa (NULL: inherited
 * from the parent). */
static MUST_CHECK error_code mkdirs_with(const char *path, SECURITY_ATTRIBUTES *sa, error_info *err)
{
    if (path[0] == '\0')
        return error_set(err, ERR_IO, "cannot create a directory with an empty name");
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* Create each prefix ending at a separator (after the root), then the
     * whole path. */
    size_t start = root_length(wpath);
    for (wchar_t *p = wpath + start;; p++) {
        if (*p != L'\0' && !win32_is_sep(*p))
            continue;
        if (p == wpath + start || win32_is_sep(p[-1])) {
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

error_code platform_mkdirs_private(const char *path, error_info *err)
{
    PSECURITY_DESCRIPTOR sd = NULL;
    error_code rc = win32_private_dir_sd(path, "cannot create directory", &sd, err);
    if (rc != ERR_OK)
        return rc;
    SECURITY_ATTRIBUTES sa = {sizeof sa, sd, FALSE};
    rc = mkdirs_with(path, &sa, err);
    LocalFree(sd);
    return rc;
}

platform_path_kind platform_path_stat(const char *path, uint64_t *size)
{
    wchar_t *wpath = win32_widen(path);
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

error_code win32_names_append(platform_names *names, const wchar_t *name, error_info *err)
{
    return platform_names_push(names, win32_narrow(name)) ? ERR_OK : win32_fail_nomem(err);
}

error_code platform_list_dir(const char *path, char ***names, size_t *count, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs == INVALID_FILE_ATTRIBUTES) {
        rc = win32_fail(err, GetLastError(), "cannot list", path);
        free(wpath);
        return rc;
    }
    if (!(attrs & FILE_ATTRIBUTE_DIRECTORY)) {
        free(wpath);
        return error_set_os(err, ERR_IO, ERROR_DIRECTORY, "cannot list %s: not a directory", path);
    }
    wchar_t *pattern = win32_join_w(wpath, L"*");
    free(wpath);
    if (!pattern)
        return win32_fail_nomem(err);
    WIN32_FIND_DATAW fd;
    HANDLE find = FindFirstFileExW(pattern, FindExInfoBasic, &fd, FindExSearchNameMatch, NULL, 0);
    free(pattern);
    platform_names found = {0};
    if (find == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        if (e != ERROR_FILE_NOT_FOUND)
            return win32_fail(err, e, "cannot list", path);
    } else {
        do {
            if (wcscmp(fd.cFileName, L".") == 0 || wcscmp(fd.cFileName, L"..") == 0)
                continue;
            rc = win32_names_append(&found, fd.cFileName, err);
        } while (rc == ERR_OK && FindNextFileW(find, &fd));
        if (rc == ERR_OK && GetLastError() != ERROR_NO_MORE_FILES)
            rc = win32_fail_io(err, GetLastError(), "cannot list", path);
        FindClose(find);
    }
    return platform_names_finish(&found, rc, true, names, count);
}

error_code platform_free_space(const char *path, uint64_t *bytes, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
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
        rc = win32_fail(err, GetLastError(), "cannot read the free space of", path);
    free(wpath);
    return rc;
}
