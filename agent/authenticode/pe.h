/*
 * pe.h — the parts of a PE image (PE32 and PE32+) that Authenticode needs:
 * where the CheckSum field and the security data directory entry are, where
 * the certificate table is, the Authenticode image digest, and the
 * signature blob of the certificate table's one WIN_CERTIFICATE; and the
 * version the image states about itself (its version resource), which
 * installer/verify.c binds to the version it was offered under.
 *
 * Every offset and size read from the file is checked against the file size
 * before use. Structural problems are reported as a verdict through
 * authenticode_reject() (authenticode_int.h; return value ERR_REJECTED),
 * read failures as ERR_IO.
 */
#ifndef OUTPOST_PE_H
#define OUTPOST_PE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mbedtls/md.h>

#include "authenticode/authenticode.h"
#include "base/error.h"

typedef struct pe_layout {
    uint64_t file_size;             /* bytes in the file */
    bool pe32_plus;                 /* optional header magic 0x20b */
    uint64_t checksum_offset;       /* file offset of the 4-byte CheckSum field */
    uint64_t security_entry_offset; /* file offset of the 8-byte security directory entry */
    uint64_t cert_table_offset;     /* file offset of the certificate table (0: unsigned) */
    uint64_t cert_table_size;       /* its size in bytes (0: unsigned) */
} pe_layout;

/* Whether the first bytes of a file (at least 2) look like a PE ("MZ"). */
bool pe_is_pe(const uint8_t *head, size_t len);

/*
 * Parses the headers of the PE image in f (file_size bytes) into *layout.
 * An image without a certificate table is a valid parse with
 * cert_table_size 0. A table that does not end the file, or lies outside
 * it, is rejected (MALFORMED).
 */
MUST_CHECK error_code pe_parse(FILE *f, uint64_t file_size, pe_layout *layout, authenticode_result *result,
                               error_info *err);

/*
 * As pe_parse, from the first head_len bytes of a file of file_size bytes
 * (an incremental digest sees the headers before the rest): when a field
 * lies past head_len, ERR_REJECTED with *need_more set (feed more bytes and
 * try again); any other rejection is pe_parse's.
 */
MUST_CHECK error_code pe_parse_head(const uint8_t *head, size_t head_len, uint64_t file_size, pe_layout *layout,
                                    bool *need_more, authenticode_result *result, error_info *err);

/*
 * Feeds the Authenticode image digest input to md (already set up and
 * started): the whole file up to the certificate table, less the CheckSum
 * field and the security directory entry. Streams through a fixed buffer.
 */
MUST_CHECK error_code pe_hash(FILE *f, const pe_layout *layout, mbedtls_md_context_t *md, error_info *err);

/*
 * The Authenticode SHA-256 of a PE image computed while its bytes go by in
 * order (a copy, a download), so that verifying it does not read the image
 * again. The headers come first: they are held (at most PE_STREAM_HEAD_MAX
 * bytes) until the CheckSum field, the security directory entry and the
 * certificate table are known, then every byte is hashed as it arrives.
 * Anything that is not a signed PE with its headers in that span simply
 * yields no digest (pe_stream_finish false): the verifier then reads the
 * file itself and gives the verdict.
 */
#define PE_STREAM_HEAD_MAX (64u * 1024u)

typedef struct pe_stream pe_stream;

/* The length to give pe_stream_new (and pe_parse_head) when it is not
 * known ahead: the checks against the end of the file are then left to the
 * verifier, which compares its own layout of the file with the digest's. */
#define PE_SIZE_UNKNOWN UINT64_MAX

/* A stream for a file of file_size bytes (or PE_SIZE_UNKNOWN); NULL when
 * out of memory. Free with pe_stream_free. */
pe_stream *pe_stream_new(uint64_t file_size);

/* The next len bytes of the file. */
void pe_stream_update(pe_stream *s, const void *data, size_t len);

/* After the last byte: true with *out filled when the file was a signed PE
 * of file_size bytes (any length with PE_SIZE_UNKNOWN: out->file_size says
 * how many were fed) whose digest was computed. */
bool pe_stream_finish(pe_stream *s, authenticode_pe_digest *out);

void pe_stream_free(pe_stream *s);

/*
 * Reads the certificate table's single WIN_CERTIFICATE (revision 0x0200,
 * type PKCS_SIGNED_DATA) and returns its PKCS#7 DER in *der (malloc'd, the
 * caller frees it) and its length, trailing zero padding removed. Anything
 * else in the table (another entry, non-zero padding) is rejected.
 */
MUST_CHECK error_code pe_read_signature(FILE *f, const pe_layout *layout, uint8_t **der, size_t *der_len,
                                        authenticode_result *result, error_info *err);

/* ---- The version resource (PRODUCT.md 4.3, version binding) ---------------- */

#define PE_VERSION_TEXT 128 /* bytes of pe_version.text, NUL included */

typedef struct pe_version {
    char text[PE_VERSION_TEXT]; /* the version as the file states it: printable ASCII
                                   (others as '?'), trimmed, cut to fit; "" when none */
    const char *source;         /* "ProductVersion" or "FileVersion" (StringFileInfo),
                                   "fixed ProductVersion" or "fixed FileVersion"
                                   (VS_FIXEDFILEINFO); NULL when none */
} pe_version;

/*
 * Reads the version the image states about itself: the first RT_VERSION
 * resource's VS_VERSIONINFO, its StringFileInfo ProductVersion, else its
 * FileVersion (the first string table holding one that starts with a
 * digit), else the VS_FIXEDFILEINFO product version, else its file version
 * (as "a.b.c.d"; zeros count as none). ERR_OK with source NULL when the
 * image has no version resource, or one that states no version.
 * ERR_REJECTED ("malformed version resource: ...") when the headers,
 * sections or resource tree are broken; ERR_IO when f cannot be read.
 * Every offset is checked against the file and its section; memory is
 * bounded (VS_VERSIONINFO is at most 64 KiB, its wLength is 16 bits).
 */
MUST_CHECK error_code pe_read_version(FILE *f, uint64_t file_size, pe_version *version, error_info *err);

#endif
