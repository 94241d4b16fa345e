/*
 * tlssession.c — TLS session resumption across runs (see tlssession.h for
 * why and what keeps it safe): the file's layout first, then the mbedTLS
 * part, which exists only where libcurl runs over the same mbedTLS.
 */
#include "net/tlssession.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Version 2 added the not-after line: a version 1 file (no lifetime of
 * outpost's own) is damaged to this code, removed, and replaced after a
 * full handshake. */
static const char MAGIC[] = "outpost-tls-session 2\n";

int64_t tlssession_not_after(int64_t now, int64_t leaf_not_after, int64_t inherited)
{
    int64_t until = now + TLSSESSION_MAX_AGE_S;
    if (leaf_not_after > 0 && leaf_not_after < until)
        until = leaf_not_after;
    if (inherited > 0 && inherited < until)
        until = inherited;
    return until;
}

bool tlssession_usable(int64_t now, int64_t not_after)
{
    /* A not-after further than the cap from now was not written by this
     * clock (the clock went back, or the file was made elsewhere). */
    return now < not_after && not_after <= now + TLSSESSION_MAX_AGE_S;
}

unsigned char *tlssession_encode(const char *key, int64_t not_after, const unsigned char *blob, size_t blob_len,
                                 size_t *len)
{
    char line[32];
    int n = snprintf(line, sizeof line, "%" PRId64 "\n", not_after);
    size_t magic = sizeof MAGIC - 1, klen = strlen(key), llen = (size_t)n;
    if (strchr(key, '\n') || blob_len == 0 || not_after <= 0 || n <= 0 || llen >= sizeof line)
        return NULL;
    unsigned char *out = malloc(magic + klen + 1 + llen + blob_len);
    if (!out)
        return NULL;
    memcpy(out, MAGIC, magic);
    memcpy(out + magic, key, klen);
    out[magic + klen] = '\n';
    memcpy(out + magic + klen + 1, line, llen);
    memcpy(out + magic + klen + 1 + llen, blob, blob_len);
    *len = magic + klen + 1 + llen + blob_len;
    return out;
}

tlssession_decoded tlssession_decode(const unsigned char *data, size_t len, const char *key, int64_t *not_after,
                                     const unsigned char **blob, size_t *blob_len)
{
    size_t magic = sizeof MAGIC - 1, klen = strlen(key);
    *blob = NULL;
    *blob_len = 0;
    *not_after = 0;
    if (!data || len <= magic || memcmp(data, MAGIC, magic) != 0)
        return TLSSESSION_DAMAGED;
    const unsigned char *p = data + magic, *end = data + len;
    const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl)
        return TLSSESSION_DAMAGED;
    if ((size_t)(nl - p) != klen || memcmp(p, key, klen) != 0)
        return TLSSESSION_OTHER_KEY;
    p = nl + 1;
    int64_t value = 0;
    size_t digits = 0;
    while (p < end && *p >= '0' && *p <= '9' && digits < 18) {
        value = value * 10 + (*p++ - '0');
        digits++;
    }
    if (digits == 0 || p >= end || *p != '\n' || value <= 0 || p + 1 >= end)
        return TLSSESSION_DAMAGED;
    *not_after = value;
    *blob = p + 1;
    *blob_len = (size_t)(end - (p + 1));
    return TLSSESSION_OURS;
}

#ifdef OUTPOST_CURL_MBEDTLS

#include <ctype.h>
#include <stdio.h>

#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include <curl/curl.h>

#include "base/text.h"
#include "core/clock.h"
#include "core/timefmt.h"
#include "platform/platform.h"

/* A session without a ticket resumes only from the server's cache; a
 * ticket says how long it lives (0: unsaid). Beyond these the server would
 * refuse it anyway: not worth the bytes. */
#define SESSION_ID_MAX_AGE_S 3600
#define CA_MATERIAL_MAX (8 * 1024 * 1024)

