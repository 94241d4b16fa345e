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

#include <stdlib.h>
#include <string.h>

#include "authenticode/authenticode_int.h"
#include "crypto/sha256.h"
#include "platform/platform.h"

#define PE_HASH_BUFFER (64u * 1024u) /* streaming buffer for the image digest */
#define WIN_CERT_REVISION_2_0 0x0200
#define WIN_CERT_TYPE_PKCS_SIGNED_DATA 0x0002
#define PE_SECURITY_DIRECTORY 4

error_code authenticode_read_at(FILE *f, uint64_t offset, void *buf, size_t len, error_info *err)
{
    error_code rc = platform_read_at(f, offset, buf, len, err);
    if (rc != ERR_OK)
        error_prefix(err, "the installer");
    return rc;
}

bool pe_is_pe(const uint8_t *head, size_t len)
{
    return len >= 2 && head[0] == 'M' && head[1] == 'Z';
}

/* Where pe_parse reads the headers from: the file, or the first bytes of
 * it seen so far (pe_parse_head). */
typedef struct pe_source {
    FILE *f;             /* the file, or NULL */
    const uint8_t *head; /* without a file: the bytes from offset 0 */
    size_t head_len;     /* how many */
    bool *need_more;     /* set when a field lies past head_len */
} pe_source;

/* Reads len bytes at offset, rejecting (MALFORMED, naming what) a range
 * that does not lie inside the file. */
static MUST_CHECK error_code read_field(const pe_source *src, uint64_t file_size, uint64_t offset, void *buf,
                                        size_t len, const char *what, authenticode_result *result, error_info *err)
{
    if (offset > file_size || len > file_size - offset)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "PE %s lies past the end of the file", what);
    if (src->f)
        return authenticode_read_at(src->f, offset, buf, len, err);
    if (offset > src->head_len || len > src->head_len - offset) {
        *src->need_more = true;
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "PE %s lies past the bytes seen so far", what);
    }
    memcpy(buf, src->head + offset, len);
    return ERR_OK;
}

static MUST_CHECK error_code parse_from(const pe_source *f, uint64_t file_size, pe_layout *layout,
                                        authenticode_result *result, error_info *err);

error_code pe_parse(FILE *f, uint64_t file_size, pe_layout *layout, authenticode_result *result, error_info *err)
{
    pe_source src = {f, NULL, 0, NULL};
    return parse_from(&src, file_size, layout, result, err);
}

error_code pe_parse_head(const uint8_t *head, size_t head_len, uint64_t file_size, pe_layout *layout, bool *need_more,
                         authenticode_result *result, error_info *err)
{
    *need_more = false;
    pe_source src = {NULL, head, head_len, need_more};
    return parse_from(&src, file_size, layout, result, err);
}

