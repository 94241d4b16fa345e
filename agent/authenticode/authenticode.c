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
#include <mbedtls/md.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509.h>
#include <mbedtls/x509_crt.h>

#include "authenticode/mbedtls_compat.h"
#include "authenticode/msi.h"
#include "authenticode/pe.h"
#include "authenticode/subject.h"
#include "base/text.h"
#include "platform/platform.h"

#define MAX_CARRIED_CERTIFICATES 64      /* certificates we parse from one SignedData */
#define MAX_CA_FILE (4u * 1024u * 1024u) /* trusted CA file size cap */
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

/* ---- Certificates -------------------------------------------------------- */

/* Parses every certificate of a [0] certificates set into *pool (appending;
 * unparsable ones are skipped: they can only fail to be found). */
static void certs_parse(span certificates, mbedtls_x509_crt *pool)
{
    der_reader d = der_of(certificates);
    int count = 0;
    while (!der_done(&d) && count < MAX_CARRIED_CERTIFICATES) {
        span cert;
        if (d.p >= d.end || !der_read(&d, *d.p, NULL, &cert))
            return;
        if (*cert.p == TAG_SEQUENCE && mbedtls_x509_crt_parse_der(pool, cert.p, cert.len) == 0)
            count++;
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

/* Verify callback: judge every certificate's dates at *(int64_t *)ctx
 * instead of the wall clock (see the top of the file). */
static int chain_judge_time(void *ctx, mbedtls_x509_crt *crt, int depth, uint32_t *flags)
{
    int64_t when = *(const int64_t *)ctx;
    (void)depth;
    *flags &= ~(uint32_t)(MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE);
    if (x509_time_to_unix(&crt->valid_to) < when)
        *flags |= MBEDTLS_X509_BADCERT_EXPIRED;
    if (x509_time_to_unix(&crt->valid_from) > when)
        *flags |= MBEDTLS_X509_BADCERT_FUTURE;
    return 0;
}

/*
 * Verifies that leaf chains through pool to a certificate of trusted, all
 * valid at when. Fills why with the failure (empty on success).
 */
static bool chain_verify(const mbedtls_x509_crt *leaf, const mbedtls_x509_crt *pool, mbedtls_x509_crt *trusted,
                         int64_t when, const authenticode_policy *policy, char *why, size_t why_size)
{
    mbedtls_x509_crt chain;
    mbedtls_x509_crt_init(&chain);
    why[0] = '\0';
    if (mbedtls_x509_crt_parse_der(&chain, leaf->raw.p, leaf->raw.len) != 0) {
        snprintf(why, why_size, "cannot copy the signer certificate");
        return false;
    }
    for (const mbedtls_x509_crt *c = pool; c && c->raw.len; c = c->next) {
        if (c != leaf)
            (void)mbedtls_x509_crt_parse_der(&chain, c->raw.p, c->raw.len);
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
    int64_t judged_at = when;
    int ret = mbedtls_x509_crt_verify_with_profile(&chain, trusted, NULL, &profile, NULL, &flags, chain_judge_time,
                                                   &judged_at);
    mbedtls_x509_crt_free(&chain);
    if (ret == 0 && flags == 0)
        return true;
    char at[32];
    format_time(when, at, sizeof at);
    if (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED)
        snprintf(why, why_size, "does not chain to a trusted CA");
    else if (flags & MBEDTLS_X509_BADCERT_EXPIRED)
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

/* ---- Verification context ------------------------------------------------ */

typedef struct verify_ctx {
    const authenticode_policy *policy;
    authenticode_result *result;
    mbedtls_x509_crt trusted;    /* trusted_ca_file */
    mbedtls_x509_crt ts_trusted; /* timestamp_ca_file; empty (raw.len 0) when not given */
    int64_t now;                 /* judging time without a timestamp */
    bool trust_digest;           /* authenticode_check_blob: skip the image digest */
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
    certs_parse(sd.certificates, &pool);
    bool ok = false;
    const mbedtls_x509_crt *tsa = certs_find(&pool, &sd.signer);
    if (!tsa) {
        snprintf(why, why_size, "RFC 3161 token does not carry its signer's certificate");
    } else if (signer_check(&sd.signer, &OID_TST_INFO, tst.p, tst.len, tsa, v->policy, &reason) != AUTHENTICODE_VALID) {
        snprintf(why, why_size, "RFC 3161 token: %.100s", reason);
    } else if (!certs_has_eku(tsa, OID_EKU_TIME_STAMPING)) {
        snprintf(why, why_size, "RFC 3161 token signer is not a timestamping certificate");
    } else {
        char chain_why[128];
        mbedtls_x509_crt *trust = v->ts_trusted.raw.len ? &v->ts_trusted : &v->trusted;
        if (chain_verify(tsa, &pool, trust, gen_time, v->policy, chain_why, sizeof chain_why)) {
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
    char chain_why[128];
    mbedtls_x509_crt *trust = v->ts_trusted.raw.len ? &v->ts_trusted : &v->trusted;
    if (!chain_verify(tsa, carried, trust, signing_time, v->policy, chain_why, sizeof chain_why)) {
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
                           char *note, size_t note_size)
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
            continue; /* nested signatures and anything else: not judged */
        if (ok && t > v->now + TIMESTAMP_FUTURE_SLACK) {
            snprintf(note, note_size, "timestamp lies in the future");
            ok = false;
        }
        if (ok) {
            *when = t;
            return true;
        }
    }
    return false;
}

/* ---- The primary signature ----------------------------------------------- */

/* Computes the format's Authenticode digest of the file with md into out
 * (MBEDTLS_MD_MAX_SIZE bytes). May return ERR_REJECTED with a verdict. */
typedef error_code (*image_digest_fn)(void *format, mbedtls_md_type_t md, unsigned char *out,
                                      authenticode_result *result, error_info *err);

/* Checks everything from the SignedData on (steps 2-7 of authenticode.h). */
static MUST_CHECK error_code signature_verify(verify_ctx *v, unsigned char *der, size_t der_len, oid_bytes data_type,
                                              image_digest_fn digest_fn, void *format, error_info *err)
{
    authenticode_result *r = v->result;
    const char *why;
    cms_signed_data sd;
    span blob = {der, der_len};
    if (!cms_parse_signed_data(blob, &sd, &why))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "%s", why);
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
    if (!md_allowed(md, v->policy))
        return authenticode_reject(r, AUTHENTICODE_UNSUPPORTED,
                                   "image digest algorithm %s is not allowed by the policy", md_name(md));

    unsigned char computed[MBEDTLS_MD_MAX_SIZE];
    error_code rc = v->trust_digest ? ERR_OK : digest_fn(format, md, computed, r, err);
    if (rc != ERR_OK)
        return rc;
    if (!v->trust_digest && !digest_equals(image_digest, computed, mbedtls_md_get_size(mbedtls_md_info_from_type(md))))
        return authenticode_reject(r, AUTHENTICODE_DIGEST_MISMATCH, "the file's %s digest differs from the signed one",
                                   md_name(md));

    mbedtls_x509_crt carried;
    mbedtls_x509_crt_init(&carried);
    certs_parse(sd.certificates, &carried);
    const mbedtls_x509_crt *leaf = certs_find(&carried, &sd.signer);
    if (!leaf) {
        rc = authenticode_reject(r, AUTHENTICODE_BAD_SIGNATURE, "the signer's certificate is not in the signature");
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
     * its SEQUENCE tag and length (Authenticode's rule). */
    authenticode_verdict verdict =
        signer_check(&sd.signer, &OID_SPC_INDIRECT_DATA, idc_seq.p, idc_seq.len, leaf, v->policy, &why);
    if (verdict != AUTHENTICODE_VALID) {
        rc = authenticode_reject(r, verdict, "%s", why);
        goto cleanup;
    }

    /* Without a trust anchor the chain cannot be judged, nor the time it is
     * judged at: everything else still is (PRODUCT.md 4.3). */
    if (v->policy->trusted_ca_file) {
        int64_t when = v->now;
        char note[160];
        if (timestamp_find(v, &sd.signer, &carried, &when, note, sizeof note)) {
            r->timestamped = true;
            r->timestamp = when;
        }
        char chain_why[128];
        if (!chain_verify(leaf, &carried, &v->trusted, when, v->policy, chain_why, sizeof chain_why)) {
            rc = authenticode_reject(r, AUTHENTICODE_UNTRUSTED_CHAIN, "signer chain rejected: %s%s%s", chain_why,
                                     note[0] ? "; timestamp ignored: " : "", note);
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
    r->verdict = AUTHENTICODE_VALID;
    r->reason[0] = '\0';
    rc = ERR_OK;
cleanup:
    mbedtls_x509_crt_free(&carried);
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
    uint8_t *der = NULL;
    size_t der_len = 0;
    rc = pe_read_signature(f, &pe.layout, &der, &der_len, v->result, err);
    if (rc == ERR_OK)
        rc = signature_verify(v, der, der_len, OID_SPC_PE_IMAGE_DATA, pe_digest, &pe, err);
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
        rc = signature_verify(v, der, der_len, OID_SPC_SIPINFO, msi_digest, &msi, err);
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
    }
    return "malformed";
}

/* Loads a PEM or DER CA file into *chain; ERR_CONFIG naming the file when it
 * cannot be read or holds no certificate. */
static MUST_CHECK error_code load_ca_file(const char *path, const char *what, mbedtls_x509_crt *chain, error_info *err)
{
    char *data = NULL;
    size_t len = 0;
    error_code rc = platform_read_file(path, MAX_CA_FILE, &data, &len, err);
    if (rc != ERR_OK)
        return error_set(err, ERR_CONFIG, "%s %s cannot be read: %s", what, path, err ? err->message : "");
    /* mbedtls_x509_crt_parse wants the terminating NUL counted for PEM. */
    bool pem = strstr(data, "-----BEGIN CERTIFICATE-----") != NULL;
    int ret = mbedtls_x509_crt_parse(chain, (const unsigned char *)data, pem ? len + 1 : len);
    free(data);
    if (ret < 0 || chain->raw.len == 0)
        return error_set(err, ERR_CONFIG, "%s %s holds no usable certificate", what, path);
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
    if (!policy)
        return error_set(err, ERR_INTERNAL, "Authenticode verification needs a policy");
    v->now = policy->now ? policy->now : platform_time_utc_ms() / 1000;
    error_code rc = ERR_OK;
    if (policy->trusted_ca_file)
        rc = load_ca_file(policy->trusted_ca_file, "trusted CA file", &v->trusted, err);
    if (rc == ERR_OK && policy->timestamp_ca_file)
        rc = load_ca_file(policy->timestamp_ca_file, "timestamp CA file", &v->ts_trusted, err);
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
    if (rc != ERR_OK) {
        result->verdict = AUTHENTICODE_MALFORMED;
        snprintf(result->reason, sizeof result->reason, "%.200s", err ? err->message : "verification failed");
    }
    mbedtls_x509_crt_free(&v->trusted);
    mbedtls_x509_crt_free(&v->ts_trusted);
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
    rc = signature_verify(&v, copy, der_len, OID_SPC_PE_IMAGE_DATA, NULL, NULL, err);
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
