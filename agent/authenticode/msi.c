/*
 * msi.c — the MSI Authenticode digest and signature stream (see msi.h).
 * The order of streams follows osslsigncode's msi.c (dirent_cmp_hash,
 * msi_hash_dir, msi_prehash_dir), which matches what Windows signs.
 */
#include "authenticode/msi.h"

#include <stdlib.h>
#include <string.h>

#include "authenticode/authenticode_int.h"

#define MSI_MAX_DEPTH 16 /* storages nested deeper than this are refused */

/* "\005DigitalSignature" and "\005MsiDigitalSignatureEx", UTF-16LE with NUL. */
static const uint8_t name_signature[] = {0x05, 0, 'D', 0, 'i', 0, 'g', 0, 'i', 0, 't', 0, 'a', 0, 'l', 0, 'S', 0,
                                         'i',  0, 'g', 0, 'n', 0, 'a', 0, 't', 0, 'u', 0, 'r', 0, 'e', 0, 0,   0};
static const uint8_t name_signature_ex[] = {0x05, 0, 'M', 0, 's', 0, 'i', 0, 'D', 0, 'i', 0, 'g', 0, 'i', 0,
                                            't',  0, 'a', 0, 'l', 0, 'S', 0, 'i', 0, 'g', 0, 'n', 0, 'a', 0,
                                            't',  0, 'u', 0, 'r', 0, 'e', 0, 'E', 0, 'x', 0, 0,   0};

/* Turns a compound-file rejection (ERR_REJECTED in local) into a MALFORMED
 * verdict; copies any other error to err. */
static MUST_CHECK error_code from_olecf(error_code rc, const error_info *local, authenticode_result *result,
                                        error_info *err)
{
    if (rc == ERR_OK)
        return ERR_OK;
    if (rc == ERR_REJECTED)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "%s", local->message);
    if (err)
        *err = *local;
    return rc;
}

bool msi_is_msi(const uint8_t *head, size_t len)
{
    return olecf_is_olecf(head, len);
}

static bool name_is(const olecf_entry *e, const uint8_t *name, size_t len)
{
    return e->name_len == len && memcmp(e->name, name, len) == 0;
}

static bool is_signature_entry(const olecf_entry *e)
{
    return name_is(e, name_signature, sizeof name_signature) || name_is(e, name_signature_ex, sizeof name_signature_ex);
}

error_code msi_open(msi_package *msi, FILE *f, uint64_t file_size, authenticode_result *result, error_info *err)
{
    error_info local;
    error_clear(&local);
    msi->signature = msi->signature_ex = OLECF_NOSTREAM;
    error_code rc = olecf_open(&msi->cf, f, file_size, &local);
    if (rc != ERR_OK)
        return from_olecf(rc, &local, result, err);
    /* Bytes the compound file does not account for are not covered by the
     * signature. olecf_open has refused sectors marked used that nothing
     * reaches and accepted free ones inside the file; here refuse a partial
     * trailing sector and a last sector the FAT does not allocate (stricter
     * than osslsigncode, which ignores them; the MSI counterpart of the PE
     * rule that the signature ends the file). */
    const olecf_file *cf = &msi->cf;
    uint32_t last = cf->sector_count - 1;
    if (file_size % cf->sector_size != 0 || last >= cf->fat_len || cf->fat[last] == OLECF_FREESECT)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "data follows the end of the compound file");
    for (size_t i = 1; i < msi->cf.entry_count; i++) {
        const olecf_entry *e = &msi->cf.entries[i];
        if (e->parent != 0)
            continue;
        if (name_is(e, name_signature, sizeof name_signature))
            msi->signature = (uint32_t)i;
        else if (name_is(e, name_signature_ex, sizeof name_signature_ex))
            msi->signature_ex = (uint32_t)i;
    }
    if ((msi->signature != OLECF_NOSTREAM && msi->cf.entries[msi->signature].type != OLECF_STREAM) ||
        (msi->signature_ex != OLECF_NOSTREAM && msi->cf.entries[msi->signature_ex].type != OLECF_STREAM))
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "MSI signature entry is not a stream");
    return ERR_OK;
}

