/*
 * trust.c — whether what outpost runs as SYSTEM can be trusted (PRODUCT.md
 * section 9): the state directory and every folder above it
 * (platform_check_private_dir), and the files that decide what runs, the
 * configuration, trust anchors and keys (platform_check_trusted_file,
 * platform_check_secret_file). Windows judges owners and access lists
 * where POSIX judges owners and mode bits; the decisions over a security
 * descriptor are pure functions (platform/private_dir.h), tested under
 * wine by cross/tests/test_platform_win32.c. No reparse point (junction,
 * link) is accepted anywhere in a judged path.
 */
#include "platform/win32/win32_int.h"
#include "platform/private_dir.h"

#include <aclapi.h>
#include <sddl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The API key file's access list -------------------------------------- */

/* Groups whose read access makes a secret readable by other users. */
static const struct {
    const char *sid;  /* string SID: language-independent */
    const char *name; /* what an administrator sees in the Security tab */
} broad_groups[] = {
    {"S-1-1-0", "Everyone"},    {"S-1-5-11", "Authenticated Users"}, {"S-1-5-32-545", "Users"},
    {"S-1-5-32-546", "Guests"}, {"S-1-5-7", "ANONYMOUS LOGON"},
};
#define BROAD_GROUPS (sizeof broad_groups / sizeof broad_groups[0])

/* Access rights that let a holder read the file's content. */
#define READ_RIGHTS (FILE_READ_DATA | GENERIC_READ | GENERIC_ALL | MAXIMUM_ALLOWED)

/*
 * Walks the DACL in order, as Windows evaluates it, for the broad groups
 * only: a deny ACE for a group (or for Everyone, which contains them all)
 * seen before an allow ACE cancels it. Returns the index of the first group
 * an allow ACE grants read access to, or -1. Inherit-only ACEs do not apply
 * to the file itself.
 */
static int dacl_broad_reader(ACL *dacl, PSID sids[BROAD_GROUPS])
{
    bool denied[BROAD_GROUPS] = {false};
    for (DWORD i = 0; i < dacl->AceCount; i++) {
        ACE_HEADER *ace;
        if (!GetAce(dacl, i, (void **)&ace) || (ace->AceFlags & INHERIT_ONLY_ACE))
            continue;
        ACCESS_MASK mask;
        PSID sid;
        if (ace->AceType == ACCESS_ALLOWED_ACE_TYPE) {
            mask = ((ACCESS_ALLOWED_ACE *)ace)->Mask;
            sid = &((ACCESS_ALLOWED_ACE *)ace)->SidStart;
        } else if (ace->AceType == ACCESS_DENIED_ACE_TYPE) {
            mask = ((ACCESS_DENIED_ACE *)ace)->Mask;
            sid = &((ACCESS_DENIED_ACE *)ace)->SidStart;
        } else {
            continue;
        }
        if (!(mask & READ_RIGHTS))
            continue;
        for (size_t g = 0; g < BROAD_GROUPS; g++) {
            if (!sids[g] || !EqualSid(sid, sids[g]))
                continue;
            if (ace->AceType == ACCESS_DENIED_ACE_TYPE) {
                if (g == 0) /* Everyone */
                    memset(denied, 1, sizeof denied);
                denied[g] = true;
            } else if (!denied[g]) {
                return (int)g;
            }
        }
    }
    return -1;
}

/*
 * Windows has no mode bits: a file's DACL decides who may read it. The key
 * is refused when an allow ACE gives read access to a group that holds
 * other users (the list above); named accounts, SYSTEM and Administrators
 * are the owner's business. A missing DACL (NULL) grants everyone everything.
 */
