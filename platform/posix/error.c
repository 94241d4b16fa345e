/*
 * error.c — how the POSIX files say what failed: one line naming what and
 * the path, the system's reason, the error_code from common.c's errno table
 * (platform_os_error_code) and the raw errno in os_error (posix_int.h).
 */
#include "platform/posix/posix_int.h"

#include <errno.h>
#include <string.h>

const char *posix_os_reason(int e)
{
    if (e == ELOOP)
        return "it is, or goes through, a symbolic link, which outpost never follows here; refusing it";
    return strerror(e);
}

error_code posix_fail_path(error_info *err, int e, const char *what, const char *path)
{
    return error_set_os(err, platform_os_error_code(e), e, "%s %s: %s", what, path, posix_os_reason(e));
}

error_code posix_fail_io(error_info *err, const char *what, const char *path)
{
    int e = errno;
    return error_set_os(err, ERR_IO, e, "%s %s: %s", what, path, posix_os_reason(e));
}

error_code posix_fail_nomem(error_info *err)
{
    return error_set_os(err, ERR_NOMEM, ENOMEM, "out of memory");
}
