/*
 * process.c — running programs and this process (platform.h, "Processes"):
 * CreateProcessW with a command line quoted for CommandLineToArgvW, the
 * program found in PATH but never in the current directory, exactly three
 * inherited handles, a job object the timeout kills whole, and a held file
 * run by its full name while its handle denies writers; the process's own
 * hardening, environment, id, executable and Ctrl-C.
 */
#include "platform/win32/win32_int.h"

#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Growable UTF-16 buffer for building a command line. */
typedef struct wbuf {
    wchar_t *s;  /* NUL-terminated content */
    size_t len;  /* characters used, NUL excluded */
    size_t cap;  /* characters allocated */
    bool failed; /* an allocation failed; content is incomplete */
} wbuf;

static void wbuf_put(wbuf *b, const wchar_t *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap : 256);
        while (cap < b->len + n + 1)
            cap *= 2;
        wchar_t *bigger = realloc(b->s, cap * sizeof *bigger);
        if (!bigger) {
            b->failed = true;
            return;
        }
        b->s = bigger;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n * sizeof *s);
    b->len += n;
    b->s[b->len] = L'\0';
}

static void wbuf_repeat(wbuf *b, wchar_t c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        wbuf_put(b, &c, 1);
}

/*
 * Appends one argument quoted so that CommandLineToArgvW and the C runtime
 * give it back unchanged: no quotes when it needs none; otherwise quotes
 * around it, backslashes doubled where they precede a quote (or the closing
 * quote), and inner quotes escaped.
 */
static void quote_arg(wbuf *b, const wchar_t *arg)
{
    if (arg[0] && !wcspbrk(arg, L" \t\n\v\"")) {
        wbuf_put(b, arg, wcslen(arg));
        return;
    }
    wbuf_put(b, L"\"", 1);
    for (const wchar_t *p = arg;; p++) {
        size_t backslashes = 0;
        while (*p == L'\\') {
            backslashes++;
            p++;
        }
        if (*p == L'\0') {
            wbuf_repeat(b, L'\\', backslashes * 2);
            break;
        }
        if (*p == L'"') {
            wbuf_repeat(b, L'\\', backslashes * 2 + 1);
            wbuf_put(b, L"\"", 1);
        } else {
            wbuf_repeat(b, L'\\', backslashes);
            wbuf_put(b, p, 1);
        }
    }
    wbuf_put(b, L"\"", 1);
}

/* The command line for argv (UTF-16, malloc'd) or NULL with err filled. The
 * program name is parsed without escapes by Windows, so it is only put in
 * quotes; a quote inside it cannot be passed at all. */
static wchar_t *command_line(const char *const argv[], error_info *err)
{
    wbuf b = {0};
    for (size_t i = 0; argv[i]; i++) {
        wchar_t *arg = win32_widen(argv[i]);
        if (!arg) {
            free(b.s);
            error_set(err, ERR_SPAWN, "cannot run %s: argument %zu is not valid UTF-8", argv[0], i);
            return NULL;
        }
        if (i > 0) {
            wbuf_put(&b, L" ", 1);
            quote_arg(&b, arg);
        } else if (wcschr(arg, L'"')) {
            free(arg);
            free(b.s);
            error_set(err, ERR_SPAWN, "cannot run %s: a program name cannot contain a quote", argv[0]);
            return NULL;
        } else {
            wbuf_put(&b, L"\"", 1);
            wbuf_put(&b, arg, wcslen(arg));
            wbuf_put(&b, L"\"", 1);
        }
        free(arg);
    }
    if (b.failed || !b.s) {
        free(b.s);
        win32_fail_nomem(err);
        return NULL;
    }
    return b.s;
}

/* Whether wpath names an existing file (not a directory). */
static bool is_file_w(const wchar_t *wpath)
{
    DWORD attrs = GetFileAttributesW(wpath);
    return attrs != INVALID_FILE_ATTRIBUTES && !(attrs & FILE_ATTRIBUTE_DIRECTORY);
}

/*
 * The program to run for argv0: as given when it holds a separator;
 * otherwise the first PATH directory holding argv0, or argv0 + ".exe"/".com".
 * Unlike CreateProcess's own search, the current directory and outpost's
 * own directory are not searched (a planted msiexec.exe there must not win).
 * Malloc'd; NULL when nothing is found (or on OOM).
 */
