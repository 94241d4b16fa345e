/*
 * tlsprefs.c — the order of key-exchange groups and of cipher suites in
 * outpost's TLS handshakes (see tlsprefs.h for why), set through libcurl's
 * CURLOPT_SSL_CTX_FUNCTION, which hands mbedTLS's configuration to us
 * before the handshake starts.
 */
#include "net/tlsprefs.h"

#include <string.h>

#include <mbedtls/ecp.h>
#include <mbedtls/ssl_ciphersuites.h>
#include <mbedtls/version.h>

#include "crypto/gcmaccel.h"
#include "net/tlssession.h"

#ifdef OUTPOST_CURL_MBEDTLS
#include <mbedtls/ssl.h>
#endif

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

/* ECDHE with AES-GCM, the faster key first; what servers and CDNs prefer. */
static const int AES_GCM_SUITES[] = {
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384};

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

#ifdef OUTPOST_CURL_MBEDTLS
/* mbedtls_ssl_conf_curves keeps the pointer: the list lives as long as
 * the process. Built once, before any transfer (curl_global_init time is
 * single-threaded; this is filled on first use under the same rule). */
static mbedtls_ecp_group_id groups[32];
static int groups_ready;
/* The cipher suites in outpost's order; empty (mbedTLS's own order) when
 * AES-GCM is not the faster AEAD here. Same lifetime rule as groups. */
static int suites[256];

static int libcurl_uses_this_mbedtls(void)
{
    /* The callback receives mbedTLS's own configuration structure: only
     * safe when libcurl was built against exactly these headers. */
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    static const char want[] = "mbedTLS/" MBEDTLS_VERSION_STRING;
    return v && v->ssl_version && strcmp(v->ssl_version, want) == 0;
}

static CURLcode on_ssl_ctx(CURL *e, void *ssl_config, void *user)
{
    mbedtls_ssl_conf_curves((mbedtls_ssl_config *)ssl_config, groups);
    if (suites[0] != 0)
        mbedtls_ssl_conf_ciphersuites((mbedtls_ssl_config *)ssl_config, suites);
    tlssession_offer(user, e, ssl_config); /* user: the run's tlssession, or NULL */
    return CURLE_OK;
}

int tlsprefs_active(void)
{
    if (!groups_ready) {
        int supported[32], ordered[32];
        size_t n = 0;
        for (const mbedtls_ecp_group_id *g = mbedtls_ecp_grp_id_list(); *g != MBEDTLS_ECP_DP_NONE && n + 1 < 32; g++)
            supported[n++] = (int)*g;
        supported[n] = 0;
        size_t m = tlsprefs_order_groups(supported, ordered, 32);
        for (size_t i = 0; i <= m; i++)
            groups[i] = (mbedtls_ecp_group_id)ordered[i];
        if (tlsprefs_aes_gcm_first())
            tlsprefs_order_suites(mbedtls_ssl_list_ciphersuites(), 1, suites, sizeof suites / sizeof suites[0]);
        groups_ready = libcurl_uses_this_mbedtls() ? 1 : -1;
    }
    return groups_ready == 1;
}

void tlsprefs_apply(CURL *e, tlssession *sessions)
{
    if (tlsprefs_active()) {
        curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
        curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, (void *)sessions);
    }
}
#else
int tlsprefs_active(void)
{
    return 0;
}

void tlsprefs_apply(CURL *e, tlssession *sessions)
{
    (void)e;
    (void)sessions;
}
#endif
