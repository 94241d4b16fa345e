/*
 * fs.c — files for POSIX (platform.h, "Files"): opening with UTF-8 names and
 * close-on-exec, flushing to disk, atomic replacement (a flushed temporary
 * file renamed over the old one, then the directory flushed), whole-file
 * reads with a cap, removal, directories (0700) and listing. A path under
 * the held state directory is reached through its handle (stateroot.c),
 * never by name. Each write, rename, flush and removal passes a crash point
 * (crash_point.h) for the crash tests.
 */
#include "platform/posix/posix_int.h"
#include "platform/crash_point.h"
#include "platform/names.h"
#include "base/text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* fsync that reaches the platter on macOS too (plain fsync does not there). */
static int fsync_fd(int fd)
{
#if defined(__APPLE__) && defined(F_FULLFSYNC)
    if (fcntl(fd, F_FULLFSYNC) == 0)
        return 0;
#endif
    int rc;
    do {
        rc = fsync(fd);
    } while (rc != 0 && errno == EINTR);
    return rc;
}

/* Flushes a directory so that a rename or creation in it is durable. File
 * systems that cannot fsync a directory (EINVAL, ENOTSUP) count as done. */
static MUST_CHECK error_code sync_dir(const char *dir, error_info *err)
{
    int fd = posix_open_in(dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return posix_fail_path(err, errno, "cannot open directory", dir);
    error_code rc = ERR_OK;
    if (fsync_fd(fd) != 0 && errno != EINVAL && errno != ENOTSUP && errno != EROFS)
        rc = posix_fail_path(err, errno, "cannot flush directory", dir);
    close(fd);
    return rc;
}

/* Flushes the directory holding path. */
static MUST_CHECK error_code sync_parent(const char *path, error_info *err)
{
    char *dir = platform_path_dir(path);
    if (!dir)
        return posix_fail_nomem(err);
    error_code rc = sync_dir(dir, err);
    free(dir);
    return rc;
}

int posix_write_all(int fd, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len > 0) {
        size_t chunk = len > (size_t)1 << 30 ? (size_t)1 << 30 : len;
        ssize_t n = write(fd, p, chunk);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

char platform_path_separator(void)
{
    return '/';
}

char *platform_path_join(const char *dir, const char *name)
{
    size_t dir_len = strlen(dir);
    size_t name_len = strlen(name);
    bool need_sep = dir_len > 0 && dir[dir_len - 1] != '/';
    char *joined = malloc(dir_len + need_sep + name_len + 1);
    if (!joined)
        return NULL;
    memcpy(joined, dir, dir_len);
    if (need_sep)
        joined[dir_len] = '/';
    memcpy(joined + dir_len + need_sep, name, name_len + 1);
    return joined;
}

/*
 * fopen of a path under the state directory, through its handle (posix_open_in):
 * the open(2) flags mode means, O_CREAT always when private (created 0600,
 * as platform_fopen_private promises), then fdopen. NULL with errno set.
 */
static FILE *fopen_under_root(const char *path, const char *mode, bool private_file)
{
    int flags;
    bool plus = strchr(mode, '+') != NULL;
    switch (mode[0]) {
    case 'r': flags = plus ? O_RDWR : O_RDONLY; break;
    case 'w': flags = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC; break;
    case 'a': flags = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND; break;
    default: errno = EINVAL; return NULL;
    }
    if (strchr(mode, 'x'))
        flags |= O_EXCL;
    if (private_file)
        flags |= O_CREAT;
    int fd = posix_open_in(path, flags | O_NOCTTY, private_file ? 0600 : 0666);
    if (fd < 0)
        return NULL;
    char plain[8]; /* fdopen's mode: the letters it knows */
    size_t n = 0;
    for (const char *m = mode; *m && n + 1 < sizeof plain; m++)
        if (strchr("rwab+", *m))
            plain[n++] = *m;
    plain[n] = '\0';
    FILE *f = fdopen(fd, plain);
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

error_code platform_open_regular(const char *path, FILE **f, uint64_t *size, error_info *err)
{
    *f = NULL;
    int fd = posix_open_in(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0);
    if (fd < 0 && errno == ELOOP)
        return error_set_os(err, ERR_IO, ELOOP, "%s is not a regular file (a symbolic link); refusing it", path);
    if (fd < 0)
        return posix_fail_path(err, errno, "cannot open", path);
    struct stat st;
    error_code rc = ERR_OK;
    int flags;
    if (fstat(fd, &st) != 0)
        rc = posix_fail_path(err, errno, "cannot read", path);
    else if (!S_ISREG(st.st_mode))
        rc = error_set(err, ERR_IO, "%s is not a regular file (%s); refusing it", path,
                       S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                                              : "a device or socket");
    else if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
        rc = posix_fail_path(err, errno, "cannot read", path);
    else if (!(*f = fdopen(fd, "rb")))
        rc = posix_fail_path(err, errno, "cannot read", path);
    if (rc != ERR_OK) {
        close(fd);
        return rc;
    }
    *size = (uint64_t)st.st_size;
    return ERR_OK;
}

FILE *platform_fopen(const char *path, const char *mode)
{
    if (posix_under_root(path))
        return fopen_under_root(path, mode, false);
    char mode_e[16];
    size_t mode_len = strlen(mode);
    if (mode_len + 2 > sizeof mode_e) {
        errno = EINVAL;
        return NULL;
    }
    memcpy(mode_e, mode, mode_len + 1);
#if defined(__linux__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__)
    /* "e" opens with O_CLOEXEC: no window in which another thread's spawn
     * could inherit the descriptor. */
    mode_e[mode_len] = 'e';
    mode_e[mode_len + 1] = '\0';
#endif
    FILE *f = fopen(path, mode_e);
    if (!f)
        return NULL;
    int fd = fileno(f);
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC))
        (void)fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    return f;
}

FILE *platform_fopen_private(const char *path, const char *mode)
{
    if (posix_under_root(path))
        return fopen_under_root(path, mode, true);
    /* The file is created 0600 first, then opened as asked: fopen creates
     * with 0666 less the umask, which is world-readable under the usual 022. */
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return NULL; /* errno set; a symbolic link at path is refused (ELOOP) */
    close(fd);
    return platform_fopen(path, mode);
}

error_code platform_sync_parent_dir(const char *path, error_info *err)
{
    crash_point("sync_parent_dir", path);
    return sync_parent(path, err);
}

error_code platform_fsync_file(FILE *f, error_info *err)
{
    crash_point("fsync", NULL);
    if (fflush(f) != 0) {
        int e = errno;
        return error_set_os(err, platform_os_error_code(e), e, "cannot write file: %s", strerror(e));
    }
    /* A pipe or terminal has nothing to flush to disk: EINVAL is not a failure. */
    if (fsync_fd(fileno(f)) != 0 && errno != EINVAL && errno != ENOTSUP) {
        int e = errno;
        return error_set_os(err, platform_os_error_code(e), e, "cannot flush file to disk: %s", strerror(e));
    }
    return ERR_OK;
}

void platform_start_writeback(FILE *f, uint64_t offset, uint64_t length)
{
    if (fflush(f) != 0)
        return; /* the stream's error flag stays set: the writer's next fsync reports it */
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    (void)sync_file_range(fileno(f), (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE);
#else
    (void)offset;
    (void)length;
#endif
}

error_code platform_append(FILE *f, const void *data, size_t len, error_info *err)
{
    crash_point("append", NULL);
    const unsigned char *p = data;
    while (len > 0) {
        errno = 0;
        size_t n = fwrite(p, 1, len, f);
        if (n == 0) {
            int e = errno ? errno : EIO;
            if (e == EINTR) {
                clearerr(f);
                continue;
            }
            return error_set_os(err, platform_os_error_code(e), e, "%s", strerror(e));
        }
        p += n;
        len -= n;
    }
    return ERR_OK;
}

/* Creates "<path>.<16 hex digits>.tmp" with O_EXCL; sets *fd_out and the
 * malloc'd *tmp_path on success. */
static MUST_CHECK error_code open_temp(const char *path, int *fd_out, char **tmp_path, error_info *err)
{
    size_t size = strlen(path) + 1 + 16 + 4 + 1;
    char *tmp = malloc(size);
    if (!tmp)
        return posix_fail_nomem(err);
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned char rnd[8];
        if (platform_random_bytes(rnd, sizeof rnd, NULL) != ERR_OK) {
            /* Uniqueness, not secrecy, is what matters here. */
            uint64_t v = ((uint64_t)getpid() << 32) ^ (uint64_t)platform_monotonic_ms() ^ (uint64_t)attempt;
            memcpy(rnd, &v, sizeof rnd);
        }
        snprintf(tmp, size, "%s.%02x%02x%02x%02x%02x%02x%02x%02x.tmp", path, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
                 rnd[5], rnd[6], rnd[7]);
        int fd = posix_open_in(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            *fd_out = fd;
            *tmp_path = tmp;
            return ERR_OK;
        }
        if (errno != EEXIST && errno != EINTR) {
            int e = errno;
            free(tmp);
            return error_set_os(err, platform_os_error_code(e), e, "cannot create a temporary file to replace %s: %s",
                                path, posix_os_reason(e));
        }
    }
    free(tmp);
    return error_set(err, ERR_IO, "cannot create a temporary file to replace %s: too many name collisions", path);
}

/* A replacement being written (platform.h): the temporary file open for
 * writing, the mode it takes, and the first failure (sticky). */
struct platform_atomic_file {
    char *path;       /* the file replaced */
    char *tmp;        /* "<path>.<16 hex digits>.tmp" */
    int fd;           /* the temporary file, open */
    mode_t mode;      /* the mode it gets before the rename */
    int error;        /* first errno of a write, 0 while all is well */
    const char *what; /* which step failed */
};

static void atomic_free(platform_atomic_file *f)
{
    free(f->tmp);
    free(f->path);
    free(f);
}

error_code platform_atomic_open(const char *path, bool owner_only, platform_atomic_file **out, error_info *err)
{
    *out = NULL;
    platform_atomic_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = text_dup(path))) {
        free(f);
        return posix_fail_nomem(err);
    }
    /* Keep the permissions of the file being replaced; new files are 0600. */
    f->mode = 0600;
    struct stat st;
    int found = posix_stat_in(path, &st, true);
    if (!owner_only && found == 0 && S_ISREG(st.st_mode))
        f->mode = st.st_mode & 0777;
    /* In a held directory the name is not followed (posix_stat_in): a link
     * there is refused, not silently replaced (PRODUCT.md section 9). */
    if (found == 0 && S_ISLNK(st.st_mode)) {
        atomic_free(f);
        return error_set_os(err, ERR_IO, ELOOP,
                            "%s is a symbolic link; outpost never writes through one: remove it, or name another file",
                            path);
    }

    crash_point("write_atomic", path);
    error_code rc = open_temp(path, &f->fd, &f->tmp, err);
    if (rc != ERR_OK) {
        atomic_free(f);
        return rc;
    }
    /* fchmod: the exact mode, whatever the umask says. */
    if (f->mode != 0600 && fchmod(f->fd, f->mode) != 0) {
        f->error = errno;
        f->what = "cannot set the mode of the temporary file for";
    }
    *out = f;
    return ERR_OK;
}

