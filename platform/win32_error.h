/*
 * win32_error.h — win32/error.c's table from GetLastError() values to
 * outpost's error_code, the Win32 twin of platform_os_error_code
 * (platform.h), kept out of platform.h because only Windows has these
 * values. Declared here so that cross/tests/test_platform_win32.c (under
 * wine) can check the table; agent/ never includes this header.
 */
#ifndef OUTPOST_WIN32_ERROR_H
#define OUTPOST_WIN32_ERROR_H

#include "base/error.h"

/*
 * ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND and the bad drive or network
 * names ERR_NOT_FOUND; ERROR_DISK_FULL and ERROR_HANDLE_DISK_FULL (a full
 * quota) ERR_DISK_FULL; ERROR_ACCESS_DENIED and ERROR_PRIVILEGE_NOT_HELD
 * ERR_PERMISSION; ERROR_NOT_ENOUGH_MEMORY and ERROR_OUTOFMEMORY ERR_NOMEM;
 * any other ERR_IO. win_error is a DWORD.
 */
MUST_CHECK error_code platform_win32_error_code(unsigned long win_error);

#endif