error_code platform_check_secret_file(const char *what, const char *path, error_info *err)
{
    wchar_t *wpath = win32_widen(path);
    if (!wpath)
        return error_set(err, ERR_CONFIG, "%s %s: the path is not valid UTF-8", what, path);
    error_code rc = ERR_OK;
    PSECURITY_DESCRIPTOR sd = NULL;
    PSID sids[BROAD_GROUPS] = {NULL};
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs == INVALID_FILE_ATTRIBUTES) {
        DWORD e = GetLastError();
        char text[256];
        if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND)
            rc = error_set_os(err, ERR_CONFIG, (int)e, "%s %s does not exist", what, path);
        else
            rc = error_set_os(err, ERR_CONFIG, (int)e, "cannot read %s %s: %s", what, path,
                              win32_message(e, text, sizeof text));
        goto cleanup;
    }
    if (attrs & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE)) {
        rc = error_set(err, ERR_CONFIG, "%s %s is not a regular file", what, path);
        goto cleanup;
    }
    ACL *dacl = NULL;
    DWORD e = GetNamedSecurityInfoW(wpath, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, &dacl, NULL, &sd);
    if (e != ERROR_SUCCESS) {
        char text[256];
        rc = error_set_os(err, ERR_CONFIG, (int)e, "cannot read the permissions of %s %s: %s", what, path,
                          win32_message(e, text, sizeof text));
        goto cleanup;
    }
    int reader = -1;
    if (!dacl) {
        reader = 0;
    } else {
        for (size_t g = 0; g < BROAD_GROUPS; g++)
            if (!ConvertStringSidToSidA(broad_groups[g].sid, &sids[g]))
                sids[g] = NULL;
        reader = dacl_broad_reader(dacl, sids);
    }
    if (reader >= 0)
        rc = error_set(err, ERR_CONFIG,
                       "%s %s is readable by %s; run: icacls \"%s\" /inheritance:r /grant:r "
                       "*S-1-5-18:F *S-1-5-32-544:F \"%%USERNAME%%:R\"",
                       what, path, broad_groups[reader].name, path);
    else /* its owner, writers and path as for every trusted file */
        rc = platform_check_trusted_file(what, path, false, err);

cleanup:
    for (size_t g = 0; g < BROAD_GROUPS; g++)
        LocalFree(sids[g]);
    LocalFree(sd);
    free(wpath);
    return rc;
}

/* ---- Directories and files that decide what runs ------------------------- */

/* Rights that let a holder put, replace or remove something in a directory,
 * or give itself those rights. */
#define DIR_WRITE_RIGHTS                                                                                               \
    (FILE_ADD_FILE | FILE_ADD_SUBDIRECTORY | FILE_DELETE_CHILD | DELETE | WRITE_DAC | WRITE_OWNER | GENERIC_WRITE |    \
     GENERIC_ALL | MAXIMUM_ALLOWED)

/* Principals at least as privileged as outpost's service account. */
static const char *const trusted_sids[] = {
    "S-1-5-18",                                                       /* SYSTEM */
    "S-1-5-32-544",                                                   /* Administrators */
    "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464", /* TrustedInstaller */
};
#define TRUSTED_SIDS (sizeof trusted_sids / sizeof trusted_sids[0])

/* Whether sid is one of trusted_sids, or user. */
static bool sid_is_trusted(PSID sid, PSID user)
{
    if (user && EqualSid(sid, user))
        return true;
    for (size_t i = 0; i < TRUSTED_SIDS; i++) {
        PSID known = NULL;
        if (!ConvertStringSidToSidA(trusted_sids[i], &known))
            continue;
        bool same = EqualSid(sid, known);
        LocalFree(known);
        if (same)
            return true;
    }
    return false;
}

/* Whether sid is the well-known SID in text (string form). */
static bool sid_is(PSID sid, const char *text)
{
    PSID known = NULL;
    if (!ConvertStringSidToSidA(text, &known))
        return false;
    bool same = EqualSid(sid, known);
    LocalFree(known);
    return same;
}

/* "Users (S-1-5-32-545)" for a broad group, else the SID's string form. */
static void describe_sid(PSID sid, char *out, size_t size)
{
    char *text = NULL;
    if (!ConvertSidToStringSidA(sid, &text)) {
        snprintf(out, size, "an unreadable SID");
        return;
    }
    const char *name = NULL;
    for (size_t g = 0; g < BROAD_GROUPS; g++)
        if (strcmp(text, broad_groups[g].sid) == 0)
            name = broad_groups[g].name;
    if (name)
        snprintf(out, size, "%s (%s)", name, text);
    else
        snprintf(out, size, "%s", text);
    LocalFree(text);
}

/* Rights that let a holder change a file's contents or replace it. */
#define FILE_WRITE_RIGHTS                                                                                              \
    (FILE_WRITE_DATA | FILE_APPEND_DATA | DELETE | WRITE_DAC | WRITE_OWNER | GENERIC_WRITE | GENERIC_ALL |             \
     MAXIMUM_ALLOWED)
