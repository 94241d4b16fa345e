/*
 * tlssession.h — TLS session resumption across runs, when libcurl runs over
 * the mbedTLS outpost was built with (the release builds).
 *
 * Why: a full TLS 1.2 handshake costs two ECDSA verifications (the server's
 * certificate and its key-exchange signature) and an X25519 exchange: about
 * three quarters of the CPU of a `check` over HTTPS. A resumed handshake
 * (RFC 5077 session ticket) does none of them. libcurl keeps sessions only
 * for the life of the process, so outpost keeps the last one in
 * state_dir/tls-session and offers it to the next run's first handshake.
 *
 * Trust is not weakened: a session is offered only to the same host name
 * and port it was made with, and only while the CA material (tls.ca_file,
 * or the system store) is byte for byte what verified the certificate
 * then; the server's certificate travels in the saved session, so a pinned
 * public key is still checked on every connection; the server decides
 * whether to resume at all (an unknown or expired ticket makes a full
 * handshake with full verification). The file holds the session's master
 * secret: it is written owner-only (0600) in the private state directory,
 * like everything else there, and never logged.
 *
 * Where libcurl runs over another TLS library (the Debian build: OpenSSL)
 * nothing is kept or offered.
 */
#ifndef OUTPOST_NET_TLSSESSION_H
#define OUTPOST_NET_TLSSESSION_H

#include <stdbool.h>
#include <stddef.h>

#define TLSSESSION_FILE "tls-session"
#define TLSSESSION_MAX (16 * 1024) /* a saved session with a certificate chain fits easily */

typedef struct tlssession tlssession;

typedef enum tlssession_outcome {
    TLSSESSION_NONE,    /* not a TLS connection over our mbedTLS, or nothing new */
    TLSSESSION_RESUMED, /* the handshake resumed the session offered (a renewed ticket is kept too) */
    TLSSESSION_SAVED,   /* a new session was made and kept for the next run */
} tlssession_outcome;

/*
 * A store kept in path (NULL: offer and keep nothing). The CA material the
 * client trusts, exactly one of: ca_file (a file's path), ca_bundle (PEM in
 * memory, borrowed until tlssession_free) or ca_system (a file's path); all
 * NULL: nothing is kept. Nothing is read until the first handshake. Only
 * for libcurl over the mbedTLS outpost was built with (tls.c asks
 * tls_uses_our_mbedtls first). Returns NULL when this build cannot resume
 * or when out of memory: the caller then just goes without.
 */
tlssession *tlssession_new(const char *path, const char *ca_file, const char *ca_bundle, size_t ca_bundle_len,
                           const char *ca_system);

/* Frees the store (its copy of the session secret wiped). NULL is ignored. */
void tlssession_free(tlssession *s);

/* From libcurl's SSL context callback (tls.c), before a handshake of url
 * (the URL being fetched) on mbedtls_ssl (its mbedtls_ssl_context, NULL:
 * not known yet) configured by mbedtls_ssl_config: lets the handshake take
 * session tickets and offers the kept session when host, port and trust
 * match and it has not expired. */
void tlssession_offer(tlssession *s, void *mbedtls_ssl_config, void *mbedtls_ssl, const char *url);

/* Once a response has begun on the connection whose mbedtls_ssl_context is
 * mbedtls_ssl (NULL: none), fetching url (its handshake is over): keeps the
 * connection's session when it is a new one. Cheap when nothing changed. */
tlssession_outcome tlssession_keep(tlssession *s, void *mbedtls_ssl, const char *url);

/* The file's layout, separate from mbedTLS so that it is tested on every
 * build: "outpost-tls-session 1\n" KEY "\n" BLOB. key must not contain a
 * newline. Returns a malloc'd buffer (length in *len), NULL on failure. */
unsigned char *tlssession_encode(const char *key, const unsigned char *blob, size_t blob_len, size_t *len);

/* The blob of data (an encoded file) when it was saved under key; NULL
 * (and *blob_len 0) when the file is not ours, is damaged or names another
 * key. Points into data. */
const unsigned char *tlssession_decode(const unsigned char *data, size_t len, const char *key, size_t *blob_len);

#endif
