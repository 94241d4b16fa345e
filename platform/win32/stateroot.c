/*
 * stateroot.c — the state directory held open (platform_state_root_open,
 * PRODUCT.md section 9), and files below it opened relative to that handle
 * (win32_create_file: NtCreateFile with OBJECT_ATTRIBUTES.RootDirectory,
 * resolved from ntdll at run time as libuv does), so the path down to
 * state_dir is not looked up again by name. Renames and folder creation
 * keep their names.
 */
#include "platform/win32/win32_int.h"

#include <winternl.h>

#include <stdlib.h>
#include <string.h>

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
static wchar_t *state_root_path; /* its full path (GetFullPathNameW), malloc'd; NULL when none is held */

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
    /* The name it was opened by, to tell which later paths lie below it. */
    wchar_t *wide = win32_widen(path);
    DWORD n = wide ? GetFullPathNameW(wide, 0, NULL, NULL) : 0;
    state_root_path = n ? malloc(n * sizeof *state_root_path) : NULL;
    if (state_root_path && GetFullPathNameW(wide, n, state_root_path, NULL) == 0) {
        free(state_root_path);
        state_root_path = NULL;
    }
    free(wide);
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
    free(state_root_path);
    state_root_path = NULL;
}

/* ---- Opening relative to the held directory ------------------------------ */

#ifndef FILE_OPEN_FOR_BACKUP_INTENT
#define FILE_OPEN_FOR_BACKUP_INTENT 0x00004000
#endif
#ifndef FILE_SEQUENTIAL_ONLY
#define FILE_SEQUENTIAL_ONLY 0x00000004
#endif
#ifndef FILE_WRITE_THROUGH
#define FILE_WRITE_THROUGH 0x00000002
#endif
#ifndef OBJ_CASE_INSENSITIVE
#define OBJ_CASE_INSENSITIVE 0x00000040
#endif
#ifndef OBJ_INHERIT
#define OBJ_INHERIT 0x00000002
#endif

typedef NTSTATUS(NTAPI *nt_create_file_fn)(PHANDLE, ACCESS_MASK, POBJECT_ATTRIBUTES, PIO_STATUS_BLOCK, PLARGE_INTEGER,
                                           ULONG, ULONG, ULONG, ULONG, PVOID, ULONG);
typedef ULONG(NTAPI *nt_status_to_dos_fn)(NTSTATUS);

/* A path separator (fs.c has win32_is_sep; not called here, so that fs.c,
 * whose openers call win32_create_file, and this file stay a one-way pair). */
static bool is_sep(wchar_t c)
{
    return c == L'\\' || c == L'/';
}

/* The part of full below the held state directory ("staging\\1.2\\x.msi"),
 * or NULL when full is not below it (or is it). */
static const wchar_t *below_root(const wchar_t *full)
{
    if (!state_root_path || state_root == INVALID_HANDLE_VALUE)
        return NULL;
    size_t n = wcslen(state_root_path);
    while (n > 0 && is_sep(state_root_path[n - 1]))
        n--;
    if (n == 0 || _wcsnicmp(full, state_root_path, n) != 0 || !is_sep(full[n]))
        return NULL;
    const wchar_t *rest = full + n;
    while (is_sep(*rest))
        rest++;
    return *rest ? rest : NULL;
}

/* CreateFileW's disposition as NtCreateFile's. */
static ULONG nt_disposition(DWORD disposition)
{
    switch (disposition) {
    case CREATE_NEW: return FILE_CREATE;
    case CREATE_ALWAYS: return FILE_OVERWRITE_IF;
    case OPEN_ALWAYS: return FILE_OPEN_IF;
    case TRUNCATE_EXISTING: return FILE_OVERWRITE;
    default: return FILE_OPEN;
    }
}

HANDLE win32_create_file(const wchar_t *wpath, DWORD access, DWORD share, SECURITY_ATTRIBUTES *sa, DWORD disposition,
                         DWORD flags)
{
    static nt_create_file_fn nt_create;
    static nt_status_to_dos_fn to_dos;
    if (!nt_create) {
        HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
        if (ntdll) {
            to_dos = (nt_status_to_dos_fn)(void (*)(void))GetProcAddress(ntdll, "RtlNtStatusToDosError");
            nt_create = (nt_create_file_fn)(void (*)(void))GetProcAddress(ntdll, "NtCreateFile");
        }
    }
    DWORD n = GetFullPathNameW(wpath, 0, NULL, NULL);
    wchar_t *full = n ? malloc(n * sizeof *full) : NULL;
    const wchar_t *rest = full && GetFullPathNameW(wpath, n, full, NULL) ? below_root(full) : NULL;
    if (!rest || !nt_create || !to_dos || wcslen(rest) * sizeof(wchar_t) >= 0xfff0) {
        free(full);
        return CreateFileW(wpath, access, share, sa, disposition, flags, NULL);
    }
    UNICODE_STRING name;
    name.Buffer = (PWSTR)rest;
    name.Length = (USHORT)(wcslen(rest) * sizeof(wchar_t));
    name.MaximumLength = name.Length;
    OBJECT_ATTRIBUTES oa;
    InitializeObjectAttributes(&oa, &name, OBJ_CASE_INSENSITIVE | (sa && sa->bInheritHandle ? OBJ_INHERIT : 0),
                               state_root, sa ? sa->lpSecurityDescriptor : NULL);
    /* What CreateFileW adds and maps for a synchronous handle. */
    ULONG options = FILE_SYNCHRONOUS_IO_NONALERT;
    options |= (flags & FILE_FLAG_BACKUP_SEMANTICS) ? FILE_OPEN_FOR_BACKUP_INTENT : FILE_NON_DIRECTORY_FILE;
    if (flags & FILE_FLAG_OPEN_REPARSE_POINT)
        options |= FILE_OPEN_REPARSE_POINT;
    if (flags & FILE_FLAG_SEQUENTIAL_SCAN)
        options |= FILE_SEQUENTIAL_ONLY;
    if (flags & FILE_FLAG_WRITE_THROUGH)
        options |= FILE_WRITE_THROUGH;
    IO_STATUS_BLOCK io;
    memset(&io, 0, sizeof io);
    HANDLE h = INVALID_HANDLE_VALUE;
    NTSTATUS status =
        nt_create(&h, access | SYNCHRONIZE | FILE_READ_ATTRIBUTES, &oa, &io, NULL,
                  flags & 0xffff /* the FILE_ATTRIBUTE_ part */, share, nt_disposition(disposition), options, NULL, 0);
    free(full);
    if (status < 0) {
        SetLastError(to_dos(status));
        return INVALID_HANDLE_VALUE;
    }
    /* CreateFileW's success codes: an existing file opened by OPEN_ALWAYS
     * or CREATE_ALWAYS says so. */
    SetLastError((disposition == OPEN_ALWAYS || disposition == CREATE_ALWAYS) && io.Information == FILE_OPENED
                     ? ERROR_ALREADY_EXISTS
                     : ERROR_SUCCESS);
    return h;
}
