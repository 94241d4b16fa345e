/*
 * root.h — the mirror's offline root of trust (PRODUCT.md section 8.1).
 *
 * A root is a signed envelope (mirror/envelope.h) over the context
 * "outpost-root-v1\n"; its payload lists the root keys with a threshold and
 * the manifest keys with a threshold, with a version and an expiry:
 *   {"schema": 1, "version": N, "expires_at": "...",
 *    "root_keys": [{"keyid": "<hex>", "public_key": "<PEM>"}, ...], "root_threshold": n,
 *    "manifest_keys": [...], "manifest_threshold": n}
 *
 * root_open_trusted judges a root taken as given (mirror.root_file, the
 * copy kept in the state dir, the first file of `root verify`): it must
 * carry its own root_threshold of its own root keys' signatures.
 * root_open_next judges version N+1 against the trusted version N: a
 * threshold of N's root keys (checked before the payload is parsed), a
 * threshold of its own, and exactly version N+1. Expiry is not part of
 * either: it is judged on the final root only (root_check_expiry), so an
 * endpoint that was off for a year can still walk an expired intermediate.
 * Every refusal is ERR_REJECTED (exit 4) with a message naming what failed;
 * the clock is passed in. This module judges bytes and knows nothing of the
 * network.
 */
#ifndef OUTPOST_ROOT_H
#define OUTPOST_ROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "mirror/envelope.h"
#include "mirror/signkey.h"

#define ROOT_MAX_BYTES (64 * 1024)
#define ROOT_CONTEXT "outpost-root-v1\n"
#define ROOT_SCHEMA 1
#define ROOT_MAX_KEYS 16 /* per list */

typedef struct root {
    int64_t version;
    int64_t expires_at;                /* Unix seconds */
    signkey *root_keys[ROOT_MAX_KEYS]; /* public keys, owned */
    size_t root_key_count;
    size_t root_threshold;                 /* 1 .. root_key_count */
    signkey *manifest_keys[ROOT_MAX_KEYS]; /* public keys, owned */
    size_t manifest_key_count;
    size_t manifest_threshold; /* 1 .. manifest_key_count */
    /* SHA-256 of the signed payload bytes, lower-case hex: the root's
     * identity. A root file rewritten (line ends, indentation, a trailing
     * newline) keeps it; any change to what was signed does not. */
    char id[SIGNKEY_ID_SIZE];
} root;

/* Frees the keys; r is zeroed. NULL is ignored. */
void root_free(root *r);

/*
 * A root trusted as given: the envelope, the payload, and its own
 * root_threshold of valid signatures by its own root keys. source names it
 * in errors ("mirror.root_file /etc/outpost/root.json"). On ERR_OK *r is
 * filled (free with root_free); otherwise it is zeroed.
 */
MUST_CHECK error_code root_open_trusted(const void *data, size_t len, const char *source, root *r, error_info *err);

/*
 * Version trusted->version + 1, judged as section 8.1 says (see above).
 * On ERR_OK *next is filled; otherwise it is zeroed and trusted stays as it
 * was.
 */
MUST_CHECK error_code root_open_next(const root *trusted, const void *data, size_t len, const char *source, root *next,
                                     error_info *err);

/* ERR_TEMPORARY "mirror root version N expired at ..." when now_s is at or past its expiry. */
MUST_CHECK error_code root_check_expiry(const root *r, int64_t now_s, error_info *err);

/* The manifest key ids of r, sorted and comma-separated, into out (what the stored seq is kept with). */
void root_manifest_keyids(const root *r, char *out, size_t size);

/* ---- The offline ceremony (`outpost root ...`) ---- */

/* What a new root says. Keys are borrowed (public or private; only the public half is written). */
typedef struct root_spec {
    int64_t version;
    int64_t expires_at;
    signkey *const *root_keys;
    size_t root_key_count;
    size_t root_threshold;
    signkey *const *manifest_keys;
    size_t manifest_key_count;
    size_t manifest_threshold;
} root_spec;

/*
 * The unsigned envelope of a root as spec says (thresholds between 1 and
 * the number of keys, no key listed twice: ERR_USAGE otherwise). *text is
 * malloc'd JSON.
 */
MUST_CHECK error_code root_write_unsigned(const root_spec *spec, char **text, size_t *len, error_info *err);

/*
 * The payload of a root envelope, parsed without any signature check (for
 * `root sign` and `root next`, which work on files their holder made).
 */
MUST_CHECK error_code root_read_unverified(const void *data, size_t len, const char *source, root *r, error_info *err);

#endif
