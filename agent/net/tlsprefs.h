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
 * already prefers X25519) nothing is changed. This module only orders the
 * lists; tls.c hands them to the handshakes.
 *
 * Likewise the cipher suites: mbedTLS offers ChaCha20-Poly1305 first, and
 * nginx (like most servers) follows the client's order. Where AES-GCM runs
 * on the CPU's AES and carry-less multiply instructions (crypto/gcmaccel.h:
 * AES-NI + PCLMULQDQ, ARMv8 AES + PMULL) it is several times faster, and
 * its ECDHE suites are then offered first.
 */
#ifndef OUTPOST_NET_TLSPREFS_H
#define OUTPOST_NET_TLSPREFS_H

#include <stddef.h>

/* Fills out with the group ids (mbedTLS's mbedtls_ecp_group_id values)
 * of the preferred groups that supported[] holds, in preference order,
 * then the rest of supported[] in its own order, then a terminating 0
 * (MBEDTLS_ECP_DP_NONE). supported is terminated by 0 too. Returns the
 * number of ids written before the terminator; at most cap - 1. */
size_t tlsprefs_order_groups(const int *supported, int *out, size_t cap);

/* Fills out with the cipher suite ids (MBEDTLS_TLS_* values) of
 * supported[] (mbedTLS's order, 0-terminated): with aes_gcm_first, the
 * ECDHE AES-128-GCM and then AES-256-GCM suites it holds first, then the
 * rest in supported's order; otherwise supported's order unchanged. Then a
 * terminating 0. Returns the number of ids before it; at most cap - 1. */
size_t tlsprefs_order_suites(const int *supported, int aes_gcm_first, int *out, size_t cap);

/* Whether outpost offers AES-GCM first: when mbedTLS's GCM is outpost's
 * gcmaccel (the release builds) and that runs on the CPU's AES and
 * carry-less multiply instructions. Otherwise mbedTLS's order stands,
 * ChaCha20-Poly1305 first: the faster of its AEADs without them. */
int tlsprefs_aes_gcm_first(void);

#endif
