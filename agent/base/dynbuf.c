/*
 * dynbuf.c — the growable byte buffer (see dynbuf.h). Growth doubles from 256
 * bytes; a secret buffer grows by malloc, copy and wipe instead of realloc,
 * so no old block goes back to the allocator with a key in it.
 */
#include "base/dynbuf.h"

#include <mbedtls/platform_util.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DYNBUF_FIRST_CAP 256

void dynbuf_init(dynbuf *b, size_t max, bool secret)
{
    memset(b, 0, sizeof *b);
    b->max = max && max < SIZE_MAX / 2 ? max : SIZE_MAX / 2;
    b->secret = secret;
}

static bool fail(dynbuf *b, dynbuf_status why)
{
    if (b->status == DYNBUF_OK)
        b->status = why;
    return false;
}

/* Room for need more bytes and the NUL. */
static bool reserve(dynbuf *b, size_t need)
{
    if (b->status != DYNBUF_OK)
        return false;
    if (need > b->max - b->len)
        return fail(b, DYNBUF_TOO_LARGE);
    size_t want = b->len + need + 1;
    if (want <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : DYNBUF_FIRST_CAP;
    while (cap < want)
        cap = cap > SIZE_MAX / 2 ? want : cap * 2;
    if (cap > b->max + 1 && want <= b->max + 1)
        cap = b->max + 1;
    char *grown;
    if (b->secret) {
        grown = malloc(cap);
        if (grown && b->data) {
            memcpy(grown, b->data, b->len + 1);
            dynbuf_wipe(b->data, b->cap);
            free(b->data);
        }
    } else {
        grown = realloc(b->data, cap);
    }
    if (!grown)
        return fail(b, DYNBUF_NOMEM);
    b->data = grown;
    b->cap = cap;
    return true;
}

bool dynbuf_append(dynbuf *b, const void *data, size_t len)
{
    if (!reserve(b, len))
        return false;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return true;
}

bool dynbuf_append_str(dynbuf *b, const char *s)
{
    return dynbuf_append(b, s, strlen(s));
}

bool dynbuf_vprintf(dynbuf *b, const char *fmt, va_list ap)
{
    if (b->status != DYNBUF_OK)
        return false;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    bool ok = n >= 0 ? reserve(b, (size_t)n) : fail(b, DYNBUF_NOMEM); /* vsnprintf fails on encoding or memory */
    if (ok) {
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
    return ok;
}

bool dynbuf_printf(dynbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool ok = dynbuf_vprintf(b, fmt, ap);
    va_end(ap);
    return ok;
}

bool dynbuf_ok(const dynbuf *b)
{
    return b->status == DYNBUF_OK;
}

void dynbuf_reset(dynbuf *b)
{
    if (b->data && b->secret)
        dynbuf_wipe(b->data, b->cap);
    if (b->data)
        b->data[0] = '\0';
    b->len = 0;
    b->status = DYNBUF_OK;
}

void dynbuf_free(dynbuf *b)
{
    if (b->data && b->secret)
        dynbuf_wipe(b->data, b->cap);
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->status = DYNBUF_OK;
}

char *dynbuf_take(dynbuf *b, size_t *len)
{
    char *data = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    b->status = DYNBUF_OK;
    return data;
}

void dynbuf_wipe(void *p, size_t n)
{
    /* Mbed TLS's wipe cannot be dropped as a dead store before free (it
     * calls memset through a volatile function pointer in 2.28; 3.x uses
     * explicit_bzero, memset_s or SecureZeroMemory where they exist). */
    if (p && n)
        mbedtls_platform_zeroize(p, n);
}

void dynbuf_secret_free(char *secret)
{
    if (!secret)
        return;
    dynbuf_wipe(secret, strlen(secret));
    free(secret);
}
