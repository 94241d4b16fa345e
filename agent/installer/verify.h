/*
 * verify.h — the verification layers an installer passes before it is staged
 * (PRODUCT.md section 4.3): length, format, expected SHA-256, the
 * Authenticode signature and the version binding. Each layer records what it found in a
 * verify_report, which staging writes into manifest.json ("verification")
 * so an administrator can see why a file was accepted.
 *
 * Rules where the product definition leaves a choice:
 *  - expected_sha256 is compared with the file as received: the archive when
 *    the download was an archive, the installer itself otherwise (that is
 *    the file a publisher's checksum list names).
 *  - Signature: every signature of the file is judged (authenticode.h);
 *    the report describes the one that carried the verdict, and what could
 *    not be read (certificates, CRLs) is logged at -v. trusted_ca_file may
 *    be "system" (the OS store); signer_sha256 and crl_files are passed on.
 *    With a trusted_ca_file configured the signature is always
 *    verified; "valid" passes, "unsigned" passes only without
 *    require_signature, and every other verdict (digest mismatch, bad
 *    signature, untrusted chain, wrong signer, malformed, unsupported)
 *    rejects, whatever require_signature says. A trusted_ca_file or
 *    timestamp_ca_file that is named but does not exist is a configuration
 *    error (config_check_verify_files), never a reason to skip. With
 *    trusted_ca_file null (and require_signature false: with it, that is
 *    a configuration error) a present signature is still judged for
 *    structure, image digest, signed attributes, signature value, code
 *    signing usage and signer_subject, and any failure rejects; only its
 *    chain (and so its timestamps) is not. Such a signature is recorded
 *    as "skipped" (with its signer), an unsigned file as "unsigned", and a
 *    file whose headers cannot be read far enough to find a signature as
 *    "skipped" without a signer (nothing could be judged).
 *  - Version binding: the version the file states about itself (PE:
 *    StringFileInfo ProductVersion, else FileVersion, else the numbers of
 *    VS_FIXEDFILEINFO; MSI: the ProductVersion property) must equal, on
 *    its numeric parts, the version it was offered under. A file whose
 *    version cannot be found or read (no resource, a malformed one, no
 *    number in it) is "unbound", accepted unless require_version_match:
 *    what it states is signed with the file, so a broken resource is the
 *    publisher's, not a way for a storage host to pass a replay.
 */
#ifndef OUTPOST_VERIFY_H
#define OUTPOST_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "authenticode/authenticode.h"
#include "core/config.h"
#include "base/error.h"

struct cJSON;

typedef enum {
    VERIFY_FORMAT_UNKNOWN = 0, /* none of the below: rejected */
    VERIFY_FORMAT_PE,          /* MZ header whose e_lfanew points at "PE\0\0" */
    VERIFY_FORMAT_MSI,         /* OLE compound file (D0 CF 11 E0 A1 B1 1A E1) */
    VERIFY_FORMAT_ZIP,         /* archives: extracted, the installer found inside */
    VERIFY_FORMAT_7Z,
    VERIFY_FORMAT_CAB,
    VERIFY_FORMAT_TAR,
    VERIFY_FORMAT_TAR_GZ /* any gzip stream; libarchive decides what is inside */
} verify_format;

/* Bytes verify_detect_format wants to see to recognise every format. */
#define VERIFY_HEAD_BYTES 512

/*
 * Recognises the format of a file from its first bytes. For PE the
 * e_lfanew field must point inside head (and inside the file) at
 * "PE\0\0"; a truncated header is VERIFY_FORMAT_UNKNOWN. len is how many
 * bytes head holds (fewer than VERIFY_HEAD_BYTES for a short file).
 */
verify_format verify_detect_format(const uint8_t *head, size_t len);

/*
 * As verify_detect_format, for the file at path; reads the PE signature at
 * e_lfanew wherever it lies in the file (bounds-checked against its size).
 */
MUST_CHECK error_code verify_file_format(const char *path, verify_format *format, error_info *err);

/* "pe", "msi", "zip", "7z", "cab", "tar", "tar.gz", "unknown". */
const char *verify_format_name(verify_format format);

/* Whether format is one of the archive kinds. */
bool verify_format_is_archive(verify_format format);

/*
 * SHA-256 of the file at path as lower-case hex (65 bytes with the NUL), and
 * its size (may be NULL). Streams through a fixed buffer.
 */
MUST_CHECK error_code verify_sha256_file(const char *path, char hex[65], int64_t *size, error_info *err);

/* As verify_sha256_file over the open stream f from where it stands to its
 * end (f stays open, the caller's); path names it in messages. */
MUST_CHECK error_code verify_sha256_stream(FILE *f, const char *path, char hex[65], int64_t *size, error_info *err);

