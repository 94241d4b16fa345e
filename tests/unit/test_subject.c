/*
 * test_subject.c — distinguished names decoded from their DER strings to
 * UTF-8, and the signer_subject pin (authenticode/subject.c). Names are built
 * by hand as mbedTLS's parser leaves them (a list of OID/value pairs,
 * next_merged inside a multi-valued RDN), so every ASN.1 string type and
 * every malformed string is reachable; real certificates made by openssl
 * are covered by tests/integration/test_signature_policy.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <mbedtls/asn1.h>
#include <mbedtls/x509.h>

#include "authenticode/subject.h"

#define OID_C "\x55\x04\x06"
#define OID_O "\x55\x04\x0a"
#define OID_OU "\x55\x04\x0b"
#define OID_CN "\x55\x04\x03"
#define OID_JURISDICTION "\x2b\x06\x01\x04\x01\x82\x37\x3c\x02\x01\x03" /* no short name in mbedTLS 2.28 */

#define UTF8 MBEDTLS_ASN1_UTF8_STRING
#define PRINTABLE MBEDTLS_ASN1_PRINTABLE_STRING
#define IA5 MBEDTLS_ASN1_IA5_STRING
#define T61 MBEDTLS_ASN1_T61_STRING
#define BMP MBEDTLS_ASN1_BMP_STRING
#define UNIVERSAL MBEDTLS_ASN1_UNIVERSAL_STRING

typedef struct attribute {
    const char *oid;   /* DER contents of the OID */
    int tag;           /* ASN.1 string type of the value */
    const char *value; /* its bytes */
    size_t len;        /* their count (strings may hold NULs) */
    bool merged;       /* the next attribute is in the same RDN */
} attribute;

#define ATTR(oid, tag, value)                                                                                          \
    {                                                                                                                  \
        oid, tag, value, sizeof(value) - 1, false                                                                      \
    }
#define ATTR_MERGED(oid, tag, value)                                                                                   \
    {                                                                                                                  \
        oid, tag, value, sizeof(value) - 1, true                                                                       \
    }
#define MAX_ATTRS 6

typedef struct name_case {
    const char *what;
    attribute attrs[MAX_ATTRS]; /* ends with oid NULL */
    const char *text;           /* what subject_format writes */
    bool exact;                 /* what it returns */
    const char *accepts[3];     /* pins that match (NULL-terminated) */
    const char *refuses[4];     /* pins that do not */
} name_case;

