/* inventory.c — the inventory values from the status document (see inventory.h). */
#include "report/inventory.h"

#include <string.h>

#include <cjson/cJSON.h>

static const char *text_at(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
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
    out[4] = (platform_inventory_value){.name = "LastExitCode",
                                        .is_number = cJSON_IsNumber(code),
                                        .number = cJSON_IsNumber(code) ? (uint32_t)code->valuedouble : 0};
    out[5] = (platform_inventory_value){.name = "Verdict", .text = v->attention ? "ATTENTION" : "OK"};
    out[6] = (platform_inventory_value){.name = "VerdictText", .text = v->text};
}
