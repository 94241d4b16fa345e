/*
 * envelope.h — the signed envelope the mirror's manifest (PRODUCT.md
 * section 8) and its roots (section 8.1) share:
 *   {"payload": "<base64 of the payload bytes>",
 *    "signatures": [{"keyid": "<hex>", "sig": "<base64 DER ECDSA>"}, ...]}
 * Each signature is ECDSA P-256/SHA-256 over a context string (the
 * document's kind: "outpost-manifest-v1\n", "outpost-root-v1\n") followed by
 * the payload bytes, so a signature on one kind never counts for the other.
 *
 * envelope_open reads the shape only; envelope_count counts the distinct
 * given keys whose signature verifies, and nothing in the payload is
 * looked at before a caller has counted enough of them.
 */
#ifndef OUTPOST_ENVELOPE_H
#define OUTPOST_ENVELOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "mirror/signkey.h"

/* More are ignored (a bound on the work a forger can cause). Twice a root's
 * key list: a rotation to a disjoint set of keys needs both thresholds. */
#define ENVELOPE_MAX_SIGNATURES 32

typedef struct envelope_signature {
    char keyid[SIGNKEY_ID_SIZE]; /* lower-case hex, as written (not checked to be hex) */
    uint8_t *sig;                /* DER, malloc'd */
    size_t sig_len;
} envelope_signature;

typedef struct envelope {
    uint8_t *payload; /* the decoded payload bytes, malloc'd, NUL after payload_len */
    size_t payload_len;
    envelope_signature sigs[ENVELOPE_MAX_SIGNATURES];
    size_t sig_count;
} envelope;

/*
 * Reads data as an envelope: a JSON object with a base64 `payload` and a
 * `signatures` array (entries without a string keyid and a base64 sig are
 * skipped). ERR_PROTOCOL with a message saying what is wrong when data is
 * not one (an error page, empty, truncated); *env is then empty. Free
 * with envelope_free.
 */
MUST_CHECK error_code envelope_open(const void *data, size_t len, envelope *env, error_info *err);

void envelope_free(envelope *env);

/*
 * How many distinct keys among keys (duplicate key ids count once) have a
 * signature in env over context + payload that verifies; one key signing
 * twice counts once. *named (may be NULL) tells whether any signature
 * named one of keys at all (to tell "unknown key" from "bad signature");
 * first_keyid (may be NULL) receives the id of the first key counted.
 */
size_t envelope_count(const envelope *env, const char *context, signkey *const *keys, size_t key_count, bool *named,
                      char first_keyid[SIGNKEY_ID_SIZE]);

/*
 * Adds key's signature over context + payload (key must hold a private
 * key); a signature by the same key id already there is replaced.
 */
MUST_CHECK error_code envelope_add_signature(envelope *env, const char *context, const signkey *key, error_info *err);

/* env as JSON text (one line), malloc'd; *len its size. */
MUST_CHECK error_code envelope_write(const envelope *env, char **text, size_t *len, error_info *err);

/* A new envelope holding a copy of payload and no signature. */
MUST_CHECK error_code envelope_init(envelope *env, const void *payload, size_t len, error_info *err);

#endif
