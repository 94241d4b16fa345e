/*
 * inventory.h — what `run` leaves where Windows inventory tools look
 * (PRODUCT.md section 10): the values SCCM/Intune detection rules and
 * hardware inventory read under HKLM\SOFTWARE\outpost, taken from the
 * status document and its verdict. The choice is here (unit-tested); the
 * registry write is platform_inventory_write.
 */
#ifndef OUTPOST_INVENTORY_H
#define OUTPOST_INVENTORY_H

#include "platform/platform.h"
#include "report/status.h"

#define INVENTORY_VALUES 17

/*
 * Fills out[INVENTORY_VALUES]: InstalledVersion, StagedVersion and
 * OfferedVersion (the installer the platform or mirror offers), LastRunTime
 * (last_run.finished_at, UTC), LastExitCode (REG_DWORD), Verdict ("OK" or
 * "ATTENTION") and VerdictText (the `status` line); from the "deploy"
 * member (the fleet policy, PRODUCT.md section 11): DeployState ("idle",
 * "pending", "waiting_for_window", "deferred", "reboot_required",
 * "failed", "disabled"), DeployStateSince, DeployWaitingUntil (UTC),
 * DeployDeferredReason ("metered", "battery"), RebootRequired (REG_DWORD
 * 0 or 1), LastDeployVersion, LastDeployTime, LastDeployExitCode
 * (REG_DWORD), TargetVersionPrefix and NotTakenVersion (the last offer the
 * pin refused). A member the document lacks deletes its value (text NULL),
 * so no stale value stays behind. The texts are borrowed from doc and v:
 * use out before freeing either.
 */
void inventory_values(const struct cJSON *doc, const status_verdict *v, platform_inventory_value out[INVENTORY_VALUES]);

#endif
