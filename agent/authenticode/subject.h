/*
 * subject.h — a certificate's distinguished name as faithful UTF-8 text,
 * and the signer_subject pin (PRODUCT.md 4.4).
 *
 * mbedtls_x509_dn_gets prints every byte outside printable ASCII as '?', so
 * "Müller GmbH" and "Mäller GmbH" print alike and a pin compared with that
 * text accepts both. Here each attribute's string is decoded from its ASN.1
 * type to UTF-8 (UTF8String; PrintableString and IA5String as ASCII;
 * TeletexString as Latin-1; BMPString as UTF-16BE), and the pin is compared
 * with the decoded text. The layout is mbedtls_x509_dn_gets's, so a pin
 * written for an ASCII subject is unchanged: "C=US, O=Example, CN=Example
 * Code Signing" (", " between RDNs, " + " inside a multi-valued one,
 * mbedTLS's short attribute names, the dotted OID for others).
 *
 * A string the decoder cannot map exactly (another ASN.1 type, invalid
 * UTF-8 or UTF-16, a control character) prints with '?' in its place and
 * never matches a pin.
 */
#ifndef OUTPOST_SUBJECT_H
#define OUTPOST_SUBJECT_H

#include <stdbool.h>
#include <stddef.h>

#include <mbedtls/x509.h>

/*
 * Writes name into out (size > 0 bytes, always NUL-terminated, cut at a
 * character boundary when it does not fit). Returns true when every
 * attribute was decoded exactly and the whole text fit.
 */
bool subject_format(const mbedtls_x509_name *name, char *out, size_t size);

/*
 * The same for a Name in DER (the SEQUENCE of RDNs, as in a certificate's
 * subject): for a certificate Mbed TLS could not read whole. Returns false
 * also when the DER is not a well-formed Name (out then holds what was read).
 */
bool subject_format_der(const unsigned char *der, size_t len, char *out, size_t size);

/*
 * Whether name matches wanted: the whole name as subject_format writes it,
 * or the value of its one CN attribute alone (a name with several CNs can
 * only match whole). Byte comparison of UTF-8, no normalisation; an
 * attribute that cannot be decoded exactly matches nothing.
 */
bool subject_matches(const mbedtls_x509_name *name, const char *wanted);

#endif
