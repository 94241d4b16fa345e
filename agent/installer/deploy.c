/*
 * deploy.c — runs the staged installer (deploy.h): builds the argv from
 * deploy.command, checks the staged file once more, spawns it without a
 * shell under deploy.timeout_s, judges the exit code, reads the installed
 * version again and records the outcome in state section "installer".
 */
#include "installer/deploy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "installer/installed.h"
#include "core/log.h"
#include "platform/platform.h"
#include "installer/staging.h"
#include "base/text.h"
#include "core/timefmt.h"
#include "installer/version.h"

#define PLACEHOLDER "{installer}"

void deploy_free_argv(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

/* arg with every PLACEHOLDER replaced by value; malloc'd. */
static char *replace_all(const char *arg, const char *value)
{
    size_t plen = strlen(PLACEHOLDER), vlen = strlen(value), count = 0;
    for (const char *p = strstr(arg, PLACEHOLDER); p; p = strstr(p + plen, PLACEHOLDER))
        count++;
    char *out = malloc(strlen(arg) + count * vlen + 1);
    if (!out)
        return NULL;
    char *w = out;
    for (const char *p = arg;;) {
        const char *hit = strstr(p, PLACEHOLDER);
        size_t n = hit ? (size_t)(hit - p) : strlen(p);
        memcpy(w, p, n);
        w += n;
        if (!hit)
            break;
        memcpy(w, value, vlen);
        w += vlen;
        p = hit + plen;
    }
    *w = '\0';
    return out;
}

error_code deploy_build_argv(const config_deploy *deploy, const char *installer_path, char ***argv,
                             error_info *err)
{
    *argv = NULL;
    if (!deploy->command || deploy->command_count == 0)
        return error_set(err, ERR_CONFIG, "deploy.command is empty; set the installer command line");
    char **out = calloc(deploy->command_count + 1, sizeof *out);
    if (!out)
        return error_set(err, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < deploy->command_count; i++) {
        out[i] = replace_all(deploy->command[i], installer_path);
        if (!out[i]) {
            deploy_free_argv(out);
            return error_set(err, ERR_NOMEM, "out of memory");
        }
    }
    *argv = out;
    return ERR_OK;
}

static bool plain_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("_@%+=:,./{}-", c);
}

char *deploy_format_argv(char *const *argv)
{
    size_t size = 1;
    for (char *const *p = argv; *p; p++)
        size += 4 * strlen(*p) + 3;
    char *out = malloc(size);
    if (!out)
        return NULL;
    char *w = out;
    for (char *const *p = argv; *p; p++) {
        if (p != argv)
            *w++ = ' ';
        bool plain = (*p)[0] != '\0';
        for (const char *c = *p; *c && plain; c++)
            plain = plain_char(*c);
        if (plain) {
            w += sprintf(w, "%s", *p);
            continue;
        }
        *w++ = '\'';
        for (const char *c = *p; *c; c++) {
            if (*c == '\'')
                w += sprintf(w, "'\\''");
            else
                *w++ = *c;
        }
        *w++ = '\'';
    }
    *w = '\0';
    return out;
}

bool deploy_exit_is_success(int exit_code, bool *reboot_required)
{
    bool reboot = exit_code == 3010 || exit_code == 1641;
    if (reboot_required)
        *reboot_required = reboot;
    return exit_code == 0 || reboot;
}

/* Reads the installed version again and judges it against the staged one. */
static error_code check_installed(const config *cfg, state *s, deploy_outcome *out, error_info *err)
{
    char *installed = NULL;
    const char *source = NULL;
    error_code rc = installed_version_get(cfg, s, &installed, &source, err);
    if (rc != ERR_OK)
        return error_prefix(err, "installer ran (exit code %d) but the installed version cannot be read",
                            out->exit_code);
    /* outpost's own record of its last deploy says nothing about this one. */
    if (!installed || !source || strcmp(source, "state") == 0) {
        snprintf(out->verified, sizeof out->verified, "unverified");
        free(installed);
        return ERR_OK;
    }
    snprintf(out->installed_after, sizeof out->installed_after, "%s", installed);
    bool same = version_compare(installed, out->version) == 0;
    free(installed);
    snprintf(out->verified, sizeof out->verified, "%s", same ? "yes" : "no");
    if (!same)
        return error_set(err, ERR_SPAWN,
                         "deploy of %s failed: the installer exited with %d but the installed version is still %s "
                         "(read from the %s); check the installer's log",
                         out->version, out->exit_code, out->installed_after, source);
    return ERR_OK;
}