void msi_close(msi_package *msi)
{
    olecf_close(&msi->cf);
}

typedef struct buffer_sink {
    uint8_t *data;   /* destination, capacity bytes */
    size_t capacity; /* bytes available */
    size_t len;      /* bytes written */
} buffer_sink;

static bool to_buffer(void *ctx, const uint8_t *data, size_t len)
{
    buffer_sink *b = ctx;
    if (len > b->capacity - b->len)
        return false;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    return true;
}

/* Reads a whole (small) stream into a malloc'd buffer. */
static MUST_CHECK error_code read_small_stream(msi_package *msi, uint32_t id, size_t cap, uint8_t **data, size_t *len,
                                               authenticode_result *result, error_info *err)
{
    const olecf_entry *e = &msi->cf.entries[id];
    if (e->size == 0 || e->size > cap)
        return authenticode_reject(result, AUTHENTICODE_MALFORMED, "MSI signature stream has a bad size (%llu bytes)",
                                   (unsigned long long)e->size);
    buffer_sink b = {malloc((size_t)e->size), (size_t)e->size, 0};
    if (!b.data)
        return error_set(err, ERR_NOMEM, "out of memory reading the MSI signature");
    error_info local;
    error_clear(&local);
    olecf_begin_pass(&msi->cf);
    error_code rc = from_olecf(olecf_read_stream(&msi->cf, id, to_buffer, &b, &local), &local, result, err);
    if (rc != ERR_OK) {
        free(b.data);
        return rc;
    }
    *data = b.data;
    *len = b.len;
    return ERR_OK;
}

error_code msi_read_signature(msi_package *msi, uint8_t **der, size_t *der_len, authenticode_result *result,
                              error_info *err)
{
    *der = NULL;
    *der_len = 0;
    if (msi->signature == OLECF_NOSTREAM)
        return ERR_OK;
    return read_small_stream(msi, msi->signature, AUTHENTICODE_MAX_SIGNATURE, der, der_len, result, err);
}

/* ---- The digest ---------------------------------------------------------- */

/* osslsigncode's dirent_cmp_hash: raw bytes over the shorter name length
 * (terminator included), the longer name first on a tie. */
static int compare_names(const olecf_entry *a, const olecf_entry *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int diff = memcmp(a->name, b->name, n);
    if (diff != 0)
        return diff;
    if (a->name_len == b->name_len)
        return 0;
    return a->name_len > b->name_len ? -1 : 1;
}

/* qsort comparator over pointers into the directory array (C11 qsort has
 * no context argument, so the entries are sorted by address, not by id). */
static int compare_entry_pointers(const void *a, const void *b)
{
    return compare_names(*(const olecf_entry *const *)a, *(const olecf_entry *const *)b);
}

/* Children of storage id in hashing order; *ids malloc'd (may be NULL). */
static MUST_CHECK error_code sorted_children(const olecf_file *cf, uint32_t id, uint32_t **ids, size_t *count,
                                             error_info *err)
{
    error_code rc = olecf_children(cf, id, ids, count, err);
    if (rc != ERR_OK || *count < 2)
        return rc;
    const olecf_entry **order = malloc(*count * sizeof *order);
    if (!order) {
        free(*ids);
        *ids = NULL;
        return error_set(err, ERR_NOMEM, "out of memory sorting MSI streams");
    }
    for (size_t i = 0; i < *count; i++)
        order[i] = &cf->entries[(*ids)[i]];
    qsort(order, *count, sizeof *order, compare_entry_pointers);
    for (size_t i = 0; i < *count; i++)
        (*ids)[i] = (uint32_t)(order[i] - cf->entries);
    free(order);
    return ERR_OK;
}

static bool to_md(void *ctx, const uint8_t *data, size_t len)
{
    return mbedtls_md_update(ctx, data, len) == 0;
}

