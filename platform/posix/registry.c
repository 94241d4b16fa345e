/*
 * registry.c — POSIX has no registry: the two calls the Win32 twin answers
 * from it find nothing here. There is no software inventory to ask for the
 * sensor's installed version (installer.installed_version or
 * installed_version_file say it, else the last version outpost deployed),
 * and status.json is the inventory that the Windows values under
 * HKLM\SOFTWARE\outpost stand for.
 */
#include "platform/posix/posix_int.h"

error_code platform_installed_version(const char *display_name, char **version, error_info *err)
{
    return error_set(err, ERR_NOT_FOUND,
                     "cannot read the installed version of %s: no software inventory on this platform", display_name);
}

error_code platform_inventory_write(const platform_inventory_value *values, size_t count, error_info *err)
{
    (void)values;
    (void)count;
    (void)err;
    return ERR_OK;
}
