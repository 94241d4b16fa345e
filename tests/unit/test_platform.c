/*
 * test_platform.c — unit tests of the platform layer as platform/posix/
 * implements it: files and atomic replacement (including a process killed
 * while replacing), the single-instance lock across processes, clocks and
 * randomness, spawning with exit codes, timeouts and start failures,
 * threads, host facts, and the held state directory (every path below it
 * reached from its handle, links refused).
 *
 * Each test runs in its own scratch directory, created under
 * $OUTPOST_TEST_TMP (or /tmp) by fixture_setup and removed by
 * fixture_teardown. Tests that need another process fork one; children only
 * call platform functions and _exit().
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* mkdtemp, setenv, symlink... beside -std=c11 */
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "base/text.h"
#include "platform/platform.h"
#include "platform/private_dir.h"

#include "support.h"

/* ---- Fixture and helpers ------------------------------------------------- */

typedef struct fixture {
    char dir[PATH_MAX]; /* this test's scratch directory */
} fixture;

typedef struct path_buf {
    char s[PATH_MAX];
} path_buf;

/* Fails the test with the error's name and message unless rc is ERR_OK. */
#define assert_ok(rc, err)                                                                                             \
    do {                                                                                                               \
        error_code rc_ = (rc);                                                                                         \
        if (rc_ != ERR_OK)                                                                                             \
            fail_msg("%s: %s", error_name(rc_), (err).message);                                                        \
    } while (0)

#define assert_contains(haystack, needle)                                                                              \
    do {                                                                                                               \
        if (!strstr((haystack), (needle)))                                                                             \
            fail_msg("\"%s\" does not contain \"%s\"", (haystack), (needle));                                          \
    } while (0)

static int fixture_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    char *dir = support_tempdir("platform");
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    free(dir);
    *state = f;
    return 0;
}

static int fixture_teardown(void **state)
{
    fixture *f = *state;
    error_info err;
    int rc = platform_remove_tree(f->dir, &err) == ERR_OK ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "teardown: %s\n", err.message);
    free(f);
    return rc;
}

/* f->dir + "/" + name. */
static path_buf at(const fixture *f, const char *name)
{
    path_buf p;
    int n = snprintf(p.s, sizeof p.s, "%s/%s", f->dir, name);
    if (n < 0 || (size_t)n >= sizeof p.s)
        fail_msg("path too long: %s/%s", f->dir, name);
    return p;
}

static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(chmod(path, mode), 0);
}

static void write_text(const char *path, const char *text)
{
    write_file(path, text, strlen(text), 0600);
}

/* Reads a small text file written by a test (or by a spawned script). */
static void read_text(const char *path, char *buf, size_t size)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    size_t n = fread(buf, 1, size - 1, fp);
    buf[n] = '\0';
    fclose(fp);
}

