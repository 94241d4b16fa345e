/*
 * posix_int.h — what the files of platform/posix/ share, and nothing outside
 * this folder includes (scripts/check-layering holds that; agent/ sees only
 * platform.h). Every .c here includes it first: it sets the feature-test
 * macros the system headers must see before the first of them is read.
 *
 * platform/posix/ is the POSIX half of platform.h (Linux/glibc the
 * reference; `#ifdef` blocks only pick cheaper or safer calls where a system
 * has them), one file per concern, named as its Win32 twin in
 * platform/win32/ (platform.h's sections say which file holds what). Rules
 * every file here keeps:
 *  - OS errors are translated by the one errno table of common.c
 *    (platform_os_error_code), and every message names the path and the
 *    system's reason (posix_fail_path below), with the raw errno kept in
 *    os_error.
 *  - Every descriptor opened is close-on-exec, and a spawned program closes
 *    every other one above stderr too (libraries open theirs without it), so
 *    it inherits only stdin (the null device), stdout and stderr.
 *  - A path under the state directory held by platform_state_root_open is
 *    reached through that handle (stateroot.c: posix_open_in and its
 *    siblings), never by its name.
 */
#ifndef OUTPOST_POSIX_INT_H
#define OUTPOST_POSIX_INT_H

#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* posix_spawn_file_actions_addclosefrom_np (glibc 2.34+), sync_file_range */
#endif
#if defined(__APPLE__) && !defined(_DARWIN_C_SOURCE)
#define _DARWIN_C_SOURCE /* flock, arc4random_buf, F_FULLFSYNC beside _POSIX_C_SOURCE */
#endif

#include "platform/platform.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ---- Errors (error.c) ---------------------------------------------------- */

/* strerror(e), except for what outpost's own O_NOFOLLOW means: ELOOP is a
 * symbolic link met where outpost follows none (below the state directory,
 * or a file it creates). (A ".." below the state directory is EPERM,
 * "Operation not permitted", as strerror says it.) */
const char *posix_os_reason(int e);

/* Fills err with "<what> <path>: <reason>" and the errno-derived code. */
MUST_CHECK error_code posix_fail_path(error_info *err, int e, const char *what, const char *path);

/* As posix_fail_path with the current errno, but always ERR_IO: for walks and
 * removals, where "not found" would mislead the caller. */
MUST_CHECK error_code posix_fail_io(error_info *err, const char *what, const char *path);

/* Fills err with "out of memory" (ENOMEM). */
MUST_CHECK error_code posix_fail_nomem(error_info *err);

/* ---- Paths under the held state directory (stateroot.c) ------------------ */

/* The part of path below the held state directory ("" for the directory
 * itself), or NULL when path is not under it (or nothing is held). */
const char *posix_under_root(const char *path);

/* open() of path: under the state directory relative to its handle and
 * never through a link (O_NOFOLLOW at every step); elsewhere by name with
 * flags as given. Always O_CLOEXEC. The descriptor, or -1 with errno. */
int posix_open_in(const char *path, int flags, mode_t mode);

/* lstat() (follow false) or stat() of path; under the state directory
 * always without following a final link. 0 or -1 with errno. */
int posix_stat_in(const char *path, struct stat *st, bool follow);

/* unlink() (flags 0) or rmdir() (AT_REMOVEDIR) of path. 0 or -1 with errno. */
int posix_unlink_in(const char *path, int flags);

/* mkdir(path, 0700). 0 or -1 with errno. */
int posix_mkdir_in(const char *path);

/* rename(from, to), each side relative to its own handle. 0 or -1 with errno. */
int posix_rename_in(const char *from, const char *to);

/* ---- The trusted-path walk (walk.c) -------------------------------------- */

/* Why posix_walk refused, for the caller's message. */
typedef struct posix_walk_fail {
    int os_error;         /* errno of a call that failed; 0 for a refusal */
    bool link;            /* where is a symbolic link refused for its owner */
    char where[PATH_MAX]; /* the directory refused, the link, or what could not be read */
    char why[192];        /* what is wrong with it ("owned by uid 1000"), or the system's reason */
} posix_walk_fail;

/*
 * Walks path from "/" (a relative path from the current directory, whose
 * own path is walked too), judging every directory on the way through its
 * descriptor by platform_posix_parent_trusted and following a symbolic link
 * only where the directory holding it passed (in one others may create in,
 * only a link of root's or the running user's), its target walked the same
 * way; the last component too when follow_last. Returns a descriptor of
 * the judged directory holding the last component (close-on-exec; O_PATH
 * where Linux has it: open what is in it with openat) and sets *leaf
 * (malloc'd) to that component's name in it, which may not exist (the
 * caller's openat says so); "." when path names a directory through "/"
 * or "..". *resolved (may be NULL): the path walked, without links,
 * malloc'd. -1 on failure, *fail saying where and why.
 */
int posix_walk(const char *path, bool follow_last, char **leaf, char **resolved, posix_walk_fail *fail);

/*
 * The message of a refused walk: named (what the caller looked for,
 * "configuration file /etc/x") cannot be read (os_error: ERR_NOT_FOUND for
 * a missing directory or file, else code), or goes through a link or a
 * directory another user controls (code), with the fix. path is what was
 * walked. Returns the code set.
 */
MUST_CHECK error_code posix_walk_refusal(const posix_walk_fail *fail, const char *named, const char *path,
                                         error_code code, error_info *err);

/*
 * Opens the existing directory path for reading (O_RDONLY | O_DIRECTORY,
 * close-on-exec), reached by posix_walk and judged through the descriptor
 * by platform_posix_dir_trusted, as state_dir is (PRODUCT.md section 9).
 * A refusal is ERR_PERMISSION naming the directory and the fix; risk says
 * what another user could do there ("change what outpost runs").
 * ERR_NOT_FOUND when it does not exist; ERR_IO when it is not a directory.
 */
MUST_CHECK error_code posix_open_judged_dir(const char *path, const char *risk, int *fd, error_info *err);

/* "root:root", or the running uid when it is not root: the owner a refusal's chown names. */
void posix_owner_hint(char *buf, size_t size);

/* ---- Writing (fs.c) ------------------------------------------------------ */

/* Writes all len bytes, retrying short writes and EINTR. 0 or -1 (errno). */
int posix_write_all(int fd, const void *data, size_t len);

/* platform_read_file's reading, from the open descriptor fd (left open):
 * the rest of the file, at most max_size bytes, into a malloc'd,
 * NUL-terminated *data; path names it in messages. */
MUST_CHECK error_code posix_read_fd(int fd, const char *path, size_t max_size, char **data, size_t *len,
                                    error_info *err);

/* ---- Small system files (host.c) ----------------------------------------- */

/* The first line of the file at path into buf (size bytes, at least 1),
 * without its line end; "" when it cannot be read. For /proc and /sys. */
void posix_read_first_line(const char *path, char *buf, size_t size);

#endif
