/*
 * power.c — whether the machine runs on battery (platform.h, "Power"), for
 * installer.defer_on "battery": GetSystemPowerStatus's AC line status on a
 * machine with a system battery (platform_power_status_on_battery, in
 * platform/powercost.c). Unknown counts as mains.
 */
#include "platform/win32/win32_int.h"

#include <stdio.h>

bool platform_on_battery(char *detail, size_t size)
{
    SYSTEM_POWER_STATUS power;
    if (!GetSystemPowerStatus(&power)) {
        snprintf(detail, size, "the power status cannot be read (error %lu): mains power",
                 (unsigned long)GetLastError());
        return false;
    }
    return platform_power_status_on_battery(power.ACLineStatus, power.BatteryFlag, power.BatteryLifePercent, detail,
                                            size);
}