/* Hashes storage id's content: sorted children (streams' bytes, storages
 * recursively, at most MSI_MAX_DEPTH deep), then its CLSID. */
static MUST_CHECK error_code hash_storage(msi_package *msi, uint32_t id, int depth, mbedtls_md_context_t *md,
                                          error_info *err)
{
    if (depth > MSI_MAX_DEPTH)
        return error_set(err, ERR_REJECTED, "malformed compound file: storages nested too deeply");
    uint32_t *children;
    size_t count;
    error_code rc = sorted_children(&msi->cf, id, &children, &count, err);
    for (size_t i = 0; i < count && rc == ERR_OK; i++) {
        const olecf_entry *e = &msi->cf.entries[children[i]];
        if (id == 0 && is_signature_entry(e))
            continue;
        if (e->type == OLECF_STREAM && e->size > 0)
            rc = olecf_read_stream(&msi->cf, children[i], to_md, md, err);
        else if (e->type == OLECF_STORAGE)
            rc = hash_storage(msi, children[i], depth + 1, md, err);
    }
    free(children);
    if (rc == ERR_OK && mbedtls_md_update(md, msi->cf.entries[id].clsid, 16) != 0)
        rc = error_set(err, ERR_INTERNAL, "hashing failed");
    return rc;
}

/* One entry's metadata for the MsiDigitalSignatureEx pre-hash. */
static int prehash_entry(const olecf_entry *e, mbedtls_md_context_t *md)
{
    int ret = 0;
    if (e->type != OLECF_ROOT)
        ret |= mbedtls_md_update(md, e->name, e->name_len - 2u);
    if (e->type != OLECF_STREAM)
        ret |= mbedtls_md_update(md, e->clsid, sizeof e->clsid);
    else
        ret |= mbedtls_md_update(md, e->raw_size, 4);
    ret |= mbedtls_md_update(md, e->state_bits, sizeof e->state_bits);
    if (e->type != OLECF_ROOT) {
        ret |= mbedtls_md_update(md, e->created, sizeof e->created);
        ret |= mbedtls_md_update(md, e->modified, sizeof e->modified);
    }
    return ret;
}

static MUST_CHECK error_code prehash_storage(msi_package *msi, uint32_t id, int depth, mbedtls_md_context_t *md,
                                             error_info *err)
{
    if (depth > MSI_MAX_DEPTH)
        return error_set(err, ERR_REJECTED, "malformed compound file: storages nested too deeply");
    if (prehash_entry(&msi->cf.entries[id], md) != 0)
        return error_set(err, ERR_INTERNAL, "hashing failed");
    uint32_t *children;
    size_t count;
    error_code rc = sorted_children(&msi->cf, id, &children, &count, err);
    for (size_t i = 0; i < count && rc == ERR_OK; i++) {
        const olecf_entry *e = &msi->cf.entries[children[i]];
        if (id == 0 && is_signature_entry(e))
            continue;
        if (e->type == OLECF_STREAM && prehash_entry(e, md) != 0)
            rc = error_set(err, ERR_INTERNAL, "hashing failed");
        else if (e->type == OLECF_STORAGE)
            rc = prehash_storage(msi, children[i], depth + 1, md, err);
    }
    free(children);
    return rc;
}

typedef error_code (*hash_walk)(msi_package *msi, uint32_t id, int depth, mbedtls_md_context_t *md, error_info *err);

/* Runs walk over the root into a fresh md context; digest into out. */
static MUST_CHECK error_code run_digest(msi_package *msi, mbedtls_md_type_t type, const unsigned char *prefix,
                                        size_t prefix_len, hash_walk walk, unsigned char *out, error_info *err)
{
    mbedtls_md_context_t md;
    mbedtls_md_init(&md);
    error_code rc = ERR_OK;
    if (mbedtls_md_setup(&md, mbedtls_md_info_from_type(type), 0) != 0 || mbedtls_md_starts(&md) != 0 ||
        (prefix_len && mbedtls_md_update(&md, prefix, prefix_len) != 0))
        rc = error_set(err, ERR_INTERNAL, "cannot set up the MSI digest");
    olecf_begin_pass(&msi->cf);
    if (rc == ERR_OK)
        rc = walk(msi, 0, 0, &md, err);
    if (rc == ERR_OK && mbedtls_md_finish(&md, out) != 0)
        rc = error_set(err, ERR_INTERNAL, "hashing failed");
    mbedtls_md_free(&md);
    return rc;
}

