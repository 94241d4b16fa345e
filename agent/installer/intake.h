/*
 * intake.h — taking in a new candidate installer (PRODUCT.md sections 4.3
 * and 4.4): a private copy, the verification layers (length, format, an
 * archive's installer extracted, expected SHA-256, Authenticode, version
 * binding, the fleet mirror's signer), a bundle's manifest, the downgrade
 * rule. A candidate that passes is handed to staging.h (staging_adopt),
 * which owns what is staged; one that fails leaves staging/ as it was.
 */
#ifndef OUTPOST_INTAKE_H
#define OUTPOST_INTAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "authenticode/authenticode.h"
#include "core/config.h"
#include "base/error.h"
#include "core/state.h"

typedef struct intake_candidate {
    const char *path;                        /* file to verify and stage */
    bool take_ownership;                     /* true: path may be moved into staging (a finished
                                                download on the same volume); false: it is copied
                                                (stage FILE) and left where it is */
    const char *version;                     /* claimed version (X-Installer-Version, --version, or
                                                NULL for a bundle whose manifest names it);
                                                validated with version_is_valid: invalid → ERR_REJECTED */
    const char *file_name;                   /* safe base name (from Content-Disposition or the local
                                                file's name); checked again here: unsafe → ERR_REJECTED;
                                                NULL: a name made from the version */
    const char *source_url;                  /* URL it came from, or the local path for stage FILE */
    const char *etag;                        /* validator of the download, or NULL */
    int64_t expected_length;                 /* Content-Length; -1 when unknown (not checked) */
    const char *sha256_hex;                  /* lower-case hex computed while downloading, or NULL
                                                (computed here) */
    const authenticode_pe_digest *pe_digest; /* the PE's Authenticode SHA-256 computed while
                                           downloading (download_result), or NULL; used when
                                           it fits the file (authenticode_policy.precomputed) */
    bool allow_downgrade;                    /* accept a version older than the installed one */
    bool force;                              /* stage again even when this version is already staged */
    const char *expected_signer_sha256;      /* fleet mirror: the manifest's signer.cert_sha256; when
                                         set and the signature was verified, the signer certificate
                                         must have this SHA-256 (else ERR_REJECTED). NULL: not checked */
} intake_candidate;

typedef struct intake_result {
    bool already_staged; /* this version was staged and verified before; nothing changed */
    char version[65];    /* the staged version */
    char file_name[256]; /* the staged file's name */
    char *path;          /* malloc'd full path of the staged installer; free() it */
    char sha256[65];     /* lower-case hex */
    int64_t size;        /* bytes */
    char signature[16];  /* "valid" | "unsigned" | "skipped" */
    char signer[256];    /* signer subject, "" when none */
} intake_result;

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
MUST_CHECK error_code intake_stage(const config *cfg, state *s, const intake_candidate *candidate,
                                   intake_result *result, error_info *err);

#endif