struct tlssession {
    char *path;
    char *ca_file, *ca_system;
    char *pin; /* tls.pinned_public_key as libcurl gets it, or NULL */
    const char *ca_bundle;
    size_t ca_bundle_len;
    int trust_state; /* 0: not computed yet; 1: trust holds it; -1: unusable, keep nothing */
    char trust[65];  /* SHA-256 of the CA material, hex */
    bool loaded;     /* the file was read (once per run) */
    unsigned char *file;
    size_t file_len;
    bool have; /* current holds the session kept under key */
    char *key;
    int64_t not_after; /* current may be offered until then (Unix seconds) */
    mbedtls_ssl_session current;
    bool offered;  /* current was offered to a handshake */
    bool reported; /* its resumption was reported */
};

tlssession *tlssession_new(const char *path, const char *ca_file, const char *ca_bundle, size_t ca_bundle_len,
                           const char *ca_system, const char *pin)
{
    if (!path || (!ca_file && !ca_bundle && !ca_system))
        return NULL;
    tlssession *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->path = text_dup(path);
    s->ca_file = ca_file ? text_dup(ca_file) : NULL;
    s->ca_system = ca_system ? text_dup(ca_system) : NULL;
    s->pin = pin ? text_dup(pin) : NULL;
    s->ca_bundle = ca_bundle;
    s->ca_bundle_len = ca_bundle_len;
    mbedtls_ssl_session_init(&s->current);
    if (!s->path || (ca_file && !s->ca_file) || (ca_system && !s->ca_system) || (pin && !s->pin)) {
        tlssession_free(s);
        return NULL;
    }
    return s;
}

void tlssession_free(tlssession *s)
{
    if (!s)
        return;
    mbedtls_ssl_session_free(&s->current);
    if (s->file) {
        mbedtls_platform_zeroize(s->file, s->file_len);
        free(s->file);
    }
    free(s->key);
    free(s->path);
    free(s->ca_file);
    free(s->ca_system);
    free(s->pin);
    free(s);
}

/* The SHA-256 of the CA material and the pinned key, once per run: a
 * session verified under other trust is never offered. */
static bool trust_ready(tlssession *s)
{
    if (s->trust_state == 0) {
        s->trust_state = -1;
        char *text = NULL;
        size_t len = 0;
        const unsigned char *material = (const unsigned char *)s->ca_bundle;
        if (!material) {
            const char *file = s->ca_file ? s->ca_file : s->ca_system;
            if (platform_read_file(file, CA_MATERIAL_MAX, &text, &len, NULL) != ERR_OK)
                return false;
            material = (const unsigned char *)text;
        } else {
            len = s->ca_bundle_len;
        }
        unsigned char digest[32];
        const mbedtls_md_info_t *sha256 = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
        mbedtls_md_context_t md;
        mbedtls_md_init(&md);
        static const char pin_mark[] = "\npinned public key: ";
        const char *pin = s->pin ? s->pin : "none";
        if (mbedtls_md_setup(&md, sha256, 0) == 0 && mbedtls_md_starts(&md) == 0 &&
            mbedtls_md_update(&md, material, len) == 0 &&
            mbedtls_md_update(&md, (const unsigned char *)pin_mark, sizeof pin_mark - 1) == 0 &&
            mbedtls_md_update(&md, (const unsigned char *)pin, strlen(pin)) == 0 &&
            mbedtls_md_finish(&md, digest) == 0) {
            text_hex(digest, sizeof digest, s->trust);
            s->trust_state = 1;
        }
        mbedtls_md_free(&md);
        free(text);
    }
    return s->trust_state == 1;
}

/* "host:port trust" of the handshake of url: the host name mbedTLS checks
 * the certificate against, which must be the URL's (not a proxy's own
 * handshake). NULL when it cannot be told. */
