/*
 * dynbuf.h — the growable byte buffer (after curl's dynbuf and SQLite's
 * StrAccum): appends up to a size cap, a sticky failure, and a secret mode
 * that wipes every byte it ever held. Also the one wipe of outpost and the
 * one way to free a secret string.
 *
 * Sticky failure: once an append fails (the cap, or out of memory) every
 * later append is a no-op that returns false, so a writer may append a run
 * of pieces and check once at the end (dynbuf_ok). The bytes appended before
 * the failure stay, NUL-terminated.
 *
 *     dynbuf b;
 *     dynbuf_init(&b, 1 << 20, false);
 *     dynbuf_printf(&b, "%s=%d\n", name, value);
 *     dynbuf_append(&b, data, len);
 *     if (!dynbuf_ok(&b)) ... b.status says which failure
 *     dynbuf_free(&b);
 */
#ifndef OUTPOST_DYNBUF_H
#define OUTPOST_DYNBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h" /* OUTPOST_PRINTF */

typedef enum dynbuf_status {
    DYNBUF_OK = 0,
    DYNBUF_TOO_LARGE, /* an append would have passed max */
    DYNBUF_NOMEM,     /* an allocation failed */
} dynbuf_status;

typedef struct dynbuf {
    char *data;           /* NUL-terminated when non-NULL; NULL before the first byte */
    size_t len;           /* bytes held, the NUL not counted */
    size_t cap;           /* bytes allocated */
    size_t max;           /* most bytes it may hold */
    bool secret;          /* wipe on growth, reset and free (keys, tokens, Authorization) */
    dynbuf_status status; /* first failure; sticky until dynbuf_reset or dynbuf_free */
} dynbuf;

/* An empty buffer that holds at most max bytes (0: no cap but SIZE_MAX / 2);
 * secret: every byte is wiped before its memory is given back. Allocates
 * nothing. */
void dynbuf_init(dynbuf *b, size_t max, bool secret);

/* Appends len bytes (data may be NULL when len is 0). False, and b->status
 * set, when the cap or memory runs out now or did before; nothing of this
 * append is kept then. */
bool dynbuf_append(dynbuf *b, const void *data, size_t len);

/* dynbuf_append of a NUL-terminated string. */
bool dynbuf_append_str(dynbuf *b, const char *s);

/* Appends printf-formatted text; as dynbuf_append on failure. */
bool dynbuf_printf(dynbuf *b, const char *fmt, ...) OUTPOST_PRINTF(2, 3);
bool dynbuf_vprintf(dynbuf *b, const char *fmt, va_list ap) OUTPOST_PRINTF(2, 0);

/* Whether no append has failed. */
bool dynbuf_ok(const dynbuf *b);

/* Empties b, clearing a failure; keeps its memory (wiped when secret). */
void dynbuf_reset(dynbuf *b);

/* Frees b's memory (wiped first when secret); b is empty and may be used
 * again with the same max and secret. */
void dynbuf_free(dynbuf *b);

/* Hands over b's bytes: malloc'd and NUL-terminated, NULL when b never held
 * a byte; *len (may be NULL) gets their count. b is left empty. The caller
 * frees the result (with dynbuf_secret_free when b was secret). */
char *dynbuf_take(dynbuf *b, size_t *len);

/* Wipes n bytes at p so that the compiler cannot drop it as a dead store
 * (mbedtls_platform_zeroize). p may be NULL when n is 0. */
void dynbuf_wipe(void *p, size_t n);

/* Wipes a NUL-terminated secret (a key, a token) and frees it; NULL is fine. */
void dynbuf_secret_free(char *secret);

#endif
