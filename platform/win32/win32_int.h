/*
 * win32_int.h — what the files of platform/win32/ share, and nothing outside
 * this folder includes (scripts/check-layering holds that; agent/ sees only
 * platform.h). Every .c here includes it first: it sets the macros
 * <windows.h> must see before it is read.
 *
 * platform/win32/ is the Win32 half of platform.h, for Windows 10 / Server
 * 2016 and later, one file per concern, named as its POSIX twin in
 * platform/posix/ (platform.h's sections say which file holds what; acl,
 * certstore, eventlog, registry and schedtask are the concerns POSIX has
 * little or nothing of, utf16 one only Windows needs). Rules every file
 * here keeps:
 *  - Strings are UTF-8 at the interface and UTF-16 underneath: every path
 *    goes through win32_widen() before it reaches a ...W function, so
 *    non-ASCII paths work whatever the ANSI code page.
 *  - OS errors are translated once: platform_win32_error_code
 *    (win32_error.h) maps GetLastError() to an error_code (errno values from
 *    the C runtime go through common.c's table), messages carry
 *    FormatMessage's text, and the raw value is kept in os_error.
 *  - Handles are created non-inheritable; a spawned program gets exactly
 *    stdin (the null device), stdout and stderr, through an explicit handle
 *    list (libraries' handles, Winsock sockets, may be inheritable), and
 *    nothing is spawned when the list cannot be set (process.c).
 *
 * Choices where Windows differs from POSIX (README.md, "Windows notes for
 * administrators", says what they mean for whoever runs outpost):
 *  - the secret file check reads the file's DACL and refuses read access for
 *    Everyone, Authenticated Users, Users, Guests and Anonymous (trust.c);
 *  - state_dir is created with a protected DACL (SYSTEM, Administrators, the
 *    running user; acl.c) and a directory is trusted by its owner and DACL
 *    (platform_win32_dir_trusted), where POSIX looks at owner and mode bits;
 *  - the lock is LockFileEx on a byte range past the PID text, so the PID
 *    stays readable while the lock is held (lock.c);
 *  - renames over a file retry briefly on sharing violations, which virus
 *    scanners and indexers cause by opening fresh files for a moment (fs.c).
 */
#ifndef OUTPOST_WIN32_INT_H
#define OUTPOST_WIN32_INT_H

#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0A00 /* Windows 10: GetSystemTimePreciseAsFileTime, handle lists */
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef UNICODE
#define UNICODE
#endif

#include "platform/names.h"
#include "platform/platform.h"
#include "platform/win32_error.h"

#include <windows.h>

#include <stdbool.h>
#include <stddef.h>
#include <wchar.h>

/* ---- UTF-8 and UTF-16 (utf16.c) ------------------------------------------ */

/* UTF-16 copy of a UTF-8 string; malloc'd. NULL on invalid UTF-8 (errno
 * EINVAL) or out of memory (errno ENOMEM). */
wchar_t *win32_widen(const char *utf8);

/* UTF-8 copy of the first len characters of a UTF-16 string (len < 0: up to
 * the NUL); malloc'd, NULL on failure. Unpaired surrogates become U+FFFD. */
char *win32_narrow_n(const wchar_t *wide, int len);

/* UTF-8 copy of a NUL-terminated UTF-16 string; malloc'd, NULL on failure. */
char *win32_narrow(const wchar_t *wide);

/* ---- Errors (error.c) ---------------------------------------------------- */

/* The system's text for e, one line without the final period, into buf. */
const char *win32_message(DWORD e, char *buf, size_t size);

/* Fills err with "<what> <path>: <system text>" and the matching code. */
MUST_CHECK error_code win32_fail(error_info *err, DWORD e, const char *what, const char *path);

/* As win32_fail but always ERR_IO: for walks and removals, where "not found"
 * would mislead the caller. */
MUST_CHECK error_code win32_fail_io(error_info *err, DWORD e, const char *what, const char *path);

/* Fills err with "out of memory"; the code is returned for convenience. */
error_code win32_fail_nomem(error_info *err);

/* win32_widen() for a path, with the error filled in on failure: ERR_NOMEM,
 * or ERR_IO naming the path that is not valid UTF-8. */
MUST_CHECK error_code win32_widen_path(const char *path, wchar_t **wide, error_info *err);

/* ---- Paths and files (fs.c) ---------------------------------------------- */

/* Whether c separates path components ('\\' or '/'). */
bool win32_is_sep(wchar_t c);

/* "<dir>\<name>" in UTF-16; malloc'd, NULL on OOM. */
wchar_t *win32_join_w(const wchar_t *dir, const wchar_t *name);

/* Writes all len bytes to h. FALSE with GetLastError() on failure. */
BOOL win32_write_all(HANDLE h, const void *data, size_t len);

/* CreateFileW, except that a path below the held state directory
 * (platform_state_root_open) is opened relative to its handle (NtCreateFile
 * with a root directory: the path down to state_dir is not looked up again);
 * others, or without ntdll's entry points, by name (stateroot.c).
 * GetLastError as CreateFileW's. */
HANDLE win32_create_file(const wchar_t *wpath, DWORD access, DWORD share, SECURITY_ATTRIBUTES *sa, DWORD disposition,
                         DWORD flags);

/* Reads from h until end of file into a malloc'd, NUL-terminated buffer of
 * at most limit bytes (+NUL; hint: the expected size) in *data, *len bytes
 * (fs.c); one byte past limit proves the file too large (ERR_IO). path
 * names it in messages. */
MUST_CHECK error_code win32_read_handle(HANDLE h, const char *path, size_t limit, size_t hint, char **data, size_t *len,
                                        error_info *err);

/* Appends a UTF-8 copy of name to names (names.h). */
MUST_CHECK error_code win32_names_append(platform_names *names, const wchar_t *name, error_info *err);

/* ---- Access lists (acl.c) ------------------------------------------------ */

/* The SID of the user this process runs as (the token's user), malloc'd;
 * NULL on failure. */
PSID win32_current_user_sid(void);

/* The state directory's security descriptor (platform_mkdirs_private,
 * platform_make_private_dir): a protected DACL granting SYSTEM,
 * Administrators and the user running outpost full control, inherited by
 * everything created below. *sd is the caller's, freed with LocalFree; what
 * and path name a failure. */
MUST_CHECK error_code win32_private_dir_sd(const char *path, const char *what, PSECURITY_DESCRIPTOR *sd,
                                           error_info *err);

/* The security descriptor of a file created owner-only: a protected DACL
 * (nothing inherited) granting full control to its owner, SYSTEM and
 * Administrators alone. *sd is the caller's, freed with LocalFree; a
 * failure names path. */
MUST_CHECK error_code win32_owner_only_sd(const char *path, PSECURITY_DESCRIPTOR *sd, error_info *err);

/* ---- The registry (registry.c) ------------------------------------------- */

/* A REG_SZ / REG_EXPAND_SZ value of key as malloc'd UTF-8; NULL when absent,
 * of another type or longer than 1024 characters (REGISTRY_VALUE_MAX). */
char *win32_registry_string(HKEY key, const wchar_t *value_name);

#endif
