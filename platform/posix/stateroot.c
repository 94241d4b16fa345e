/*
 * stateroot.c — the state directory held open (platform_state_root_open,
 * PRODUCT.md section 9), and the calls that reach a path under it from that
 * descriptor instead of by its name (posix_open_in, posix_stat_in,
 * posix_unlink_in, posix_mkdir_in, posix_rename_in: posix_int.h), which
 * every file of this folder uses for a path that may lie below it.
 */
#include "platform/posix/posix_int.h"
#include "platform/private_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

const char *posix_under_root(const char *path)
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
    const char *rest = posix_under_root(path);
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

int posix_open_in(const char *path, int flags, mode_t mode)
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

int posix_stat_in(const char *path, struct stat *st, bool follow)
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

int posix_unlink_in(const char *path, int flags)
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

int posix_mkdir_in(const char *path)
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

int posix_rename_in(const char *from, const char *to)
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
        return posix_fail_path(err, errno, "cannot open the state directory", path);
    int fd = open(resolved, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    struct stat held, named;
    error_code rc = ERR_OK;
    char why[128];
    if (fd < 0)
        rc = posix_fail_path(err, e, "cannot open the state directory", path);
    else if (fstat(fd, &held) != 0 || stat(resolved, &named) != 0)
        rc = posix_fail_path(err, errno, "cannot read the state directory", path);
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
        rc = posix_fail_nomem(err);
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
