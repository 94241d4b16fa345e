/*
 * stateroot.c — the state directory held open (platform_state_root_open,
 * PRODUCT.md section 9), the folders of files outpost writes outside it
 * held the same way (platform_hold_dir_of), and the calls that reach a
 * path in a held directory from its descriptor instead of by its name
 * (posix_open_in, posix_stat_in, posix_unlink_in, posix_mkdir_in,
 * posix_rename_in: posix_int.h), which every file of this folder uses for
 * a path that may lie there.
 */
#include "platform/posix/posix_int.h"
#include "platform/private_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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
 * fail but never send it somewhere else. A folder outside it that holds a
 * log or feed file is held the same way, for the names directly in it
 * (the file, its rotations, its temporary copies): deeper paths there are
 * none of outpost's and keep their names. The descriptors are set before
 * any thread starts, and only read afterwards.
 */
typedef struct held_dir {
    int fd;       /* the directory, O_DIRECTORY; -1 when none is held */
    char *prefix; /* its path as given, without trailing separators */
    size_t len;   /* strlen(prefix) */
} held_dir;

#define HELD_OUTSIDE_MAX 16 /* log.file and the feeds: a handful */

static held_dir state_root = {-1, NULL, 0};
static held_dir outside[HELD_OUTSIDE_MAX];
static size_t outside_count;

/* The part of path below held ("" for the directory itself), or NULL when path is not in it. */
static const char *below(const held_dir *held, const char *path)
{
    if (held->fd < 0 || strncmp(path, held->prefix, held->len) != 0)
        return NULL;
    const char *rest = path + held->len;
    if (*rest != '\0' && *rest != '/' && !(held->len == 1 && held->prefix[0] == '/'))
        return NULL; /* "/var/lib/outpost2" is not under "/var/lib/outpost" */
    while (*rest == '/')
        rest++;
    return rest;
}

/* The held directory path is reached from, and the part of path below it; NULL when none. */
static const held_dir *held_for(const char *path, const char **rest)
{
    const char *r = below(&state_root, path);
    if (r) {
        *rest = r;
        return &state_root;
    }
    for (size_t i = 0; i < outside_count; i++) {
        r = below(&outside[i], path);
        if (r && !strchr(r, '/')) { /* directly in it */
            *rest = r;
            return &outside[i];
        }
    }
    return NULL;
}

const char *posix_under_root(const char *path)
{
    const char *rest = NULL;
    return held_for(path, &rest) ? rest : NULL;
}

/* Whether fd is a held directory's, which at_release must not close. */
static bool is_held_fd(int fd)
{
    if (fd == state_root.fd)
        return true;
    for (size_t i = 0; i < outside_count; i++)
        if (fd == outside[i].fd)
            return true;
    return false;
}

/* Where a path is, for the *at calls: dir and the name in it. */
typedef struct at_path {
    int dir;          /* AT_FDCWD (not under the state directory), or a directory descriptor */
    const char *leaf; /* the name in dir: the last component, "." for a directory itself */
    char *copy;       /* owns leaf's storage after a walk */
} at_path;

static void at_release(at_path *at)
{
    if (at->dir >= 0 && !is_held_fd(at->dir))
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
    const char *rest = NULL;
    const held_dir *held = held_for(path, &rest);
    if (!held)
        return 0;
    char *copy = strdup(rest);
    if (!copy)
        return -1; /* ENOMEM */
    int top = held->fd;
    int dir = top;
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
                if (dir != top)
                    close(dir);
                dir = sub;
            }
        }
        if (e != 0) {
            if (dir != top)
                close(dir);
            free(copy);
            errno = e;
            return -1;
        }
        p = next;
    }
    if (strcmp(leaf, "..") == 0) {
        if (dir != top)
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

/* Holds fd as *held, for path (its trailing separators dropped). */
static MUST_CHECK error_code hold(held_dir *held, int fd, const char *path, error_info *err)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    char *prefix = malloc(len + 1);
    if (!prefix) {
        close(fd);
        return posix_fail_nomem(err);
    }
    memcpy(prefix, path, len);
    prefix[len] = '\0';
    held->fd = fd;
    held->prefix = prefix;
    held->len = len;
    return ERR_OK;
}

static void release(held_dir *held)
{
    if (held->fd >= 0)
        close(held->fd);
    free(held->prefix);
    held->fd = -1;
    held->prefix = NULL;
    held->len = 0;
}

/*
 * Opens the directory path: walked from "/" as platform_check_private_dir
 * judges it (every directory on the way judged through its own
 * descriptor, a link followed only where it lives in a judged directory,
 * walk.c), the directory itself opened in the last directory reached
 * without following a link and judged again through that descriptor.
 * what names it in messages ("the state directory").
 */
static MUST_CHECK error_code open_judged(const char *path, const char *what, int *fd_out, error_info *err)
{
    char risk[96];
    snprintf(risk, sizeof risk, "change what outpost runs from %s", what);
    return posix_open_judged_dir(path, risk, fd_out, err);
}

error_code platform_state_root_open(const char *path, error_info *err)
{
    platform_state_root_close();
    int fd = -1;
    error_code rc = open_judged(path, "the state directory", &fd, err);
    if (rc != ERR_OK)
        return rc;
    return hold(&state_root, fd, path, err);
}

error_code platform_hold_dir_of(const char *path, error_info *err)
{
    const char *rest = NULL;
    if (held_for(path, &rest))
        return ERR_OK; /* in the state directory, or in a folder held already */
    if (outside_count == HELD_OUTSIDE_MAX)
        return error_set(err, ERR_CONFIG, "%s: too many folders outside the state directory to write in", path);
    char *dir = platform_path_dir(path);
    if (!dir)
        return posix_fail_nomem(err);
    /* The folder judged as state_dir is (its parents too), then held. */
    error_code rc = platform_check_private_dir(dir, err);
    int fd = -1;
    if (rc == ERR_OK)
        rc = open_judged(dir, "the folder", &fd, err);
    if (rc == ERR_NOT_FOUND)
        error_prefix(err, "the folder of %s does not exist; create it (owned by root, writable by it alone)", path);
    if (rc == ERR_OK)
        rc = hold(&outside[outside_count], fd, dir, err);
    if (rc == ERR_OK)
        outside_count++;
    free(dir);
    return rc;
}

void platform_state_root_close(void)
{
    release(&state_root);
    for (size_t i = 0; i < outside_count; i++)
        release(&outside[i]);
    outside_count = 0;
}
