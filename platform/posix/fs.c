/*
 * posix.c — the platform layer (platform.h) for Linux and other POSIX
 * systems: files and atomic replacement, the single-instance lock, clocks and
 * randomness, running programs with a timeout, threads, host facts.
 *
 * Layout follows platform.h section by section. OS errors are translated
 * by the one errno table of common.c (errno_code() below), and every
 * message names the path and strerror(), with the raw errno kept in
 * os_error.
 * Every descriptor we open is close-on-exec, and a spawned program closes
 * every other one above stderr too (libraries open theirs without it), so
 * it inherits only stdin (the null device), stdout and stderr. Linux/glibc is the
 * reference; `#ifdef` blocks below only pick cheaper or safer calls where a
 * system has them (getrandom, F_FULLFSYNC, arc4random_buf).
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* posix_spawn_file_actions_addclosefrom_np (glibc 2.34+) */
#endif
#if defined(__APPLE__) && !defined(_DARWIN_C_SOURCE)
#define _DARWIN_C_SOURCE /* flock, arc4random_buf, F_FULLFSYNC beside _POSIX_C_SOURCE */
#endif

#include "platform/platform.h"
#include "platform/crash_point.h"
#include "platform/private_dir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))
#include <sys/random.h>
#define PLATFORM_HAVE_GETRANDOM 1
#endif

extern char **environ; /* POSIX; glibc declares it only with _GNU_SOURCE */

/* Longest time the spawn wait loop sleeps between two waitpid() polls. */
#define SPAWN_POLL_MAX_MS 50

/* ---- Error translation --------------------------------------------------- */

/* The error_code for an errno value: common.c's table, shared with win32.c. */
static MUST_CHECK error_code errno_code(int e)
{
    return platform_os_error_code(e);
}

/* strerror(e), except for what outpost's own O_NOFOLLOW means: ELOOP is a
 * symbolic link met where outpost follows none (below the state directory,
 * or a file it creates). (A ".." below the state directory is EPERM,
 * "Operation not permitted", as strerror says it.) */
static const char *os_reason(int e)
{
    if (e == ELOOP)
        return "it is, or goes through, a symbolic link, which outpost never follows here; refusing it";
    return strerror(e);
}

/* Fills err with "<what> <path>: <reason>" and the errno-derived code. */
static MUST_CHECK error_code fail_path(error_info *err, int e, const char *what, const char *path)
{
    return error_set_os(err, errno_code(e), e, "%s %s: %s", what, path, os_reason(e));
}

/* As fail_path with the current errno, but always ERR_IO: for walks and
 * removals, where "not found" would mislead the caller. */
static MUST_CHECK error_code fail_io(error_info *err, const char *what, const char *path)
{
    int e = errno;
    return error_set_os(err, ERR_IO, e, "%s %s: %s", what, path, os_reason(e));
}

static MUST_CHECK error_code fail_nomem(error_info *err)
{
    return error_set_os(err, ERR_NOMEM, ENOMEM, "out of memory");
}

/* ---- Small file helpers -------------------------------------------------- */

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

/* ---- The state directory's handle (PRODUCT.md section 9) ------------------ */

/*
 * Once platform_state_root_open has run, a path under the state directory
 * is never looked up by its full name again: the part below the directory
 * is walked from the descriptor held here, one component at a time with
 * O_NOFOLLOW, and the call is made with openat and friends relative to the
 * last directory reached. Renaming the state directory away, or putting a
 * link or another directory in its place or below it, can then make a call
 * fail but never send it somewhere else. The descriptor is set once, before
 * any thread starts, and only read afterwards.
 */
static struct {
    int fd;       /* the state directory, O_DIRECTORY; -1 when none is held */
    char *prefix; /* its path as given, without trailing separators */
    size_t len;   /* strlen(prefix) */
} state_root = {-1, NULL, 0};

/* The part of path below the held state directory ("" for the directory
 * itself), or NULL when path is not under it (or nothing is held). */
static const char *under_root(const char *path)
{
    if (state_root.fd < 0 || strncmp(path, state_root.prefix, state_root.len) != 0)
        return NULL;
    const char *rest = path + state_root.len;
    if (*rest != '\0' && *rest != '/' && !(state_root.len == 1 && state_root.prefix[0] == '/'))
        return NULL; /* "/var/lib/outpost2" is not under "/var/lib/outpost" */
    while (*rest == '/')
        rest++;
    return rest;
}

/* Where a path is, for the *at calls: dir and the name in it. */
typedef struct at_path {
    int dir;          /* AT_FDCWD (not under the state directory), or a directory descriptor */
    const char *leaf; /* the name in dir: the last component, "." for a directory itself */
    char *copy;       /* owns leaf's storage after a walk */
} at_path;

static void at_release(at_path *at)
{
    if (at->dir >= 0 && at->dir != state_root.fd)
        close(at->dir);
    free(at->copy);
    at->dir = AT_FDCWD;
    at->copy = NULL;
}

/*
 * Finds the directory holding path: outside the state directory, the
 * current directory and path itself (names, as before); under it, walks
 * from the held descriptor through every component but the last, refusing
 * a symbolic link (ELOOP) or ".." (EPERM) on the way. Returns 0, or -1
 * with errno set and nothing to release.
 */
