/*
 * process.c — running programs and this process (platform.h, "Processes"):
 * posix_spawn with the null device as stdin, a process group the timeout
 * kills whole, no descriptor inherited above stderr, and a held file run by
 * its descriptor (fexecve's way, so the file hashed is the file run); the
 * process's own hardening, environment, id, executable and Ctrl-C.
 */
#include "platform/posix/posix_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

extern char **environ; /* POSIX; glibc declares it only with _GNU_SOURCE */

/* Longest time the spawn wait loop sleeps between two waitpid() polls. */
#define SPAWN_POLL_MAX_MS 50

/* Turns a waitpid() status into platform_spawn_result's exit_code. */
static int decode_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

/* waitpid() that retries EINTR. */
static pid_t wait_child(pid_t pid, int *status, int options)
{
    pid_t r;
    do {
        r = waitpid(pid, status, options);
    } while (r < 0 && errno == EINTR);
    return r;
}

/*
 * Makes sure the child inherits no descriptor above stderr. Ours are all
 * close-on-exec, but libraries open their own without it (libcurl's pooled
 * sockets under `run`), so the child closes everything above 2 itself
 * (glibc 2.34+); elsewhere every open descriptor above 2 is marked
 * close-on-exec here, before the spawn. Returns 0 or an errno.
 */
static int close_inherited(posix_spawn_file_actions_t *actions, int first_closed)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return posix_spawn_file_actions_addclosefrom_np(actions, first_closed);
#else
    (void)actions;
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = first_closed; fd < max; fd++) {
        int flags = fcntl(fd, F_GETFD);
        if (flags >= 0 && !(flags & FD_CLOEXEC))
            (void)fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
    return 0;
#endif
}

/*
 * Sets up posix_spawn so the child: reads the null device as stdin, leads a
 * new process group (pgid == pid: the timeout kills the group), starts with
 * no blocked signals and default dispositions for the signals a caller may
 * have ignored (SIGPIPE under libcurl). Returns 0 or an errno.
 */