static const name_case cases[] = {
    {"ASCII, as mbedtls_x509_dn_gets prints it",
     {ATTR(OID_C, PRINTABLE, "US"), ATTR(OID_O, PRINTABLE, "Example"), ATTR(OID_CN, UTF8, "Example Code Signing")},
     "C=US, O=Example, CN=Example Code Signing",
     true,
     {"C=US, O=Example, CN=Example Code Signing", "Example Code Signing", NULL},
     {"Example", "C=US, O=Example", "example code signing", NULL}},
    {"UTF8String",
     {ATTR(OID_C, PRINTABLE, "DE"), ATTR(OID_O, UTF8, "M\xc3\xbcller GmbH"), ATTR(OID_CN, UTF8, "M\xc3\xbcller GmbH")},
     "C=DE, O=M\xc3\xbcller GmbH, CN=M\xc3\xbcller GmbH",
     true,
     {"C=DE, O=M\xc3\xbcller GmbH, CN=M\xc3\xbcller GmbH", "M\xc3\xbcller GmbH", NULL},
     {"M\xc3\xa4ller GmbH", "M??ller GmbH", "C=DE, O=M??ller GmbH, CN=M??ller GmbH", NULL}},
    {"BMPString",
     {ATTR(OID_CN, BMP,
           "\x00M\x00\xfc\x00l\x00l\x00"
           "e\x00r")},
     "CN=M\xc3\xbcller",
     true,
     {"M\xc3\xbcller", "CN=M\xc3\xbcller", NULL},
     {"M\xc3\xa4ller", "M?ller", NULL}},
    {"BMPString with a surrogate pair (UTF-16)",
     {ATTR(OID_CN, BMP,
           "\x00"
           "A\xd8\x3d\xde\x00")},
     "CN=A\xf0\x9f\x98\x80",
     true,
     {"A\xf0\x9f\x98\x80", NULL},
     {NULL}},
    {"TeletexString read as Latin-1",
     {ATTR(OID_O, T61, "M\xfcller GmbH"), ATTR(OID_CN, T61, "Caf\xe9")},
     "O=M\xc3\xbcller GmbH, CN=Caf\xc3\xa9",
     true,
     {"Caf\xc3\xa9", NULL},
     {"Caf\xe9", NULL}},
    {"IA5String",
     {ATTR(OID_CN, IA5, "signing@example.com")},
     "CN=signing@example.com",
     true,
     {"signing@example.com", NULL},
     {NULL}},
    {"multi-valued RDN and an OID without a short name",
     {ATTR(OID_JURISDICTION, PRINTABLE, "DE"), ATTR_MERGED(OID_O, UTF8, "A"), ATTR(OID_OU, UTF8, "B"),
      ATTR(OID_CN, UTF8, "C")},
     "1.3.6.1.4.1.311.60.2.1.3=DE, O=A + OU=B, CN=C",
     true,
     {"1.3.6.1.4.1.311.60.2.1.3=DE, O=A + OU=B, CN=C", "C", NULL},
     {"O=A, OU=B, CN=C", NULL}},
    {"two CNs: only the whole name can match",
     {ATTR(OID_CN, UTF8, "One"), ATTR(OID_CN, UTF8, "Two")},
     "CN=One, CN=Two",
     true,
     {"CN=One, CN=Two", NULL},
     {"One", "Two", NULL}},
    /* Strings the decoder cannot map: shown with '?', matching nothing. */
    {"invalid UTF-8 (a Latin-1 byte in a UTF8String)",
     {ATTR(OID_O, UTF8, "M\xfcller"), ATTR(OID_CN, UTF8, "Signer")},
     "O=M?ller, CN=Signer",
     false,
     {"Signer", NULL},
     {"O=M?ller, CN=Signer", "O=M\xc3\xbcller, CN=Signer", NULL}},
    {"overlong UTF-8",
     {ATTR(OID_CN, UTF8,
           "A\xc0\xaf"
           "B")},
     "CN=A??B",
     false,
     {NULL},
     {"A/B", "A??B", "CN=A??B", NULL}},
    {"UTF-8 surrogate", {ATTR(OID_CN, UTF8, "\xed\xa0\x80")}, "CN=?", false, {NULL}, {"CN=?", "?", NULL}},
    {"UTF-8 truncated sequence", {ATTR(OID_CN, UTF8, "ab\xe2\x82")}, "CN=ab??", false, {NULL}, {"ab??", NULL}},
    {"control character", {ATTR(OID_CN, UTF8, "a\nb")}, "CN=a?b", false, {NULL}, {"a\nb", "a?b", NULL}},
    {"NUL inside a PrintableString",
     {ATTR(OID_CN, PRINTABLE, "Example\0Evil")},
     "CN=Example?Evil",
     false,
     {NULL},
     {"Example", NULL}},
    {"non-ASCII byte in a PrintableString",
     {ATTR(OID_CN, PRINTABLE, "M\xfcller")},
     "CN=M?ller",
     false,
     {NULL},
     {"M\xc3\xbcller", "M?ller", NULL}},
    {"BMPString of odd length",
     {ATTR(OID_CN, BMP,
           "\x00"
           "A\x00")},
     "CN=A?",
     false,
     {NULL},
     {"A", "A?", NULL}},
    {"BMPString lone surrogate",
     {ATTR(OID_CN, BMP,
           "\xd8\x3d\x00"
           "A")},
     "CN=?A",
     false,
     {NULL},
     {"?A", "A", NULL}},
    {"UniversalString is not mapped",
     {ATTR(OID_CN, UNIVERSAL, "\0\0\0A")},
     "CN=???A",
     false,
     {NULL},
     {"A", "???A", NULL}},
};