static int at_resolve(const char *path, at_path *at)
{
    at->dir = AT_FDCWD;
    at->leaf = path;
    at->copy = NULL;
    const char *rest = under_root(path);
    if (!rest)
        return 0;
    char *copy = strdup(rest);
    if (!copy)
        return -1; /* ENOMEM */
    int dir = state_root.fd;
    char *leaf = copy;
    for (char *p = copy;;) {
        char *slash = strchr(p, '/');
        if (!slash) {
            leaf = p;
            break;
        }
        *slash = '\0';
        char *next = slash + 1;
        while (*next == '/')
            next++;
        if (*next == '\0') { /* "dir/": the last component is the directory */
            leaf = p;
            break;
        }
        int e = 0;
        if (strcmp(p, "..") == 0)
            e = EPERM; /* never above the held directory */
        else if (*p != '\0' && strcmp(p, ".") != 0) {
            int sub = openat(dir, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            struct stat st;
            if (sub < 0)
                e = (errno == ENOTDIR && fstatat(dir, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) ? ELOOP
                                                                                                                : errno;
            else {
                if (dir != state_root.fd)
                    close(dir);
                dir = sub;
            }
        }
        if (e != 0) {
            if (dir != state_root.fd)
                close(dir);
            free(copy);
            errno = e;
            return -1;
        }
        p = next;
    }
    if (strcmp(leaf, "..") == 0) {
        if (dir != state_root.fd)
            close(dir);
        free(copy);
        errno = EPERM;
        return -1;
    }
    at->dir = dir;
    at->leaf = *leaf ? leaf : ".";
    at->copy = copy;
    return 0;
}

/* open() of path: under the state directory relative to its handle and
 * never through a link (O_NOFOLLOW at every step); elsewhere by name with
 * flags as given. Always O_CLOEXEC. The descriptor, or -1 with errno. */
static int open_in(const char *path, int flags, mode_t mode)
{
    at_path at;
    if (at_resolve(path, &at) != 0)
        return -1;
    int extra = at.dir == AT_FDCWD ? 0 : O_NOFOLLOW;
    int fd = openat(at.dir, at.leaf, flags | extra | O_CLOEXEC, mode);
    int e = errno;
    struct stat st;
    /* Linux says ENOTDIR for a link opened O_DIRECTORY | O_NOFOLLOW: it is a link. */
    if (fd < 0 && e == ENOTDIR && extra && fstatat(at.dir, at.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode))
        e = ELOOP;
    at_release(&at);
    errno = e;
    return fd;
}

/* lstat() (follow false) or stat() of path; under the state directory
 * always without following a final link. 0 or -1 with errno. */
static int stat_in(const char *path, struct stat *st, bool follow)
{
    at_path at;
    if (at_resolve(path, &at) != 0)
        return -1;
    int flags = follow && at.dir == AT_FDCWD ? 0 : AT_SYMLINK_NOFOLLOW;
    int rc = fstatat(at.dir, at.leaf, st, flags);
    int e = errno;
    at_release(&at);
    errno = e;
    return rc;
}

/* unlink() (flags 0) or rmdir() (AT_REMOVEDIR) of path. 0 or -1 with errno. */
static int unlink_in(const char *path, int flags)
{
    at_path at;
    if (at_resolve(path, &at) != 0)
        return -1;
    int rc = unlinkat(at.dir, at.leaf, flags);
    int e = errno;
    at_release(&at);
    errno = e;
    return rc;
}

/* mkdir(path, 0700). 0 or -1 with errno. */
static int mkdir_in(const char *path)
{
    at_path at;
    if (at_resolve(path, &at) != 0)
        return -1;
    int rc = mkdirat(at.dir, at.leaf, 0700);
    int e = errno;
    at_release(&at);
    errno = e;
    return rc;
}

/* rename(from, to), each side relative to its own handle. 0 or -1 with errno. */
static int rename_in(const char *from, const char *to)
{
    at_path a, b;
    if (at_resolve(from, &a) != 0)
        return -1;
    if (at_resolve(to, &b) != 0) {
        int e = errno;
        at_release(&a);
        errno = e;
        return -1;
    }
    int rc = renameat(a.dir, a.leaf, b.dir, b.leaf);
    int e = errno;
    at_release(&a);
    at_release(&b);
    errno = e;
    return rc;
}

error_code platform_state_root_open(const char *path, error_info *err)
{
    platform_state_root_close();
    /* Links in the path resolved once, as platform_check_private_dir judged
     * it; the directory itself is opened without following a link. */
    char *resolved = realpath(path, NULL);
    if (!resolved)
        return fail_path(err, errno, "cannot open the state directory", path);
    int fd = open(resolved, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    struct stat held, named;
    error_code rc = ERR_OK;
    char why[128];
    if (fd < 0)
        rc = fail_path(err, e, "cannot open the state directory", path);
    else if (fstat(fd, &held) != 0 || stat(resolved, &named) != 0)
        rc = fail_path(err, errno, "cannot read the state directory", path);
    else if (held.st_dev != named.st_dev || held.st_ino != named.st_ino)
        /* Swapped between the two looks: only someone who may rename it can. */
        rc = error_set(err, ERR_PERMISSION, "the state directory %s was replaced while outpost opened it; refusing it",
                       path);
    else if (!platform_posix_dir_trusted((unsigned long)held.st_uid, (unsigned long)held.st_mode,
                                         (unsigned long)geteuid(), why, sizeof why))
        rc = error_set(err, ERR_PERMISSION, "the state directory %s is %s; refusing it", path, why);
    free(resolved);
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    char *prefix = rc == ERR_OK ? malloc(len + 1) : NULL;
    if (rc == ERR_OK && !prefix)
        rc = fail_nomem(err);
    if (rc != ERR_OK) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    memcpy(prefix, path, len);
    prefix[len] = '\0';
    state_root.fd = fd;
    state_root.prefix = prefix;
    state_root.len = len;
    return ERR_OK;
}

void platform_state_root_close(void)
{
    if (state_root.fd >= 0)
        close(state_root.fd);
    free(state_root.prefix);
    state_root.fd = -1;
    state_root.prefix = NULL;
    state_root.len = 0;
}

/* Flushes a directory so that a rename or creation in it is durable. File
 * systems that cannot fsync a directory (EINVAL, ENOTSUP) count as done. */
static MUST_CHECK error_code sync_dir(const char *dir, error_info *err)
{
    int fd = open_in(dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fail_path(err, errno, "cannot open directory", dir);
    error_code rc = ERR_OK;
    if (fsync_fd(fd) != 0 && errno != EINVAL && errno != ENOTSUP && errno != EROFS)
        rc = fail_path(err, errno, "cannot flush directory", dir);
    close(fd);
    return rc;
}

/* Flushes the directory holding path. */
static MUST_CHECK error_code sync_parent(const char *path, error_info *err)
{
    char *dir = platform_path_dir(path);
    if (!dir)
        return fail_nomem(err);
    error_code rc = sync_dir(dir, err);
    free(dir);
    return rc;
}

/* Writes all len bytes, retrying short writes and EINTR. 0 or -1 (errno). */
static int write_all(int fd, const void *data, size_t len)
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

/* ---- Files --------------------------------------------------------------- */

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
 * fopen of a path under the state directory, through its handle (open_in):
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
    int fd = open_in(path, flags | O_NOCTTY, private_file ? 0600 : 0666);
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

FILE *platform_fopen(const char *path, const char *mode)
{
    if (under_root(path))
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
    if (under_root(path))
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
        return error_set_os(err, errno_code(e), e, "cannot write file: %s", strerror(e));
    }
    /* A pipe or terminal has nothing to flush to disk: EINVAL is not a failure. */
    if (fsync_fd(fileno(f)) != 0 && errno != EINVAL && errno != ENOTSUP) {
        int e = errno;
        return error_set_os(err, errno_code(e), e, "cannot flush file to disk: %s", strerror(e));
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
            return error_set_os(err, errno_code(e), e, "%s", strerror(e));
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
        return fail_nomem(err);
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned char rnd[8];
        if (platform_random_bytes(rnd, sizeof rnd, NULL) != ERR_OK) {
            /* Uniqueness, not secrecy, is what matters here. */
            uint64_t v = ((uint64_t)getpid() << 32) ^ (uint64_t)platform_monotonic_ms() ^ (uint64_t)attempt;
            memcpy(rnd, &v, sizeof rnd);
        }
        snprintf(tmp, size, "%s.%02x%02x%02x%02x%02x%02x%02x%02x.tmp", path, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
                 rnd[5], rnd[6], rnd[7]);
        int fd = open_in(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            *fd_out = fd;
            *tmp_path = tmp;
            return ERR_OK;
        }
        if (errno != EEXIST && errno != EINTR) {
            int e = errno;
            free(tmp);
            return error_set_os(err, errno_code(e), e, "cannot create a temporary file to replace %s: %s", path,
                                os_reason(e));
        }
    }
    free(tmp);
    return error_set(err, ERR_IO, "cannot create a temporary file to replace %s: too many name collisions", path);
}

/* Gives the temporary file its mode and content, flushes and closes it.
 * Returns 0, or an errno with *what saying which step failed. */
static int fill_temp(int fd, mode_t mode, const void *data, size_t len, const char **what)
{
    int e = 0;
    if (mode != 0600 && fchmod(fd, mode) != 0) {
        e = errno;
        *what = "cannot set the mode of the temporary file for";
    } else if (write_all(fd, data, len) != 0) {
        e = errno;
        *what = "cannot write";
    } else if (fsync_fd(fd) != 0) {
        e = errno;
        *what = "cannot flush to disk";
    }
    if (close(fd) != 0 && e == 0) { /* NFS may report write errors only here */
        e = errno;
        *what = "cannot write";
    }
    return e;
}

error_code platform_write_atomic(const char *path, const void *data, size_t len, error_info *err)
{
    /* Keep the permissions of the file being replaced; new files are 0600. */
    mode_t mode = 0600;
    struct stat st;
    if (stat_in(path, &st, true) == 0 && S_ISREG(st.st_mode))
        mode = st.st_mode & 0777;

    crash_point("write_atomic", path);
    int fd = -1;
    char *tmp = NULL;
    error_code rc = open_temp(path, &fd, &tmp, err);
    if (rc != ERR_OK)
        return rc;

    const char *what = NULL;
    int e = fill_temp(fd, mode, data, len, &what);
    if (e == 0)
        crash_point("write_atomic_rename", path); /* leaves the flushed temporary file behind */
    if (e == 0 && rename_in(tmp, path) != 0) {
        e = errno;
        what = "cannot rename the temporary file over";
    }
    if (e != 0) {
        (void)unlink_in(tmp, 0);
        free(tmp);
        /* A missing directory is "not found"; ENOSPC/EDQUOT "disk full". */
        return error_set_os(err, errno_code(e), e, "%s %s: %s", what, path, os_reason(e));
    }
    free(tmp);
    return sync_parent(path, err);
}

error_code platform_write_new_file(const char *path, const void *data, size_t len, bool owner_only, error_info *err)
{
    crash_point("write_new_file", path);
    mode_t mode = owner_only ? 0600 : 0644;
    int fd = open_in(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST)
            return error_set_os(err, ERR_IO, e,
                                "%s already exists; it is not replaced (remove it first, or choose "
                                "another name)",
                                path);
        return fail_path(err, e, "cannot create", path);
    }
    const char *what = NULL;
    /* fchmod: the exact mode, whatever the umask says. */
    int e = fchmod(fd, mode) != 0 ? errno : 0;
    if (e)
        what = "cannot set the mode of";
    if (!e && write_all(fd, data, len) != 0)
        e = errno, what = "cannot write";
    if (!e && fsync_fd(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
        e = errno, what = "cannot flush to disk";
    if (close(fd) != 0 && !e)
        e = errno, what = "cannot write";
    if (e) {
        (void)unlink_in(path, 0);
        return error_set_os(err, errno_code(e), e, "%s %s: %s", what, path, os_reason(e));
    }
    return sync_parent(path, err);
}

error_code platform_machine_id(char *buf, size_t size, error_info *err)
{
    static const char *const files[] = {"/etc/machine-id", "/var/lib/dbus/machine-id"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *text = NULL;
        size_t len = 0;
        if (platform_read_file(files[i], 4096, &text, &len, NULL) != ERR_OK)
            continue;
        char *start = text;
        while (*start && isspace((unsigned char)*start))
            start++;
        size_t n = strlen(start);
        while (n > 0 && isspace((unsigned char)start[n - 1]))
            n--;
        if (n > 0 && n < size) {
            memcpy(buf, start, n);
            buf[n] = '\0';
            free(text);
            return ERR_OK;
        }
        free(text);
    }
    return error_set(err, ERR_NOT_FOUND, "this machine has no machine id (/etc/machine-id is missing or empty)");
}

error_code platform_rename(const char *from, const char *to, error_info *err)
{
    crash_point("rename", to);
    if (rename_in(from, to) != 0) {
        int e = errno;
        if (e == EXDEV)
            return error_set_os(err, ERR_IO, e, "cannot rename %s to %s: they are on different volumes", from, to);
        return error_set_os(err, errno_code(e), e, "cannot rename %s to %s: %s", from, to, os_reason(e));
    }
    char *to_dir = platform_path_dir(to);
    char *from_dir = platform_path_dir(from);
    error_code rc;
    if (!to_dir || !from_dir)
        rc = fail_nomem(err);
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
                return fail_path(err, errno, "cannot read", path);
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
                return fail_nomem(err);
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
            return fail_path(err, errno, "cannot read", path);
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
    /* limit + 1 (content and NUL) must not overflow. */
    size_t limit = max_size > SIZE_MAX - 1 ? SIZE_MAX - 1 : max_size;
    int fd = open_in(path, O_RDONLY, 0);
    if (fd < 0)
        return fail_path(err, errno, "cannot open", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fail_path(err, e, "cannot read", path);
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return error_set_os(err, ERR_IO, EISDIR, "cannot read %s: it is a directory", path);
    }
    /* Size the buffer from the file size when it is known and within the cap
     * (/proc files and devices say 0); the probe byte handles the rest. */
    size_t hint = 4096;
    if (S_ISREG(st.st_mode) && st.st_size > 0)
        hint = (uint64_t)st.st_size > (uint64_t)limit ? limit : (size_t)st.st_size;
    if (hint > limit)
        hint = limit;
    size_t cap = hint + 1;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return fail_nomem(err);
    }
    size_t used = 0;
    error_code rc = read_capped(fd, path, limit, &buf, cap, &used, err);
    close(fd);
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
    if (unlink_in(path, 0) != 0 && errno != ENOENT) {
        int e = errno;
        return error_set_os(err, errno_code(e), e, "cannot remove %s: %s", path, os_reason(e));
    }
    return ERR_OK;
}

/*
 * Removes everything inside the open directory dir_fd (consumed), whose path
 * is dir_path (for messages). Works relative to directory descriptors and
 * opens subdirectories with O_NOFOLLOW, so a symbolic link, even one swapped
 * in while we walk, is unlinked, never followed.
 */
static MUST_CHECK error_code empty_dir(int dir_fd, const char *dir_path, error_info *err)
{
    DIR *dir = fdopendir(dir_fd);
    if (!dir) {
        int e = errno;
        close(dir_fd);
        return error_set_os(err, ERR_IO, e, "cannot list %s: %s", dir_path, strerror(e));
    }
    error_code rc = ERR_OK;
    for (;;) {
        errno = 0;
        struct dirent *entry = readdir(dir);
        if (!entry) {
            if (errno != 0)
                rc = fail_io(err, "cannot list", dir_path);
            break;
        }
        const char *name = entry->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        char *child = platform_path_join(dir_path, name);
        if (!child) {
            rc = fail_nomem(err);
            break;
        }
        struct stat st;
        int flags = 0;
        if (fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT)
                rc = fail_io(err, "cannot remove", child);
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(dir), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                rc = fail_io(err, "cannot open", child);
            else
                rc = empty_dir(sub, child, err);
            flags = AT_REMOVEDIR;
        }
        if (rc == ERR_OK)
            crash_point("remove_tree_entry", child); /* a half-removed tree is a state of its own */
        if (rc == ERR_OK && unlinkat(dirfd(dir), name, flags) != 0 && errno != ENOENT)
            rc = fail_io(err, "cannot remove", child);
        free(child);
        if (rc != ERR_OK)
            break;
    }
    closedir(dir);
    return rc;
}

error_code platform_remove_tree(const char *path, error_info *err)
{
    const char *below = under_root(path);
    if (below && *below == '\0') /* it would be emptied, then fail to go */
        return error_set(err, ERR_IO, "refusing to remove %s: it is the state directory this run holds", path);
    struct stat st;
    if (stat_in(path, &st, false) != 0) {
        if (errno == ENOENT)
            return ERR_OK;
        return fail_io(err, "cannot remove", path);
    }
    if (!S_ISDIR(st.st_mode))
        return platform_remove_file(path, err); /* a file, or a link: the link itself */
    crash_point("remove_tree", path);
    int fd = open_in(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
    if (fd < 0)
        return fail_io(err, "cannot open", path);
    error_code rc = empty_dir(fd, path, err);
    if (rc != ERR_OK)
        return rc;
    if (unlink_in(path, AT_REMOVEDIR) != 0 && errno != ENOENT)
        return fail_io(err, "cannot remove", path);
    return ERR_OK;
}

/* mkdir of one level: success if it now exists as a directory. */
static MUST_CHECK error_code mkdir_one(const char *dir, const char *full, error_info *err)
{
    if (mkdir_in(dir) == 0)
        return ERR_OK;
    int e = errno;
    struct stat st;
    if (stat_in(dir, &st, true) == 0) {
        if (S_ISDIR(st.st_mode))
            return ERR_OK;
        return error_set_os(err, ERR_IO, EEXIST, "cannot create directory %s: %s exists and is not a directory", full,
                            dir);
    }
    /* Parents are made first: a missing one here is a race, not "not found". */
    error_code code = errno_code(e) == ERR_NOT_FOUND ? ERR_IO : errno_code(e);
    return error_set_os(err, code, e, "cannot create directory %s: %s: %s", full, dir, os_reason(e));
}

error_code platform_mkdirs(const char *path, error_info *err)
{
    if (path[0] == '\0')
        return error_set(err, ERR_IO, "cannot create a directory with an empty name");
    char *copy = strdup(path);
    if (!copy)
        return fail_nomem(err);
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

bool platform_posix_dir_trusted(unsigned long owner_uid, unsigned long mode, unsigned long euid, char *why, size_t size)
{
    if (owner_uid != euid && owner_uid != 0) {
        snprintf(why, size, "owned by uid %lu", owner_uid);
        return false;
    }
    if (mode & 022) {
        const char *who = (mode & 020) && (mode & 002) ? "group and others" : (mode & 020) ? "its group" : "others";
        snprintf(why, size, "writable by %s (mode %04lo)", who, mode & 07777);
        return false;
    }
    return true;
}

bool platform_posix_parent_trusted(unsigned long owner_uid, unsigned long mode, unsigned long euid, char *why,
                                   size_t size)
{
    if (owner_uid == 0 && (mode & S_ISVTX))
        return true;
    return platform_posix_dir_trusted(owner_uid, mode, euid, why, size);
}

bool platform_posix_file_trusted(unsigned long owner_uid, unsigned long mode, unsigned long euid, bool secret,
                                 char *why, size_t size)
{
    /* The owner first; for a secret any group or other bit is the finding. */
    if (secret && (owner_uid == euid || owner_uid == 0) && (mode & 077)) {
        snprintf(why, size, "readable by group or others (mode %04lo)", mode & 07777);
        return false;
    }
    return platform_posix_dir_trusted(owner_uid, mode, euid, why, size);
}

/* "root:root" or the running uid, for the chown in a refusal. */
static void owner_hint(char *buf, size_t size)
{
    unsigned long euid = (unsigned long)geteuid();
    if (euid == 0)
        snprintf(buf, size, "root:root");
    else
        snprintf(buf, size, "%lu", euid);
}

/*
 * Judges every directory of resolved (an absolute path without links, as
 * realpath gives it) from "/" down to and excluding its last component by
 * platform_posix_parent_trusted. On refusal fills bad (size bytes) with the
 * directory and why with what is wrong and returns false; an lstat failure
 * fills *os_error.
 */
static bool parents_trusted(const char *resolved, char *bad, size_t bad_size, char *why, size_t why_size, int *os_error)
{
    unsigned long euid = (unsigned long)geteuid();
    const char *last = strrchr(resolved, '/');
    size_t stop = last ? (size_t)(last - resolved) : 0;
    for (size_t i = 0; i <= stop; i++) {
        if (resolved[i] != '/')
            continue;
        /* The directory ending just before this separator ("/" for i == 0). */
        size_t n = i == 0 ? 1 : i;
        if (n >= bad_size)
            n = bad_size - 1;
        memcpy(bad, resolved, n);
        bad[n] = '\0';
        struct stat st;
        if (lstat(bad, &st) != 0) {
            *os_error = errno;
            snprintf(why, why_size, "unreadable: %s", strerror(errno));
            return false;
        }
        if (!S_ISDIR(st.st_mode)) {
            /* Swapped for something else since realpath: a race, refused. */
            snprintf(why, why_size, "no longer a directory");
            return false;
        }
        if (!platform_posix_parent_trusted((unsigned long)st.st_uid, (unsigned long)st.st_mode, euid, why, why_size))
            return false;
    }
    return true;
}

/* "(the resolved path of X)" when path went through a link, else "". */
static void resolved_note(const char *path, const char *resolved, char *buf, size_t size)
{
    if (strcmp(path, resolved) != 0)
        snprintf(buf, size, " (%s resolves to %s)", path, resolved);
    else
        buf[0] = '\0';
}

/*
 * platform_check_private_dir for a directory below the held state
 * directory: judged through a descriptor reached from the handle (no link
 * followed on the way), so what is judged is what later calls reach. The
 * directories above it are the held one's, judged when it was opened.
 */
static MUST_CHECK error_code check_private_below_root(const char *path, error_info *err)
{
    int fd = open_in(path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fail_path(err, errno, "cannot read the permissions of", path);
    struct stat st;
    char why[128], owner[32];
    error_code rc = ERR_OK;
    if (fstat(fd, &st) != 0)
        rc = fail_path(err, errno, "cannot read the permissions of", path);
    else if (!platform_posix_dir_trusted((unsigned long)st.st_uid, (unsigned long)st.st_mode, (unsigned long)geteuid(),
                                         why, sizeof why)) {
        owner_hint(owner, sizeof owner);
        rc = error_set(err, ERR_PERMISSION,
                       "%s is %s, so another user could change what outpost runs; refusing it. Run: chown %s %s && "
                       "chmod go-w %s",
                       path, why, owner, path, path);
    }
    close(fd);
    return rc;
}

error_code platform_check_private_dir(const char *path, error_info *err)
{
    const char *below = under_root(path);
    if (below && *below)
        return check_private_below_root(path, err);
    /* Links resolved once; the resolved path is what is judged, down from "/". */
    char *resolved = realpath(path, NULL);
    if (!resolved)
        return fail_path(err, errno, "cannot read the permissions of", path);
    char note[PATH_MAX + 64], bad[PATH_MAX], why[128], owner[32];
    resolved_note(path, resolved, note, sizeof note);
    owner_hint(owner, sizeof owner);
    int os_error = 0;
    error_code rc = ERR_OK;
    if (!parents_trusted(resolved, bad, sizeof bad, why, sizeof why, &os_error)) {
        if (os_error)
            rc = error_set_os(err, ERR_IO, os_error, "cannot read the permissions of %s%s: %s", bad, note,
                              strerror(os_error));
        else
            rc = error_set(err, ERR_PERMISSION,
                           "%s, a directory above %s%s, is %s, so another user could rename what outpost runs; "
                           "refusing it. Run: chown %s %s && chmod go-w %s (or choose a state_dir whose every parent "
                           "directory is owned by root and writable by it alone)",
                           bad, path, note, why, owner, bad, bad);
        free(resolved);
        return rc;
    }
    struct stat st;
    if (lstat(resolved, &st) != 0) {
        rc = fail_path(err, errno, "cannot read the permissions of", path);
    } else if (!S_ISDIR(st.st_mode)) {
        rc = error_set(err, ERR_IO, "%s is not a directory", path);
    } else if (!platform_posix_dir_trusted((unsigned long)st.st_uid, (unsigned long)st.st_mode,
                                           (unsigned long)geteuid(), why, sizeof why)) {
        rc = error_set(err, ERR_PERMISSION,
                       "%s%s is %s, so another user could change what outpost runs; refusing it. Run: chown %s %s && "
                       "chmod go-w %s",
                       path, note, why, owner, resolved, resolved);
    }
    free(resolved);
    return rc;
}

error_code platform_check_trusted_file(const char *what, const char *path, bool secret, error_info *err)
{
    char *resolved = realpath(path, NULL);
    if (!resolved) {
        int e = errno;
        if (errno_code(e) == ERR_NOT_FOUND)
            return error_set_os(err, ERR_NOT_FOUND, e, "%s %s does not exist", what, path);
        return error_set_os(err, ERR_CONFIG, e, "cannot read %s %s: %s", what, path, strerror(e));
    }
    char note[PATH_MAX + 64], bad[PATH_MAX], why[128], owner[32];
    resolved_note(path, resolved, note, sizeof note);
    owner_hint(owner, sizeof owner);
    int os_error = 0;
    error_code rc = ERR_OK;
    struct stat st;
    if (!parents_trusted(resolved, bad, sizeof bad, why, sizeof why, &os_error)) {
        rc = error_set_os(err, ERR_CONFIG, os_error,
                          "%s %s%s is in %s, which is %s, so another user could replace it; refusing it. Run: chown %s "
                          "%s && chmod go-w %s",
                          what, path, note, bad, why, owner, bad, bad);
    } else if (stat(resolved, &st) != 0) {
        int e = errno;
        rc = error_set_os(err, ERR_CONFIG, e, "cannot read %s %s: %s", what, path, strerror(e));
    } else if (!S_ISREG(st.st_mode)) {
        rc = error_set(err, ERR_CONFIG, "%s %s is not a regular file", what, path);
    } else if (!platform_posix_file_trusted((unsigned long)st.st_uid, (unsigned long)st.st_mode,
                                            (unsigned long)geteuid(), secret, why, sizeof why)) {
        rc = error_set(err, ERR_CONFIG,
                       "%s %s%s is %s, so another user could %s; refusing it. Run: chown %s %s && chmod %s %s", what,
                       path, note, why, secret ? "read or replace it" : "change what outpost trusts or runs", owner,
                       resolved, secret ? "600" : "go-w", resolved);
    }
    free(resolved);
    return rc;
}

platform_path_kind platform_path_stat(const char *path, uint64_t *size)
{
    struct stat st;
    if (stat_in(path, &st, false) != 0)
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

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void platform_free_names(char **names, size_t count)
{
    if (!names)
        return;
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

error_code platform_list_dir(const char *path, char ***names, size_t *count, error_info *err)
{
    int fd = open_in(path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fail_path(err, errno, "cannot list", path);
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int e = errno;
        close(fd);
        return fail_path(err, e, "cannot list", path);
    }
    char **list = NULL;
    size_t used = 0, cap = 0;
    error_code rc = ERR_OK;
    for (;;) {
        errno = 0;
        struct dirent *entry = readdir(dir);
        if (!entry) {
            if (errno != 0)
                rc = fail_io(err, "cannot list", path);
            break;
        }
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        if (used == cap) {
            size_t new_cap = cap ? cap * 2 : 16;
            char **bigger = realloc(list, new_cap * sizeof *list);
            if (!bigger) {
                rc = fail_nomem(err);
                break;
            }
            list = bigger;
            cap = new_cap;
        }
        list[used] = strdup(entry->d_name);
        if (!list[used]) {
            rc = fail_nomem(err);
            break;
        }
        used++;
    }
    closedir(dir);
    if (rc != ERR_OK) {
        platform_free_names(list, used);
        return rc;
    }
    if (used > 1)
        qsort(list, used, sizeof *list, compare_names);
    *names = list;
    *count = used;
    return ERR_OK;
}

error_code platform_free_space(const char *path, uint64_t *bytes, error_info *err)
{
    struct statvfs vfs;
    if (statvfs(path, &vfs) != 0)
        return fail_path(err, errno, "cannot read the free space of", path);
    *bytes = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
    return ERR_OK;
}

error_code platform_check_secret_file(const char *path, error_info *err)
{
    error_code rc = platform_check_trusted_file("API key file", path, true, err);
    if (rc == ERR_NOT_FOUND && err)
        err->code = ERR_CONFIG;
    return rc == ERR_NOT_FOUND ? ERR_CONFIG : rc;
}

/* ---- Single-instance lock ------------------------------------------------ */

struct platform_lock {
    int fd; /* open lock file holding the flock; closing it releases the lock */
};

error_code platform_lock_acquire(const char *path, platform_lock **lock, error_info *err)
{
    /* O_NOFOLLOW: the lock file is ours; never truncate a link's target. */
    int fd = open_in(path, O_CREAT | O_RDWR | O_NOFOLLOW, 0600);
    if (fd < 0)
        return fail_path(err, errno, "cannot open the lock file", path);
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
        return fail_nomem(err);
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

/* ---- Time and randomness ------------------------------------------------- */

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t platform_time_utc_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}

int64_t platform_monotonic_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

void platform_sleep_ms(int64_t ms)
{
    if (ms <= 0) {
        sched_yield();
        return;
    }
    struct timespec left = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}

/* /dev/urandom, for systems without getrandom() or a kernel that lacks it. */
static MUST_CHECK error_code random_from_device(unsigned char *p, size_t len, error_info *err)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return error_set_os(err, ERR_INTERNAL, e, "cannot open /dev/urandom: %s", strerror(e));
    }
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            return error_set_os(err, ERR_INTERNAL, e, "cannot read /dev/urandom: %s", strerror(e));
        }
        p += n;
        len -= (size_t)n;
    }
    close(fd);
    return ERR_OK;
}

error_code platform_random_bytes(void *buf, size_t len, error_info *err)
{
    unsigned char *p = buf;
#if defined(PLATFORM_HAVE_GETRANDOM)
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            if (e == ENOSYS)
                return random_from_device(p, len, err);
            return error_set_os(err, ERR_INTERNAL, e, "cannot read random bytes: %s", strerror(e));
        }
        p += n;
        len -= (size_t)n;
    }
    return ERR_OK;
#elif defined(__APPLE__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__)
    arc4random_buf(p, len);
    return ERR_OK;
#else
    return random_from_device(p, len, err);
#endif
}

/* ---- Processes ----------------------------------------------------------- */

/* Turns a waitpid() status into platform_spawn_result's exit_code. */
static int decode_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

/* waitpid() that retries EINTR. */
static pid_t wait_child(pid_t pid, int *status, int options)
{
    pid_t r;
    do {
        r = waitpid(pid, status, options);
    } while (r < 0 && errno == EINTR);
    return r;
}

/*
 * Makes sure the child inherits no descriptor above stderr. Ours are all
 * close-on-exec, but libraries open their own without it (libcurl's pooled
 * sockets under `run`), so the child closes everything above 2 itself
 * (glibc 2.34+); elsewhere every open descriptor above 2 is marked
 * close-on-exec here, before the spawn. Returns 0 or an errno.
 */
static int close_inherited(posix_spawn_file_actions_t *actions, int first_closed)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return posix_spawn_file_actions_addclosefrom_np(actions, first_closed);
#else
    (void)actions;
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = first_closed; fd < max; fd++) {
        int flags = fcntl(fd, F_GETFD);
        if (flags >= 0 && !(flags & FD_CLOEXEC))
            (void)fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
    return 0;
#endif
}