error_code msi_hash(msi_package *msi, mbedtls_md_type_t md, unsigned char *out, authenticode_result *result,
                    error_info *err)
{
    error_info local;
    error_clear(&local);
    unsigned char prehash[MBEDTLS_MD_MAX_SIZE];
    size_t prehash_len = 0;
    error_code rc;
    if (msi->signature_ex != OLECF_NOSTREAM) {
        size_t size = mbedtls_md_get_size(mbedtls_md_info_from_type(md));
        uint8_t *stored = NULL;
        size_t stored_len = 0;
        rc = read_small_stream(msi, msi->signature_ex, MBEDTLS_MD_MAX_SIZE, &stored, &stored_len, result, err);
        if (rc != ERR_OK)
            return rc;
        rc = run_digest(msi, md, NULL, 0, prehash_storage, prehash, &local);
        bool same = rc == ERR_OK && stored_len == size && memcmp(stored, prehash, size) == 0;
        free(stored);
        if (rc != ERR_OK)
            return from_olecf(rc, &local, result, err);
        if (!same)
            return authenticode_reject(result, AUTHENTICODE_DIGEST_MISMATCH,
                                       "MsiDigitalSignatureEx does not match the package's metadata");
        prehash_len = size;
    }
    rc = run_digest(msi, md, prehash, prehash_len, hash_storage, out, &local);
    return from_olecf(rc, &local, result, err);
}

/* ---- ProductVersion ---------------------------------------------------------------
 *
 * An MSI database keeps every string once, in the string pool: _StringPool
 * holds a 4-byte header (code page; bit 15 of its second word: string
 * references are 3 bytes instead of 2), then one (length, reference count)
 * pair of 16-bit words per string id from 1 on; a pair (0, 0) is an empty
 * id, a pair (0, n) says the next pair holds a length over 64 KiB (low
 * word, high word). _StringData is the strings' bytes back to back, in id
 * order. A table's stream holds its columns one after the other (all rows
 * of column 1, then of column 2); the Property table's two columns,
 * Property and Value, are both string references (0: null). Streams of
 * tables are named with the 0x4840 marker and the packed name encoding
 * msi_decode_stream_name undoes (Wine's msi/table.c, msitools' libmsi).
 */

static char mime_char(unsigned x)
{
    if (x < 10)
        return (char)('0' + x);
    if (x < 36)
        return (char)('A' + x - 10);
    if (x < 62)
        return (char)('a' + x - 36);
    return x == 62 ? '.' : '_';
}

void msi_decode_stream_name(const uint8_t *name, size_t len, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        unsigned c = (unsigned)name[i] | (unsigned)name[i + 1] << 8;
        if (c == 0)
            break;
        char decoded[2];
        size_t k = 0;
        if (c >= 0x3800 && c < 0x4800) {
            decoded[k++] = mime_char((c - 0x3800) & 0x3f);
            decoded[k++] = mime_char(((c - 0x3800) >> 6) & 0x3f);
        } else if (c >= 0x4800 && c < 0x4840) {
            decoded[k++] = mime_char(c - 0x4800);
        } else if (c == 0x4840) {
            decoded[k++] = '!';
        } else {
            decoded[k++] = c < 0x80 ? (char)c : '?';
        }
        for (size_t j = 0; j < k && n + 1 < size; j++)
            out[n++] = decoded[j];
    }
    if (size > 0)
        out[n] = '\0';
}

