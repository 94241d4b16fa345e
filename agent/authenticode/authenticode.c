/*
 * authenticode.c — Authenticode verification (see authenticode.h for the
 * rules), built on Mbed TLS's asn1, oid, md, pk and x509_crt layers.
 *
 * Mbed TLS's own pkcs7 module cannot read Authenticode (it assumes no signed
 * attributes and one certificate), so this file walks the PKCS#7 / CMS
 * SignedData itself with mbedtls_asn1_get_tag, over a buffer it owns; every
 * length comes from mbedtls_asn1_get_tag, which checks it against the end of
 * the enclosing element. The structure is fixed, so there is no recursion.
 *
 * Layout of the file:
 *   DER reading helpers, OIDs, time conversion
 *   SignedData / SignerInfo parsing            (cms_*)
 *   signer checks shared by the signature and its timestamps (signer_*)
 *   certificate chains at a given time         (chain_*)
 *   timestamps: RFC 3161 and legacy             (timestamp_*)
 *   the primary signature                       (signature_verify)
 *   file formats and the public entry points
 *
 * Judging time. Mbed TLS 2.28 checks certificate validity against the
 * current clock inside mbedtls_x509_crt_verify_with_profile. We pass a
 * verify callback that clears MBEDTLS_X509_BADCERT_EXPIRED/FUTURE on every
 * certificate of the chain (root included) and sets them again from the
 * certificate's own dates compared with the judging time. The only other
 * use Mbed TLS makes of the clock is to prefer, among several candidate
 * parents with the same name, one valid now; a candidate that is not is
 * still used as a fallback, and our callback then judges it.
 */
#include "authenticode/authenticode.h"
#include "authenticode/authenticode_int.h"
#include "core/timefmt.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/asn1.h>
#include <mbedtls/error.h>
#include <mbedtls/md.h>
#include <mbedtls/oid.h>
#include <mbedtls/pem.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform.h>
#include <mbedtls/x509.h>
#include <mbedtls/x509_crl.h>
#include <mbedtls/x509_crt.h>

#include "authenticode/mbedtls_compat.h"
#include "authenticode/msi.h"
#include "authenticode/pe.h"
#include "authenticode/subject.h"
#include "base/text.h"
#include "platform/platform.h"

#define MAX_CARRIED_CERTIFICATES 64      /* certificates we parse from one SignedData */
#define MAX_CA_FILE (4u * 1024u * 1024u) /* trusted CA file size cap */
#define MAX_SYSTEM_STORE (64u << 20)     /* "system": the OS bundle is larger */
#define MAX_CRL_FILE (64u << 20)         /* one CRL file (a large CA's CRL is tens of MiB) */
#define TIMESTAMP_FUTURE_SLACK 300       /* a timestamp may be this far after `now` (clock skew) */

/* ---- DER reading --------------------------------------------------------- */

typedef struct span {
    unsigned char *p; /* first byte (inside a buffer this file owns) */
    size_t len;       /* length in bytes; 0 for an absent element */
} span;

typedef struct der_reader {
    unsigned char *p;   /* next element */
    unsigned char *end; /* end of the enclosing element's contents */
} der_reader;

static der_reader der_of(span s)
{
    der_reader d = {s.p, s.p ? s.p + s.len : NULL}; /* NULL + 0 is undefined in C */
    return d;
}

/* Reads one element with tag: contents (may be NULL) and the whole element
 * (may be NULL). Leaves the reader unmoved when the tag does not match. */
static bool der_read(der_reader *d, int tag, span *contents, span *element)
{
    unsigned char *start = d->p;
    size_t len;
    if (d->p >= d->end || mbedtls_asn1_get_tag(&d->p, d->end, &len, tag) != 0) {
        d->p = start;
        return false;
    }
    if (contents) {
        contents->p = d->p;
        contents->len = len;
    }
    if (element) {
        element->p = start;
        element->len = (size_t)(d->p - start) + len;
    }
    d->p += len;
    return true;
}

static bool der_peek(const der_reader *d, int tag)
{
    return d->p < d->end && *d->p == tag;
}

static bool der_skip(der_reader *d)
{
    return d->p < d->end && der_read(d, *d->p, NULL, NULL);
}

static bool der_done(const der_reader *d)
{
    return d->p == d->end;
}

#define TAG_SEQUENCE (MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)
#define TAG_SET (MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SET)
#define TAG_CONTEXT(n) (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | (n))

/* AlgorithmIdentifier: SEQUENCE { OID, parameters ANY OPTIONAL }. */
static bool der_read_algorithm(der_reader *d, span *oid)
{
    span seq;
    if (!der_read(d, TAG_SEQUENCE, &seq, NULL))
        return false;
    der_reader in = der_of(seq);
    return der_read(&in, MBEDTLS_ASN1_OID, oid, NULL);
}

/* ---- OIDs (DER contents) ------------------------------------------------- */

typedef struct oid_bytes {
    const char *bytes;
    size_t len;
} oid_bytes;

#define OID(s)                                                                                                         \
    {                                                                                                                  \
        s, sizeof(s) - 1                                                                                               \
    }
static const oid_bytes OID_SIGNED_DATA = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x07\x02");
static const oid_bytes OID_CONTENT_TYPE = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x09\x03");
static const oid_bytes OID_MESSAGE_DIGEST = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x09\x04");
static const oid_bytes OID_SIGNING_TIME = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x09\x05");
static const oid_bytes OID_COUNTERSIGNATURE = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x09\x06");
static const oid_bytes OID_TST_INFO = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x09\x10\x01\x04");
static const oid_bytes OID_SPC_INDIRECT_DATA = OID("\x2b\x06\x01\x04\x01\x82\x37\x02\x01\x04");
static const oid_bytes OID_SPC_PE_IMAGE_DATA = OID("\x2b\x06\x01\x04\x01\x82\x37\x02\x01\x0f");
static const oid_bytes OID_SPC_SIPINFO = OID("\x2b\x06\x01\x04\x01\x82\x37\x02\x01\x1e");
static const oid_bytes OID_RFC3161_TIMESTAMP = OID("\x2b\x06\x01\x04\x01\x82\x37\x03\x03\x01");
static const oid_bytes OID_EKU_CODE_SIGNING = OID("\x2b\x06\x01\x05\x05\x07\x03\x03");
static const oid_bytes OID_EKU_TIME_STAMPING = OID("\x2b\x06\x01\x05\x05\x07\x03\x08");
static const oid_bytes OID_NESTED_SIGNATURE = OID("\x2b\x06\x01\x04\x01\x82\x37\x02\x04\x01");
static const oid_bytes OID_CERTIFICATE_POLICIES = OID("\x55\x1d\x20");

static bool oid_is(span s, oid_bytes oid)
{
    return s.len == oid.len && memcmp(s.p, oid.bytes, oid.len) == 0;
}

static bool oid_is_raw(const unsigned char *p, size_t len, oid_bytes oid)
{
    return len == oid.len && memcmp(p, oid.bytes, oid.len) == 0;
}

/* ---- Digests ------------------------------------------------------------- */

static bool md_from_oid(span oid, mbedtls_md_type_t *md)
{
    mbedtls_asn1_buf buf = {MBEDTLS_ASN1_OID, oid.len, oid.p};
    return mbedtls_oid_get_md_alg(&buf, md) == 0;
}

static const char *md_name(mbedtls_md_type_t md)
{
    switch (md) {
    case MBEDTLS_MD_SHA1: return "sha1";
    case MBEDTLS_MD_SHA256: return "sha256";
    case MBEDTLS_MD_SHA384: return "sha384";
    case MBEDTLS_MD_SHA512: return "sha512";
    default: return "other";
    }
}

/* Whether the policy accepts md for signatures, digests and chains. */
static bool md_allowed(mbedtls_md_type_t md, const authenticode_policy *policy)
{
    return md == MBEDTLS_MD_SHA256 || md == MBEDTLS_MD_SHA384 || md == MBEDTLS_MD_SHA512 ||
           (md == MBEDTLS_MD_SHA1 && policy->allow_sha1);
}

/* out must hold MBEDTLS_MD_MAX_SIZE bytes; returns the digest size, 0 on failure. */
static size_t md_hash(mbedtls_md_type_t md, const unsigned char *data, size_t len, unsigned char *out)
{
    const mbedtls_md_info_t *info = mbedtls_md_info_from_type(md);
    if (!info || mbedtls_md(info, data, len, out) != 0)
        return 0;
    return mbedtls_md_get_size(info);
}

static bool digest_equals(span expected, const unsigned char *actual, size_t actual_len)
{
    return expected.len == actual_len && memcmp(expected.p, actual, actual_len) == 0;
}

/* ---- Time ---------------------------------------------------------------- */

static int64_t x509_time_to_unix(const mbedtls_x509_time *t)
{
    return timefmt_from_civil(t->year, t->mon, t->day, t->hour, t->min, t->sec);
}

static bool parse_digits(const unsigned char *p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return true;
}

