/*
 * token.h — the access token of a run: the request that exchanges the API
 * key for it, the parsing of the answer, and when to renew it.
 *
 * The platform's access tokens live 15 minutes (API document section 5), or
 * `expires_in` seconds when the token answer says so. A token is renewed
 * before it runs out: after lifetime - lifetime/15 (14 minutes of 15), so a
 * request never leaves with a token about to expire. The http layer owns
 * one token_state and drives it; this module does no I/O.
 *
 * Secrets: the API key and the token are copied into memory this module
 * wipes before freeing (dynbuf_secret_free, token_state_clear); they are
 * never formatted into an error message.
 */
#ifndef OUTPOST_TOKEN_H
#define OUTPOST_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define TOKEN_DEFAULT_LIFETIME_MS (15 * 60 * 1000)

typedef struct token_state {
    char *access_token;  /* malloc'd, wiped when replaced or cleared; NULL: none */
    uint64_t generation; /* 1 for the first token, +1 on each renewal; 0: none yet */
    bool invalid;        /* the server refused it (401): renew before the next use */
    int64_t obtained_ms; /* monotonic time the exchange was sent */
    int64_t lifetime_ms; /* expires_in, or TOKEN_DEFAULT_LIFETIME_MS */
    int64_t renew_at_ms; /* monotonic time from which it is renewed before use */
} token_state;

/* An empty state (no token). */
void token_state_init(token_state *state);

/* Wipes and frees the token; the state is empty again. */
void token_state_clear(token_state *state);

/* Whether the token may be sent at now_ms: present, not refused, and not
 * yet due for renewal. */
bool token_usable(const token_state *state, int64_t now_ms);

/* How long before the end of a lifetime the token is renewed:
 * lifetime / 15 (60 s of 15 min), at least 1 ms. */
int64_t token_renew_margin_ms(int64_t lifetime_ms);

/*
 * Marks the token of the given generation refused (after a 401 on a request
 * that carried it). A request that carried an older generation does not
 * invalidate the newer token. Returns true when this call invalidated the
 * current token (so exactly one renewal follows several concurrent 401s).
 */
bool token_invalidate(token_state *state, uint64_t generation);

/*
 * The JSON body of the token exchange, {"refresh_token": "<key>"}, malloc'd;
 * *len gets its length. Holds the key: free it with dynbuf_secret_free.
 * NULL on out of memory.
 */
char *token_request_body(const char *api_key, size_t *len);

/*
 * Reads a token answer (len bytes of JSON): `access_token` at the top level,
 * or inside `resources[0]` (envelope-shaped deployments); `expires_in`
 * (seconds, a number or a decimal string) next to it when present. On
 * success replaces the state's token (generation + 1), with
 * obtained_ms = sent_at_ms. ERR_PROTOCOL when the answer is not JSON or has
 * no non-empty string token; the message never quotes the body.
 */
MUST_CHECK error_code token_accept(token_state *state, const char *body, size_t len, int64_t sent_at_ms,
                                   error_info *err);

#endif