/*
 * Sets up posix_spawn so the child: reads the null device as stdin, leads a
 * new process group (pgid == pid: the timeout kills the group), starts with
 * no blocked signals and default dispositions for the signals a caller may
 * have ignored (SIGPIPE under libcurl). Returns 0 or an errno.
 */
static int spawn_setup(posix_spawn_file_actions_t *actions, posix_spawnattr_t *attr, const char *output_path,
                       int output_fd, int first_closed)
{
    int rc = posix_spawn_file_actions_addopen(actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (rc != 0)
        return rc;
    /* output_fd: the output file already opened through the state
     * directory's handle; else output_path is opened by name in the child. */
    if (output_fd >= 0)
        rc = posix_spawn_file_actions_adddup2(actions, output_fd, STDOUT_FILENO);
    else if (output_path)
        rc = posix_spawn_file_actions_addopen(actions, STDOUT_FILENO, output_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (rc == 0 && (output_fd >= 0 || output_path))
        rc = posix_spawn_file_actions_adddup2(actions, STDOUT_FILENO, STDERR_FILENO);
    if (rc != 0)
        return rc;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    const int reset[] = {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
        sigaddset(&defaults, reset[i]);
    if ((rc = close_inherited(actions, first_closed)) != 0)
        return rc;
    short flags = (short)(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if ((rc = posix_spawnattr_setflags(attr, flags)) != 0 || (rc = posix_spawnattr_setpgroup(attr, 0)) != 0 ||
        (rc = posix_spawnattr_setsigmask(attr, &none)) != 0 ||
        (rc = posix_spawnattr_setsigdefault(attr, &defaults)) != 0)
        return rc;
    return 0;
}

/* ---- Held files (the installer hashed is the installer run) --------------- */

struct platform_held_file {
    FILE *stream; /* over the open descriptor; closing it closes the file */
};

error_code platform_held_open(const char *path, platform_held_file **file, error_info *err)
{
    /* O_NOFOLLOW: a link planted at the last component is refused, not followed. */
    int fd = open_in(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY, 0);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            return error_set_os(err, ERR_IO, e, "%s is, or goes through, a symbolic link; refusing it", path);
        return fail_path(err, e, "cannot open", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        return error_set_os(err, ERR_IO, e, "%s is not a regular file", path);
    }
    platform_held_file *held = calloc(1, sizeof *held);
    if (held)
        held->stream = fdopen(fd, "rb");
    if (!held || !held->stream) {
        free(held);
        close(fd);
        return fail_nomem(err);
    }
    *file = held;
    return ERR_OK;
}

FILE *platform_held_stream(platform_held_file *file)
{
    return file->stream;
}

void platform_held_close(platform_held_file *file)
{
    if (!file)
        return;
    fclose(file->stream);
    free(file);
}

/* The descriptor number a held program has in the child: the first above stderr. */
#define HELD_CHILD_FD 3

/* fd itself when above HELD_CHILD_FD, else a close-on-exec copy above it
 * (fd closed): the child's dup2 onto HELD_CHILD_FD must not overwrite a
 * descriptor a later file action still reads. -1 with errno on failure. */
static int fd_above_held(int fd)
{
    if (fd < 0 || fd > HELD_CHILD_FD)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, HELD_CHILD_FD + 1);
    int e = errno;
    close(fd);
    errno = e;
    return moved;
}

/* Starts argv with environment envp, stdout and stderr to output_path when
 * not NULL, in cwd when not NULL, running the held program when not NULL;
 * returns the child's pid, or -1 with err filled. */
static pid_t spawn_start(const char *const argv[], char *const envp[], const platform_spawn_options *o, error_info *err)
{
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) {
        error_set_os(err, ERR_SPAWN, rc, "cannot run %s: %s", argv[0], strerror(rc));
        return -1;
    }
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&actions);
        error_set_os(err, ERR_SPAWN, rc, "cannot run %s: %s", argv[0], strerror(rc));
        return -1;
    }
    pid_t pid = -1;
    /* The held program is executed by its descriptor, as fexecve does
     * (Linux: through /proc/self/fd, which is what fexecve uses), so the
     * file hashed is the file run whatever happened to its name since. Its
     * descriptor goes to HELD_CHILD_FD before the others are closed and stays
     * open across the exec: a script's interpreter reads it from there. */
    char held_path[32];
    int held_fd = o->program ? fileno(o->program->stream) : -1;
#ifdef __linux__
    snprintf(held_path, sizeof held_path, "/proc/self/fd/%d", HELD_CHILD_FD);
#else
    snprintf(held_path, sizeof held_path, "/dev/fd/%d", HELD_CHILD_FD);
#endif
    int moved = -1;
    if (held_fd >= 0 && held_fd <= HELD_CHILD_FD) {
        /* dup2 onto itself would keep close-on-exec: move it above first. */
        moved = fcntl(held_fd, F_DUPFD_CLOEXEC, HELD_CHILD_FD + 1);
        held_fd = moved;
        if (moved < 0)
            rc = errno;
    }
    if (rc == 0 && held_fd >= 0)
        rc = posix_spawn_file_actions_adddup2(&actions, held_fd, HELD_CHILD_FD);
    /* The output file and the working directory under the state directory
     * are reached through its handle, here, not by name in the child. */
    int output_fd = -1, cwd_fd = -1;
    if (rc == 0 && o->output_path && under_root(o->output_path)) {
        output_fd = fd_above_held(open_in(o->output_path, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY, 0600));
        if (output_fd < 0)
            rc = errno;
    }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
    /* Before spawn_setup: its last action closes every descriptor above
     * the ones the child keeps, cwd_fd too. */
    if (rc == 0 && o->cwd && under_root(o->cwd)) {
        cwd_fd = fd_above_held(open_in(o->cwd, O_RDONLY | O_DIRECTORY, 0));
        rc = cwd_fd < 0 ? errno : posix_spawn_file_actions_addfchdir_np(&actions, cwd_fd);
    } else if (rc == 0 && o->cwd) {
        rc = posix_spawn_file_actions_addchdir_np(&actions, o->cwd);
    }
#endif
    if (rc == 0)
        rc =
            spawn_setup(&actions, &attr, o->output_path, output_fd, o->program ? HELD_CHILD_FD + 1 : STDERR_FILENO + 1);
    /* Elsewhere the child keeps outpost's working directory: on POSIX the
     * installer is named by its full path, so nothing depends on it. */
    /* glibc, macOS and the BSDs report exec failures (ENOENT, EACCES...)
     * as posix_spawnp's result. */
    if (rc == 0 && o->program)
        rc = posix_spawn(&pid, held_path, &actions, &attr, (char *const *)argv, envp);
    else if (rc == 0)
        rc = posix_spawnp(&pid, argv[0], &actions, &attr, (char *const *)argv, envp);
    if (moved >= 0)
        close(moved);
    if (output_fd >= 0)
        close(output_fd);
    if (cwd_fd >= 0)
        close(cwd_fd);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        const char *hint = (rc == ENOENT && !strchr(argv[0], '/')) ? " (not found in PATH)" : "";
        error_set_os(err, ERR_SPAWN, rc, "cannot run %s: %s%s", argv[0], strerror(rc), hint);
        return -1;
    }
    return pid;
}