/* UTCTime (YYMMDDhhmmssZ) or GeneralizedTime (YYYYMMDDhhmmss[.f*]Z). */
static bool parse_asn1_time(der_reader *d, int64_t *out)
{
    span t;
    int year, mon, day, hour, min, sec;
    const unsigned char *p;
    size_t rest;
    if (der_read(d, MBEDTLS_ASN1_UTC_TIME, &t, NULL)) {
        if (t.len != 13 || !parse_digits(t.p, 2, &year))
            return false;
        year += year < 50 ? 2000 : 1900;
        p = t.p + 2;
        rest = 11;
    } else if (der_read(d, MBEDTLS_ASN1_GENERALIZED_TIME, &t, NULL)) {
        if (t.len < 15 || !parse_digits(t.p, 4, &year))
            return false;
        p = t.p + 4;
        rest = t.len - 4;
    } else {
        return false;
    }
    if (!parse_digits(p, 2, &mon) || !parse_digits(p + 2, 2, &day) || !parse_digits(p + 4, 2, &hour) ||
        !parse_digits(p + 6, 2, &min) || !parse_digits(p + 8, 2, &sec))
        return false;
    size_t i = 10;
    if (i < rest && p[i] == '.') {
        for (i++; i < rest && p[i] >= '0' && p[i] <= '9'; i++)
            ;
    }
    if (i + 1 != rest || p[i] != 'Z')
        return false;
    if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
        return false;
    *out = timefmt_from_civil(year, mon, day, hour, min, sec);
    return true;
}

static void format_time(int64_t t, char *buf, size_t size)
{
    int64_t days = t >= 0 ? t / 86400 : (t - 86399) / 86400;
    int64_t secs = t - days * 86400;
    /* civil_from_days (H. Hinnant) */
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    if (y < 0 || y > 9999) {
        snprintf(buf, size, "(time out of range)");
        return;
    }
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y, (int)m, (int)d, (int)(secs / 3600),
             (int)(secs / 60 % 60), (int)(secs % 60));
}

/* ---- SignedData / SignerInfo --------------------------------------------- */

typedef struct cms_signer {
    span issuer;         /* issuer Name, whole element (compared with x509 issuer_raw) */
    span serial;         /* serialNumber INTEGER contents */
    span digest_alg;     /* digestAlgorithm OID */
    span attrs;          /* signed attributes, whole [0] element; len 0 when absent */
    span sig_alg;        /* signatureAlgorithm OID */
    span signature;      /* signature OCTET STRING contents */
    span unsigned_attrs; /* unsigned attributes [1] contents; len 0 when absent */
} cms_signer;

typedef struct cms_signed_data {
    span content_type; /* encapsulated content type OID */
    span content;      /* the element inside [0] EXPLICIT eContent; len 0 when absent */
    span certificates; /* [0] IMPLICIT certificates contents; len 0 when absent */
    cms_signer signer; /* the one SignerInfo */
} cms_signed_data;

/* Parses a SignerInfo element (version 1: issuerAndSerialNumber). */
static bool cms_parse_signer(span element, cms_signer *s, const char **why)
{
    memset(s, 0, sizeof *s);
    der_reader d = der_of(element), in;
    span seq, ias, version;
    *why = "SignerInfo is malformed";
    if (!der_read(&d, TAG_SEQUENCE, &seq, NULL) || !der_done(&d))
        return false;
    in = der_of(seq);
    if (!der_read(&in, MBEDTLS_ASN1_INTEGER, &version, NULL))
        return false;
    if (!der_read(&in, TAG_SEQUENCE, &ias, NULL)) {
        *why = "SignerInfo names its certificate by key identifier (unsupported)";
        return false;
    }
    der_reader id = der_of(ias);
    if (!der_read(&id, TAG_SEQUENCE, NULL, &s->issuer) || !der_read(&id, MBEDTLS_ASN1_INTEGER, &s->serial, NULL) ||
        !der_done(&id))
        return false;
    if (!der_read_algorithm(&in, &s->digest_alg))
        return false;
    if (der_peek(&in, TAG_CONTEXT(0)) && !der_read(&in, TAG_CONTEXT(0), NULL, &s->attrs))
        return false;
    if (!der_read_algorithm(&in, &s->sig_alg) || !der_read(&in, MBEDTLS_ASN1_OCTET_STRING, &s->signature, NULL))
        return false;
    if (der_peek(&in, TAG_CONTEXT(1)) && !der_read(&in, TAG_CONTEXT(1), &s->unsigned_attrs, NULL))
        return false;
    if (!der_done(&in) || s->signature.len == 0)
        return false;
    return true;
}

/* Parses ContentInfo { signedData, [0] SignedData } that fills element
 * exactly. Requires exactly one SignerInfo. */
static bool cms_parse_signed_data(span element, cms_signed_data *sd, const char **why)
{
    memset(sd, 0, sizeof *sd);
    der_reader d = der_of(element), ci, inner, body;
    span ci_seq, type, explicit0, body_seq, version, digest_algs, encap, signers;
    *why = "PKCS#7 SignedData is malformed";
    if (!der_read(&d, TAG_SEQUENCE, &ci_seq, NULL) || !der_done(&d))
        return false;
    ci = der_of(ci_seq);
    if (!der_read(&ci, MBEDTLS_ASN1_OID, &type, NULL))
        return false;
    if (!oid_is(type, OID_SIGNED_DATA)) {
        *why = "PKCS#7 content is not SignedData";
        return false;
    }
    if (!der_read(&ci, TAG_CONTEXT(0), &explicit0, NULL) || !der_done(&ci))
        return false;
    inner = der_of(explicit0);
    if (!der_read(&inner, TAG_SEQUENCE, &body_seq, NULL) || !der_done(&inner))
        return false;
    body = der_of(body_seq);
    if (!der_read(&body, MBEDTLS_ASN1_INTEGER, &version, NULL) || !der_read(&body, TAG_SET, &digest_algs, NULL) ||
        !der_read(&body, TAG_SEQUENCE, &encap, NULL))
        return false;
    der_reader e = der_of(encap);
    if (!der_read(&e, MBEDTLS_ASN1_OID, &sd->content_type, NULL))
        return false;
    if (der_peek(&e, TAG_CONTEXT(0))) {
        span content;
        if (!der_read(&e, TAG_CONTEXT(0), &content, NULL))
            return false;
        der_reader c = der_of(content);
        if (!der_skip(&c) || !der_done(&c))
            return false;
        sd->content = content;
    }
    if (!der_done(&e))
        return false;
    if (der_peek(&body, TAG_CONTEXT(0)) && !der_read(&body, TAG_CONTEXT(0), &sd->certificates, NULL))
        return false;
    if (der_peek(&body, TAG_CONTEXT(1)) && !der_skip(&body)) /* CRLs: not used */
        return false;
    if (!der_read(&body, TAG_SET, &signers, NULL) || !der_done(&body))
        return false;
    der_reader si = der_of(signers);
    span first;
    if (!der_read(&si, TAG_SEQUENCE, NULL, &first)) {
        *why = "PKCS#7 SignedData has no signer";
        return false;
    }
    if (!der_done(&si)) {
        *why = "PKCS#7 SignedData has more than one signer";
        return false;
    }
    return cms_parse_signer(first, &sd->signer, why);
}

/*
 * Finds the attribute of type oid in an attribute list (the contents of a
 * SET OF Attribute) and returns the contents of its values SET. Returns
 * 0 when absent, 1 when found once, -1 when repeated or malformed.
 */
static int cms_find_attribute(span list, oid_bytes oid, span *values)
{
    der_reader d = der_of(list);
    int found = 0;
    while (!der_done(&d)) {
        span attr, type, set;
        if (!der_read(&d, TAG_SEQUENCE, &attr, NULL))
            return -1;
        der_reader a = der_of(attr);
        if (!der_read(&a, MBEDTLS_ASN1_OID, &type, NULL) || !der_read(&a, TAG_SET, &set, NULL) || !der_done(&a))
            return -1;
        if (oid_is(type, oid)) {
            if (found)
                return -1;
            found = 1;
            *values = set;
        }
    }
    return found;
}

/* Contents of the signed attributes SET (attrs is the whole [0] element). */
static span cms_attrs_contents(span attrs)
{
    span s = {NULL, 0};
    der_reader d = der_of(attrs);
    der_read(&d, TAG_CONTEXT(0), &s, NULL);
    return s;
}

/* The one value of a single-valued attribute, whole element. */
static bool cms_single_value(span values, span *value)
{
    der_reader d = der_of(values);
    if (d.p >= d.end || !der_read(&d, *d.p, NULL, value))
        return false;
    return der_done(&d);
}

/* ---- Notes: what could not be read ------------------------------------- */

/* Appends one printf-style note to notes (size bytes), "; " between notes,
 * cut to fit. */
