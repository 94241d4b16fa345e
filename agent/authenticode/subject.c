/*
 * subject.c — distinguished names decoded to UTF-8, and the signer_subject
 * pin (see subject.h).
 *
 * A text_writer appends whole characters to a caller's buffer and remembers
 * whether everything fit; decode_value turns one attribute's string into
 * characters by its ASN.1 tag, remembering whether every one was mapped
 * exactly. subject_format walks the name as mbedtls_x509_dn_gets does.
 */
#include "authenticode/subject.h"

#include <stdint.h>
#include <string.h>

#include <mbedtls/asn1.h>
#include <mbedtls/oid.h>

/* The longest subject a pin is compared with; real ones are ~100 bytes. */
#define SUBJECT_MATCH_MAX 2048

typedef struct text_writer {
    char *out;   /* the caller's buffer */
    size_t size; /* its size, > 0 */
    size_t len;  /* bytes written, without the NUL */
    bool fit;    /* false once a character did not fit (nothing is written after it) */
    bool exact;  /* false once a character could not be mapped */
} text_writer;

static void put_bytes(text_writer *w, const char *bytes, size_t n)
{
    if (!w->fit || w->len + n >= w->size) {
        w->fit = false;
        return;
    }
    memcpy(w->out + w->len, bytes, n);
    w->len += n;
    w->out[w->len] = '\0';
}

static void put_text(text_writer *w, const char *s)
{
    put_bytes(w, s, strlen(s));
}

/* A character nothing maps: shown as '?', and the text is no longer exact. */
static void put_unmapped(text_writer *w)
{
    w->exact = false;
    put_bytes(w, "?", 1);
}

/* Appends code point cp as UTF-8; control characters, surrogates and
 * values past U+10FFFF are unmapped. */
static void put_code_point(text_writer *w, uint32_t cp)
{
    char b[4];
    if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || (cp >= 0xD800 && cp < 0xE000) || cp > 0x10FFFF) {
        put_unmapped(w);
    } else if (cp < 0x80) {
        b[0] = (char)cp;
        put_bytes(w, b, 1);
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3F));
        put_bytes(w, b, 2);
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12);
        b[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        put_bytes(w, b, 3);
    } else {
        b[0] = (char)(0xF0 | cp >> 18);
        b[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        b[2] = (char)(0x80 | (cp >> 6 & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        put_bytes(w, b, 4);
    }
}

/* One UTF-8 sequence at p (n bytes left): its code point and length, or
 * length 0 when it is not well-formed (overlong, truncated, bad continuation). */
static size_t utf8_next(const unsigned char *p, size_t n, uint32_t *cp)
{
    static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
    size_t len = p[0] < 0x80             ? 1
                 : (p[0] & 0xE0) == 0xC0 ? 2
                 : (p[0] & 0xF0) == 0xE0 ? 3
                 : (p[0] & 0xF8) == 0xF0 ? 4
                                         : 0;
    if (len == 0 || len > n)
        return 0;
    uint32_t v = len == 1 ? p[0] : p[0] & (0x7Fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3Fu);
    }
    if (v < min[len - 1])
        return 0;
    *cp = v;
    return len;
}

static void decode_utf8(text_writer *w, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = utf8_next(p + i, n - i, &cp);
        if (len == 0) {
            put_unmapped(w);
            i++;
        } else {
            put_code_point(w, cp);
            i += len;
        }
    }
}

/* UTF-16BE; a BMPString is UCS-2, but Windows writes UTF-16 into it. */
static void decode_bmp(text_writer *w, const unsigned char *p, size_t n)
{
    size_t i = 0;
    for (; i + 1 < n; i += 2) {
        uint32_t u = (uint32_t)p[i] << 8 | p[i + 1];
        if (u >= 0xD800 && u < 0xDC00 && i + 3 < n) {
            uint32_t low = (uint32_t)p[i + 2] << 8 | p[i + 3];
            if (low >= 0xDC00 && low < 0xE000) {
                put_code_point(w, 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00));
                i += 2;
                continue;
            }
        }
        put_code_point(w, u); /* a lone surrogate is unmapped there */
    }
    if (i < n)
        put_unmapped(w); /* odd length */
}

/* Single-byte strings: ASCII (PrintableString, IA5String), or Latin-1
 * (TeletexString, as every real-world certificate uses it). */
static void decode_bytes(text_writer *w, const unsigned char *p, size_t n, bool latin1)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x80 || latin1)
            put_code_point(w, p[i]);
        else
            put_unmapped(w);
    }
}

