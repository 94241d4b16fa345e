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
 *
 * Also the package's ProductVersion property (read through the string
 * pool), which installer/verify.c binds to the version it was offered under.
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
    olecf_file cf;         /* the compound file */
    uint32_t signature;    /* entry id of \005DigitalSignature, OLECF_NOSTREAM if none */
    uint32_t signature_ex; /* entry id of \005MsiDigitalSignatureEx, OLECF_NOSTREAM if none */
} msi_package;

/* Whether the first bytes of a file (at least 8) are an OLE compound file. */
bool msi_is_msi(const uint8_t *head, size_t len);

/* Opens the package's structure; structural problems are MALFORMED
 * verdicts (ERR_REJECTED). Release with msi_close, also after a failure. */
MUST_CHECK error_code msi_open(msi_package *msi, FILE *f, uint64_t file_size, authenticode_result *result,
                               error_info *err);

void msi_close(msi_package *msi);

/* The signature stream's DER in *der (malloc'd, the caller frees it), or
 * *der = NULL when the package is unsigned. */
MUST_CHECK error_code msi_read_signature(msi_package *msi, uint8_t **der, size_t *der_len, authenticode_result *result,
                                         error_info *err);

/* The MSI Authenticode digest with md into out (MBEDTLS_MD_MAX_SIZE bytes). */
MUST_CHECK error_code msi_hash(msi_package *msi, mbedtls_md_type_t md, unsigned char *out, authenticode_result *result,
                               error_info *err);

/* ---- ProductVersion (PRODUCT.md 4.3, version binding) ------------------------ */

#define MSI_VERSION_TEXT 128            /* bytes of the version text, NUL included */
#define MSI_MAX_STRING_POOL (8u << 20)  /* _StringPool bytes read into memory */
#define MSI_MAX_STRING_DATA (16u << 20) /* _StringData bytes read into memory */
#define MSI_MAX_PROPERTY (4u << 20)     /* Property table bytes read into memory */

/*
 * Decodes an MSI stream name (UTF-16LE as stored in the compound file, len
 * bytes, up to a NUL) into out as ASCII: the characters
 * [0-9A-Za-z._] packed two per code unit (0x3800-0x47FF) or one (0x4800-
 * 0x483F) are unpacked, the table marker 0x4840 becomes '!', any other
 * code unit outside ASCII becomes '?'. So the string pool's streams read
 * "!_StringPool" and "!_StringData", the Property table "!Property", the
 * signature "\005DigitalSignature". Cut to fit size (at least 1).
 */
void msi_decode_stream_name(const uint8_t *name, size_t len, char *out, size_t size);

/*
 * The package's ProductVersion property, from the Property table through
 * the string pool, into version (size bytes; printable ASCII, others as
 * '?', trimmed, cut to fit): "" when the package has no Property table or
 * no ProductVersion row. ERR_REJECTED ("malformed MSI ...") when the
 * compound file, the string pool or the table is broken or a stream
 * exceeds its cap above; ERR_IO when f cannot be read; ERR_NOMEM.
 */
MUST_CHECK error_code msi_read_product_version(FILE *f, uint64_t file_size, char *version, size_t size,
                                               error_info *err);

#endif
