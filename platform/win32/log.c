/*
 * log.c — the log file (platform.h, "The log file"): opened with
 * FILE_APPEND_DATA alone, created owner-only, never through a reparse
 * point, and shared for deletion, so that every line is one write at the
 * end of the file while another outpost may rotate it.
 */
#include "platform/win32/win32_int.h"
#include "platform/crash_point.h"

#include <stdlib.h>

struct platform_append_file {
    HANDLE handle;
};

error_code platform_append_open(const char *path, platform_append_file **file, uint64_t *size, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* A new file gets the owner-only DACL (it applies only when OPEN_ALWAYS
     * creates); inside state_dir it would inherit the same protection.
     * FILE_APPEND_DATA alone: every WriteFile goes to the current end of
     * the file, as O_APPEND. FILE_SHARE_DELETE: another outpost may rotate
     * (rename) the file while this one holds it. */
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
    PSECURITY_DESCRIPTOR sd = NULL;
    rc = win32_owner_only_sd(path, &sd, err);
    if (rc != ERR_OK) {
        free(wpath);
        return rc;
    }
    sa.lpSecurityDescriptor = sd;
    HANDLE h =
        win32_create_file(wpath, FILE_APPEND_DATA | SYNCHRONIZE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                          &sa, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT);
    DWORD e = GetLastError();
    LocalFree(sd);
    free(wpath);
    if (h == INVALID_HANDLE_VALUE)
        return win32_fail(err, e, "cannot open for appending", path);
    BY_HANDLE_FILE_INFORMATION info;
    if (!GetFileInformationByHandle(h, &info) || (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
        CloseHandle(h);
        return error_set(err, ERR_IO, "cannot append to %s: it is a link (reparse point), not a file", path);
    }
    platform_append_file *f = malloc(sizeof *f);
    if (!f) {
        CloseHandle(h);
        return win32_fail_nomem(err);
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
    if (!win32_write_all(file->handle, data, len)) {
        DWORD e = GetLastError();
        char text[256];
        return error_set_os(err, platform_win32_error_code(e), (int)e, "cannot append to the log file: %s",
                            win32_message(e, text, sizeof text));
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