static int spawn_setup(posix_spawn_file_actions_t *actions, posix_spawnattr_t *attr, const char *output_path,
                       int output_fd, int first_closed)
{
    int rc = posix_spawn_file_actions_addopen(actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (rc != 0)
        return rc;
    /* output_fd: the output file already opened through the state
     * directory's handle; else output_path is opened by name in the child. */
    if (output_fd >= 0)
        rc = posix_spawn_file_actions_adddup2(actions, output_fd, STDOUT_FILENO);
    else if (output_path)
        rc = posix_spawn_file_actions_addopen(actions, STDOUT_FILENO, output_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (rc == 0 && (output_fd >= 0 || output_path))
        rc = posix_spawn_file_actions_adddup2(actions, STDOUT_FILENO, STDERR_FILENO);
    if (rc != 0)
        return rc;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    const int reset[] = {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
        sigaddset(&defaults, reset[i]);
    if ((rc = close_inherited(actions, first_closed)) != 0)
        return rc;
    short flags = (short)(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if ((rc = posix_spawnattr_setflags(attr, flags)) != 0 || (rc = posix_spawnattr_setpgroup(attr, 0)) != 0 ||
        (rc = posix_spawnattr_setsigmask(attr, &none)) != 0 ||
        (rc = posix_spawnattr_setsigdefault(attr, &defaults)) != 0)
        return rc;
    return 0;
}

/* ---- Held files (the installer hashed is the installer run) -------------- */

struct platform_held_file {
    FILE *stream; /* over the open descriptor; closing it closes the file */
};

error_code platform_held_open(const char *path, platform_held_file **file, error_info *err)
{
    /* O_NOFOLLOW: a link planted at the last component is refused, not followed. */
    int fd = posix_open_in(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY, 0);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            return error_set_os(err, ERR_IO, e, "%s is, or goes through, a symbolic link; refusing it", path);
        return posix_fail_path(err, e, "cannot open", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        return error_set_os(err, ERR_IO, e, "%s is not a regular file", path);
    }
    platform_held_file *held = calloc(1, sizeof *held);
    if (held)
        held->stream = fdopen(fd, "rb");
    if (!held || !held->stream) {
        free(held);
        close(fd);
        return posix_fail_nomem(err);
    }
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
    free(file);
}

/* The descriptor number a held program has in the child: the first above stderr. */
#define HELD_CHILD_FD 3

/* fd itself when above HELD_CHILD_FD, else a close-on-exec copy above it
 * (fd closed): the child's dup2 onto HELD_CHILD_FD must not overwrite a
 * descriptor a later file action still reads. -1 with errno on failure. */
static int fd_above_held(int fd)
{
    if (fd < 0 || fd > HELD_CHILD_FD)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, HELD_CHILD_FD + 1);
    int e = errno;
    close(fd);
    errno = e;
    return moved;
}

/* Starts argv with environment envp, stdout and stderr to output_path when
 * not NULL, in cwd when not NULL, running the held program when not NULL;
 * returns the child's pid, or -1 with err filled. */
static pid_t spawn_start(const char *const argv[], char *const envp[], const platform_spawn_options *o, error_info *err)
{
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) {
        error_set_os(err, ERR_SPAWN, rc, "cannot run %s: %s", argv[0], strerror(rc));
        return -1;
    }
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&actions);
        error_set_os(err, ERR_SPAWN, rc, "cannot run %s: %s", argv[0], strerror(rc));
        return -1;
    }
    pid_t pid = -1;
    /* The held program is executed by its descriptor, as fexecve does
     * (Linux: through /proc/self/fd, which is what fexecve uses), so the
     * file hashed is the file run whatever happened to its name since. Its
     * descriptor goes to HELD_CHILD_FD before the others are closed and stays
     * open across the exec: a script's interpreter reads it from there. */
    char held_path[32];
    int held_fd = o->program ? fileno(o->program->stream) : -1;
#ifdef __linux__
    snprintf(held_path, sizeof held_path, "/proc/self/fd/%d", HELD_CHILD_FD);
#else
    snprintf(held_path, sizeof held_path, "/dev/fd/%d", HELD_CHILD_FD);
#endif
    int moved = -1;
    if (held_fd >= 0 && held_fd <= HELD_CHILD_FD) {
        /* dup2 onto itself would keep close-on-exec: move it above first. */
        moved = fcntl(held_fd, F_DUPFD_CLOEXEC, HELD_CHILD_FD + 1);
        held_fd = moved;
        if (moved < 0)
            rc = errno;
    }
    if (rc == 0 && held_fd >= 0)
        rc = posix_spawn_file_actions_adddup2(&actions, held_fd, HELD_CHILD_FD);
    /* The output file and the working directory under the state directory
     * are reached through its handle, here, not by name in the child. */
    int output_fd = -1, cwd_fd = -1;
    if (rc == 0 && o->output_path && posix_under_root(o->output_path)) {
        output_fd = fd_above_held(posix_open_in(o->output_path, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY, 0600));
        if (output_fd < 0)
            rc = errno;
    }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
    /* Before spawn_setup: its last action closes every descriptor above
     * the ones the child keeps, cwd_fd too. */
    if (rc == 0 && o->cwd && posix_under_root(o->cwd)) {
        cwd_fd = fd_above_held(posix_open_in(o->cwd, O_RDONLY | O_DIRECTORY, 0));
        rc = cwd_fd < 0 ? errno : posix_spawn_file_actions_addfchdir_np(&actions, cwd_fd);
    } else if (rc == 0 && o->cwd) {
        rc = posix_spawn_file_actions_addchdir_np(&actions, o->cwd);
    }
#endif
    if (rc == 0)
        rc =
            spawn_setup(&actions, &attr, o->output_path, output_fd, o->program ? HELD_CHILD_FD + 1 : STDERR_FILENO + 1);
    /* Elsewhere the child keeps outpost's working directory: on POSIX the
     * installer is named by its full path, so nothing depends on it. */
    /* glibc, macOS and the BSDs report exec failures (ENOENT, EACCES...)
     * as posix_spawnp's result. */
    if (rc == 0 && o->program)
        rc = posix_spawn(&pid, held_path, &actions, &attr, (char *const *)argv, envp);
    else if (rc == 0)
        rc = posix_spawnp(&pid, argv[0], &actions, &attr, (char *const *)argv, envp);
    if (moved >= 0)
        close(moved);
    if (output_fd >= 0)
        close(output_fd);
    if (cwd_fd >= 0)
        close(cwd_fd);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        const char *hint = (rc == ENOENT && !strchr(argv[0], '/')) ? " (not found in PATH)" : "";
        error_set_os(err, ERR_SPAWN, rc, "cannot run %s: %s%s", argv[0], strerror(rc), hint);
        return -1;
    }
    return pid;
}

