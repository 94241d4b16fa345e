/*
 * log.c — the log file (platform.h, "The log file"): opened once with
 * O_APPEND, created owner-only, never through a link, so that every line is
 * one write at the end of the file, whoever else appends or rotates it.
 */
#include "platform/posix/posix_int.h"
#include "platform/crash_point.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct platform_append_file {
    int fd;
};

error_code platform_append_open(const char *path, platform_append_file **file, uint64_t *size, error_info *err)
{
    /* O_EXCL first, to know whether the file is new and gets the exact mode
     * (the umask could leave more or fewer bits); an existing file keeps its own. */
    int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
    int fd = posix_open_in(path, flags | O_CREAT | O_EXCL, 0600);
    bool created = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = posix_open_in(path, flags, 0);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            return error_set_os(err, ERR_IO, e, "cannot open %s for appending: %s", path, posix_os_reason(e));
        return posix_fail_path(err, e, "cannot open for appending", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (created && fchmod(fd, 0600) != 0)) {
        int e = errno;
        close(fd);
        return error_set_os(err, ERR_IO, e, "cannot append to %s: not a regular file, or its mode cannot be set", path);
    }
    platform_append_file *f = malloc(sizeof *f);
    if (!f) {
        close(fd);
        return posix_fail_nomem(err);
    }
    f->fd = fd;
    if (size)
        *size = (uint64_t)st.st_size;
    *file = f;
    return ERR_OK;
}

error_code platform_append_write(platform_append_file *file, const void *data, size_t len, error_info *err)
{
    crash_point("append_log", NULL);
    if (posix_write_all(file->fd, data, len) != 0) {
        int e = errno;
        return error_set_os(err, platform_os_error_code(e), e, "cannot append to the log file: %s", strerror(e));
    }
    return ERR_OK;
}

void platform_append_close(platform_append_file *file)
{
    if (!file)
        return;
    close(file->fd);
    free(file);
}
