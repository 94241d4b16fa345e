/*
 * deploy.h — runs the current staged installer with deploy.command
 * (PRODUCT.md section 4.5) and records the outcome.
 *
 * Rules where the product definition leaves a choice:
 *  - Every occurrence of "{installer}" in every argument is replaced, so
 *    "/i{installer}" and "INSTALLER={installer}" work as well as a bare
 *    "{installer}". A command without the placeholder runs as written (a
 *    wrapper script may find the file through staging/current itself).
 *  - The staged file is checked against its manifest (size and SHA-256)
 *    right before it runs; a file changed since staging is not run
 *    (ERR_REJECTED).
 *  - Exit codes 0, 3010 and 1641 are success (the last two: reboot needed).
 *    Afterwards the installed version is read again; the deploy counts as
 *    done only when it equals the staged version ("verified": "yes"). When
 *    no independent source of the installed version exists (none
 *    configured, or only outpost's own record of its last deploy) the exit
 *    code is trusted and the deploy is recorded as "verified": "unverified".
 *  - State section "installer": "deployed" {version, at, exit_code,
 *    reboot_required, verified} and "deployed_version" are written on
 *    success only (installed.h reads deployed_version); a failure is
 *    recorded in "deploy_failure" {version, at, exit_code, timed_out,
 *    message} and leaves "deployed", the staged versions and `current` alone.
 */
#ifndef OUTPOST_DEPLOY_H
#define OUTPOST_DEPLOY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/config.h"
#include "base/error.h"
#include "core/state.h"

typedef struct deploy_outcome {
    char version[65];          /* the staged version that ran */
    int exit_code;             /* the installer's exit code (-1: did not finish) */
    bool timed_out;            /* killed at deploy.timeout_s */
    bool reboot_required;      /* exit code 3010 or 1641 */
    char verified[16];         /* "yes" | "unverified" | "no" */
    char installed_after[65];  /* installed version read afterwards, "" when unknown */
} deploy_outcome;

/*
 * deploy.command with every "{installer}" replaced by installer_path.
 * *argv is a malloc'd, NULL-terminated array of malloc'd strings; release
 * it with deploy_free_argv.
 */
error_code deploy_build_argv(const config_deploy *deploy, const char *installer_path, char ***argv,
                             error_info *err);
void deploy_free_argv(char **argv);

/*
 * argv as one line for a person to read (and paste into a POSIX shell):
 * arguments with anything beyond [A-Za-z0-9_@%+=:,./{}-] are single-quoted.
 * malloc'd; NULL on out of memory.
 */
char *deploy_format_argv(char *const *argv);

/* Whether an installer exit code means success; *reboot_required (may be
 * NULL) is set for 3010 and 1641. */
bool deploy_exit_is_success(int exit_code, bool *reboot_required);

/*
 * Runs the current staged installer and records the outcome in s (saved)
 * and *out. ERR_OK when the deploy is done; ERR_NOT_FOUND "nothing is
 * staged" (exit 1); ERR_REJECTED when the staged file no longer matches its
 * manifest; ERR_SPAWN when the command could not start or the installer
 * failed (the message gives the exit code); ERR_TIMEOUT when it was killed
 * at deploy.timeout_s. *out is filled as far as the deploy got.
 */
error_code deploy_run(const config *cfg, state *s, deploy_outcome *out, error_info *err);

#endif
