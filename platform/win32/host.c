/*
 * host.c — facts about this machine (platform.h, "Host"): its DNS host name,
 * OS and architecture (the real machine, even under x64 emulation on ARM64),
 * the current boot, its machine id (the registry's MachineGuid), the
 * environment as UTF-8, whether a stream is a console, and where outpost
 * keeps its configuration and state by default (%ProgramData%\outpost).
 * (The CPU's instructions are platform/cpu.c's.)
 */
#include "platform/win32/win32_int.h"

#include <io.h>
#include <knownfolders.h>
#include <shlobj.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void platform_hostname(char *buf, size_t size)
{
    if (!buf || size == 0)
        return;
    wchar_t name[256];
    DWORD n = (DWORD)(sizeof name / sizeof name[0]);
    char *utf8 = NULL;
    if (GetComputerNameExW(ComputerNameDnsHostname, name, &n) && n > 0)
        utf8 = win32_narrow_n(name, (int)n);
    snprintf(buf, size, "%s", utf8 && *utf8 ? utf8 : "unknown");
    free(utf8);
}

const char *platform_os_name(void)
{
    return "windows";
}

/* IsWow64Process2 (Windows 10 1709+) tells the real machine even to an x64
 * program emulated on ARM64, where GetNativeSystemInfo says AMD64. */
typedef BOOL(WINAPI *is_wow64_process2_fn)(HANDLE, USHORT *, USHORT *);

static const char *machine_name(USHORT machine)
{
    switch (machine) {
    case IMAGE_FILE_MACHINE_AMD64: return "x86_64";
    case IMAGE_FILE_MACHINE_ARM64: return "aarch64";
    case IMAGE_FILE_MACHINE_I386: return "x86";
    case IMAGE_FILE_MACHINE_ARMNT: return "arm";
    default: return NULL;
    }
}

const char *platform_arch(void)
{
    HMODULE kernel = GetModuleHandleW(L"kernel32.dll");
    is_wow64_process2_fn fn =
        kernel ? (is_wow64_process2_fn)(void (*)(void))GetProcAddress(kernel, "IsWow64Process2") : NULL;
    USHORT process_machine = 0, native_machine = 0;
    if (fn && fn(GetCurrentProcess(), &process_machine, &native_machine)) {
        const char *name = machine_name(native_machine);
        if (name)
            return name;
    }
    SYSTEM_INFO info;
    GetNativeSystemInfo(&info);
    switch (info.wProcessorArchitecture) {
    case PROCESSOR_ARCHITECTURE_AMD64: return "x86_64";
    case PROCESSOR_ARCHITECTURE_ARM64: return "aarch64";
    case PROCESSOR_ARCHITECTURE_INTEL: return "x86";
    case PROCESSOR_ARCHITECTURE_ARM: return "arm";
    default: return "unknown";
    }
}

/* The UTF-8 values handed out by platform_getenv, one per variable name;
 * a new call for a name replaces (and frees) that name's previous value. */
typedef struct env_entry {
    char *name;             /* as asked for */
    char *value;            /* last value returned, NULL when unset */
    struct env_entry *next; /* next cached variable */
} env_entry;

static env_entry *env_cache;
static SRWLOCK env_lock = SRWLOCK_INIT;

/* The variable's value as malloc'd UTF-8; NULL when unset (or on failure). */
static char *read_env(const char *name)
{
    wchar_t *wname = win32_widen(name);
    if (!wname)
        return NULL;
    char *value = NULL;
    DWORD n = GetEnvironmentVariableW(wname, NULL, 0);
    /* The value can change between the two calls: retry with the new size. */
    for (int attempt = 0; n > 0 && attempt < 4 && !value; attempt++) {
        wchar_t *wide = malloc(n * sizeof *wide);
        if (!wide)
            break;
        DWORD got = GetEnvironmentVariableW(wname, wide, n);
        if (got < n)
            value = win32_narrow_n(wide, (int)got);
        else
            n = got;
        free(wide);
    }
    free(wname);
    return value;
}

const char *platform_getenv(const char *name)
{
    char *value = read_env(name);
    AcquireSRWLockExclusive(&env_lock);
    env_entry *e = env_cache;
    while (e && strcmp(e->name, name) != 0)
        e = e->next;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (e)
            e->name = strdup(name);
        if (!e || !e->name) {
            free(e);
            ReleaseSRWLockExclusive(&env_lock);
            free(value);
            return NULL;
        }
        e->next = env_cache;
        env_cache = e;
    }
    free(e->value);
    e->value = value;
    ReleaseSRWLockExclusive(&env_lock);
    return value;
}

bool platform_is_terminal(FILE *stream)
{
    if (!stream)
        return false;
    int fd = _fileno(stream);
    if (fd < 0)
        return false;
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    DWORD mode;
    /* GetConsoleMode succeeds only on a console; _isatty is also true for
     * the NUL device. */
    return h != INVALID_HANDLE_VALUE && GetConsoleMode(h, &mode);
}

/* %ProgramData%\outpost (normally C:\ProgramData\outpost) + suffix; the
 * known-folder API first, the environment variable, then the default. */
static char *program_data_path(const char *suffix)
{
    char *base = NULL;
    wchar_t *known = NULL;
    if (SUCCEEDED(SHGetKnownFolderPath(&FOLDERID_ProgramData, KF_FLAG_DEFAULT, NULL, &known)) && known)
        base = win32_narrow(known);
    CoTaskMemFree(known);
    if (!base) {
        char *env = read_env("ProgramData");
        base = env && *env ? env : NULL;
        if (!base)
            free(env);
    }
    if (!base)
        base = strdup("C:\\ProgramData");
    if (!base)
        return NULL;
    size_t size = strlen(base) + strlen("\\outpost") + strlen(suffix) + 1;
    char *path = malloc(size);
    if (path)
        snprintf(path, size, "%s\\outpost%s", base, suffix);
    free(base);
    return path;
}

char *platform_default_config_path(void)
{
    return program_data_path("\\outpost.json");
}

char *platform_default_state_dir(void)
{
    return program_data_path("\\state");
}

void platform_boot_id(char *buf, size_t size)
{
    if (size == 0)
        return;
    /* The boot time, to the minute: now minus the time since boot. Two
     * readings a few ms apart can straddle a minute; that only costs a
     * resume its unflushed tail, never correctness. */
    FILETIME ft;
    GetSystemTimeAsFileTime(&ft);
    ULONGLONG now_100ns = ((ULONGLONG)ft.dwHighDateTime << 32) | ft.dwLowDateTime;
    ULONGLONG boot_min = (now_100ns / 10000ULL - GetTickCount64()) / 60000ULL;
    snprintf(buf, size, "boot-%llu", (unsigned long long)boot_min);
}

error_code platform_machine_id(char *buf, size_t size, error_info *err)
{
    HKEY key;
    char *value = NULL;
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, L"SOFTWARE\\Microsoft\\Cryptography", 0, KEY_READ | KEY_WOW64_64KEY, &key) ==
        ERROR_SUCCESS) {
        value = win32_registry_string(key, L"MachineGuid");
        RegCloseKey(key);
    }
    size_t n = value ? strlen(value) : 0;
    if (n == 0 || n >= size) {
        free(value);
        return error_set(err, ERR_NOT_FOUND,
                         "this machine has no MachineGuid in HKLM\\SOFTWARE\\Microsoft\\Cryptography");
    }
    memcpy(buf, value, n + 1);
    free(value);
    return ERR_OK;
}