static mode_t file_mode(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void sleep_us(long us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Waits for a forked child and returns its exit code (-1 if signalled). */
static int wait_exit(pid_t pid)
{
    int status;
    pid_t r;
    do {
        r = waitpid(pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    assert_int_equal(r, pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void kill_and_wait(pid_t pid)
{
    kill(pid, SIGKILL);
    (void)wait_exit(pid);
}

/* ---- Paths --------------------------------------------------------------- */

static void test_path_join(void **state)
{
    (void)state;
    static const struct {
        const char *dir, *name, *want;
    } cases[] = {
        {"a", "b", "a/b"},    {"a/", "b", "a/b"},
        {"/", "etc", "/etc"}, {"/var/lib/outpost", "state.json", "/var/lib/outpost/state.json"},
        {"", "x", "x"},       {"dir", "", "dir/"},
    };
    assert_int_equal(platform_path_separator(), '/');
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *joined = platform_path_join(cases[i].dir, cases[i].name);
        assert_non_null(joined);
        assert_string_equal(joined, cases[i].want);
        free(joined);
    }
}

static void test_path_stat(void **state)
{
    fixture *f = *state;
    path_buf file = at(f, "file"), dir = at(f, "dir"), link = at(f, "link"), missing = at(f, "missing");
    write_text(file.s, "12345");
    assert_int_equal(mkdir(dir.s, 0700), 0);
    assert_int_equal(symlink(file.s, link.s), 0);

    uint64_t size = 0;
    assert_int_equal(platform_path_stat(file.s, &size), PLATFORM_PATH_FILE);
    assert_int_equal(size, 5);
    assert_int_equal(platform_path_stat(file.s, NULL), PLATFORM_PATH_FILE);
    assert_int_equal(platform_path_stat(dir.s, NULL), PLATFORM_PATH_DIR);
    assert_int_equal(platform_path_stat(link.s, NULL), PLATFORM_PATH_OTHER);
    assert_int_equal(platform_path_stat(missing.s, NULL), PLATFORM_PATH_NONE);
    assert_int_equal(platform_path_stat("/dev/null", NULL), PLATFORM_PATH_OTHER);
}

/* ---- Atomic replacement and rename --------------------------------------- */

static void test_write_atomic_creates_and_replaces(void **state)
{
    fixture *f = *state;
    path_buf target = at(f, "status.json");
    error_info err;
    char *data = NULL;
    size_t len = 0;

    /* A new file: the content, mode 0600, no temporary file left. */
    assert_ok(platform_write_atomic(target.s, "first", 5, &err), err);
    assert_ok(platform_read_file(target.s, 100, &data, &len, &err), err);
    assert_int_equal(len, 5);
    assert_string_equal(data, "first");
    free(data);
    assert_int_equal(file_mode(target.s), 0600);

    /* Replacing keeps the old file's mode. */
    assert_int_equal(chmod(target.s, 0644), 0);
    assert_ok(platform_write_atomic(target.s, "second, longer", 14, &err), err);
    assert_ok(platform_read_file(target.s, 100, &data, &len, &err), err);
    assert_string_equal(data, "second, longer");
    free(data);
    assert_int_equal(file_mode(target.s), 0644);

    /* Empty content is a valid replacement. */
    assert_ok(platform_write_atomic(target.s, "", 0, &err), err);
    assert_ok(platform_read_file(target.s, 100, &data, &len, &err), err);
    assert_int_equal(len, 0);
    free(data);

    char **names = NULL;
    size_t count = 0;
    assert_ok(platform_list_dir(f->dir, &names, &count, &err), err);
    assert_int_equal(count, 1);
    assert_string_equal(names[0], "status.json");
    platform_free_names(names, count);
}

static void test_write_atomic_errors(void **state)
{
    fixture *f = *state;
    path_buf in_missing_dir = at(f, "no-such-dir/state.json");
    path_buf a_directory = at(f, "a-directory");
    assert_int_equal(mkdir(a_directory.s, 0700), 0);
    static const char *const kinds[] = {"missing directory", "target is a directory"};
    const struct {
        const char *path;
        error_code want;
    } cases[] = {
        {in_missing_dir.s, ERR_NOT_FOUND},
        {a_directory.s, ERR_IO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        error_info err;
        error_clear(&err);
        error_code rc = platform_write_atomic(cases[i].path, "x", 1, &err);
        if (rc != cases[i].want)
            fail_msg("%s: got %s (%s)", kinds[i], error_name(rc), err.message);
        assert_int_equal(err.code, cases[i].want);
        assert_int_not_equal(err.os_error, 0);
        assert_contains(err.message, cases[i].path);
    }
    /* The failed rename over a directory removed its temporary file. */
    char **names = NULL;
    size_t count = 0;
    error_info err;
    assert_ok(platform_list_dir(f->dir, &names, &count, &err), err);
    assert_int_equal(count, 1);
    assert_string_equal(names[0], "a-directory");
    platform_free_names(names, count);
    /* err may be NULL. */
    assert_int_equal(platform_write_atomic(in_missing_dir.s, "x", 1, NULL), ERR_NOT_FOUND);
}

#define CRASH_MAX_ITERATIONS 40
#define CRASH_MIN_ITERATIONS 12
#define CRASH_BUDGET_MS 1000
#define CRASH_OLD_SIZE (300 * 1024)
#define CRASH_NEW_SIZE (200 * 1024)

/* Whether name is "<base>.<16 hex digits>.tmp" (platform.h's temporary). */
static bool is_temp_name(const char *name, const char *base)
{
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0 || name[n] != '.' || strlen(name) != n + 1 + 16 + 4)
        return false;
    for (size_t i = n + 1; i < n + 17; i++)
        if (!strchr("0123456789abcdef", name[i]))
            return false;
    return ends_with(name, ".tmp");
}

/*
 * Forks a child that replaces target with the new content, then the old,
 * and so on, writing one byte to a pipe after each completed replacement;
 * SIGKILLs it after delay_us. Returns how many replacements completed.
 */
static int replace_until_killed(const char *target, const void *old_data, const void *new_data, long delay_us)
{
    int progress[2];
    assert_int_equal(pipe(progress), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(progress[0]);
        (void)!write(progress[1], "r", 1);
        for (;;) {
            ERROR_IGNORE(platform_write_atomic(target, new_data, CRASH_NEW_SIZE, NULL));
            (void)!write(progress[1], "w", 1);
            ERROR_IGNORE(platform_write_atomic(target, old_data, CRASH_OLD_SIZE, NULL));
            (void)!write(progress[1], "w", 1);
        }
    }
    close(progress[1]);
    char byte;
    assert_int_equal(read(progress[0], &byte, 1), 1); /* the child is running */
    sleep_us(delay_us);
    kill_and_wait(pid);
    int completed = 0;
    char buf[256];
    ssize_t n;
    while ((n = read(progress[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        completed += n > 0 ? (int)n : 0;
    close(progress[0]);
    return completed;
}

/*
 * A child replaces the file over and over and is SIGKILLed at a random
 * moment; the file must then hold exactly the old or the new content,
 * never a mixture, and nothing but well-named temporaries may be left.
 * The kill window adapts to the disk's speed so that kills land before,
 * during and after the first renames; a time budget bounds the test.
 */
static void test_write_atomic_survives_kill(void **state)
{
    fixture *f = *state;
    path_buf target = at(f, "state.json");
    unsigned char *old_data = malloc(CRASH_OLD_SIZE), *new_data = malloc(CRASH_NEW_SIZE);
    assert_non_null(old_data);
    assert_non_null(new_data);
    for (size_t i = 0; i < CRASH_OLD_SIZE; i++)
        old_data[i] = (unsigned char)('a' + i % 26);
    for (size_t i = 0; i < CRASH_NEW_SIZE; i++)
        new_data[i] = (unsigned char)('A' + i % 26);
    error_info err;
    assert_ok(platform_write_atomic(target.s, old_data, CRASH_OLD_SIZE, &err), err);

    long window_us = 2000;
    unsigned seed = (unsigned)platform_time_utc_ms();
    int iterations = 0, saw_old = 0, saw_new = 0, stray = 0, completed_total = 0;
    int64_t start = platform_monotonic_ms();
    while (iterations < CRASH_MAX_ITERATIONS &&
           (iterations < CRASH_MIN_ITERATIONS || platform_monotonic_ms() - start < CRASH_BUDGET_MS)) {
        seed = seed * 1103515245u + 12345u;
        long delay_us = (long)((seed >> 8) % (unsigned long)window_us);
        int completed = replace_until_killed(target.s, old_data, new_data, delay_us);
        completed_total += completed;
        iterations++;
        /* Aim for kills around the first one or two replacements. */
        if (completed == 0 && window_us < 400000)
            window_us = window_us * 3 / 2;
        else if (completed > 2 && window_us > 500)
            window_us = window_us * 2 / 3;

        char *data = NULL;
        size_t len = 0;
        assert_ok(platform_read_file(target.s, 1024 * 1024, &data, &len, &err), err);
        if (len == CRASH_OLD_SIZE && memcmp(data, old_data, len) == 0)
            saw_old++;
        else if (len == CRASH_NEW_SIZE && memcmp(data, new_data, len) == 0)
            saw_new++;
        else
            fail_msg("kill %d: the file holds %zu bytes that are neither the old nor the new content", iterations, len);
        free(data);

        /* Only the target and well-named temporaries may exist; clear the latter. */
        char **names = NULL;
        size_t count = 0;
        assert_ok(platform_list_dir(f->dir, &names, &count, &err), err);
        for (size_t i = 0; i < count; i++) {
            if (strcmp(names[i], "state.json") == 0)
                continue;
            if (!is_temp_name(names[i], "state.json"))
                fail_msg("unexpected file %s", names[i]);
            path_buf tmp = at(f, names[i]);
            assert_ok(platform_remove_file(tmp.s, &err), err);
            stray++;
        }
        platform_free_names(names, count);
    }
    print_message("    %d kills: %d old, %d new, %d replacements completed, %d stray temporary files, "
                  "final window %ld us\n",
                  iterations, saw_old, saw_new, completed_total, stray, window_us);
    assert_true(saw_old > 0);
    assert_true(saw_new > 0);
    free(old_data);
    free(new_data);
}

static void test_rename(void **state)
{
    fixture *f = *state;
    path_buf a = at(f, "a"), b = at(f, "b"), sub = at(f, "sub"), sub_c = at(f, "sub/c"), missing = at(f, "missing");
    error_info err;
    write_text(a.s, "A");
    write_text(b.s, "B");
    assert_ok(platform_rename(a.s, b.s, &err), err);
    assert_false(exists(a.s));
    char text[16];
    read_text(b.s, text, sizeof text);
    assert_string_equal(text, "A");

    /* Across directories of one volume. */
    assert_int_equal(mkdir(sub.s, 0700), 0);
    assert_ok(platform_rename(b.s, sub_c.s, &err), err);
    read_text(sub_c.s, text, sizeof text);
    assert_string_equal(text, "A");

    assert_int_equal(platform_rename(missing.s, b.s, &err), ERR_NOT_FOUND);
    assert_contains(err.message, missing.s);
}

/* ---- Reading, removing, creating, listing -------------------------------- */

static void test_read_file(void **state)
{
    fixture *f = *state;
    static const struct {
        size_t file_size;
        size_t cap;
        error_code want;
    } cases[] = {
        {0, 0, ERR_OK},  {0, 10, ERR_OK},          {1, 0, ERR_IO},           {10, 10, ERR_OK},         {11, 10, ERR_IO},
        {9, 10, ERR_OK}, {100000, 100000, ERR_OK}, {100001, 100000, ERR_IO}, {70000, 1 << 20, ERR_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        path_buf p = at(f, "data");
        char *content = malloc(cases[i].file_size + 1);
        assert_non_null(content);
        for (size_t j = 0; j < cases[i].file_size; j++)
            content[j] = (char)('0' + j % 10);
        write_file(p.s, content, cases[i].file_size, 0600);

        error_info err;
        error_clear(&err);
        char *data = (char *)"untouched";
        size_t len = 12345;
        error_code rc = platform_read_file(p.s, cases[i].cap, &data, &len, &err);
        if (rc != cases[i].want)
            fail_msg("case %zu: got %s (%s)", i, error_name(rc), err.message);
        if (rc == ERR_OK) {
            assert_int_equal(len, cases[i].file_size);
            assert_memory_equal(data, content, len);
            assert_int_equal(data[len], '\0');
            free(data);
        } else {
            char cap_text[32];
            snprintf(cap_text, sizeof cap_text, "%zu", cases[i].cap);
            assert_contains(err.message, cap_text);
            assert_contains(err.message, p.s);
            assert_string_equal(data, "untouched"); /* out-parameters untouched on failure */
            assert_int_equal(len, 12345);
        }
        free(content);
    }

    error_info err;
    char *data = NULL;
    size_t len = 0;
    path_buf missing = at(f, "missing");
    assert_int_equal(platform_read_file(missing.s, 10, &data, &len, &err), ERR_NOT_FOUND);
    assert_contains(err.message, missing.s);
    assert_int_equal(platform_read_file(f->dir, 10, &data, &len, &err), ERR_IO);
    assert_contains(err.message, f->dir);
}

/* An endless device, a huge sparse file: the cap ends the read at once. */
static void test_read_file_stops_at_cap(void **state)
{
    fixture *f = *state;
    error_info err;
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(platform_read_file("/dev/zero", 4096, &data, &len, &err), ERR_IO);

    path_buf sparse = at(f, "sparse");
    int fd = open(sparse.s, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)1 << 32), 0);
    close(fd);
    assert_int_equal(platform_read_file(sparse.s, 100, &data, &len, &err), ERR_IO);
    assert_contains(err.message, "100");
}

/* A pipe has no size to go by: the buffer grows as bytes arrive. */
static void test_read_file_from_fifo(void **state)
{
    fixture *f = *state;
    path_buf fifo = at(f, "fifo");
    assert_int_equal(mkfifo(fifo.s, 0600), 0);
    enum { size = 200000 };
    static const size_t caps[] = {size, size - 1};
    for (size_t i = 0; i < 2; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            static char payload[size];
            memset(payload, 'p', sizeof payload);
            int fd = open(fifo.s, O_WRONLY);
            if (fd >= 0)
                (void)!write(fd, payload, sizeof payload);
            _exit(0);
        }
        error_info err;
        char *data = NULL;
        size_t len = 0;
        error_code rc = platform_read_file(fifo.s, caps[i], &data, &len, &err);
        if (caps[i] == size) {
            assert_ok(rc, err);
            assert_int_equal(len, size);
            assert_int_equal(data[0], 'p');
            assert_int_equal(data[size - 1], 'p');
            assert_int_equal(data[size], '\0');
            free(data);
        } else {
            assert_int_equal(rc, ERR_IO);
        }
        kill_and_wait(pid); /* the writer may block on a reader that left */
    }
}

/* platform_open_regular: a regular file opens with its size; a FIFO (which
 * nobody writes: a blocking open would wait forever), a link and a directory
 * are refused at once; a missing file is ERR_NOT_FOUND. */
static void test_open_regular(void **state)
{
    fixture *f = *state;
    path_buf file = at(f, "regular"), fifo = at(f, "fifo"), link = at(f, "link"), missing = at(f, "missing");
    write_text(file.s, "twelve bytes");
    assert_int_equal(mkfifo(fifo.s, 0600), 0);
    assert_int_equal(symlink(file.s, link.s), 0);
    error_info err;
    FILE *in = NULL;
    uint64_t size = 0;
    assert_ok(platform_open_regular(file.s, &in, &size, &err), err);
    assert_int_equal(size, 12);
    char buf[16] = {0};
    assert_int_equal(fread(buf, 1, sizeof buf, in), 12);
    assert_string_equal(buf, "twelve bytes");
    fclose(in);
    const char *refused[] = {fifo.s, link.s, f->dir};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        in = NULL;
        assert_int_equal(platform_open_regular(refused[i], &in, &size, &err), ERR_IO);
        assert_contains(err.message, "not a regular file");
        assert_null(in);
    }
    assert_int_equal(platform_open_regular(missing.s, &in, &size, &err), ERR_NOT_FOUND);
}

static void test_remove_file(void **state)
{
    fixture *f = *state;
    path_buf p = at(f, "victim"), dir = at(f, "dir");
    error_info err;
    write_text(p.s, "x");
    assert_ok(platform_remove_file(p.s, &err), err);
    assert_false(exists(p.s));
    assert_ok(platform_remove_file(p.s, &err), err); /* already gone */
    assert_int_equal(mkdir(dir.s, 0700), 0);
    assert_int_equal(platform_remove_file(dir.s, &err), ERR_IO);
    assert_contains(err.message, dir.s);
}

static void test_mkdirs(void **state)
{
    fixture *f = *state;
    path_buf file = at(f, "file");
    write_text(file.s, "not a directory");
    static const struct {
        const char *name;
        error_code want;
    } cases[] = {
        {"a", ERR_OK},       {"a", ERR_OK}, /* existing */
        {"b/c/d/e", ERR_OK}, {"b/c", ERR_OK}, {"x//y///z/", ERR_OK}, {"file", ERR_IO}, {"file/sub", ERR_IO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        path_buf p = at(f, cases[i].name);
        error_info err;
        error_clear(&err);
        error_code rc = platform_mkdirs(p.s, &err);
        if (rc != cases[i].want)
            fail_msg("%s: got %s (%s)", cases[i].name, error_name(rc), err.message);
        if (rc == ERR_OK) {
            assert_int_equal(platform_path_stat(p.s, NULL), PLATFORM_PATH_DIR);
        } else {
            assert_contains(err.message, p.s);
            assert_contains(err.message, "not a directory");
        }
    }
    /* New directories are 0700 (umask permitting; it never adds bits). */
    path_buf deep = at(f, "b/c/d");
    assert_int_equal(file_mode(deep.s) & 0077, 0);
    assert_int_equal(file_mode(deep.s) & 0700, 0700);
    error_info err;
    assert_ok(platform_mkdirs("/", &err), err);
    assert_int_equal(platform_mkdirs("", &err), ERR_IO);
}

static void test_remove_tree_does_not_follow_links(void **state)
{
    fixture *f = *state;
    path_buf tree = at(f, "tree"), outside_dir = at(f, "outside"), outside_file = at(f, "outside/keep.txt"),
             outside_alone = at(f, "precious.txt");
    error_info err;
    assert_ok(platform_mkdirs(outside_dir.s, &err), err);
    write_text(outside_file.s, "keep me");
    write_text(outside_alone.s, "keep me too");

    static const char *const dirs[] = {"tree/a/b/c", "tree/empty", "tree/a/d"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        path_buf d = at(f, dirs[i]);
        assert_ok(platform_mkdirs(d.s, &err), err);
    }
    static const char *const files[] = {"tree/top.txt", "tree/a/one", "tree/a/b/c/deep", "tree/a/d/.hidden"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        path_buf p = at(f, files[i]);
        write_text(p.s, files[i]);
    }
    path_buf link_dir = at(f, "tree/a/link-to-dir"), link_file = at(f, "tree/a/b/link-to-file"),
             dangling = at(f, "tree/dangling");
    assert_int_equal(symlink(outside_dir.s, link_dir.s), 0);
    assert_int_equal(symlink(outside_alone.s, link_file.s), 0);
    assert_int_equal(symlink("/nonexistent/target", dangling.s), 0);

    assert_ok(platform_remove_tree(tree.s, &err), err);
    assert_false(exists(tree.s));
    assert_true(exists(outside_file.s));
    assert_true(exists(outside_alone.s));

    /* Missing is success; a link given as the root is removed, not followed. */
    assert_ok(platform_remove_tree(tree.s, &err), err);
    path_buf root_link = at(f, "root-link");
    assert_int_equal(symlink(outside_dir.s, root_link.s), 0);
    assert_ok(platform_remove_tree(root_link.s, &err), err);
    assert_false(exists(root_link.s));
    assert_true(exists(outside_file.s));
    /* A plain file is removed too. */
    assert_ok(platform_remove_tree(outside_alone.s, &err), err);
    assert_false(exists(outside_alone.s));
}

static void test_list_dir(void **state)
{
    fixture *f = *state;
    static const char *const created[] = {"b", "a", "C", "aa", ".hidden", "a b", "\xc3\xa9t\xc3\xa9", "_"};
    static const char *const sorted[] = {".hidden", "C", "_", "a", "a b", "aa", "b", "\xc3\xa9t\xc3\xa9"};
    for (size_t i = 0; i < sizeof created / sizeof created[0]; i++) {
        path_buf p = at(f, created[i]);
        if (i == 2)
            assert_int_equal(mkdir(p.s, 0700), 0); /* directories are listed too */
        else
            write_text(p.s, "");
    }
    error_info err;
    char **names = NULL;
    size_t count = 0;
    assert_ok(platform_list_dir(f->dir, &names, &count, &err), err);
    assert_int_equal(count, sizeof sorted / sizeof sorted[0]);
    for (size_t i = 0; i < count; i++)
        assert_string_equal(names[i], sorted[i]);
    platform_free_names(names, count);

    path_buf empty = at(f, "C");
    names = NULL;
    count = 99;
    assert_ok(platform_list_dir(empty.s, &names, &count, &err), err);
    assert_int_equal(count, 0);
    platform_free_names(names, count);
    platform_free_names(NULL, 0);

    path_buf missing = at(f, "missing"), file = at(f, "a");
    assert_int_equal(platform_list_dir(missing.s, &names, &count, &err), ERR_NOT_FOUND);
    assert_contains(err.message, missing.s);
    assert_int_equal(platform_list_dir(file.s, &names, &count, &err), ERR_IO);
    assert_contains(err.message, file.s);
}

static void test_free_space(void **state)
{
    fixture *f = *state;
    error_info err;
    uint64_t bytes = 0;
    assert_ok(platform_free_space(f->dir, &bytes, &err), err);
    assert_true(bytes > 0);
    path_buf missing = at(f, "missing");
    assert_int_equal(platform_free_space(missing.s, &bytes, &err), ERR_NOT_FOUND);
}

static void test_secret_file(void **state)
{
    fixture *f = *state;
    static const struct {
        mode_t mode;
        error_code want;
        const char *mode_text;
    } cases[] = {
        {0600, ERR_OK, NULL},       {0400, ERR_OK, NULL},       {0640, ERR_CONFIG, "0640"}, {0604, ERR_CONFIG, "0604"},
        {0644, ERR_CONFIG, "0644"}, {0660, ERR_CONFIG, "0660"}, {0610, ERR_CONFIG, "0610"}, {0601, ERR_CONFIG, "0601"},
    };
    path_buf key = at(f, "api_key");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(key.s, "secret", 6, cases[i].mode);
        error_info err;
        error_clear(&err);
        error_code rc = platform_check_secret_file("API key file", key.s, &err);
        if (rc != cases[i].want)
            fail_msg("mode %04o: got %s (%s)", (unsigned)cases[i].mode, error_name(rc), err.message);
        if (rc != ERR_OK) {
            char chmod_hint[PATH_MAX + 16];
            snprintf(chmod_hint, sizeof chmod_hint, "chmod 600 %s", key.s);
            assert_contains(err.message, chmod_hint);
            assert_contains(err.message, cases[i].mode_text);
            assert_contains(err.message, "readable by group or others");
        }
    }
    error_info err;
    path_buf missing = at(f, "missing_key");
    assert_int_equal(platform_check_secret_file("API key file", missing.s, &err), ERR_CONFIG);
    assert_contains(err.message, missing.s);
    assert_int_equal(platform_check_secret_file("API key file", f->dir, &err), ERR_CONFIG);
}

static void test_fopen_and_fsync(void **state)
{
    fixture *f = *state;
    path_buf p = at(f, "log.jsonl");
    FILE *fp = platform_fopen(p.s, "ab");
    assert_non_null(fp);
    int flags = fcntl(fileno(fp), F_GETFD);
    assert_true(flags >= 0 && (flags & FD_CLOEXEC));
    assert_true(fputs("line\n", fp) >= 0);
    error_info err;
    assert_ok(platform_fsync_file(fp, &err), err);
    struct stat st;
    assert_int_equal(stat(p.s, &st), 0);
    assert_int_equal(st.st_size, 5);
    fclose(fp);

    /* A full disk is ERR_DISK_FULL (the null device that is always full). */
    FILE *full = platform_fopen("/dev/full", "w");
    if (full) {
        assert_true(fputs("data", full) >= 0);
        assert_int_equal(platform_fsync_file(full, &err), ERR_DISK_FULL);
        assert_int_equal(err.os_error, ENOSPC);
        fclose(full);
    }

    path_buf missing = at(f, "no/such/file");
    errno = 0;
    assert_null(platform_fopen(missing.s, "rb"));
    assert_int_equal(errno, ENOENT);

    /* The directory holding a new file is flushed; a missing one says so. */
    assert_ok(platform_sync_parent_dir(p.s, &err), err);
    assert_int_equal(platform_sync_parent_dir(missing.s, &err), ERR_NOT_FOUND);
}

static void test_append(void **state)
{
    fixture *f = *state;
    path_buf p = at(f, "incidents.jsonl");
    FILE *fp = platform_fopen(p.s, "ab");
    assert_non_null(fp);
    setvbuf(fp, NULL, _IONBF, 0);
    error_info err;
    assert_ok(platform_append(fp, "one\n", 4, &err), err);
    assert_ok(platform_append(fp, "two\n", 4, &err), err);
    fclose(fp);
    char *data = NULL;
    size_t len = 0;
    assert_ok(platform_read_file(p.s, 1024, &data, &len, &err), err);
    assert_string_equal(data, "one\ntwo\n");
    free(data);

    /* The OS's reason, and its code: a full disk is ERR_DISK_FULL. */
    FILE *full = platform_fopen("/dev/full", "ab");
    if (full) {
        setvbuf(full, NULL, _IONBF, 0);
        assert_int_equal(platform_append(full, "line\n", 5, &err), ERR_DISK_FULL);
        assert_int_equal(err.os_error, ENOSPC);
        fclose(full);
    }
    FILE *read_only = platform_fopen(p.s, "rb");
    assert_non_null(read_only);
    assert_int_equal(platform_append(read_only, "x", 1, &err), ERR_IO);
    fclose(read_only);
}

/* ---- 64-bit file offsets ---------------------------------------------------- */

#define GIB (1024ull * 1024 * 1024)

/* A sparse file of 3 GiB (no disk used): sizes and offsets past 2 GiB, where
 * Windows' 32-bit long ends, and past 3 GiB are read and written exactly. */
static void test_file_offsets_past_2gib(void **state)
{
    fixture *f = *state;
    path_buf p = at(f, "sparse.bin");
    int fd = open(p.s, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)(3 * GIB)), 0);
    assert_int_equal(pwrite(fd, "two+", 4, (off_t)(2 * GIB + 1)), 4);
    assert_int_equal(close(fd), 0);

    error_info err;
    FILE *fp = platform_fopen(p.s, "r+b");
    assert_non_null(fp);
    uint64_t size = 0;
    assert_ok(platform_file_size(fp, &size, &err), err);
    assert_true(size == 3 * GIB);
    char buf[8] = {0};
    assert_ok(platform_read_at(fp, 2 * GIB + 1, buf, 4, &err), err);
    assert_memory_equal(buf, "two+", 4);
    assert_ok(platform_read_at(fp, 2 * GIB + 100, buf, 4, &err), err); /* the hole reads as zeros */
    assert_memory_equal(buf, "\0\0\0\0", 4);

    /* Writing past 3 GiB through the stream, as a resumed download does. */
    assert_ok(platform_seek(fp, 3 * GIB, &err), err);
    assert_int_equal(fwrite("three", 1, 5, fp), 5);
    assert_ok(platform_file_size(fp, &size, &err), err); /* counts what fp still buffers */
    assert_true(size == 3 * GIB + 5);
    assert_ok(platform_read_at(fp, 3 * GIB, buf, 5, &err), err);
    assert_memory_equal(buf, "three", 5);
    /* read_at leaves the stream just past what it read; the size query leaves it alone. */
    assert_ok(platform_read_at(fp, 2 * GIB + 1, buf, 2, &err), err);
    assert_ok(platform_file_size(fp, &size, &err), err);
    assert_int_equal(fread(buf, 1, 2, fp), 2);
    assert_memory_equal(buf, "o+", 2);
    assert_int_equal(fclose(fp), 0);

    struct stat st;
    assert_int_equal(stat(p.s, &st), 0);
    assert_true((uint64_t)st.st_size == 3 * GIB + 5);

    /* A read past the end fails and says where the file ends. */
    fp = platform_fopen(p.s, "rb");
    assert_non_null(fp);
    assert_int_equal(platform_read_at(fp, 3 * GIB + 3, buf, 4, &err), ERR_IO);
    assert_contains(err.message, "offset 3221225475");
    assert_contains(err.message, "ends after 2");
    assert_int_equal(platform_read_at(fp, 4 * GIB, buf, 1, &err), ERR_IO);
    assert_int_equal(platform_seek(fp, UINT64_MAX, &err), ERR_IO);
    assert_ok(platform_read_at(fp, 0, buf, 0, &err), err);
    fclose(fp);

    /* A pipe has no size. */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    FILE *pipe_end = fdopen(fds[0], "rb");
    assert_non_null(pipe_end);
    assert_int_equal(platform_file_size(pipe_end, &size, &err), ERR_IO);
    assert_int_equal(err.os_error, ESPIPE);
    fclose(pipe_end);
    close(fds[1]);
}

/* ---- OS errors ----------------------------------------------------------------- */

/* One table turns errno into outpost's codes, whoever failed: a full quota
 * is a full disk, a refusal is a permission problem, the rest is I/O. */
static void test_os_error_table(void **state)
{
    (void)state;
    static const struct {
        int os_error;
        error_code code;
    } cases[] = {
        {ENOSPC, ERR_DISK_FULL},
#ifdef EDQUOT
        {EDQUOT, ERR_DISK_FULL},
#endif
        {EACCES, ERR_PERMISSION}, {EPERM, ERR_PERMISSION},
        {ENOENT, ERR_NOT_FOUND},  {ENOMEM, ERR_NOMEM},
        {EROFS, ERR_IO},          {EIO, ERR_IO},
        {ENOTDIR, ERR_IO},        {EISDIR, ERR_IO},
        {EINVAL, ERR_IO},         {0, ERR_IO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (platform_os_error_code(cases[i].os_error) != cases[i].code)
            fail_msg("errno %d (%s): %s, expected %s", cases[i].os_error, strerror(cases[i].os_error),
                     error_name(platform_os_error_code(cases[i].os_error)), error_name(cases[i].code));
        error_info err;
        assert_int_equal(platform_os_error(&err, cases[i].os_error, "cannot write %s", "/x/y"), cases[i].code);
        assert_int_equal(err.code, cases[i].code);
        assert_int_equal(err.os_error, cases[i].os_error);
        assert_contains(err.message, "cannot write /x/y: ");
        if (cases[i].os_error != 0)
            assert_contains(err.message, strerror(cases[i].os_error));
        errno = cases[i].os_error;
        assert_int_equal(platform_stdio_error(&err, "cannot read %d", 7), cases[i].code);
        assert_int_equal(err.os_error, cases[i].os_error);
        assert_contains(err.message, "cannot read 7: ");
    }
    error_info err;
    assert_int_equal(platform_os_error(NULL, ENOSPC, "x"), ERR_DISK_FULL);
    assert_int_equal(platform_os_error(&err, 0, "cannot write"), ERR_IO);
    assert_string_equal(err.message, "cannot write: the system gave no reason");
    char text[8];
    assert_ptr_equal(platform_os_error_text(ENOSPC, text, sizeof text), text);
    assert_true(strlen(text) < sizeof text);
    assert_ptr_equal(platform_os_error_text(ENOSPC, text, 0), text);

    /* A real failure: a stdio write to the always-full device is disk full. */
    FILE *full = platform_fopen("/dev/full", "w");
    if (full) {
        setvbuf(full, NULL, _IONBF, 0);
        assert_true(fwrite("data", 1, 4, full) != 4);
        assert_int_equal(platform_stdio_error(&err, "cannot write %s", "/dev/full"), ERR_DISK_FULL);
        assert_int_equal(err.os_error, ENOSPC);
        fclose(full);
    }
}

/* ---- Lock ---------------------------------------------------------------- */

static void test_lock_is_exclusive(void **state)
{
    fixture *f = *state;
    path_buf path = at(f, "outpost.lock");
    error_info err;
    platform_lock *lock = NULL;
    assert_ok(platform_lock_acquire(path.s, &lock, &err), err);
    assert_non_null(lock);
    assert_int_equal(file_mode(path.s), 0600);
    char text[32], want[32];
    read_text(path.s, text, sizeof text);
    snprintf(want, sizeof want, "%ld\n", (long)getpid());
    assert_string_equal(text, want);

    /* A second acquire, in this process or another, is refused. */
    platform_lock *second = NULL;
    assert_int_equal(platform_lock_acquire(path.s, &second, &err), ERR_LOCKED);
    assert_null(second); /* set on success only */
    assert_contains(err.message, "another outpost run holds the lock");
    assert_contains(err.message, path.s);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        platform_lock *child_lock = NULL;
        _exit(platform_lock_acquire(path.s, &child_lock, NULL) == ERR_LOCKED ? 0 : 1);
    }
    assert_int_equal(wait_exit(pid), 0);

    /* Released, it can be taken again. */
    platform_lock_release(lock);
    assert_ok(platform_lock_acquire(path.s, &lock, &err), err);
    platform_lock_release(lock);
    platform_lock_release(NULL);

    path_buf nowhere = at(f, "missing/outpost.lock");
    assert_int_equal(platform_lock_acquire(nowhere.s, &lock, &err), ERR_NOT_FOUND);
    assert_contains(err.message, nowhere.s);
}

static void test_lock_dies_with_holder(void **state)
{
    fixture *f = *state;
    path_buf path = at(f, "outpost.lock");
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        platform_lock *lock = NULL;
        char ok = platform_lock_acquire(path.s, &lock, NULL) == ERR_OK ? 'y' : 'n';
        (void)!write(ready[1], &ok, 1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char ok = 0;
    assert_int_equal(read(ready[0], &ok, 1), 1);
    close(ready[0]);
    assert_int_equal(ok, 'y');

    error_info err;
    platform_lock *lock = NULL;
    assert_int_equal(platform_lock_acquire(path.s, &lock, &err), ERR_LOCKED);
    kill_and_wait(pid);
    assert_ok(platform_lock_acquire(path.s, &lock, &err), err);
    platform_lock_release(lock);
}

/* ---- Time and randomness ------------------------------------------------- */

static void test_clocks_and_sleep(void **state)
{
    (void)state;
    int64_t utc = platform_time_utc_ms();
    int64_t now = (int64_t)time(NULL) * 1000;
    assert_true(utc > now - 2000 && utc < now + 2000);

    int64_t prev = platform_monotonic_ms();
    for (int i = 0; i < 100000; i++) {
        int64_t t = platform_monotonic_ms();
        assert_true(t >= prev);
        prev = t;
    }
    static const int64_t sleeps[] = {0, 1, 20, 120};
    for (size_t i = 0; i < sizeof sleeps / sizeof sleeps[0]; i++) {
        int64_t t0 = platform_monotonic_ms();
        platform_sleep_ms(sleeps[i]);
        int64_t slept = platform_monotonic_ms() - t0;
        if (slept < sleeps[i]) /* no upper bound: a busy machine may oversleep */
            fail_msg("sleep of %lld ms took %lld ms", (long long)sleeps[i], (long long)slept);
    }
    platform_sleep_ms(-5); /* negative: returns at once */
}

static void test_random_bytes(void **state)
{
    (void)state;
    error_info err;
    unsigned char a[32], b[32], zero[32] = {0};
    assert_ok(platform_random_bytes(a, sizeof a, &err), err);
    assert_ok(platform_random_bytes(b, sizeof b, &err), err);
    assert_memory_not_equal(a, b, sizeof a);
    assert_memory_not_equal(a, zero, sizeof a);
    assert_ok(platform_random_bytes(a, 0, &err), err);

    /* A large request is filled completely: every byte value appears. */
    size_t big = 1 << 20;
    unsigned char *buf = calloc(1, big);
    assert_non_null(buf);
    assert_ok(platform_random_bytes(buf, big, &err), err);
    size_t seen[256] = {0};
    for (size_t i = 0; i < big; i++)
        seen[buf[i]]++;
    for (size_t v = 0; v < 256; v++)
        assert_true(seen[v] > big / 256 / 2);
    assert_memory_not_equal(buf + big - 32, zero, 32);
    free(buf);
}

/* ---- Processes ----------------------------------------------------------- */

static void test_spawn_exit_codes(void **state)
{
    (void)state;
    static const char *const exit7[] = {"/bin/sh", "-c", "exit 7", NULL};
    static const char *const exit255[] = {"/bin/sh", "-c", "exit 255", NULL};
    static const char *const path_true[] = {"true", NULL};
    static const char *const path_false[] = {"false", NULL};
    static const char *const term[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};
    static const char *const pipe_sig[] = {"/bin/sh", "-c", "kill -PIPE $$", NULL};
    static const char *const args[] = {
        "/bin/sh", "-c", "[ \"$1\" = 'two words' ] && [ \"$2\" = '$HOME;*' ]", "sh", "two words", "$HOME;*", NULL};
    static const struct {
        const char *const *argv;
        int want;
    } cases[] = {
        {exit7, 7},
        {exit255, 255},
        {path_true, 0},
        {path_false, 1},
        {term, 128 + SIGTERM},
        {pipe_sig, 128 + SIGPIPE}, /* SIGPIPE ignored here is reset for the child */
        {args, 0},                 /* arguments pass verbatim, no shell in between */
    };
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        error_info err;
        platform_spawn_result result = {.exit_code = -99, .timed_out = true};
        assert_ok(platform_spawn(cases[i].argv, i % 2 ? 10000 : 0, &result, &err), err);
        if (result.exit_code != cases[i].want)
            fail_msg("case %zu (%s): exit %d, want %d", i, cases[i].argv[cases[i].argv[1] ? 2 : 0], result.exit_code,
                     cases[i].want);
        assert_false(result.timed_out);
    }
    signal(SIGPIPE, old_pipe);
}

/* Reads a pid a spawned script wrote, waiting a little for it to appear. */
static pid_t read_pid(const char *path)
{
    for (int i = 0; i < 100; i++) {
        char text[32] = "";
        if (exists(path))
            read_text(path, text, sizeof text);
        if (strchr(text, '\n'))
            return (pid_t)atol(text);
        sleep_us(10000);
    }
    fail_msg("no pid in %s", path);
    return -1;
}

/* Whether anything is left of process group pgid (reaping what we can). */
static bool group_alive(pid_t pgid)
{
    for (int i = 0; i < 200; i++) {
        while (waitpid(-pgid, NULL, WNOHANG) > 0) /* orphans reparented to us */
            ;
        if (kill(-pgid, 0) != 0 && errno == ESRCH)
            return false;
        sleep_us(10000);
    }
    return true;
}

static void test_spawn_timeout_kills_tree(void **state)
{
    fixture *f = *state;
    path_buf leader = at(f, "leader.pid"), background = at(f, "background.pid");
    const char *const argv[] = {
        "/bin/sh", "-c", "echo $$ > \"$1\"; sleep 30 & echo $! > \"$2\"; sleep 30", "sh", leader.s, background.s, NULL};
#ifdef __linux__
    /* The killed grandchild is orphaned: have it reparented to us so we can
     * reap it (PID 1 of a container may never reap zombies). */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
#endif
    error_info err;
    platform_spawn_result result = {0};
    int64_t t0 = platform_monotonic_ms();
    assert_ok(platform_spawn(argv, 300, &result, &err), err);
    int64_t elapsed = platform_monotonic_ms() - t0;
    print_message("    timed out after %lld ms\n", (long long)elapsed);
    assert_true(result.timed_out);
    assert_int_equal(result.exit_code, 128 + SIGKILL);
    assert_true(elapsed >= 300); /* exit code SIGKILL, not 0: killed, not waited for */

    pid_t pgid = read_pid(leader.s);
    pid_t grandchild = read_pid(background.s);
    assert_true(pgid > 1);
    assert_true(grandchild > 1);
    assert_false(group_alive(pgid));
    assert_int_equal(kill(grandchild, 0), -1);
    assert_int_equal(errno, ESRCH);
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
#endif
}

static void test_spawn_errors(void **state)
{
    fixture *f = *state;
    path_buf not_executable = at(f, "not-executable"), missing = at(f, "missing-program");
    write_text(not_executable.s, "#!/bin/sh\nexit 0\n");
    const char *const not_in_path[] = {"outpost-no-such-program-7f3a", NULL};
    const char *const absent[] = {missing.s, NULL};
    const char *const no_x[] = {not_executable.s, NULL};
    const char *const empty_name[] = {"", NULL};
    const char *const no_args[] = {NULL};
    const struct {
        const char *const *argv;
        const char *in_message;
    } cases[] = {
        {not_in_path, "outpost-no-such-program-7f3a"},
        {absent, missing.s},
        {no_x, not_executable.s},
        {empty_name, "empty"},
        {no_args, "empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        error_info err;
        error_clear(&err);
        platform_spawn_result result = {.exit_code = -99};
        error_code rc = platform_spawn(cases[i].argv, 1000, &result, &err);
        if (rc != ERR_SPAWN)
            fail_msg("case %zu: got %s (%s), exit %d", i, error_name(rc), err.message, result.exit_code);
        assert_contains(err.message, cases[i].in_message);
        assert_int_equal(result.exit_code, -99);
    }
}

static void test_spawn_stdin_and_descriptors(void **state)
{
    fixture *f = *state;
    error_info err;
    platform_spawn_result result;

    /* stdin is the null device: read sees end of file at once (exit 1). */
    const char *const read_stdin[] = {"/bin/sh", "-c", "read line; exit $?", NULL};
    assert_ok(platform_spawn(read_stdin, 5000, &result, &err), err);
    assert_false(result.timed_out);
    assert_int_equal(result.exit_code, 1);

    if (!exists("/dev/fd/0"))
        skip();
    /* Our descriptors are not inherited: an open stream and the lock. */
    path_buf file = at(f, "open-file"), lock_path = at(f, "outpost.lock");
    FILE *fp = platform_fopen(file.s, "w");
    assert_non_null(fp);
    int next_fd = dup(2);
    assert_true(next_fd >= 0);
    close(next_fd);
    platform_lock *lock = NULL;
    assert_ok(platform_lock_acquire(lock_path.s, &lock, &err), err);
    assert_true(fcntl(next_fd, F_GETFD) >= 0); /* the lock's descriptor */
    const int fds[] = {fileno(fp), next_fd};
    for (size_t i = 0; i < 2; i++) {
        char fd_text[16];
        snprintf(fd_text, sizeof fd_text, "%d", fds[i]);
        const char *const probe[] = {"/bin/sh", "-c", "[ -e /dev/fd/$1 ] && exit 9; exit 0", "sh", fd_text, NULL};
        assert_ok(platform_spawn(probe, 5000, &result, &err), err);
        if (result.exit_code != 0)
            fail_msg("descriptor %d leaked into the child", fds[i]);
    }
    /* The probe itself sees a descriptor that is inherited on purpose. */
    const char *const control[] = {"/bin/sh", "-c", "[ -e /dev/fd/$1 ] && exit 9; exit 0", "sh", "2", NULL};
    assert_ok(platform_spawn(control, 5000, &result, &err), err);
    assert_int_equal(result.exit_code, 9);
    platform_lock_release(lock);
    fclose(fp);
}

/* The child gets exactly the environment given, and closes descriptors
 * outpost did not mark close-on-exec (a library's socket). */
static void test_spawn_env_and_foreign_descriptors(void **state)
{
    fixture *f = *state;
    error_info err;
    platform_spawn_result result;
    path_buf out = at(f, "env.txt");
    char script[PATH_MAX + 64];
    snprintf(script, sizeof script, "env > '%s'", out.s);
    const char *const argv[] = {"/bin/sh", "-c", script, NULL};
    const char *const envp[] = {"ONLY=this", "PATH=/usr/bin:/bin", NULL};
    assert_ok(platform_spawn_env(argv, envp, NULL, 5000, &result, &err), err);
    assert_int_equal(result.exit_code, 0);
    char text[4096];
    read_text(out.s, text, sizeof text);
    assert_contains(text, "ONLY=this\n");
    assert_null(strstr(text, "HOME="));

    char **vars = NULL;
    size_t count = 0;
    assert_int_equal(setenv("OUTPOST_TEST_ENV", "listed", 1), 0);
    assert_ok(platform_environment(&vars, &count, &err), err);
    bool found = false;
    for (size_t i = 0; i < count; i++)
        found = found || strcmp(vars[i], "OUTPOST_TEST_ENV=listed") == 0;
    assert_true(found);
    platform_free_names(vars, count);
    unsetenv("OUTPOST_TEST_ENV");

    if (!exists("/dev/fd/0"))
        skip();
    path_buf file = at(f, "foreign");
    int fd = open(file.s, O_WRONLY | O_CREAT, 0600); /* no O_CLOEXEC */
    assert_true(fd >= 0);
    assert_int_equal(dup2(fd, 61), 61);
    close(fd);
    const char *const probe[] = {"/bin/sh", "-c", "[ -e /dev/fd/61 ] && exit 9; exit 0", NULL};
    assert_ok(platform_spawn_env(probe, NULL, NULL, 5000, &result, &err), err);
    close(61);
    if (result.exit_code != 0)
        fail_msg("descriptor 61 (not close-on-exec) leaked into the child");
}

/* ---- Private directories --------------------------------------------------- */

static void test_dir_trust_rules(void **state)
{
    (void)state;
    static const struct {
        unsigned long owner, mode, euid;
        bool trusted;
        const char *why;
    } cases[] = {
        {0, 040700, 0, true, NULL},
        {0, 040755, 0, true, NULL},       /* readable by the SIEM shipper: fine */
        {1000, 040700, 1000, true, NULL}, /* a user's own run */
        {0, 040700, 1000, true, NULL},    /* root's directory, a user's run */
        {1000, 040700, 0, false, "owned by uid 1000"},
        {1000, 040755, 1001, false, "owned by uid 1000"},
        {0, 040770, 0, false, "writable by its group (mode 0770)"},
        {0, 040702, 0, false, "writable by others (mode 0702)"},
        {0, 040777, 0, false, "writable by group and others (mode 0777)"},
        {0, 041777, 0, false, "writable by group and others (mode 1777)"}, /* sticky: others still create */
        {0, 040720, 0, false, "writable by its group"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char why[96] = "";
        bool got = platform_posix_dir_trusted(cases[i].owner, cases[i].mode, cases[i].euid, why, sizeof why);
        if (got != cases[i].trusted)
            fail_msg("case %zu: owner %lu mode %lo euid %lu: expected %s", i, cases[i].owner, cases[i].mode,
                     cases[i].euid, cases[i].trusted ? "trusted" : "refused");
        if (cases[i].why)
            assert_contains(why, cases[i].why);
    }
}

static void test_parent_and_file_trust_rules(void **state)
{
    (void)state;
    char why[96] = "";
    /* /tmp: root's sticky directory passes as a parent, nobody else's. */
    assert_true(platform_posix_parent_trusted(0, 041777, 0, why, sizeof why));
    assert_true(platform_posix_parent_trusted(0, 041777, 1000, why, sizeof why));
    assert_false(platform_posix_parent_trusted(1000, 041777, 0, why, sizeof why));
    assert_contains(why, "owned by uid 1000");
    assert_false(platform_posix_parent_trusted(0, 040777, 0, why, sizeof why));
    assert_contains(why, "writable by group and others (mode 0777)");
    assert_true(platform_posix_parent_trusted(0, 040755, 0, why, sizeof why));
    assert_true(platform_posix_parent_trusted(1000, 040700, 1000, why, sizeof why));

    static const struct {
        unsigned long owner, mode;
        bool secret, trusted;
        const char *why;
    } cases[] = {
        {0, 0100644, false, true, NULL},
        {0, 0100444, false, true, NULL},
        {0, 0100600, true, true, NULL},
        {0, 0100664, false, false, "writable by its group (mode 0664)"},
        {0, 0100646, false, false, "writable by others (mode 0646)"},
        {0, 0100666, false, false, "writable by group and others"},
        {65534, 0100600, false, false, "owned by uid 65534"},
        {0, 0100640, true, false, "readable by group or others (mode 0640)"},
        {0, 0100604, true, false, "readable by group or others (mode 0604)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        why[0] = '\0';
        bool got = platform_posix_file_trusted(cases[i].owner, cases[i].mode, 0, cases[i].secret, why, sizeof why);
        if (got != cases[i].trusted)
            fail_msg("case %zu: expected %s, got \"%s\"", i, cases[i].trusted ? "trusted" : "refused", why);
        if (cases[i].why)
            assert_contains(why, cases[i].why);
    }
}

/* A directory above state_dir that another user owns or may write lets
 * that user rename state_dir away and put another in its place: refused,
 * naming that directory, also when the path reaches it through a link. */
static void test_private_dir_parents(void **state)
{
    fixture *f = *state;
    error_info err;
    path_buf parent = at(f, "srv");
    path_buf dir = at(f, "srv/state");
    assert_ok(platform_mkdirs_private(dir.s, &err), err);
    assert_ok(platform_check_private_dir(dir.s, &err), err);
    assert_int_equal(chmod(parent.s, 0777), 0);
    assert_int_equal(platform_check_private_dir(dir.s, &err), ERR_PERMISSION);
    assert_int_equal(error_exit_code(err.code), 1);
    assert_contains(err.message, parent.s);
    assert_contains(err.message, "a directory above");
    assert_contains(err.message, "writable by group and others (mode 0777)");
    assert_contains(err.message, "chmod go-w");
    /* Through a link, the directory the link leads to is what is judged. */
    path_buf link = at(f, "link");
    assert_int_equal(symlink(dir.s, link.s), 0);
    assert_int_equal(platform_check_private_dir(link.s, &err), ERR_PERMISSION);
    assert_contains(err.message, parent.s);
    assert_contains(err.message, link.s);
    assert_int_equal(chmod(parent.s, 01777), 0); /* root's sticky directory: fine */
    if (geteuid() == 0)
        assert_ok(platform_check_private_dir(link.s, &err), err);
    assert_int_equal(chmod(parent.s, 0700), 0);
    assert_ok(platform_check_private_dir(link.s, &err), err);
    if (geteuid() != 0)
        return;
    assert_int_equal(chown(parent.s, 65534, 65534), 0);
    assert_int_equal(platform_check_private_dir(dir.s, &err), ERR_PERMISSION);
    assert_contains(err.message, "owned by uid 65534");
    assert_contains(err.message, "chown root:root");
}

static void test_trusted_file(void **state)
{
    fixture *f = *state;
    error_info err;
    path_buf file = at(f, "outpost.json");
    write_file(file.s, "{}", 2, 0644);
    assert_ok(platform_check_trusted_file("configuration file", file.s, false, &err), err);
    assert_int_equal(platform_check_trusted_file("API key file", file.s, true, &err), ERR_CONFIG);
    assert_contains(err.message, "chmod 600");
    static const mode_t loose[] = {0664, 0646, 0666, 0620};
    for (size_t i = 0; i < sizeof loose / sizeof loose[0]; i++) {
        assert_int_equal(chmod(file.s, loose[i]), 0);
        assert_int_equal(platform_check_trusted_file("configuration file", file.s, false, &err), ERR_CONFIG);
        assert_int_equal(error_exit_code(err.code), 2);
        assert_contains(err.message, "configuration file");
        assert_contains(err.message, file.s);
        assert_contains(err.message, "chmod go-w");
    }
    assert_int_equal(chmod(file.s, 0644), 0);
    path_buf missing = at(f, "missing.json");
    assert_int_equal(platform_check_trusted_file("configuration file", missing.s, false, &err), ERR_NOT_FOUND);
    assert_int_equal(platform_check_trusted_file("configuration file", f->dir, false, &err), ERR_CONFIG);
    assert_contains(err.message, "not a regular file");
    if (geteuid() != 0)
        return;
    /* Another user's file, directly and through a link of root's. */
    path_buf theirs = at(f, "theirs.json");
    write_file(theirs.s, "{}", 2, 0644);
    assert_int_equal(chown(theirs.s, 65534, 65534), 0);
    assert_int_equal(platform_check_trusted_file("configuration file", theirs.s, false, &err), ERR_CONFIG);
    assert_contains(err.message, "owned by uid 65534");
    path_buf link = at(f, "link.json");
    assert_int_equal(symlink(theirs.s, link.s), 0);
    assert_int_equal(platform_check_trusted_file("configuration file", link.s, false, &err), ERR_CONFIG);
    assert_contains(err.message, link.s);
    assert_contains(err.message, "owned by uid 65534");
    /* A trusted file in a directory another user owns. */
    path_buf dir = at(f, "userdir");
    path_buf inside = at(f, "userdir/outpost.json");
    assert_int_equal(mkdir(dir.s, 0755), 0);
    write_file(inside.s, "{}", 2, 0644);
    assert_int_equal(chown(dir.s, 65534, 65534), 0);
    assert_int_equal(platform_check_trusted_file("configuration file", inside.s, false, &err), ERR_CONFIG);
    assert_contains(err.message, dir.s);
}

/* A link is followed only where it lives in a judged directory, and its
 * target's path is judged too (PRODUCT.md section 9, issue 34). */
static void test_links_judged_where_they_live(void **state)
{
    fixture *f = *state;
    error_info err;
    path_buf etc = at(f, "etc");
    assert_int_equal(mkdir(etc.s, 0755), 0);
    path_buf real = at(f, "etc/real.json");
    write_file(real.s, "{\"a\": 1}", 8, 0644);
    /* In a judged directory: followed, absolute or relative, and through a chain. */
    path_buf link = at(f, "etc/link.json");
    assert_int_equal(symlink(real.s, link.s), 0);
    path_buf rel = at(f, "etc/rel.json");
    assert_int_equal(symlink("real.json", rel.s), 0);
    path_buf chain = at(f, "etc/chain.json");
    assert_int_equal(symlink("../etc/./rel.json", chain.s), 0);
    const char *fine[] = {real.s, link.s, rel.s, chain.s};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        char *data = NULL;
        size_t len = 0;
        assert_ok(platform_read_trusted_file("configuration file", fine[i], false, 1024, &data, &len, &err), err);
        assert_int_equal(len, 8);
        assert_string_equal(data, "{\"a\": 1}");
        free(data);
    }
    /* A directory through a link in a judged directory. */
    path_buf dir_link = at(f, "etc/dir");
    assert_int_equal(symlink(etc.s, dir_link.s), 0);
    assert_ok(platform_check_private_dir(dir_link.s, &err), err);
    /* Links that loop end the walk. */
    path_buf loop = at(f, "etc/loop");
    assert_int_equal(symlink("loop", loop.s), 0);
    assert_int_equal(platform_check_trusted_file("configuration file", loop.s, false, &err), ERR_CONFIG);
    assert_contains(err.message, loop.s);
    if (geteuid() != 0)
        return;
    /* The same link in a folder another user owns is refused whatever it points at. */
    path_buf users = at(f, "u");
    assert_int_equal(mkdir(users.s, 0755), 0);
    path_buf theirs = at(f, "u/outpost.json");
    assert_int_equal(symlink(real.s, theirs.s), 0);
    assert_int_equal(chown(users.s, 65534, 65534), 0);
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(platform_read_trusted_file("configuration file", theirs.s, false, 1024, &data, &len, &err),
                     ERR_CONFIG);
    assert_contains(err.message, users.s);
    assert_contains(err.message, "owned by uid 65534");
    assert_int_equal(error_exit_code(err.code), 2);
    path_buf state_link = at(f, "u/state");
    assert_int_equal(symlink(etc.s, state_link.s), 0);
    assert_int_equal(platform_check_private_dir(state_link.s, &err), ERR_PERMISSION);
    assert_contains(err.message, users.s);
    assert_int_equal(platform_state_root_open(state_link.s, &err), ERR_PERMISSION);
    /* A link of root's in root's folder that leads through the user's folder: the target's path is judged. */
    path_buf via = at(f, "etc/via.json");
    assert_int_equal(symlink(theirs.s, via.s), 0);
    assert_int_equal(platform_check_trusted_file("configuration file", via.s, false, &err), ERR_CONFIG);
    assert_contains(err.message, users.s);
    /* In a root-owned sticky directory (/tmp), only a link of root's (or the running user's). */
    path_buf sticky = at(f, "sticky");
    assert_int_equal(mkdir(sticky.s, 0755), 0);
    assert_int_equal(chmod(sticky.s, 01777), 0);
    path_buf planted = at(f, "sticky/planted.json");
    assert_int_equal(symlink(real.s, planted.s), 0);
    assert_ok(platform_check_trusted_file("configuration file", planted.s, false, &err), err);
    assert_int_equal(lchown(planted.s, 65534, 65534), 0);
    assert_int_equal(platform_check_trusted_file("configuration file", planted.s, false, &err), ERR_CONFIG);
    assert_contains(err.message, planted.s);
    assert_contains(err.message, "symbolic link owned by uid 65534");
}

/* What is judged is what is read: one descriptor, a FIFO refused rather than waited for. */
static void test_read_trusted_file(void **state)
{
    fixture *f = *state;
    error_info err;
    path_buf key = at(f, "signing.key");
    write_file(key.s, "secret\n", 7, 0600);
    char *data = NULL;
    size_t len = 0;
    assert_ok(platform_read_trusted_file("signing key file", key.s, true, 64, &data, &len, &err), err);
    assert_int_equal(len, 7);
    free(data);
    assert_int_equal(chmod(key.s, 0640), 0);
    assert_int_equal(platform_read_trusted_file("signing key file", key.s, true, 64, &data, &len, &err), ERR_CONFIG);
    assert_contains(err.message, "signing key file");
    assert_true(strstr(err.message, "API key") == NULL);
    assert_contains(err.message, "chmod 600");
    assert_int_equal(chmod(key.s, 0600), 0);
    assert_int_equal(platform_read_trusted_file("signing key file", key.s, true, 3, &data, &len, &err), ERR_CONFIG);
    assert_contains(err.message, "limit");
    path_buf fifo = at(f, "fifo");
    assert_int_equal(mkfifo(fifo.s, 0644), 0);
    /* Nobody ever opens the FIFO for writing: a blocking open would never return. */
    assert_int_equal(platform_read_trusted_file("configuration file", fifo.s, false, 64, &data, &len, &err),
                     ERR_CONFIG);
    assert_contains(err.message, "not a regular file");
    path_buf missing = at(f, "nowhere/key");
    assert_int_equal(platform_read_trusted_file("signing key file", missing.s, true, 64, &data, &len, &err),
                     ERR_NOT_FOUND);
}

/* A folder outside state_dir that holds a feed: judged as state_dir is, held, and no final link followed. */
static void test_hold_dir_of(void **state)
{
    fixture *f = *state;
    error_info err;
    path_buf feeds = at(f, "feeds");
    assert_int_equal(mkdir(feeds.s, 0755), 0);
    path_buf victim = at(f, "victim");
    write_text(victim.s, "keep");
    path_buf linked = at(f, "feeds/incidents.jsonl");
    assert_int_equal(symlink(victim.s, linked.s), 0);
    path_buf status = at(f, "feeds/status.json");
    assert_ok(platform_hold_dir_of(status.s, &err), err);
    assert_ok(platform_hold_dir_of(linked.s, &err), err); /* the same folder: nothing more to do */
    assert_ok(platform_write_atomic(status.s, "{}", 2, &err), err);
    struct stat st;
    assert_int_equal(stat(status.s, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_null(platform_fopen_private(linked.s, "ab"));
    assert_int_equal(errno, ELOOP);
    platform_append_file *log = NULL;
    assert_int_equal(platform_append_open(linked.s, &log, NULL, &err), ERR_IO);
    assert_contains(err.message, "symbolic link");
    char *data = NULL;
    assert_ok(platform_read_file(victim.s, 64, &data, NULL, &err), err);
    assert_string_equal(data, "keep");
    free(data);
    /* Deeper paths are none of the feed's: by name, as before. */
    assert_int_equal(mkdir(at(f, "feeds/sub").s, 0755), 0);
    assert_int_equal(symlink(victim.s, at(f, "feeds/sub/link").s), 0);
    assert_ok(platform_read_file(at(f, "feeds/sub/link").s, 64, &data, NULL, &err), err);
    free(data);
    platform_state_root_close();
    /* Others may write the folder: refused, naming it and the fix. */
    assert_int_equal(chmod(feeds.s, 0777), 0);
    assert_int_equal(platform_hold_dir_of(status.s, &err), ERR_PERMISSION);
    assert_int_equal(error_exit_code(err.code), 1);
    assert_contains(err.message, feeds.s);
    assert_contains(err.message, "chmod go-w");
    assert_int_equal(chmod(feeds.s, 0755), 0);
    assert_int_equal(platform_hold_dir_of(at(f, "missing/status.json").s, &err), ERR_NOT_FOUND);
    assert_contains(err.message, "does not exist");
    if (geteuid() != 0)
        return;
    assert_int_equal(chown(feeds.s, 65534, 65534), 0);
    assert_int_equal(platform_hold_dir_of(status.s, &err), ERR_PERMISSION);
    assert_contains(err.message, "owned by uid 65534");
}

/* The held file is what runs: its name swapped for another file after it
 * was opened changes nothing; the child starts in cwd. */
static void test_spawn_held_program(void **state)
{
    fixture *f = *state;
    error_info err;
    path_buf program = at(f, "installer");
    path_buf other = at(f, "other");
    path_buf out = at(f, "out.txt");
    char text[PATH_MAX + 128];
    snprintf(text, sizeof text, "#!/bin/sh\necho held \"$(pwd)\" > '%s'\n", out.s);
    write_file(program.s, text, strlen(text), 0700);
    snprintf(text, sizeof text, "#!/bin/sh\necho swapped > '%s'\n", out.s);
    write_file(other.s, text, strlen(text), 0700);
    platform_held_file *held = NULL;
    assert_ok(platform_held_open(program.s, &held, &err), err);
    assert_int_equal(rename(other.s, program.s), 0);
    const char *const argv[] = {program.s, NULL};
    platform_spawn_options options = {.cwd = "/", .program = held};
    platform_spawn_result result = {0};
    assert_ok(platform_spawn_with(argv, &options, 10000, &result, &err), err);
    platform_held_close(held);
    assert_int_equal(result.exit_code, 0);
    read_text(out.s, text, sizeof text);
    assert_string_equal(text, "held /\n");

    /* A link at the name is refused, not followed. */
    path_buf link = at(f, "link");
    assert_int_equal(symlink(program.s, link.s), 0);
    assert_int_equal(platform_held_open(link.s, &held, &err), ERR_IO);
    assert_contains(err.message, "symbolic link");
}

/* A folder outside state_dir holding a feed (platform_hold_dir_of, issue 34
 * finding 4): judged like state_dir and held; a file created there is
 * owner-only, a link at a feed's name is refused rather than written
 * through, and a folder others may write is refused, named. */
static void test_hold_dir_of_a_feed_folder(void **state)
{
    fixture *f = *state;
    error_info err;
    path_buf feeds = at(f, "feeds"), open_dir = at(f, "open"), victim = at(f, "victim");
    path_buf out = at(f, "feeds/out.json"), link = at(f, "feeds/link.json"), loose = at(f, "open/out.json");
    assert_int_equal(mkdir(feeds.s, 0755), 0);
    assert_int_equal(mkdir(open_dir.s, 0700), 0);
    assert_int_equal(chmod(open_dir.s, 0777), 0);
    write_text(victim.s, "theirs");
    assert_int_equal(symlink(victim.s, link.s), 0);
    assert_ok(platform_hold_dir_of(out.s, &err), err);
    assert_ok(platform_hold_dir_of(link.s, &err), err); /* the folder is held already */
    assert_ok(platform_write_atomic(out.s, "{}", 2, &err), err);
    struct stat st;
    assert_int_equal(lstat(out.s, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(platform_write_atomic(link.s, "{}", 2, &err), ERR_IO);
    assert_contains(err.message, "symbolic link");
    assert_int_equal(platform_hold_dir_of(loose.s, &err), ERR_PERMISSION);
    assert_contains(err.message, open_dir.s);
    platform_state_root_close();
    char text[16];
    read_text(victim.s, text, sizeof text);
    assert_string_equal(text, "theirs");
}

/* Reads the file at path through the platform layer and compares it with text. */
static void assert_platform_read(const char *path, const char *text)
{
    error_info err;
    char *data = NULL;
    size_t len = 0;
    assert_ok(platform_read_file(path, 4096, &data, &len, &err), err);
    assert_string_equal(data, text);
    free(data);
}

/* "works from handles, not names" (PRODUCT.md section 9): once the state
 * directory is held, renaming it away and putting another directory in
 * its place redirects nothing: every later call lands in the directory
 * that was opened. */
static void test_state_root_is_not_redirected(void **state)
{
    fixture *f = *state;
    error_info err;
    path_buf root = at(f, "state");
    path_buf moved = at(f, "moved");
    assert_int_equal(mkdir(root.s, 0700), 0);
    path_buf a = at(f, "state/a.json");
    assert_ok(platform_state_root_open(root.s, &err), err);
    assert_ok(platform_write_atomic(a.s, "one", 3, &err), err);
    path_buf version = at(f, "state/staging/1.0");
    assert_ok(platform_mkdirs(version.s, &err), err);

    /* The swap: the held directory renamed away, a decoy in its place. */
    assert_int_equal(rename(root.s, moved.s), 0);
    assert_int_equal(mkdir(root.s, 0700), 0);
    path_buf decoy_staging = at(f, "state/staging");
    assert_int_equal(mkdir(decoy_staging.s, 0700), 0);
    write_text(a.s, "decoy");

    assert_platform_read(a.s, "one");
    path_buf b = at(f, "state/b.json");
    assert_ok(platform_write_atomic(b.s, "two", 3, &err), err);
    assert_false(exists(b.s));
    path_buf moved_b = at(f, "moved/b.json");
    assert_true(exists(moved_b.s));
    FILE *out = platform_fopen(at(f, "state/c.txt").s, "wb");
    assert_non_null(out);
    assert_int_equal(fputs("three", out) >= 0, 1);
    assert_int_equal(fclose(out), 0);
    assert_false(exists(at(f, "state/c.txt").s));
    read_text(at(f, "moved/c.txt").s, (char[16]){0}, 16);

    char **names = NULL;
    size_t count = 0;
    assert_ok(platform_list_dir(decoy_staging.s, &names, &count, &err), err);
    assert_int_equal(count, 1);
    assert_string_equal(names[0], "1.0");
    platform_free_names(names, count);
    assert_int_equal(platform_path_stat(version.s, NULL), PLATFORM_PATH_DIR);

    path_buf b_staged = at(f, "state/staging/b.json");
    assert_ok(platform_rename(b.s, b_staged.s, &err), err);
    assert_true(exists(at(f, "moved/staging/b.json").s));
    assert_ok(platform_remove_tree(version.s, &err), err);
    assert_false(exists(at(f, "moved/staging/1.0").s));
    platform_lock *lock = NULL;
    assert_ok(platform_lock_acquire(at(f, "state/outpost.lock").s, &lock, &err), err);
    platform_lock_release(lock);
    assert_true(exists(at(f, "moved/outpost.lock").s));
    assert_false(exists(at(f, "state/outpost.lock").s));

    /* The deploy's output file and working directory are reached the same way. */
    const char *const argv[] = {"/bin/sh", "-c", "pwd", NULL};
    platform_spawn_options options = {.output_path = at(f, "state/out.log").s, .cwd = decoy_staging.s};
    platform_spawn_result result = {0};
    assert_ok(platform_spawn_with(argv, &options, 10000, &result, &err), err);
    assert_int_equal(result.exit_code, 0);
    assert_false(exists(at(f, "state/out.log").s));
    char text[PATH_MAX + 2];
    read_text(at(f, "moved/out.log").s, text, sizeof text);
    char expected[PATH_MAX + 2];
    char *real = realpath(at(f, "moved/staging").s, NULL);
    assert_non_null(real);
    snprintf(expected, sizeof expected, "%s\n", real);
    free(real);
    assert_string_equal(text, expected);

    /* A path that merely starts with the same letters is not below it. */
    path_buf sibling = at(f, "state2");
    assert_int_equal(mkdir(sibling.s, 0700), 0);
    assert_ok(platform_write_atomic(at(f, "state2/x").s, "x", 1, &err), err);
    assert_true(exists(at(f, "state2/x").s));

    /* Closed: names again. */
    platform_state_root_close();
    assert_platform_read(a.s, "decoy");
}

/* Below the held state directory a symbolic link is refused, never
 * followed, whether it is a directory on the way or the file itself, and
 * ".." does not climb out of it. */
static void test_state_root_refuses_links_below_it(void **state)
{
    fixture *f = *state;
    error_info err;
    path_buf root = at(f, "state");
    path_buf users = at(f, "users");
    assert_int_equal(mkdir(root.s, 0700), 0);
    assert_int_equal(mkdir(users.s, 0755), 0);
    write_text(at(f, "users/installer.exe").s, "the user's");
    path_buf staging = at(f, "state/staging");
    assert_int_equal(symlink(users.s, staging.s), 0);
    path_buf file_link = at(f, "state/current");
    assert_int_equal(symlink(at(f, "users/installer.exe").s, file_link.s), 0);
    assert_ok(platform_state_root_open(root.s, &err), err);

    path_buf through = at(f, "state/staging/installer.exe");
    char *data = NULL;
    assert_int_not_equal(platform_read_file(through.s, 4096, &data, NULL, &err), ERR_OK);
    assert_contains(err.message, through.s);
    assert_contains(err.message, "symbolic link");
    platform_held_file *held = NULL;
    assert_int_equal(platform_held_open(through.s, &held, &err), ERR_IO);
    assert_contains(err.message, "symbolic link");
    assert_int_not_equal(platform_write_atomic(at(f, "state/staging/new").s, "x", 1, &err), ERR_OK);
    assert_false(exists(at(f, "users/new").s));
    assert_int_not_equal(platform_mkdirs(at(f, "state/staging/2.0").s, &err), ERR_OK);
    assert_false(exists(at(f, "users/2.0").s));
    assert_null(platform_fopen(through.s, "rb"));
    assert_int_equal(errno, ELOOP);
    assert_null(platform_fopen(file_link.s, "rb"));
    assert_int_not_equal(platform_read_file(file_link.s, 4096, &data, NULL, &err), ERR_OK);
    assert_contains(err.message, "symbolic link");
    assert_int_equal(platform_path_stat(staging.s, NULL), PLATFORM_PATH_OTHER);

    /* ".." below the root is not a way out of it. */
    write_text(at(f, "outside").s, "outside");
    assert_int_not_equal(platform_read_file(at(f, "state/../outside").s, 4096, &data, NULL, &err), ERR_OK);

    /* Judged through the handle too: the link is refused, not resolved
     * to the directory it names (which would pass), and a directory below
     * that others may write is refused as ever. */
    assert_int_not_equal(platform_check_private_dir(staging.s, &err), ERR_OK);
    assert_contains(err.message, staging.s);
    assert_contains(err.message, "symbolic link");
    path_buf loose = at(f, "state/loose");
    assert_int_equal(mkdir(loose.s, 0700), 0);
    assert_int_equal(chmod(loose.s, 0777), 0);
    assert_int_equal(platform_check_private_dir(loose.s, &err), ERR_PERMISSION);
    assert_contains(err.message, loose.s);
    assert_int_equal(chmod(loose.s, 0700), 0);
    assert_ok(platform_check_private_dir(loose.s, &err), err);

    /* Removing the link removes the link, not what it points to. */
    assert_ok(platform_remove_tree(staging.s, &err), err);
    assert_true(exists(at(f, "users/installer.exe").s));
    platform_state_root_close();

    /* A state directory others may write is not taken. */
    assert_int_equal(chmod(root.s, 0777), 0);
    assert_int_equal(platform_state_root_open(root.s, &err), ERR_PERMISSION);
    assert_contains(err.message, root.s);
    assert_int_equal(platform_state_root_open(at(f, "missing").s, &err), ERR_NOT_FOUND);
}

static void test_fopen_private_and_harden(void **state)
{
    fixture *f = *state;
    path_buf part = at(f, "x.part");
    mode_t old = umask(022);
    FILE *out = platform_fopen_private(part.s, "wb");
    umask(old);
    assert_non_null(out);
    fclose(out);
    assert_int_equal(file_mode(part.s) & 0777, 0600);

    /* In a child: the hardening is for the whole process. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        platform_harden_process();
        struct rlimit core;
        if (getrlimit(RLIMIT_CORE, &core) != 0 || core.rlim_cur != 0 || core.rlim_max != 0)
            _exit(3);
#ifdef __linux__
        if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
            _exit(4);
#endif
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_private_dir_created_and_checked(void **state)
{
    fixture *f = *state;
    error_info err;
    path_buf dir = at(f, "state/deeper");
    assert_ok(platform_mkdirs_private(dir.s, &err), err);
    assert_int_equal(file_mode(dir.s) & 0077, 0);
    assert_ok(platform_check_private_dir(dir.s, &err), err);
    assert_ok(platform_mkdirs_private(dir.s, &err), err); /* existing: left as it is */

    assert_int_equal(chmod(dir.s, 0775), 0);
    assert_int_equal(platform_check_private_dir(dir.s, &err), ERR_PERMISSION);
    assert_contains(err.message, dir.s);
    assert_contains(err.message, "writable by its group");
    assert_contains(err.message, "chmod go-w");
    assert_int_equal(error_exit_code(err.code), 1);
    assert_int_equal(chmod(dir.s, 0755), 0);
    assert_ok(platform_check_private_dir(dir.s, &err), err);

    path_buf missing = at(f, "missing");
    assert_int_equal(platform_check_private_dir(missing.s, &err), ERR_NOT_FOUND);
    path_buf file = at(f, "file");
    write_text(file.s, "x");
    assert_int_equal(platform_check_private_dir(file.s, &err), ERR_IO);

    /* Another owner (needs root to arrange). */
    if (geteuid() != 0)
        return;
    assert_int_equal(chown(dir.s, 65534, 65534), 0);
    assert_int_equal(platform_check_private_dir(dir.s, &err), ERR_PERMISSION);
    assert_contains(err.message, "owned by uid 65534");
    assert_contains(err.message, "chown root:root");
}

/* ---- Threads ------------------------------------------------------------- */

#define THREADS 4
#define INCREMENTS 20000

typedef struct shared_counter {
    platform_mutex *mutex; /* guards everything below */
    platform_cond *cond;   /* signalled when go or done changes */
    long value;            /* incremented by every thread */
    bool go;               /* set by the main thread to release the workers */
    int done;              /* workers finished */
} shared_counter;

static void counter_worker(void *arg)
{
    shared_counter *c = arg;
    platform_mutex_lock(c->mutex);
    while (!c->go)
        platform_cond_wait(c->cond, c->mutex);
    platform_mutex_unlock(c->mutex);
    for (int i = 0; i < INCREMENTS; i++) {
        platform_mutex_lock(c->mutex);
        c->value++;
        platform_mutex_unlock(c->mutex);
    }
    platform_mutex_lock(c->mutex);
    c->done++;
    platform_cond_broadcast(c->cond);
    platform_mutex_unlock(c->mutex);
}

static void test_threads(void **state)
{
    (void)state;
    shared_counter c = {.mutex = platform_mutex_new(), .cond = platform_cond_new()};
    assert_non_null(c.mutex);
    assert_non_null(c.cond);
    platform_thread *threads[THREADS];
    error_info err;
    for (int i = 0; i < THREADS; i++)
        assert_ok(platform_thread_start(&threads[i], counter_worker, &c, &err), err);
    platform_mutex_lock(c.mutex);
    c.go = true;
    platform_cond_broadcast(c.cond);
    while (c.done < THREADS)
        platform_cond_wait(c.cond, c.mutex);
    platform_mutex_unlock(c.mutex);
    for (int i = 0; i < THREADS; i++)
        platform_thread_join(threads[i]);
    assert_int_equal(c.value, (long)THREADS * INCREMENTS);
    platform_cond_free(c.cond);
    platform_mutex_free(c.mutex);
    platform_cond_free(NULL);
    platform_mutex_free(NULL);
}

/* ---- Host and environment ------------------------------------------------ */

static void test_host_facts(void **state)
{
    (void)state;
    char name[256];
    platform_hostname(name, sizeof name);
    assert_true(strlen(name) > 0);
    char real[256] = "";
    if (gethostname(real, sizeof real - 1) == 0 && real[0])
        assert_string_equal(name, real);
    char tiny[4] = "xxx";
    platform_hostname(tiny, sizeof tiny);
    assert_true(strlen(tiny) <= 3 && strlen(tiny) > 0);
    char one[1] = {'x'};
    platform_hostname(one, sizeof one);
    assert_int_equal(one[0], '\0');

    const char *os = platform_os_name();
    const char *arch = platform_arch();
    assert_non_null(os);
    assert_non_null(arch);
    for (const char *p = os; *p; p++)
        assert_false(*p >= 'A' && *p <= 'Z');
#ifdef __linux__
    assert_string_equal(os, "linux");
#endif
    struct utsname u;
    assert_int_equal(uname(&u), 0);
    static const struct {
        const char *machine, *arch;
    } arches[] = {
        {"x86_64", "x86_64"}, {"amd64", "x86_64"}, {"aarch64", "aarch64"}, {"arm64", "aarch64"}, {"i686", "x86"},
    };
    const char *want = u.machine;
    for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
        if (strcmp(u.machine, arches[i].machine) == 0)
            want = arches[i].arch;
    assert_string_equal(arch, want);
    assert_ptr_equal(platform_os_name(), os); /* read once, stable */
}

static void test_environment(void **state)
{
    fixture *f = *state;
    assert_int_equal(setenv("OUTPOST_TEST_VALUE", "caf\xc3\xa9", 1), 0);
    assert_string_equal(platform_getenv("OUTPOST_TEST_VALUE"), "caf\xc3\xa9");
    assert_int_equal(unsetenv("OUTPOST_TEST_VALUE"), 0);
    assert_null(platform_getenv("OUTPOST_TEST_VALUE"));

    path_buf p = at(f, "not-a-tty");
    FILE *fp = fopen(p.s, "w");
    assert_non_null(fp);
    assert_false(platform_is_terminal(fp));
    fclose(fp);
    assert_false(platform_is_terminal(NULL));

    char *config_path = platform_default_config_path();
    char *state_dir = platform_default_state_dir();
    assert_string_equal(config_path, "/etc/outpost/outpost.json");
    assert_string_equal(state_dir, "/var/lib/outpost");
    free(config_path);
    free(state_dir);

    error_info err;
    char *version = (char *)"untouched";
    assert_int_equal(platform_installed_version("Security Sensor", &version, &err), ERR_NOT_FOUND);
    assert_contains(err.message, "no software inventory");
    assert_string_equal(version, "untouched");
}

/* ---- Paths and whole files (common.c) ------------------------------------------ */

static void test_path_dir(void **state)
{
    (void)state;
    static const struct {
        const char *path, *dir;
    } cases[] = {
        {"/a/b/c.txt", "/a/b"}, {"a/b", "a"},  {"b", "."},        {"/x", "/"},
        {"//x", "/"},           {"a//b", "a"}, {"/a/b/", "/a/b"}, {"", "."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir = platform_path_dir(cases[i].path);
        assert_non_null(dir);
        if (strcmp(dir, cases[i].dir) != 0)
            fail_msg("platform_path_dir(\"%s\") = \"%s\", expected \"%s\"", cases[i].path, dir, cases[i].dir);
        free(dir);
    }
}

static void test_temp_name(void **state)
{
    fixture *f = *state;
    path_buf p = at(f, "out.zip");
    char *a = NULL, *b = NULL;
    error_info err;
    assert_ok(platform_temp_name(p.s, &a, &err), err);
    assert_ok(platform_temp_name(p.s, &b, &err), err);
    size_t n = strlen(p.s);
    assert_int_equal(strlen(a), n + 1 + 16 + 4);
    assert_memory_equal(a, p.s, n);
    assert_int_equal(a[n], '.');
    char digits[17];
    memcpy(digits, a + n + 1, 16);
    digits[16] = '\0';
    assert_true(text_is_hex(digits, 16, true));
    assert_string_equal(a + n + 17, ".tmp");
    assert_string_not_equal(a, b);
    free(a);
    free(b);
}

static void count_bytes(void *user, const void *data, size_t len)
{
    (void)data;
    *(size_t *)user += len;
}

/* POSIX names no identity for -v (GSS-API's principal is the keytab's or
 * the credentials cache's); the buffer is left empty, never stale. */
static void test_proxy_identity_posix(void **state)
{
    (void)state;
    char name[16] = "stale";
    assert_false(platform_proxy_identity(name, sizeof name));
    assert_string_equal(name, "");
}

static void test_copy_file(void **state)
{
    fixture *f = *state;
    path_buf from = at(f, "from.bin"), to = at(f, "to.bin");
    /* more than one chunk of the copy and two writeback stretches
     * (platform_start_writeback every 8 MiB), a multiple of neither */
    size_t len = 17 * 1024 * 1024 + 7;
    unsigned char *data = malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (unsigned char)(i * 31 + 7);
    write_file(from.s, data, len, 0600);
    write_file(to.s, "old and longer than nothing", 27, 0600);
    size_t observed = 0;
    error_info err;
    assert_ok(platform_copy_file(from.s, to.s, count_bytes, &observed, &err), err);
    char *copy = NULL;
    size_t copy_len = 0;
    assert_ok(platform_read_file(to.s, len + 1, &copy, &copy_len, &err), err);
    assert_int_equal(copy_len, len);
    assert_memory_equal(copy, data, len);
    assert_int_equal(observed, len); /* every byte shown to the observer */
    free(copy);
    free(data);

    /* A missing source: not found, errno kept, the file named. */
    path_buf missing = at(f, "missing.bin"), to2 = at(f, "to2.bin");
    assert_int_equal(platform_copy_file(missing.s, to2.s, NULL, NULL, &err), ERR_NOT_FOUND);
    assert_int_equal(err.os_error, ENOENT);
    assert_contains(err.message, "missing.bin");
    assert_int_equal(platform_path_stat(to2.s, NULL), PLATFORM_PATH_NONE);

    /* A destination that cannot be created: the reason, and nothing left behind. */
    path_buf nodir = at(f, "no/such/dir/x.bin");
    assert_int_not_equal(platform_copy_file(from.s, nodir.s, NULL, NULL, &err), ERR_OK);
    assert_int_equal(err.os_error, ENOENT);
    assert_contains(err.message, "cannot create");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_path_join),
        T(test_path_stat),
        T(test_write_atomic_creates_and_replaces),
        cmocka_unit_test(test_path_dir),
        cmocka_unit_test(test_proxy_identity_posix),
        T(test_temp_name),
        T(test_copy_file),
        T(test_write_atomic_errors),
        T(test_write_atomic_survives_kill),
        T(test_rename),
        T(test_read_file),
        T(test_read_file_stops_at_cap),
        T(test_read_file_from_fifo),
        T(test_open_regular),
        T(test_remove_file),
        T(test_mkdirs),
        T(test_remove_tree_does_not_follow_links),
        T(test_list_dir),
        T(test_free_space),
        T(test_secret_file),
        T(test_fopen_and_fsync),
        T(test_append),
        T(test_file_offsets_past_2gib),
        T(test_os_error_table),
        T(test_lock_is_exclusive),
        T(test_lock_dies_with_holder),
        T(test_clocks_and_sleep),
        T(test_random_bytes),
        T(test_spawn_exit_codes),
        T(test_spawn_timeout_kills_tree),
        T(test_spawn_errors),
        T(test_spawn_stdin_and_descriptors),
        T(test_spawn_env_and_foreign_descriptors),
        T(test_dir_trust_rules),
        T(test_private_dir_created_and_checked),
        T(test_parent_and_file_trust_rules),
        T(test_private_dir_parents),
        T(test_trusted_file),
        T(test_links_judged_where_they_live),
        T(test_read_trusted_file),
        T(test_hold_dir_of),
        T(test_spawn_held_program),
        T(test_fopen_private_and_harden),
        T(test_state_root_is_not_redirected),
        T(test_hold_dir_of_a_feed_folder),
        T(test_state_root_refuses_links_below_it),
        T(test_threads),
        T(test_host_facts),
        T(test_environment),
    };
#undef T
    return cmocka_run_group_tests_name("platform", tests, NULL, NULL);
}
