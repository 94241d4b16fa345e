/*
 * acl.c — who may read and write what outpost creates, on POSIX the owner,
 * group and mode bits (the Win32 twin sets access lists): an existing state
 * directory made private to outpost (platform_make_private_dir: mode 0700; a
 * new one is created so by fs.c), the files report.readers_group may read
 * (platform_group_exists, platform_share_with_group: the group and
 * 0640/0750) and a published mirror readable by all
 * (platform_make_world_readable).
 */
#include "platform/posix/posix_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <unistd.h>

error_code platform_make_private_dir(const char *path, error_info *err)
{
    if (chmod(path, 0700) != 0)
        return posix_fail_path(err, errno, "cannot make directory private: chmod", path);
    return ERR_OK;
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
    int fd = posix_open_in(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0)
        return posix_fail_path(err, errno, "cannot read the permissions of", path);
    struct stat st;
    if (fstat(fd, &st) != 0)
        rc = posix_fail_path(err, errno, "cannot read the permissions of", path);
    else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        rc = error_set(err, ERR_IO, "%s is not a file or a directory", path);
    else if (fchown(fd, (uid_t)-1, found->gr_gid) != 0)
        rc = posix_fail_path(err, errno, "cannot give the readers group access to", path);
    else if (fchmod(fd, S_ISDIR(st.st_mode) ? 0750 : 0640) != 0)
        rc = posix_fail_path(err, errno, "cannot set the permissions of", path);
    close(fd);
    return rc;
}

error_code platform_make_world_readable(const char *path, error_info *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return posix_fail_path(err, errno, "cannot read the permissions of", path);
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return error_set(err, ERR_IO, "%s is not a file or a directory", path);
    if (chmod(path, S_ISDIR(st.st_mode) ? 0755 : 0644) != 0)
        return posix_fail_path(err, errno, "cannot make readable by all:", path);
    return ERR_OK;
}