static void OUTPOST_PRINTF(3, 4) notes_add(char *notes, size_t size, const char *fmt, ...)
{
    size_t used = strlen(notes);
    if (used + 3 >= size)
        return;
    if (used) {
        memcpy(notes + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(notes + used, size - used, fmt, ap);
    va_end(ap);
}

/* ---- Certificates -------------------------------------------------------- */

/* Extensions Mbed TLS does not handle itself. A certificatePolicies
 * extension with policies it does not know (Microsoft's PCA certificates
 * mark theirs critical) only states policy: accepted. Any other unknown
 * critical extension keeps the certificate unreadable. */
static int certs_ext_cb(void *ctx, mbedtls_x509_crt const *crt, mbedtls_x509_buf const *oid, int critical,
                        const unsigned char *p, const unsigned char *end)
{
    (void)ctx;
    (void)crt;
    (void)p;
    (void)end;
    if (oid_is_raw(oid->p, oid->len, OID_CERTIFICATE_POLICIES))
        return 0;
    return critical ? MBEDTLS_ERR_X509_FEATURE_UNAVAILABLE : 0;
}

/* Parses one DER certificate into *pool (appending); Mbed TLS's result. */
static int certs_add(mbedtls_x509_crt *pool, const unsigned char *der, size_t len)
{
    return mbedtls_x509_crt_parse_der_with_ext_cb(pool, der, len, 1, certs_ext_cb, NULL);
}

/* The subject of a certificate Mbed TLS refused, read from its DER
 * (Certificate { TBSCertificate { [0] version, serial, signature, issuer,
 * validity, subject ... } }) into out; "" when even that is unreadable. */
static void certs_raw_subject(const unsigned char *der, size_t len, char *out, size_t size)
{
    out[0] = '\0';
    span whole = {(unsigned char *)der, len}, cert, tbs, subject;
    der_reader d = der_of(whole), c, t;
    if (!der_read(&d, TAG_SEQUENCE, &cert, NULL))
        return;
    c = der_of(cert);
    if (!der_read(&c, TAG_SEQUENCE, &tbs, NULL))
        return;
    t = der_of(tbs);
    if (der_peek(&t, TAG_CONTEXT(0)))
        der_skip(&t);
    if (!der_read(&t, MBEDTLS_ASN1_INTEGER, NULL, NULL) || !der_read(&t, TAG_SEQUENCE, NULL, NULL) ||
        !der_read(&t, TAG_SEQUENCE, NULL, NULL) || !der_read(&t, TAG_SEQUENCE, NULL, NULL) ||
        !der_read(&t, TAG_SEQUENCE, &subject, NULL))
        return;
    mbedtls_x509_name name;
    memset(&name, 0, sizeof name);
    unsigned char *p = subject.p;
    if (mbedtls_x509_get_name(&p, subject.p + subject.len, &name) == 0)
        (void)subject_format(&name, out, size);
    for (mbedtls_x509_name *n = name.next; n;) {
        mbedtls_x509_name *next = n->next;
        mbedtls_free(n);
        n = next;
    }
}

/* Notes that certificate number position (1-based) of where could not be
 * read: its subject when the DER shows it, and Mbed TLS's error. */
static void certs_note_unreadable(const unsigned char *der, size_t len, const char *where, unsigned position, int ret,
                                  char *notes, size_t notes_size)
{
    char subject[128], why[96];
    certs_raw_subject(der, len, subject, sizeof subject);
    mbedtls_strerror(ret, why, sizeof why);
    notes_add(notes, notes_size, "certificate %u of %s%s%s%s cannot be read (Mbed TLS -0x%04x: %s)", position, where,
              subject[0] ? " (\"" : "", subject, subject[0] ? "\")" : "", (unsigned)-ret, why);
}

/* Parses every certificate of a [0] certificates set into *pool
 * (appending). One that cannot be read is named in notes: it can only fail
 * to be found, and the chain's failure then says why. */
static void certs_parse(span certificates, mbedtls_x509_crt *pool, const char *where, char *notes, size_t notes_size)
{
    der_reader d = der_of(certificates);
    unsigned position = 0;
    while (!der_done(&d) && position < MAX_CARRIED_CERTIFICATES) {
        span cert;
        if (d.p >= d.end || !der_read(&d, *d.p, NULL, &cert))
            return;
        position++;
        if (*cert.p != TAG_SEQUENCE)
            continue; /* an attribute certificate or other choice: not for chains */
        int ret = certs_add(pool, cert.p, cert.len);
        if (ret != 0)
            certs_note_unreadable(cert.p, cert.len, where, position, ret, notes, notes_size);
    }
}

static const mbedtls_x509_crt *certs_find(const mbedtls_x509_crt *pool, const cms_signer *s)
{
    for (const mbedtls_x509_crt *c = pool; c && c->raw.len; c = c->next) {
        if (c->issuer_raw.len == s->issuer.len && memcmp(c->issuer_raw.p, s->issuer.p, s->issuer.len) == 0 &&
            c->serial.len == s->serial.len && memcmp(c->serial.p, s->serial.p, s->serial.len) == 0)
            return c;
    }
    return NULL;
}

/* Whether crt's extended key usage names eku explicitly. An absent
 * extension or anyExtendedKeyUsage does not count: a code-signing
 * certificate must say so. */
static bool certs_has_eku(const mbedtls_x509_crt *crt, oid_bytes eku)
{
    if (!compat_x509_crt_has_ext(crt, MBEDTLS_X509_EXT_EXTENDED_KEY_USAGE))
        return false;
    for (const mbedtls_x509_sequence *s = &crt->COMPAT_PRIVATE(ext_key_usage); s; s = s->next) {
        if (oid_is_raw(s->buf.p, s->buf.len, eku))
            return true;
    }
    return false;
}

/* ---- Signer checks ------------------------------------------------------- */

/*
 * Checks a SignerInfo against the content it signs: its digest algorithm is
 * allowed, its signed attributes are present, name content_type (unless
 * NULL), hold messageDigest = hash(content); and its signature over the
 * attributes (DER, re-tagged as SET) verifies with cert's key. Returns
 * AUTHENTICODE_VALID or the verdict with *why set.
 */
static authenticode_verdict signer_check(const cms_signer *s, const oid_bytes *content_type,
                                         const unsigned char *content, size_t content_len, const mbedtls_x509_crt *cert,
                                         const authenticode_policy *policy, const char **why)
{
    mbedtls_md_type_t md = MBEDTLS_MD_NONE;
    unsigned char digest[MBEDTLS_MD_MAX_SIZE];
    span values, value;

    if (!md_from_oid(s->digest_alg, &md) || !md_allowed(md, policy)) {
        *why = md == MBEDTLS_MD_SHA1 ? "signer uses SHA-1, which the policy does not allow"
                                     : "signer uses an unsupported digest algorithm";
        return AUTHENTICODE_UNSUPPORTED;
    }
    span attrs = cms_attrs_contents(s->attrs);
    if (s->attrs.len == 0 || attrs.p == NULL) {
        *why = "signer has no signed attributes";
        return AUTHENTICODE_BAD_SIGNATURE;
    }
    if (content_type) {
        if (cms_find_attribute(attrs, OID_CONTENT_TYPE, &values) != 1 || !cms_single_value(values, &value)) {
            *why = "signed attributes lack a single contentType";
            return AUTHENTICODE_BAD_SIGNATURE;
        }
        der_reader v = der_of(value);
        span oid;
        if (!der_read(&v, MBEDTLS_ASN1_OID, &oid, NULL) || !oid_is(oid, *content_type)) {
            *why = "signed contentType does not match the signed content";
            return AUTHENTICODE_BAD_SIGNATURE;
        }
    }
    if (cms_find_attribute(attrs, OID_MESSAGE_DIGEST, &values) != 1 || !cms_single_value(values, &value)) {
        *why = "signed attributes lack a single messageDigest";
        return AUTHENTICODE_BAD_SIGNATURE;
    }
    der_reader v = der_of(value);
    span signed_digest;
    size_t n = md_hash(md, content, content_len, digest);
    if (!der_read(&v, MBEDTLS_ASN1_OCTET_STRING, &signed_digest, NULL) || n == 0 ||
        !digest_equals(signed_digest, digest, n)) {
        *why = "messageDigest attribute does not match the signed content";
        return AUTHENTICODE_BAD_SIGNATURE;
    }

    /* The signature covers the attributes' DER with the SET tag (0x31) in
     * place of the [0] IMPLICIT tag (0xa0): hash the tag byte, then the rest. */
    const mbedtls_md_info_t *info = mbedtls_md_info_from_type(md);
    mbedtls_md_context_t ctx;
    mbedtls_md_init(&ctx);
    unsigned char set_tag = TAG_SET;
    int ret = mbedtls_md_setup(&ctx, info, 0);
    if (ret == 0)
        ret = mbedtls_md_starts(&ctx);
    if (ret == 0)
        ret = mbedtls_md_update(&ctx, &set_tag, 1);
    if (ret == 0)
        ret = mbedtls_md_update(&ctx, s->attrs.p + 1, s->attrs.len - 1);
    if (ret == 0)
        ret = mbedtls_md_finish(&ctx, digest);
    mbedtls_md_free(&ctx);
    if (ret != 0) {
        *why = "cannot hash the signed attributes";
        return AUTHENTICODE_BAD_SIGNATURE;
    }

    /* The signature algorithm names the key type (rsaEncryption,
     * sha256WithRSAEncryption, ecdsa-with-SHA256, ecPublicKey...); it must
     * agree with the certificate's key. RSA-PSS is not supported. */
    mbedtls_asn1_buf alg = {MBEDTLS_ASN1_OID, s->sig_alg.len, s->sig_alg.p};
    mbedtls_pk_type_t pk_type;
    mbedtls_md_type_t sig_md;
    if (mbedtls_oid_get_pk_alg(&alg, &pk_type) != 0) {
        if (mbedtls_oid_get_sig_alg(&alg, &sig_md, &pk_type) != 0 || pk_type == MBEDTLS_PK_RSASSA_PSS) {
            *why = "signer uses an unsupported signature algorithm";
            return AUTHENTICODE_UNSUPPORTED;
        }
    }
    if (pk_type == MBEDTLS_PK_ECKEY)
        pk_type = MBEDTLS_PK_ECDSA;
    if (pk_type != MBEDTLS_PK_RSA && pk_type != MBEDTLS_PK_ECDSA) {
        *why = "signer uses an unsupported signature algorithm";
        return AUTHENTICODE_UNSUPPORTED;
    }
    mbedtls_pk_context *pk = (mbedtls_pk_context *)&cert->pk;
    if (!mbedtls_pk_can_do(pk, pk_type)) {
        *why = "signature algorithm does not match the signer's key";
        return AUTHENTICODE_BAD_SIGNATURE;
    }
    if (mbedtls_pk_verify(pk, md, digest, mbedtls_md_get_size(info), s->signature.p, s->signature.len) != 0) {
        *why = "signature value does not verify with the signer's key";
        return AUTHENTICODE_BAD_SIGNATURE;
    }
    return AUTHENTICODE_VALID;
}

/* ---- Chains -------------------------------------------------------------- */

/* What the verify callback needs and finds (see chain_judge). */
typedef struct chain_judging {
    int64_t when;                   /* judging time */
    bool timestamped;               /* when comes from a trusted timestamp */
    const mbedtls_x509_crl *crls;   /* crl_files; NULL or empty: no revocation check */
    const mbedtls_x509_crt *parent; /* the certificate judged just before (one level up) */
    char revoked[256];              /* which certificate is revoked, and since when */
    char *notes;                    /* CRLs that did not verify (result->notes) */
    size_t notes_size;
} chain_judging;

/* Whether crl's signature verifies with issuer's key. */
static bool crl_signed_by(const mbedtls_x509_crl *crl, const mbedtls_x509_crt *issuer)
{
    unsigned char hash[MBEDTLS_MD_MAX_SIZE];
    mbedtls_md_type_t md = crl->COMPAT_PRIVATE(sig_md);
    size_t n = md_hash(md, crl->tbs.p, crl->tbs.len, hash);
    return n != 0 && mbedtls_pk_verify_ext(crl->COMPAT_PRIVATE(sig_pk), crl->COMPAT_PRIVATE(sig_opts),
                                           (mbedtls_pk_context *)&issuer->pk, md, hash, n, crl->COMPAT_PRIVATE(sig).p,
                                           crl->COMPAT_PRIVATE(sig).len) == 0;
}

/* Revocation of crt (issued by issuer) by the CRLs its issuer signed: fills
 * j->revoked when a CRL lists it, revoked at or before the judging time, or
 * at all without a trusted timestamp. A CRL under the issuer's name whose
 * signature does not verify is noted and ignored. */
static void chain_check_revocation(chain_judging *j, const mbedtls_x509_crt *crt, const mbedtls_x509_crt *issuer)
{
    for (const mbedtls_x509_crl *crl = j->crls; crl && crl->raw.len; crl = crl->next) {
        if (crl->issuer_raw.len != crt->issuer_raw.len ||
            memcmp(crl->issuer_raw.p, crt->issuer_raw.p, crt->issuer_raw.len) != 0)
            continue;
        if (!crl_signed_by(crl, issuer)) {
            char name[96];
            (void)subject_format(&crl->issuer, name, sizeof name);
            notes_add(j->notes, j->notes_size, "a CRL of \"%s\" does not verify with its issuer's key: ignored", name);
            continue;
        }
        for (const mbedtls_x509_crl_entry *e = &crl->entry; e && e->raw.len; e = e->next) {
            if (e->serial.len != crt->serial.len || memcmp(e->serial.p, crt->serial.p, crt->serial.len) != 0)
                continue;
            int64_t at = x509_time_to_unix(&e->revocation_date);
            if (j->timestamped && at > j->when)
                continue; /* revoked after the trusted signing time: the signature stands */
            char subject[120], date[32];
            (void)subject_format(&crt->subject, subject, sizeof subject);
            format_time(at, date, sizeof date);
            snprintf(j->revoked, sizeof j->revoked, "certificate \"%.120s\" was revoked on %.24s%s", subject, date,
                     j->timestamped ? ", before the signature's timestamp"
                                    : " and the signature has no trusted timestamp");
            return;
        }
    }
}

/* Verify callback: judge every certificate's dates at j->when instead of
 * the wall clock (see the top of the file), and its revocation. Mbed TLS
 * calls it from the top of the chain down, so j->parent is the issuer. */
static int chain_judge(void *ctx, mbedtls_x509_crt *crt, int depth, uint32_t *flags)
{
    chain_judging *j = ctx;
    (void)depth;
    *flags &= ~(uint32_t)(MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE);
    if (x509_time_to_unix(&crt->valid_to) < j->when)
        *flags |= MBEDTLS_X509_BADCERT_EXPIRED;
    if (x509_time_to_unix(&crt->valid_from) > j->when)
        *flags |= MBEDTLS_X509_BADCERT_FUTURE;
    if (j->parent && j->crls && !j->revoked[0]) {
        chain_check_revocation(j, crt, j->parent);
        if (j->revoked[0])
            *flags |= MBEDTLS_X509_BADCERT_REVOKED;
    }
    j->parent = crt;
    return 0;
}

/*
 * Verifies that leaf chains through pool to a certificate of trusted, all
 * valid at when and (with crls) none revoked. Fills why with the failure
 * (empty on success); *revoked is set when revocation was the reason.
 */
static bool chain_verify(const mbedtls_x509_crt *leaf, const mbedtls_x509_crt *pool, mbedtls_x509_crt *trusted,
                         chain_judging *judging, const authenticode_policy *policy, char *why, size_t why_size,
                         bool *revoked)
{
    mbedtls_x509_crt chain;
    mbedtls_x509_crt_init(&chain);
    why[0] = '\0';
    *revoked = false;
    if (certs_add(&chain, leaf->raw.p, leaf->raw.len) != 0) {
        snprintf(why, why_size, "cannot copy the signer certificate");
        return false;
    }
    for (const mbedtls_x509_crt *c = pool; c && c->raw.len; c = c->next) {
        if (c != leaf)
            (void)certs_add(&chain, c->raw.p, c->raw.len); /* parsed once already */
    }
    mbedtls_x509_crt_profile profile = {
        .allowed_mds = MBEDTLS_X509_ID_FLAG(MBEDTLS_MD_SHA256) | MBEDTLS_X509_ID_FLAG(MBEDTLS_MD_SHA384) |
                       MBEDTLS_X509_ID_FLAG(MBEDTLS_MD_SHA512) |
                       (policy->allow_sha1 ? MBEDTLS_X509_ID_FLAG(MBEDTLS_MD_SHA1) : 0),
        .allowed_pks = 0x0FFFFFFF,
        .allowed_curves = 0x0FFFFFFF,
        .rsa_min_bitlen = 2048,
    };
    uint32_t flags = 0;
    judging->parent = NULL;
    judging->revoked[0] = '\0';
    int ret = mbedtls_x509_crt_verify_with_profile(&chain, trusted, NULL, &profile, NULL, &flags, chain_judge, judging);
    mbedtls_x509_crt_free(&chain);
    if (ret == 0 && flags == 0)
        return true;
    char at[32];
    format_time(judging->when, at, sizeof at);
    if (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED)
        snprintf(why, why_size, "does not chain to a trusted CA");
    else if (flags & MBEDTLS_X509_BADCERT_REVOKED) {
        *revoked = true;
        snprintf(why, why_size, "%.*s", (int)why_size - 1, judging->revoked);
    } else if (flags & MBEDTLS_X509_BADCERT_EXPIRED)
        snprintf(why, why_size, "a certificate of the chain had expired at %s", at);
    else if (flags & MBEDTLS_X509_BADCERT_FUTURE)
        snprintf(why, why_size, "a certificate of the chain was not yet valid at %s", at);
    else if (flags & MBEDTLS_X509_BADCERT_BAD_MD)
        snprintf(why, why_size, "a certificate of the chain is signed with a refused hash");
    else if (flags & (MBEDTLS_X509_BADCERT_BAD_KEY | MBEDTLS_X509_BADCERT_BAD_PK))
        snprintf(why, why_size, "a certificate of the chain has a refused key");
    else
        snprintf(why, why_size, "chain verification failed (flags 0x%x)", (unsigned)flags);
    return false;
}

/* Judging without revocation (timestamp chains): dates only. */
static chain_judging chain_at(int64_t when)
{
    chain_judging j;
    memset(&j, 0, sizeof j);
    j.when = when;
    return j;
}

/* ---- Verification context ------------------------------------------------ */

typedef struct verify_ctx {
    const authenticode_policy *policy;
    authenticode_result *result; /* the signature being judged (see signatures_judge) */
    mbedtls_x509_crt trusted;    /* trusted_ca_file */
    mbedtls_x509_crt ts_trusted; /* timestamp_ca_file; empty (raw.len 0) when not given */
    mbedtls_x509_crl crls;       /* crl_files; empty (raw.len 0) when none */
    char ca_notes[512];          /* certificates of the CA files that could not be read */
    bool ca_file_unreadable;     /* one of them is in a named file (not "system") */
    int64_t now;                 /* judging time without a timestamp */
    bool trust_digest;           /* authenticode_check_blob: skip the image digest */
    unsigned char digests[MBEDTLS_MD_SHA512 + 1][MBEDTLS_MD_MAX_SIZE]; /* the file's digest per
                                                                          algorithm, computed once */
    bool have_digest[MBEDTLS_MD_SHA512 + 1];
} verify_ctx;

/* ---- Timestamps ---------------------------------------------------------- */

/*
 * RFC 3161 timestamp (unsigned attribute 1.3.6.1.4.1.311.3.3.1): a
 * TimeStampToken (SignedData of TSTInfo) whose messageImprint is the hash of
 * the primary signer's signature value. On success sets *when to genTime.
 */
static bool timestamp_rfc3161(verify_ctx *v, const cms_signer *primary, span values, int64_t *when, char *why,
                              size_t why_size)
{
    const char *reason;
    span token;
    cms_signed_data sd;
    if (!cms_single_value(values, &token) || !cms_parse_signed_data(token, &sd, &reason)) {
        snprintf(why, why_size, "RFC 3161 token: %s", "malformed");
        return false;
    }
    /* eContent is an OCTET STRING holding the TSTInfo DER. */
    der_reader c = der_of(sd.content);
    span tst;
    if (!oid_is(sd.content_type, OID_TST_INFO) || !der_read(&c, MBEDTLS_ASN1_OCTET_STRING, &tst, NULL)) {
        snprintf(why, why_size, "RFC 3161 token does not hold a TSTInfo");
        return false;
    }
    der_reader t = der_of(tst), info, imprint;
    span info_seq, version, policy_oid, imprint_seq, imprint_alg, hashed;
    mbedtls_md_type_t imprint_md;
    int64_t gen_time;
    if (!der_read(&t, TAG_SEQUENCE, &info_seq, NULL) || !der_done(&t))
        goto malformed;
    info = der_of(info_seq);
    if (!der_read(&info, MBEDTLS_ASN1_INTEGER, &version, NULL) ||
        !der_read(&info, MBEDTLS_ASN1_OID, &policy_oid, NULL) || !der_read(&info, TAG_SEQUENCE, &imprint_seq, NULL) ||
        !der_read(&info, MBEDTLS_ASN1_INTEGER, NULL, NULL) || !parse_asn1_time(&info, &gen_time))
        goto malformed;
    imprint = der_of(imprint_seq);
    if (!der_read_algorithm(&imprint, &imprint_alg) || !der_read(&imprint, MBEDTLS_ASN1_OCTET_STRING, &hashed, NULL))
        goto malformed;
    if (!md_from_oid(imprint_alg, &imprint_md) || !md_allowed(imprint_md, v->policy)) {
        snprintf(why, why_size, "RFC 3161 token uses a refused digest algorithm");
        return false;
    }
    unsigned char digest[MBEDTLS_MD_MAX_SIZE];
    size_t n = md_hash(imprint_md, primary->signature.p, primary->signature.len, digest);
    if (n == 0 || !digest_equals(hashed, digest, n)) {
        snprintf(why, why_size, "RFC 3161 token does not stamp this signature");
        return false;
    }

    mbedtls_x509_crt pool;
    mbedtls_x509_crt_init(&pool);
    certs_parse(sd.certificates, &pool, "the RFC 3161 token", v->result->notes, sizeof v->result->notes);
    bool ok = false;
    const mbedtls_x509_crt *tsa = certs_find(&pool, &sd.signer);
    if (!tsa) {
        snprintf(why, why_size, "RFC 3161 token does not carry its signer's certificate");
    } else if (signer_check(&sd.signer, &OID_TST_INFO, tst.p, tst.len, tsa, v->policy, &reason) != AUTHENTICODE_VALID) {
        snprintf(why, why_size, "RFC 3161 token: %.100s", reason);
    } else if (!certs_has_eku(tsa, OID_EKU_TIME_STAMPING)) {
        snprintf(why, why_size, "RFC 3161 token signer is not a timestamping certificate");
    } else {
        char chain_why[200];
        bool revoked;
        mbedtls_x509_crt *trust = v->ts_trusted.raw.len ? &v->ts_trusted : &v->trusted;
        chain_judging at = chain_at(gen_time);
        if (chain_verify(tsa, &pool, trust, &at, v->policy, chain_why, sizeof chain_why, &revoked)) {
            *when = gen_time;
            ok = true;
        } else {
            snprintf(why, why_size, "RFC 3161 signer chain rejected: %.100s", chain_why);
        }
    }
    mbedtls_x509_crt_free(&pool);
    return ok;

malformed:
    snprintf(why, why_size, "RFC 3161 TSTInfo is malformed");
    return false;
}

/*
 * Legacy Authenticode timestamp (unsigned attribute 1.2.840.113549.1.9.6):
 * a SignerInfo over the primary signer's signature value whose signed
 * attributes carry signingTime; its certificate travels in the primary
 * SignedData's certificates (carried).
 */
static bool timestamp_legacy(verify_ctx *v, const cms_signer *primary, span values, const mbedtls_x509_crt *carried,
                             int64_t *when, char *why, size_t why_size)
{
    const char *reason;
    span element, time_values, time_value;
    cms_signer cs;
    int64_t signing_time;
    if (!cms_single_value(values, &element) || !cms_parse_signer(element, &cs, &reason)) {
        snprintf(why, why_size, "countersignature is malformed");
        return false;
    }
    const mbedtls_x509_crt *tsa = certs_find(carried, &cs);
    if (!tsa) {
        snprintf(why, why_size, "countersignature certificate is not carried");
        return false;
    }
    if (signer_check(&cs, NULL, primary->signature.p, primary->signature.len, tsa, v->policy, &reason) !=
        AUTHENTICODE_VALID) {
        snprintf(why, why_size, "countersignature: %.100s", reason);
        return false;
    }
    der_reader tv;
    if (cms_find_attribute(cms_attrs_contents(cs.attrs), OID_SIGNING_TIME, &time_values) != 1 ||
        !cms_single_value(time_values, &time_value) ||
        (tv = der_of(time_value), !parse_asn1_time(&tv, &signing_time))) {
        snprintf(why, why_size, "countersignature has no valid signingTime");
        return false;
    }
    if (!certs_has_eku(tsa, OID_EKU_TIME_STAMPING)) {
        snprintf(why, why_size, "countersignature signer is not a timestamping certificate");
        return false;
    }
    char chain_why[200];
    bool revoked;
    mbedtls_x509_crt *trust = v->ts_trusted.raw.len ? &v->ts_trusted : &v->trusted;
    chain_judging at = chain_at(signing_time);
    if (!chain_verify(tsa, carried, trust, &at, v->policy, chain_why, sizeof chain_why, &revoked)) {
        snprintf(why, why_size, "countersignature signer chain rejected: %.100s", chain_why);
        return false;
    }
    *when = signing_time;
    return true;
}

/*
 * Looks for a timestamp in the primary signer's unsigned attributes. The
 * first one that verifies sets *when and returns true. A timestamp that
 * does not verify (or lies in the future of `now`) is ignored, as Windows
 * does: the signature is then judged at `now`, and note says why.
 */
static bool timestamp_find(verify_ctx *v, const cms_signer *primary, const mbedtls_x509_crt *carried, int64_t *when,
                           const char **kind, char *note, size_t note_size)
{
    note[0] = '\0';
    der_reader d = der_of(primary->unsigned_attrs);
    while (!der_done(&d)) {
        span attr, type, values;
        if (!der_read(&d, TAG_SEQUENCE, &attr, NULL))
            return false;
        der_reader a = der_of(attr);
        if (!der_read(&a, MBEDTLS_ASN1_OID, &type, NULL) || !der_read(&a, TAG_SET, &values, NULL))
            return false;
        bool ok = false;
        int64_t t = 0;
        if (oid_is(type, OID_RFC3161_TIMESTAMP))
            ok = timestamp_rfc3161(v, primary, values, &t, note, note_size);
        else if (oid_is(type, OID_COUNTERSIGNATURE))
            ok = timestamp_legacy(v, primary, values, carried, &t, note, note_size);
        else
            continue; /* nested signatures (signatures_judge) and anything else */
        if (ok && t > v->now + TIMESTAMP_FUTURE_SLACK) {
            snprintf(note, note_size, "timestamp lies in the future");
            ok = false;
        }
        if (ok) {
            *when = t;
            *kind = oid_is(type, OID_RFC3161_TIMESTAMP) ? "rfc3161" : "legacy";
            return true;
        }
    }
    return false;
}

/* ---- One signature --------------------------------------------------------- */

/* Computes the format's Authenticode digest of the file with md into out
 * (MBEDTLS_MD_MAX_SIZE bytes). May return ERR_REJECTED with a verdict. */
typedef error_code (*image_digest_fn)(void *format, mbedtls_md_type_t md, unsigned char *out,
                                      authenticode_result *result, error_info *err);

/* The file's digest with md into out, computed once per algorithm for all
 * the signatures of the file. */
static MUST_CHECK error_code file_digest(verify_ctx *v, mbedtls_md_type_t md, image_digest_fn digest_fn, void *format,
                                         unsigned char *out, error_info *err)
{
    bool cacheable = md >= 0 && md <= MBEDTLS_MD_SHA512;
    if (cacheable && v->have_digest[md]) {
        memcpy(out, v->digests[md], MBEDTLS_MD_MAX_SIZE);
        return ERR_OK;
    }
    error_code rc = digest_fn(format, md, out, v->result, err);
    if (rc == ERR_OK && cacheable) {
        memcpy(v->digests[md], out, MBEDTLS_MD_MAX_SIZE);
        v->have_digest[md] = true;
    }
    return rc;
}

/* Whether the signer certificate's SHA-256 (hex) is one of the pins. */
static bool signer_pinned(const authenticode_policy *policy, const char *cert_sha256)
{
    for (size_t i = 0; i < policy->signer_sha256_count; i++)
        if (strcmp(policy->signer_sha256[i], cert_sha256) == 0)
            return true;
    return false;
}

/* Checks one SignedData (steps 2-8 of authenticode.h) into v->result;
 * *nested is set to its signer's unsigned attributes (where nested
 * signatures live) as soon as the structure has been read. */
static MUST_CHECK error_code signature_verify(verify_ctx *v, unsigned char *der, size_t der_len, oid_bytes data_type,
                                              image_digest_fn digest_fn, void *format, span *nested, error_info *err)
{
    authenticode_result *r = v->result;
    const char *why;
    cms_signed_data sd;
    span blob = {der, der_len};
    nested->p = NULL;
    nested->len = 0;
    if (!cms_parse_signed_data(blob, &sd, &why))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "%s", why);
    *nested = sd.signer.unsigned_attrs;
    if (!oid_is(sd.content_type, OID_SPC_INDIRECT_DATA))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "signed content is not SpcIndirectDataContent");

    /* SpcIndirectDataContent ::= SEQUENCE { data SEQUENCE { type OID, value },
     *                                        messageDigest DigestInfo } */
    der_reader c = der_of(sd.content), idc, data;
    span idc_seq, data_seq, data_oid, info_seq, image_alg, image_digest;
    if (!der_read(&c, TAG_SEQUENCE, &idc_seq, NULL))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "SpcIndirectDataContent is malformed");
    idc = der_of(idc_seq);
    if (!der_read(&idc, TAG_SEQUENCE, &data_seq, NULL) || !der_read(&idc, TAG_SEQUENCE, &info_seq, NULL))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "SpcIndirectDataContent is malformed");
    data = der_of(data_seq);
    der_reader info = der_of(info_seq);
    if (!der_read(&data, MBEDTLS_ASN1_OID, &data_oid, NULL) || !der_read_algorithm(&info, &image_alg) ||
        !der_read(&info, MBEDTLS_ASN1_OCTET_STRING, &image_digest, NULL))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "SpcIndirectDataContent is malformed");
    if (!oid_is(data_oid, data_type))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "signature is for another file format");

    mbedtls_md_type_t md = MBEDTLS_MD_NONE;
    if (!md_from_oid(image_alg, &md) || mbedtls_md_info_from_type(md) == NULL)
        return authenticode_reject(r, AUTHENTICODE_UNSUPPORTED, "unknown image digest algorithm");
    snprintf(r->digest_algorithm, sizeof r->digest_algorithm, "%s", md_name(md));

    /* The digest first, whatever the policy thinks of the algorithm: a
     * signature that does not match the file rejects it (a SHA-1 one too). */
    unsigned char computed[MBEDTLS_MD_MAX_SIZE];
    error_code rc = v->trust_digest ? ERR_OK : file_digest(v, md, digest_fn, format, computed, err);
    if (rc != ERR_OK)
        return rc;
    if (!v->trust_digest && !digest_equals(image_digest, computed, mbedtls_md_get_size(mbedtls_md_info_from_type(md))))
        return authenticode_reject(r, AUTHENTICODE_DIGEST_MISMATCH, "the file's %s digest differs from the signed one",
                                   md_name(md));

    mbedtls_x509_crt carried;
    mbedtls_x509_crt_init(&carried);
    certs_parse(sd.certificates, &carried, "the signature", r->notes, sizeof r->notes);
    const mbedtls_x509_crt *leaf = certs_find(&carried, &sd.signer);
    if (!leaf) {
        rc = authenticode_reject(r, AUTHENTICODE_BAD_SIGNATURE, "the signer's certificate is not in the signature%s%s",
                                 r->notes[0] ? ": " : "", r->notes);
        goto cleanup;
    }
    /* Decoded from the DER, not mbedtls_x509_dn_gets (which prints every
     * non-ASCII byte as '?'): what is shown is what the pin is compared with. */
    (void)subject_format(&leaf->subject, r->signer_subject, sizeof r->signer_subject);
    {
        /* The fleet mirror's manifest names the signer by this hash (PRODUCT.md section 8). */
        unsigned char cert_digest[MBEDTLS_MD_MAX_SIZE];
        if (md_hash(MBEDTLS_MD_SHA256, leaf->raw.p, leaf->raw.len, cert_digest) == 32)
            text_hex(cert_digest, 32, r->signer_cert_sha256);
    }

    /* messageDigest covers the contents of SpcIndirectDataContent, without
     * its SEQUENCE tag and length (Authenticode's rule). A signer whose
     * algorithm the policy refuses still has its signature checked, so a
     * forged one is told apart from an old one. */
    authenticode_policy any_md = *v->policy;
    any_md.allow_sha1 = true;
    authenticode_verdict verdict =
        signer_check(&sd.signer, &OID_SPC_INDIRECT_DATA, idc_seq.p, idc_seq.len, leaf, &any_md, &why);
    if (verdict != AUTHENTICODE_VALID) {
        rc = authenticode_reject(r, verdict, "%s", why);
        goto cleanup;
    }
    if (!md_allowed(md, v->policy)) {
        rc = authenticode_reject(r, AUTHENTICODE_UNSUPPORTED, "image digest algorithm %s is not allowed by the policy",
                                 md_name(md));
        goto cleanup;
    }
    verdict = signer_check(&sd.signer, &OID_SPC_INDIRECT_DATA, idc_seq.p, idc_seq.len, leaf, v->policy, &why);
    if (verdict != AUTHENTICODE_VALID) {
        rc = authenticode_reject(r, verdict, "%s", why);
        goto cleanup;
    }

    /* Without a trust anchor the chain cannot be judged, nor the time it is
     * judged at: everything else still is (PRODUCT.md 4.3). */
    if (v->policy->trusted_ca_file) {
        int64_t when = v->now;
        const char *kind = "";
        char note[160];
        if (timestamp_find(v, &sd.signer, &carried, &when, &kind, note, sizeof note)) {
            r->timestamped = true;
            r->timestamp = when;
            snprintf(r->timestamp_kind, sizeof r->timestamp_kind, "%s", kind);
        }
        char chain_why[200];
        bool revoked;
        chain_judging judging = chain_at(when);
        judging.timestamped = r->timestamped;
        judging.crls = v->crls.raw.len ? &v->crls : NULL;
        judging.notes = r->notes;
        judging.notes_size = sizeof r->notes;
        if (!chain_verify(leaf, &carried, &v->trusted, &judging, v->policy, chain_why, sizeof chain_why, &revoked)) {
            if (revoked)
                rc = authenticode_reject(r, AUTHENTICODE_REVOKED, "%s", chain_why);
            else
                rc = authenticode_reject(r, AUTHENTICODE_UNTRUSTED_CHAIN, "signer chain rejected: %s%s%s%s%s",
                                         chain_why, note[0] ? "; timestamp ignored: " : "", note,
                                         r->notes[0] ? "; " : "", r->notes);
            goto cleanup;
        }
        r->chain_checked = true;
    }
    if (!certs_has_eku(leaf, OID_EKU_CODE_SIGNING) ||
        mbedtls_x509_crt_check_key_usage(leaf, MBEDTLS_X509_KU_DIGITAL_SIGNATURE) != 0) {
        rc = authenticode_reject(r, AUTHENTICODE_UNTRUSTED_CHAIN, "signer certificate is not valid for code signing");
        goto cleanup;
    }
    if (v->policy->signer_subject && !subject_matches(&leaf->subject, v->policy->signer_subject)) {
        rc = authenticode_reject(r, AUTHENTICODE_WRONG_SIGNER, "signed by \"%s\", not \"%s\"", r->signer_subject,
                                 v->policy->signer_subject);
        goto cleanup;
    }
    if (v->policy->signer_sha256_count && !signer_pinned(v->policy, r->signer_cert_sha256)) {
        rc = authenticode_reject(r, AUTHENTICODE_WRONG_SIGNER,
                                 "signed by \"%.100s\" (certificate SHA-256 %s), which signer_sha256 does not list",
                                 r->signer_subject, r->signer_cert_sha256);
        goto cleanup;
    }
    r->verdict = AUTHENTICODE_VALID;
    r->reason[0] = '\0';
    rc = ERR_OK;