static wchar_t *find_program(const wchar_t *argv0)
{
    if (wcspbrk(argv0, L"\\/:"))
        return _wcsdup(argv0);
    DWORD n = GetEnvironmentVariableW(L"PATH", NULL, 0);
    if (n == 0)
        return NULL;
    wchar_t *path = malloc(n * sizeof *path);
    if (!path)
        return NULL;
    GetEnvironmentVariableW(L"PATH", path, n);
    static const wchar_t *const suffixes[] = {L"", L".exe", L".com"};
    bool has_ext = wcschr(argv0, L'.') != NULL;
    wchar_t *found = NULL;
    for (wchar_t *dir = path; dir && !found;) {
        wchar_t *end = wcschr(dir, L';');
        if (end)
            *end = L'\0';
        for (size_t s = has_ext ? 0 : 1; *dir && s < 3 && !found; s++) {
            size_t size = wcslen(argv0) + 5;
            wchar_t *name = malloc(size * sizeof *name);
            if (!name)
                break;
            swprintf(name, size, L"%ls%ls", argv0, suffixes[s]);
            wchar_t *candidate = win32_join_w(dir, name);
            free(name);
            if (candidate && is_file_w(candidate))
                found = candidate;
            else
                free(candidate);
        }
        dir = end ? end + 1 : NULL;
    }
    free(path);
    return found;
}

/* An inheritable duplicate of h (or of the null device when h is unusable),
 * for the child's standard handles; NULL on failure. */
static HANDLE inheritable(HANDLE h, bool for_reading)
{
    HANDLE dup = NULL;
    if (h && h != INVALID_HANDLE_VALUE &&
        DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &dup, 0, TRUE, DUPLICATE_SAME_ACCESS))
        return dup;
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    dup = CreateFileW(L"NUL", for_reading ? GENERIC_READ : GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &sa,
                      OPEN_EXISTING, 0, NULL);
    return dup == INVALID_HANDLE_VALUE ? NULL : dup;
}

/* A job object that kills every process in it when the handle closes. */
static HANDLE kill_on_close_job(void)
{
    HANDLE job = CreateJobObjectW(NULL, NULL);
    if (!job)
        return NULL;
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
    memset(&limits, 0, sizeof limits);
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    if (!SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits)) {
        CloseHandle(job);
        return NULL;
    }
    return job;
}

/* Lets the processes left in the job outlive it (after a normal exit, an
 * installer's helper processes must finish their work). */
static void job_release(HANDLE job)
{
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
    memset(&limits, 0, sizeof limits);
    SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits);
    CloseHandle(job);
}

/* The state of one platform_spawn, so that cleanup is in one place. */
typedef struct spawn_ctx {
    wchar_t *program;                  /* resolved program path */
    wchar_t *cmdline;                  /* quoted command line */
    wchar_t *environment;              /* the child's environment block, NULL: ours */
    wchar_t *cwd;                      /* the child's working directory, NULL: ours */
    HANDLE std[3];                     /* the child's stdin, stdout, stderr */
    LPPROC_THREAD_ATTRIBUTE_LIST list; /* inherit exactly std[] */
    HANDLE job;                        /* kills the tree at the timeout */
    PROCESS_INFORMATION pi;            /* the child */
} spawn_ctx;

static void spawn_ctx_free(spawn_ctx *c)
{
    free(c->program);
    free(c->cmdline);
    free(c->environment);
    free(c->cwd);
    for (int i = 0; i < 3; i++)
        if (c->std[i])
            CloseHandle(c->std[i]);
    if (c->list) {
        DeleteProcThreadAttributeList(c->list);
        free(c->list);
    }
    if (c->pi.hThread)
        CloseHandle(c->pi.hThread);
    if (c->pi.hProcess)
        CloseHandle(c->pi.hProcess);
}

/* Builds the attribute list that restricts inheritance to c->std. Without
 * it the child would inherit every inheritable handle of the process, and
 * libraries create some (Winsock sockets are inheritable by default), so a
 * failure means no spawn. */
static MUST_CHECK error_code spawn_handle_list(spawn_ctx *c, const char *name, error_info *err)
{
    SIZE_T size = 0;
    InitializeProcThreadAttributeList(NULL, 1, 0, &size);
    LPPROC_THREAD_ATTRIBUTE_LIST list = size ? malloc(size) : NULL;
    if (!list)
        return win32_fail_nomem(err);
    if (!InitializeProcThreadAttributeList(list, 1, 0, &size)) {
        DWORD e = GetLastError();
        free(list);
        return error_set_os(err, ERR_SPAWN, (int)e, "cannot run %s: cannot limit the handles it inherits", name);
    }
    if (!UpdateProcThreadAttribute(list, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, c->std, sizeof c->std, NULL, NULL)) {
        DWORD e = GetLastError();
        DeleteProcThreadAttributeList(list);
        free(list);
        return error_set_os(err, ERR_SPAWN, (int)e, "cannot run %s: cannot limit the handles it inherits", name);
    }
    c->list = list;
    return ERR_OK;
}