static error_code parse_from(const pe_source *f, uint64_t file_size, pe_layout *layout, authenticode_result *result,
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
    rc =
        read_field(f, file_size, layout->security_entry_offset, entry, sizeof entry, "security directory", result, err);
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
        return authenticode_reject(
            result, AUTHENTICODE_MALFORMED,
            "certificate table (offset %llu, %llu bytes) points past the end of the file (%llu bytes)",
            (unsigned long long)table, (unsigned long long)size, (unsigned long long)file_size);
    if (table + size < file_size && file_size != PE_SIZE_UNKNOWN)
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
static MUST_CHECK error_code hash_range(FILE *f, uint64_t from, uint64_t to, uint8_t *buf, mbedtls_md_context_t *md,
                                        error_info *err)
{
    while (from < to) {
        size_t n = (to - from) < PE_HASH_BUFFER ? (size_t)(to - from) : PE_HASH_BUFFER;
        error_code rc = authenticode_read_at(f, from, buf, n, err);
        if (rc != ERR_OK)
            return rc;
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

/* ---- The digest as the bytes go by ------------------------------------------ */

struct pe_stream {
    uint64_t file_size;
    uint64_t pos;     /* bytes seen */
    uint8_t *head;    /* the bytes seen while the layout is not known */
    bool have_layout; /* layout is known and hashing runs */
    bool failed;      /* no digest will come of it */
    pe_layout layout;
    sha256_ctx md; /* the stream's digest is always SHA-256 (the download and stage paths) */
};

pe_stream *pe_stream_new(uint64_t file_size)
{
    pe_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->file_size = file_size;
    sha256_init(&s->md);
    return s;
}

/* Hashes the parts of [offset, offset + len) that the image digest covers
 * (pe_hash's three ranges). */
static void stream_hash(pe_stream *s, uint64_t offset, const uint8_t *data, size_t len)
{
    const pe_layout *l = &s->layout;
    const uint64_t ranges[3][2] = {{0, l->checksum_offset},
                                   {l->checksum_offset + 4, l->security_entry_offset},
                                   {l->security_entry_offset + 8, l->cert_table_offset}};
    uint64_t end = offset + len;
    for (int i = 0; i < 3; i++) {
        uint64_t from = ranges[i][0] > offset ? ranges[i][0] : offset;
        uint64_t to = ranges[i][1] < end ? ranges[i][1] : end;
        if (from < to)
            sha256_update(&s->md, data + (from - offset), (size_t)(to - from));
    }
}

void pe_stream_update(pe_stream *s, const void *data, size_t len)
{
    if (!s || s->failed || len == 0)
        return;
    uint64_t at = s->pos;
    s->pos += len;
    if (s->have_layout) {
        stream_hash(s, at, data, len);
        return;
    }
    size_t held = (size_t)at, take = len;
    if (held + take > PE_STREAM_HEAD_MAX)
        take = PE_STREAM_HEAD_MAX - held;
    uint8_t *grown = take ? realloc(s->head, held + take) : s->head;
    if (!grown) {
        s->failed = true;
        return;
    }
    s->head = grown;
    memcpy(s->head + held, data, take);
    bool need_more = false;
    authenticode_result scratch;
    memset(&scratch, 0, sizeof scratch);
    error_code rc = pe_parse_head(s->head, held + take, s->file_size, &s->layout, &need_more, &scratch, NULL);
    if (rc != ERR_OK) {
        /* Headers past the span held, or not a PE the verifier would
         * accept: it reads the file and says why. */
        if (!need_more || held + take == PE_STREAM_HEAD_MAX)
            s->failed = true;
        return;
    }
    if (s->layout.cert_table_size == 0) {
        s->failed = true; /* unsigned: nothing to verify */
        return;
    }
    s->have_layout = true;
    stream_hash(s, 0, s->head, held + take);
    free(s->head);
    s->head = NULL;
    if (take < len)
        stream_hash(s, at + take, (const uint8_t *)data + take, len - take);
}

bool pe_stream_finish(pe_stream *s, authenticode_pe_digest *out)
{
    if (!s || s->failed || !s->have_layout || (s->file_size != PE_SIZE_UNKNOWN && s->pos != s->file_size))
        return false;
    unsigned char digest[32];
    sha256_finish(&s->md, digest);
    s->failed = true; /* finished: a second call has nothing to give */
    out->file_size = s->pos;
    out->checksum_offset = s->layout.checksum_offset;
    out->security_entry_offset = s->layout.security_entry_offset;
    out->cert_table_offset = s->layout.cert_table_offset;
    out->cert_table_size = s->layout.cert_table_size;
    memcpy(out->sha256, digest, sizeof out->sha256);
    return true;
}

void pe_stream_free(pe_stream *s)
{
    if (!s)
        return;
    free(s->head);
    free(s);
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
                                 "certificate entry revision 0x%04x type 0x%04x is not PKCS#7 signed data", revision,
                                 type);
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
        rc = authenticode_reject(result, AUTHENTICODE_MALFORMED,
                                 "%zu bytes follow the PKCS#7 blob in the certificate table", blob_len - signature_len);
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

/* ---- The version resource -------------------------------------------------------
 *
 * Resource tree (PE/COFF specification, ".rsrc Section"): three levels of
 * IMAGE_RESOURCE_DIRECTORY (16 bytes: named and ID entry counts at +12 and
 * +14, then 8-byte entries, named ones first), type -> name -> language;
 * an entry's second word has its high bit set when it points at a
 * subdirectory. Offsets inside the tree are relative to the resource
 * directory's start; the leaf IMAGE_RESOURCE_DATA_ENTRY holds an RVA.
 * VS_VERSIONINFO is a tree of blocks: wLength, wValueLength, wType (1: text,
 * length in characters), a NUL-terminated UTF-16LE key, padding to 32 bits,
 * the value, padding, then the children; the root's value is
 * VS_FIXEDFILEINFO, its children StringFileInfo (string tables of
 * key/value strings) and VarFileInfo.
 */

#define PE_RESOURCE_DIRECTORY 2       /* data directory entry of the resource tree */
#define PE_RT_VERSION 16              /* resource type of VS_VERSIONINFO */
#define PE_MAX_SECTIONS 96            /* the Windows loader's limit */
#define PE_SECTION_HEADER 40          /* bytes per section header */
#define PE_MAX_RESOURCE_ENTRIES 4096u /* entries examined per resource directory */
#define PE_MAX_VERSION_INFO 65535u    /* VS_VERSIONINFO's wLength is 16 bits */
#define VS_FIXEDFILEINFO_SIGNATURE 0xFEEF04BDu
#define VS_FIXEDFILEINFO_SIZE 52u

typedef struct resource_walk {
    FILE *f;                                               /* the image */
    uint64_t file_size;                                    /* its size */
    uint8_t sections[PE_MAX_SECTIONS * PE_SECTION_HEADER]; /* the section table */
    uint16_t section_count;                                /* headers in sections */
    uint32_t rva, size;                                    /* the resource directory */
} resource_walk;

static MUST_CHECK error_code version_malformed(error_info *err, const char *what)
{
    return error_set(err, ERR_REJECTED, "malformed version resource: %s", what);
}

static MUST_CHECK error_code version_read(const resource_walk *w, uint64_t offset, void *buf, size_t len,
                                          const char *what, error_info *err)
{
    if (offset > w->file_size || len > w->file_size - offset)
        return error_set(err, ERR_REJECTED, "malformed version resource: the %s lies past the end of the file", what);
    return authenticode_read_at(w->f, offset, buf, len, err);
}

/* File offset of rva, and how many bytes of its section's raw data follow
 * it; false when no section's raw data holds it. */
static bool rva_map(const resource_walk *w, uint32_t rva, uint64_t *offset, uint32_t *available)
{
    for (uint16_t i = 0; i < w->section_count; i++) {
        const uint8_t *h = w->sections + (size_t)i * PE_SECTION_HEADER;
        uint32_t va = get_le32(h + 12), raw_size = get_le32(h + 16), raw_pointer = get_le32(h + 20);
        if (rva >= va && rva - va < raw_size) {
            *offset = (uint64_t)raw_pointer + (rva - va);
            *available = raw_size - (rva - va);
            return true;
        }
    }
    return false;
}

/* Reads the headers and the section table; leaves w->rva/size 0 when the
 * image has no resource directory. */
static MUST_CHECK error_code version_headers(resource_walk *w, error_info *err)
{
    uint8_t dos[64], coff[24], opt[2], count[4], entry[8];
    error_code rc = version_read(w, 0, dos, sizeof dos, "DOS header", err);
    if (rc != ERR_OK)
        return rc;
    if (!pe_is_pe(dos, sizeof dos))
        return version_malformed(err, "not a PE image (no MZ header)");
    uint64_t nt = get_le32(dos + 0x3c);
    if ((rc = version_read(w, nt, coff, sizeof coff, "NT headers", err)) != ERR_OK)
        return rc;
    if (memcmp(coff, "PE\0\0", 4) != 0)
        return version_malformed(err, "no PE signature");
    uint16_t sections = get_le16(coff + 4 + 2);
    uint32_t opt_size = get_le16(coff + 4 + 16);
    uint64_t opt_off = nt + sizeof coff;
    if ((rc = version_read(w, opt_off, opt, sizeof opt, "optional header", err)) != ERR_OK)
        return rc;
    uint16_t magic = get_le16(opt);
    uint32_t count_field = magic == 0x20b ? 108 : 92, dirs_field = magic == 0x20b ? 112 : 96;
    if (magic != 0x10b && magic != 0x20b)
        return version_malformed(err, "unknown optional header magic");
    if (sections > PE_MAX_SECTIONS)
        return version_malformed(err, "more than 96 sections");
    w->section_count = sections;
    rc = version_read(w, opt_off + opt_size, w->sections, (size_t)sections * PE_SECTION_HEADER, "section table", err);
    if (rc != ERR_OK)
        return rc;
    uint32_t entry_end = dirs_field + 8u * (PE_RESOURCE_DIRECTORY + 1);
    if (opt_size < count_field + 4 || opt_size < entry_end)
        return ERR_OK; /* no room for a resource directory entry */
    if ((rc = version_read(w, opt_off + count_field, count, sizeof count, "optional header", err)) != ERR_OK)
        return rc;
    if (get_le32(count) <= PE_RESOURCE_DIRECTORY)
        return ERR_OK;
    rc =
        version_read(w, opt_off + dirs_field + 8u * PE_RESOURCE_DIRECTORY, entry, sizeof entry, "optional header", err);
    if (rc != ERR_OK)
        return rc;
    w->rva = get_le32(entry);
    w->size = get_le32(entry + 4);
    return ERR_OK;
}

/* Reads len bytes at offset (from the resource directory's start), which
 * must lie inside the directory and inside one section. */
static MUST_CHECK error_code resource_read(const resource_walk *w, uint32_t offset, void *buf, uint32_t len,
                                           error_info *err)
{
    uint64_t file_offset;
    uint32_t available;
    if (offset > w->size || len > w->size - offset || w->rva > UINT32_MAX - offset ||
        !rva_map(w, w->rva + offset, &file_offset, &available) || len > available)
        return version_malformed(err, "a resource directory entry lies outside the resource section");
    return version_read(w, file_offset, buf, len, "resource directory", err);
}

/* In the directory at dir: the target (second word) of the entry with ID
 * want, or of the first entry when want is 0. *found false when none. */
static MUST_CHECK error_code resource_entry(const resource_walk *w, uint32_t dir, uint32_t want, bool *found,
                                            uint32_t *target, error_info *err)
{
    uint8_t head[16], entry[8];
    *found = false;
    error_code rc = resource_read(w, dir, head, sizeof head, err);
    if (rc != ERR_OK)
        return rc;
    uint32_t named = get_le16(head + 12), total = named + get_le16(head + 14);
    if (total > PE_MAX_RESOURCE_ENTRIES)
        total = PE_MAX_RESOURCE_ENTRIES;
    for (uint32_t i = want ? named : 0; i < total; i++) {
        if ((rc = resource_read(w, dir + 16 + 8 * i, entry, sizeof entry, err)) != ERR_OK)
            return rc;
        if (want == 0 || get_le32(entry) == want) {
            *found = true;
            *target = get_le32(entry + 4);
            return ERR_OK;
        }
    }
    return ERR_OK;
}

/* The first RT_VERSION resource's bytes (*data malloc'd, the caller frees
 * it; NULL when the image has none). */
static MUST_CHECK error_code version_resource(resource_walk *w, uint8_t **data, size_t *len, error_info *err)
{
    *data = NULL;
    *len = 0;
    uint32_t dir = 0, target = 0;
    for (int level = 0; level < 3; level++) {
        bool found = false;
        error_code rc = resource_entry(w, dir, level == 0 ? PE_RT_VERSION : 0, &found, &target, err);
        if (rc != ERR_OK || !found)
            return rc;
        bool subdirectory = (target & 0x80000000u) != 0;
        if (subdirectory != (level < 2))
            return version_malformed(err, "the resource tree is not three levels deep");
        dir = target & 0x7fffffffu;
    }
    uint8_t leaf[16];
    error_code rc = resource_read(w, dir, leaf, sizeof leaf, err);
    if (rc != ERR_OK)
        return rc;
    uint32_t rva = get_le32(leaf), size = get_le32(leaf + 4);
    uint64_t offset;
    uint32_t available;
    if (!rva_map(w, rva, &offset, &available))
        return version_malformed(err, "VS_VERSIONINFO lies outside every section");
    /* Only what the 16-bit root length can cover, and only the section's own bytes. */
    size_t want = size < PE_MAX_VERSION_INFO ? size : PE_MAX_VERSION_INFO;
    if (want > available)
        want = available;
    if (want < 6)
        return version_malformed(err, "VS_VERSIONINFO is truncated");
    uint8_t *buf = malloc(want);
    if (!buf)
        return error_set(err, ERR_NOMEM, "out of memory reading the version resource");
    rc = version_read(w, offset, buf, want, "VS_VERSIONINFO", err);
    if (rc != ERR_OK) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = want;
    return ERR_OK;
}

typedef struct vs_block {
    size_t end;         /* offset just past the block (its wLength, clamped to its parent) */
    size_t key;         /* offset of the UTF-16LE key */
    size_t key_units;   /* its length in code units, NUL excluded */
    size_t value;       /* offset of the value (32-bit aligned after the key) */
    size_t value_bytes; /* its length in bytes (clamped to the block) */
    size_t children;    /* offset of the first child */
} vs_block;

static size_t align4(size_t x)
{
    return (x + 3) & ~(size_t)3;
}

/* The block at at, inside [at, limit) of buf; false when none fits there. */
static bool vs_block_at(const uint8_t *buf, size_t limit, size_t at, vs_block *b)
{
    if (at > limit || limit - at < 6)
        return false;
    size_t length = get_le16(buf + at), value_length = get_le16(buf + at + 2), type = get_le16(buf + at + 4);
    if (length < 6)
        return false;
    b->end = length > limit - at ? limit : at + length;
    b->key = at + 6;
    size_t p = b->key;
    while (p + 2 <= b->end && (buf[p] | buf[p + 1]) != 0)
        p += 2;
    if (p + 2 > b->end)
        return false; /* the key has no terminator */
    b->key_units = (p - b->key) / 2;
    b->value = align4(p + 2) < b->end ? align4(p + 2) : b->end;
    b->value_bytes = type == 1 ? value_length * 2 : value_length;
    if (b->value_bytes > b->end - b->value)
        b->value_bytes = b->end - b->value;
    b->children = align4(b->value + b->value_bytes) < b->end ? align4(b->value + b->value_bytes) : b->end;
    return true;
}

static bool vs_key_is(const uint8_t *buf, const vs_block *b, const char *name)
{
    size_t n = strlen(name);
    if (b->key_units != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (buf[b->key + 2 * i] != (uint8_t)name[i] || buf[b->key + 2 * i + 1] != 0)
            return false;
    return true;
}

/* A String block's text: printable ASCII, others as '?', trimmed. */
static void vs_text(const uint8_t *buf, const vs_block *b, char *out, size_t size)
{
    size_t n = 0;
    for (size_t p = b->value; p + 2 <= b->end && n + 1 < size; p += 2) {
        uint16_t c = get_le16(buf + p);
        if (c == 0)
            break;
        out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
    size_t lead = strspn(out, " ");
    memmove(out, out + lead, n - lead + 1);
}

/* The next child of parent after *at (first call: *at = parent->children). */
static bool vs_next_child(const uint8_t *buf, const vs_block *parent, size_t *at, vs_block *child)
{
    if (*at >= parent->end || !vs_block_at(buf, parent->end, *at, child))
        return false;
    *at = align4(child->end);
    return true;
}

/* StringFileInfo's ProductVersion and FileVersion: the first of each that
 * starts with a digit, across every string table. */
static void vs_strings(const uint8_t *buf, const vs_block *root, char *product, char *file, size_t size)
{
    vs_block info, table, string;
    size_t at = root->children;
    while (vs_next_child(buf, root, &at, &info)) {
        if (!vs_key_is(buf, &info, "StringFileInfo"))
            continue;
        size_t table_at = info.children;
        while (vs_next_child(buf, &info, &table_at, &table)) {
            size_t string_at = table.children;
            while (vs_next_child(buf, &table, &string_at, &string)) {
                char *slot = vs_key_is(buf, &string, "ProductVersion") ? product
                             : vs_key_is(buf, &string, "FileVersion")  ? file
                                                                       : NULL;
                if (!slot || (slot[0] >= '0' && slot[0] <= '9'))
                    continue;
                vs_text(buf, &string, slot, size);
            }
        }
    }
}

/* Picks what the version resource states, in the order pe.h gives. */
static MUST_CHECK error_code version_from_info(const uint8_t *buf, size_t len, pe_version *version, error_info *err)
{
    vs_block root;
    if (!vs_block_at(buf, len, 0, &root) || !vs_key_is(buf, &root, "VS_VERSION_INFO"))
        return version_malformed(err, "the RT_VERSION resource is not a VS_VERSIONINFO");
    char product[PE_VERSION_TEXT] = "", file[PE_VERSION_TEXT] = "";
    vs_strings(buf, &root, product, file, sizeof product);
    const char *text = NULL;
    if (product[0] >= '0' && product[0] <= '9') {
        text = product;
        version->source = "ProductVersion";
    } else if (file[0] >= '0' && file[0] <= '9') {
        text = file;
        version->source = "FileVersion";
    }
    if (text) {
        snprintf(version->text, sizeof version->text, "%s", text);
        return ERR_OK;
    }
    if (root.value_bytes < VS_FIXEDFILEINFO_SIZE || get_le32(buf + root.value) != VS_FIXEDFILEINFO_SIGNATURE)
        return ERR_OK;
    /* dwFileVersionMS/LS at +8/+12, dwProductVersionMS/LS at +16/+20. */
    for (int i = 0; i < 2; i++) {
        const uint8_t *p = buf + root.value + (i == 0 ? 16 : 8);
        uint32_t ms = get_le32(p), ls = get_le32(p + 4);
        if (ms == 0 && ls == 0)
            continue;
        snprintf(version->text, sizeof version->text, "%u.%u.%u.%u", (unsigned)(ms >> 16), (unsigned)(ms & 0xffff),
                 (unsigned)(ls >> 16), (unsigned)(ls & 0xffff));
        version->source = i == 0 ? "fixed ProductVersion" : "fixed FileVersion";
        return ERR_OK;
    }
    return ERR_OK;
}

error_code pe_read_version(FILE *f, uint64_t file_size, pe_version *version, error_info *err)
{
    memset(version, 0, sizeof *version);
    resource_walk *w = calloc(1, sizeof *w);
    if (!w)
        return error_set(err, ERR_NOMEM, "out of memory reading the version resource");
    w->f = f;
    w->file_size = file_size;
    uint8_t *data = NULL;
    size_t len = 0;
    error_code rc = version_headers(w, err);
    if (rc == ERR_OK && w->rva != 0 && w->size != 0)
        rc = version_resource(w, &data, &len, err);
    if (rc == ERR_OK && data)
        rc = version_from_info(data, len, version, err);
    free(data);
    free(w);
    return rc;
}