/* Rights that let a holder read a file's contents. */
#define FILE_READ_RIGHTS (FILE_READ_DATA | GENERIC_READ | GENERIC_ALL | MAXIMUM_ALLOWED)

static bool sd_trusted(const void *sd_in, const void *user_in, DWORD write_mask, DWORD read_mask, char *why,
                       size_t size);

bool platform_win32_dir_trusted(const void *sd_in, const void *user_in, char *why, size_t size)
{
    return sd_trusted(sd_in, user_in, DIR_WRITE_RIGHTS, 0, why, size);
}

bool platform_win32_file_trusted(const void *sd_in, const void *user_in, bool secret, char *why, size_t size)
{
    return sd_trusted(sd_in, user_in, FILE_WRITE_RIGHTS, secret ? FILE_READ_RIGHTS : 0, why, size);
}

/* The owner of sd, which must be one of trusted_sids or user, and its DACL,
 * which must be present (a NULL one lets everyone do everything); on false
 * why says which is wrong. */
static bool owner_and_dacl(const void *sd_in, PSID user, PSID *owner, ACL **dacl, char *why, size_t size)
{
    PSECURITY_DESCRIPTOR sd = (PSECURITY_DESCRIPTOR)sd_in;
    BOOL defaulted = FALSE, present = FALSE;
    char who[128];
    *owner = NULL;
    *dacl = NULL;
    if (!GetSecurityDescriptorOwner(sd, owner, &defaulted) || !*owner) {
        snprintf(why, size, "without an owner");
        return false;
    }
    if (!sid_is_trusted(*owner, user)) {
        describe_sid(*owner, who, sizeof who);
        snprintf(why, size, "owned by %s", who);
        return false;
    }
    if (!GetSecurityDescriptorDacl(sd, &present, dacl, &defaulted) || !present || !*dacl) {
        snprintf(why, size, "without an access list (everyone may write to it)");
        return false;
    }
    return true;
}

/* The owner is one of trusted_sids or user, and no allow entry grants
 * write_mask (or read_mask) to anyone else. */
static bool sd_trusted(const void *sd_in, const void *user_in, DWORD write_mask, DWORD read_mask, char *why,
                       size_t size)
{
    PSID user = (PSID)user_in;
    PSID owner = NULL;
    ACL *dacl = NULL;
    char who[128];
    if (!owner_and_dacl(sd_in, user, &owner, &dacl, why, size))
        return false;
    for (DWORD i = 0; i < dacl->AceCount; i++) {
        ACE_HEADER *ace;
        if (!GetAce(dacl, i, (void **)&ace))
            continue;
        /* The callback (conditional) form has the same layout; deny, audit
         * and label entries grant nothing. Inherit-only entries count: they
         * are what files and folders created here will grant. */
        if (ace->AceType != ACCESS_ALLOWED_ACE_TYPE && ace->AceType != ACCESS_ALLOWED_CALLBACK_ACE_TYPE)
            continue;
        ACCESS_ALLOWED_ACE *allow = (ACCESS_ALLOWED_ACE *)ace;
        PSID sid = &allow->SidStart;
        if (!(allow->Mask & (write_mask | read_mask)) || sid_is_trusted(sid, user) || EqualSid(sid, owner) ||
            sid_is(sid, "S-1-3-0") /* CREATOR OWNER */ || sid_is(sid, "S-1-3-4") /* OWNER RIGHTS */)
            continue;
        describe_sid(sid, who, sizeof who);
        snprintf(why, size, "%s by %s", allow->Mask & write_mask ? "writable" : "readable", who);
        return false;
    }
    return true;
}

/* A folder above what is judged: rights that let a holder remove or rename
 * what it holds or the folder itself, or take the folder over; and, where
 * the next component does not exist yet, add one (after MapGenericMask:
 * GENERIC_ALL and GENERIC_WRITE are spelled out). */
#define PARENT_TAKE_RIGHTS (FILE_DELETE_CHILD | DELETE | WRITE_DAC | WRITE_OWNER | MAXIMUM_ALLOWED)
#define PARENT_PLANT_RIGHTS (FILE_ADD_FILE | FILE_ADD_SUBDIRECTORY)