/* The root stream whose decoded name is name, or OLECF_NOSTREAM. */
static uint32_t find_root_stream(const olecf_file *cf, const char *name)
{
    for (size_t i = 1; i < cf->entry_count; i++) {
        const olecf_entry *e = &cf->entries[i];
        char decoded[72];
        if (e->parent != 0 || e->type != OLECF_STREAM)
            continue;
        msi_decode_stream_name(e->name, e->name_len, decoded, sizeof decoded);
        if (strcmp(decoded, name) == 0)
            return (uint32_t)i;
    }
    return OLECF_NOSTREAM;
}

/* Stream id's whole content, at most cap bytes, into *data (malloc'd). */
static MUST_CHECK error_code read_whole_stream(olecf_file *cf, uint32_t id, size_t cap, const char *what,
                                               uint8_t **data, size_t *len, error_info *err)
{
    uint64_t size = cf->entries[id].size;
    *data = NULL;
    *len = 0;
    if (size > cap)
        return error_set(err, ERR_REJECTED, "malformed MSI: the %s stream is %llu bytes, more than the %zu read", what,
                         (unsigned long long)size, cap);
    buffer_sink b = {malloc(size ? (size_t)size : 1), (size_t)size, 0};
    if (!b.data)
        return error_set(err, ERR_NOMEM, "out of memory reading the MSI %s", what);
    error_code rc = size ? olecf_read_stream(cf, id, to_buffer, &b, err) : ERR_OK;
    if (rc == ERR_OK && b.len != size)
        rc = error_set(err, ERR_REJECTED, "malformed MSI: the %s stream is shorter than its size", what);
    if (rc != ERR_OK) {
        free(b.data);
        return rc;
    }
    *data = b.data;
    *len = b.len;
    return ERR_OK;
}

typedef struct string_pool {
    const uint8_t *pool; /* _StringPool */
    size_t entries;      /* its 4-byte entries, the header included */
    const uint8_t *data; /* _StringData */
    size_t data_len;     /* its bytes */
    unsigned ref_bytes;  /* bytes per string reference in tables: 2 or 3 */
} string_pool;

/* Walks the pool to the string with id want_id, or (want_id 0) to the
 * first one equal to want_text. ERR_OK with *found false when there is
 * none; ERR_REJECTED when the pool does not fit the data. */
static MUST_CHECK error_code pool_find(const string_pool *sp, uint32_t want_id, const char *want_text, bool *found,
                                       uint32_t *id, size_t *offset, size_t *len, error_info *err)
{
    size_t at = 0, text_len = want_text ? strlen(want_text) : 0;
    uint32_t n = 1;
    *found = false;
    for (size_t i = 1; i < sp->entries; n++) {
        const uint8_t *e = sp->pool + 4 * i;
        size_t length = get_le16(e);
        if (length == 0 && get_le16(e + 2) != 0) { /* a long string: its length is in the next entry */
            if (i + 1 >= sp->entries)
                return error_set(err, ERR_REJECTED, "malformed MSI: the string pool ends inside an entry");
            length = (size_t)get_le16(e + 4) | (size_t)get_le16(e + 6) << 16;
            i += 2;
        } else {
            i += 1;
        }
        if (length > sp->data_len - at)
            return error_set(err, ERR_REJECTED, "malformed MSI: the string pool runs past _StringData");
        if (want_id ? n == want_id : length == text_len && memcmp(sp->data + at, want_text, text_len) == 0) {
            *found = true;
            *id = n;
            *offset = at;
            *len = length;
            return ERR_OK;
        }
        at += length;
    }
    return ERR_OK;
}

static uint32_t table_ref(const uint8_t *p, unsigned bytes)
{
    return (uint32_t)get_le16(p) | (bytes == 3 ? (uint32_t)p[2] << 16 : 0);
}