static char *key_of(tlssession *s, const char *url, mbedtls_ssl_context *ssl)
{
    const char *hostname = mbedtls_ssl_get_hostname(ssl);
    if (!hostname || !trust_ready(s) || !url)
        return NULL;
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL, *key = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK && text_equal_nocase(host, hostname)) {
        size_t n = strlen(host) + strlen(port) + sizeof s->trust + 3;
        key = malloc(n);
        if (key) {
            snprintf(key, n, "%s:%s %s", host, port, s->trust);
            for (char *p = key; *p && *p != ':'; p++)
                *p = (char)tolower((unsigned char)*p);
        }
    }
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    if (key && strchr(key, '\n')) {
        free(key);
        key = NULL;
    }
    return key;
}

/* Mbed TLS 3.6 offers the client no accessor for a session's ticket, its
 * lifetime, its start or its master secret (only the id): those few reads
 * go through MBEDTLS_PRIVATE, here alone. */
static size_t ticket_len(const mbedtls_ssl_session *sess)
{
    return sess->MBEDTLS_PRIVATE(ticket_len);
}

static bool same_session(const mbedtls_ssl_session *a, const mbedtls_ssl_session *b)
{
    size_t id_len = mbedtls_ssl_session_get_id_len(a), tlen = ticket_len(a);
    return id_len == mbedtls_ssl_session_get_id_len(b) &&
           memcmp(*mbedtls_ssl_session_get_id(a), *mbedtls_ssl_session_get_id(b), id_len) == 0 &&
           tlen == ticket_len(b) &&
           (tlen == 0 || memcmp(a->MBEDTLS_PRIVATE(ticket), b->MBEDTLS_PRIVATE(ticket), tlen) == 0);
}

/* A resumed TLS 1.2 handshake keeps the offered session's master secret (a
 * full one makes a new one). TLS 1.3 derives new secrets either way: there
 * a resumption is not told apart from a full handshake. */
static bool same_master(const mbedtls_ssl_session *a, const mbedtls_ssl_session *b)
{
    return mbedtls_ssl_session_get_id_len(a) + ticket_len(a) > 0 &&
           memcmp(a->MBEDTLS_PRIVATE(master), b->MBEDTLS_PRIVATE(master), sizeof a->MBEDTLS_PRIVATE(master)) == 0;
}

static bool expired(const mbedtls_ssl_session *sess)
{
    uint32_t lifetime = sess->MBEDTLS_PRIVATE(ticket_lifetime);
#if defined(MBEDTLS_SSL_PROTO_TLS1_3) && defined(MBEDTLS_SSL_SESSION_TICKETS) && defined(MBEDTLS_HAVE_TIME)
    /* A TLS 1.3 session is its ticket, timed from its arrival (in ms). */
    if (sess->MBEDTLS_PRIVATE(tls_version) == MBEDTLS_SSL_VERSION_TLS1_3) {
        mbedtls_ms_time_t age_ms = mbedtls_ms_time() - sess->MBEDTLS_PRIVATE(ticket_reception_time);
        return ticket_len(sess) == 0 || age_ms < 0 || age_ms / 1000 >= (mbedtls_ms_time_t)lifetime;
    }
#endif
    mbedtls_time_t now = mbedtls_time(NULL);
    int64_t life = ticket_len(sess) > 0 && lifetime > 0 ? (int64_t)lifetime : SESSION_ID_MAX_AGE_S;
    int64_t age = (int64_t)(now - sess->MBEDTLS_PRIVATE(start));
    return age < 0 || age >= life;
}

static int64_t now_s(void)
{
    return clock_utc_ms(clock_default()) / 1000;
}

/* Forgets the kept session and removes its file (expired, damaged, or a
 * handshake that offered it failed). */
static void evict(tlssession *s)
{
    ERROR_IGNORE(platform_remove_file(s->path, NULL));
    mbedtls_ssl_session_free(&s->current);
    mbedtls_ssl_session_init(&s->current);
    free(s->key);
    s->key = NULL;
    s->have = s->offered = s->reported = false;
    s->not_after = 0;
}