/* The UTF-16 environment block for envp ("A=1\0B=2\0\0"), malloc'd, or
 * NULL with err filled. */
static wchar_t *environment_block(const char *const envp[], const char *name, error_info *err)
{
    wbuf b = {0};
    for (size_t i = 0; envp[i]; i++) {
        wchar_t *var = win32_widen(envp[i]);
        if (!var) {
            free(b.s);
            error_set(err, ERR_SPAWN, "cannot run %s: environment entry %zu is not valid UTF-8", name, i);
            return NULL;
        }
        wbuf_put(&b, var, wcslen(var) + 1); /* with its terminator */
        free(var);
    }
    wbuf_put(&b, L"\0", 2); /* the block's end; an empty block needs two */
    if (b.failed || !b.s) {
        free(b.s);
        win32_fail_nomem(err);
        return NULL;
    }
    return b.s;
}

error_code platform_environment(char ***vars, size_t *count, error_info *err)
{
    wchar_t *block = GetEnvironmentStringsW();
    if (!block)
        return win32_fail_nomem(err);
    platform_names found = {0};
    error_code rc = ERR_OK;
    for (const wchar_t *p = block; *p && rc == ERR_OK; p += wcslen(p) + 1)
        rc = win32_names_append(&found, p, err);
    FreeEnvironmentStringsW(block);
    return platform_names_finish(&found, rc, false, vars, count);
}

/* Starts the child suspended, puts it in the job, resumes it. */
static MUST_CHECK error_code spawn_start(spawn_ctx *c, const char *name, error_info *err)
{
    STARTUPINFOEXW si;
    memset(&si, 0, sizeof si);
    si.StartupInfo.cb = sizeof si;
    si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    si.StartupInfo.hStdInput = c->std[0];
    si.StartupInfo.hStdOutput = c->std[1];
    si.StartupInfo.hStdError = c->std[2];
    DWORD flags = CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT;
    si.lpAttributeList = c->list;
    flags |= EXTENDED_STARTUPINFO_PRESENT;
    /* The child starts in c->cwd (its staging folder), never in outpost's
     * working directory, where anyone might have put a DLL. */
    if (!CreateProcessW(c->program, c->cmdline, NULL, NULL, TRUE, flags, c->environment, c->cwd, &si.StartupInfo,
                        &c->pi)) {
        DWORD e = GetLastError();
        char text[256];
        memset(&c->pi, 0, sizeof c->pi);
        return error_set_os(err, ERR_SPAWN, (int)e, "cannot run %s: %s", name, win32_message(e, text, sizeof text));
    }
    /* Without the job (a parent job forbidding nesting) only the child itself
     * can be killed at the timeout. */
    if (c->job && !AssignProcessToJobObject(c->job, c->pi.hProcess)) {
        CloseHandle(c->job);
        c->job = NULL;
    }
    ResumeThread(c->pi.hThread);
    return ERR_OK;
}

/* An inheritable handle appending to path (created when missing), or NULL. */
static HANDLE append_handle(const char *path)
{
    wchar_t *wide = win32_widen(path);
    if (!wide)
        return NULL;
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    HANDLE h =
        win32_create_file(wide, FILE_APPEND_DATA | SYNCHRONIZE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                          &sa, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL);
    free(wide);
    return h == INVALID_HANDLE_VALUE ? NULL : h;
}

/* ---- Held files (the installer hashed is the installer run) -------------- */

struct platform_held_file {
    FILE *stream;  /* over the handle (_open_osfhandle); closing it closes the handle */
    wchar_t *path; /* the name it was opened by */
};

