/*
 * tls.c — TLS in one place (see tls.h): the CA material chosen once per
 * client, the options set on every easy handle, and, where libcurl runs
 * over our mbedTLS, libcurl's SSL context callback (the handshake order of
 * tlsprefs.h, the session offer of tlssession.h) and the session keep.
 *
 * Layout: the setup, the options, then the mbedTLS part.
 */
#include "net/tls.h"

#include <stdlib.h>
#include <string.h>

#include <mbedtls/base64.h>

#include "base/text.h"
#include "crypto/sha256.h"
#include "net/tlsprefs.h"
#include "platform/platform.h"

#ifdef OUTPOST_CURL_MBEDTLS
#include <mbedtls/ecp.h>
#include <mbedtls/ssl.h>
#include <mbedtls/ssl_ciphersuites.h>
#include <mbedtls/version.h>
#endif

struct tls_setup {
    char *ca_file;         /* tls.ca_file; NULL: the system's store */
    char *ca_bundle;       /* tls.ca_file's bytes as judged, or the OS root store as PEM when the TLS library has
                              none (Windows); NULL otherwise */
    size_t ca_bundle_len;  /* bytes in ca_bundle */
    const char *ca_system; /* the system bundle file otherwise (platform_system_ca_file); NULL: none */
    char *pinned_key;      /* tls.pinned_public_key, or NULL */
    tlssession *session;   /* the TLS session kept between runs; NULL: none kept */
};

static void set_handshake(tls_setup *t, CURL *e);

/* ---- The setup --------------------------------------------------------------- */

/* The most CA material or key file read (a big corporate bundle is ~1 MiB). */
#define TLS_FILE_MAX (8 * 1024 * 1024)

/*
 * tls.pinned_public_key naming a key file, as libcurl reads one (a PEM
 * "PUBLIC KEY" block, else DER SubjectPublicKeyInfo), turned into the
 * "sha256//<base64>" pin of those bytes: the file is read once through the
 * handle it is judged by (platform_read_trusted_file), and libcurl never
 * opens it by name. *pin is malloc'd.
 */
static MUST_CHECK error_code pin_from_key_file(const char *path, char **pin, error_info *err)
{
    char *text = NULL;
    size_t len = 0;
    error_code rc = platform_read_trusted_file("tls.pinned_public_key", path, false, TLS_FILE_MAX, &text, &len, err);
    if (rc != ERR_OK)
        return rc == ERR_NOT_FOUND ? (err ? (err->code = ERR_CONFIG) : ERR_CONFIG) : rc;
    static const char begin[] = "-----BEGIN PUBLIC KEY-----", end[] = "-----END PUBLIC KEY-----";
    unsigned char *der = (unsigned char *)text;
    size_t der_len = len;
    unsigned char *decoded = NULL;
    char *from = strstr(text, begin);
    if (from) {
        from += sizeof begin - 1;
        char *to = strstr(from, end);
        size_t room = len;
        decoded = malloc(room ? room : 1);
        if (!decoded) {
            free(text);
            return error_set(err, ERR_NOMEM, "out of memory reading tls.pinned_public_key");
        }
        /* mbedTLS's decoder takes line breaks but not a leading one. */
        while (to && from < to && (*from == '\r' || *from == '\n' || *from == ' '))
            from++;
        if (!to ||
            mbedtls_base64_decode(decoded, room, &der_len, (const unsigned char *)from, (size_t)(to - from)) != 0) {
            free(decoded);
            free(text);
            return error_set(err, ERR_CONFIG,
                             "tls.pinned_public_key %s: the PEM PUBLIC KEY block cannot be decoded; use the server "
                             "key's public half (openssl pkey -pubout) or a sha256// pin",
                             path);
        }
        der = decoded;
    }
    unsigned char digest[32];
    sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, der, der_len);
    sha256_finish(&ctx, digest);
    free(decoded);
    free(text);
    unsigned char b64[64];
    size_t b64_len = 0;
    if (mbedtls_base64_encode(b64, sizeof b64, &b64_len, digest, sizeof digest) != 0)
        return error_set(err, ERR_INTERNAL, "cannot encode the pin of tls.pinned_public_key");
    *pin = malloc(8 + b64_len + 1);
    if (!*pin)
        return error_set(err, ERR_NOMEM, "out of memory reading tls.pinned_public_key");
    memcpy(*pin, "sha256//", 8);
    memcpy(*pin + 8, b64, b64_len);
    (*pin)[8 + b64_len] = '\0';
    return ERR_OK;
}

