/*
 * walk.c — the trusted-path walk (PRODUCT.md section 9) that trust.c and
 * stateroot.c share: a path walked from "/" down one component at a time,
 * each directory opened relative to the one above it and judged through
 * its own descriptor by the parents' rule (platform/private_dir.h); a
 * symbolic link followed only when the directory holding it passed that
 * rule (and, in a directory others may create in, such as /tmp, only a
 * link of root's or the running user's), its target walked and judged the
 * same way. What the walk hands back, the judged directory holding the
 * last component, is what the caller opens that component relative to:
 * nothing on the way is looked up by name a second time, so a link a user
 * may re-point, or a directory a user may rename, is refused where it
 * lives instead of being judged by where it pointed a moment ago.
 */
#include "platform/posix/posix_int.h"
#include "platform/private_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Directories are walked, never read: O_PATH where Linux offers it, so a
 * directory searchable but not readable by the running user is walked too. */
#ifdef O_PATH
#define WALK_DIR_FLAGS (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#else
#define WALK_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#endif
#define WALK_MAX_LINKS 40 /* as the kernel's ELOOP */

/* One walk's state: the directory reached and the path walked to it. */
typedef struct walk {
    int dir;               /* the judged directory reached so far */
    struct stat dir_st;    /* its fstat */
    char walked[PATH_MAX]; /* its path, without links */
    char *todo;            /* what is left to walk (malloc'd) */
    size_t at;             /* where the next component starts in todo */
    posix_walk_fail *fail;
} walk;

static int fail_os(walk *w, int e, const char *where)
{
    w->fail->os_error = e;
    snprintf(w->fail->where, sizeof w->fail->where, "%s", where);
    snprintf(w->fail->why, sizeof w->fail->why, "%s", posix_os_reason(e));
    return -1;
}

/* "<walked>/<name>" into out (PATH_MAX); false when it does not fit. */
static bool walked_join(const walk *w, const char *name, char *out)
{
    int n = snprintf(out, PATH_MAX, "%s%s%s", w->walked, strcmp(w->walked, "/") == 0 ? "" : "/", name);
    return n >= 0 && n < PATH_MAX;
}

/* Judges the directory fd (already fstat'd into st) reached as path by the parents' rule; replaces w->dir. */
static int enter(walk *w, int fd, const struct stat *st, const char *path)
{
    char why[sizeof w->fail->why];
    if (!platform_posix_parent_trusted((unsigned long)st->st_uid, (unsigned long)st->st_mode, (unsigned long)geteuid(),
                                       why, sizeof why)) {
        close(fd);
        w->fail->os_error = 0;
        snprintf(w->fail->where, sizeof w->fail->where, "%s", path);
        snprintf(w->fail->why, sizeof w->fail->why, "%s", why);
        return -1;
    }
    if (w->dir >= 0)
        close(w->dir);
    w->dir = fd;
    w->dir_st = *st;
    snprintf(w->walked, sizeof w->walked, "%s", path);
    return 0;
}