error_code platform_held_open(const char *path, platform_held_file **file, error_info *err)
{
    wchar_t *wpath = NULL;
    error_code rc = win32_widen_path(path, &wpath, err);
    if (rc != ERR_OK)
        return rc;
    /* FILE_SHARE_READ only: while held, nobody may write, rename or delete
     * it, so msiexec (or the installer itself) reads what was hashed. A
     * reparse point is opened as itself, and refused. */
    HANDLE h = win32_create_file(wpath, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING,
                                 FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT);
    if (h == INVALID_HANDLE_VALUE) {
        rc = win32_fail(err, GetLastError(), "cannot open", path);
        free(wpath);
        return rc;
    }
    BY_HANDLE_FILE_INFORMATION info;
    if (!GetFileInformationByHandle(h, &info) ||
        (info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT))) {
        CloseHandle(h);
        free(wpath);
        return error_set(err, ERR_IO, "%s is not a regular file (or is a link); refusing it", path);
    }
    platform_held_file *held = calloc(1, sizeof *held);
    int fd = held ? _open_osfhandle((intptr_t)h, _O_RDONLY | _O_BINARY) : -1;
    if (fd < 0) {
        CloseHandle(h);
        free(held);
        free(wpath);
        return win32_fail_nomem(err);
    }
    held->stream = _fdopen(fd, "rb");
    if (!held->stream) {
        _close(fd);
        free(held);
        free(wpath);
        return win32_fail_nomem(err);
    }
    held->path = wpath;
    *file = held;
    return ERR_OK;
}

FILE *platform_held_stream(platform_held_file *file)
{
    return file->stream;
}

void platform_held_close(platform_held_file *file)
{
    if (!file)
        return;
    fclose(file->stream);
    free(file->path);
    free(file);
}

char *platform_system_program(const char *name)
{
    wchar_t dir[MAX_PATH];
    UINT n = GetSystemDirectoryW(dir, MAX_PATH);
    if (n == 0 || n >= MAX_PATH)
        return NULL;
    char *dir8 = win32_narrow(dir);
    char *path = dir8 ? platform_path_join(dir8, name) : NULL;
    free(dir8);
    return path;
}

void platform_harden_process(void)
{
    /* DLLs from the system directories and the program's own, never the
     * current directory or PATH (a DLL planted there must not load). */
    SetDefaultDllDirectories(LOAD_LIBRARY_SEARCH_DEFAULT_DIRS);
    SetDllDirectoryW(L"");
    /* No Windows Error Reporting heap in a crash report (the API key is on
     * the heap), and no dialog waiting for a click in a service. kernel32
     * exports WerSetFlags; looked up so that no import library is needed. */
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
    typedef HRESULT(WINAPI * wer_set_flags_fn)(DWORD);
    FARPROC proc = GetProcAddress(GetModuleHandleW(L"kernel32.dll"), "WerSetFlags");
    if (proc) {
        wer_set_flags_fn wer_set_flags;
        memcpy(&wer_set_flags, &proc, sizeof wer_set_flags);
        (void)wer_set_flags(0x00000001 /* WER_FAULT_REPORTING_FLAG_NOHEAP */);
    }
}