char *platform_system_program(const char *name)
{
    (void)name;
    return NULL;
}

void platform_harden_process(void)
{
    /* The API key is in memory: a core file would hold it, readable where
     * the dump goes. Both: the limit stops the kernel's dump, and a
     * non-dumpable process also keeps ptrace by non-root users out. */
    struct rlimit none = {0, 0};
    (void)setrlimit(RLIMIT_CORE, &none);
#ifdef __linux__
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#endif
}

error_code platform_spawn(const char *const argv[], int64_t timeout_ms, platform_spawn_result *result, error_info *err)
{
    return platform_spawn_env(argv, NULL, NULL, timeout_ms, result, err);
}

error_code platform_spawn_to_file(const char *const argv[], const char *output_path, int64_t timeout_ms,
                                  platform_spawn_result *result, error_info *err)
{
    return platform_spawn_env(argv, NULL, output_path, timeout_ms, result, err);
}

error_code platform_environment(char ***vars, size_t *count, error_info *err)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **list = calloc(n + 1, sizeof *list);
    if (!list)
        return fail_nomem(err);
    for (size_t i = 0; i < n; i++) {
        list[i] = strdup(environ[i]);
        if (!list[i]) {
            platform_free_names(list, i);
            return fail_nomem(err);
        }
    }
    *vars = list;
    *count = n;
    return ERR_OK;
}

