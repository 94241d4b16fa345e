/*
 * msi.h — Authenticode for MSI packages (OLE compound files): finding the
 * \005DigitalSignature stream and computing the digest Windows and
 * osslsigncode sign:
 *
 *   [ H(pre-hash) when \005MsiDigitalSignatureEx is present ]
 *   content of every stream, storages recursed into, children sorted by
 *   their raw UTF-16LE names (memcmp over the shorter length, the longer
 *   name first on a tie), the two signature streams left out at the root,
 *   each storage's CLSID after its children.
 *
 * The pre-hash covers metadata only (names, sizes, state bits, times) in
 * the same order; the stored MsiDigitalSignatureEx must equal it.
 */
#ifndef OUTPOST_MSI_H
#define OUTPOST_MSI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mbedtls/md.h>

#include "authenticode/authenticode.h"
#include "base/error.h"
#include "authenticode/olecf.h"

typedef struct msi_package {
    olecf_file cf;       /* the compound file */
    uint32_t signature;  /* entry id of \005DigitalSignature, OLECF_NOSTREAM if none */
    uint32_t signature_ex; /* entry id of \005MsiDigitalSignatureEx, OLECF_NOSTREAM if none */
} msi_package;

/* Whether the first bytes of a file (at least 8) are an OLE compound file. */
bool msi_is_msi(const uint8_t *head, size_t len);

/* Opens the package's structure; structural problems are MALFORMED
 * verdicts (ERR_REJECTED). Release with msi_close, also after a failure. */
error_code msi_open(msi_package *msi, FILE *f, uint64_t file_size, authenticode_result *result, error_info *err);

void msi_close(msi_package *msi);

/* The signature stream's DER in *der (malloc'd, the caller frees it), or
 * *der = NULL when the package is unsigned. */
error_code msi_read_signature(msi_package *msi, uint8_t **der, size_t *der_len, authenticode_result *result,
                              error_info *err);

/* The MSI Authenticode digest with md into out (MBEDTLS_MD_MAX_SIZE bytes). */
error_code msi_hash(msi_package *msi, mbedtls_md_type_t md, unsigned char *out, authenticode_result *result,
                    error_info *err);

#endif
