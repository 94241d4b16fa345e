/*
 * power.c — whether the machine runs on battery (platform.h, "Power"), for
 * installer.defer_on "battery": GetSystemPowerStatus's AC line status on a
 * machine with a system battery. Unknown counts as mains.
 */
#include "platform/win32/win32_int.h"

#include <stdio.h>

bool platform_on_battery(char *detail, size_t size)
{
    char scratch[8];
    if (!detail || size == 0) {
        detail = scratch;
        size = sizeof scratch;
    }
    SYSTEM_POWER_STATUS power;
    if (!GetSystemPowerStatus(&power)) {
        snprintf(detail, size, "the power status cannot be read (error %lu): mains power",
                 (unsigned long)GetLastError());
        return false;
    }
    /* BatteryFlag 128: no system battery; ACLineStatus 0 offline, 1 online, 255 unknown. */
    if (power.BatteryFlag == 128) {
        snprintf(detail, size, "no system battery");
        return false;
    }
    if (power.ACLineStatus != 0) {
        snprintf(detail, size, power.ACLineStatus == 1 ? "AC power online" : "AC power unknown: mains power");
        return false;
    }
    if (power.BatteryLifePercent <= 100)
        snprintf(detail, size, "on battery, %u%% left", (unsigned)power.BatteryLifePercent);
    else
        snprintf(detail, size, "on battery");
    return true;
}
