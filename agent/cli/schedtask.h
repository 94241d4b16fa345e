/*
 * schedtask.h — the Windows Task Scheduler definition of outpost's
 * scheduled run (`\outpost\run`), written here in portable C so that the
 * one definition the MSI registers (through `outpost service install`) is
 * unit-tested on every platform. platform_task_register hands it to
 * schtasks.exe.
 */
#ifndef OUTPOST_SCHEDTASK_H
#define OUTPOST_SCHEDTASK_H

#include "base/error.h"

/* The task's path in the Task Scheduler library. */
#define SCHEDTASK_NAME "\\outpost\\run"

/*
 * The task definition as Task Scheduler XML (schema 1.2, Windows 7 and
 * later), UTF-8 text whose declaration says UTF-16: platform_task_register
 * converts it, as schtasks /XML expects. The task runs
 * `"<exe_path>" [-c "<config_path>"] run` as SYSTEM (highest privileges),
 * hourly from a fixed start boundary with a random delay of up to 10
 * minutes, starts a missed run when the machine is back, runs on battery,
 * stops a run after 2 hours, and ignores a new start while one runs (outpost's
 * own lock would refuse it with exit 5 anyway). config_path may be NULL (the
 * default configuration). Paths are XML-escaped; a path holding a double
 * quote or a control character, which no Windows path can hold, is
 * ERR_USAGE. *xml is malloc'd.
 */
MUST_CHECK error_code schedtask_xml(const char *exe_path, const char *config_path, char **xml, error_info *err);

#endif
