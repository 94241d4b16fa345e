/*
 * schedtask.c — the Task Scheduler task that runs outpost (`outpost service
 * install|uninstall`): registered from its XML definition and removed by
 * %SystemRoot%\System32\schtasks.exe, run by its full path. The POSIX twin
 * refuses both, naming the systemd timer.
 */
#include "platform/win32/win32_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs schtasks.exe with args (after the program), waiting up to a minute.
 * Its output goes to ours. *exit_code is its exit status. */
static MUST_CHECK error_code run_schtasks(const char *const args[], int *exit_code, error_info *err)
{
    char *exe = platform_system_program("schtasks.exe"); /* never looked up in PATH */
    if (!exe)
        return error_set(err, ERR_SPAWN, "cannot find schtasks.exe in the system directory");
    const char *argv[12] = {exe};
    size_t n = 1;
    for (; args[n - 1] && n < sizeof argv / sizeof argv[0] - 1; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    platform_spawn_result result = {0};
    error_code rc = platform_spawn(argv, 60000, &result, err);
    free(exe);
    if (rc != ERR_OK)
        return rc;
    if (result.timed_out)
        return error_set(err, ERR_SPAWN,
                         "schtasks.exe did not finish within a minute; the task may be half registered");
    *exit_code = result.exit_code;
    return ERR_OK;
}

error_code platform_task_register(const char *name, const char *xml, error_info *err)
{
    /* schtasks /XML reads UTF-16 with a byte-order mark. */
    wchar_t *wide = win32_widen(xml);
    if (!wide)
        return error_set(err, ERR_INTERNAL, "the task definition is not valid UTF-8");
    size_t chars = wcslen(wide);
    unsigned char *bytes = malloc(2 + chars * 2);
    if (!bytes) {
        free(wide);
        return win32_fail_nomem(err);
    }
    bytes[0] = 0xff;
    bytes[1] = 0xfe;
    for (size_t i = 0; i < chars; i++) {
        bytes[2 + 2 * i] = (unsigned char)(wide[i] & 0xff);
        bytes[3 + 2 * i] = (unsigned char)(wide[i] >> 8);
    }
    free(wide);

    /* A fresh, owner-only file: nobody else may swap the definition of a
     * SYSTEM task between this write and schtasks reading it. */
    wchar_t temp_dir[MAX_PATH + 1];
    DWORD n = GetTempPathW(MAX_PATH + 1, temp_dir);
    char *dir = n > 0 && n <= MAX_PATH ? win32_narrow_n(temp_dir, (int)n) : NULL;
    unsigned char rnd[8] = {0};
    if (platform_random_bytes(rnd, sizeof rnd, err) != ERR_OK) {
        free(dir);
        free(bytes);
        return error_prefix(err, "cannot register the scheduled task %s", name);
    }
    char file_name[64];
    snprintf(file_name, sizeof file_name, "outpost-task-%02x%02x%02x%02x%02x%02x%02x%02x.xml", rnd[0], rnd[1], rnd[2],
             rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    char *file = dir ? platform_path_join(dir, file_name) : NULL;
    free(dir);
    if (!file) {
        free(bytes);
        return error_set(err, ERR_IO, "cannot register the scheduled task %s: no temporary directory", name);
    }
    error_code rc = platform_write_new_file(file, bytes, 2 + chars * 2, true, err);
    free(bytes);
    if (rc != ERR_OK) {
        free(file);
        return error_prefix(err, "cannot register the scheduled task");
    }
    const char *args[] = {"/Create", "/TN", name, "/XML", file, "/F", NULL};
    int code = 0;
    rc = run_schtasks(args, &code, err);
    ERROR_IGNORE(platform_remove_file(file, NULL)); /* a stray temp file must not fail a registered task */
    free(file);
    if (rc == ERR_OK && code != 0)
        rc = error_set(err, ERR_SPAWN,
                       "schtasks /Create /TN %s failed with exit code %d (its message is above); registering a "
                       "SYSTEM task needs an elevated prompt",
                       name, code);
    return rc;
}

error_code platform_task_delete(const char *name, error_info *err)
{
    const char *args[] = {"/Delete", "/TN", name, "/F", NULL};
    int code = 0;
    error_code rc = run_schtasks(args, &code, err);
    if (rc != ERR_OK || code == 0)
        return rc;
    /* schtasks says "cannot find the file" for a missing task with the same
     * exit code as for a refusal: the task store (System32\Tasks, one file
     * per task) tells them apart. */
    char *tasks = platform_system_program("Tasks");
    char *stored = tasks ? platform_path_join(tasks, name[0] == '\\' ? name + 1 : name) : NULL;
    bool exists = !stored || platform_path_stat(stored, NULL) != PLATFORM_PATH_NONE;
    free(tasks);
    free(stored);
    if (!exists)
        return ERR_OK;
    return error_set(err, ERR_SPAWN,
                     "schtasks /Delete /TN %s failed with exit code %d (its message is above); removing a SYSTEM "
                     "task needs an elevated prompt",
                     name, code);
}
