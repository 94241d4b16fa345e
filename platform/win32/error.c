/*
 * error.c — how the Win32 files say what failed: GetLastError() values to
 * outpost's error_code (platform_win32_error_code, win32_error.h, the twin
 * of common.c's errno table), FormatMessage's text, and one line naming what
 * failed and the path, with the raw value in os_error (win32_int.h); and a
 * path in UTF-16 or the error that says why not (win32_widen_path).
 */
#include "platform/win32/win32_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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

const char *win32_message(DWORD e, char *buf, size_t size)
{
    wchar_t text[256];
    DWORD n =
        FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e,
                       MAKELANGID(LANG_NEUTRAL, SUBLANG_DEFAULT), text, (DWORD)(sizeof text / sizeof text[0]), NULL);
    while (n > 0 && (text[n - 1] == L'\r' || text[n - 1] == L'\n' || text[n - 1] == L' ' || text[n - 1] == L'.'))
        n--;
    char *utf8 = n > 0 ? win32_narrow_n(text, (int)n) : NULL;
    if (utf8)
        snprintf(buf, size, "%s", utf8);
    else
        snprintf(buf, size, "Windows error %lu", (unsigned long)e);
    free(utf8);
    return buf;
}

error_code win32_fail(error_info *err, DWORD e, const char *what, const char *path)
{
    char text[256];
    return error_set_os(err, platform_win32_error_code(e), (int)e, "%s %s: %s", what, path,
                        win32_message(e, text, sizeof text));
}

error_code win32_fail_io(error_info *err, DWORD e, const char *what, const char *path)
{
    char text[256];
    return error_set_os(err, ERR_IO, (int)e, "%s %s: %s", what, path, win32_message(e, text, sizeof text));
}

error_code win32_fail_nomem(error_info *err)
{
    return error_set_os(err, ERR_NOMEM, ERROR_NOT_ENOUGH_MEMORY, "out of memory");
}

error_code win32_widen_path(const char *path, wchar_t **wide, error_info *err)
{
    *wide = win32_widen(path);
    if (*wide)
        return ERR_OK;
    if (errno == ENOMEM)
        return win32_fail_nomem(err);
    return error_set(err, ERR_IO, "invalid path %s: not valid UTF-8", path);
}