static void record_success(cJSON *section, const deploy_outcome *out, const char *at)
{
    cJSON *deployed = cJSON_CreateObject();
    cJSON_AddStringToObject(deployed, "version", out->version);
    cJSON_AddStringToObject(deployed, "at", at);
    cJSON_AddNumberToObject(deployed, "exit_code", out->exit_code);
    cJSON_AddBoolToObject(deployed, "reboot_required", out->reboot_required);
    cJSON_AddStringToObject(deployed, "verified", out->verified);
    cJSON_DeleteItemFromObjectCaseSensitive(section, "deployed");
    cJSON_AddItemToObject(section, "deployed", deployed);
    cJSON_DeleteItemFromObjectCaseSensitive(section, "deployed_version");
    cJSON_AddStringToObject(section, "deployed_version", out->version);
    cJSON_DeleteItemFromObjectCaseSensitive(section, "deploy_failure");
}

static void record_failure(cJSON *section, const deploy_outcome *out, const char *at, const char *message)
{
    cJSON *failure = cJSON_CreateObject();
    cJSON_AddStringToObject(failure, "version", out->version);
    cJSON_AddStringToObject(failure, "at", at);
    if (out->exit_code >= 0)
        cJSON_AddNumberToObject(failure, "exit_code", out->exit_code);
    else
        cJSON_AddNullToObject(failure, "exit_code");
    cJSON_AddBoolToObject(failure, "timed_out", out->timed_out);
    cJSON_AddStringToObject(failure, "message", message);
    cJSON_DeleteItemFromObjectCaseSensitive(section, "deploy_failure");
    cJSON_AddItemToObject(section, "deploy_failure", failure);
}

static error_code spawn_installer(const config *cfg, const char *installer, deploy_outcome *out, error_info *err)
{
    char **argv = NULL;
    error_code rc = deploy_build_argv(&cfg->deploy, installer, &argv, err);
    if (rc != ERR_OK)
        return rc;
    char *line = deploy_format_argv(argv);
    log_info("deploying %s: %s", out->version, line ? line : argv[0]);
    free(line);
    platform_spawn_result result = {0};
    rc = platform_spawn((const char *const *)argv, cfg->deploy.timeout_s * 1000, &result, err);
    if (rc != ERR_OK) {
        error_prefix(err, "deploy of %s failed: cannot run %s", out->version, argv[0]);
        deploy_free_argv(argv);
        return ERR_SPAWN;
    }
    deploy_free_argv(argv);
    out->exit_code = result.exit_code;
    out->timed_out = result.timed_out;
    if (result.timed_out)
        return error_set(err, ERR_TIMEOUT,
                         "deploy of %s failed: the installer did not finish within deploy.timeout_s (%lld s) and was "
                         "killed; raise the timeout or check the installer",
                         out->version, (long long)cfg->deploy.timeout_s);
    if (!deploy_exit_is_success(result.exit_code, &out->reboot_required))
        return error_set(err, ERR_SPAWN,
                         "deploy of %s failed: the installer exited with code %d; the previous installation and the "
                         "staged files are unchanged, see the installer's log",
                         out->version, result.exit_code);
    return ERR_OK;
}

error_code deploy_run(const config *cfg, state *s, deploy_outcome *out, error_info *err)
{
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    char *version = NULL, *installer = NULL;
    error_code rc = staging_current(cfg, &version, NULL, &installer, err);
    if (rc == ERR_NOT_FOUND) {
        rc = error_set(err, ERR_NOT_FOUND, "nothing is staged; run outpost update first");
        goto cleanup;
    }
    if (rc != ERR_OK)
        goto cleanup;
    snprintf(out->version, sizeof out->version, "%s", version);
    if (!staging_has_verified(cfg, version)) {
        rc = error_set(err, ERR_REJECTED,
                       "staged installer %s no longer matches its manifest and was not run; stage it again", installer);
        goto cleanup;
    }
    rc = spawn_installer(cfg, installer, out, err);
    if (rc == ERR_OK)
        rc = check_installed(cfg, s, out, err);

    cJSON *section = state_section(s, "installer");
    char at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, at);
    if (!section) {
        rc = error_set(err, ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    if (rc == ERR_OK)
        record_success(section, out, at);
    else
        record_failure(section, out, at, err ? err->message : error_meaning(rc));
    error_info save_err;
    if (state_save(s, &save_err) != ERR_OK && rc == ERR_OK) {
        rc = save_err.code;
        if (err)
            *err = save_err;
    }
cleanup:
    free(version);
    free(installer);
    return rc;
}
