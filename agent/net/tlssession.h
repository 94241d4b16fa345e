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
 * like everything else there, and never logged. A session is offered for
 * at most 24 h after the full handshake that verified the certificate and
 * never past the certificate's notAfter (a resumed handshake does not look
 * at the certificate's dates again); the pinned public key is part of the
 * trust it is kept under; a TLS failure of a handshake it was offered to
 * removes it; tls.session_resumption false turns all of this off.
 *
 * Where libcurl runs over another TLS library (the Debian build: OpenSSL)
 * nothing is kept or offered.
 */
#ifndef OUTPOST_NET_TLSSESSION_H
#define OUTPOST_NET_TLSSESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TLSSESSION_FILE "tls-session"
#define TLSSESSION_MAX (16 * 1024) /* a saved session with a certificate chain fits easily */
/* A kept session is offered for at most this long after the full handshake
 * that verified the certificate (and never past the certificate's end). */
#define TLSSESSION_MAX_AGE_S (24 * 3600)

typedef struct tlssession tlssession;

typedef enum tlssession_outcome {
    TLSSESSION_NONE,    /* not a TLS connection over our mbedTLS, or nothing new */
    TLSSESSION_RESUMED, /* the handshake resumed the session offered (a renewed ticket is kept too) */
    TLSSESSION_SAVED,   /* a new session was made and kept for the next run */
} tlssession_outcome;

/*
 * A store kept in path (NULL: offer and keep nothing). pin is
 * tls.pinned_public_key as libcurl gets it (NULL: none); with the CA
 * material it is the trust a session is kept under. The CA material the
 * client trusts, exactly one of: ca_file (a file's path), ca_bundle (PEM in
 * memory, borrowed until tlssession_free) or ca_system (a file's path); all
 * NULL: nothing is kept. Nothing is read until the first handshake. Only
 * for libcurl over the mbedTLS outpost was built with (tls.c asks
 * tls_uses_our_mbedtls first). Returns NULL when this build cannot resume
 * or when out of memory: the caller then just goes without.
 */
tlssession *tlssession_new(const char *path, const char *ca_file, const char *ca_bundle, size_t ca_bundle_len,
                           const char *ca_system, const char *pin);

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

/* A transfer failed with a TLS error (outcome.c's OUTCOME_TLS): when the
 * kept session was offered to this run's handshakes it may be why, so its
 * file is removed and the next handshake is a full one. NULL is ignored. */
void tlssession_failed(tlssession *s);

/* Until when a session saved at now may be offered: 24 h, the leaf
 * certificate's notAfter (0: unknown) and an inherited end (a session that
 * came from resuming one; 0: none), whichever is soonest. */
int64_t tlssession_not_after(int64_t now, int64_t leaf_not_after, int64_t inherited);

/* Whether a session kept until not_after may be offered at now: before it,
 * and not further ahead than TLSSESSION_MAX_AGE_S (a clock that went back,
 * a file made elsewhere). */
bool tlssession_usable(int64_t now, int64_t not_after);

/* The file's layout, separate from mbedTLS so that it is tested on every
 * build: "outpost-tls-session 2\n" KEY "\n" NOT_AFTER "\n" BLOB, NOT_AFTER
 * in decimal Unix seconds. key must not contain a newline. Returns a
 * malloc'd buffer (length in *len), NULL on failure. */
unsigned char *tlssession_encode(const char *key, int64_t not_after, const unsigned char *blob, size_t blob_len,
                                 size_t *len);

typedef enum tlssession_decoded {
    TLSSESSION_OURS,      /* saved under key: *not_after, *blob and *blob_len set (blob points into data) */
    TLSSESSION_OTHER_KEY, /* a well-formed file of another host or trust */
    TLSSESSION_DAMAGED,   /* not ours, truncated, an older layout or garbage */
} tlssession_decoded;

tlssession_decoded tlssession_decode(const unsigned char *data, size_t len, const char *key, int64_t *not_after,
                                     const unsigned char **blob, size_t *blob_len);

#endif
