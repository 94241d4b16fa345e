/*
 * utf16.c — UTF-8 at platform.h's interface, UTF-16 underneath: the
 * conversions every file of this folder makes before a ...W call and after
 * it (win32_int.h). Windows only: POSIX takes the UTF-8 bytes as they are.
 */
#include "platform/win32/win32_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

wchar_t *win32_widen(const char *utf8)
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

char *win32_narrow_n(const wchar_t *wide, int len)
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

char *win32_narrow(const wchar_t *wide)
{
    return win32_narrow_n(wide, (int)wcslen(wide));
}
