/*
 * powercost.c — the rules installer.defer_on judges the Windows answers by
 * (platform.h, "Power" and "Network cost"): the network list manager's cost
 * flags and GetSystemPowerStatus's fields, as numbers. Written once, beside
 * both halves, so that the same unit tests judge them on Linux and under
 * wine; win32/netcost.c and win32/power.c ask the system and call these.
 */
#include "platform/platform.h"

#include <stdio.h>

/* netlistmgr.h's NLM_CONNECTION_COST values (documented, stable). */
enum {
    COST_UNRESTRICTED = 0x1,
    COST_FIXED = 0x2,
    COST_VARIABLE = 0x4,
    COST_OVERDATALIMIT = 0x10000,
    COST_ROAMING = 0x40000,
};

bool platform_cost_metered(uint32_t cost, char *detail, size_t size)
{
    /* Windows Update's reading: a fixed or variable plan (a connection set
     * as metered, a mobile plan), roaming or over the data limit is metered;
     * unrestricted, or nothing known, is not. */
    bool metered = (cost & (COST_FIXED | COST_VARIABLE | COST_OVERDATALIMIT | COST_ROAMING)) != 0;
    snprintf(detail, size, "network cost 0x%lx (%s)", (unsigned long)cost,
             metered                           ? "metered"
             : (cost & COST_UNRESTRICTED) != 0 ? "unrestricted"
                                               : "unknown: not metered");
    return metered;
}

bool platform_power_status_on_battery(unsigned ac_line, unsigned battery_flag, unsigned percent, char *detail,
                                      size_t size)
{
    /* BatteryFlag 128: no system battery (255: unknown); ACLineStatus 0
     * offline, 1 online, 255 unknown. Only a known offline line on a
     * machine with a battery is battery power. */
    if (battery_flag == 128) {
        snprintf(detail, size, "no system battery");
        return false;
    }
    if (ac_line != 0) {
        snprintf(detail, size, ac_line == 1 ? "AC power online" : "AC power unknown: mains power");
        return false;
    }
    if (percent <= 100)
        snprintf(detail, size, "on battery, %u%% left", percent);
    else
        snprintf(detail, size, "on battery");
    return true;
}