cleanup:
    mbedtls_x509_crt_free(&carried);
    return rc;
}

/* ---- Every signature ------------------------------------------------------ */

/* A verdict that says the signature itself is broken, not merely outside
 * the policy: it rejects the file whatever the other signatures say. */
static bool verdict_is_broken(authenticode_verdict verdict)
{
    return verdict == AUTHENTICODE_DIGEST_MISMATCH || verdict == AUTHENTICODE_BAD_SIGNATURE ||
           verdict == AUTHENTICODE_MALFORMED;
}

/* How far a signature outside the policy got: the one that got furthest
 * explains a rejection best. */
static int verdict_rank(authenticode_verdict verdict)
{
    switch (verdict) {
    case AUTHENTICODE_WRONG_SIGNER: return 4;
    case AUTHENTICODE_REVOKED: return 3;
    case AUTHENTICODE_UNTRUSTED_CHAIN: return 2;
    case AUTHENTICODE_UNSUPPORTED: return 1;
    default: return 0;
    }
}

/* Queues the signatures nested in attrs (a signer's unsigned attributes):
 * every value of every 1.3.6.1.4.1.311.2.4.1 attribute. false when there
 * are more than AUTHENTICODE_MAX_SIGNATURES in all. */
static bool signatures_queue(span attrs, int depth, span *blobs, int *depths, size_t *count)
{
    der_reader d = der_of(attrs);
    while (!der_done(&d)) {
        span attr, type, values;
        if (!der_read(&d, TAG_SEQUENCE, &attr, NULL))
            return true; /* the signer's own parse judged this structure */
        der_reader a = der_of(attr);
        if (!der_read(&a, MBEDTLS_ASN1_OID, &type, NULL) || !der_read(&a, TAG_SET, &values, NULL))
            return true;
        if (!oid_is(type, OID_NESTED_SIGNATURE))
            continue;
        der_reader vals = der_of(values);
        span blob;
        while (!der_done(&vals) && der_read(&vals, TAG_SEQUENCE, NULL, &blob)) {
            if (*count == AUTHENTICODE_MAX_SIGNATURES)
                return false;
            blobs[*count] = blob;
            depths[*count] = depth;
            (*count)++;
        }
    }
    return true;
}

