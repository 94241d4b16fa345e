/*
 * mbedtls_compat.h — the one place that bridges Mbed TLS 2.28 (Debian 12)
 * and 3.x for the Authenticode code.
 *
 * Mbed TLS 3 made most certificate fields private (reachable only through
 * MBEDTLS_PRIVATE()) and replaced the ext_types bit field with
 * mbedtls_x509_crt_has_ext_type(). Everything else we use (asn1, oid, md,
 * pk_verify, x509_crt_parse_der, x509_crt_verify_with_profile) has the same
 * signature in both. Include this header instead of sprinkling version
 * checks through the code.
 */
#ifndef OUTPOST_MBEDTLS_COMPAT_H
#define OUTPOST_MBEDTLS_COMPAT_H

#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>

#if MBEDTLS_VERSION_MAJOR >= 3
/* A field that 3.x marks private but that certificate policy checks need. */
#define COMPAT_PRIVATE(member) MBEDTLS_PRIVATE(member)
/* Whether crt carries the extension type (MBEDTLS_X509_EXT_...). */
#define compat_x509_crt_has_ext(crt, type) (mbedtls_x509_crt_has_ext_type((crt), (type)) != 0)
#else
#define COMPAT_PRIVATE(member) member
#define compat_x509_crt_has_ext(crt, type) (((crt)->ext_types & (type)) != 0)
#endif

#endif