error_code tls_new(const char *ca_file, const char *pinned_key, const char *session_file, tls_setup **out,
                   error_info *err)
{
    tls_setup *t = calloc(1, sizeof *t);
    if (!t)
        return error_set(err, ERR_NOMEM, "out of memory creating the HTTP client");
    t->ca_file = ca_file ? text_dup(ca_file) : NULL;
    if (ca_file && !t->ca_file) {
        tls_free(t);
        return error_set(err, ERR_NOMEM, "out of memory creating the HTTP client");
    }
    /* What libcurl trusts is what was judged: tls.ca_file's bytes and the
     * key file's pin, each read through the handle it was judged by, so a
     * file swapped after the preflight is never read by name. */
    error_code rc = ERR_OK;
    if (ca_file)
        rc = platform_read_trusted_file("tls.ca_file", ca_file, false, TLS_FILE_MAX, &t->ca_bundle, &t->ca_bundle_len,
                                        err);
    if (rc == ERR_NOT_FOUND)
        rc = err ? (err->code = ERR_CONFIG) : ERR_CONFIG;
    if (rc == ERR_OK && pinned_key && strncmp(pinned_key, "sha256//", 8) != 0)
        rc = pin_from_key_file(pinned_key, &t->pinned_key, err);
    else if (rc == ERR_OK && pinned_key && !(t->pinned_key = text_dup(pinned_key)))
        rc = error_set(err, ERR_NOMEM, "out of memory creating the HTTP client");
    if (rc != ERR_OK) {
        tls_free(t);
        return rc;
    }
    /* Without a CA file, trust the OS store: in memory on Windows, a
     * file (platform_system_ca_file) elsewhere. */
    error_info ignored;
    if (!t->ca_file && platform_system_ca_bundle(&t->ca_bundle, &t->ca_bundle_len, &ignored) != ERR_OK)
        t->ca_bundle = NULL;
    if (!t->ca_file && !t->ca_bundle)
        t->ca_system = platform_system_ca_file();
    if (session_file && tls_uses_our_mbedtls())
        t->session =
            tlssession_new(session_file, t->ca_file, t->ca_bundle, t->ca_bundle_len, t->ca_system, t->pinned_key);
    *out = t;
    return ERR_OK;
}

void tls_free(tls_setup *t)
{
    if (!t)
        return;
    tlssession_free(t->session); /* borrows ca_bundle */
    free(t->ca_file);
    free(t->ca_bundle);
    free(t->pinned_key);
    free(t);
}

/* ---- The options ------------------------------------------------------------- */

void tls_apply(tls_setup *t, CURL *e, bool pin)
{
    curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    set_handshake(t, e);
    /* The CA file applies to every host (a TLS-inspecting proxy re-signs
     * the storage host too); the pinned key is the platform's own. */
    if (t->ca_bundle) {
#if LIBCURL_VERSION_NUM >= 0x074d00 /* 7.77.0: CURLOPT_CAINFO_BLOB (OpenSSL, mbedTLS, Schannel) */
        struct curl_blob blob = {t->ca_bundle, t->ca_bundle_len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
#else
        if (t->ca_file)
            curl_easy_setopt(e, CURLOPT_CAINFO, t->ca_file);
#endif
    } else if (t->ca_system) {
        curl_easy_setopt(e, CURLOPT_CAINFO, t->ca_system);
    }
    if (t->pinned_key && pin)
        curl_easy_setopt(e, CURLOPT_PINNEDPUBLICKEY, t->pinned_key);
}

/* ---- libcurl over our mbedTLS -------------------------------------------------- */

#ifdef OUTPOST_CURL_MBEDTLS
/* mbedtls_ssl_conf_curves keeps the pointer: the list lives as long as
 * the process. Built once, on first use (a client is used from one
 * thread, and so is every run's). */
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

/* The handshake's mbedTLS context on e, NULL when there is none (yet). */
static mbedtls_ssl_context *ssl_of(CURL *e)
{
    struct curl_tlssessioninfo *info = NULL;
    if (curl_easy_getinfo(e, CURLINFO_TLS_SSL_PTR, &info) != CURLE_OK || !info ||
        info->backend != CURLSSLBACKEND_MBEDTLS)
        return NULL;
    return info->internals;
}

/* The URL e is fetching (the session's host and port); NULL when unknown. */
static const char *url_of(CURL *e)
{
    const char *url = NULL;
    return curl_easy_getinfo(e, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK ? url : NULL;
}

static CURLcode on_ssl_ctx(CURL *e, void *ssl_config, void *user)
{
    mbedtls_ssl_conf_curves((mbedtls_ssl_config *)ssl_config, groups);
    if (suites[0] != 0)
        mbedtls_ssl_conf_ciphersuites((mbedtls_ssl_config *)ssl_config, suites);
    tlssession *session = user; /* the run's kept session, or NULL */
    if (session)
        tlssession_offer(session, ssl_config, ssl_of(e), url_of(e));
    return CURLE_OK;
}

bool tls_uses_our_mbedtls(void)
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

static void set_handshake(tls_setup *t, CURL *e)
{
    if (tls_uses_our_mbedtls()) {
        curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
        curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, (void *)t->session);
        /* Mbed TLS 3 exports a handshake's session once only
         * (mbedtls_ssl_get_session): libcurl's own cache would take it
         * first, and the kept session, which tlssession offers to every
         * handshake of the run too, would never be saved. */
        if (t->session)
            curl_easy_setopt(e, CURLOPT_SSL_SESSIONID_CACHE, 0L);
    }
}

tlssession_outcome tls_keep_session(tls_setup *t, CURL *e)
{
    if (!t || !t->session)
        return TLSSESSION_NONE;
    return tlssession_keep(t->session, ssl_of(e), url_of(e));
}

void tls_session_failed(tls_setup *t)
{
    if (t)
        tlssession_failed(t->session);
}
#else
bool tls_uses_our_mbedtls(void)
{
    return false;
}

static void set_handshake(tls_setup *t, CURL *e)
{
    (void)t;
    (void)e;
}

tlssession_outcome tls_keep_session(tls_setup *t, CURL *e)
{
    (void)t;
    (void)e;
    return TLSSESSION_NONE;
}

void tls_session_failed(tls_setup *t)
{
    (void)t;
}
#endif
