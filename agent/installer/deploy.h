/*
 * deploy.h — runs the current staged installer with deploy.command
 * (PRODUCT.md section 4.5) and records the outcome.
 *
 * Rules where the product definition leaves a choice:
 *  - deploy.command null (the default) follows the staged format: for an
 *    MSI `msiexec /i {installer} /qn /norestart /l*v {log}`, for a PE the
 *    installer itself with deploy.pe_args.
 *  - Every occurrence of "{installer}" and "{log}" in every argument is
 *    replaced, so "/i{installer}" and "INSTALLER={installer}" work as well
 *    as a bare "{installer}". A command without the placeholder runs as
 *    written (a wrapper script may find the file through staging/current).
 *  - {log} is a per-deploy file, state_dir/logs/deploy-<version>-<UTC
 *    time>.log. The child's stdout and stderr are appended to it, unless the
 *    command names {log} itself (msiexec writes it and would not share it):
 *    then they go to the same name ending in .output.log. Both are kept.
 *  - The staged file is checked against its manifest (size and SHA-256)
 *    right before it runs, after its directory was checked for owners and
 *    writers (platform_check_private_dir); a file changed since staging is
 *    not run (ERR_REJECTED), a directory others may write is refused
 *    (ERR_PERMISSION).
 *  - The installer gets outpost's environment minus what it must not see
 *    (deploy_env_is_passed) and inherits no descriptor or handle but its
 *    stdin, stdout and stderr (platform_spawn_env).
 *  - Exit codes 0, 3010 and 1641 are success (the last two: reboot needed).
 *    Afterwards the installed version is read again; the deploy counts as
 *    done only when it equals the staged version ("verified": "yes"). When
 *    no independent source of the installed version exists (none
 *    configured, or only outpost's own record of its last deploy) the exit
 *    code is trusted and the deploy is recorded as "verified": "unverified".
 *  - State section "installer": "deployed" {version, at, exit_code,
 *    reboot_required, verified, log, boot_id} and "deployed_version" are written on
 *    success only (installed.h reads deployed_version); a failure is
 *    recorded in "deploy_failure" {version, at, exit_code, timed_out,
 *    message, log} and leaves "deployed", the staged versions and `current`
 *    alone.
 */
#ifndef OUTPOST_DEPLOY_H
#define OUTPOST_DEPLOY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "base/error.h"
#include "core/state.h"

typedef struct deploy_outcome {
    char version[65];         /* the staged version that ran */
    int exit_code;            /* the installer's exit code (-1: did not finish) */
    bool timed_out;           /* killed at deploy.timeout_s */
    bool reboot_required;     /* exit code 3010 or 1641 */
    char verified[16];        /* "yes" | "unverified" | "no" */
    char installed_after[65]; /* installed version read afterwards, "" when unknown */
    char log[1024];           /* the deploy's log file ({log}), "" before it was named */
    char output[1024];        /* where the child's stdout/stderr went ("" as log) */
} deploy_outcome;

/* What the command line is built for. */
typedef struct deploy_target {
    const char *installer; /* the staged file: "{installer}" */
    const char *log;       /* the deploy's log file: "{log}" */
    bool msi;              /* the staged file is an MSI (else a PE) */
} deploy_target;

/*
 * deploy.command (or, when null, the default for target->msi) with every
 * "{installer}" and "{log}" replaced. *argv is a malloc'd, NULL-terminated
 * array of malloc'd strings; release it with deploy_free_argv. *uses_log
 * (may be NULL) tells whether the command names {log}.
 */
MUST_CHECK error_code deploy_build_argv(const config_deploy *deploy, const deploy_target *target, char ***argv,
                                        bool *uses_log, error_info *err);
void deploy_free_argv(char **argv);

/*
 * One argument quoted by the rules CommandLineToArgvW and the Microsoft C
 * runtime use to split a command line: unchanged when it holds no space,
 * tab, newline or quote and is not empty; otherwise in quotes, inner quotes
 * as \", and backslashes doubled where they precede a quote or the closing
 * quote. malloc'd; NULL on out of memory.
 */
char *deploy_quote_windows_arg(const char *arg);

/*
 * argv as the Windows command line CreateProcess receives (and a person can
 * paste into cmd.exe): the program in quotes when it holds a space, the
 * arguments by deploy_quote_windows_arg. malloc'd; NULL on out of memory.
 */
char *deploy_format_argv(char *const *argv);

/*
 * The deploy's log file for version at now_s: state_dir/logs/deploy-
 * <version>-<YYYYMMDDTHHMMSSZ>.log. malloc'd; NULL on out of memory.
 */
char *deploy_log_path(const config *cfg, const char *version, int64_t now_s);

/*
 * Whether the environment entry "NAME=value" is passed to the installer
 * (PRODUCT.md section 9): every variable is, except OUTPOST_* (the API key
 * may be OUTPOST_API_KEY) and *_PROXY (http_proxy, HTTPS_PROXY, ALL_PROXY,
 * NO_PROXY...: proxy URLs may carry credentials) and KRB5_CLIENT_KTNAME,
 * KRB5CCNAME, KRB5_KTNAME (outpost's Kerberos identity for the proxy,
 * proxy_keytab), names compared without
 * regard to case as Windows does. PATH, SystemRoot, TEMP, TMP, HOME, LANG
 * and the rest stay: installers need them.
 */
bool deploy_env_is_passed(const char *entry);

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
MUST_CHECK error_code deploy_run(const config *cfg, state *s, deploy_outcome *out, error_info *err);

/* Deploy when enabled and the current staged version is not the deployed one. */
bool deploy_wanted(const config *cfg);

#endif
