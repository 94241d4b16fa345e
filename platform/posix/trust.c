/*
 * trust.c — whether what outpost runs as root can be trusted (PRODUCT.md
 * section 9): the state directory and every directory above it
 * (platform_check_private_dir), and the files that decide what runs, the
 * configuration, trust anchors and keys, judged and read through one
 * descriptor (platform_read_trusted_file, platform_check_trusted_file,
 * platform_check_secret_file). The decisions themselves are pure functions
 * of owner and mode (platform/private_dir.h, posix/private_dir.c), tested
 * on their own by tests/unit/test_platform.c; the path to what is judged is
 * walked by walk.c (every directory judged through its handle, a link
 * followed only where it lives in a judged directory), or, below the held
 * state directory, reached through its handle (stateroot.c).
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
        posix_owner_hint(owner, sizeof owner);
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
    int fd = -1;
    error_code rc = posix_open_judged_dir(path, "change what outpost runs", &fd, err);
    if (rc == ERR_OK)
        close(fd);
    return rc;
}

/*
 * Opens a trusted input (platform_read_trusted_file): the path walked and
 * judged, the file opened in the judged directory without following a
 * link and without blocking (a FIFO swapped in is refused, not waited
 * for), and judged through that descriptor. *fd is the open file, blocking
 * again, on ERR_OK only.
 */
static MUST_CHECK error_code open_trusted(const char *what, const char *path, bool secret, int *fd_out, error_info *err)
{
    char named[PATH_MAX + 64];
    snprintf(named, sizeof named, "%s %s", what, path);
    posix_walk_fail fail;
    char *leaf = NULL, *resolved = NULL;
    int dir = posix_walk(path, true, &leaf, &resolved, &fail);
    if (dir < 0) {
        if (fail.os_error || fail.link)
            return posix_walk_refusal(&fail, named, path, ERR_CONFIG, err);
        char owner[32];
        posix_owner_hint(owner, sizeof owner);
        return error_set(err, ERR_CONFIG,
                         "%s is in %s, which is %s, so another user could replace it; refusing it. Run: chown %s %s "
                         "&& chmod go-w %s",
                         named, fail.where, fail.why, owner, fail.where, fail.where);
    }
    int fd = openat(dir, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    int e = errno;
    close(dir);
    free(leaf);
    char note[PATH_MAX + 32] = "", why[128], owner[32];
    if (strcmp(resolved, path) != 0)
        snprintf(note, sizeof note, " (%s)", resolved);
    posix_owner_hint(owner, sizeof owner);
    struct stat st;
    error_code rc = ERR_OK;
    if (fd < 0) {
        rc = platform_os_error_code(e) == ERR_NOT_FOUND
                 ? error_set_os(err, ERR_NOT_FOUND, e, "%s does not exist", named)
                 : error_set_os(err, ERR_CONFIG, e, "cannot read %s%s: %s", named, note, posix_os_reason(e));
    } else if (fstat(fd, &st) != 0) {
        e = errno;
        rc = error_set_os(err, ERR_CONFIG, e, "cannot read %s%s: %s", named, note, strerror(e));
    } else if (!S_ISREG(st.st_mode)) {
        rc = error_set(err, ERR_CONFIG, "%s%s is not a regular file", named, note);
    } else if (!platform_posix_file_trusted((unsigned long)st.st_uid, (unsigned long)st.st_mode,
                                            (unsigned long)geteuid(), secret, why, sizeof why)) {
        rc = error_set(err, ERR_CONFIG,
                       "%s%s is %s, so another user could %s; refusing it. Run: chown %s %s && chmod %s %s", named,
                       note, why, secret ? "read or replace it" : "change what outpost trusts or runs", owner, resolved,
                       secret ? "600" : "go-w", resolved);
    } else {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
            e = errno;
            rc = error_set_os(err, ERR_CONFIG, e, "cannot read %s%s: %s", named, note, strerror(e));
        }
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

error_code platform_check_trusted_file(const char *what, const char *path, bool secret, error_info *err)
{
    int fd = -1;
    error_code rc = open_trusted(what, path, secret, &fd, err);
    if (rc == ERR_OK)
        close(fd);
    return rc;
}

error_code platform_read_trusted_file(const char *what, const char *path, bool secret, size_t max_size, char **data,
                                      size_t *len, error_info *err)
{
    int fd = -1;
    error_code rc = open_trusted(what, path, secret, &fd, err);
    if (rc != ERR_OK)
        return rc;
    char named[PATH_MAX + 64];
    snprintf(named, sizeof named, "%s %s", what, path);
    rc = posix_read_fd(fd, named, max_size, data, len, err);
    close(fd);
    if (rc != ERR_OK && err)
        err->code = rc = ERR_CONFIG;
    return rc;
}

error_code platform_check_secret_file(const char *what, const char *path, error_info *err)
{
    error_code rc = platform_check_trusted_file(what, path, true, err);
    if (rc == ERR_NOT_FOUND && err)
        err->code = ERR_CONFIG;
    return rc == ERR_NOT_FOUND ? ERR_CONFIG : rc;
}

/* The keytab's descriptor, open for the process's life: the Kerberos
 * library reads the file through it, so what it reads is what was judged. */
static int kerberos_keytab_fd = -1;

error_code platform_kerberos_use_keytab(const char *path, error_info *err)
{
    int fd = -1;
    error_code rc = open_trusted("proxy keytab (`proxy_keytab`)", path, true, &fd, err);
    if (rc != ERR_OK) {
        if (err)
            err->code = ERR_CONFIG;
        return ERR_CONFIG;
    }
    /* The same open file again by name: Linux's /proc/self/fd, else /dev/fd. */
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    if (access(name, R_OK) != 0)
        snprintf(name, sizeof name, "/dev/fd/%d", fd);
    char ktname[80], ccname[80];
    snprintf(ktname, sizeof ktname, "FILE:%s", name);
    /* A memory cache private to this process: the tickets never reach a
     * disk, and a cache of the user's (KRB5CCNAME, /tmp/krb5cc_0) is
     * neither read nor filled. */
    snprintf(ccname, sizeof ccname, "MEMORY:outpost-%ld", (long)getpid());
    if (setenv("KRB5_CLIENT_KTNAME", ktname, 1) != 0 || setenv("KRB5CCNAME", ccname, 1) != 0) {
        int e = errno;
        close(fd);
        return error_set_os(err, ERR_NOMEM, e, "cannot set KRB5_CLIENT_KTNAME: %s", strerror(e));
    }
    if (kerberos_keytab_fd >= 0)
        close(kerberos_keytab_fd);
    kerberos_keytab_fd = fd;
    return ERR_OK;
}
