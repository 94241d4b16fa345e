/*
 * pe.c — PE header parsing, the Authenticode image digest and the
 * certificate table (see pe.h).
 *
 * Layout reminders (Microsoft PE/COFF specification):
 *   DOS header: "MZ", e_lfanew (uint32 at 0x3c) -> "PE\0\0"
 *   COFF header (20 bytes) after the signature; SizeOfOptionalHeader at +16
 *   optional header: magic 0x10b (PE32) or 0x20b (PE32+); CheckSum at +64;
 *   NumberOfRvaAndSizes at +92 / +108; data directories at +96 / +112,
 *   8 bytes each, the security directory is entry 4 and holds a FILE
 *   offset (not an RVA) and the size of the certificate table.
 *
 * The image digest hashes the file from its start to the certificate table,
 * skipping the CheckSum field and the security directory entry. This is the
 * "flat" form osslsigncode and signtool produce for linker-made images; it
 * covers every byte outside the excluded fields (also gaps between
 * sections), so nothing unsigned can hide in the image.
 */
#include "authenticode/pe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define PE_HASH_BUFFER (64u * 1024u) /* streaming buffer for the image digest */
#define WIN_CERT_REVISION_2_0 0x0200
#define WIN_CERT_TYPE_PKCS_SIGNED_DATA 0x0002
#define PE_SECURITY_DIRECTORY 4

static uint16_t get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

error_code authenticode_read_at(FILE *f, uint64_t offset, void *buf, size_t len, error_info *err)
{
    if (offset > (uint64_t)LONG_MAX || fseek(f, (long)offset, SEEK_SET) != 0)
        return error_set(err, ERR_IO, "cannot seek to offset %llu of the installer", (unsigned long long)offset);
    if (len > 0 && fread(buf, 1, len, f) != len)
        return error_set(err, ERR_IO, "cannot read %zu bytes at offset %llu of the installer", len,
                         (unsigned long long)offset);
    return ERR_OK;
}

bool pe_is_pe(const uint8_t *head, size_t len)
{
    return len >= 2 && head[0] == 'M' && head[1] == 'Z';
}

/* Reads len bytes at offset, rejecting (MALFORMED, naming what) a range
 * that does not lie inside the file. */
static error_code read_field(FILE *f, uint64_t file_size, uint64_t offset, void *buf, size_t len,
                             const char *what, authenticode_result *result, error_info *err)
{
    if (offset > file_size || len > file_size - offset)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "PE %s lies past the end of the file", what);
    return authenticode_read_at(f, offset, buf, len, err);
}

