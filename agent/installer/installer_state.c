/*
 * installer_state.c — the members of state section "installer"
 * (installer_state.h). Each setter builds its value completely before it
 * touches the section, so out of memory leaves the member as it was.
 */
#include "installer/installer_state.h"

#include <string.h>

#include <cjson/cJSON.h>

#include "core/jsonx.h"
#include "core/log.h"
#include "core/timefmt.h"
#include "platform/platform.h"

#define SECTION "installer"

static MUST_CHECK error_code oom(error_info *err)
{
    return error_set(err, ERR_NOMEM, "out of memory");
}

static const cJSON *member(state *s, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), name);
}

static const char *string_member(state *s, const char *name)
{
    return jsonx_string(NULL, state_section(s, SECTION), name);
}

static const cJSON *object_member(state *s, const char *name)
{
    const cJSON *v = member(s, name);
    return cJSON_IsObject(v) ? v : NULL;
}

/* Replaces name in place, or adds it at the end; takes value. */
static MUST_CHECK error_code replace_in_place(state *s, const char *name, cJSON *value, error_info *err)
{
    return jsonx_set(state_section(s, SECTION), name, value) ? ERR_OK : oom(err);
}

/* Removes name and adds value at the end; takes value. name is a string
 * literal: added as a constant key, the add allocates nothing, so it cannot
 * fail after the old value is gone. */
static MUST_CHECK error_code replace_at_end(state *s, const char *name, cJSON *value, error_info *err)
{
    cJSON *section = state_section(s, SECTION);
    if (!section || !value) {
        cJSON_Delete(value);
        return oom(err);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(section, name);
    cJSON_AddItemToObjectCS(section, name, value);
    return ERR_OK;
}

static void remove_member(state *s, const char *name)
{
    cJSON_DeleteItemFromObjectCaseSensitive(state_section(s, SECTION), name);
}

/* ---- check / update ---------------------------------------------------------- */

error_code installer_state_set_latest(state *s, const char *latest_version, const char *checked_at,
                                      bool update_available, error_info *err)
{
    error_code rc = replace_in_place(s, "latest_version", cJSON_CreateString(latest_version), err);
    if (rc == ERR_OK)
        rc = replace_in_place(s, "checked_at", cJSON_CreateString(checked_at), err);
    if (rc == ERR_OK)
        rc = replace_in_place(s, "update_available", cJSON_CreateBool(update_available), err);
    return rc;
}

const char *installer_state_latest_version(state *s)
{
    return string_member(s, "latest_version");
}

const char *installer_state_checked_at(state *s)
{
    return string_member(s, "checked_at");
}

/* ---- last_command ------------------------------------------------------------------ */

error_code installer_state_set_last_command(state *s, const char *command, const char *at, int exit_code,
                                            const char *error, error_info *err)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddStringToObject(o, "command", command) && cJSON_AddStringToObject(o, "at", at) &&
              cJSON_AddNumberToObject(o, "exit_code", exit_code) &&
              (error ? cJSON_AddStringToObject(o, "error", error) != NULL : cJSON_AddNullToObject(o, "error") != NULL);
    if (!ok) {
        cJSON_Delete(o);
        return oom(err);
    }
    return replace_at_end(s, "last_command", o, err);
}

const cJSON *installer_state_last_command(state *s)
{
    return object_member(s, "last_command");
}

void installer_state_note_outcome(state *s, const char *command, error_code rc, int exit_code, const error_info *err)
{
    char at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, at);
    const char *error = rc == ERR_OK ? NULL : err && err->message[0] ? err->message : error_meaning(rc);
    error_info why;
    if (installer_state_set_last_command(s, command, at, rc == ERR_OK ? exit_code : error_exit_code(rc), error, &why) !=
        ERR_OK)
        log_warn("cannot record the command's outcome in the state: %s", why.message);
}

/* ---- deploy ------------------------------------------------------------------------ */

error_code installer_state_set_deployed(state *s, const deploy_outcome *out, const char *at, const char *boot_id,
                                        error_info *err)
{
    cJSON *deployed = cJSON_CreateObject();
    cJSON *version = cJSON_CreateString(out->version);
    /* `status` compares boot_id with the running boot: a reboot clears "reboot required". */
    bool ok =
        deployed && version && cJSON_AddStringToObject(deployed, "version", out->version) &&
        cJSON_AddStringToObject(deployed, "at", at) && cJSON_AddNumberToObject(deployed, "exit_code", out->exit_code) &&
        cJSON_AddBoolToObject(deployed, "reboot_required", out->reboot_required) &&
        cJSON_AddStringToObject(deployed, "verified", out->verified) &&
        cJSON_AddStringToObject(deployed, "log", out->log) && cJSON_AddStringToObject(deployed, "boot_id", boot_id);
    if (!ok) {
        cJSON_Delete(deployed);
        cJSON_Delete(version);
        return oom(err);
    }
    error_code rc = replace_at_end(s, "deployed", deployed, err);
    if (rc == ERR_OK)
        rc = replace_at_end(s, "deployed_version", version, err);
    else
        cJSON_Delete(version);
    if (rc == ERR_OK)
        remove_member(s, "deploy_failure");
    return rc;
}