static const struct {
    ACCESS_MASK right;
    const char *text;
} parent_rights[] = {
    {FILE_DELETE_CHILD, "delete or rename what it holds (FILE_DELETE_CHILD)"},
    {DELETE, "delete or rename it (DELETE)"},
    {WRITE_DAC, "change its access list (WRITE_DAC)"},
    {WRITE_OWNER, "take ownership of it (WRITE_OWNER)"},
    {MAXIMUM_ALLOWED, "do anything it allows (MAXIMUM_ALLOWED)"},
    {FILE_ADD_FILE, "create files in it (FILE_ADD_FILE)"},
    {FILE_ADD_SUBDIRECTORY, "create folders in it (FILE_ADD_SUBDIRECTORY)"},
};

/* The ACE's SID and its mask with generic rights mapped to file rights. */
static PSID ace_sid_mask(ACE_HEADER *ace, ACCESS_MASK *mask)
{
    static GENERIC_MAPPING files = {FILE_GENERIC_READ, FILE_GENERIC_WRITE, FILE_GENERIC_EXECUTE, FILE_ALL_ACCESS};
    /* Allow, deny and their callback forms share this layout. */
    ACCESS_ALLOWED_ACE *a = (ACCESS_ALLOWED_ACE *)ace;
    *mask = a->Mask;
    MapGenericMask(mask, &files);
    return &a->SidStart;
}

/*
 * platform_win32_parent_trusted (private_dir.h); sid_text (sid_size bytes)
 * gets the string SID of the principal refused for a right, "" otherwise,
 * for the fix in the message.
 */
static bool parent_verdict(const void *sd_in, const void *user_in, bool plant, char *why, size_t size, char *sid_text,
                           size_t sid_size)
{
    PSID user = (PSID)user_in;
    PSID owner = NULL;
    ACL *dacl = NULL;
    char who[128];
    if (sid_size)
        sid_text[0] = '\0';
    if (!owner_and_dacl(sd_in, user, &owner, &dacl, why, size))
        return false;
    PSID everyone = NULL;
    if (!ConvertStringSidToSidA("S-1-1-0", &everyone))
        everyone = NULL;
    ACCESS_MASK dangerous = PARENT_TAKE_RIGHTS | (plant ? PARENT_PLANT_RIGHTS : 0);
    bool trusted = true;
    for (DWORD i = 0; i < dacl->AceCount && trusted; i++) {
        ACE_HEADER *ace;
        /* Inherit-only entries are what new children get, not rights on
         * this folder; each existing child is judged on its own. */
        if (!GetAce(dacl, i, (void **)&ace) || (ace->AceFlags & INHERIT_ONLY_ACE))
            continue;
        if (ace->AceType != ACCESS_ALLOWED_ACE_TYPE && ace->AceType != ACCESS_ALLOWED_CALLBACK_ACE_TYPE)
            continue;
        ACCESS_MASK mask;
        PSID sid = ace_sid_mask(ace, &mask);
        mask &= dangerous;
        if (!mask || sid_is_trusted(sid, user) || EqualSid(sid, owner) || sid_is(sid, "S-1-3-0") /* CREATOR OWNER */ ||
            sid_is(sid, "S-1-3-4") /* OWNER RIGHTS */)
            continue;
        /* Windows reads the list in order: what a deny entry for this SID
         * (or Everyone, in every token) took away before is not granted. */
        for (DWORD j = 0; j < i && mask; j++) {
            ACE_HEADER *before;
            if (!GetAce(dacl, j, (void **)&before) || (before->AceFlags & INHERIT_ONLY_ACE) ||
                before->AceType != ACCESS_DENIED_ACE_TYPE)
                continue;
            ACCESS_MASK denied;
            PSID denied_sid = ace_sid_mask(before, &denied);
            if (EqualSid(denied_sid, sid) || (everyone && EqualSid(denied_sid, everyone)))
                mask &= ~denied;
        }
        if (!mask)
            continue;
        const char *right = "change it";
        for (size_t r = 0; r < sizeof parent_rights / sizeof parent_rights[0]; r++)
            if (mask & parent_rights[r].right) {
                right = parent_rights[r].text;
                break;
            }
        describe_sid(sid, who, sizeof who);
        snprintf(why, size, "%s may %s", who, right);
        char *text = NULL;
        if (sid_size && ConvertSidToStringSidA(sid, &text)) {
            snprintf(sid_text, sid_size, "%s", text);
            LocalFree(text);
        }
        trusted = false;
    }
    LocalFree(everyone);
    return trusted;
}