/* The failure f carries, as an error naming the file replaced. */
static error_code atomic_error(const platform_atomic_file *f, error_info *err)
{
    /* A missing directory is "not found"; ENOSPC/EDQUOT "disk full". */
    return error_set_os(err, platform_os_error_code(f->error), f->error, "%s %s: %s", f->what, f->path,
                        posix_os_reason(f->error));
}

error_code platform_atomic_write(platform_atomic_file *f, const void *data, size_t len, error_info *err)
{
    if (!f->error && posix_write_all(f->fd, data, len) != 0) {
        f->error = errno;
        f->what = "cannot write";
    }
    return f->error ? atomic_error(f, err) : ERR_OK;
}

void platform_atomic_abort(platform_atomic_file *f)
{
    if (!f)
        return;
    close(f->fd);
    (void)posix_unlink_in(f->tmp, 0);
    atomic_free(f);
}

error_code platform_atomic_commit(platform_atomic_file *f, const char *readers_group, error_info *err)
{
    if (!f->error && fsync_fd(f->fd) != 0) {
        f->error = errno;
        f->what = "cannot flush to disk";
    }
    if (close(f->fd) != 0 && !f->error) { /* NFS may report write errors only here */
        f->error = errno;
        f->what = "cannot write";
    }
    f->fd = -1;
    error_code rc = f->error ? atomic_error(f, err) : ERR_OK;
    if (rc == ERR_OK && readers_group)
        rc = platform_share_with_group(f->tmp, readers_group, err);
    if (rc == ERR_OK)
        crash_point("write_atomic_rename", f->path); /* leaves the flushed temporary file behind */
    if (rc == ERR_OK && posix_rename_in(f->tmp, f->path) != 0) {
        f->error = errno;
        f->what = "cannot rename the temporary file over";
        rc = atomic_error(f, err);
    }
    if (rc != ERR_OK)
        (void)posix_unlink_in(f->tmp, 0);
    else
        rc = sync_parent(f->path, err);
    atomic_free(f);
    return rc;
}

