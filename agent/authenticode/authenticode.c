/*
 * authenticode.c — Authenticode verification (see authenticode.h for the
 * rules), built on Mbed TLS's asn1, oid, md, pk and x509_crt layers: one
 * signature judged step by step, the verdict over every signature of a
 * file, the file formats, and the policy's trust loaded once.
 *
 * The signature's parts live beside it, each with its header: the PKCS#7 /
 * CMS SignedData reader (cms.c), certificates and chains judged at a time
 * with CRLs (chain.c), timestamps (timestamp.c); the file formats' readers
 * are pe.c and msi.c.
 *
 * Layout of the file:
 *   one signature, step by step                 (signature_*)
 *   every signature: the verdict                (signatures_judge)
 *   file formats: PE, MSI                       (verify_pe, verify_msi)
 *   the policy's trust, the public entry points (verify_begin, verify_end)
 */
#include "authenticode/authenticode.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/error.h>
#include <mbedtls/md.h>
#include <mbedtls/x509.h>
#include <mbedtls/x509_crl.h>
#include <mbedtls/x509_crt.h>

#include "authenticode/authenticode_int.h"
#include "authenticode/chain.h"
#include "authenticode/cms.h"
#include "authenticode/msi.h"
#include "authenticode/pe.h"
#include "authenticode/subject.h"
#include "authenticode/timestamp.h"
#include "base/text.h"
#include "platform/platform.h"

#define MAX_CA_FILE (4u * 1024u * 1024u) /* trusted CA file size cap */
#define MAX_CRL_FILE (64u << 20)         /* one CRL file (a large CA's CRL is tens of MiB) */

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

/* The signed content of an Authenticode signature, SpcIndirectDataContent
 * ::= SEQUENCE { data SEQUENCE { type OID, value }, messageDigest DigestInfo }. */
typedef struct indirect_data {
    span signed_part;     /* the SEQUENCE's contents: what messageDigest covers */
    span image_digest;    /* the file's digest the signer signed */
    mbedtls_md_type_t md; /* its algorithm */
} indirect_data;

/* Step 2: reads the SignedData and its SpcIndirectDataContent, which must
 * be for data_type (the file's format) with a digest algorithm Mbed TLS
 * knows. *nested is set to the signer's unsigned attributes (where nested
 * signatures live) as soon as the SignedData has been read. */
static MUST_CHECK error_code signature_read(authenticode_result *r, unsigned char *der, size_t der_len,
                                            oid_bytes data_type, cms_signed_data *sd, indirect_data *idc, span *nested)
{
    const char *why;
    span blob = {der, der_len};
    if (!cms_parse_signed_data(blob, sd, &why))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "%s", why);
    *nested = sd->signer.unsigned_attrs;
    if (!oid_is(sd->content_type, OID_SPC_INDIRECT_DATA))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "signed content is not SpcIndirectDataContent");

    der_reader c = der_of(sd->content), seq, data;
    span data_seq, data_oid, info_seq, image_alg;
    if (!der_read(&c, TAG_SEQUENCE, &idc->signed_part, NULL))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "SpcIndirectDataContent is malformed");
    seq = der_of(idc->signed_part);
    if (!der_read(&seq, TAG_SEQUENCE, &data_seq, NULL) || !der_read(&seq, TAG_SEQUENCE, &info_seq, NULL))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "SpcIndirectDataContent is malformed");
    data = der_of(data_seq);
    der_reader info = der_of(info_seq);
    if (!der_read(&data, MBEDTLS_ASN1_OID, &data_oid, NULL) || !der_read_algorithm(&info, &image_alg) ||
        !der_read(&info, MBEDTLS_ASN1_OCTET_STRING, &idc->image_digest, NULL))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "SpcIndirectDataContent is malformed");
    if (!oid_is(data_oid, data_type))
        return authenticode_reject(r, AUTHENTICODE_MALFORMED, "signature is for another file format");

    idc->md = MBEDTLS_MD_NONE;
    if (!md_from_oid(image_alg, &idc->md) || mbedtls_md_info_from_type(idc->md) == NULL)
        return authenticode_reject(r, AUTHENTICODE_UNSUPPORTED, "unknown image digest algorithm");
    snprintf(r->digest_algorithm, sizeof r->digest_algorithm, "%s", md_name(idc->md));
    return ERR_OK;
}

/* Step 3: the file's digest equals the signed one. It comes first, whatever
 * the policy thinks of the algorithm: a signature that does not match the
 * file rejects it (a SHA-1 one too). */
