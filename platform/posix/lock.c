/*
 * lock.c — the single-instance lock (platform_lock_acquire): flock on
 * outpost.lock, which dies with the process, so a killed run never blocks
 * the next. The file holds the holder's PID for a human to read.
 */
#include "platform/posix/posix_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

struct platform_lock {
    int fd; /* open lock file holding the flock; closing it releases the lock */
};

error_code platform_lock_acquire(const char *path, platform_lock **lock, error_info *err)
{
    /* O_NOFOLLOW: the lock file is ours; never truncate a link's target. */
    int fd = posix_open_in(path, O_CREAT | O_RDWR | O_NOFOLLOW, 0600);
    if (fd < 0)
        return posix_fail_path(err, errno, "cannot open the lock file", path);
    int rc;
    do {
        rc = flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK || e == EAGAIN)
            return error_set_os(err, ERR_LOCKED, e, "another outpost run holds the lock %s", path);
        return error_set_os(err, ERR_IO, e, "cannot lock %s: %s", path, strerror(e));
    }
    platform_lock *l = malloc(sizeof *l);
    if (!l) {
        close(fd);
        return posix_fail_nomem(err);
    }
    l->fd = fd;
    /* The PID is informational (for a human looking at a stuck lock). */
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0 && n > 0)
        (void)!pwrite(fd, pid, (size_t)n, 0);
    *lock = l;
    return ERR_OK;
}

void platform_lock_release(platform_lock *lock)
{
    if (!lock)
        return;
    (void)flock(lock->fd, LOCK_UN);
    close(lock->fd);
    free(lock);
}