/* The Value string id of the Property row whose key is key_id (0: none). */
static MUST_CHECK error_code property_value(const uint8_t *table, size_t len, unsigned ref_bytes, uint32_t key_id,
                                            uint32_t *value_id, error_info *err)
{
    size_t row = 2u * ref_bytes;
    *value_id = 0;
    if (len % row != 0)
        return error_set(err, ERR_REJECTED,
                         "malformed MSI: the Property table's size (%zu bytes) is not a whole number "
                         "of rows",
                         len);
    size_t rows = len / row;
    for (size_t r = 0; r < rows; r++) {
        if (table_ref(table + r * ref_bytes, ref_bytes) == key_id) {
            *value_id = table_ref(table + rows * ref_bytes + r * ref_bytes, ref_bytes);
            return ERR_OK;
        }
    }
    return ERR_OK;
}

static void copy_printable(const uint8_t *text, size_t len, char *out, size_t size)
{
    size_t n = 0;
    while (len > 0 && *text == ' ') {
        text++;
        len--;
    }
    for (size_t i = 0; i < len && n + 1 < size; i++)
        out[n++] = text[i] >= 0x20 && text[i] < 0x7f ? (char)text[i] : '?';
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

/* The lookup itself, on the three streams read into memory. */
static MUST_CHECK error_code product_version_of(const string_pool *sp, const uint8_t *table, size_t table_len,
                                                char *version, size_t size, error_info *err)
{
    bool found = false;
    uint32_t key_id = 0, value_id = 0, id;
    size_t offset, len;
    error_code rc = pool_find(sp, 0, "ProductVersion", &found, &key_id, &offset, &len, err);
    if (rc != ERR_OK || !found)
        return rc;
    rc = property_value(table, table_len, sp->ref_bytes, key_id, &value_id, err);
    if (rc != ERR_OK || value_id == 0)
        return rc;
    rc = pool_find(sp, value_id, NULL, &found, &id, &offset, &len, err);
    if (rc != ERR_OK)
        return rc;
    if (!found)
        return error_set(err, ERR_REJECTED, "malformed MSI: ProductVersion names string %u, which the pool lacks",
                         (unsigned)value_id);
    copy_printable(sp->data + offset, len, version, size);
    return ERR_OK;
}

error_code msi_read_product_version(FILE *f, uint64_t file_size, char *version, size_t size, error_info *err)
{
    olecf_file cf;
    memset(&cf, 0, sizeof cf);
    if (size > 0)
        version[0] = '\0';
    error_code rc = olecf_open(&cf, f, file_size, err);
    if (rc != ERR_OK) {
        olecf_close(&cf);
        return rc;
    }
    uint32_t pool_id = find_root_stream(&cf, "!_StringPool"), data_id = find_root_stream(&cf, "!_StringData");
    uint32_t table_id = find_root_stream(&cf, "!Property");
    uint8_t *pool = NULL, *data = NULL, *table = NULL;
    size_t pool_len = 0, data_len = 0, table_len = 0;
    if (table_id == OLECF_NOSTREAM)
        goto cleanup; /* no Property table: no ProductVersion */
    if (pool_id == OLECF_NOSTREAM || data_id == OLECF_NOSTREAM) {
        rc = error_set(err, ERR_REJECTED, "malformed MSI: a Property table but no string pool");
        goto cleanup;
    }
    olecf_begin_pass(&cf);
    rc = read_whole_stream(&cf, pool_id, MSI_MAX_STRING_POOL, "_StringPool", &pool, &pool_len, err);
    if (rc == ERR_OK)
        rc = read_whole_stream(&cf, data_id, MSI_MAX_STRING_DATA, "_StringData", &data, &data_len, err);
    if (rc == ERR_OK)
        rc = read_whole_stream(&cf, table_id, MSI_MAX_PROPERTY, "Property", &table, &table_len, err);
    if (rc == ERR_OK) {
        string_pool sp = {pool, pool_len / 4, data, data_len, 2};
        if (pool_len >= 4 && (get_le16(pool + 2) & 0x8000))
            sp.ref_bytes = 3;
        rc = product_version_of(&sp, table, table_len, version, size, err);
    }
cleanup:
    free(pool);
    free(data);
    free(table);
    olecf_close(&cf);
    return rc;
}
