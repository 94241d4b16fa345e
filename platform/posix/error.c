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
