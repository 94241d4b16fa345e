/*
 * support_win32.c — the POSIX calls declared in support_win32.h for the unit
 * tests' Windows build (linked into each unit test by tests/CMakeLists.txt;
 * the name does not match test_*.c, so it is not a test of its own).
 */
#include "support_win32.h"

#include "platform/platform.h"

#include <windows.h>

#include <aclapi.h>
#include <errno.h>
#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef mkdir
#undef chmod

char *mkdtemp(char *template_path)
{
    size_t len = strlen(template_path);
    if (len < 6 || strcmp(template_path + len - 6, "XXXXXX") != 0) {
        errno = EINVAL;
        return NULL;
    }
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char rnd[6];
        if (platform_random_bytes(rnd, sizeof rnd, NULL) != ERR_OK)
            return NULL;
        for (int i = 0; i < 6; i++)
            template_path[len - 6 + i] = digits[rnd[i] % 36];
        if (_mkdir(template_path) == 0)
            return template_path;
        if (errno != EEXIST)
            return NULL;
    }
    return NULL;
}

int setenv(const char *name, const char *value, int overwrite)
{
    if (!overwrite && getenv(name))
        return 0;
    /* _putenv_s updates the C runtime's copy and the process environment
     * (GetEnvironmentVariableW, which platform_getenv reads). */
    if (_putenv_s(name, value) != 0)
        return -1;
    return SetEnvironmentVariableA(name, value) ? 0 : -1;
}

int unsetenv(const char *name)
{
    _putenv_s(name, ""); /* an empty value removes it from the CRT's copy */
    return SetEnvironmentVariableA(name, NULL) || GetLastError() == ERROR_ENVVAR_NOT_FOUND ? 0 : -1;
}

int test_mkdir(const char *path, int mode)
{
    (void)mode;
    return _mkdir(path);
}

/* The current user's SID as a string (LocalFree), NULL on failure. */
static char *current_user_sid(void)
{
    HANDLE token;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token))
        return NULL;
    char buf[256];
    DWORD size = 0;
    char *text = NULL;
    if (GetTokenInformation(token, TokenUser, buf, sizeof buf, &size))
        ConvertSidToStringSidA(((TOKEN_USER *)buf)->User.Sid, &text);
    CloseHandle(token);
    return text;
}

/* The user and SYSTEM get full control; Everyone may read when the mode
 * gives group or others read access (wine turns Everyone's entry into the
 * Unix "other" bits, so the same test works under wine and on Windows).
 * Protected: nothing inherited from the directory. */
int test_chmod(const char *path, int mode)
{
    char *user = current_user_sid();
    if (!user)
        return -1;
    char sddl[512];
    snprintf(sddl, sizeof sddl, "D:P(A;;FA;;;%s)(A;;FA;;;SY)%s", user, (mode & 044) ? "(A;;FR;;;WD)" : "");
    LocalFree(user);
    PSECURITY_DESCRIPTOR sd = NULL;
    if (!ConvertStringSecurityDescriptorToSecurityDescriptorA(sddl, SDDL_REVISION_1, &sd, NULL))
        return -1;
    BOOL present = FALSE, defaulted = FALSE;
    PACL dacl = NULL;
    int rc = -1;
    if (GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted) && present &&
        SetNamedSecurityInfoA((char *)path, SE_FILE_OBJECT,
                              DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION, NULL, NULL, dacl,
                              NULL) == ERROR_SUCCESS)
        rc = 0;
    LocalFree(sd);
    return rc;
}