static MUST_CHECK error_code signature_check_digest(verify_ctx *v, const indirect_data *idc, image_digest_fn digest_fn,
                                                    void *format, error_info *err)
{
    if (v->trust_digest)
        return ERR_OK;
    unsigned char computed[MBEDTLS_MD_MAX_SIZE];
    error_code rc = file_digest(v, idc->md, digest_fn, format, computed, err);
    if (rc != ERR_OK)
        return rc;
    if (!digest_equals(idc->image_digest, computed, mbedtls_md_get_size(mbedtls_md_info_from_type(idc->md))))
        return authenticode_reject(v->result, AUTHENTICODE_DIGEST_MISMATCH,
                                   "the file's %s digest differs from the signed one", md_name(idc->md));
    return ERR_OK;
}

/* Step 4, first half: the signer's certificate among those carried, and
 * what the result records of it (subject, SHA-256). */
static MUST_CHECK error_code signature_find_signer(authenticode_result *r, const cms_signed_data *sd,
                                                   const mbedtls_x509_crt *carried, const mbedtls_x509_crt **leaf)
{
    *leaf = certs_find(carried, &sd->signer);
    if (!*leaf)
        return authenticode_reject(r, AUTHENTICODE_BAD_SIGNATURE,
                                   "the signer's certificate is not in the signature%s%s", r->notes[0] ? ": " : "",
                                   r->notes);
    /* Decoded from the DER, not mbedtls_x509_dn_gets (which prints every
     * non-ASCII byte as '?'): what is shown is what the pin is compared with. */
    (void)subject_format(&(*leaf)->subject, r->signer_subject, sizeof r->signer_subject);
    /* The fleet mirror's manifest names the signer by this hash (PRODUCT.md section 8). */
    unsigned char cert_digest[MBEDTLS_MD_MAX_SIZE];
    if (md_hash(MBEDTLS_MD_SHA256, (*leaf)->raw.p, (*leaf)->raw.len, cert_digest) == 32)
        text_hex(cert_digest, 32, r->signer_cert_sha256);
    return ERR_OK;
}

/* Step 4, second half (and 2's algorithm rule): the signer's signed
 * attributes and signature. messageDigest covers the contents of
 * SpcIndirectDataContent, without its SEQUENCE tag and length
 * (Authenticode's rule). A signer whose algorithm the policy refuses still
 * has its signature checked, so a forged one is told apart from an old one. */
static MUST_CHECK error_code signature_check_signer(verify_ctx *v, const cms_signed_data *sd, const indirect_data *idc,
                                                    const mbedtls_x509_crt *leaf)
{
    const char *why;
    authenticode_policy any_md = *v->policy;
    any_md.allow_sha1 = true;
    authenticode_verdict verdict = cms_check_signer(&sd->signer, &OID_SPC_INDIRECT_DATA, idc->signed_part.p,
                                                    idc->signed_part.len, leaf, &any_md, &why);
    if (verdict != AUTHENTICODE_VALID)
        return authenticode_reject(v->result, verdict, "%s", why);
    if (!md_allowed(idc->md, v->policy))
        return authenticode_reject(v->result, AUTHENTICODE_UNSUPPORTED,
                                   "image digest algorithm %s is not allowed by the policy", md_name(idc->md));
    verdict = cms_check_signer(&sd->signer, &OID_SPC_INDIRECT_DATA, idc->signed_part.p, idc->signed_part.len, leaf,
                               v->policy, &why);
    if (verdict != AUTHENTICODE_VALID)
        return authenticode_reject(v->result, verdict, "%s", why);
    return ERR_OK;
}

/* Steps 5 and 8: the signer's chain to trusted_ca_file, judged at the time
 * of a timestamp that verifies (else now), with the CRLs. Without a trust
 * anchor the chain cannot be judged, nor the time it is judged at:
 * everything else still is (PRODUCT.md 4.3), and chain_checked says so. */
