/*
 * staging.h — verification and staging of installers (PRODUCT.md sections
 * 4.3 and 4.4), and what is staged now.
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

typedef struct staging_candidate {
    const char *path;            /* file to verify and stage */
    bool take_ownership;         /* true: path may be moved into staging (a finished
                                    download on the same volume); false: it is copied
                                    (stage FILE) and left where it is */
    const char *version;         /* claimed version (X-Installer-Version, --version, or
                                    NULL for a bundle whose manifest names it);
                                    validated with version_is_valid: invalid → ERR_REJECTED */
    const char *file_name;       /* safe base name (from Content-Disposition or the local
                                    file's name); checked again here: unsafe → ERR_REJECTED;
                                    NULL: a name made from the version */
    const char *source_url;      /* URL it came from, or the local path for stage FILE */
    const char *etag;            /* validator of the download, or NULL */
    int64_t expected_length;     /* Content-Length; -1 when unknown (not checked) */
    const char *sha256_hex;      /* lower-case hex computed while downloading, or NULL
                                    (computed here) */
    bool allow_downgrade;        /* accept a version older than the installed one */
    bool force;                  /* stage again even when this version is already staged */
    const char *expected_signer_sha256; /* fleet mirror: the manifest's signer.cert_sha256; when
                                    set and the signature was verified, the signer certificate
                                    must have this SHA-256 (else ERR_REJECTED). NULL: not checked */
} staging_candidate;

typedef struct staging_result {
    bool already_staged;         /* this version was staged and verified before; nothing changed */
    char version[65];            /* the staged version */
    char file_name[256];         /* the staged file's name */
    char *path;                  /* malloc'd full path of the staged installer; free() it */
    char sha256[65];             /* lower-case hex */
    int64_t size;                /* bytes */
    char signature[16];          /* "valid" | "unsigned" | "skipped" */
    char signer[256];            /* signer subject, "" when none */
} staging_result;

/*
 * Verifies the candidate (length, format PE/MSI or an archive holding one —
 * extracted with libarchive under caps —, expected_sha256, Authenticode, the
 * version binding of the installer, or of the one inside an archive) and
 * stages it: staging/<version>/ with its manifest, `current` switched,
 * versions beyond keep_versions pruned (never the current or the previous
 * one). A version older than the installed one is refused (ERR_REJECTED)
 * unless allow_downgrade. Any failed verification is ERR_REJECTED (exit 4)
 * with the layer and reason in the message, and leaves staging/ as it was.
 * Disk full is ERR_DISK_FULL and also leaves staging/ as it was. The
 * installed version is read with installed_version_get(cfg, s, ...).
 * On success the caller frees result->path.
 */
error_code staging_stage(const config *cfg, state *s, const staging_candidate *candidate,
                         staging_result *result, error_info *err);

/*
 * The current staged version (from staging/current), malloc'd into *version,
 * or NULL when nothing is staged (ERR_OK).
 */
error_code staging_current_version(const config *cfg, char **version, error_info *err);

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
error_code staging_status_section(const config *cfg, state *s, struct cJSON **out, error_info *err);

/* ---- Added for stage/deploy/rollback/bundle (cmd_staging.c, deploy.c, bundle.c) ---- */

/*
 * The current staged version: its version string, its manifest and the full
 * path of its installer (each may be NULL when not wanted; all malloc'd /
 * cJSON-owned by the caller). ERR_NOT_FOUND "nothing is staged" when
 * staging/current is absent or names a version whose directory is gone.
 */
error_code staging_current(const config *cfg, char **version, struct cJSON **manifest, char **installer_path,
                           error_info *err);

/*
 * Rollback: makes the previously staged version current (the newest staged
 * version older than the current one; failing that, the one staged before
 * the current one in the history kept in state "installer".staged_history).
 * The target must still match its manifest. *from and *to (malloc'd, may be
 * NULL when not wanted) name the switch. ERR_NOT_FOUND with a clear message
 * when there is nothing to roll back to.
 */
error_code staging_rollback(const config *cfg, state *s, char **from, char **to, error_info *err);

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
error_code staging_finish_commit(const config *cfg, state *s, const char *version, error_info *err);

/*
 * Checks that staging/ and, when version is not NULL, staging/<version>/
 * can be trusted (platform_check_private_dir: no less privileged user owns
 * or may write them), so nobody can plant a DLL beside the installer or
 * swap it after verification. A directory that does not exist yet passes.
 * ERR_PERMISSION (exit 1) names the directory and the fix.
 */
error_code staging_check_private(const config *cfg, const char *version, error_info *err);

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

#endif