/* The certificate's notAfter in Unix seconds; 0 when there is none. */
static int64_t leaf_not_after(const mbedtls_ssl_context *ssl)
{
    const mbedtls_x509_crt *leaf = mbedtls_ssl_get_peer_cert(ssl);
    if (!leaf)
        return 0;
    const mbedtls_x509_time *t = &leaf->valid_to;
    return timefmt_from_civil(t->year, t->mon, t->day, t->hour, t->min, t->sec);
}

/* Makes current the session in blob, kept under key until not_after. */
static bool adopt(tlssession *s, const char *key, int64_t not_after, const unsigned char *blob, size_t len)
{
    mbedtls_ssl_session_free(&s->current);
    mbedtls_ssl_session_init(&s->current);
    free(s->key);
    s->key = NULL;
    s->have = s->offered = s->reported = false;
    s->not_after = not_after;
    if (mbedtls_ssl_session_load(&s->current, blob, len) != 0) {
        mbedtls_ssl_session_free(&s->current);
        mbedtls_ssl_session_init(&s->current);
        return false;
    }
    s->key = text_dup(key);
    s->have = s->key != NULL;
    return s->have;
}

void tlssession_offer(tlssession *s, void *mbedtls_ssl_config, void *mbedtls_ssl, const char *url)
{
    if (!s)
        return;
    /* libcurl 7.88 turns tickets off; a ticket is what lets a server with
     * no session cache (nginx's default) resume. */
    mbedtls_ssl_conf_session_tickets((struct mbedtls_ssl_config *)mbedtls_ssl_config,
                                     MBEDTLS_SSL_SESSION_TICKETS_ENABLED);
    mbedtls_ssl_context *ssl = mbedtls_ssl;
    if (!ssl)
        return;
    char *key = key_of(s, url, ssl);
    if (!key)
        return;
    if (!s->loaded) {
        s->loaded = true;
        char *data = NULL;
        size_t len = 0, blob_len = 0;
        error_code rc = platform_read_file(s->path, TLSSESSION_MAX, &data, &len, NULL);
        if (rc == ERR_OK) {
            const unsigned char *blob = NULL;
            int64_t not_after = 0;
            tlssession_decoded d =
                tlssession_decode((const unsigned char *)data, len, key, &not_after, &blob, &blob_len);
            /* Another key is another host's or another trust's: left for it. */
            if (d == TLSSESSION_DAMAGED || (d == TLSSESSION_OURS && !tlssession_usable(now_s(), not_after)) ||
                (d == TLSSESSION_OURS && !adopt(s, key, not_after, blob, blob_len)))
                evict(s); /* a full handshake, then a new one */
            mbedtls_platform_zeroize(data, len);
            free(data);
        } else if (rc != ERR_NOT_FOUND) {
            evict(s); /* oversized or unreadable */
        }
    }
    if (s->have && strcmp(s->key, key) == 0 && tlssession_usable(now_s(), s->not_after) && !expired(&s->current) &&
        mbedtls_ssl_set_session(ssl, &s->current) == 0)
        s->offered = true;
    free(key);
}