bool platform_win32_parent_trusted(const void *sd, const void *user, bool plant, char *why, size_t size)
{
    return parent_verdict(sd, user, plant, why, size, NULL, 0);
}

/*
 * Judges every directory of the full path wfull from its drive (or share)
 * down to and including the last when last_too: none may be a reparse point
 * (a junction or link would let its owner point it elsewhere later), and
 * each one above the last must pass platform_win32_parent_trusted: a
 * trusted owner (an owner can always rewrite the access list) and no right
 * for anyone else to delete or rename what it holds, or to take it over
 * (the folder's own access list, inherit-only entries aside). Every
 * component exists when judged, so adding files next to it is harmless:
 * the next one is judged in turn. The drive's root is not judged: Windows
 * keeps it. what names the checked object in the refusal (ERR_PERMISSION or, for
 * trusted files, code).
 */
static MUST_CHECK error_code judge_parents_w(const wchar_t *wfull, const char *path, bool last_too, error_code code,
                                             error_info *err)
{
    size_t len = wcslen(wfull);
    wchar_t *prefix = malloc((len + 1) * sizeof *prefix);
    if (!prefix)
        return win32_fail_nomem(err);
    PSID user = win32_current_user_sid();
    error_code rc = ERR_OK;
    /* Past "C:\" or "\\server\share\": the first component Windows does not keep. */
    size_t start = 3;
    if (len > 2 && win32_is_sep(wfull[0]) && win32_is_sep(wfull[1])) {
        int seps = 0;
        for (start = 2; start < len && seps < 2; start++)
            seps += win32_is_sep(wfull[start]);
    }
    for (size_t i = start; i <= len && rc == ERR_OK; i++) {
        if (i < len && !win32_is_sep(wfull[i]))
            continue;
        bool last = i == len || (i == len - 1);
        memcpy(prefix, wfull, i * sizeof *prefix);
        prefix[i] = L'\0';
        char *here = win32_narrow(prefix);
        DWORD attrs = GetFileAttributesW(prefix);
        if (attrs == INVALID_FILE_ATTRIBUTES) {
            rc = win32_fail(err, GetLastError(), "cannot read the permissions of", here ? here : path);
        } else if ((attrs & FILE_ATTRIBUTE_REPARSE_POINT) && (!last || last_too)) {
            rc = error_set(err, code,
                           "%s%s%s is a reparse point (a junction or symbolic link), which its owner could point "
                           "elsewhere; refusing it. Use the real path, or remove the link: rmdir \"%s\"",
                           here ? here : path, last ? "" : ", above ", last ? "" : path, here ? here : path);
        } else if (!last) {
            PSECURITY_DESCRIPTOR sd = NULL;
            DWORD e =
                GetNamedSecurityInfoW(prefix, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                                      NULL, NULL, NULL, NULL, &sd);
            char why[192], sid[96];
            if (e != ERROR_SUCCESS) {
                rc = win32_fail_io(err, e, "cannot read the permissions of", here ? here : path);
            } else if (!parent_verdict(sd, user, false, why, sizeof why, sid, sizeof sid)) {
                if (sid[0])
                    rc = error_set(err, code,
                                   "%s, a folder above %s: %s, so another user could replace what is below it; "
                                   "refusing it. Take that right away (as an administrator: icacls \"%s\" "
                                   "/remove:g *%s, then grant what that principal needs without it), or use a "
                                   "folder only administrators can change",
                                   here ? here : path, path, why, here ? here : path, sid);
                else
                    rc = error_set(err, code,
                                   "%s, a folder above %s, is %s, so another user could change what outpost "
                                   "runs; refusing it. Run as an administrator: icacls \"%s\" /setowner "
                                   "*S-1-5-32-544",
                                   here ? here : path, path, why, here ? here : path);
            }
            LocalFree(sd);
        }
        free(here);
        if (i == len - 1)
            break; /* a trailing separator: the last was judged */
    }
    free(user);
    free(prefix);
    return rc;
}

