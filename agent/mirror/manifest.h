/*
 * manifest.h — the fleet mirror's signed manifest (PRODUCT.md section 8).
 *
 * manifest.json is an envelope:
 *   {"payload": "<base64 of the payload bytes>",
 *    "signatures": [{"keyid": "<hex>", "sig": "<base64 DER ECDSA>"}, ...]}
 * Each signature is ECDSA P-256/SHA-256 over "outpost-manifest-v1\n" followed
 * by the payload bytes. The signatures are checked before the payload is
 * parsed (manifest_open); only then does manifest_check apply the rules that
 * need the endpoint's context (clock, highest seq seen, channel, platform).
 *
 * Each refusal has its own verdict and message; manifest_verdict_code maps a
 * verdict to the error (and so the exit code) section 8 gives: expired,
 * issued in the future, an older seq and a body that is no envelope at all
 * (an error page) are ERR_TEMPORARY (75: the mirror is stale or broken, try
 * later); everything else is ERR_REJECTED (4: tampering or a
 * misconfiguration a person must look at).
 */
#ifndef OUTPOST_MANIFEST_H
#define OUTPOST_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "mirror/signkey.h"

#define MANIFEST_MAX_BYTES (64 * 1024)
#define MANIFEST_CONTEXT "outpost-manifest-v1\n"
#define MANIFEST_SCHEMA 1
#define MANIFEST_FUTURE_SKEW_S 300

typedef enum {
    MANIFEST_OK = 0,
    MANIFEST_TOO_LARGE,      /* over MANIFEST_MAX_BYTES */
    MANIFEST_MALFORMED,      /* not an envelope (HTML, empty, truncated): a transport failure, 75 */
    MANIFEST_UNKNOWN_KEY,    /* no signature by a pinned key */
    MANIFEST_BAD_SIGNATURE,  /* a pinned key's signature does not verify */
    MANIFEST_BAD_PAYLOAD,    /* signed, but the payload is not what schema 1 says */
    MANIFEST_UNKNOWN_SCHEMA, /* an unknown major schema */
    MANIFEST_EXPIRED,        /* expires_at is past */
    MANIFEST_FUTURE,         /* issued_at more than 5 minutes ahead of the clock */
    MANIFEST_OLD_SEQ,        /* seq below the highest seen */
    MANIFEST_SEQ_CONFLICT,   /* the highest seq seen, with other payload bytes */
    MANIFEST_WRONG_CHANNEL,
    MANIFEST_WRONG_PLATFORM
} manifest_verdict;

/* "ok", "too-large", "malformed", "unknown-key", ... ; never NULL. */
const char *manifest_verdict_name(manifest_verdict verdict);

/* ERR_OK, ERR_TEMPORARY or ERR_REJECTED as described above. */
MUST_CHECK error_code manifest_verdict_code(manifest_verdict verdict);

/* The payload, parsed. Strings are malloc'd; free with manifest_free. */
typedef struct manifest {
    int64_t schema;
    int64_t seq;       /* 1 .. 2^53 - 1 */
    int64_t issued_at; /* Unix seconds */
    int64_t expires_at;
    char *channel;
    char *platform;
    char *version;
    char *file_name;
    int64_t length;
    char sha256[65];             /* lower-case hex */
    char *path;                  /* relative to the manifest's URL */
    bool signed_installer;       /* signer was not null */
    char *signer_subject;        /* NULL when unsigned */
    char signer_cert_sha256[65]; /* "" when unsigned */
    double rollout_percent;      /* 0..100 */
    char *rollout_salt;          /* hex */
    bool allow_downgrade;
    /* Filled by manifest_open: */
    char payload_sha256[65];     /* SHA-256 of the payload bytes (same-seq check) */
    char keyid[SIGNKEY_ID_SIZE]; /* the pinned key that verified it */
} manifest;

void manifest_free(manifest *m);

/*
 * Opens the envelope in data: size cap, envelope shape, then the signatures
 * (accepted when one signature by one of the keys verifies; signatures by
 * other keys are ignored, so a manifest may carry the old and the new key's
 * during a rotation), and only then the payload (schema 1; unknown fields
 * ignored). *verdict says which rule refused; the message says why. On
 * ERR_OK *m is filled (free it with manifest_free); otherwise it is zeroed.
 */
MUST_CHECK error_code manifest_open(const void *data, size_t len, signkey *const *keys, size_t key_count, manifest *m,
                                    manifest_verdict *verdict, error_info *err);

/*
 * As manifest_open, needing valid signatures by at least threshold distinct
 * keys among keys (a mirror root's manifest_threshold, PRODUCT.md 8.1).
 */
MUST_CHECK error_code manifest_open_threshold(const void *data, size_t len, signkey *const *keys, size_t key_count,
                                              size_t threshold, manifest *m, manifest_verdict *verdict,
                                              error_info *err);

/* What the endpoint holds the manifest to. */
typedef struct manifest_expect {
    int64_t now_s;                      /* the clock (Unix seconds), injected */
    const char *channel;                /* mirror.channel */
    const char *platform;               /* installer.platform */
    int64_t highest_seq;                /* highest seq seen before; -1 when none */
    const char *highest_payload_sha256; /* payload SHA-256 of that seq; NULL when unknown */
} manifest_expect;

/*
 * The rules of section 8 in order: expiry and the 5-minute future skew,
 * seq against the highest seen (lower: stale; equal with other bytes:
 * conflict), channel, platform.
 */
MUST_CHECK error_code manifest_check(const manifest *m, const manifest_expect *expect, manifest_verdict *verdict,
                                     error_info *err);

/* The payload of m as JSON text (the publisher's side). malloc'd. */
MUST_CHECK error_code manifest_payload_json(const manifest *m, char **json, error_info *err);

/*
 * Wraps payload (bytes) in an envelope signed by every key in keys (each
 * must hold a private key). *envelope is malloc'd JSON text, *len its size.
 */
MUST_CHECK error_code manifest_sign(const void *payload, size_t payload_len, signkey *const *keys, size_t key_count,
                                    char **envelope, size_t *len, error_info *err);

#endif
