/*
 * trust.c — whether what outpost runs as root can be trusted (PRODUCT.md
 * section 9): the state directory and every directory above it
 * (platform_check_private_dir), and the files that decide what runs, the
 * configuration, trust anchors and keys (platform_check_trusted_file,
 * platform_check_secret_file). The decisions themselves are pure functions
 * of owner and mode (platform/private_dir.h, posix/private_dir.c), tested on their own by
 * tests/unit/test_platform.c; this file gathers the facts: links resolved
 * once (realpath), then lstat from "/" down, or, below the held state
 * directory, fstat through its handle.
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
    int fd = posix_open_in(path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return posix_fail_path(err, errno, "cannot read the permissions of", path);
    struct stat st;
    char why[128], owner[32];
    error_code rc = ERR_OK;
    if (fstat(fd, &st) != 0)
        rc = posix_fail_path(err, errno, "cannot read the permissions of", path);
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
    const char *below = posix_under_root(path);
    if (below && *below)
        return check_private_below_root(path, err);
    /* Links resolved once; the resolved path is what is judged, down from "/". */
    char *resolved = realpath(path, NULL);
    if (!resolved)
        return posix_fail_path(err, errno, "cannot read the permissions of", path);
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
        rc = posix_fail_path(err, errno, "cannot read the permissions of", path);
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
        if (platform_os_error_code(e) == ERR_NOT_FOUND)
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

error_code platform_check_secret_file(const char *what, const char *path, error_info *err)
{
    error_code rc = platform_check_trusted_file(what, path, true, err);
    if (rc == ERR_NOT_FOUND && err)
        err->code = ERR_CONFIG;
    return rc == ERR_NOT_FOUND ? ERR_CONFIG : rc;
}