static void decode_value(text_writer *w, const mbedtls_asn1_buf *val)
{
    const unsigned char *p = val->p;
    size_t n = p ? val->len : 0;
    switch (val->tag) {
    case MBEDTLS_ASN1_UTF8_STRING: decode_utf8(w, p, n); break;
    case MBEDTLS_ASN1_PRINTABLE_STRING:
    case MBEDTLS_ASN1_IA5_STRING: decode_bytes(w, p, n, false); break;
    case MBEDTLS_ASN1_T61_STRING: decode_bytes(w, p, n, true); break;
    case MBEDTLS_ASN1_BMP_STRING: decode_bmp(w, p, n); break;
    default:
        /* Another type (UniversalString, a BIT STRING...): shown as
         * mbedTLS shows it, but it matches nothing. */
        for (size_t i = 0; i < n; i++)
            put_bytes(w, p[i] >= 0x20 && p[i] < 0x7F ? (const char *)p + i : "?", 1);
        w->exact = false;
        break;
    }
}

static void put_attribute_name(text_writer *w, const mbedtls_asn1_buf *oid)
{
    const char *short_name = NULL;
    char dotted[64];
    if (mbedtls_oid_get_attr_short_name(oid, &short_name) == 0) {
        put_text(w, short_name);
    } else if (mbedtls_oid_get_numeric_string(dotted, sizeof dotted, oid) > 0) {
        put_text(w, dotted);
    } else {
        put_text(w, "??");
        w->exact = false;
    }
    put_text(w, "=");
}

bool subject_format(const mbedtls_x509_name *name, char *out, size_t size)
{
    text_writer w = {out, size, 0, true, true};
    out[0] = '\0';
    bool first = true, merged = false;
    for (const mbedtls_x509_name *n = name; n; n = n->next) {
        if (!n->oid.p)
            continue;
        if (!first)
            put_text(&w, merged ? " + " : ", ");
        first = false;
        put_attribute_name(&w, &n->oid);
        decode_value(&w, &n->val);
        merged = n->MBEDTLS_PRIVATE(next_merged) != 0; /* no accessor in 3.6 */
    }
    return w.fit && w.exact;
}

bool subject_format_der(const unsigned char *der, size_t len, char *out, size_t size)
{
    text_writer w = {out, size, 0, true, true};
    out[0] = '\0';
    unsigned char *p = (unsigned char *)der, *end = p + len;
    size_t n;
    if (mbedtls_asn1_get_tag(&p, end, &n, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0 ||
        n != (size_t)(end - p))
        return false;
    bool first = true;
    while (p < end) { /* RelativeDistinguishedName ::= SET OF AttributeTypeAndValue */
        unsigned char *set_end;
        if (mbedtls_asn1_get_tag(&p, end, &n, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SET) != 0)
            return false;
        set_end = p + n;
        bool in_set = false;
        while (p < set_end) {
            mbedtls_asn1_buf oid, val;
            unsigned char *seq_end;
            if (mbedtls_asn1_get_tag(&p, set_end, &n, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0)
                return false;
            seq_end = p + n;
            if (mbedtls_asn1_get_tag(&p, seq_end, &oid.len, MBEDTLS_ASN1_OID) != 0)
                return false;
            oid.tag = MBEDTLS_ASN1_OID;
            oid.p = p;
            p += oid.len;
            if (p >= seq_end)
                return false;
            val.tag = *p++;
            if (mbedtls_asn1_get_len(&p, seq_end, &val.len) != 0 || val.len != (size_t)(seq_end - p))
                return false;
            val.p = p;
            p = seq_end;
            if (!first)
                put_text(&w, in_set ? " + " : ", ");
            first = false;
            in_set = true;
            put_attribute_name(&w, &oid);
            decode_value(&w, &val);
        }
    }
    return w.fit && w.exact;
}

/* The one CN attribute of name, or NULL (none, or several). */
static const mbedtls_x509_name *single_cn(const mbedtls_x509_name *name)
{
    const mbedtls_x509_name *cn = NULL;
    for (const mbedtls_x509_name *n = name; n; n = n->next) {
        if (n->oid.p && MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &n->oid) == 0) {
            if (cn)
                return NULL;
            cn = n;
        }
    }
    return cn;
}

bool subject_matches(const mbedtls_x509_name *name, const char *wanted)
{
    char text[SUBJECT_MATCH_MAX];
    if (subject_format(name, text, sizeof text) && strcmp(text, wanted) == 0)
        return true;
    const mbedtls_x509_name *cn = single_cn(name);
    if (!cn)
        return false;
    text_writer w = {text, sizeof text, 0, true, true};
    text[0] = '\0';
    decode_value(&w, &cn->val);
    return w.fit && w.exact && strcmp(text, wanted) == 0;
}