/*
 * The digests the layers need, computed in the one pass that brings the
 * file (the private copy of `stage FILE`; a download): its SHA-256 and, for
 * a signed PE, its Authenticode SHA-256 (pe_stream, authenticode/pe.h), so
 * the signature layer does not read the image again (PRODUCT.md 4.3).
 */
typedef struct verify_hasher verify_hasher;

typedef struct verify_digests {
    char sha256[65]; /* lower-case hex of every byte fed */
    int64_t size;    /* bytes fed */
    bool have_pe;    /* pe holds the Authenticode SHA-256 of a signed PE */
    authenticode_pe_digest pe;
} verify_digests;

/* A hasher for a file of file_size bytes; NULL when out of memory. */
verify_hasher *verify_hasher_new(uint64_t file_size);

/* The next len bytes of the file. */
void verify_hasher_update(verify_hasher *h, const void *data, size_t len);

/* Fills *out after the last byte and frees h. */
MUST_CHECK error_code verify_hasher_finish(verify_hasher *h, verify_digests *out, error_info *err);

/* Frees h without a result (an abandoned pass); NULL is fine. */
void verify_hasher_free(verify_hasher *h);

/* What the layers found; filled step by step, serialised into the manifest. */
typedef struct verify_report {
    int64_t expected_length;     /* -1: not known, not checked */
    int64_t actual_length;       /* bytes received */
    char received_sha256[65];    /* SHA-256 of the file as received */
    char format[16];             /* the received file's format name */
    char inner_format[8];        /* for archives: "pe" or "msi" of the installer inside */
    char inner_name[256];        /* for archives: the installer's path inside the archive */
    bool sha256_configured;      /* expected_sha256 was set (and matched) */
    char signature[16];          /* "valid" | "unsigned" | "skipped" (chain not checked: no CA) */
    char signer[256];            /* signer subject, "" when none */
    char signer_cert_sha256[65]; /* SHA-256 of the signer certificate's DER, "" when none */
    bool timestamped;            /* the signature carried a verified timestamp */
    char digest[16];             /* Authenticode digest algorithm, "" when none */
    /* The signature that carried the verdict (the fields above describe it):
     * 1 the primary, 2.. nested ones; its timestamp. 0 / "" when none. */
    unsigned signature_index;
    unsigned signature_count; /* signatures in the file, nested ones included */
    char timestamp_kind[8];   /* "rfc3161" | "legacy" | "" */
    int64_t timestamp;        /* Unix seconds, 0 when not timestamped */
    char binding[12];         /* "bound" | "unbound" | "mismatch"; "" before the layer ran */
    char file_version[128];   /* the version the file states, "" when none */
    char binding_source[24];  /* "ProductVersion" | "FileVersion" | "fixed ProductVersion" |
                                 "fixed FileVersion" | "msi ProductVersion"; "" when none */
    char binding_reason[200]; /* why unbound, "" otherwise */
} verify_report;

/* Sets every member to its "nothing checked yet" value. */
void verify_report_init(verify_report *report);

/*
 * Length layer: ERR_REJECTED when expected_length >= 0 and differs from the
 * file's size. Records both in report.
 */
MUST_CHECK error_code verify_length(verify_report *report, int64_t expected_length, int64_t actual_length,
                                    error_info *err);

/*
 * SHA-256 layer: ERR_REJECTED when policy->expected_sha256 is set and differs
 * from report->received_sha256 (which the caller fills first).
 */
MUST_CHECK error_code verify_expected_sha256(verify_report *report, const config_verify *policy, error_info *err);

/*
 * Signature layer on the installer at path (a PE or MSI), with the rules at
 * the top of this file. ERR_REJECTED with the verdict and its reason in the
 * message; ERR_CONFIG for an unusable CA configuration; ERR_IO when the file
 * cannot be read. precomputed (may be NULL): the PE digest from the pass
 * that brought the file (verify_hasher), used when it fits the file.
 */
MUST_CHECK error_code verify_signature(verify_report *report, const config_verify *policy, const char *path,
                                       const authenticode_pe_digest *precomputed, error_info *err);

/*
 * Version-binding layer on the installer at path (a PE or MSI) that was
 * offered as version (valid, see version.h), with the rules at the top of
 * this file: ERR_REJECTED on a mismatch (naming both versions), or when
 * the file is unbound and policy->require_version_match; ERR_IO when the
 * file cannot be read. Records binding, file_version and source.
 */
MUST_CHECK error_code verify_version_binding(verify_report *report, const config_verify *policy, const char *path,
                                             const char *version, error_info *err);

/* The manifest's "verification" object. Caller owns it (cJSON_Delete); NULL
 * on out of memory. */
struct cJSON *verify_report_to_json(const verify_report *report);

#endif