static MUST_CHECK error_code signature_check_chain(verify_ctx *v, const cms_signed_data *sd,
                                                   const mbedtls_x509_crt *carried, const mbedtls_x509_crt *leaf)
{
    authenticode_result *r = v->result;
    if (!v->policy->trusted_ca_file)
        return ERR_OK;
    int64_t when = v->now;
    const char *kind = "";
    char note[160];
    if (timestamp_find(v, &sd->signer, carried, &when, &kind, note, sizeof note)) {
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
    if (!chain_verify(leaf, carried, &v->trusted, &judging, v->policy, chain_why, sizeof chain_why, &revoked)) {
        if (revoked)
            return authenticode_reject(r, AUTHENTICODE_REVOKED, "%s", chain_why);
        return authenticode_reject(r, AUTHENTICODE_UNTRUSTED_CHAIN, "signer chain rejected: %s%s%s%s%s", chain_why,
                                   note[0] ? "; timestamp ignored: " : "", note, r->notes[0] ? "; " : "", r->notes);
    }
    r->chain_checked = true;
    return ERR_OK;
}

/* Steps 6 and 7: a code-signing certificate, and the signer the policy
 * names (signer_subject, signer_sha256) when it names one. */
static MUST_CHECK error_code signature_check_signer_policy(verify_ctx *v, const mbedtls_x509_crt *leaf)
{
    authenticode_result *r = v->result;
    if (!certs_has_eku(leaf, OID_EKU_CODE_SIGNING) ||
        mbedtls_x509_crt_check_key_usage(leaf, MBEDTLS_X509_KU_DIGITAL_SIGNATURE) != 0)
        return authenticode_reject(r, AUTHENTICODE_UNTRUSTED_CHAIN, "signer certificate is not valid for code signing");
    if (v->policy->signer_subject && !subject_matches(&leaf->subject, v->policy->signer_subject))
        return authenticode_reject(r, AUTHENTICODE_WRONG_SIGNER, "signed by \"%s\", not \"%s\"", r->signer_subject,
                                   v->policy->signer_subject);
    if (v->policy->signer_sha256_count && !signer_pinned(v->policy, r->signer_cert_sha256))
        return authenticode_reject(r, AUTHENTICODE_WRONG_SIGNER,
                                   "signed by \"%.100s\" (certificate SHA-256 %s), which signer_sha256 does not list",
                                   r->signer_subject, r->signer_cert_sha256);
    return ERR_OK;
}

/* Checks one SignedData (steps 2-8 of authenticode.h) into v->result, one
 * step after the other, the first failure giving the verdict; *nested is
 * set to its signer's unsigned attributes (where nested signatures live) as
 * soon as the structure has been read. */
static MUST_CHECK error_code signature_verify(verify_ctx *v, unsigned char *der, size_t der_len, oid_bytes data_type,
                                              image_digest_fn digest_fn, void *format, span *nested, error_info *err)
{
    authenticode_result *r = v->result;
    cms_signed_data sd;
    indirect_data idc;
    nested->p = NULL;
    nested->len = 0;
    error_code rc = signature_read(r, der, der_len, data_type, &sd, &idc, nested);
    if (rc == ERR_OK)
        rc = signature_check_digest(v, &idc, digest_fn, format, err);
    if (rc != ERR_OK)
        return rc;

    mbedtls_x509_crt carried;
    mbedtls_x509_crt_init(&carried);
    certs_parse(sd.certificates, &carried, "the signature", r->notes, sizeof r->notes);
    const mbedtls_x509_crt *leaf = NULL;
    rc = signature_find_signer(r, &sd, &carried, &leaf);
    if (rc == ERR_OK)
        rc = signature_check_signer(v, &sd, &idc, leaf);
    if (rc == ERR_OK)
        rc = signature_check_chain(v, &sd, &carried, leaf);
    if (rc == ERR_OK)
        rc = signature_check_signer_policy(v, leaf);
    if (rc == ERR_OK) {
        r->verdict = AUTHENTICODE_VALID;
        r->reason[0] = '\0';
    }
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
            authenticode_note(notes, sizeof notes, "signature %zu: %s", i + 1, one[i].notes);
    *final = one[chosen];
    if (final->notes[0] && strlen(notes) + strlen(final->notes) + 3 < sizeof notes)
        authenticode_note(notes, sizeof notes, "%s", final->notes);
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
                           : platform_read_trusted_file(what, path, false, MAX_CA_FILE, &data, &len, err);
    if (rc == ERR_CONFIG && !system)
        return rc; /* refused as a trusted input: the message names the file and the fix */
    if (rc != ERR_OK)
        return error_set(err, ERR_CONFIG, "%s %s cannot be read: %s", what, path, err ? err->message : "");
    char where[200];
    snprintf(where, sizeof where, "%s %.160s", what, system ? "\"system\"" : path);
    unsigned unreadable = 0;
    certs_parse_ca(data, len, where, chain, v->ca_notes, sizeof v->ca_notes, &unreadable);
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
        error_code rc = platform_read_trusted_file("CRL file", path, false, MAX_CRL_FILE, &data, &len, err);
        if (rc == ERR_CONFIG)
            return rc; /* refused as a trusted input: the message names the file and the fix */
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
            authenticode_note(notes, sizeof notes, "%s", result->notes);
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