/* tlssession_keep for now, a copy of the handshake's session. */
static tlssession_outcome keep_copy(tlssession *s, const char *url, mbedtls_ssl_context *ssl,
                                    const mbedtls_ssl_session *now)
{
    bool resumed = s->have && s->offered && !s->reported &&
                   mbedtls_ssl_get_version_number(ssl) == MBEDTLS_SSL_VERSION_TLS1_2 && same_master(now, &s->current);
    if (resumed)
        s->reported = true;
    tlssession_outcome outcome = resumed ? TLSSESSION_RESUMED : TLSSESSION_NONE;
    if ((s->have && same_session(now, &s->current)) ||
        (ticket_len(now) == 0 && mbedtls_ssl_session_get_id_len(now) == 0))
        return outcome;
    char *key = key_of(s, url, ssl);
    if (!key)
        return outcome;
    /* Until the leaf certificate expires and at most 24 h after the full
     * handshake that verified it: a session that came from resuming the
     * kept one inherits its end, so resumptions never stretch it. */
    int64_t clock = now_s();
    int64_t not_after = tlssession_not_after(clock, leaf_not_after(ssl), s->have && s->offered ? s->not_after : 0);
    if (!tlssession_usable(clock, not_after)) {
        free(key);
        return outcome;
    }
    size_t blob_len = 0, file_len = 0;
    unsigned char *blob = NULL, *file = NULL;
    if (mbedtls_ssl_session_save(now, NULL, 0, &blob_len) == MBEDTLS_ERR_SSL_BUFFER_TOO_SMALL && blob_len > 0 &&
        blob_len < TLSSESSION_MAX && (blob = malloc(blob_len)) != NULL &&
        mbedtls_ssl_session_save(now, blob, blob_len, &blob_len) == 0 &&
        (file = tlssession_encode(key, not_after, blob, blob_len, &file_len)) != NULL && file_len <= TLSSESSION_MAX) {
        /* Not worth failing a run over: the next one makes a full handshake.
         * Removed first so that the new file is created owner-only:
         * platform_write_atomic keeps the mode of a file it replaces, and
         * one an administrator loosened would show the master secret. */
        ERROR_IGNORE(platform_remove_file(s->path, NULL));
        if (platform_write_atomic(s->path, file, file_len, NULL) == ERR_OK &&
            adopt(s, key, not_after, blob, blob_len) && !resumed)
            outcome = TLSSESSION_SAVED;
        s->reported = s->reported || resumed; /* adopt cleared it */
    }
    if (blob) {
        mbedtls_platform_zeroize(blob, blob_len);
        free(blob);
    }
    if (file) {
        mbedtls_platform_zeroize(file, file_len);
        free(file);
    }
    free(key);
    return outcome;
}

void tlssession_failed(tlssession *s)
{
    if (s && s->offered)
        evict(s);
}

tlssession_outcome tlssession_keep(tlssession *s, void *mbedtls_ssl, const char *url)
{
    mbedtls_ssl_context *ssl = s ? mbedtls_ssl : NULL;
    if (!ssl || !mbedtls_ssl_is_handshake_over(ssl))
        return TLSSESSION_NONE;
    /* A copy: for TLS 1.3, only once a ticket has arrived. */
    mbedtls_ssl_session copy;
    mbedtls_ssl_session_init(&copy);
    if (mbedtls_ssl_get_session(ssl, &copy) != 0) {
        mbedtls_ssl_session_free(&copy);
        return TLSSESSION_NONE;
    }
    tlssession_outcome outcome = keep_copy(s, url, ssl, &copy);
    mbedtls_ssl_session_free(&copy);
    return outcome;
}

#else

tlssession *tlssession_new(const char *path, const char *ca_file, const char *ca_bundle, size_t ca_bundle_len,
                           const char *ca_system, const char *pin)
{
    (void)pin;
    (void)path;
    (void)ca_file;
    (void)ca_bundle;
    (void)ca_bundle_len;
    (void)ca_system;
    return NULL;
}

void tlssession_free(tlssession *s)
{
    (void)s;
}

void tlssession_offer(tlssession *s, void *mbedtls_ssl_config, void *mbedtls_ssl, const char *url)
{
    (void)s;
    (void)mbedtls_ssl_config;
    (void)mbedtls_ssl;
    (void)url;
}

void tlssession_failed(tlssession *s)
{
    (void)s;
}

tlssession_outcome tlssession_keep(tlssession *s, void *mbedtls_ssl, const char *url)
{
    (void)s;
    (void)mbedtls_ssl;
    (void)url;
    return TLSSESSION_NONE;
}

#endif