/* The full path of wpath (GetFullPathNameW), malloc'd; NULL on failure. */
static wchar_t *full_path_w(const wchar_t *wpath)
{
    DWORD n = GetFullPathNameW(wpath, 0, NULL, NULL);
    wchar_t *full = n ? malloc(n * sizeof *full) : NULL;
    if (full && GetFullPathNameW(wpath, n, full, NULL) == 0) {
        free(full);
        full = NULL;
    }
    return full;
}

error_code platform_check_private_dir(const char *path, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    PSECURITY_DESCRIPTOR sd = NULL;
    PSID user = NULL;
    DWORD attrs = GetFileAttributesW(wpath);
    if (attrs == INVALID_FILE_ATTRIBUTES) {
        rc = win32_fail(err, GetLastError(), "cannot read the permissions of", path);
        goto cleanup;
    }
    wchar_t *full = full_path_w(wpath);
    rc = full ? judge_parents_w(full, path, true, ERR_PERMISSION, err) : win32_fail_nomem(err);
    free(full);
    if (rc != ERR_OK)
        goto cleanup;
    if (!(attrs & FILE_ATTRIBUTE_DIRECTORY)) {
        rc = error_set(err, ERR_IO, "%s is not a directory", path);
        goto cleanup;
    }
    PSID owner = NULL;
    ACL *dacl = NULL;
    DWORD e = GetNamedSecurityInfoW(wpath, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                                    &owner, NULL, &dacl, NULL, &sd);
    if (e != ERROR_SUCCESS) {
        rc = win32_fail_io(err, e, "cannot read the permissions of", path);
        goto cleanup;
    }
    user = win32_current_user_sid();
    char why[160];
    if (!platform_win32_dir_trusted(sd, user, why, sizeof why))
        rc = error_set(err, ERR_PERMISSION,
                       "%s is %s, so another user could change what outpost runs; refusing it. Run as an "
                       "administrator: icacls \"%s\" /setowner *S-1-5-32-544 /T && icacls \"%s\" /inheritance:r "
                       "/grant:r *S-1-5-18:(OI)(CI)F *S-1-5-32-544:(OI)(CI)F && icacls \"%s\\*\" /reset /T /C (or "
                       "`outpost service install`, which does all of it)",
                       path, why, path, path, path);

cleanup:
    free(user);
    LocalFree(sd);
    free(wpath);
    return rc;
}

/*
 * Opens a trusted input (platform_read_trusted_file): the folders above it
 * judged first (judge_parents_w: no reparse point, trusted owners, nobody
 * else may delete or rename what they hold or take them over, so nobody
 * else can change what the path reaches), then the file opened once,
 * without following a reparse point and sharing read access only (nobody
 * may write, rename or delete it while it is open), and judged through
 * that handle: a file on disk, neither a folder nor a reparse point, its
 * owner and access list by platform_win32_file_trusted. *out is the open
 * handle on ERR_OK only.
 */
