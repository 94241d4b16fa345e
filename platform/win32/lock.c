/*
 * lock.c — the single-instance lock (platform_lock_acquire): LockFileEx on
 * outpost.lock, which dies with the process, so a killed run never blocks
 * the next. The file holds the holder's PID for a human to read.
 */
#include "platform/win32/win32_int.h"

#include <stdio.h>
#include <stdlib.h>

/* Where the lock's byte range starts: far past the PID text, so readers of
 * the lock file are not blocked by the lock. */
#define LOCK_OFFSET_HIGH 0x7fffffffUL

struct platform_lock {
    HANDLE file; /* open lock file holding the byte-range lock; closing releases it */
};

error_code platform_lock_acquire(const char *path, platform_lock **lock, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* Shared open: a second instance must get as far as LockFileEx to learn
     * that the lock is held, and a human may read the PID. */
    HANDLE h =
        win32_create_file(wpath, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                          NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL);
    free(wpath);
    if (h == INVALID_HANDLE_VALUE)
        return win32_fail(err, GetLastError(), "cannot open the lock file", path);
    OVERLAPPED at = {0};
    at.OffsetHigh = LOCK_OFFSET_HIGH;
    if (!LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &at)) {
        DWORD e = GetLastError();
        CloseHandle(h);
        if (e == ERROR_LOCK_VIOLATION || e == ERROR_IO_PENDING)
            return error_set_os(err, ERR_LOCKED, (int)e, "another outpost run holds the lock %s", path);
        return win32_fail(err, e, "cannot lock", path);
    }
    platform_lock *l = malloc(sizeof *l);
    if (!l) {
        CloseHandle(h);
        return win32_fail_nomem(err);
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
