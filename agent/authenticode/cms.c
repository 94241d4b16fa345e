/*
 * cms.c — the PKCS#7 / CMS SignedData reader (see cms.h): DER elements,
 * OIDs, digests by OID, ASN.1 times, SignedData and SignerInfo, their
 * attributes, and a SignerInfo's check against the content it signs.
 *
 * Layout: DER reading (der_*), OIDs (oid_*), digests (md_*), times
 * (der_read_time), SignedData / SignerInfo (cms_parse_*, attributes), the
 * signer check (cms_check_signer), and the notes every part of the
 * folder appends to (authenticode_note: what could not be read).
 */
#include "authenticode/cms.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <mbedtls/oid.h>
#include <mbedtls/pk.h>

#include "authenticode/authenticode_int.h"
#include "core/timefmt.h"

/* ---- DER reading --------------------------------------------------------- */

der_reader der_of(span s)
{
    der_reader d = {s.p, s.p ? s.p + s.len : NULL}; /* NULL + 0 is undefined in C */
    return d;
}

/* Reads one element with tag: contents (may be NULL) and the whole element
 * (may be NULL). Leaves the reader unmoved when the tag does not match. */
bool der_read(der_reader *d, int tag, span *contents, span *element)
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

bool der_peek(const der_reader *d, int tag)
{
    return d->p < d->end && *d->p == tag;
}

bool der_skip(der_reader *d)
{
    return d->p < d->end && der_read(d, *d->p, NULL, NULL);
}

bool der_done(const der_reader *d)
{
    return d->p == d->end;
}

/* AlgorithmIdentifier: SEQUENCE { OID, parameters ANY OPTIONAL }. */
bool der_read_algorithm(der_reader *d, span *oid)
{
    span seq;
    if (!der_read(d, TAG_SEQUENCE, &seq, NULL))
        return false;
    der_reader in = der_of(seq);
    return der_read(&in, MBEDTLS_ASN1_OID, oid, NULL);
}

/* ---- OIDs (DER contents) ------------------------------------------------- */

#define OID(s)                                                                                                         \
    {                                                                                                                  \
        s, sizeof(s) - 1                                                                                               \
    }
const oid_bytes OID_SIGNED_DATA = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x07\x02");
const oid_bytes OID_CONTENT_TYPE = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x09\x03");
const oid_bytes OID_MESSAGE_DIGEST = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x09\x04");
const oid_bytes OID_SIGNING_TIME = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x09\x05");
const oid_bytes OID_COUNTERSIGNATURE = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x09\x06");
const oid_bytes OID_TST_INFO = OID("\x2a\x86\x48\x86\xf7\x0d\x01\x09\x10\x01\x04");
const oid_bytes OID_SPC_INDIRECT_DATA = OID("\x2b\x06\x01\x04\x01\x82\x37\x02\x01\x04");
const oid_bytes OID_SPC_PE_IMAGE_DATA = OID("\x2b\x06\x01\x04\x01\x82\x37\x02\x01\x0f");
const oid_bytes OID_SPC_SIPINFO = OID("\x2b\x06\x01\x04\x01\x82\x37\x02\x01\x1e");
const oid_bytes OID_RFC3161_TIMESTAMP = OID("\x2b\x06\x01\x04\x01\x82\x37\x03\x03\x01");
const oid_bytes OID_EKU_CODE_SIGNING = OID("\x2b\x06\x01\x05\x05\x07\x03\x03");
const oid_bytes OID_EKU_TIME_STAMPING = OID("\x2b\x06\x01\x05\x05\x07\x03\x08");
const oid_bytes OID_NESTED_SIGNATURE = OID("\x2b\x06\x01\x04\x01\x82\x37\x02\x04\x01");
const oid_bytes OID_CERTIFICATE_POLICIES = OID("\x55\x1d\x20");

bool oid_is(span s, oid_bytes oid)
{
    return s.len == oid.len && memcmp(s.p, oid.bytes, oid.len) == 0;
}

bool oid_is_raw(const unsigned char *p, size_t len, oid_bytes oid)
{
    return len == oid.len && memcmp(p, oid.bytes, oid.len) == 0;
}

/* ---- Digests ------------------------------------------------------------- */

bool md_from_oid(span oid, mbedtls_md_type_t *md)
{
    mbedtls_asn1_buf buf = {MBEDTLS_ASN1_OID, oid.len, oid.p};
    return mbedtls_oid_get_md_alg(&buf, md) == 0;
}

const char *md_name(mbedtls_md_type_t md)
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
bool md_allowed(mbedtls_md_type_t md, const authenticode_policy *policy)
{
    return md == MBEDTLS_MD_SHA256 || md == MBEDTLS_MD_SHA384 || md == MBEDTLS_MD_SHA512 ||
           (md == MBEDTLS_MD_SHA1 && policy->allow_sha1);
}

/* out must hold MBEDTLS_MD_MAX_SIZE bytes; returns the digest size, 0 on failure. */
size_t md_hash(mbedtls_md_type_t md, const unsigned char *data, size_t len, unsigned char *out)
{
    const mbedtls_md_info_t *info = mbedtls_md_info_from_type(md);
    if (!info || mbedtls_md(info, data, len, out) != 0)
        return 0;
    return mbedtls_md_get_size(info);
}

bool digest_equals(span expected, const unsigned char *actual, size_t actual_len)
{
    return expected.len == actual_len && memcmp(expected.p, actual, actual_len) == 0;
}

/* ---- Time ---------------------------------------------------------------- */

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
bool der_read_time(der_reader *d, int64_t *out)
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

/* ---- SignedData / SignerInfo --------------------------------------------- */

/* Parses a SignerInfo element (version 1: issuerAndSerialNumber). */
bool cms_parse_signer(span element, cms_signer *s, const char **why)
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
bool cms_parse_signed_data(span element, cms_signed_data *sd, const char **why)
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
int cms_find_attribute(span list, oid_bytes oid, span *values)
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
span cms_attrs_contents(span attrs)
{
    span s = {NULL, 0};
    der_reader d = der_of(attrs);
    der_read(&d, TAG_CONTEXT(0), &s, NULL);
    return s;
}

/* The one value of a single-valued attribute, whole element. */
bool cms_single_value(span values, span *value)
{
    der_reader d = der_of(values);
    if (d.p >= d.end || !der_read(&d, *d.p, NULL, value))
        return false;
    return der_done(&d);
}

/* ---- Signer checks ------------------------------------------------------- */

/*
 * Checks a SignerInfo against the content it signs: its digest algorithm is
 * allowed, its signed attributes are present, name content_type (unless
 * NULL), hold messageDigest = hash(content); and its signature over the
 * attributes (DER, re-tagged as SET) verifies with cert's key. Returns
 * AUTHENTICODE_VALID or the verdict with *why set.
 */
authenticode_verdict cms_check_signer(const cms_signer *s, const oid_bytes *content_type, const unsigned char *content,
                                      size_t content_len, const mbedtls_x509_crt *cert,
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

/* ---- Notes: what could not be read ------------------------------------- */

void authenticode_note(char *notes, size_t size, const char *fmt, ...)
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