/*
 * Judges the primary signature (der) and every nested one, and fills
 * *v->result with the outcome: the first signature that passes, else the
 * first broken one, else the one that got furthest (see authenticode.h).
 */
static MUST_CHECK error_code signatures_judge(verify_ctx *v, unsigned char *der, size_t der_len, oid_bytes data_type,
                                              image_digest_fn digest_fn, void *format, error_info *err)
{
    authenticode_result *final = v->result;
    authenticode_result *one = calloc(AUTHENTICODE_MAX_SIGNATURES, sizeof *one);
    if (!one)
        return error_set(err, ERR_NOMEM, "out of memory judging the signatures");
    span blobs[AUTHENTICODE_MAX_SIGNATURES];
    int depths[AUTHENTICODE_MAX_SIGNATURES];
    size_t count = 1;
    blobs[0].p = der;
    blobs[0].len = der_len;
    depths[0] = 0;
    bool too_many = false;
    error_code rc = ERR_OK;
    for (size_t i = 0; i < count; i++) {
        one[i] = *final; /* file_format, signature_found */
        one[i].verdict = AUTHENTICODE_MALFORMED;
        one[i].reason[0] = '\0';
        v->result = &one[i];
        span nested;
        rc = signature_verify(v, blobs[i].p, blobs[i].len, data_type, digest_fn, format, &nested, err);
        if (rc != ERR_OK && rc != ERR_REJECTED)
            break;
        rc = ERR_OK;
        if (nested.len && depths[i] < AUTHENTICODE_MAX_NESTING &&
            !signatures_queue(nested, depths[i] + 1, blobs, depths, &count))
            too_many = true;
    }
    v->result = final;
    if (rc != ERR_OK) {
        free(one);
        return rc;
    }
    size_t chosen = count, broken = count, best = 0;
    for (size_t i = 0; i < count; i++) {
        if (one[i].verdict == AUTHENTICODE_VALID && chosen == count)
            chosen = i;
        if (verdict_is_broken(one[i].verdict) && broken == count)
            broken = i;
        if (verdict_rank(one[i].verdict) > verdict_rank(one[best].verdict))
            best = i;
    }
    if (broken < count)
        chosen = broken;
    else if (chosen == count)
        chosen = best;
    char notes[sizeof final->notes];
    snprintf(notes, sizeof notes, "%s", final->notes); /* the CA files' */
    for (size_t i = 0; i < count; i++)
        if (one[i].notes[0] && i != chosen)
            notes_add(notes, sizeof notes, "signature %zu: %s", i + 1, one[i].notes);
    *final = one[chosen];
    if (final->notes[0] && strlen(notes) + strlen(final->notes) + 3 < sizeof notes)
        notes_add(notes, sizeof notes, "%s", final->notes);
    snprintf(final->notes, sizeof final->notes, "%s", notes);
    final->signature_index = (unsigned)chosen + 1;
    final->signature_count = (unsigned)count;
    if (too_many && final->verdict == AUTHENTICODE_VALID)
        rc = authenticode_reject(final, AUTHENTICODE_MALFORMED, "more than %d signatures are nested in the file",
                                 AUTHENTICODE_MAX_SIGNATURES);
    else if (final->verdict != AUTHENTICODE_VALID) {
        if (count > 1) {
            char reason[sizeof final->reason];
            snprintf(reason, sizeof reason, "signature %zu of %zu (%.8s): %.200s", chosen + 1, count,
                     final->digest_algorithm[0] ? final->digest_algorithm : "?", final->reason);
            snprintf(final->reason, sizeof final->reason, "%s", reason);
        }
        rc = ERR_REJECTED;
    }
    free(one);
    return rc;
}