error_code platform_write_new_file(const char *path, const void *data, size_t len, bool owner_only, error_info *err)
{
    crash_point("write_new_file", path);
    mode_t mode = owner_only ? 0600 : 0644;
    int fd = posix_open_in(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST)
            return error_set_os(err, ERR_IO, e,
                                "%s already exists; it is not replaced (remove it first, or choose "
                                "another name)",
                                path);
        return posix_fail_path(err, e, "cannot create", path);
    }
    const char *what = NULL;
    /* fchmod: the exact mode, whatever the umask says. */
    int e = fchmod(fd, mode) != 0 ? errno : 0;
    if (e)
        what = "cannot set the mode of";
    if (!e && posix_write_all(fd, data, len) != 0)
        e = errno, what = "cannot write";
    if (!e && fsync_fd(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
        e = errno, what = "cannot flush to disk";
    if (close(fd) != 0 && !e)
        e = errno, what = "cannot write";
    if (e) {
        (void)posix_unlink_in(path, 0);
        return error_set_os(err, platform_os_error_code(e), e, "%s %s: %s", what, path, posix_os_reason(e));
    }
    return sync_parent(path, err);
}

error_code platform_rename(const char *from, const char *to, error_info *err)
{
    crash_point("rename", to);
    if (posix_rename_in(from, to) != 0) {
        int e = errno;
        if (e == EXDEV)
            return error_set_os(err, ERR_IO, e, "cannot rename %s to %s: they are on different volumes", from, to);
        return error_set_os(err, platform_os_error_code(e), e, "cannot rename %s to %s: %s", from, to,
                            posix_os_reason(e));
    }
    char *to_dir = platform_path_dir(to);
    char *from_dir = platform_path_dir(from);
    error_code rc;
    if (!to_dir || !from_dir)
        rc = posix_fail_nomem(err);
    else {
        rc = sync_dir(to_dir, err);
        if (rc == ERR_OK && strcmp(to_dir, from_dir) != 0)
            rc = sync_dir(from_dir, err);
    }
    free(to_dir);
    free(from_dir);
    return rc;
}

/* Reads one byte (EINTR retried): 1, 0 at end of file, -1 on error. */
static ssize_t read_probe(int fd, char *byte)
{
    ssize_t n;
    do {
        n = read(fd, byte, 1);
    } while (n < 0 && errno == EINTR);
    return n;
}

/*
 * The read loop of platform_read_file: reads at most limit + 1 bytes (one
 * past the cap proves the file too large). *buf_io has room for cap bytes,
 * NUL included, and cap never exceeds limit + 1. On return *buf_io is the
 * (possibly moved) buffer, which the caller frees; *used_io is set on
 * success.
 */
static MUST_CHECK error_code read_capped(int fd, const char *path, size_t limit, char **buf_io, size_t cap,
                                         size_t *used_io, error_info *err)
{
    char *buf = *buf_io;
    size_t used = 0;
    for (;;) {
        if (used == cap - 1) {
            /* Buffer full: one probe byte tells end of file from "grow". */
            char byte;
            ssize_t n = read_probe(fd, &byte);
            if (n < 0) {
                *buf_io = buf;
                return posix_fail_path(err, errno, "cannot read", path);
            }
            if (n == 0)
                break;
            if (used + 1 > limit) {
                *buf_io = buf;
                return error_set(err, ERR_IO, "%s is larger than the limit of %zu bytes", path, limit);
            }
            /* used < limit here, so cap < limit + 1 and the buffer can grow. */
            size_t grow = cap < 65536 ? 65536 : cap;
            size_t new_cap = cap + (grow < limit + 1 - cap ? grow : limit + 1 - cap);
            char *bigger = realloc(buf, new_cap);
            if (!bigger) {
                *buf_io = buf;
                return posix_fail_nomem(err);
            }
            buf = bigger;
            cap = new_cap;
            buf[used++] = byte;
            continue;
        }
        ssize_t n = read(fd, buf + used, cap - 1 - used);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            *buf_io = buf;
            return posix_fail_path(err, errno, "cannot read", path);
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    *buf_io = buf;
    *used_io = used;
    return ERR_OK;
}

error_code platform_read_file(const char *path, size_t max_size, char **data, size_t *len, error_info *err)
{
    int fd = posix_open_in(path, O_RDONLY, 0);
    if (fd < 0)
        return posix_fail_path(err, errno, "cannot open", path);
    error_code rc = posix_read_fd(fd, path, max_size, data, len, err);
    close(fd);
    return rc;
}

error_code posix_read_fd(int fd, const char *path, size_t max_size, char **data, size_t *len, error_info *err)
{
    /* limit + 1 (content and NUL) must not overflow. */
    size_t limit = max_size > SIZE_MAX - 1 ? SIZE_MAX - 1 : max_size;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return posix_fail_path(err, errno, "cannot read", path);
    if (S_ISDIR(st.st_mode))
        return error_set_os(err, ERR_IO, EISDIR, "cannot read %s: it is a directory", path);
    /* Size the buffer from the file size when it is known and within the cap
     * (/proc files and devices say 0); the probe byte handles the rest. */
    size_t hint = 4096;
    if (S_ISREG(st.st_mode) && st.st_size > 0)
        hint = (uint64_t)st.st_size > (uint64_t)limit ? limit : (size_t)st.st_size;
    if (hint > limit)
        hint = limit;
    size_t cap = hint + 1;
    char *buf = malloc(cap);
    if (!buf)
        return posix_fail_nomem(err);
    size_t used = 0;
    error_code rc = read_capped(fd, path, limit, &buf, cap, &used, err);
    if (rc != ERR_OK) {
        free(buf);
        return rc;
    }
    buf[used] = '\0';
    *data = buf;
    if (len)
        *len = used;
    return ERR_OK;
}

error_code platform_remove_file(const char *path, error_info *err)
{
    crash_point("remove", path);
    if (posix_unlink_in(path, 0) != 0 && errno != ENOENT) {
        int e = errno;
        return error_set_os(err, platform_os_error_code(e), e, "cannot remove %s: %s", path, posix_os_reason(e));
    }
    return ERR_OK;
}

/*
 * Removes everything inside the open directory dir_fd (consumed), whose path
 * is dir_path (for messages). Works relative to directory descriptors and
 * opens subdirectories with O_NOFOLLOW, so a symbolic link, even one swapped
 * in while we walk, is unlinked, never followed.
 */
/* A directory stream on fd, which it takes (closed on failure too). */
static MUST_CHECK error_code open_listing(int fd, const char *path, DIR **out, error_info *err)
{
    *out = fdopendir(fd);
    if (*out)
        return ERR_OK;
    int e = errno;
    close(fd);
    return posix_fail_path(err, e, "cannot list", path);
}

/* The next entry's name but "." and ".." (valid until the next read; NULL
 * at the end of the listing). */
static MUST_CHECK error_code next_entry(DIR *dir, const char *path, const char **name, error_info *err)
{
    for (;;) {
        errno = 0;
        struct dirent *entry = readdir(dir);
        if (!entry) {
            *name = NULL;
            return errno != 0 ? posix_fail_io(err, "cannot list", path) : ERR_OK;
        }
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) {
            *name = entry->d_name;
            return ERR_OK;
        }
    }
}

static MUST_CHECK error_code empty_dir(int dir_fd, const char *dir_path, error_info *err)
{
    DIR *dir = NULL;
    error_code rc = open_listing(dir_fd, dir_path, &dir, err);
    if (rc != ERR_OK)
        return rc;
    const char *name = NULL;
    while ((rc = next_entry(dir, dir_path, &name, err)) == ERR_OK && name) {
        char *child = platform_path_join(dir_path, name);
        if (!child) {
            rc = posix_fail_nomem(err);
            break;
        }
        struct stat st;
        int flags = 0;
        if (fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT)
                rc = posix_fail_io(err, "cannot remove", child);
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(dir), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                rc = posix_fail_io(err, "cannot open", child);
            else
                rc = empty_dir(sub, child, err);
            flags = AT_REMOVEDIR;
        }
        if (rc == ERR_OK)
            crash_point("remove_tree_entry", child); /* a half-removed tree is a state of its own */
        if (rc == ERR_OK && unlinkat(dirfd(dir), name, flags) != 0 && errno != ENOENT)
            rc = posix_fail_io(err, "cannot remove", child);
        free(child);
        if (rc != ERR_OK)
            break;
    }
    closedir(dir);
    return rc;
}

