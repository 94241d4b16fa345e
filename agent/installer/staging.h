/*
 * staging.h — what is staged (PRODUCT.md section 4.4): the current version,
 * the staged versions and their history, prune and rollback, and the
 * status file's "installer" member. A new candidate is verified by
 * intake.h and handed over here (staging_adopt) once it passed.
 *
 * Layout under state_dir:
 *   staging/<version>/installer.exe   the verified installer (installer.msi
 *                                     for an MSI): a name outpost chooses; the
 *                                     name it came with is only recorded
 *   staging/<version>/manifest.json   version, file_name (the name it came
 *                                     with), staged_file (the name on disk),
 *                                     size, sha256, source_url, etag,
 *                                     staged_at, verification
 *   staging/current                   a small file naming the current version
 *                                     (replaced atomically; no symlinks, which
 *                                     need privileges on Windows)
 * Nothing reaches staging/ unverified: a candidate is verified where it lies
 * (or in a private work directory under staging/ for extracted archives),
 * then moved into a temporary directory, its manifest written, the directory
 * renamed to staging/<version>, and only then is `current` switched.
 */
#ifndef OUTPOST_STAGING_H
#define OUTPOST_STAGING_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "base/error.h"
#include "core/state.h"

struct cJSON;

/*
 * The current staged version (from staging/current), malloc'd into *version,
 * or NULL when nothing is staged (ERR_OK).
 */
MUST_CHECK error_code staging_current_version(const config *cfg, char **version, error_info *err);

/*
 * Whether version is staged and its file still matches its manifest (size and
 * SHA-256), so update can skip a download. Never fails: any doubt is false.
 */
bool staging_has_verified(const config *cfg, const char *version);

/*
 * The "installer" member of status.json (PRODUCT.md section 5):
 * installed_version, latest_version, update_available, checked_at (from
 * state section "installer": latest_version, checked_at), staged (from the
 * current manifest), deployed (state "installer".deployed). *out is the
 * caller's (cJSON_Delete).
 */
MUST_CHECK error_code staging_status_section(const config *cfg, state *s, struct cJSON **out, error_info *err);

/* ---- Added for stage/deploy/rollback/bundle (cmd_staging.c, deploy.c, bundle.c) ---- */

/*
 * The current staged version: its version string, its manifest and the full
 * path of its installer (each may be NULL when not wanted; all malloc'd /
 * cJSON-owned by the caller). ERR_NOT_FOUND "nothing is staged" when
 * staging/current is absent or names a version whose directory is gone.
 */
MUST_CHECK error_code staging_current(const config *cfg, char **version, struct cJSON **manifest, char **installer_path,
                                      error_info *err);

/*
 * Rollback: makes the previously staged version current (the newest staged
 * version older than the current one; failing that, the one staged before
 * the current one in the history kept in state "installer".staged_history).
 * The target must still match its manifest. *from and *to (malloc'd, may be
 * NULL when not wanted) name the switch. ERR_NOT_FOUND with a clear message
 * when there is nothing to roll back to.
 */
MUST_CHECK error_code staging_rollback(const config *cfg, state *s, char **from, char **to, error_info *err);

/*
 * Finishes what a killed staging left undone for version, which the caller
 * found already staged and verified: when version is the most recently
 * staged one (last in the history) but staging/current names another, the
 * kill came between saving the history and switching current: current is
 * switched now. When version is current, versions beyond keep_versions are
 * pruned (a kill before pruning left them). rollback records the version
 * it switched away from (state "installer".rolled_back_from, cleared when
 * a version is staged), and that one is never made current here: a
 * rollback is not undone by the next update.
 */
MUST_CHECK error_code staging_finish_commit(const config *cfg, state *s, const char *version, error_info *err);

/*
 * Checks that staging/ and, when version is not NULL, staging/<version>/
 * can be trusted (platform_check_private_dir: no less privileged user owns
 * or may write them), so nobody can plant a DLL beside the installer or
 * swap it after verification. A directory that does not exist yet passes.
 * ERR_PERMISSION (exit 1) names the directory and the fix.
 */
MUST_CHECK error_code staging_check_private(const config *cfg, const char *version, error_info *err);

/* The names a staged installer gets on disk, by format. */
#define STAGING_DISK_NAME_PE "installer.exe"
#define STAGING_DISK_NAME_MSI "installer.msi"

/*
 * Whether name is acceptable as the installer's recorded name (manifest
 * file_name, the bundle member beside manifest.json): a base name (no '/',
 * '\\', ':'), not "." / "..", no control characters or characters Windows
 * forbids (<>"|?*), not a Windows device name (disposition_is_device_name:
 * CON, CONIN$, "CON .exe", COM1...), not starting with '.', not ending with
 * '.' or ' ', at most 255 bytes, and not "manifest.json" in any case.
 */
bool staging_file_name_is_safe(const char *name);

/* ---- For intake.c: handing a verified candidate over ---------------------- */

/*
 * staging/ (version NULL) or staging/<version>, malloc'd; NULL on out of
 * memory.
 */
char *staging_path(const config *cfg, const char *version);

/*
 * Creates staging/ when missing, checks it is private
 * (staging_check_private), removes what a crashed staging left, and makes
 * a fresh work directory staging/.tmp-<random>/ for a candidate. *tmp is
 * malloc'd (the caller frees it and removes the directory when it does
 * not hand it to staging_adopt).
 */
MUST_CHECK error_code staging_work_dir(const config *cfg, char **tmp, error_info *err);

/*
 * The manifest and installer path of staged version (checked against each
 * other by size, not hashed), as staging_current does for the current one.
 */
MUST_CHECK error_code staging_load(const config *cfg, const char *version, struct cJSON **manifest,
                                   char **installer_path, error_info *err);

/*
 * Makes the work directory tmp (from staging_work_dir, holding the verified
 * installer and its manifest.json) staged version `version`: the history
 * notes it and state is saved first (so staging_finish_commit can finish
 * after a kill at any later step), tmp is renamed to staging/<version>
 * (an existing one moved aside), `current` is switched, versions beyond
 * keep_versions are pruned and state is saved again.
 */
MUST_CHECK error_code staging_adopt(const config *cfg, state *s, const char *tmp, const char *version, error_info *err);

#endif