error_code pe_parse(FILE *f, uint64_t file_size, pe_layout *layout, authenticode_result *result,
                    error_info *err)
{
    uint8_t dos[64], coff[24], opt[4];
    memset(layout, 0, sizeof *layout);
    layout->file_size = file_size;

    error_code rc = read_field(f, file_size, 0, dos, sizeof dos, "DOS header", result, err);
    if (rc != ERR_OK)
        return rc;
    if (!pe_is_pe(dos, sizeof dos))
        return authenticode_reject(result, AUTHENTICODE_UNSUPPORTED, "not a PE image (no MZ header)");
    uint64_t nt = get_le32(dos + 0x3c);
    rc = read_field(f, file_size, nt, coff, sizeof coff, "NT headers", result, err);
    if (rc != ERR_OK)
        return rc;
    if (memcmp(coff, "PE\0\0", 4) != 0)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "no PE signature at offset %llu",
                                   (unsigned long long)nt);
    uint32_t opt_size = get_le16(coff + 4 + 16);
    uint64_t opt_off = nt + sizeof coff;
    rc = read_field(f, file_size, opt_off, opt, sizeof opt, "optional header", result, err);
    if (rc != ERR_OK)
        return rc;

    uint16_t magic = get_le16(opt);
    uint32_t count_field, dirs_field;
    if (magic == 0x10b) {
        count_field = 92;
        dirs_field = 96;
    } else if (magic == 0x20b) {
        layout->pe32_plus = true;
        count_field = 108;
        dirs_field = 112;
    } else {
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "unknown optional header magic 0x%04x", magic);
    }
    if (opt_size < count_field + 4)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "optional header too small (%u bytes)", opt_size);
    if (opt_off + opt_size > file_size)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "PE optional header lies past the end of the file");

    layout->checksum_offset = opt_off + 64;
    uint8_t count_bytes[4];
    rc = read_field(f, file_size, opt_off + count_field, count_bytes, 4, "optional header", result, err);
    if (rc != ERR_OK)
        return rc;
    uint32_t dir_count = get_le32(count_bytes);
    uint64_t entry_end = (uint64_t)dirs_field + 8u * (PE_SECURITY_DIRECTORY + 1);
    if (dir_count <= PE_SECURITY_DIRECTORY || opt_size < entry_end) {
        /* No security directory entry: the image cannot carry a signature.
         * Nothing to exclude from a digest either, so it is plainly unsigned. */
        layout->security_entry_offset = 0;
        return ERR_OK;
    }
    layout->security_entry_offset = opt_off + dirs_field + 8u * PE_SECURITY_DIRECTORY;

    uint8_t entry[8];
    rc = read_field(f, file_size, layout->security_entry_offset, entry, sizeof entry, "security directory",
                    result, err);
    if (rc != ERR_OK)
        return rc;
    uint64_t table = get_le32(entry), size = get_le32(entry + 4);
    if (table == 0 && size == 0)
        return ERR_OK;
    if (table == 0 || size == 0)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED,
                                   "security directory is half empty (offset %llu, size %llu)",
                                   (unsigned long long)table, (unsigned long long)size);
    if (table + size > file_size)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED,
                                   "certificate table (offset %llu, %llu bytes) points past the end of the file (%llu bytes)",
                                   (unsigned long long)table, (unsigned long long)size,
                                   (unsigned long long)file_size);
    if (table + size < file_size)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED,
                                   "%llu bytes of data follow the certificate table (refused since MS12-024)",
                                   (unsigned long long)(file_size - table - size));
    /* The excluded header fields must come before the table, or the digest
     * ranges below would overlap it. */
    if (table < layout->security_entry_offset + 8)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "certificate table overlaps the PE headers");
    layout->cert_table_offset = table;
    layout->cert_table_size = size;
    return ERR_OK;
}

/* Feeds [from, to) of f to md through buf. */
static error_code hash_range(FILE *f, uint64_t from, uint64_t to, uint8_t *buf, mbedtls_md_context_t *md,
                             error_info *err)
{
    if (from >= to)
        return ERR_OK;
    error_code rc = authenticode_read_at(f, from, buf, 0, err);
    if (rc != ERR_OK)
        return rc;
    while (from < to) {
        size_t n = (to - from) < PE_HASH_BUFFER ? (size_t)(to - from) : PE_HASH_BUFFER;
        if (fread(buf, 1, n, f) != n)
            return error_set(err, ERR_IO, "cannot read the installer at offset %llu", (unsigned long long)from);
        if (mbedtls_md_update(md, buf, n) != 0)
            return error_set(err, ERR_INTERNAL, "hashing failed");
        from += n;
    }
    return ERR_OK;
}

error_code pe_hash(FILE *f, const pe_layout *layout, mbedtls_md_context_t *md, error_info *err)
{
    uint64_t end = layout->cert_table_size ? layout->cert_table_offset : layout->file_size;
    uint8_t *buf = malloc(PE_HASH_BUFFER);
    if (!buf)
        return error_set(err, ERR_NOMEM, "out of memory hashing the installer");
    /* pe_parse guarantees checksum < security entry < table for signed files. */
    error_code rc = hash_range(f, 0, layout->checksum_offset, buf, md, err);
    if (rc == ERR_OK)
        rc = hash_range(f, layout->checksum_offset + 4, layout->security_entry_offset, buf, md, err);
    if (rc == ERR_OK)
        rc = hash_range(f, layout->security_entry_offset + 8, end, buf, md, err);
    free(buf);
    return rc;
}