error_code platform_spawn_with(const char *const argv[], const platform_spawn_options *options, int64_t timeout_ms,
                               platform_spawn_result *result, error_info *err)
{
    if (!argv || !argv[0] || !argv[0][0])
        return error_set(err, ERR_SPAWN, "cannot run a program: the command is empty");
    const char *const *envp = options->envp;
    const char *output_path = options->output_path;
    spawn_ctx c;
    memset(&c, 0, sizeof c);
    error_code rc = ERR_OK;
    /* A held program is run by its full name: the handle held denies write
     * and delete sharing, so the file under that name is the one hashed. */
    if (options->program && !wcspbrk(options->program->path, L"\\/:")) {
        rc = error_set(err, ERR_SPAWN, "cannot run %s: a held program needs its full path", argv[0]);
        goto cleanup;
    }
    if (options->cwd && !(c.cwd = win32_widen(options->cwd))) {
        rc = error_set(err, ERR_SPAWN, "cannot run %s: the working directory is not valid UTF-8", argv[0]);
        goto cleanup;
    }
    wchar_t *argv0 = win32_widen(argv[0]);
    if (!argv0) {
        rc = error_set(err, ERR_SPAWN, "cannot run %s: the name is not valid UTF-8", argv[0]);
        goto cleanup;
    }
    c.program = find_program(argv0);
    free(argv0);
    if (!c.program) {
        rc = error_set_os(err, ERR_SPAWN, ERROR_FILE_NOT_FOUND, "cannot run %s: not found in PATH", argv[0]);
        goto cleanup;
    }
    c.cmdline = command_line(argv, err);
    if (!c.cmdline) {
        rc = ERR_SPAWN;
        goto cleanup;
    }
    c.std[0] = inheritable(NULL, true); /* the null device */
    if (output_path) {
        c.std[1] = append_handle(output_path);
        if (!c.std[1]) {
            DWORD e = GetLastError();
            char text[256];
            rc = error_set_os(err, ERR_SPAWN, (int)e, "cannot run %s: cannot open its output file %s: %s", argv[0],
                              output_path, win32_message(e, text, sizeof text));
            goto cleanup;
        }
        c.std[2] = inheritable(c.std[1], false);
    } else {
        c.std[1] = inheritable(GetStdHandle(STD_OUTPUT_HANDLE), false);
        c.std[2] = inheritable(GetStdHandle(STD_ERROR_HANDLE), false);
    }
    if (!c.std[0] || !c.std[1] || !c.std[2]) {
        rc = error_set_os(err, ERR_SPAWN, (int)GetLastError(), "cannot run %s: cannot set up its standard handles",
                          argv[0]);
        goto cleanup;
    }
    if (envp && !(c.environment = environment_block(envp, argv[0], err))) {
        rc = ERR_SPAWN;
        goto cleanup;
    }
    rc = spawn_handle_list(&c, argv[0], err);
    if (rc != ERR_OK)
        goto cleanup;
    c.job = kill_on_close_job();
    rc = spawn_start(&c, argv[0], err);
    if (rc != ERR_OK)
        goto cleanup;

    DWORD wait_ms = INFINITE;
    if (timeout_ms > 0)
        wait_ms = timeout_ms >= (int64_t)INFINITE ? INFINITE - 1 : (DWORD)timeout_ms;
    DWORD waited = WaitForSingleObject(c.pi.hProcess, wait_ms);
    result->timed_out = false;
    if (waited == WAIT_TIMEOUT) {
        if (!c.job || !TerminateJobObject(c.job, 1))
            TerminateProcess(c.pi.hProcess, 1);
        WaitForSingleObject(c.pi.hProcess, INFINITE);
        result->timed_out = true;
    } else if (waited != WAIT_OBJECT_0) {
        DWORD e = GetLastError();
        TerminateProcess(c.pi.hProcess, 1);
        rc = error_set_os(err, ERR_SPAWN, (int)e, "cannot wait for %s", argv[0]);
        goto cleanup;
    }
    DWORD code = 1;
    GetExitCodeProcess(c.pi.hProcess, &code);
    result->exit_code = (int)code;

cleanup:
    if (c.job) {
        /* At a timeout the whole tree was ended already; after a normal exit
         * the child's helpers may finish (closing would kill them). */
        if (rc == ERR_OK)
            job_release(c.job);
        else
            CloseHandle(c.job);
    }
    spawn_ctx_free(&c);
    return rc;
}

/* ---- This process -------------------------------------------------------- */

long platform_process_id(void)
{
    return (long)GetCurrentProcessId();
}

static const char *interrupt_message;

/* Runs on a thread of its own that Windows starts for the console event. */
static BOOL WINAPI on_console_control(DWORD type)
{
    if (type != CTRL_C_EVENT && type != CTRL_BREAK_EVENT)
        return FALSE;
    HANDLE out = GetStdHandle(STD_ERROR_HANDLE);
    DWORD written = 0;
    if (interrupt_message && out && out != INVALID_HANDLE_VALUE)
        WriteFile(out, interrupt_message, (DWORD)strlen(interrupt_message), &written, NULL);
    TerminateProcess(GetCurrentProcess(), 130);
    return TRUE;
}

void platform_exit_on_interrupt(const char *message)
{
    interrupt_message = message;
    SetConsoleCtrlHandler(on_console_control, TRUE);
}

error_code platform_executable_path(char **path, error_info *err)
{
    DWORD cap = MAX_PATH;
    for (int attempt = 0; attempt < 6; attempt++, cap *= 4) {
        wchar_t *buf = malloc(cap * sizeof *buf);
        if (!buf)
            return win32_fail_nomem(err);
        DWORD n = GetModuleFileNameW(NULL, buf, cap);
        if (n == 0) {
            DWORD e = GetLastError();
            free(buf);
            return win32_fail(err, e, "cannot find this program's file:", "GetModuleFileNameW");
        }
        if (n < cap) {
            char *utf8 = win32_narrow_n(buf, (int)n);
            free(buf);
            if (!utf8)
                return win32_fail_nomem(err);
            *path = utf8;
            return ERR_OK;
        }
        free(buf);
    }
    return error_set(err, ERR_IO, "cannot find this program's file: its path is too long");
}
