/*
 * host.c — facts about this machine (platform.h, "Host"): its name, OS and
 * architecture (uname, read once), the current boot, its machine id
 * (/etc/machine-id), the environment, whether a stream is a terminal, and
 * where outpost keeps its configuration and state by default. (The CPU's
 * instructions are platform/cpu.c's.)
 */
#include "platform/posix/posix_int.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

void platform_hostname(char *buf, size_t size)
{
    if (!buf || size == 0)
        return;
    char name[256 + 1]; /* POSIX: host names are at most 255 bytes */
    if (gethostname(name, sizeof name - 1) != 0)
        name[0] = '\0';
    name[sizeof name - 1] = '\0';
    snprintf(buf, size, "%s", name[0] ? name : "unknown");
}

/* uname() facts, read once: os name lowercased, arch mapped to our names. */
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char host_os[sizeof(((struct utsname *)0)->sysname)];
static char host_arch[sizeof(((struct utsname *)0)->machine)];

static const char *const arch_names[][2] = {
    /* uname().machine   status.json agent.arch */
    {"x86_64", "x86_64"}, {"amd64", "x86_64"}, {"i386", "x86"},   {"i486", "x86"},
    {"i586", "x86"},      {"i686", "x86"},     {"i86pc", "x86"},  {"aarch64", "aarch64"},
    {"arm64", "aarch64"}, {"armv6l", "arm"},   {"armv7l", "arm"}, {"armv8l", "arm"},
};

static void host_read(void)
{
    struct utsname u;
    if (uname(&u) != 0) {
        snprintf(host_os, sizeof host_os, "unknown");
        snprintf(host_arch, sizeof host_arch, "unknown");
        return;
    }
    size_t i;
    for (i = 0; u.sysname[i] && i + 1 < sizeof host_os; i++)
        host_os[i] = (char)tolower((unsigned char)u.sysname[i]);
    host_os[i] = '\0';
    snprintf(host_arch, sizeof host_arch, "%s", u.machine);
    for (i = 0; i < sizeof arch_names / sizeof arch_names[0]; i++) {
        if (strcmp(u.machine, arch_names[i][0]) == 0) {
            snprintf(host_arch, sizeof host_arch, "%s", arch_names[i][1]);
            break;
        }
    }
}

const char *platform_os_name(void)
{
    pthread_once(&host_once, host_read);
    return host_os[0] ? host_os : "unknown";
}

const char *platform_arch(void)
{
    pthread_once(&host_once, host_read);
    return host_arch[0] ? host_arch : "unknown";
}

const char *platform_getenv(const char *name)
{
    return getenv(name);
}

bool platform_is_terminal(FILE *stream)
{
    if (!stream)
        return false;
    int fd = fileno(stream);
    return fd >= 0 && isatty(fd) == 1;
}

char *platform_default_config_path(void)
{
    return strdup("/etc/outpost/outpost.json");
}

char *platform_default_state_dir(void)
{
    return strdup("/var/lib/outpost");
}

void posix_read_first_line(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (!fgets(buf, (int)size, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
}

void platform_boot_id(char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = '\0';
#ifdef __linux__
    posix_read_first_line("/proc/sys/kernel/random/boot_id", buf, size);
#endif
}

error_code platform_machine_id(char *buf, size_t size, error_info *err)
{
    static const char *const files[] = {"/etc/machine-id", "/var/lib/dbus/machine-id"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *text = NULL;
        size_t len = 0;
        if (platform_read_file(files[i], 4096, &text, &len, NULL) != ERR_OK)
            continue;
        char *start = text;
        while (*start && isspace((unsigned char)*start))
            start++;
        size_t n = strlen(start);
        while (n > 0 && isspace((unsigned char)start[n - 1]))
            n--;
        if (n > 0 && n < size) {
            memcpy(buf, start, n);
            buf[n] = '\0';
            free(text);
            return ERR_OK;
        }
        free(text);
    }
    return error_set(err, ERR_NOT_FOUND, "this machine has no machine id (/etc/machine-id is missing or empty)");
}
