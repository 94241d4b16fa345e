/*
 * tls.c — handing outpost's TLS preferences (tlsprefs.h) and the kept
 * session (tlssession.h) to libcurl's mbedTLS, through libcurl's
 * CURLOPT_SSL_CTX_FUNCTION, which hands mbedTLS's configuration to us
 * before the handshake starts.
 */
#include <string.h>

#include <mbedtls/ecp.h>
#include <mbedtls/ssl_ciphersuites.h>
#include <mbedtls/version.h>

#include "net/tlsprefs.h"
#include "net/tlssession.h"

#ifdef OUTPOST_CURL_MBEDTLS
#include <mbedtls/ssl.h>
#endif

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