/* Length of the DER element at the start of p (tag + length + contents), or
 * 0 when it is not a definite-length SEQUENCE that fits in len bytes. */
static size_t der_sequence_length(const uint8_t *p, size_t len)
{
    if (len < 2 || p[0] != 0x30)
        return 0;
    size_t header = 2, content = p[1];
    if (p[1] & 0x80) {
        size_t bytes = p[1] & 0x7f;
        if (bytes == 0 || bytes > 4 || len < 2 + bytes)
            return 0;
        content = 0;
        for (size_t i = 0; i < bytes; i++)
            content = (content << 8) | p[2 + i];
        header += bytes;
    }
    if (content > len - header)
        return 0;
    return header + content;
}

error_code pe_read_signature(FILE *f, const pe_layout *layout, uint8_t **der, size_t *der_len,
                             authenticode_result *result, error_info *err)
{
    *der = NULL;
    *der_len = 0;
    uint64_t size = layout->cert_table_size;
    if (size < 8)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "certificate table truncated (%llu bytes)",
                                   (unsigned long long)size);
    if (size > AUTHENTICODE_MAX_SIGNATURE + 16u)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "certificate table too large (%llu bytes)",
                                   (unsigned long long)size);
    uint8_t *table = malloc((size_t)size);
    if (!table)
        return error_set(err, ERR_NOMEM, "out of memory reading the certificate table");
    error_code rc = authenticode_read_at(f, layout->cert_table_offset, table, (size_t)size, err);
    if (rc != ERR_OK)
        goto fail;

    uint32_t length = get_le32(table);
    uint16_t revision = get_le16(table + 4), type = get_le16(table + 6);
    if (length < 8 || length > size) {
        rc = authenticode_reject(result, AUTHENTICODE_MALFORMED,
                                 "certificate entry length %u does not fit the %llu-byte table", length,
                                 (unsigned long long)size);
        goto fail;
    }
    /* One entry only: a second WIN_CERTIFICATE is not covered by the
     * signature and could carry anything. */
    if (((uint64_t)length + 7u) / 8u * 8u < size) {
        rc = authenticode_reject(result, AUTHENTICODE_MALFORMED, "certificate table holds more than one entry");
        goto fail;
    }
    if (revision != WIN_CERT_REVISION_2_0 || type != WIN_CERT_TYPE_PKCS_SIGNED_DATA) {
        rc = authenticode_reject(result, AUTHENTICODE_UNSUPPORTED,
                                 "certificate entry revision 0x%04x type 0x%04x is not PKCS#7 signed data",
                                 revision, type);
        goto fail;
    }
    size_t blob_len = (size_t)size - 8;
    size_t signature_len = der_sequence_length(table + 8, blob_len);
    if (signature_len == 0) {
        rc = authenticode_reject(result, AUTHENTICODE_MALFORMED, "certificate entry is not a complete DER PKCS#7 blob");
        goto fail;
    }
    /* What follows the DER is alignment padding: fewer than 8 zero bytes. */
    if (blob_len - signature_len >= 8) {
        rc = authenticode_reject(result, AUTHENTICODE_MALFORMED, "%zu bytes follow the PKCS#7 blob in the certificate table",
                                 blob_len - signature_len);
        goto fail;
    }
    for (size_t i = 8 + signature_len; i < (size_t)size; i++) {
        if (table[i] != 0) {
            rc = authenticode_reject(result, AUTHENTICODE_MALFORMED, "non-zero padding after the PKCS#7 blob");
            goto fail;
        }
    }
    memmove(table, table + 8, signature_len);
    *der = table;
    *der_len = signature_len;
    return ERR_OK;

fail:
    free(table);
    return rc;
}
