/*
 * tlsprefs.h — the key-exchange groups outpost offers in a TLS handshake,
 * fastest first, when libcurl runs over mbedTLS (the release builds).
 *
 * mbedTLS 2.28 offers its elliptic curves largest first, and a server that
 * follows the client's order (nginx and OpenSSL by default) then picks
 * secp521r1: the ECDHE of every connection costs several milliseconds of
 * CPU, most of a `check`. X25519 and P-256 cost a fraction of that and are
 * what browsers offer. Every curve mbedTLS accepted before stays accepted
 * (for ECDHE and in the server's certificate), only later in the list.
 * With libcurl over another TLS library (the Debian build: OpenSSL, which
 * already prefers X25519) nothing is changed.
 */
#ifndef OUTPOST_NET_TLSPREFS_H
#define OUTPOST_NET_TLSPREFS_H

#include <stddef.h>

#include <curl/curl.h>

#include "net/tlssession.h"

/* Fills out with the group ids (mbedTLS's mbedtls_ecp_group_id values)
 * of the preferred groups that supported[] holds, in preference order,
 * then the rest of supported[] in its own order, then a terminating 0
 * (MBEDTLS_ECP_DP_NONE). supported is terminated by 0 too. Returns the
 * number of ids written before the terminator; at most cap - 1. */
size_t tlsprefs_order_groups(const int *supported, int *out, size_t cap);

/* Sets the handshake preferences on e when libcurl's TLS library is the
 * mbedTLS outpost was built with, and offers sessions' kept session to its
 * handshakes (tlssession.h; sessions may be NULL); does nothing otherwise. */
void tlsprefs_apply(CURL *e, tlssession *sessions);

/* Whether tlsprefs_apply changes anything in this build (libcurl over the
 * same mbedTLS). */
int tlsprefs_active(void);

#endif
