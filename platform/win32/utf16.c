/* ---- UTF-8 <-> UTF-16 ---------------------------------------------------- */

/* UTF-16 copy of a UTF-8 string; malloc'd. NULL on invalid UTF-8 (errno
 * EINVAL) or out of memory (errno ENOMEM). */
static wchar_t *widen(const char *utf8)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, NULL, 0);
    if (n <= 0) {
        errno = EINVAL;
        return NULL;
    }
    wchar_t *wide = malloc((size_t)n * sizeof *wide);
    if (!wide) {
        errno = ENOMEM;
        return NULL;
    }
    if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, wide, n) != n) {
        free(wide);
        errno = EINVAL;
        return NULL;
    }
    return wide;
}

/* UTF-8 copy of the first len characters of a UTF-16 string (len < 0: up to
 * the NUL); malloc'd, NULL on failure. Unpaired surrogates become U+FFFD. */
static char *narrow_n(const wchar_t *wide, int len)
{
    if (len == 0)
        return strdup("");
    int n = WideCharToMultiByte(CP_UTF8, 0, wide, len, NULL, 0, NULL, NULL);
    if (n <= 0)
        return NULL;
    char *utf8 = malloc((size_t)n + 1);
    if (!utf8)
        return NULL;
    if (WideCharToMultiByte(CP_UTF8, 0, wide, len, utf8, n, NULL, NULL) != n) {
        free(utf8);
        return NULL;
    }
    utf8[n] = '\0';
    return utf8;
}

static char *narrow(const wchar_t *wide)
{
    return narrow_n(wide, (int)wcslen(wide));
}

/* widen() for a path, with the error filled in on failure. */
static MUST_CHECK error_code widen_path(const char *path, wchar_t **wide, error_info *err)
{
    *wide = widen(path);
    if (*wide)
        return ERR_OK;
    if (errno == ENOMEM)
        return fail_nomem(err);
    return error_set(err, ERR_IO, "invalid path %s: not valid UTF-8", path);
}