error_code platform_remove_tree(const char *path, error_info *err)
{
    const char *below = posix_under_root(path);
    if (below && *below == '\0') /* it would be emptied, then fail to go */
        return error_set(err, ERR_IO, "refusing to remove %s: it is the state directory this run holds", path);
    struct stat st;
    if (posix_stat_in(path, &st, false) != 0) {
        if (errno == ENOENT)
            return ERR_OK;
        return posix_fail_io(err, "cannot remove", path);
    }
    if (!S_ISDIR(st.st_mode))
        return platform_remove_file(path, err); /* a file, or a link: the link itself */
    crash_point("remove_tree", path);
    int fd = posix_open_in(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
    if (fd < 0)
        return posix_fail_io(err, "cannot open", path);
    error_code rc = empty_dir(fd, path, err);
    if (rc != ERR_OK)
        return rc;
    if (posix_unlink_in(path, AT_REMOVEDIR) != 0 && errno != ENOENT)
        return posix_fail_io(err, "cannot remove", path);
    return ERR_OK;
}

/* mkdir of one level: success if it now exists as a directory. */
static MUST_CHECK error_code mkdir_one(const char *dir, const char *full, error_info *err)
{
    if (posix_mkdir_in(dir) == 0)
        return ERR_OK;
    int e = errno;
    struct stat st;
    if (posix_stat_in(dir, &st, true) == 0) {
        if (S_ISDIR(st.st_mode))
            return ERR_OK;
        return error_set_os(err, ERR_IO, EEXIST, "cannot create directory %s: %s exists and is not a directory", full,
                            dir);
    }
    /* Parents are made first: a missing one here is a race, not "not found". */
    error_code code = platform_os_error_code(e) == ERR_NOT_FOUND ? ERR_IO : platform_os_error_code(e);
    return error_set_os(err, code, e, "cannot create directory %s: %s: %s", full, dir, posix_os_reason(e));
}

error_code platform_mkdirs(const char *path, error_info *err)
{
    if (path[0] == '\0')
        return error_set(err, ERR_IO, "cannot create a directory with an empty name");
    char *copy = strdup(path);
    if (!copy)
        return posix_fail_nomem(err);
    error_code rc = ERR_OK;
    /* Create each prefix ending at a separator, then the whole path. */
    for (char *p = copy + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        if (p[-1] == '/' && *p == '/')
            continue; /* "a//b": the prefix "a/" was just done */
        char saved = *p;
        *p = '\0';
        rc = mkdir_one(copy, path, err);
        *p = saved;
        if (rc != ERR_OK || saved == '\0')
            break;
    }
    free(copy);
    return rc;
}

error_code platform_mkdirs_private(const char *path, error_info *err)
{
    /* platform_mkdirs already creates every new level 0700. */
    return platform_mkdirs(path, err);
}

platform_path_kind platform_path_stat(const char *path, uint64_t *size)
{
    struct stat st;
    if (posix_stat_in(path, &st, false) != 0)
        return PLATFORM_PATH_NONE;
    if (S_ISREG(st.st_mode)) {
        if (size)
            *size = (uint64_t)st.st_size;
        return PLATFORM_PATH_FILE;
    }
    if (S_ISDIR(st.st_mode))
        return PLATFORM_PATH_DIR;
    return PLATFORM_PATH_OTHER;
}

error_code platform_list_dir(const char *path, char ***names, size_t *count, error_info *err)
{
    int fd = posix_open_in(path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return posix_fail_path(err, errno, "cannot list", path);
    DIR *dir = NULL;
    error_code rc = open_listing(fd, path, &dir, err);
    if (rc != ERR_OK)
        return rc;
    platform_names found = {0};
    const char *name = NULL;
    while ((rc = next_entry(dir, path, &name, err)) == ERR_OK && name) {
        if (!platform_names_push(&found, strdup(name))) {
            rc = posix_fail_nomem(err);
            break;
        }
    }
    closedir(dir);
    return platform_names_finish(&found, rc, true, names, count);
}

error_code platform_free_space(const char *path, uint64_t *bytes, error_info *err)
{
    struct statvfs vfs;
    if (statvfs(path, &vfs) != 0)
        return posix_fail_path(err, errno, "cannot read the free space of", path);
    *bytes = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
    return ERR_OK;
}