error_code platform_spawn_env(const char *const argv[], const char *const envp[], const char *output_path,
                              int64_t timeout_ms, platform_spawn_result *result, error_info *err)
{
    platform_spawn_options options = {.envp = envp, .output_path = output_path};
    return platform_spawn_with(argv, &options, timeout_ms, result, err);
}

error_code platform_spawn_with(const char *const argv[], const platform_spawn_options *options, int64_t timeout_ms,
                               platform_spawn_result *result, error_info *err)
{
    if (!argv || !argv[0] || !argv[0][0])
        return error_set(err, ERR_SPAWN, "cannot run a program: the command is empty");
    pid_t pid = spawn_start(argv, options->envp ? (char *const *)options->envp : environ, options, err);
    if (pid < 0)
        return ERR_SPAWN;

    /* Poll with waitpid(WNOHANG) and short, growing sleeps: no SIGCHLD
     * handler to install, nothing shared with the rest of the process. */
    int64_t start = platform_monotonic_ms();
    int64_t pause_ms = 1;
    int status = 0;
    bool timed_out = false;
    for (;;) {
        pid_t r = wait_child(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0) {
            /* ECHILD: someone set SIGCHLD to SIG_IGN and the child was reaped
             * for us; its pid may already be reused, so kill nothing. */
            int e = errno;
            return error_set_os(err, ERR_SPAWN, e, "cannot wait for %s: %s", argv[0], strerror(e));
        }
        int64_t elapsed = platform_monotonic_ms() - start;
        if (timeout_ms > 0 && elapsed >= timeout_ms) {
            /* The unreaped child keeps its pid, hence the group id, reserved:
             * killing -pid cannot hit an unrelated group. */
            if (kill(-pid, SIGKILL) != 0)
                kill(pid, SIGKILL);
            if (wait_child(pid, &status, 0) != pid) {
                int e = errno;
                return error_set_os(err, ERR_SPAWN, e, "cannot wait for %s: %s", argv[0], strerror(e));
            }
            timed_out = true;
            break;
        }
        int64_t nap = pause_ms;
        if (timeout_ms > 0 && timeout_ms - elapsed < nap)
            nap = timeout_ms - elapsed;
        platform_sleep_ms(nap);
        if (pause_ms < SPAWN_POLL_MAX_MS)
            pause_ms *= 2;
    }
    result->exit_code = decode_status(status);
    result->timed_out = timed_out;
    return ERR_OK;
}

