/*
 * private_dir.c — the POSIX decisions of platform/private_dir.h: whether a
 * directory or a file with this owner and these mode bits can be trusted,
 * as pure functions of the facts. trust.c and stateroot.c gather the facts
 * (lstat from "/" down, fstat through the held state directory) and both
 * ask these, so neither needs the other for the rule itself.
 */
#include "platform/private_dir.h"

#include <stdio.h>
#include <sys/stat.h>

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
