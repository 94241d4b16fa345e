/*
 * acl.c — who may read and write what outpost creates, on Windows its access
 * lists (the POSIX twin sets owner, group and mode bits): the state
 * directory's protected DACL (SYSTEM, Administrators, the running user),
 * built for a new directory (fs.c's platform_mkdirs_private) and given to an
 * existing one and everything below it, taking ownership where the token
 * allows (platform_make_private_dir, `service install`); the entry that lets
 * report.readers_group read (platform_group_exists,
 * platform_share_with_group); the owner-only list of a file created private
 * (fs.c, log.c); and the user this process runs as, which trust.c judges by
 * too.
 */
#include "platform/win32/win32_int.h"

#include <aclapi.h>
#include <sddl.h>
#include <stdlib.h>
#include <string.h>

PSID win32_current_user_sid(void)
{
    HANDLE token = NULL;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token))
        return NULL;
    DWORD size = 0;
    GetTokenInformation(token, TokenUser, NULL, 0, &size);
    TOKEN_USER *info = size ? malloc(size) : NULL;
    PSID sid = NULL;
    if (info && GetTokenInformation(token, TokenUser, info, size, &size)) {
        DWORD len = GetLengthSid(info->User.Sid);
        sid = malloc(len);
        if (sid && !CopySid(len, sid, info->User.Sid)) {
            free(sid);
            sid = NULL;
        }
    }
    free(info);
    CloseHandle(token);
    return sid;
}

error_code win32_owner_only_sd(const char *path, PSECURITY_DESCRIPTOR *sd, error_info *err)
{
    if (ConvertStringSecurityDescriptorToSecurityDescriptorW(L"D:P(A;;FA;;;OW)(A;;FA;;;SY)(A;;FA;;;BA)",
                                                             SDDL_REVISION_1, sd, NULL))
        return ERR_OK;
    return win32_fail(err, GetLastError(), "cannot prepare the permissions of", path);
}

error_code win32_private_dir_sd(const char *path, const char *what, PSECURITY_DESCRIPTOR *sd, error_info *err)
{
    /* P: protected, nothing inherited from the parent; OICI: what is created
     * below inherits the same three entries. The user running outpost is
     * named too, so a non-elevated run can use what it creates; as SYSTEM
     * that entry is the SYSTEM one again and is left out. */
    PSID user = win32_current_user_sid();
    if (!user)
        return error_set_os(err, ERR_IO, (int)GetLastError(), "%s %s: cannot read the user this process runs as", what,
                            path);
    wchar_t *user_text = NULL;
    BOOL ok = ConvertSidToStringSidW(user, &user_text);
    free(user);
    if (!ok)
        return error_set_os(err, ERR_IO, (int)GetLastError(), "%s %s: cannot name its owner", what, path);
    wchar_t sddl[256];
    if (wcscmp(user_text, L"S-1-5-18") == 0)
        swprintf(sddl, sizeof sddl / sizeof sddl[0], L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)");
    else
        swprintf(sddl, sizeof sddl / sizeof sddl[0], L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;%ls)",
                 user_text);
    LocalFree(user_text);
    if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1, sd, NULL))
        return error_set_os(err, ERR_IO, (int)GetLastError(), "%s %s: cannot build its access list", what, path);
    return ERR_OK;
}

/* Enables the privilege name in this process's token when the token holds
 * it (an elevated administrator's does, disabled); anything else is ignored. */
static void enable_privilege(const wchar_t *name)
{
    HANDLE token = NULL;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &token))
        return;
    TOKEN_PRIVILEGES tp;
    memset(&tp, 0, sizeof tp);
    tp.PrivilegeCount = 1;
    tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
    if (LookupPrivilegeValueW(NULL, name, &tp.Privileges[0].Luid))
        (void)AdjustTokenPrivileges(token, FALSE, &tp, 0, NULL, NULL);
    CloseHandle(token);
}

/*
 * Everything below dir: owned by owner (NULL: left as it is) and stripped
 * of its explicit entries, so that it keeps only what it inherits from
 * dir's protected list: what TreeSetNamedSecurityInfoW does with
 * TREE_SEC_INFO_RESET, walked here because wine does not implement that
 * call (the MSI test runs `service install` under wine). A reparse point
 * is neither followed nor changed: platform_check_private_dir refuses it.
 */
