/*
 * chain.c — certificates and chains (see chain.h): the certificates a
 * signature carries and those of CA files (certs_*), and a signer's chain
 * judged at a time, with revocation by CRLs (chain_*).
 */
#include "authenticode/chain.h"

#include <stdio.h>
#include <string.h>

#include <mbedtls/error.h>
#include <mbedtls/md.h>
#include <mbedtls/oid.h>
#include <mbedtls/pem.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform.h>

#include "authenticode/authenticode_int.h"
#include "authenticode/subject.h"
#include "core/timefmt.h"

#define MAX_CARRIED_CERTIFICATES 64 /* certificates we parse from one SignedData */

static int64_t x509_time_to_unix(const mbedtls_x509_time *t)
{
    return timefmt_from_civil(t->year, t->mon, t->day, t->hour, t->min, t->sec);
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

int certs_add(mbedtls_x509_crt *pool, const unsigned char *der, size_t len)
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
        !der_read(&t, TAG_SEQUENCE, NULL, &subject))
        return;
    (void)subject_format_der(subject.p, subject.len, out, size);
}

/* Notes that certificate number position (1-based) of where could not be
 * read: its subject when the DER shows it, and Mbed TLS's error. */
static void certs_note_unreadable(const unsigned char *der, size_t len, const char *where, unsigned position, int ret,
                                  char *notes, size_t notes_size)
{
    char subject[128], why[96];
    certs_raw_subject(der, len, subject, sizeof subject);
    mbedtls_strerror(ret, why, sizeof why);
    authenticode_note(notes, notes_size, "certificate %u of %s%s%s%s cannot be read (Mbed TLS -0x%04x: %s)", position,
                      where, subject[0] ? " (\"" : "", subject, subject[0] ? "\")" : "", (unsigned)-ret, why);
}

void certs_parse(span certificates, mbedtls_x509_crt *pool, const char *where, char *notes, size_t notes_size)
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

const mbedtls_x509_crt *certs_find(const mbedtls_x509_crt *pool, const cms_signer *s)
{
    for (const mbedtls_x509_crt *c = pool; c && c->raw.len; c = c->next) {
        if (c->issuer_raw.len == s->issuer.len && memcmp(c->issuer_raw.p, s->issuer.p, s->issuer.len) == 0 &&
            c->serial.len == s->serial.len && memcmp(c->serial.p, s->serial.p, s->serial.len) == 0)
            return c;
    }
    return NULL;
}

bool certs_has_eku(const mbedtls_x509_crt *crt, oid_bytes eku)
{
    if (!mbedtls_x509_crt_has_ext_type(crt, MBEDTLS_X509_EXT_EXTENDED_KEY_USAGE))
        return false;
    for (const mbedtls_x509_sequence *s = &crt->ext_key_usage; s; s = s->next) {
        if (oid_is_raw(s->buf.p, s->buf.len, eku))
            return true;
    }
    return false;
}

/* ---- Chains -------------------------------------------------------------- */

/* Whether crl's signature verifies with issuer's key. (Mbed TLS 3.6 keeps
 * a CRL's signature fields private and offers no accessor for them.) */
static bool crl_signed_by(const mbedtls_x509_crl *crl, const mbedtls_x509_crt *issuer)
{
    unsigned char hash[MBEDTLS_MD_MAX_SIZE];
    mbedtls_md_type_t md = crl->MBEDTLS_PRIVATE(sig_md);
    size_t n = md_hash(md, crl->tbs.p, crl->tbs.len, hash);
    return n != 0 && mbedtls_pk_verify_ext(crl->MBEDTLS_PRIVATE(sig_pk), crl->MBEDTLS_PRIVATE(sig_opts),
                                           (mbedtls_pk_context *)&issuer->pk, md, hash, n, crl->MBEDTLS_PRIVATE(sig).p,
                                           crl->MBEDTLS_PRIVATE(sig).len) == 0;
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
            authenticode_note(j->notes, j->notes_size, "a CRL of \"%s\" does not verify with its issuer's key: ignored",
                              name);
            continue;
        }
        for (const mbedtls_x509_crl_entry *e = &crl->entry; e && e->raw.len; e = e->next) {
            if (e->serial.len != crt->serial.len || memcmp(e->serial.p, crt->serial.p, crt->serial.len) != 0)
                continue;
            int64_t at = x509_time_to_unix(&e->revocation_date);
            if (j->timestamped && at > j->when)
                continue; /* revoked after the trusted signing time: the signature stands */
            char subject[120], date[TIMEFMT_ISO8601_SIZE];
            (void)subject_format(&crt->subject, subject, sizeof subject);
            timefmt_iso8601(at, date);
            snprintf(j->revoked, sizeof j->revoked, "certificate \"%.120s\" was revoked on %.24s%s", subject, date,
                     j->timestamped ? ", before the signature's timestamp"
                                    : " and the signature has no trusted timestamp");
            return;
        }
    }
}

/* Verify callback: judge every certificate's dates at j->when instead of
 * the wall clock (see chain.h), and its revocation. Mbed TLS
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

bool chain_verify(const mbedtls_x509_crt *leaf, const mbedtls_x509_crt *pool, mbedtls_x509_crt *trusted,
                  chain_judging *judging, const authenticode_policy *policy, char *why, size_t why_size, bool *revoked)
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
    char at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(judging->when, at);
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

chain_judging chain_at(int64_t when)
{
    chain_judging j;
    memset(&j, 0, sizeof j);
    j.when = when;
    return j;
}

/* ---- CA files ------------------------------------------------------------ */

void certs_parse_ca(const char *data, size_t len, const char *where, mbedtls_x509_crt *chain, char *notes,
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
                ret = certs_add(chain, pem.MBEDTLS_PRIVATE(buf), pem.MBEDTLS_PRIVATE(buflen));
            if (ret != 0) {
                (*unreadable)++;
                const unsigned char *der = pem.MBEDTLS_PRIVATE(buf);
                certs_note_unreadable(der, der ? pem.MBEDTLS_PRIVATE(buflen) : 0, where, position, ret, notes,
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
        authenticode_note(notes, notes_size, "%s holds bytes after certificate %u that are not a certificate", where,
                          position);
    }
}
