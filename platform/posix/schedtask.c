/*
 * schedtask.c — POSIX has no Task Scheduler: systemd (or cron) runs outpost
 * here, through the Debian package's outpost.service and outpost.timer, so
 * `outpost service install|uninstall` is refused with a pointer to them.
 */
#include "platform/posix/posix_int.h"

/* systemd (or cron) schedules outpost here: the Debian package ships
 * outpost.service and outpost.timer. */
static MUST_CHECK error_code no_task_scheduler(const char *name, error_info *err)
{
    return error_set(err, ERR_NOT_IMPLEMENTED,
                     "cannot manage the scheduled task %s: there is no Windows Task Scheduler here; on Linux "
                     "the Debian package's outpost.timer runs outpost (systemctl enable --now outpost.timer)",
                     name);
}

error_code platform_task_register(const char *name, const char *xml, error_info *err)
{
    (void)xml;
    return no_task_scheduler(name, err);
}

error_code platform_task_delete(const char *name, error_info *err)
{
    return no_task_scheduler(name, err);
}