/* ---- File formats -------------------------------------------------------- */

static MUST_CHECK error_code md_start(mbedtls_md_context_t *ctx, mbedtls_md_type_t md, error_info *err)
{
    mbedtls_md_init(ctx);
    if (mbedtls_md_setup(ctx, mbedtls_md_info_from_type(md), 0) != 0 || mbedtls_md_starts(ctx) != 0)
        return error_set(err, ERR_NOMEM, "cannot set up the %s digest", md_name(md));
    return ERR_OK;
}

typedef struct pe_format {
    FILE *f;
    pe_layout layout;
} pe_format;

static MUST_CHECK error_code pe_digest(void *format, mbedtls_md_type_t md, unsigned char *out,
                                       authenticode_result *result, error_info *err)
{
    pe_format *pe = format;
    mbedtls_md_context_t ctx;
    (void)result;
    error_code rc = md_start(&ctx, md, err);
    if (rc == ERR_OK)
        rc = pe_hash(pe->f, &pe->layout, &ctx, err);
    if (rc == ERR_OK && mbedtls_md_finish(&ctx, out) != 0)
        rc = error_set(err, ERR_INTERNAL, "hashing failed");
    mbedtls_md_free(&ctx);
    return rc;
}

static MUST_CHECK error_code verify_pe(verify_ctx *v, FILE *f, uint64_t size, error_info *err)
{
    pe_format pe = {f, {0}};
    snprintf(v->result->file_format, sizeof v->result->file_format, "pe");
    error_code rc = pe_parse(f, size, &pe.layout, v->result, err);
    if (rc != ERR_OK)
        return rc;
    if (pe.layout.cert_table_size == 0)
        return authenticode_reject(v->result, AUTHENTICODE_UNSIGNED, "the PE image carries no signature");
    v->result->signature_found = true;
    /* The SHA-256 digest from the pass that brought the file, when it was
     * computed over this very layout. */
    const authenticode_pe_digest *pre = v->policy->precomputed;
    if (pre && pre->file_size == size && pre->checksum_offset == pe.layout.checksum_offset &&
        pre->security_entry_offset == pe.layout.security_entry_offset &&
        pre->cert_table_offset == pe.layout.cert_table_offset && pre->cert_table_size == pe.layout.cert_table_size) {
        memcpy(v->digests[MBEDTLS_MD_SHA256], pre->sha256, sizeof pre->sha256);
        v->have_digest[MBEDTLS_MD_SHA256] = true;
    }
    uint8_t *der = NULL;
    size_t der_len = 0;
    rc = pe_read_signature(f, &pe.layout, &der, &der_len, v->result, err);
    if (rc == ERR_OK)
        rc = signatures_judge(v, der, der_len, OID_SPC_PE_IMAGE_DATA, pe_digest, &pe, err);
    free(der);
    return rc;
}

