/*
 * tls.h — TLS in outpost's transfers, in one place: which CA material is
 * trusted, the options every libcurl handle gets, the handshake
 * preferences and the session kept between runs.
 *
 * Trust: tls.ca_file (its bytes as judged) for every host (redirect targets included: a
 * TLS-inspecting proxy re-signs the storage host too); without it the
 * operating system's store, in memory where the TLS library has none of
 * its own (Windows), else the system bundle file (the release builds'
 * libcurl has no default compiled in). The pinned public key
 * (tls.pinned_public_key) is the platform's own: the engine asks for it
 * only on base_url's origin. TLS 1.2 is the least accepted.
 *
 * Where libcurl runs over the mbedTLS outpost was built with (the release
 * builds), each handshake also gets outpost's order of key-exchange groups
 * and cipher suites (tlsprefs.h) and is offered the session kept in
 * state_dir, whose successor is kept once an answer arrives (tlssession.h).
 * Elsewhere (the Debian build: OpenSSL) neither is touched.
 *
 * The engine (http.c) makes one tls_setup per client and applies it to
 * every easy handle (curl.c); nothing else in outpost sets a TLS option.
 */
#ifndef OUTPOST_NET_TLS_H
#define OUTPOST_NET_TLS_H

#include <stdbool.h>

#include <curl/curl.h>

#include "base/error.h"
#include "net/tlssession.h"

typedef struct tls_setup tls_setup;

/*
 * The run's TLS setup. ca_file: tls.ca_file (NULL: the system's store);
 * pinned_key: tls.pinned_public_key ("sha256//...", NULL: none);
 * session_file: where the TLS session is kept between runs (NULL: none is
 * kept; only a run that holds state_dir's lock passes one). Everything is
 * copied. tls.ca_file is read here, and a pinned key file turned into its
 * sha256// pin here, each through the handle it is judged by
 * (platform_read_trusted_file): libcurl gets those bytes
 * (CURLOPT_CAINFO_BLOB, a sha256// CURLOPT_PINNEDPUBLICKEY), never the
 * names. ERR_CONFIG when either is refused or unreadable, ERR_NOMEM; *out
 * is set on success, free it with tls_free.
 */
MUST_CHECK error_code tls_new(const char *ca_file, const char *pinned_key, const char *session_file, tls_setup **out,
                              error_info *err);

/* Frees the setup (the kept session's secret wiped). NULL is ignored. */
void tls_free(tls_setup *t);

/* Sets e's TLS options: TLS 1.2 at least, the trusted CA material, the
 * pinned public key when pin (the platform's own host), and the handshake
 * preferences and kept session where libcurl runs over our mbedTLS. */
void tls_apply(tls_setup *t, CURL *e, bool pin);

/* Once a response has begun on e (its handshake is over): keeps the
 * connection's TLS session for the next run when it is a new one, and says
 * whether the handshake resumed the kept one. TLSSESSION_NONE when nothing
 * is kept (t NULL, another TLS library, plain http). */
tlssession_outcome tls_keep_session(tls_setup *t, CURL *e);

/* A transfer of this client failed with a TLS error: the kept session, if
 * it was offered, is dropped (tlssession_failed). */
void tls_session_failed(tls_setup *t);

/* Whether libcurl runs over the mbedTLS outpost was built with: only then
 * may outpost hand it mbedTLS settings (the callback receives mbedTLS's own
 * configuration structure). */
bool tls_uses_our_mbedtls(void);

#endif