/* Opens name in dir (a directory, for walking) and fstats it into *st; -1 with w->fail set (path named). */
static int open_dir_at(walk *w, int dir, const char *name, const char *path, struct stat *st)
{
    int fd = openat(dir, name, WALK_DIR_FLAGS);
    if (fd < 0 || fstat(fd, st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return fail_os(w, e, path);
    }
    return fd;
}

static int enter_root(walk *w)
{
    struct stat st;
    int fd = open_dir_at(w, AT_FDCWD, "/", "/", &st);
    return fd < 0 ? -1 : enter(w, fd, &st, "/");
}

/* Steps into name, a directory in w->dir that fstatat saw as seen. */
static int enter_child(walk *w, const char *name, const struct stat *seen)
{
    char path[PATH_MAX];
    if (!walked_join(w, name, path))
        return fail_os(w, ENAMETOOLONG, w->walked);
    struct stat st;
    int fd = open_dir_at(w, w->dir, name, path, &st);
    if (fd < 0)
        return -1;
    if (!S_ISDIR(st.st_mode) || st.st_dev != seen->st_dev || st.st_ino != seen->st_ino) {
        /* Replaced between the two looks: only whoever may write its parent can, and that was judged. */
        close(fd);
        w->fail->os_error = 0;
        snprintf(w->fail->where, sizeof w->fail->where, "%s", path);
        snprintf(w->fail->why, sizeof w->fail->why, "replaced while outpost judged it");
        return -1;
    }
    return enter(w, fd, &st, path);
}

static int enter_parent(walk *w)
{
    if (strcmp(w->walked, "/") == 0)
        return 0; /* "/.." is "/" */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", w->walked);
    char *slash = strrchr(path, '/');
    if (slash == path)
        path[1] = '\0';
    else if (slash)
        *slash = '\0';
    struct stat st;
    int fd = open_dir_at(w, w->dir, "..", path, &st);
    return fd < 0 ? -1 : enter(w, fd, &st, path);
}

/*
 * Follows the link name in w->dir (seen by fstatat as st): judged where it
 * lives, then its target put in front of what is left to walk. The
 * directory holding it passed the parents' rule; one that others may
 * still create in (a sticky /tmp) must not hold a link of theirs.
 */
static int follow(walk *w, const char *name, const struct stat *st, const char *rest)
{
    char path[PATH_MAX];
    if (!walked_join(w, name, path))
        return fail_os(w, ENAMETOOLONG, w->walked);
    unsigned long euid = (unsigned long)geteuid();
    if ((w->dir_st.st_mode & 022) && st->st_uid != 0 && (unsigned long)st->st_uid != euid) {
        w->fail->os_error = 0;
        w->fail->link = true;
        snprintf(w->fail->where, sizeof w->fail->where, "%s", path);
        snprintf(w->fail->why, sizeof w->fail->why,
                 "a symbolic link owned by uid %lu in a directory others may create in (mode %04lo)",
                 (unsigned long)st->st_uid, (unsigned long)(w->dir_st.st_mode & 07777));
        return -1;
    }
    char target[PATH_MAX];
    ssize_t n = readlinkat(w->dir, name, target, sizeof target - 1);
    if (n < 0)
        return fail_os(w, errno, path);
    if ((size_t)n >= sizeof target - 1)
        return fail_os(w, ENAMETOOLONG, path);
    target[n] = '\0';
    size_t len = (size_t)n + 1 + strlen(rest) + 1;
    char *todo = malloc(len);
    if (!todo)
        return fail_os(w, ENOMEM, path);
    snprintf(todo, len, "%s/%s", target, rest);
    free(w->todo);
    w->todo = todo;
    w->at = 0;
    return target[0] == '/' ? enter_root(w) : 0;
}

/* The next component of w->todo into *name (NUL-terminated in place); false when none is left. */
static bool next_component(walk *w, char **name)
{
    char *p = w->todo + w->at;
    while (*p == '/')
        p++;
    if (!*p)
        return false;
    char *end = strchr(p, '/');
    if (end) {
        *end = '\0';
        w->at = (size_t)(end + 1 - w->todo);
    } else {
        w->at = (size_t)(p + strlen(p) - w->todo);
    }
    *name = p;
    return true;
}

/* Whether anything but separators and "." is left to walk. */
static bool more_left(const walk *w)
{
    for (const char *p = w->todo + w->at; *p;) {
        while (*p == '/')
            p++;
        if (!*p)
            return false;
        if (p[0] == '.' && (p[1] == '/' || p[1] == '\0')) {
            p++;
            continue;
        }
        return true;
    }
    return false;
}

/* The absolute form of path: itself, or the current directory's path (which is walked too) before it. */
static char *absolute(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    size_t len = strlen(cwd) + 1 + strlen(path) + 1;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%s/%s", cwd, path);
    return out;
}

int posix_walk(const char *path, bool follow_last, char **leaf, char **resolved, posix_walk_fail *fail)
{
    memset(fail, 0, sizeof *fail);
    walk w = {.dir = -1, .fail = fail};
    if (!path[0]) {
        fail_os(&w, ENOENT, path);
        return -1;
    }
    w.todo = absolute(path);
    if (!w.todo) {
        fail_os(&w, errno ? errno : ENOMEM, path);
        return -1;
    }
    int links = 0;
    char *last = NULL;
    int rc = enter_root(&w);
    while (rc == 0) {
        char *name;
        if (!next_component(&w, &name)) {
            last = "."; /* the path named "/" itself, or ended in ".." */
            break;
        }
        if (strcmp(name, ".") == 0)
            continue;
        bool is_last = !more_left(&w);
        if (strcmp(name, "..") == 0) {
            rc = enter_parent(&w);
            if (is_last && rc == 0) {
                last = ".";
                break;
            }
            continue;
        }
        struct stat st;
        if (fstatat(w.dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (is_last && errno == ENOENT) {
                last = name; /* what the caller may create */
                break;
            }
            char where[PATH_MAX];
            rc = fail_os(&w, errno, walked_join(&w, name, where) ? where : path);
            break;
        }
        if (S_ISLNK(st.st_mode) && (!is_last || follow_last)) {
            if (++links > WALK_MAX_LINKS) {
                char where[PATH_MAX];
                rc = fail_os(&w, ELOOP, walked_join(&w, name, where) ? where : path);
                break;
            }
            /* Copy what is left: follow() replaces the buffer name and rest live in. */
            char *rest = strdup(w.todo + w.at);
            rc = rest ? follow(&w, name, &st, rest) : fail_os(&w, ENOMEM, path);
            free(rest);
            continue;
        }
        if (is_last) {
            last = name;
            break;
        }
        if (!S_ISDIR(st.st_mode)) {
            char where[PATH_MAX];
            rc = fail_os(&w, ENOTDIR, walked_join(&w, name, where) ? where : path);
            break;
        }
        rc = enter_child(&w, name, &st);
    }
    if (rc == 0) {
        *leaf = strdup(last);
        char joined[PATH_MAX];
        bool fits = strcmp(last, ".") == 0 ? snprintf(joined, sizeof joined, "%s", w.walked) < (int)sizeof joined
                                           : walked_join(&w, last, joined);
        if (resolved)
            *resolved = fits ? strdup(joined) : NULL;
        if (!*leaf || (resolved && !*resolved)) {
            free(*leaf);
            if (resolved)
                free(*resolved);
            rc = fail_os(&w, ENOMEM, path);
        }
    }
    free(w.todo);
    if (rc != 0) {
        if (w.dir >= 0)
            close(w.dir);
        return -1;
    }
    return w.dir;
}

/* "root:root" or the running uid, for the chown in a refusal. */
void posix_owner_hint(char *buf, size_t size)
{
    unsigned long euid = (unsigned long)geteuid();
    if (euid == 0)
        snprintf(buf, size, "root:root");
    else
        snprintf(buf, size, "%lu", euid);
}

error_code posix_walk_refusal(const posix_walk_fail *fail, const char *named, const char *path, error_code code,
                              error_info *err)
{
    char owner[32];
    posix_owner_hint(owner, sizeof owner);
    if (fail->os_error) {
        error_code os = platform_os_error_code(fail->os_error);
        const char *at = strcmp(fail->where, path) != 0 ? fail->where : NULL;
        return error_set_os(err, os == ERR_NOT_FOUND ? ERR_NOT_FOUND : code, fail->os_error, "cannot read %s%s%s%s: %s",
                            named, at ? " (at " : "", at ? at : "", at ? ")" : "", fail->why);
    }
    if (fail->link)
        return error_set(err, code,
                         "%s: %s is %s, so that user could point it elsewhere; refusing it. Name the real path, or "
                         "run: chown -h %s %s",
                         named, fail->where, fail->why, owner, fail->where);
    return error_set(err, code,
                     "%s: %s, a directory on the way to it, is %s, so another user could rename or replace what "
                     "is below it; refusing it. Run: chown %s %s && chmod go-w %s (or choose a path whose every "
                     "directory is owned by root and writable by it alone)",
                     named, fail->where, fail->why, owner, fail->where, fail->where);
}

error_code posix_open_judged_dir(const char *path, const char *risk, int *fd_out, error_info *err)
{
    posix_walk_fail fail;
    char *leaf = NULL, *resolved = NULL;
    int dir = posix_walk(path, true, &leaf, &resolved, &fail);
    if (dir < 0) {
        if (fail.os_error || fail.link)
            return posix_walk_refusal(&fail, path, path, ERR_PERMISSION, err);
        char owner[32];
        posix_owner_hint(owner, sizeof owner);
        /* The words PRODUCT.md section 9's refusals have always had: the directory above, and the fix. */
        return error_set(err, ERR_PERMISSION,
                         "%s, a directory above %s, is %s, so another user could %s; refusing it. Run: chown %s %s "
                         "&& chmod go-w %s (or choose a path whose every parent directory is owned by root and "
                         "writable by it alone)",
                         fail.where, path, fail.why, risk, owner, fail.where, fail.where);
    }
    int fd = openat(dir, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(dir);
    free(leaf);
    error_code rc = ERR_OK;
    struct stat st;
    char why[128], owner[32];
    posix_owner_hint(owner, sizeof owner);
    char note[PATH_MAX + 32] = "";
    if (strcmp(resolved, path) != 0)
        snprintf(note, sizeof note, " (%s)", resolved);
    if (fd < 0) {
        rc = e == ENOTDIR ? error_set_os(err, ERR_IO, e, "%s is not a directory", path)
                          : error_set_os(err, platform_os_error_code(e), e, "cannot read the permissions of %s: %s",
                                         path, posix_os_reason(e));
    } else if (fstat(fd, &st) != 0) {
        rc = posix_fail_path(err, errno, "cannot read the permissions of", path);
    } else if (!platform_posix_dir_trusted((unsigned long)st.st_uid, (unsigned long)st.st_mode,
                                           (unsigned long)geteuid(), why, sizeof why)) {
        rc = error_set(err, ERR_PERMISSION,
                       "%s%s is %s, so another user could %s; refusing it. Run: chown %s %s && chmod go-w %s", path,
                       note, why, risk, owner, resolved, resolved);
    }
    free(resolved);
    if (rc != ERR_OK) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    *fd_out = fd;
    return ERR_OK;
}
