/*
 * tlsprefs.c — the order of key-exchange groups and of cipher suites in
 * outpost's TLS handshakes (see tlsprefs.h for why); tls.c hands the
 * ordered lists to libcurl's mbedTLS.
 */
#include "net/tlsprefs.h"

#include <mbedtls/ecp.h>
#include <mbedtls/ssl_ciphersuites.h>

#include "crypto/gcmaccel.h"

/* Fastest first; all four are what a TLS 1.2 server is likely to have. */
static const int PREFERRED[] = {MBEDTLS_ECP_DP_CURVE25519, MBEDTLS_ECP_DP_SECP256R1, MBEDTLS_ECP_DP_SECP384R1,
                                MBEDTLS_ECP_DP_SECP521R1};

static int contains(const int *list, size_t n, int id)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == id)
            return 1;
    return 0;
}

/* preferred[] (those of them supported[] holds) first, then the rest of
 * supported[] in its order; 0-terminated like supported[]. */
static size_t order(const int *preferred, size_t npreferred, const int *supported, int *out, size_t cap)
{
    size_t n = 0, count = 0;
    if (cap == 0)
        return 0;
    while (supported[count] != 0)
        count++;
    for (size_t i = 0; i < npreferred && n + 1 < cap; i++)
        if (contains(supported, count, preferred[i]))
            out[n++] = preferred[i];
    for (size_t i = 0; i < count && n + 1 < cap; i++)
        if (!contains(out, n, supported[i]))
            out[n++] = supported[i];
    out[n] = 0;
    return n;
}

size_t tlsprefs_order_groups(const int *supported, int *out, size_t cap)
{
    return order(PREFERRED, sizeof PREFERRED / sizeof PREFERRED[0], supported, out, cap);
}

/* AES-GCM, the faster key first: TLS 1.3's suites (Mbed TLS 3.6 offers
 * ChaCha20-Poly1305 before AES-128-GCM), then TLS 1.2's with ECDHE; what
 * servers and CDNs prefer. */
static const int AES_GCM_SUITES[] = {MBEDTLS_TLS1_3_AES_128_GCM_SHA256,
                                     MBEDTLS_TLS1_3_AES_256_GCM_SHA384,
                                     MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
                                     MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
                                     MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
                                     MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384};

size_t tlsprefs_order_suites(const int *supported, int aes_gcm_first, int *out, size_t cap)
{
    size_t npreferred = aes_gcm_first ? sizeof AES_GCM_SUITES / sizeof AES_GCM_SUITES[0] : 0;
    return order(AES_GCM_SUITES, npreferred, supported, out, cap);
}

int tlsprefs_aes_gcm_first(void)
{
#ifdef OUTPOST_GCM_ALT
    return gcmaccel_active() != GCMACCEL_PORTABLE;
#else
    return 0;
#endif
}
