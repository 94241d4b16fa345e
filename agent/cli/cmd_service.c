/*
 * cmd_service.c — `outpost service install|uninstall`: what the Windows
 * MSI runs after copying the files and before removing them, because wixl
 * cannot express a scheduled task or an access list. install makes
 * %ProgramData%\outpost (where the MSI put the default configuration, with
 * the access list every user may add files under) and the state directory
 * private (PRODUCT.md section 9) and registers `\outpost\run`
 * (cli/schedtask.c); uninstall removes the task and leaves the
 * configuration and the state, which an upgrade or a reinstall reuses.
 */
#include "cli/commands.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "cli/schedtask.h"
#include "platform/platform.h"

/* Makes the default configuration's directory private, then creates or
 * checks the state directory. */
static MUST_CHECK error_code protect_directories(const config *cfg, error_info *err)
{
    char *config_path = platform_default_config_path();
    char *config_dir = config_path ? platform_path_dir(config_path) : NULL;
    free(config_path);
    if (!config_dir)
        return error_set(err, ERR_NOMEM, "out of memory");
    error_code rc = platform_mkdirs_private(config_dir, err);
    if (rc == ERR_OK)
        rc = platform_make_private_dir(config_dir, err);
    if (rc == ERR_OK)
        rc = platform_check_private_dir(config_dir, err);
    free(config_dir);
    if (rc != ERR_OK)
        return rc;
    rc = platform_mkdirs_private(cfg->state_dir, err);
    if (rc == ERR_OK)
        rc = platform_check_private_dir(cfg->state_dir, err);
    return rc;
}

/* One line (or, with --json, one document) saying what was done. */
static MUST_CHECK error_code report_done(const command_context *ctx, const char *action, const char *exe,
                                         error_info *err)
{
    if (!ctx->opts->json) {
        if (exe)
            printf("registered the scheduled task %s: \"%s\" run, as SYSTEM, hourly\n", SCHEDTASK_NAME, exe);
        else
            printf("removed the scheduled task %s; the configuration and the state directory are kept\n",
                   SCHEDTASK_NAME);
        return ERR_OK;
    }
    cJSON *doc = cJSON_CreateObject();
    if (!doc || !cJSON_AddStringToObject(doc, "action", action) ||
        !cJSON_AddStringToObject(doc, "task", SCHEDTASK_NAME) ||
        !(exe ? cJSON_AddStringToObject(doc, "program", exe) : cJSON_AddNullToObject(doc, "program"))) {
        cJSON_Delete(doc);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    return command_print_json(doc) ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
}

static MUST_CHECK error_code service_install(command_context *ctx, error_info *err)
{
    char *exe = NULL;
    error_code rc = platform_executable_path(&exe, err);
    if (rc != ERR_OK)
        return rc;
    char *xml = NULL;
    rc = schedtask_xml(exe, ctx->opts->config_path, &xml, err);
    if (rc == ERR_OK)
        rc = protect_directories(ctx->cfg, err);
    if (rc == ERR_OK)
        rc = platform_task_register(SCHEDTASK_NAME, xml, err);
    if (rc == ERR_OK)
        rc = report_done(ctx, "install", exe, err);
    free(xml);
    free(exe);
    return rc;
}

error_code command_service(command_context *ctx, error_info *err)
{
    /* Linux and the other POSIX systems schedule outpost with systemd or
     * cron: refuse before touching any directory. */
    if (strcmp(platform_os_name(), "windows") != 0)
        return platform_task_register(SCHEDTASK_NAME, "", err);
    if (strcmp(ctx->opts->action, "install") == 0)
        return service_install(ctx, err);
    error_code rc = platform_task_delete(SCHEDTASK_NAME, err);
    return rc == ERR_OK ? report_done(ctx, "uninstall", NULL, err) : rc;
}