char *platform_system_program(const char *name)
{
    (void)name;
    return NULL;
}

void platform_harden_process(void)
{
    /* The API key is in memory: a core file would hold it, readable where
     * the dump goes. Both: the limit stops the kernel's dump, and a
     * non-dumpable process also keeps ptrace by non-root users out. */
    struct rlimit none = {0, 0};
    (void)setrlimit(RLIMIT_CORE, &none);
#ifdef __linux__
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#endif
}

error_code platform_environment(char ***vars, size_t *count, error_info *err)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **list = calloc(n + 1, sizeof *list);
    if (!list)
        return posix_fail_nomem(err);
    for (size_t i = 0; i < n; i++) {
        list[i] = strdup(environ[i]);
        if (!list[i]) {
            platform_free_names(list, i);
            return posix_fail_nomem(err);
        }
    }
    *vars = list;
    *count = n;
    return ERR_OK;
}

error_code platform_spawn_with(const char *const argv[], const platform_spawn_options *options, int64_t timeout_ms,
                               platform_spawn_result *result, error_info *err)
{
    if (!argv || !argv[0] || !argv[0][0])
        return error_set(err, ERR_SPAWN, "cannot run a program: the command is empty");
    pid_t pid = spawn_start(argv, options->envp ? (char *const *)options->envp : environ, options, err);
    if (pid < 0)
        return ERR_SPAWN;

    /* Poll with waitpid(WNOHANG) and short, growing sleeps: no SIGCHLD
     * handler to install, nothing shared with the rest of the process. */
    int64_t start = platform_monotonic_ms();
    int64_t pause_ms = 1;
    int status = 0;
    bool timed_out = false;
    for (;;) {
        pid_t r = wait_child(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0) {
            /* ECHILD: someone set SIGCHLD to SIG_IGN and the child was reaped
             * for us; its pid may already be reused, so kill nothing. */
            int e = errno;
            return error_set_os(err, ERR_SPAWN, e, "cannot wait for %s: %s", argv[0], strerror(e));
        }
        int64_t elapsed = platform_monotonic_ms() - start;
        if (timeout_ms > 0 && elapsed >= timeout_ms) {
            /* The unreaped child keeps its pid, hence the group id, reserved:
             * killing -pid cannot hit an unrelated group. */
            if (kill(-pid, SIGKILL) != 0)
                kill(pid, SIGKILL);
            if (wait_child(pid, &status, 0) != pid) {
                int e = errno;
                return error_set_os(err, ERR_SPAWN, e, "cannot wait for %s: %s", argv[0], strerror(e));
            }
            timed_out = true;
            break;
        }
        int64_t nap = pause_ms;
        if (timeout_ms > 0 && timeout_ms - elapsed < nap)
            nap = timeout_ms - elapsed;
        platform_sleep_ms(nap);
        if (pause_ms < SPAWN_POLL_MAX_MS)
            pause_ms *= 2;
    }
    result->exit_code = decode_status(status);
    result->timed_out = timed_out;
    return ERR_OK;
}

/* ---- This process -------------------------------------------------------- */

long platform_process_id(void)
{
    return (long)getpid();
}

static const char *interrupt_message;

/* Async-signal-safe: write(2) and _exit only. */
static void on_interrupt(int signal_number)
{
    (void)signal_number;
    if (interrupt_message && write(STDERR_FILENO, interrupt_message, strlen(interrupt_message)) < 0)
        _exit(130);
    _exit(130);
}

void platform_exit_on_interrupt(const char *message)
{
    interrupt_message = message;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

error_code platform_executable_path(char **path, error_info *err)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n < 0)
        return posix_fail_path(err, errno, "cannot find this program's file: readlink", "/proc/self/exe");
    buf[n] = '\0';
    char *copy = strdup(buf);
    if (!copy)
        return posix_fail_nomem(err);
    *path = copy;
    return ERR_OK;
}