static DWORD reset_children(const wchar_t *dir, PSID owner, PACL empty, int depth)
{
    if (depth > 64)
        return ERROR_CANT_RESOLVE_FILENAME;
    size_t n = wcslen(dir);
    wchar_t *pattern = malloc((n + 3) * sizeof *pattern);
    if (!pattern)
        return ERROR_NOT_ENOUGH_MEMORY;
    wcscpy(pattern, dir);
    wcscat(pattern, L"\\*");
    WIN32_FIND_DATAW found;
    HANDLE h = FindFirstFileW(pattern, &found);
    free(pattern);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        return e == ERROR_FILE_NOT_FOUND || e == ERROR_NO_MORE_FILES ? ERROR_SUCCESS : e;
    }
    DWORD e = ERROR_SUCCESS;
    do {
        if (wcscmp(found.cFileName, L".") == 0 || wcscmp(found.cFileName, L"..") == 0 ||
            (found.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT))
            continue;
        wchar_t *child = malloc((n + 2 + wcslen(found.cFileName)) * sizeof *child);
        if (!child) {
            e = ERROR_NOT_ENOUGH_MEMORY;
            break;
        }
        wcscpy(child, dir);
        wcscat(child, L"\\");
        wcscat(child, found.cFileName);
        SECURITY_INFORMATION what = DACL_SECURITY_INFORMATION | UNPROTECTED_DACL_SECURITY_INFORMATION;
        if (owner)
            what |= OWNER_SECURITY_INFORMATION;
        e = SetNamedSecurityInfoW(child, SE_FILE_OBJECT, what, owner, NULL, empty, NULL);
        if (e == ERROR_SUCCESS && (found.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
            e = reset_children(child, owner, empty, depth + 1);
        free(child);
    } while (e == ERROR_SUCCESS && FindNextFileW(h, &found));
    if (e == ERROR_SUCCESS && GetLastError() != ERROR_NO_MORE_FILES)
        e = GetLastError();
    FindClose(h);
    return e;
}

/* The directory gets owner (NULL: left as it is) and the protected list
 * dacl; everything below it is reset to inherit that list. */
static DWORD protect_tree(const wchar_t *dir, PSID owner, PACL dacl)
{
    ACL empty;
    if (!InitializeAcl(&empty, sizeof empty, ACL_REVISION))
        return GetLastError();
    SECURITY_INFORMATION what = DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION;
    if (owner)
        what |= OWNER_SECURITY_INFORMATION;
    DWORD e = SetNamedSecurityInfoW((LPWSTR)dir, SE_FILE_OBJECT, what, owner, NULL, dacl, NULL);
    return e == ERROR_SUCCESS ? reset_children(dir, owner, &empty, 0) : e;
}

error_code platform_make_private_dir(const char *path, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    PSECURITY_DESCRIPTOR sd = NULL;
    rc = win32_private_dir_sd(path, "cannot make directory private:", &sd, err);
    if (rc != ERR_OK) {
        free(wpath);
        return rc;
    }
    BOOL present = FALSE, defaulted = FALSE;
    PACL dacl = NULL;
    PSID admins = NULL;
    DWORD e = ERROR_SUCCESS;
    if (!GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted) ||
        !ConvertStringSidToSidW(L"S-1-5-32-544", &admins)) {
        e = GetLastError();
    } else {
        /* Whatever a user planted inside (a file the MSI keeps, say) must
         * stop being theirs: an owner can always rewrite its access list.
         * Taking ownership of a file whose list shuts out Administrators
         * needs these two privileges, which an elevated token holds but
         * has not enabled. */
        enable_privilege(L"SeTakeOwnershipPrivilege");
        enable_privilege(L"SeRestorePrivilege");
        /* The directory: owned by Administrators, PROTECTED (the parent's
         * entries stop applying). Everything below: the same owner, its
         * explicit entries dropped, so each child keeps only what it
         * inherits from this protected list (protect_tree). */
        e = protect_tree(wpath, admins, dacl);
        /* Not elevated enough to take ownership: the access list still
         * goes on, and platform_check_private_dir judges the owners. */
        if (e == ERROR_ACCESS_DENIED || e == ERROR_INVALID_OWNER || e == ERROR_PRIVILEGE_NOT_HELD)
            e = protect_tree(wpath, NULL, dacl);
    }
    LocalFree(admins);
    LocalFree(sd);
    free(wpath);
    if (e != ERROR_SUCCESS)
        return win32_fail(err, e, "cannot set the access list of", path);
    return ERR_OK;
}