static MUST_CHECK error_code msi_digest(void *format, mbedtls_md_type_t md, unsigned char *out,
                                        authenticode_result *result, error_info *err)
{
    return msi_hash(format, md, out, result, err);
}

static MUST_CHECK error_code verify_msi(verify_ctx *v, FILE *f, uint64_t size, error_info *err)
{
    msi_package msi;
    snprintf(v->result->file_format, sizeof v->result->file_format, "msi");
    error_code rc = msi_open(&msi, f, size, v->result, err);
    if (rc != ERR_OK) {
        msi_close(&msi);
        return rc;
    }
    uint8_t *der = NULL;
    size_t der_len = 0;
    rc = msi_read_signature(&msi, &der, &der_len, v->result, err);
    if (rc == ERR_REJECTED)
        v->result->signature_found = true; /* a signature stream, unreadable */
    if (rc == ERR_OK && der == NULL)
        rc = authenticode_reject(v->result, AUTHENTICODE_UNSIGNED, "the MSI package carries no signature");
    if (rc == ERR_OK) {
        v->result->signature_found = true;
        rc = signatures_judge(v, der, der_len, OID_SPC_SIPINFO, msi_digest, &msi, err);
    }
    free(der);
    msi_close(&msi);
    return rc;
}

/* ---- Public entry points ------------------------------------------------- */

error_code authenticode_reject(authenticode_result *result, authenticode_verdict verdict, const char *fmt, ...)
{
    va_list ap;
    result->verdict = verdict;
    va_start(ap, fmt);
    vsnprintf(result->reason, sizeof result->reason, fmt, ap);
    va_end(ap);
    return ERR_REJECTED;
}

const char *authenticode_verdict_name(authenticode_verdict v)
{
    switch (v) {
    case AUTHENTICODE_VALID: return "valid";
    case AUTHENTICODE_UNSIGNED: return "unsigned";
    case AUTHENTICODE_DIGEST_MISMATCH: return "digest-mismatch";
    case AUTHENTICODE_BAD_SIGNATURE: return "bad-signature";
    case AUTHENTICODE_UNTRUSTED_CHAIN: return "untrusted-chain";
    case AUTHENTICODE_WRONG_SIGNER: return "wrong-signer";
    case AUTHENTICODE_MALFORMED: return "malformed";
    case AUTHENTICODE_UNSUPPORTED: return "unsupported";
    case AUTHENTICODE_REVOKED: return "revoked";
    }
    return "malformed";
}

/* Parses every certificate of data (PEM blocks, or DER certificates back
 * to back) into *chain; each one that cannot be read is named in notes
 * (where names the file) and counted in *unreadable. */
