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
#include "installer/installer_state.h"
#include "core/log.h"
#include "platform/platform.h"
#include "installer/staging.h"
#include "base/text.h"
#include "core/timefmt.h"
#include "installer/verify.h"
#include "installer/version.h"

#define PLACEHOLDER "{installer}"
#define LOG_PLACEHOLDER "{log}"

void deploy_free_argv(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

/* arg with every placeholder replaced by its value; malloc'd. */
static char *replace_all(const char *arg, const char *placeholder, const char *value)
{
    size_t plen = strlen(placeholder), vlen = strlen(value), count = 0;
    for (const char *p = strstr(arg, placeholder); p; p = strstr(p + plen, placeholder))
        count++;
    char *out = malloc(strlen(arg) + count * vlen + 1);
    if (!out)
        return NULL;
    char *w = out;
    for (const char *p = arg;;) {
        const char *hit = strstr(p, placeholder);
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

static char *expand(const char *arg, const deploy_target *target)
{
    char *first = replace_all(arg, PLACEHOLDER, target->installer);
    if (!first)
        return NULL;
    char *second = replace_all(first, LOG_PLACEHOLDER, target->log ? target->log : "");
    free(first);
    return second;
}

error_code deploy_build_argv(const config_deploy *deploy, const deploy_target *target, char ***argv, bool *uses_log,
                             error_info *err)
{
    static const char *const msi_command[] = {"msiexec",    "/i",   PLACEHOLDER,    "/qn",
                                              "/norestart", "/l*v", LOG_PLACEHOLDER};
    *argv = NULL;
    const char *const *command;
    size_t count;
    const char *pe_head[1] = {PLACEHOLDER};
    if (deploy->command) {
        command = (const char *const *)deploy->command;
        count = deploy->command_count;
    } else if (target->msi) {
        command = msi_command;
        count = sizeof msi_command / sizeof msi_command[0];
    } else {
        command = pe_head;
        count = 1 + deploy->pe_args_count;
    }
    if (count == 0)
        return error_set(err, ERR_CONFIG, "deploy.command is empty; set the installer command line or null");
    char **out = calloc(count + 1, sizeof *out);
    if (!out)
        return error_set(err, ERR_NOMEM, "out of memory");
    bool log_named = false;
    for (size_t i = 0; i < count; i++) {
        /* The PE default: the installer, then deploy.pe_args. */
        const char *arg = command == pe_head && i > 0 ? deploy->pe_args[i - 1] : command[i];
        log_named = log_named || strstr(arg, LOG_PLACEHOLDER) != NULL;
        out[i] = expand(arg, target);
        if (!out[i]) {
            deploy_free_argv(out);
            return error_set(err, ERR_NOMEM, "out of memory");
        }
    }
    if (uses_log)
        *uses_log = log_named;
    *argv = out;
    return ERR_OK;
}

char *deploy_quote_windows_arg(const char *arg)
{
    size_t len = strlen(arg);
    if (len > 0 && !strpbrk(arg, " \t\n\v\""))
        return text_dup(arg);
    /* Worst case: every byte a backslash before a quote (doubled, plus one). */
    char *out = malloc(2 * len + len + 3);
    if (!out)
        return NULL;
    char *w = out;
    *w++ = '"';
    for (const char *p = arg;; p++) {
        size_t backslashes = 0;
        while (*p == '\\') {
            backslashes++;
            p++;
        }
        if (*p == '\0') {
            /* Before the closing quote: each backslash doubled. */
            memset(w, '\\', 2 * backslashes);
            w += 2 * backslashes;
            break;
        }
        if (*p == '"') {
            memset(w, '\\', 2 * backslashes + 1);
            w += 2 * backslashes + 1;
        } else {
            memset(w, '\\', backslashes);
            w += backslashes;
        }
        *w++ = *p;
    }
    *w++ = '"';
    *w = '\0';
    return out;
}

char *deploy_format_argv(char *const *argv)
{
    size_t size = 1;
    for (char *const *p = argv; *p; p++)
        size += 3 * strlen(*p) + 4;
    char *out = malloc(size);
    if (!out)
        return NULL;
    char *w = out;
    for (char *const *p = argv; *p; p++) {
        if (p != argv)
            *w++ = ' ';
        /* The program name is read up to the closing quote, without escapes. */
        if (p == argv) {
            bool quote = !(*p)[0] || strpbrk(*p, " \t");
            w += sprintf(w, quote ? "\"%s\"" : "%s", *p);
            continue;
        }
        char *quoted = deploy_quote_windows_arg(*p);
        if (!quoted) {
            free(out);
            return NULL;
        }
        w += sprintf(w, "%s", quoted);
        free(quoted);
    }
    *w = '\0';
    return out;
}

char *deploy_log_path(const config *cfg, const char *version, int64_t now_s)
{
    char iso[TIMEFMT_ISO8601_SIZE], stamp[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(now_s, iso);
    size_t n = 0;
    for (const char *c = iso; *c; c++)
        if (*c != '-' && *c != ':')
            stamp[n++] = *c;
    stamp[n] = '\0';
    char name[160];
    snprintf(name, sizeof name, "deploy-%s-%s.log", version, stamp);
    char *logs = platform_path_join(cfg->state_dir, "logs");
    char *path = logs ? platform_path_join(logs, name) : NULL;
    free(logs);
    return path;
}

bool deploy_exit_is_success(int exit_code, bool *reboot_required)
{
    bool reboot = exit_code == 3010 || exit_code == 1641;
    if (reboot_required)
        *reboot_required = reboot;
    return exit_code == 0 || reboot;
}

bool deploy_env_is_passed(const char *entry)
{
    static const char prefix[] = "OUTPOST_", suffix[] = "_PROXY";
    const char *eq = strchr(entry, '=');
    /* Windows keeps "=C:=C:\dir" entries: their name starts at the second '='. */
    if (eq == entry)
        eq = strchr(entry + 1, '=');
    size_t name_len = eq ? (size_t)(eq - entry) : strlen(entry);
    size_t plen = sizeof prefix - 1, slen = sizeof suffix - 1;
    if (name_len >= plen && text_equal_nocase_n(entry, prefix, plen))
        return false;
    if (name_len >= slen && text_equal_nocase_n(entry + name_len - slen, suffix, slen))
        return false;
    /* Where outpost's Kerberos identity for the proxy is (proxy_keytab):
     * a descriptor the child does not have, and a cache in outpost's memory. */
    static const char *const kerberos[] = {"KRB5_CLIENT_KTNAME", "KRB5CCNAME", "KRB5_KTNAME"};
    for (size_t i = 0; i < sizeof kerberos / sizeof kerberos[0]; i++)
        if (name_len == strlen(kerberos[i]) && text_equal_nocase_n(entry, kerberos[i], name_len))
            return false;
    return true;
}

/* The installer's environment: outpost's, filtered by deploy_env_is_passed.
 * *envp is NULL-terminated; free it with deploy_free_argv. */
static MUST_CHECK error_code child_environment(char ***envp, error_info *err)
{
    char **vars = NULL;
    size_t count = 0;
    error_code rc = platform_environment(&vars, &count, err);
    if (rc != ERR_OK)
        return rc;
    char **out = calloc(count + 1, sizeof *out);
    if (!out) {
        platform_free_names(vars, count);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        if (deploy_env_is_passed(vars[i])) {
            out[used++] = vars[i];
            vars[i] = NULL;
        }
    }
    platform_free_names(vars, count); /* frees what was left out (NULL is skipped) */
    *envp = out;
    return ERR_OK;
}

/* Reads the installed version again and judges it against the staged one. */
static MUST_CHECK error_code check_installed(const config *cfg, state *s, deploy_outcome *out, error_info *err)
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
                         "(read from the %s); see the installer's log %s",
                         out->version, out->exit_code, out->installed_after, source, out->log);
    return ERR_OK;
}

/* Where the installer's log and output go; creates state_dir/logs. */
static MUST_CHECK error_code name_log(const config *cfg, deploy_outcome *out, error_info *err)
{
    char *path = deploy_log_path(cfg, out->version, platform_time_utc_ms() / 1000);
    char *logs = platform_path_join(cfg->state_dir, "logs");
    error_code rc = path && logs ? platform_mkdirs(logs, err) : error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK)
        snprintf(out->log, sizeof out->log, "%s", path);
    else
        error_prefix(err, "deploy of %s failed: cannot create the log directory", out->version);
    free(path);
    free(logs);
    return rc;
}

/* "see <log>" (and the output file when it is another). */
static const char *see_log(const deploy_outcome *out, char *buf, size_t size)
{
    if (out->output[0] && strcmp(out->output, out->log) != 0)
        snprintf(buf, size, "see the installer's log %s and its output %s", out->log, out->output);
    else
        snprintf(buf, size, "see the installer's log %s", out->log);
    return buf;
}

/*
 * Holds the staged installer open and hashes what is held against the
 * manifest: the file hashed here is the file that runs (PRODUCT.md
 * section 9). A link at its name is refused. *held is the caller's.
 */
static MUST_CHECK error_code hold_verified(const char *installer, const staging_manifest *manifest,
                                           platform_held_file **held, error_info *err)
{
    error_code rc = platform_held_open(installer, held, err);
    char hex[65];
    if (rc == ERR_OK)
        rc = verify_sha256_stream(platform_held_stream(*held), installer, hex, NULL, err);
    if (rc == ERR_OK && strcmp(hex, manifest->sha256) != 0)
        rc = error_set(err, ERR_REJECTED,
                       "staged installer %s no longer matches its manifest and was not run; stage it again", installer);
    if (rc != ERR_OK) {
        platform_held_close(*held);
        *held = NULL;
    }
    return rc;
}

/* The directory holding path (malloc'd); NULL on OOM or when path is not
 * absolute: a relative {installer} (a relative state_dir) names the file
 * from outpost's own working directory, so the child must start there. */
static char *parent_dir(const char *path)
{
    bool absolute = path[0] == '/' || path[0] == '\\' || (path[0] && path[1] == ':');
    return absolute ? platform_path_dir(path) : NULL;
}

static MUST_CHECK error_code spawn_installer(const config *cfg, const char *installer, platform_held_file *held,
                                             bool msi, deploy_outcome *out, error_info *err)
{
    error_code rc = name_log(cfg, out, err);
    if (rc != ERR_OK)
        return rc;
    char **argv = NULL;
    bool uses_log = false;
    deploy_target target = {.installer = installer, .log = out->log, .msi = msi};
    rc = deploy_build_argv(&cfg->deploy, &target, &argv, &uses_log, err);
    if (rc != ERR_OK)
        return rc;
    /* msiexec writes {log} itself and does not share it. */
    int n = snprintf(out->output, sizeof out->output, "%s", out->log);
    if (uses_log && n > 4)
        snprintf(out->output + n - 4, sizeof out->output - (size_t)n + 4, ".output.log");
    char *line = deploy_format_argv(argv);
    log_info("deploying %s: %s (output to %s)", out->version, line ? line : argv[0], out->output);
    free(line);
    char **envp = NULL;
    rc = child_environment(&envp, err);
    if (rc != ERR_OK) {
        deploy_free_argv(argv);
        return rc;
    }
    /* msiexec by its system path, never PATH's (Windows; NULL elsewhere). */
    char *system_msiexec = !cfg->deploy.command && msi ? platform_system_program("msiexec.exe") : NULL;
    if (system_msiexec) {
        free(argv[0]);
        argv[0] = system_msiexec;
    }
    /* The child starts in its staging folder, which only the privileged
     * account may write, and when the command is the installer itself it
     * runs the very file held and hashed. */
    char *cwd = parent_dir(installer);
    platform_spawn_options options = {.envp = (const char *const *)envp,
                                      .output_path = out->output,
                                      .cwd = cwd,
                                      .program = strcmp(argv[0], installer) == 0 ? held : NULL};
    platform_spawn_result result = {0};
    rc = platform_spawn_with((const char *const *)argv, &options, cfg->deploy.timeout_s * 1000, &result, err);
    free(cwd);
    deploy_free_argv(envp);
    if (rc != ERR_OK) {
        error_prefix(err, "deploy of %s failed: cannot run %s", out->version, argv[0]);
        deploy_free_argv(argv);
        return ERR_SPAWN;
    }
    deploy_free_argv(argv);
    out->exit_code = result.exit_code;
    out->timed_out = result.timed_out;
    char see[2200];
    if (result.timed_out)
        return error_set(err, ERR_TIMEOUT,
                         "deploy of %s failed: the installer did not finish within deploy.timeout_s (%lld s) and was "
                         "killed; raise the timeout or check the installer (%s)",
                         out->version, (long long)cfg->deploy.timeout_s, see_log(out, see, sizeof see));
    if (!deploy_exit_is_success(result.exit_code, &out->reboot_required))
        return error_set(err, ERR_SPAWN,
                         "deploy of %s failed: the installer exited with code %d; the previous installation and the "
                         "staged files are unchanged, %s",
                         out->version, result.exit_code, see_log(out, see, sizeof see));
    return ERR_OK;
}

error_code deploy_run(const config *cfg, state *s, deploy_outcome *out, error_info *err)
{
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    char *version = NULL, *installer = NULL;
    staging_manifest manifest;
    platform_held_file *held = NULL;
    error_code rc = staging_current(cfg, &version, &manifest, &installer, err);
    if (rc == ERR_NOT_FOUND) {
        rc = error_set(err, ERR_NOT_FOUND, "nothing is staged; run outpost update first");
        goto cleanup;
    }
    if (rc != ERR_OK)
        goto cleanup;
    snprintf(out->version, sizeof out->version, "%s", version);
    /* Owners and writers first: a directory others may write could get the
     * file swapped, or a DLL planted beside it, after the hash below. */
    rc = staging_check_private(cfg, version, err);
    if (rc != ERR_OK)
        goto cleanup;
    /* Hashed from the open file, which stays held until the installer has
     * finished (staging_current checked the size already). */
    rc = hold_verified(installer, &manifest, &held, err);
    if (rc == ERR_OK)
        rc = spawn_installer(cfg, installer, held, staging_manifest_is_msi(&manifest), out, err);
    platform_held_close(held);
    held = NULL;
    if (rc == ERR_OK)
        rc = check_installed(cfg, s, out, err);

    char at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, at);
    error_info record_err;
    error_code recorded;
    if (rc == ERR_OK) {
        /* `status` compares it with the running boot: a reboot clears "reboot required". */
        char boot[128];
        platform_boot_id(boot, sizeof boot);
        recorded = installer_state_set_deployed(s, out, at, boot, &record_err);
    } else {
        recorded = installer_state_set_deploy_failure(s, out, at, err ? err->message : error_meaning(rc), &record_err);
    }
    if (recorded != ERR_OK && rc == ERR_OK) {
        rc = recorded;
        if (err)
            *err = record_err;
        goto cleanup;
    }
    error_info save_err;
    if (state_save(s, &save_err) != ERR_OK && rc == ERR_OK) {
        rc = save_err.code;
        if (err)
            *err = save_err;
    }
cleanup:
    staging_manifest_free(&manifest);
    free(version);
    free(installer);
    return rc;
}

bool deploy_wanted(const config *cfg)
{
    if (!cfg->deploy.enabled)
        return false;
    char *staged = NULL;
    error_info err;
    if (staging_current_version(cfg, &staged, &err) != ERR_OK || !staged)
        return false;
    state *s = NULL;
    bool wanted = true;
    if (state_load(cfg->state_dir, &s, &err) == ERR_OK) {
        const char *deployed = installer_state_deployed_version(s);
        wanted = !deployed || strcmp(staged, deployed) != 0;
    }
    state_free(s);
    free(staged);
    return wanted;
}