/* The SID of report.readers_group: an "S-1-..." string (*from_text is then
 * set, LocalFree it) or a name looked up into sid_buf. ERR_CONFIG when
 * there is no such group. */
static error_code group_sid(const char *group, BYTE sid_buf[SECURITY_MAX_SID_SIZE], PSID *sid, PSID *from_text,
                            error_info *err)
{
    *sid = NULL;
    *from_text = NULL;
    wchar_t *wgroup = win32_widen(group);
    error_code rc = ERR_OK;
    if (!wgroup) {
        rc = error_set(err, ERR_NOMEM, "out of memory");
    } else if (wcsncmp(wgroup, L"S-1-", 4) == 0) {
        if (ConvertStringSidToSidW(wgroup, from_text))
            *sid = *from_text;
        else
            rc = error_set_os(err, ERR_CONFIG, (int)GetLastError(), "\"%s\" is not a valid SID", group);
    } else {
        DWORD sid_size = SECURITY_MAX_SID_SIZE, domain_size = 256;
        wchar_t domain[256];
        SID_NAME_USE use;
        if (LookupAccountNameW(NULL, wgroup, sid_buf, &sid_size, domain, &domain_size, &use))
            *sid = sid_buf;
        else
            rc = error_set_os(err, ERR_CONFIG, (int)GetLastError(), "there is no group \"%s\" on this machine", group);
    }
    free(wgroup);
    return rc;
}

error_code platform_group_exists(const char *group, error_info *err)
{
    BYTE sid_buf[SECURITY_MAX_SID_SIZE];
    PSID sid = NULL, from_text = NULL;
    error_code rc = group_sid(group, sid_buf, &sid, &from_text, err);
    LocalFree(from_text);
    return rc;
}

error_code platform_share_with_group(const char *path, const char *group, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    PSID sid = NULL, from_text = NULL;
    BYTE sid_buf[SECURITY_MAX_SID_SIZE];
    rc = group_sid(group, sid_buf, &sid, &from_text, err);
    DWORD attributes = rc == ERR_OK ? GetFileAttributesW(wpath) : INVALID_FILE_ATTRIBUTES;
    bool dir = attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY);
    PACL old = NULL, acl = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    DWORD e = ERROR_SUCCESS;
    if (rc == ERR_OK) {
        EXPLICIT_ACCESS_W ea;
        memset(&ea, 0, sizeof ea);
        ea.grfAccessPermissions =
            dir ? FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES | READ_CONTROL | SYNCHRONIZE
                : FILE_GENERIC_READ;
        ea.grfAccessMode = GRANT_ACCESS;
        ea.grfInheritance = NO_INHERITANCE;
        ea.Trustee.TrusteeForm = TRUSTEE_IS_SID;
        ea.Trustee.TrusteeType = TRUSTEE_IS_GROUP;
        ea.Trustee.ptstrName = (LPWSTR)sid;
        e = GetNamedSecurityInfoW(wpath, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, &old, NULL, &sd);
        if (e == ERROR_SUCCESS)
            e = SetEntriesInAclW(1, &ea, old, &acl);
        /* A protected list (the state directory's) stays protected. */
        SECURITY_DESCRIPTOR_CONTROL control = 0;
        DWORD revision = 0;
        SECURITY_INFORMATION what = DACL_SECURITY_INFORMATION;
        if (e == ERROR_SUCCESS && GetSecurityDescriptorControl(sd, &control, &revision) &&
            (control & SE_DACL_PROTECTED))
            what |= PROTECTED_DACL_SECURITY_INFORMATION;
        if (e == ERROR_SUCCESS)
            e = SetNamedSecurityInfoW(wpath, SE_FILE_OBJECT, what, NULL, NULL, acl, NULL);
        if (e != ERROR_SUCCESS)
            rc = win32_fail(err, e, "cannot give the readers group access to", path);
    }
    LocalFree(acl);
    LocalFree(sd);
    LocalFree(from_text);
    free(wpath);
    return rc;
}

error_code platform_make_world_readable(const char *path, error_info *err)
{
    (void)path;
    (void)err;
    return ERR_OK;
}