/* Builds the mbedTLS list for c into names (MAX_ATTRS entries). */
static mbedtls_x509_name *build(const name_case *c, mbedtls_x509_name names[MAX_ATTRS])
{
    memset(names, 0, sizeof(mbedtls_x509_name) * MAX_ATTRS);
    size_t n = 0;
    while (n < MAX_ATTRS && c->attrs[n].oid)
        n++;
    for (size_t i = 0; i < n; i++) {
        const attribute *a = &c->attrs[i];
        names[i].oid.tag = MBEDTLS_ASN1_OID;
        names[i].oid.p = (unsigned char *)a->oid;
        names[i].oid.len = strlen(a->oid);
        names[i].val.tag = a->tag;
        names[i].val.p = (unsigned char *)a->value;
        names[i].val.len = a->len;
        names[i].next = i + 1 < n ? &names[i + 1] : NULL;
        names[i].MBEDTLS_PRIVATE(next_merged) = a->merged;
    }
    return names;
}

static void test_format_and_match(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const name_case *c = &cases[i];
        mbedtls_x509_name names[MAX_ATTRS];
        build(c, names);
        char text[256];
        bool exact = subject_format(names, text, sizeof text);
        if (strcmp(text, c->text) != 0 || exact != c->exact)
            fail_msg("%s: got \"%s\" (%s), want \"%s\" (%s)", c->what, text, exact ? "exact" : "inexact", c->text,
                     c->exact ? "exact" : "inexact");
        for (size_t k = 0; k < 3 && c->accepts[k]; k++)
            if (!subject_matches(names, c->accepts[k]))
                fail_msg("%s: pin \"%s\" should match", c->what, c->accepts[k]);
        for (size_t k = 0; k < 4 && c->refuses[k]; k++)
            if (subject_matches(names, c->refuses[k]))
                fail_msg("%s: pin \"%s\" should not match", c->what, c->refuses[k]);
    }
}

/* For ASCII subjects the text is exactly mbedTLS's, so existing pins hold. */
static void test_ascii_is_what_mbedtls_prints(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const name_case *c = &cases[i];
        bool ascii = c->exact;
        for (const char *p = c->text; ascii && *p; p++)
            ascii = (unsigned char)*p < 0x80;
        for (size_t k = 0; ascii && c->attrs[k].oid; k++)
            ascii = strcmp(c->attrs[k].oid, OID_JURISDICTION) != 0; /* 2.28 prints "??=" for it */
        if (!ascii)
            continue;
        mbedtls_x509_name names[MAX_ATTRS];
        build(c, names);
        char ours[256], theirs[256];
        subject_format(names, ours, sizeof ours);
        assert_true(mbedtls_x509_dn_gets(theirs, sizeof theirs, names) > 0);
        assert_string_equal(ours, theirs);
    }
}

/* A text that does not fit is cut at a character boundary, never inside a
 * UTF-8 sequence, and is not exact (so it matches no pin). */
static void test_truncation_keeps_utf8_whole(void **state)
{
    (void)state;
    const name_case *c = &cases[1]; /* C=DE, O=Müller GmbH, ... */
    mbedtls_x509_name names[MAX_ATTRS];
    build(c, names);
    for (size_t size = 1; size <= strlen(c->text) + 1; size++) {
        char text[256];
        memset(text, 'x', sizeof text);
        bool exact = subject_format(names, text, size);
        size_t len = strlen(text);
        assert_true(len < size);
        assert_memory_equal(text, c->text, len);
        assert_true(len == 0 || (c->text[len] & 0xC0) != 0x80); /* not inside a sequence */
        assert_int_equal(exact, size == strlen(c->text) + 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_and_match),
        cmocka_unit_test(test_ascii_is_what_mbedtls_prints),
        cmocka_unit_test(test_truncation_keeps_utf8_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
