/*
 * cms.h — the PKCS#7 / CMS SignedData reader that Authenticode signatures
 * are made of, for authenticode/ only: DER elements read over spans of a
 * buffer the caller owns (nothing is copied or allocated), the OIDs
 * Authenticode uses, digests named by OID, a SignedData with its one
 * SignerInfo, its attributes, and the check of a SignerInfo against the
 * content it signs.
 *
 * Mbed TLS's own pkcs7 module cannot read Authenticode (it assumes no
 * signed attributes and one certificate), so this walks the structure with
 * mbedtls_asn1_get_tag: every length it reports has been checked against
 * the end of the enclosing element. The structure is fixed, so there is no
 * recursion.
 */
#ifndef OUTPOST_AUTHENTICODE_CMS_H
#define OUTPOST_AUTHENTICODE_CMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mbedtls/asn1.h>
#include <mbedtls/md.h>
#include <mbedtls/x509_crt.h>

#include "authenticode/authenticode.h"

/* ---- DER ----------------------------------------------------------------- */

typedef struct span {
    unsigned char *p; /* first byte (inside a buffer the caller owns) */
    size_t len;       /* length in bytes; 0 for an absent element */
} span;

typedef struct der_reader {
    unsigned char *p;   /* next element */
    unsigned char *end; /* end of the enclosing element's contents */
} der_reader;

#define TAG_SEQUENCE (MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)
#define TAG_SET (MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SET)
#define TAG_CONTEXT(n) (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | (n))

/* A reader over the elements inside s (an empty s reads nothing). */
der_reader der_of(span s);

/* Reads one element with tag: its contents (may be NULL) and the whole
 * element (may be NULL). Leaves the reader unmoved when the tag does not
 * match. */
bool der_read(der_reader *d, int tag, span *contents, span *element);

/* Whether the next element has tag. */
bool der_peek(const der_reader *d, int tag);

/* Steps over the next element, whatever its tag. */
bool der_skip(der_reader *d);

/* Whether every element has been read. */
bool der_done(const der_reader *d);

/* AlgorithmIdentifier: SEQUENCE { OID, parameters ANY OPTIONAL }; *oid is its OID. */
bool der_read_algorithm(der_reader *d, span *oid);

/* UTCTime (YYMMDDhhmmssZ) or GeneralizedTime (YYYYMMDDhhmmss[.f*]Z) as Unix
 * seconds; false for any other element or form. */
bool der_read_time(der_reader *d, int64_t *out);

/* ---- OIDs (DER contents) ------------------------------------------------- */

typedef struct oid_bytes {
    const char *bytes;
    size_t len;
} oid_bytes;

extern const oid_bytes OID_SIGNED_DATA;          /* 1.2.840.113549.1.7.2 */
extern const oid_bytes OID_CONTENT_TYPE;         /* 1.2.840.113549.1.9.3 */
extern const oid_bytes OID_MESSAGE_DIGEST;       /* 1.2.840.113549.1.9.4 */
extern const oid_bytes OID_SIGNING_TIME;         /* 1.2.840.113549.1.9.5 */
extern const oid_bytes OID_COUNTERSIGNATURE;     /* 1.2.840.113549.1.9.6: legacy timestamp */
extern const oid_bytes OID_TST_INFO;             /* 1.2.840.113549.1.9.16.1.4: RFC 3161 TSTInfo */
extern const oid_bytes OID_SPC_INDIRECT_DATA;    /* 1.3.6.1.4.1.311.2.1.4 */
extern const oid_bytes OID_SPC_PE_IMAGE_DATA;    /* 1.3.6.1.4.1.311.2.1.15: a PE image's signature */
extern const oid_bytes OID_SPC_SIPINFO;          /* 1.3.6.1.4.1.311.2.1.30: an MSI package's */
extern const oid_bytes OID_RFC3161_TIMESTAMP;    /* 1.3.6.1.4.1.311.3.3.1 */
extern const oid_bytes OID_EKU_CODE_SIGNING;     /* 1.3.6.1.5.5.7.3.3 */
extern const oid_bytes OID_EKU_TIME_STAMPING;    /* 1.3.6.1.5.5.7.3.8 */
extern const oid_bytes OID_NESTED_SIGNATURE;     /* 1.3.6.1.4.1.311.2.4.1 */
extern const oid_bytes OID_CERTIFICATE_POLICIES; /* 2.5.29.32 */

/* Whether the OID element's contents s (or p, len) are oid. */
bool oid_is(span s, oid_bytes oid);
bool oid_is_raw(const unsigned char *p, size_t len, oid_bytes oid);

/* ---- Digests ------------------------------------------------------------- */

/* The digest algorithm an OID names; false for one Mbed TLS does not know. */
bool md_from_oid(span oid, mbedtls_md_type_t *md);

/* "sha1", "sha256", "sha384", "sha512" or "other" (as the result records it). */
const char *md_name(mbedtls_md_type_t md);

/* Whether the policy accepts md for signatures, digests and chains. */
bool md_allowed(mbedtls_md_type_t md, const authenticode_policy *policy);

/* out must hold MBEDTLS_MD_MAX_SIZE bytes; returns the digest size, 0 on failure. */
size_t md_hash(mbedtls_md_type_t md, const unsigned char *data, size_t len, unsigned char *out);

/* Whether expected holds exactly the actual_len bytes of actual. */
bool digest_equals(span expected, const unsigned char *actual, size_t actual_len);

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

/* Parses a SignerInfo element (version 1: issuerAndSerialNumber) into *s;
 * false with *why set when it is malformed or unsupported. */
bool cms_parse_signer(span element, cms_signer *s, const char **why);

/* Parses ContentInfo { signedData, [0] SignedData } that fills element
 * exactly, with exactly one SignerInfo; false with *why set otherwise. */
bool cms_parse_signed_data(span element, cms_signed_data *sd, const char **why);

/*
 * Finds the attribute of type oid in an attribute list (the contents of a
 * SET OF Attribute) and sets *values to the contents of its values SET.
 * Returns 0 when absent, 1 when found once, -1 when repeated or malformed.
 */
int cms_find_attribute(span list, oid_bytes oid, span *values);

/* Contents of the signed attributes SET (attrs is the whole [0] element). */
span cms_attrs_contents(span attrs);

/* The one value of a single-valued attribute, whole element. */
bool cms_single_value(span values, span *value);

/*
 * Checks a SignerInfo against the content it signs: its digest algorithm is
 * allowed, its signed attributes are present, name content_type (unless
 * NULL), hold messageDigest = hash(content); and its signature over the
 * attributes (DER, re-tagged as SET) verifies with cert's key. Returns
 * AUTHENTICODE_VALID or the verdict with *why set.
 */
authenticode_verdict cms_check_signer(const cms_signer *s, const oid_bytes *content_type, const unsigned char *content,
                                      size_t content_len, const mbedtls_x509_crt *cert,
                                      const authenticode_policy *policy, const char **why);

#endif