error_code installer_state_set_deploy_failure(state *s, const deploy_outcome *out, const char *at, const char *message,
                                              error_info *err)
{
    cJSON *failure = cJSON_CreateObject();
    bool ok = failure && cJSON_AddStringToObject(failure, "version", out->version) &&
              cJSON_AddStringToObject(failure, "at", at) &&
              (out->exit_code >= 0 ? cJSON_AddNumberToObject(failure, "exit_code", out->exit_code) != NULL
                                   : cJSON_AddNullToObject(failure, "exit_code") != NULL) &&
              cJSON_AddBoolToObject(failure, "timed_out", out->timed_out) &&
              cJSON_AddStringToObject(failure, "message", message) &&
              (out->log[0] ? cJSON_AddStringToObject(failure, "log", out->log) != NULL
                           : cJSON_AddNullToObject(failure, "log") != NULL);
    if (!ok) {
        cJSON_Delete(failure);
        return oom(err);
    }
    return replace_at_end(s, "deploy_failure", failure, err);
}

const cJSON *installer_state_deployed(state *s)
{
    return object_member(s, "deployed");
}

const cJSON *installer_state_deploy_failure(state *s)
{
    return object_member(s, "deploy_failure");
}

const char *installer_state_deployed_version(state *s)
{
    return string_member(s, "deployed_version");
}

/* ---- Staged history --------------------------------------------------------------- */

static cJSON *history(state *s)
{
    cJSON *h = cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), "staged_history");
    return cJSON_IsArray(h) ? h : NULL;
}

error_code installer_state_history_open(state *s, error_info *err)
{
    if (history(s))
        return ERR_OK;
    return replace_at_end(s, "staged_history", cJSON_CreateArray(), err);
}

int installer_state_history_rank(state *s, const char *version)
{
    int rank = -1, i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, history(s))
    {
        if (cJSON_IsString(item) && strcmp(item->valuestring, version) == 0)
            rank = i;
        i++;
    }
    return rank;
}

const char *installer_state_history_last(state *s)
{
    cJSON *h = history(s);
    int n = cJSON_GetArraySize(h);
    return n > 0 ? cJSON_GetStringValue(cJSON_GetArrayItem(h, n - 1)) : NULL;
}

void installer_state_history_remove(state *s, const char *version)
{
    cJSON *h = history(s);
    for (int i = cJSON_GetArraySize(h) - 1; i >= 0; i--) {
        const cJSON *item = cJSON_GetArrayItem(h, i);
        if (cJSON_IsString(item) && strcmp(item->valuestring, version) == 0)
            cJSON_DeleteItemFromArray(h, i);
    }
}

void installer_state_history_keep_only(state *s, char *const *names, size_t count)
{
    cJSON *h = history(s);
    for (int i = cJSON_GetArraySize(h) - 1; i >= 0; i--) {
        const cJSON *item = cJSON_GetArrayItem(h, i);
        bool staged = false;
        for (size_t j = 0; cJSON_IsString(item) && j < count && !staged; j++)
            staged = strcmp(names[j], item->valuestring) == 0;
        if (!staged)
            cJSON_DeleteItemFromArray(h, i);
    }
}

error_code installer_state_history_append(state *s, const char *version, error_info *err)
{
    error_code rc = installer_state_history_open(s, err);
    if (rc != ERR_OK)
        return rc;
    cJSON *h = history(s);
    cJSON *item = cJSON_CreateString(version);
    if (!item)
        return oom(err);
    installer_state_history_remove(s, version);
    if (!cJSON_AddItemToArray(h, item)) {
        cJSON_Delete(item);
        return oom(err);
    }
    while (cJSON_GetArraySize(h) > INSTALLER_STATE_HISTORY_MAX)
        cJSON_DeleteItemFromArray(h, 0);
    return ERR_OK;
}

/* ---- Rollback --------------------------------------------------------------------- */

const char *installer_state_rolled_back_from(state *s)
{
    return string_member(s, "rolled_back_from");
}

error_code installer_state_set_rolled_back_from(state *s, const char *version, error_info *err)
{
    if (!version) {
        remove_member(s, "rolled_back_from");
        return ERR_OK;
    }
    return replace_at_end(s, "rolled_back_from", cJSON_CreateString(version), err);
}
