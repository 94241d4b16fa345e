/*
 * chain.h — certificates and the chains between them, for authenticode/
 * only: sets of certificates (certs_*: those a signature carries, those of a
 * CA file) and the judgement of a chain from a signer to a trusted CA at a
 * given time, with revocation by CRLs (chain_*).
 *
 * Judging time. Mbed TLS 2.28 checks certificate validity against the
 * current clock inside mbedtls_x509_crt_verify_with_profile. chain_verify
 * passes a verify callback that clears MBEDTLS_X509_BADCERT_EXPIRED/FUTURE
 * on every certificate of the chain (root included) and sets them again
 * from the certificate's own dates compared with the judging time. The only
 * other use Mbed TLS makes of the clock is to prefer, among several
 * candidate parents with the same name, one valid now; a candidate that is
 * not is still used as a fallback, and the callback then judges it.
 */
#ifndef OUTPOST_AUTHENTICODE_CHAIN_H
#define OUTPOST_AUTHENTICODE_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mbedtls/x509_crl.h>
#include <mbedtls/x509_crt.h>

#include "authenticode/authenticode.h"
#include "authenticode/cms.h"

/* ---- Sets of certificates ------------------------------------------------ */

/* Parses one DER certificate into *pool (appending); Mbed TLS's result. A
 * certificatePolicies extension Mbed TLS does not know is accepted, any
 * other unknown critical extension is not. */
int certs_add(mbedtls_x509_crt *pool, const unsigned char *der, size_t len);

/* Parses every certificate of a SignedData's [0] certificates set into
 * *pool (appending, at most 64). One that cannot be read is named in notes
 * (where says whose set it is): it can only fail to be found, and the
 * chain's failure then says why. */
void certs_parse(span certificates, mbedtls_x509_crt *pool, const char *where, char *notes, size_t notes_size);

/* Parses every certificate of a CA file's contents (PEM blocks, or DER
 * certificates back to back) into *chain; each one that cannot be read is
 * named in notes (where names the file) and counted in *unreadable. */
void certs_parse_ca(const char *data, size_t len, const char *where, mbedtls_x509_crt *chain, char *notes,
                    size_t notes_size, unsigned *unreadable);

/* The certificate of pool that s names (issuer and serial number), NULL
 * when there is none. */
const mbedtls_x509_crt *certs_find(const mbedtls_x509_crt *pool, const cms_signer *s);

/* Whether crt's extended key usage names eku explicitly. An absent
 * extension or anyExtendedKeyUsage does not count: a code-signing
 * certificate must say so. */
bool certs_has_eku(const mbedtls_x509_crt *crt, oid_bytes eku);

/* ---- Chains -------------------------------------------------------------- */

/* How a chain is judged, and what the judgement found. */
typedef struct chain_judging {
    int64_t when;                   /* judging time */
    bool timestamped;               /* when comes from a trusted timestamp */
    const mbedtls_x509_crl *crls;   /* crl_files; NULL or empty: no revocation check */
    const mbedtls_x509_crt *parent; /* the certificate judged just before (one level up) */
    char revoked[256];              /* which certificate is revoked, and since when */
    char *notes;                    /* CRLs that did not verify (result->notes) */
    size_t notes_size;
} chain_judging;

/* Judging at when, dates only (timestamp chains): no CRLs, no notes. */
chain_judging chain_at(int64_t when);

/*
 * Verifies that leaf chains through pool to a certificate of trusted, all
 * valid at judging->when and (with judging->crls) none revoked. Fills why
 * with the failure (empty on success); *revoked is set when revocation was
 * the reason.
 */
bool chain_verify(const mbedtls_x509_crt *leaf, const mbedtls_x509_crt *pool, mbedtls_x509_crt *trusted,
                  chain_judging *judging, const authenticode_policy *policy, char *why, size_t why_size, bool *revoked);

#endif
