/*
 * timestamp.c — a signature's trusted time (see timestamp.h): RFC 3161
 * tokens (timestamp_rfc3161), legacy countersignatures (timestamp_legacy),
 * and the search through a signer's unsigned attributes (timestamp_find).
 */
#include "authenticode/timestamp.h"

#include <stdio.h>

#include "authenticode/chain.h"

#define TIMESTAMP_FUTURE_SLACK 300 /* a timestamp may be this far after `now` (clock skew) */

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
        !der_read(&info, MBEDTLS_ASN1_INTEGER, NULL, NULL) || !der_read_time(&info, &gen_time))
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
    } else if (cms_check_signer(&sd.signer, &OID_TST_INFO, tst.p, tst.len, tsa, v->policy, &reason) !=
               AUTHENTICODE_VALID) {
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
    if (cms_check_signer(&cs, NULL, primary->signature.p, primary->signature.len, tsa, v->policy, &reason) !=
        AUTHENTICODE_VALID) {
        snprintf(why, why_size, "countersignature: %.100s", reason);
        return false;
    }
    der_reader tv;
    if (cms_find_attribute(cms_attrs_contents(cs.attrs), OID_SIGNING_TIME, &time_values) != 1 ||
        !cms_single_value(time_values, &time_value) || (tv = der_of(time_value), !der_read_time(&tv, &signing_time))) {
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

bool timestamp_find(verify_ctx *v, const cms_signer *primary, const mbedtls_x509_crt *carried, int64_t *when,
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