static MUST_CHECK error_code open_trusted_w(const char *what, const char *path, bool secret, HANDLE *out,
                                            error_info *err)
{
    *out = INVALID_HANDLE_VALUE;
    wchar_t *wpath = NULL;
    if (win32_widen_path(path, &wpath, err) != ERR_OK)
        return error_set(err, ERR_CONFIG, "%s %s: not a valid UTF-8 path", what, path);
    PSECURITY_DESCRIPTOR sd = NULL;
    PSID user = NULL;
    HANDLE h = INVALID_HANDLE_VALUE;
    char named[1024];
    snprintf(named, sizeof named, "%s %s", what, path);
    error_code rc = ERR_OK;
    wchar_t *full = full_path_w(wpath);
    DWORD attrs = full ? GetFileAttributesW(full) : INVALID_FILE_ATTRIBUTES;
    if (!full) {
        rc = win32_fail_nomem(err);
    } else if (attrs != INVALID_FILE_ATTRIBUTES && (attrs & FILE_ATTRIBUTE_DIRECTORY)) {
        rc = error_set(err, ERR_CONFIG, "%s is not a regular file", named);
    } else if ((rc = judge_parents_w(full, named, false, ERR_CONFIG, err)) != ERR_OK) {
        if (rc == ERR_NOT_FOUND)
            error_set(err, ERR_NOT_FOUND, "%s does not exist", named);
        else if (err)
            err->code = ERR_CONFIG;
        rc = rc == ERR_NOT_FOUND ? ERR_NOT_FOUND : ERR_CONFIG;
    }
    if (rc != ERR_OK)
        goto cleanup;
    h = CreateFileW(full, GENERIC_READ | READ_CONTROL, FILE_SHARE_READ, NULL, OPEN_EXISTING,
                    FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_SEQUENTIAL_SCAN, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        char text[256];
        rc = platform_win32_error_code(e) == ERR_NOT_FOUND
                 ? error_set_os(err, ERR_NOT_FOUND, (int)e, "%s does not exist", named)
                 : error_set_os(err, ERR_CONFIG, (int)e, "cannot read %s: %s", named,
                                win32_message(e, text, sizeof text));
        goto cleanup;
    }
    BY_HANDLE_FILE_INFORMATION info;
    PSID owner = NULL;
    ACL *dacl = NULL;
    DWORD e = ERROR_SUCCESS;
    char why[160], text[256];
    user = win32_current_user_sid();
    if (GetFileType(h) != FILE_TYPE_DISK || !GetFileInformationByHandle(h, &info) ||
        (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
        rc = error_set(err, ERR_CONFIG, "%s is not a regular file", named);
    } else if (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) {
        rc = error_set(err, ERR_CONFIG,
                       "%s is a reparse point (a junction or symbolic link), which its owner could point elsewhere; "
                       "refusing it. Use the real path",
                       named);
    } else if ((e = GetSecurityInfo(h, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION, &owner,
                                    NULL, &dacl, NULL, &sd)) != ERROR_SUCCESS) {
        rc = error_set_os(err, ERR_CONFIG, (int)e, "cannot read the permissions of %s: %s", named,
                          win32_message(e, text, sizeof text));
    } else if (!platform_win32_file_trusted(sd, user, secret, why, sizeof why)) {
        rc = error_set(err, ERR_CONFIG,
                       "%s is %s, so another user could %s; refusing it. Run as an administrator: icacls \"%s\" "
                       "/setowner *S-1-5-32-544 && icacls \"%s\" /inheritance:r /grant:r *S-1-5-18:F "
                       "*S-1-5-32-544:F%s",
                       named, why, secret ? "read or replace it" : "change what outpost trusts or runs", path, path,
                       secret ? "" : " *S-1-5-32-545:R");
    }

cleanup:
    if (rc == ERR_OK)
        *out = h;
    else if (h != INVALID_HANDLE_VALUE)
        CloseHandle(h);
    free(user);
    free(full);
    LocalFree(sd);
    free(wpath);
    return rc;
}

error_code platform_check_trusted_file(const char *what, const char *path, bool secret, error_info *err)
{
    HANDLE h = INVALID_HANDLE_VALUE;
    error_code rc = open_trusted_w(what, path, secret, &h, err);
    if (rc == ERR_OK)
        CloseHandle(h);
    return rc;
}

error_code platform_read_trusted_file(const char *what, const char *path, bool secret, size_t max_size, char **data,
                                      size_t *len, error_info *err)
{
    HANDLE h = INVALID_HANDLE_VALUE;
    error_code rc = open_trusted_w(what, path, secret, &h, err);
    if (rc != ERR_OK)
        return rc;
    size_t limit = max_size > SIZE_MAX - 1 ? SIZE_MAX - 1 : max_size;
    LARGE_INTEGER size;
    size_t hint = 4096;
    if (GetFileSizeEx(h, &size) && size.QuadPart > 0)
        hint = (uint64_t)size.QuadPart > (uint64_t)limit ? limit : (size_t)size.QuadPart;
    rc = win32_read_handle(h, path, limit, hint, data, len, err);
    CloseHandle(h);
    if (rc != ERR_OK) {
        error_prefix(err, "%s", what);
        if (err)
            err->code = ERR_CONFIG;
        rc = ERR_CONFIG;
    }
    return rc;
}

error_code platform_kerberos_use_keytab(const char *path, error_info *err)
{
    return error_set(err, ERR_CONFIG,
                     "`proxy_keytab` (%s) is for Linux and other GSS-API systems; on Windows Negotiate and NTLM use "
                     "the identity outpost runs as (SYSTEM: the computer account), so remove the key",
                     path);
}
