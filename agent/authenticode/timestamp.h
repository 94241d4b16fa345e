/*
 * timestamp.h — a signature's trusted time, for authenticode/ only: the
 * RFC 3161 timestamp token or the legacy Authenticode countersignature in
 * a signer's unsigned attributes, verified (the stamp is of this very
 * signature, its signer is a timestamping certificate chaining to
 * timestamp_ca_file, else trusted_ca_file) before its time is believed.
 * Certificates are then judged at that time rather than now, so an
 * installer signed while its certificate was valid stays valid.
 */
#ifndef OUTPOST_AUTHENTICODE_TIMESTAMP_H
#define OUTPOST_AUTHENTICODE_TIMESTAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mbedtls/x509_crt.h>

#include "authenticode/authenticode_int.h"
#include "authenticode/cms.h"

/*
 * Looks for a timestamp in the primary signer's unsigned attributes. The
 * first one that verifies sets *when (Unix seconds) and *kind ("rfc3161"
 * or "legacy") and returns true. A timestamp that does not verify (or lies
 * more than five minutes after v->now) is ignored, as Windows does: the
 * signature is then judged at v->now, and note says why. carried: the
 * certificates of the primary SignedData (a legacy countersigner's is there).
 */
bool timestamp_find(verify_ctx *v, const cms_signer *primary, const mbedtls_x509_crt *carried, int64_t *when,
                    const char **kind, char *note, size_t note_size);

#endif
