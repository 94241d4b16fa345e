/* text.c — portable string helpers (see text.h). */
#include "base/text.h"

#include <stdlib.h>
#include <string.h>

char *text_dup(const char *s)
{
    return s ? text_dup_n(s, strlen(s)) : NULL;
}

char *text_dup_n(const char *s, size_t n)
{
    char *copy = malloc(n + 1);
    if (copy) {
        memcpy(copy, s, n);
        copy[n] = '\0';
    }
    return copy;
}

static int ascii_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

bool text_equal_nocase_n(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ascii_lower((unsigned char)a[i]) != ascii_lower((unsigned char)b[i]))
            return false;
        if (a[i] == '\0')
            return true;
    }
    return true;
}

bool text_equal_nocase(const char *a, const char *b)
{
    size_t n = strlen(a);
    return n == strlen(b) && text_equal_nocase_n(a, b, n);
}

bool text_starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool text_parse_digits(const char **p, int64_t max_value, int64_t *out)
{
    const char *s = *p;
    int64_t v = 0;
    if (*s < '0' || *s > '9')
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        int digit = *s - '0';
        if (v > (max_value - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    *p = s;
    *out = v;
    return true;
}

static bool is_c1_lead(const unsigned char *p)
{
    return p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
}

char *text_escape_controls(const char *s)
{
    if (!s)
        return NULL;
    /* Worst case every byte becomes four ("\xHH"). */
    size_t len = strlen(s);
    char *out = malloc(len * 4 + 1);
    if (!out)
        return NULL;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned c = *p;
        if (is_c1_lead(p))
            c = *++p; /* U+0080..U+009F: escape the code point, once */
        else if (!(c < 0x20 && c != '\t') && c != 0x7f) {
            out[n++] = (char)c;
            continue;
        }
        out[n++] = '\\';
        out[n++] = 'x';
        unsigned char byte = (unsigned char)c;
        text_hex(&byte, 1, out + n); /* its NUL is overwritten next or below */
        n += 2;
    }
    out[n] = '\0';
    return out;
}

bool text_is_hex(const char *s, size_t len, bool lower_only)
{
    if (!s || strlen(s) != len)
        return false;
    for (size_t i = 0; i < len; i++)
        if (text_hex_value(s[i]) < 0 || (lower_only && s[i] >= 'A' && s[i] <= 'F'))
            return false;
    return true;
}

bool text_unhex(const char *hex, void *out, size_t n)
{
    unsigned char *b = out;
    for (size_t i = 0; i < n; i++) {
        int hi = text_hex_value(hex[2 * i]);
        int lo = hi < 0 ? -1 : text_hex_value(hex[2 * i + 1]);
        if (lo < 0)
            return false;
        b[i] = (unsigned char)(hi * 16 + lo);
    }
    return true;
}

void text_hex(const void *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *b = bytes;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

size_t text_utf8_bom_length(const char *data, size_t len)
{
    const unsigned char *u = (const unsigned char *)data;
    return len >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF ? 3 : 0;
}

bool text_looks_utf16(const char *data, size_t len)
{
    const unsigned char *u = (const unsigned char *)data;
    if (len >= 2 && ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == 0xFE && u[1] == 0xFF)))
        return true;
    /* ASCII text in UTF-16 has a NUL in every other byte. */
    return memchr(data, '\0', len < 64 ? len : 64) != NULL;
}

char *text_url_redact(const char *url)
{
    if (!url)
        return NULL;
    const char *scheme_end = strstr(url, "://");
    if (!scheme_end)
        return text_dup(url);
    const char *authority = scheme_end + 3;
    size_t authority_len = strcspn(authority, "/?#");
    const char *at = NULL;
    for (const char *p = authority; p < authority + authority_len; p++)
        if (*p == '@')
            at = p; /* the last one: a password may hold an unescaped '@' */
    if (!at)
        return text_dup(url);
    size_t head = (size_t)(authority - url), tail = strlen(at + 1);
    char *out = malloc(head + tail + 1);
    if (!out)
        return NULL;
    memcpy(out, url, head);
    memcpy(out + head, at + 1, tail + 1);
    return out;
}

int text_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
