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
 * The typed view of a staged version's manifest.json (written by intake.c):
 * every reader of a staged manifest goes through it, none by raw key
 * strings. Strings are "" when the manifest has no such member (manifests
 * written by older versions lack staged_file, staged_at, version_binding);
 * source_url, etag and signer are malloc'd or NULL and belong to the view
 * (staging_manifest_free).
 */
typedef struct staging_manifest {
    char version[65];
    char file_name[256];         /* the name it came with (safe, checked) */
    char staged_file[256];       /* the name on disk: STAGING_DISK_NAME_PE/_MSI, or file_name in old manifests */
    char sha256[65];             /* lower-case hex */
    int64_t size;                /* bytes */
    char staged_at[32];          /* ISO 8601 UTC */
    char format[16];             /* verification.format: "pe", "msi", or an archive's ("zip"...) */
    char inner_format[16];       /* verification.inner_format: the installer's inside an archive */
    char signature[16];          /* verification.signature.result: "valid" | "unsigned" | "skipped" */
    char signer_cert_sha256[65]; /* verification.signature.signer_cert_sha256 */
    char digest[16];             /* verification.signature.digest: "sha256", "sha1"... */
    int64_t signature_index;     /* verification.signature.signature_index: 1 the primary; 0 unknown */
    int64_t signature_count;     /* verification.signature.signature_count; 0 unknown */
    char timestamp_kind[16];     /* verification.signature.timestamp_kind: "rfc3161" | "legacy" */
    char timestamp[32];          /* verification.signature.timestamp (ISO 8601) */
    char version_binding[16];    /* verification.version_binding.status */
    char *source_url;            /* where it came from (a URL or the local path of stage FILE) */
    char *etag;                  /* the download's validator */
    char *signer;                /* verification.signature.signer: the signer's subject */
} staging_manifest;

/*
 * Reads the manifest document doc into *out (zeroed first). A missing or
 * wrong-typed member is ERR_IO naming it ("manifest.json: field `size` is
 * missing"), as is a version, file name, staged_file or sha256 that breaks
 * outpost's rules. On failure *out holds nothing to free.
 */
MUST_CHECK error_code staging_manifest_from_json(const struct cJSON *doc, staging_manifest *out, error_info *err);

/* Frees what the view owns (not m itself); m may be zeroed. */
void staging_manifest_free(staging_manifest *m);

/* The installer's format as deploy needs it: true for an MSI (an archive's
 * inner format counts), false for a PE. */
bool staging_manifest_is_msi(const staging_manifest *m);

/*
 * The "staged" object of status.json and of `update --json` (one builder,
 * documented in the README): version, path, file_name, sha256, size,
 * staged_at, signature, version_binding and signer (null when unknown),
 * and verified_signature (the signature that carried the verdict: digest,
 * signer_cert_sha256, signature_index, signature_count, timestamp_kind,
 * timestamp, each absent when not known) of m, the installer at path.
 * NULL on out of memory; the caller owns it.
 */
struct cJSON *staging_manifest_to_status(const staging_manifest *m, const char *path);

/*
 * staging_manifest_to_status for staged version, read back from its
 * manifest (staging_load): what `update --json` and `stage --json` print
 * for what they staged. *out is the caller's.
 */
MUST_CHECK error_code staging_status_of(const config *cfg, const char *version, struct cJSON **out, error_info *err);

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
 * The current staged version: its version string, its manifest's view and
 * the full path of its installer (each may be NULL when not wanted; the
 * strings are malloc'd, the view freed with staging_manifest_free, all by
 * the caller). ERR_NOT_FOUND "nothing is staged" when
 * staging/current is absent or names a version whose directory is gone.
 */
MUST_CHECK error_code staging_current(const config *cfg, char **version, staging_manifest *manifest,
                                      char **installer_path, error_info *err);

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
MUST_CHECK error_code staging_load(const config *cfg, const char *version, staging_manifest *manifest,
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
