/* inventory.c — the inventory values from the status document (see inventory.h). */
#include "report/inventory.h"

#include <string.h>

#include <cjson/cJSON.h>

static const char *text_at(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static platform_inventory_value number_value(const char *name, const cJSON *n)
{
    return (platform_inventory_value){
        .name = name, .is_number = cJSON_IsNumber(n), .number = cJSON_IsNumber(n) ? (uint32_t)n->valuedouble : 0};
}

/* status.json's "deploy" (installer/policy.h) as the ten Deploy* values. */
static void deploy_values(const cJSON *dep, platform_inventory_value *out)
{
    const cJSON *last = cJSON_GetObjectItemCaseSensitive(dep, "last_deploy");
    const cJSON *reboot = cJSON_GetObjectItemCaseSensitive(dep, "reboot_required");
    out[0] = (platform_inventory_value){.name = "DeployState", .text = text_at(dep, "state")};
    out[1] = (platform_inventory_value){.name = "DeployStateSince", .text = text_at(dep, "since")};
    out[2] = (platform_inventory_value){.name = "DeployWaitingUntil", .text = text_at(dep, "waiting_until")};
    out[3] = (platform_inventory_value){.name = "DeployDeferredReason",
                                        .text = text_at(cJSON_GetObjectItemCaseSensitive(dep, "deferred"), "reason")};
    out[4] = (platform_inventory_value){
        .name = "RebootRequired", .is_number = cJSON_IsBool(reboot), .number = cJSON_IsTrue(reboot) ? 1 : 0};
    out[5] = (platform_inventory_value){.name = "LastDeployVersion", .text = text_at(last, "version")};
    out[6] = (platform_inventory_value){.name = "LastDeployTime", .text = text_at(last, "at")};
    out[7] = number_value("LastDeployExitCode", cJSON_GetObjectItemCaseSensitive(last, "exit_code"));
    out[8] = (platform_inventory_value){.name = "TargetVersionPrefix", .text = text_at(dep, "target_version_prefix")};
    out[9] = (platform_inventory_value){.name = "NotTakenVersion",
                                        .text = text_at(cJSON_GetObjectItemCaseSensitive(dep, "not_taken"), "version")};
}

void inventory_values(const cJSON *doc, const status_verdict *v, platform_inventory_value out[INVENTORY_VALUES])
{
    const cJSON *inst = cJSON_GetObjectItemCaseSensitive(doc, "installer");
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(doc, "last_run");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(run, "exit_code");
    memset(out, 0, INVENTORY_VALUES * sizeof *out);
    out[0] = (platform_inventory_value){.name = "InstalledVersion", .text = text_at(inst, "installed_version")};
    out[1] = (platform_inventory_value){.name = "StagedVersion",
                                        .text = text_at(cJSON_GetObjectItemCaseSensitive(inst, "staged"), "version")};
    out[2] = (platform_inventory_value){.name = "OfferedVersion", .text = text_at(inst, "latest_version")};
    out[3] = (platform_inventory_value){.name = "LastRunTime", .text = text_at(run, "finished_at")};
    out[4] = number_value("LastExitCode", code);
    out[5] = (platform_inventory_value){.name = "Verdict", .text = v->attention ? "ATTENTION" : "OK"};
    out[6] = (platform_inventory_value){.name = "VerdictText", .text = v->text};
    deploy_values(cJSON_GetObjectItemCaseSensitive(doc, "deploy"), out + 7);
}
