/*
 * authenticode.h — portable Authenticode verification of Windows installers
 * (PE images and MSI packages) with Mbed TLS, the same on every platform.
 *
 * One call judges one file against one policy and says what it found:
 * valid, unsigned, or which rule the signature broke, with a reason a person
 * can read. It is a pure function of the file's bytes and the policy (no
 * global state, no network), and it reads the file with bounded memory: the
 * image is hashed through a fixed buffer, only the signature blob (capped)
 * is held in memory.
 *
 * What "valid" means (PRODUCT.md 4.3), in the order the checks run:
 *  1. the file is a well-formed PE or MSI whose signature ends the file
 *     (PE: nothing may follow the certificate table, as Windows has enforced
 *     since MS12-024);
 *  2. the PKCS#7 SignedData carries SpcIndirectDataContent for this format,
 *     with SHA-256/384/512 (SHA-1 only with allow_sha1);
 *  3. the Authenticode digest of the file equals the signed one;
 *  4. exactly one signer, its certificate is carried in the signature, its
 *     signed attributes name SpcIndirectDataContent and hold its digest, and
 *     its RSA (PKCS#1 v1.5) or ECDSA signature over them verifies;
 *  5. the signer chains, through the carried certificates, to a certificate
 *     of trusted_ca_file, every certificate being valid at the judging time:
 *     the time of a timestamp countersignature that itself verifies against
 *     timestamp_ca_file (RFC 3161 or legacy Authenticode form), otherwise
 *     policy->now; without a trusted_ca_file this step (and with it the
 *     timestamps) is skipped, and result->chain_checked says so;
 *  6. the signer certificate names the code-signing extended key usage
 *     (1.3.6.1.5.5.7.3.3) explicitly;
 *  7. signer_subject, when set, matches the signer's subject decoded from
 *     its DER to UTF-8, whole or its CN alone (subject.h); signer_sha256,
 *     when set, holds the SHA-256 of the signer certificate's DER;
 *  8. with crl_files, no certificate of the signer's chain below the root
 *     is revoked by a CRL its issuer signed, before the timestamp's time
 *     (at any time without a trusted timestamp).
 * Every signature is judged: the primary one and those nested in its
 * unsigned attribute 1.3.6.1.4.1.311.2.4.1 (AUTHENTICODE_MAX_NESTING deep,
 * AUTHENTICODE_MAX_SIGNATURES in all). The file is valid when one of them
 * passes 2-8; a signature that is broken in itself (its digest differs from
 * the file's, its signature value or structure is wrong) rejects the file
 * whatever the others say. The result describes the signature that carried
 * the verdict.
 *
 * Certificates are parsed with mbedtls_x509_crt_parse_der_with_ext_cb, which
 * accepts a critical certificatePolicies extension (Microsoft's PCA
 * certificates carry one; Mbed TLS 2.28 refuses it otherwise). A
 * certificate that still cannot be read is named (position, subject when
 * the DER shows it, Mbed TLS error) in result->notes and, when the chain
 * then fails, in the reason. A CA file with such a certificate is an error
 * naming it when the verdict is an untrusted chain (the certificate might
 * have been the anchor), and a note otherwise.
 */
#ifndef OUTPOST_AUTHENTICODE_H
#define OUTPOST_AUTHENTICODE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

typedef enum {
    AUTHENTICODE_VALID = 0,       /* every check above passed */
    AUTHENTICODE_UNSIGNED,        /* a well-formed PE/MSI without a signature */
    AUTHENTICODE_DIGEST_MISMATCH, /* the file's bytes are not the ones signed */
    AUTHENTICODE_BAD_SIGNATURE,   /* signer, signed attributes or signature value wrong */
    AUTHENTICODE_UNTRUSTED_CHAIN, /* no valid chain to the trusted CA at the judging time,
                                     or the signer is not a code-signing certificate */
    AUTHENTICODE_WRONG_SIGNER,    /* trusted, but not the configured signer_subject */
    AUTHENTICODE_MALFORMED,       /* structure broken, truncated, or data after the signature */
    AUTHENTICODE_UNSUPPORTED,     /* not PE/MSI, or an algorithm the policy does not accept */
    AUTHENTICODE_REVOKED          /* a certificate of the chain is revoked (crl_files) */
} authenticode_verdict;