static void ca_parse(const char *data, size_t len, const char *where, mbedtls_x509_crt *chain, char *notes,
                     size_t notes_size, unsigned *unreadable)
{
    static const char begin[] = "-----BEGIN CERTIFICATE-----", end[] = "-----END CERTIFICATE-----";
    unsigned position = 0;
    if (strstr(data, begin)) {
        for (const char *p = strstr(data, begin); p; p = strstr(p, begin)) {
            mbedtls_pem_context pem;
            mbedtls_pem_init(&pem);
            size_t used = 0;
            position++;
            int ret = mbedtls_pem_read_buffer(&pem, begin, end, (const unsigned char *)p, NULL, 0, &used);
            if (ret == 0)
                ret = certs_add(chain, pem.COMPAT_PRIVATE(buf), pem.COMPAT_PRIVATE(buflen));
            if (ret != 0) {
                (*unreadable)++;
                const unsigned char *der = pem.COMPAT_PRIVATE(buf);
                certs_note_unreadable(der, der ? pem.COMPAT_PRIVATE(buflen) : 0, where, position, ret, notes,
                                      notes_size);
            }
            mbedtls_pem_free(&pem);
            p += used ? used : sizeof begin - 1;
        }
        return;
    }
    span whole = {(unsigned char *)data, len};
    der_reader d = der_of(whole);
    span cert;
    while (!der_done(&d) && der_read(&d, TAG_SEQUENCE, NULL, &cert)) {
        position++;
        int ret = certs_add(chain, cert.p, cert.len);
        if (ret != 0) {
            (*unreadable)++;
            certs_note_unreadable(cert.p, cert.len, where, position, ret, notes, notes_size);
        }
    }
    if (!der_done(&d)) {
        (*unreadable)++;
        notes_add(notes, notes_size, "%s holds bytes after certificate %u that are not a certificate", where, position);
    }
}

/* Loads a PEM or DER CA file, or "system" (the OS store), into *chain;
 * ERR_CONFIG naming the file when it cannot be read or holds no readable
 * certificate. Certificates that cannot be read are named in v->ca_notes. */
static MUST_CHECK error_code load_ca_file(verify_ctx *v, const char *path, const char *what, mbedtls_x509_crt *chain,
                                          error_info *err)
{
    char *data = NULL;
    size_t len = 0;
    bool system = strcmp(path, "system") == 0;
    error_code rc = system ? platform_system_code_signing_roots(&data, &len, err)
                           : platform_read_file(path, MAX_CA_FILE, &data, &len, err);
    if (rc != ERR_OK)
        return error_set(err, ERR_CONFIG, "%s %s cannot be read: %s", what, path, err ? err->message : "");
    char where[200];
    snprintf(where, sizeof where, "%s %.160s", what, system ? "\"system\"" : path);
    unsigned unreadable = 0;
    ca_parse(data, len, where, chain, v->ca_notes, sizeof v->ca_notes, &unreadable);
    free(data);
    if (chain->raw.len == 0)
        return error_set(err, ERR_CONFIG, "%s %s holds no usable certificate%s%.300s", what, path,
                         v->ca_notes[0] ? ": " : "", v->ca_notes);
    if (unreadable && !system)
        v->ca_file_unreadable = true;
    return ERR_OK;
}

/* Loads the CRL files (DER or PEM, one or more CRLs each) into v->crls;
 * ERR_CONFIG naming a file that cannot be read or parsed. */
static MUST_CHECK error_code load_crls(verify_ctx *v, error_info *err)
{
    for (size_t i = 0; i < v->policy->crl_file_count; i++) {
        const char *path = v->policy->crl_files[i];
        char *data = NULL;
        size_t len = 0;
        error_code rc = platform_read_file(path, MAX_CRL_FILE, &data, &len, err);
        if (rc != ERR_OK)
            return error_set(err, ERR_CONFIG, "CRL file %s cannot be read: %s", path, err ? err->message : "");
        /* mbedtls_x509_crl_parse wants the terminating NUL counted for PEM. */
        bool pem = strstr(data, "-----BEGIN X509 CRL-----") != NULL;
        int ret = mbedtls_x509_crl_parse(&v->crls, (const unsigned char *)data, pem ? len + 1 : len);
        free(data);
        if (ret != 0) {
            char why[96];
            mbedtls_strerror(ret, why, sizeof why);
            return error_set(err, ERR_CONFIG, "CRL file %s cannot be read as a CRL (DER or PEM): Mbed TLS -0x%04x: %s",
                             path, (unsigned)-ret, why);
        }
    }
    return ERR_OK;
}

static void result_init(authenticode_result *result)
{
    memset(result, 0, sizeof *result);
    result->verdict = AUTHENTICODE_MALFORMED; /* fail closed until a verdict is reached */
}

/* Sets up *v for policy: CA files loaded, judging time fixed. */
static MUST_CHECK error_code verify_begin(verify_ctx *v, const authenticode_policy *policy, authenticode_result *result,
                                          error_info *err)
{
    memset(v, 0, sizeof *v);
    v->policy = policy;
    v->result = result;
    mbedtls_x509_crt_init(&v->trusted);
    mbedtls_x509_crt_init(&v->ts_trusted);
    mbedtls_x509_crl_init(&v->crls);
    if (!policy)
        return error_set(err, ERR_INTERNAL, "Authenticode verification needs a policy");
    v->now = policy->now ? policy->now : platform_time_utc_ms() / 1000;
    error_code rc = ERR_OK;
    if (policy->trusted_ca_file)
        rc = load_ca_file(v, policy->trusted_ca_file, "trusted CA file", &v->trusted, err);
    if (rc == ERR_OK && policy->timestamp_ca_file)
        rc = load_ca_file(v, policy->timestamp_ca_file, "timestamp CA file", &v->ts_trusted, err);
    if (rc == ERR_OK)
        rc = load_crls(v, err);
    return rc;
}

/* Turns a rejection into ERR_OK, an error into a MALFORMED verdict (fail
 * closed), and frees *v. Returns the caller's result code. */
static MUST_CHECK error_code verify_end(verify_ctx *v, error_code rc, authenticode_result *result, error_info *err)
{
    if (rc == ERR_REJECTED) {
        rc = ERR_OK; /* a verdict, not an error */
        error_clear(err);
    }
    /* A CA file certificate that could not be read may have been the anchor
     * this chain needed: an error naming it, not a verdict. When the file
     * passes (or fails for another reason) it is only a note. */
    if (rc == ERR_OK && v->ca_file_unreadable && result->verdict == AUTHENTICODE_UNTRUSTED_CHAIN)
        rc = error_set(err, ERR_CONFIG, "%.400s; the signature did not chain to the rest (%.200s)", v->ca_notes,
                       result->reason);
    if (v->ca_notes[0]) {
        char notes[sizeof result->notes];
        snprintf(notes, sizeof notes, "%s", v->ca_notes);
        if (result->notes[0])
            notes_add(notes, sizeof notes, "%s", result->notes);
        snprintf(result->notes, sizeof result->notes, "%s", notes);
        if (result->verdict == AUTHENTICODE_UNTRUSTED_CHAIN && !strstr(result->reason, v->ca_notes)) {
            size_t used = strlen(result->reason);
            snprintf(result->reason + used, sizeof result->reason - used, "; %s", v->ca_notes);
        }
    }
    if (rc != ERR_OK) {
        result->verdict = AUTHENTICODE_MALFORMED;
        snprintf(result->reason, sizeof result->reason, "%.200s", err ? err->message : "verification failed");
    }
    mbedtls_x509_crt_free(&v->trusted);
    mbedtls_x509_crt_free(&v->ts_trusted);
    mbedtls_x509_crl_free(&v->crls);
    return rc;
}

error_code authenticode_verify_stream(FILE *f, const authenticode_policy *policy, authenticode_result *result,
                                      error_info *err)
{
    verify_ctx v;
    result_init(result);
    error_clear(err);
    error_code rc = verify_begin(&v, policy, result, err);
    if (rc == ERR_OK && !f)
        rc = error_set(err, ERR_IO, "no installer stream");
    if (rc != ERR_OK)
        return verify_end(&v, rc, result, err);

    uint64_t end = 0;
    uint8_t head[8];
    if ((rc = platform_file_size(f, &end, err)) != ERR_OK)
        error_prefix(err, "the installer");
    else if (end < sizeof head)
        rc = authenticode_reject(result, AUTHENTICODE_UNSUPPORTED, "file too small to be a PE or MSI");
    else if ((rc = authenticode_read_at(f, 0, head, sizeof head, err)) != ERR_OK)
        ; /* rc says why */
    else if (pe_is_pe(head, sizeof head))
        rc = verify_pe(&v, f, end, err);
    else if (msi_is_msi(head, sizeof head))
        rc = verify_msi(&v, f, end, err);
    else
        rc = authenticode_reject(result, AUTHENTICODE_UNSUPPORTED, "neither a PE image nor an MSI package");
    return verify_end(&v, rc, result, err);
}

error_code authenticode_check_blob(const uint8_t *der, size_t der_len, const authenticode_policy *policy,
                                   authenticode_result *result, error_info *err)
{
    verify_ctx v;
    result_init(result);
    error_clear(err);
    error_code rc = verify_begin(&v, policy, result, err);
    if (rc != ERR_OK)
        return verify_end(&v, rc, result, err);
    v.trust_digest = true;
    result->signature_found = true;
    unsigned char *copy = malloc(der_len ? der_len : 1);
    if (!copy)
        return verify_end(&v, error_set(err, ERR_NOMEM, "out of memory"), result, err);
    if (der_len)
        memcpy(copy, der, der_len);
    snprintf(result->file_format, sizeof result->file_format, "pe");
    rc = signatures_judge(&v, copy, der_len, OID_SPC_PE_IMAGE_DATA, NULL, NULL, err);
    free(copy);
    return verify_end(&v, rc, result, err);
}

error_code authenticode_verify_file(const char *path, const authenticode_policy *policy, authenticode_result *result,
                                    error_info *err)
{
    result_init(result);
    FILE *f = platform_fopen(path, "rb");
    if (!f) {
        error_code rc = platform_stdio_error(err, "cannot open installer %s", path);
        snprintf(result->reason, sizeof result->reason, "cannot open the file");
        return rc;
    }
    error_code rc = authenticode_verify_stream(f, policy, result, err);
    fclose(f);
    return rc;
}