/* ---- Threads ------------------------------------------------------------- */

struct platform_thread {
    pthread_t id;          /* the running thread */
    void (*fn)(void *arg); /* what it runs */
    void *arg;             /* fn's argument */
};

struct platform_mutex {
    pthread_mutex_t mutex;
};

struct platform_cond {
    pthread_cond_t cond;
};

static void *thread_main(void *arg)
{
    platform_thread *thread = arg;
    thread->fn(thread->arg);
    return NULL;
}

error_code platform_thread_start(platform_thread **thread, void (*fn)(void *arg), void *arg, error_info *err)
{
    platform_thread *t = malloc(sizeof *t);
    if (!t)
        return fail_nomem(err);
    t->fn = fn;
    t->arg = arg;
    int rc = pthread_create(&t->id, NULL, thread_main, t);
    if (rc != 0) {
        free(t);
        return error_set_os(err, rc == EAGAIN ? ERR_NOMEM : ERR_INTERNAL, rc, "cannot start a thread: %s",
                            strerror(rc));
    }
    *thread = t;
    return ERR_OK;
}

void platform_thread_join(platform_thread *thread)
{
    if (!thread)
        return;
    pthread_join(thread->id, NULL);
    free(thread);
}

platform_mutex *platform_mutex_new(void)
{
    platform_mutex *m = malloc(sizeof *m);
    if (!m)
        return NULL;
    if (pthread_mutex_init(&m->mutex, NULL) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

void platform_mutex_free(platform_mutex *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mutex);
    free(m);
}

/* Locking a valid, initialised mutex cannot fail except by a programming
 * error (deadlock detection, a freed mutex): stop rather than run unlocked. */
void platform_mutex_lock(platform_mutex *m)
{
    if (pthread_mutex_lock(&m->mutex) != 0)
        abort();
}

void platform_mutex_unlock(platform_mutex *m)
{
    if (pthread_mutex_unlock(&m->mutex) != 0)
        abort();
}

platform_cond *platform_cond_new(void)
{
    platform_cond *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    if (pthread_cond_init(&c->cond, NULL) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

void platform_cond_free(platform_cond *c)
{
    if (!c)
        return;
    pthread_cond_destroy(&c->cond);
    free(c);
}

void platform_cond_wait(platform_cond *c, platform_mutex *m)
{
    if (pthread_cond_wait(&c->cond, &m->mutex) != 0)
        abort();
}

void platform_cond_broadcast(platform_cond *c)
{
    pthread_cond_broadcast(&c->cond);
}

/* ---- Host and environment ------------------------------------------------ */

void platform_hostname(char *buf, size_t size)
{
    if (!buf || size == 0)
        return;
    char name[256 + 1]; /* POSIX: host names are at most 255 bytes */
    if (gethostname(name, sizeof name - 1) != 0)
        name[0] = '\0';
    name[sizeof name - 1] = '\0';
    snprintf(buf, size, "%s", name[0] ? name : "unknown");
}

/* uname() facts, read once: os name lowercased, arch mapped to our names. */
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char host_os[sizeof(((struct utsname *)0)->sysname)];
static char host_arch[sizeof(((struct utsname *)0)->machine)];

static const char *const arch_names[][2] = {
    /* uname().machine   status.json agent.arch */
    {"x86_64", "x86_64"}, {"amd64", "x86_64"}, {"i386", "x86"},   {"i486", "x86"},
    {"i586", "x86"},      {"i686", "x86"},     {"i86pc", "x86"},  {"aarch64", "aarch64"},
    {"arm64", "aarch64"}, {"armv6l", "arm"},   {"armv7l", "arm"}, {"armv8l", "arm"},
};

static void host_read(void)
{
    struct utsname u;
    if (uname(&u) != 0) {
        snprintf(host_os, sizeof host_os, "unknown");
        snprintf(host_arch, sizeof host_arch, "unknown");
        return;
    }
    size_t i;
    for (i = 0; u.sysname[i] && i + 1 < sizeof host_os; i++)
        host_os[i] = (char)tolower((unsigned char)u.sysname[i]);
    host_os[i] = '\0';
    snprintf(host_arch, sizeof host_arch, "%s", u.machine);
    for (i = 0; i < sizeof arch_names / sizeof arch_names[0]; i++) {
        if (strcmp(u.machine, arch_names[i][0]) == 0) {
            snprintf(host_arch, sizeof host_arch, "%s", arch_names[i][1]);
            break;
        }
    }
}

const char *platform_os_name(void)
{
    pthread_once(&host_once, host_read);
    return host_os[0] ? host_os : "unknown";
}

const char *platform_arch(void)
{
    pthread_once(&host_once, host_read);
    return host_arch[0] ? host_arch : "unknown";
}

const char *platform_getenv(const char *name)
{
    return getenv(name);
}

bool platform_is_terminal(FILE *stream)
{
    if (!stream)
        return false;
    int fd = fileno(stream);
    return fd >= 0 && isatty(fd) == 1;
}

char *platform_default_config_path(void)
{
    return strdup("/etc/outpost/outpost.json");
}

char *platform_default_state_dir(void)
{
    return strdup("/var/lib/outpost");
}

error_code platform_installed_version(const char *display_name, char **version, error_info *err)
{
    return error_set(err, ERR_NOT_FOUND,
                     "cannot read the installed version of %s: no software inventory on this platform", display_name);
}

error_code platform_system_ca_bundle(char **pem, size_t *len, error_info *err)
{
    (void)pem;
    (void)len;
    /* The store is a file here: platform_system_ca_file. */
    return error_set(err, ERR_NOT_FOUND, "the system's CA store is a file on this platform");
}

const char *platform_system_ca_file(void)
{
    static const char *const known[] = {
        "/etc/ssl/certs/ca-certificates.crt",                /* Debian, Ubuntu, Arch, Gentoo */
        "/etc/pki/tls/certs/ca-bundle.crt",                  /* Fedora, RHEL, CentOS */
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* RHEL 7 and later */
        "/etc/ssl/ca-bundle.pem",                            /* openSUSE, SLES */
        "/etc/ssl/cert.pem",                                 /* Alpine */
    };
    const char *env = getenv("SSL_CERT_FILE");
    if (env && *env)
        return env;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (access(known[i], R_OK) == 0)
            return known[i];
    return NULL;
}

error_code platform_system_code_signing_roots(char **pem, size_t *len, error_info *err)
{
    const char *file = platform_system_ca_file();
    if (!file)
        return error_set(err, ERR_NOT_FOUND,
                         "no system CA bundle found (looked for the distributions' bundles; SSL_CERT_FILE names "
                         "another)");
    error_code rc = platform_read_file(file, 64u << 20, pem, len, err);
    if (rc != ERR_OK)
        return error_prefix(err, "the system CA bundle");
    return ERR_OK;
}

void platform_boot_id(char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = '\0';
#ifdef __linux__
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (!f)
        return;
    if (!fgets(buf, (int)size, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
#endif
}

/* ---- The log file and the system log ------------------------------------- */

struct platform_append_file {
    int fd;
};

error_code platform_append_open(const char *path, platform_append_file **file, uint64_t *size, error_info *err)
{
    /* O_EXCL first, to know whether the file is new and gets the exact mode
     * (the umask could leave more or fewer bits); an existing file keeps its own. */
    int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
    int fd = open_in(path, flags | O_CREAT | O_EXCL, 0600);
    bool created = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = open_in(path, flags, 0);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            return error_set_os(err, ERR_IO, e, "cannot open %s for appending: %s", path, os_reason(e));
        return fail_path(err, e, "cannot open for appending", path);
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
        return fail_nomem(err);
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
    if (write_all(file->fd, data, len) != 0) {
        int e = errno;
        return error_set_os(err, errno_code(e), e, "cannot append to the log file: %s", strerror(e));
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

long platform_process_id(void)
{
    return (long)getpid();
}

static const char *interrupt_message;

/* Async-signal-safe: write(2) and _exit only. */
static void on_interrupt(int signal_number)
{
    (void)signal_number;
    if (interrupt_message && write(STDERR_FILENO, interrupt_message, strlen(interrupt_message)) < 0)
        _exit(130);
    _exit(130);
}

void platform_exit_on_interrupt(const char *message)
{
    interrupt_message = message;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

/* The group named group (getgrnam_r: the report's threads may be running),
 * into *entry with its strings in buf. */
static error_code find_group(const char *group, struct group *entry, char *buf, size_t size, error_info *err)
{
    struct group *found = NULL;
    int e = getgrnam_r(group, entry, buf, size, &found);
    if (!found)
        return error_set_os(err, ERR_CONFIG, e, "there is no group \"%s\" on this machine (getent group %s)", group,
                            group);
    return ERR_OK;
}

error_code platform_group_exists(const char *group, error_info *err)
{
    struct group entry;
    char buf[16384];
    return find_group(group, &entry, buf, sizeof buf, err);
}

error_code platform_share_with_group(const char *path, const char *group, error_info *err)
{
    struct group entry;
    char buf[16384];
    error_code rc = find_group(group, &entry, buf, sizeof buf, err);
    if (rc != ERR_OK)
        return rc;
    const struct group *found = &entry;
    /* Through a descriptor of the file itself (never a link's target):
     * what is judged is what is changed. */
    int fd = open_in(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0)
        return fail_path(err, errno, "cannot read the permissions of", path);
    struct stat st;
    if (fstat(fd, &st) != 0)
        rc = fail_path(err, errno, "cannot read the permissions of", path);
    else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        rc = error_set(err, ERR_IO, "%s is not a file or a directory", path);
    else if (fchown(fd, (uid_t)-1, found->gr_gid) != 0)
        rc = fail_path(err, errno, "cannot give the readers group access to", path);
    else if (fchmod(fd, S_ISDIR(st.st_mode) ? 0750 : 0640) != 0)
        rc = fail_path(err, errno, "cannot set the permissions of", path);
    close(fd);
    return rc;
}

error_code platform_inventory_write(const platform_inventory_value *values, size_t count, error_info *err)
{
    (void)values;
    (void)count;
    (void)err;
    return ERR_OK;
}

error_code platform_make_world_readable(const char *path, error_info *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return fail_path(err, errno, "cannot read the permissions of", path);
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return error_set(err, ERR_IO, "%s is not a file or a directory", path);
    if (chmod(path, S_ISDIR(st.st_mode) ? 0755 : 0644) != 0)
        return fail_path(err, errno, "cannot make readable by all:", path);
    return ERR_OK;
}

error_code platform_event_log(platform_event_level level, unsigned event_id, const char *text, error_info *err)
{
    (void)level;
    (void)event_id;
    (void)text;
    (void)err;
    return ERR_OK;
}

/* ---- The scheduled task ---------------------------------------------------- */

error_code platform_executable_path(char **path, error_info *err)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n < 0)
        return fail_path(err, errno, "cannot find this program's file: readlink", "/proc/self/exe");
    buf[n] = '\0';
    char *copy = strdup(buf);
    if (!copy)
        return fail_nomem(err);
    *path = copy;
    return ERR_OK;
}

error_code platform_make_private_dir(const char *path, error_info *err)
{
    if (chmod(path, 0700) != 0)
        return fail_path(err, errno, "cannot make directory private: chmod", path);
    return ERR_OK;
}

/* systemd (or cron) schedules outpost here: the Debian package ships
 * outpost.service and outpost.timer. */
static MUST_CHECK error_code no_task_scheduler(const char *name, error_info *err)
{
    return error_set(err, ERR_NOT_IMPLEMENTED,
                     "cannot manage the scheduled task %s: there is no Windows Task Scheduler here; on Linux "
                     "the Debian package's outpost.timer runs outpost (systemctl enable --now outpost.timer)",
                     name);
}

error_code platform_task_register(const char *name, const char *xml, error_info *err)
{
    (void)xml;
    return no_task_scheduler(name, err);
}

error_code platform_task_delete(const char *name, error_info *err)
{
    return no_task_scheduler(name, err);
}
