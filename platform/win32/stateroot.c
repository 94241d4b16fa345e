/*
 * stateroot.c — the state directory held open (platform_state_root_open,
 * PRODUCT.md section 9). Where the POSIX twin reaches every path below it
 * from the handle, Windows holds the directory so that it cannot be
 * renamed or replaced while outpost runs; the file calls keep their names.
 */
#include "platform/win32/win32_int.h"

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
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    HANDLE h = CreateFileW(wpath, FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | READ_CONTROL,
                           FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING,
                           FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    DWORD e = GetLastError();
    free(wpath);
    if (h == INVALID_HANDLE_VALUE)
        return win32_fail(err, e, "cannot open the state directory", path);
    BY_HANDLE_FILE_INFORMATION info;
    if (!GetFileInformationByHandle(h, &info))
        rc = win32_fail_io(err, GetLastError(), "cannot read the state directory", path);
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

error_code platform_hold_dir_of(const char *path, error_info *err)
{
    /* Judged like state_dir; the files there are opened by name, a reparse
     * point at the file refused by the openers (FILE_FLAG_OPEN_REPARSE_POINT). */
    char *dir = platform_path_dir(path);
    if (!dir)
        return win32_fail_nomem(err);
    error_code rc = platform_check_private_dir(dir, err);
    if (rc == ERR_NOT_FOUND)
        error_prefix(
            err, "the folder of %s does not exist; create it (owned by Administrators, writable by them alone)", path);
    free(dir);
    return rc;
}

void platform_state_root_close(void)
{
    if (state_root != INVALID_HANDLE_VALUE)
        CloseHandle(state_root);
    state_root = INVALID_HANDLE_VALUE;
}