/* A PE image's Authenticode SHA-256, computed while its bytes streamed by
 * (pe_stream_*, pe.h), and the layout it was computed for: the verifier
 * uses it instead of reading the image again when its own parse of the
 * file finds the same layout. */
typedef struct authenticode_pe_digest {
    uint64_t file_size;
    uint64_t checksum_offset;
    uint64_t security_entry_offset;
    uint64_t cert_table_offset;
    uint64_t cert_table_size;
    unsigned char sha256[32];
} authenticode_pe_digest;

typedef struct authenticode_policy {
    const char *trusted_ca_file;      /* PEM or DER CA certificate(s), or "system": the OS
                                         store (platform_system_code_signing_roots); NULL:
                                         step 5 is skipped, every other check runs */
    const char *timestamp_ca_file;    /* CAs for timestamp signers; NULL: trusted_ca_file */
    const char *signer_subject;       /* "C=US, O=Example, CN=Example Code Signing" or the
                                         CN value alone; NULL: any trusted signer */
    const char *const *signer_sha256; /* lower-case hex SHA-256s of accepted signer
                                         certificates; none: any trusted signer */
    size_t signer_sha256_count;
    const char *const *crl_files; /* CRL files, DER or PEM; none: no revocation check */
    size_t crl_file_count;
    bool allow_sha1;                           /* accept SHA-1 digests and certificate signatures */
    const authenticode_pe_digest *precomputed; /* the image's SHA-256 digest from the pass
                                                  that brought the file; NULL: hashed here */
    int64_t now;                               /* judging time without a timestamp, Unix seconds;
                                                  0 means the current wall clock */
} authenticode_policy;

typedef struct authenticode_result {
    authenticode_verdict verdict;
    char reason[256];            /* one human line; "" only for unsigned/valid */
    char signer_subject[256];    /* subject of the signer certificate as UTF-8
                                    (subject_format), when found */
    char signer_cert_sha256[65]; /* lower-case hex SHA-256 of that certificate's DER, "" when none */
    char digest_algorithm[16];   /* "sha256", ... when a signature was read */
    bool timestamped;            /* a timestamp verified and set the judging time */
    int64_t timestamp;           /* that time, Unix seconds (0 when !timestamped) */
    char timestamp_kind[8];      /* "rfc3161", "legacy", "" when !timestamped */
    unsigned signature_index;    /* which signature the fields above describe: 1 the
                                    primary, 2.. nested ones in file order; 0 none */
    unsigned signature_count;    /* signatures found (primary and nested) */
    char notes[512];             /* what could not be read (certificates, CRLs), for -v;
                                    "" when everything was read */
    char file_format[8];         /* "pe", "msi" or "" when not recognised */
    bool signature_found;        /* the format reader found a signature to judge */
    bool chain_checked;          /* step 5 ran: false without a trusted_ca_file */
} authenticode_result;

/*
 * Judges the file at path (UTF-8) against policy and fills *result.
 * Returns ERR_OK whenever a verdict was reached, rejections included (the
 * verdict says which); ERR_IO / ERR_NOT_FOUND when the file cannot be read,
 * ERR_CONFIG (naming the file) when a CA file cannot be read or holds no
 * certificate, ERR_NOMEM. *result is always initialised; on an error its
 * verdict is AUTHENTICODE_MALFORMED, so a caller that ignores the return
 * value still fails closed.
 */
MUST_CHECK error_code authenticode_verify_file(const char *path, const authenticode_policy *policy,
                                               authenticode_result *result, error_info *err);

/* As authenticode_verify_file, on an open, seekable binary stream (read from
 * its start; the position afterwards is unspecified; the caller closes it). */
MUST_CHECK error_code authenticode_verify_stream(FILE *f, const authenticode_policy *policy,
                                                 authenticode_result *result, error_info *err);

/* "valid", "unsigned", "digest-mismatch", "bad-signature", "untrusted-chain",
 * "wrong-signer", "malformed", "unsupported", "revoked"; never NULL. */
const char *authenticode_verdict_name(authenticode_verdict v);

/* Largest signature blob (PKCS#7 DER) we read into memory. Real ones are a
 * few KiB, dual-signed ones with timestamps some tens of KiB. */
#define AUTHENTICODE_MAX_SIGNATURE (4u * 1024u * 1024u)

/* Signatures judged in one file, and how deep they may nest. */
#define AUTHENTICODE_MAX_SIGNATURES 8
#define AUTHENTICODE_MAX_NESTING 2

#endif
