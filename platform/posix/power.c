/*
 * power.c — whether the machine runs on battery (platform.h, "Power"), for
 * installer.defer_on "battery". Linux reads /sys/class/power_supply: each
 * entry's "type", a supply's "online", a battery's "status" and "scope"
 * (a mouse's or a headset's battery is scope "Device" and says nothing
 * about the machine). Elsewhere nothing is known, which counts as mains.
 *
 * OUTPOST_POWER_SUPPLY_DIR names another directory laid out like
 * /sys/class/power_supply, for the tests' fake laptops. It is read once, on
 * the first question, and honoured only for a process running as root and a
 * directory owned by root that nobody else may write: it cannot make a
 * machine that is on mains look like one on battery (or the reverse) by
 * the hand of anyone who could not already stop outpost.
 */
#include "platform/posix/posix_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define POWER_SUPPLY_DIR "/sys/class/power_supply"

#ifdef __linux__
/* The directory read: POWER_SUPPLY_DIR, or the override when it may be honoured. */
static const char *supply_dir(void)
{
    static char dir[512];
    if (dir[0])
        return dir;
    const char *override = getenv("OUTPOST_POWER_SUPPLY_DIR");
    struct stat st;
    bool honoured = override && override[0] && strlen(override) < sizeof dir && geteuid() == 0 &&
                    lstat(override, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022);
    snprintf(dir, sizeof dir, "%s", honoured ? override : POWER_SUPPLY_DIR);
    return dir;
}

/* The first line of the supply directory's name/attribute into buf ("" when absent). */
static void read_attribute(const char *name, const char *attribute, char *buf, size_t size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", supply_dir(), name, attribute);
    posix_read_first_line(path, buf, size);
}
#endif

bool platform_on_battery(char *detail, size_t size)
{
#ifdef __linux__
    char **names = NULL;
    size_t count = 0;
    if (platform_list_dir(supply_dir(), &names, &count, NULL) != ERR_OK || count == 0) {
        snprintf(detail, size, "no power supply in %s: mains power", supply_dir());
        return false;
    }
    const char *supply = NULL, *discharging = NULL;
    for (size_t i = 0; i < count; i++) {
        char type[32], value[32];
        read_attribute(names[i], "type", type, sizeof type);
        if (strcmp(type, "Battery") == 0) {
            read_attribute(names[i], "scope", value, sizeof value);
            if (strcmp(value, "Device") == 0)
                continue;
            read_attribute(names[i], "status", value, sizeof value);
            if (strcmp(value, "Discharging") == 0 && !discharging)
                discharging = names[i];
        } else if (type[0]) { /* Mains, USB, UPS, ... */
            read_attribute(names[i], "online", value, sizeof value);
            if (strcmp(value, "1") == 0 && !supply)
                supply = names[i];
        }
    }
    bool on_battery = discharging && !supply;
    if (supply)
        snprintf(detail, size, "%s online", supply);
    else if (discharging)
        snprintf(detail, size, "%s discharging, no power supply online", discharging);
    else
        snprintf(detail, size, "no battery discharging");
    platform_free_names(names, count);
    return on_battery;
#else
    snprintf(detail, size, "the power source is not known on this system: mains power");
    return false;
#endif
}
