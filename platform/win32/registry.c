/*
 * registry.c — what outpost reads from and writes to the registry: the
 * installed version of a product from the Uninstall keys, 64-bit view then
 * 32-bit (platform_installed_version), and the values under
 * HKLM\SOFTWARE\outpost that SCCM/Intune detection rules and hardware
 * inventory read (platform_inventory_write); win32_registry_string serves
 * host.c's machine id too. The POSIX twin has neither.
 */
#include "platform/win32/win32_int.h"

#include <stdlib.h>
#include <string.h>

/* Longest value read from the registry (characters). */
#define REGISTRY_VALUE_MAX 1024

char *win32_registry_string(HKEY key, const wchar_t *value_name)
{
    wchar_t value[REGISTRY_VALUE_MAX + 1];
    DWORD type = 0, size = sizeof value - sizeof value[0];
    if (RegQueryValueExW(key, value_name, NULL, &type, (BYTE *)value, &size) != ERROR_SUCCESS)
        return NULL;
    if (type != REG_SZ && type != REG_EXPAND_SZ)
        return NULL;
    size_t chars = size / sizeof value[0];
    value[chars] = L'\0'; /* the stored string need not be terminated */
    while (chars > 0 && value[chars - 1] == L'\0')
        chars--;
    return win32_narrow_n(value, (int)chars);
}

/* Whether s starts with prefix, ignoring case (ordinal, as Windows compares
 * names). */
static bool starts_with_nocase(const wchar_t *s, const wchar_t *prefix)
{
    size_t n = wcslen(prefix);
    return wcslen(s) >= n && CompareStringOrdinal(s, (int)n, prefix, (int)n, TRUE) == CSTR_EQUAL;
}

/* Searches one registry view (KEY_WOW64_64KEY or _32KEY) of the Uninstall
 * key; the first entry whose DisplayName starts with wname and that has a
 * DisplayVersion wins. Sets *version (malloc'd) when found. */
static void search_uninstall(REGSAM view, const wchar_t *wname, char **version)
{
    HKEY root;
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, L"SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Uninstall", 0,
                      KEY_READ | view, &root) != ERROR_SUCCESS)
        return;
    wchar_t sub[256];
    for (DWORD i = 0; !*version; i++) {
        DWORD sub_len = (DWORD)(sizeof sub / sizeof sub[0]);
        LONG rc = RegEnumKeyExW(root, i, sub, &sub_len, NULL, NULL, NULL, NULL);
        if (rc == ERROR_NO_MORE_ITEMS)
            break;
        if (rc != ERROR_SUCCESS)
            continue;
        HKEY entry;
        if (RegOpenKeyExW(root, sub, 0, KEY_READ | view, &entry) != ERROR_SUCCESS)
            continue;
        char *display = win32_registry_string(entry, L"DisplayName");
        wchar_t *wdisplay = display ? win32_widen(display) : NULL;
        if (wdisplay && starts_with_nocase(wdisplay, wname)) {
            char *v = win32_registry_string(entry, L"DisplayVersion");
            if (v && *v)
                *version = v;
            else
                free(v);
        }
        free(wdisplay);
        free(display);
        RegCloseKey(entry);
    }
    RegCloseKey(root);
}

error_code platform_installed_version(const char *display_name, char **version, error_info *err)
{
    if (!display_name || !*display_name)
        return error_set(err, ERR_NOT_FOUND, "cannot read the installed version: no product name given");
    wchar_t *wname = win32_widen(display_name);
    if (!wname)
        return error_set(err, ERR_NOT_FOUND, "cannot read the installed version of %s: the name is not valid UTF-8",
                         display_name);
    char *found = NULL;
    /* 64-bit programs first, then 32-bit ones (WOW6432Node). */
    search_uninstall(KEY_WOW64_64KEY, wname, &found);
    if (!found)
        search_uninstall(KEY_WOW64_32KEY, wname, &found);
    free(wname);
    if (!found)
        return error_set(err, ERR_NOT_FOUND,
                         "%s is not installed: no entry under the registry's Uninstall keys has a DisplayName "
                         "starting with it",
                         display_name);
    *version = found;
    return ERR_OK;
}

error_code platform_inventory_write(const platform_inventory_value *values, size_t count, error_info *err)
{
    HKEY key;
    LONG e = RegCreateKeyExW(HKEY_LOCAL_MACHINE, L"SOFTWARE\\outpost", 0, NULL, 0, KEY_SET_VALUE | KEY_WOW64_64KEY,
                             NULL, &key, NULL);
    if (e != ERROR_SUCCESS)
        return error_set_os(err, platform_win32_error_code((unsigned long)e), (int)e,
                            "cannot open HKLM\\SOFTWARE\\outpost for the inventory values");
    error_code rc = ERR_OK;
    for (size_t i = 0; i < count && rc == ERR_OK; i++) {
        wchar_t *name = win32_widen(values[i].name);
        wchar_t *text = values[i].text ? win32_widen(values[i].text) : NULL;
        if (!name || (values[i].text && !text)) {
            rc = error_set(err, ERR_NOMEM, "out of memory");
        } else if (values[i].is_number) {
            DWORD number = values[i].number;
            e = RegSetValueExW(key, name, 0, REG_DWORD, (const BYTE *)&number, sizeof number);
        } else if (text) {
            e = RegSetValueExW(key, name, 0, REG_SZ, (const BYTE *)text, (DWORD)((wcslen(text) + 1) * sizeof *text));
        } else {
            e = RegDeleteValueW(key, name);
            if (e == ERROR_FILE_NOT_FOUND)
                e = ERROR_SUCCESS;
        }
        if (rc == ERR_OK && e != ERROR_SUCCESS)
            rc = error_set_os(err, platform_win32_error_code((unsigned long)e), (int)e,
                              "cannot write HKLM\\SOFTWARE\\outpost\\%s", values[i].name);
        free(name);
        free(text);
    }
    RegCloseKey(key);
    return rc;
}
