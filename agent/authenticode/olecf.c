/*
 * olecf.c — OLE compound file reader (see olecf.h).
 *
 * Sector n lives at file offset (n + 1) * sector_size (the header takes
 * sector "-1"). Special FAT values: 0xFFFFFFFA and above are not sector
 * numbers (DIFSECT, FATSECT, ENDOFCHAIN, FREESECT). The header holds the
 * first 109 FAT sector numbers; further ones are in a chain of DIFAT
 * sectors, each ending with the number of the next.
 */
#include "authenticode/olecf.h"

#include <stdlib.h>
#include <string.h>

#include "authenticode/authenticode_int.h"
#include "platform/platform.h"

#define MAXREGSECT 0xFFFFFFFAu
#define ENDOFCHAIN 0xFFFFFFFEu
#define HEADER_DIFAT_COUNT 109
#define MINI_SECTOR_SIZE 64u
#define MINI_STREAM_CUTOFF 4096u
#define DIRENT_SIZE 128u
#define READ_BUFFER 4096u

struct olecf_private {
    uint32_t *child_first; /* entry_count + 1 offsets: entry i's children start at child_ids + child_first[i] */
    uint32_t *child_ids;   /* entry ids grouped by parent, ascending within a group */
    uint64_t steps;        /* see olecf_steps; behind a pointer so const readers can count */
};

static const uint8_t olecf_magic[8] = {0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1};

static MUST_CHECK error_code malformed(error_info *err, const char *what)
{
    return error_set(err, ERR_REJECTED, "malformed compound file: %s", what);
}

static MUST_CHECK error_code malformed_at(error_info *err, const char *unit, uint32_t n, const char *what)
{
    return error_set(err, ERR_REJECTED, "malformed compound file: %s %lu %s", unit, (unsigned long)n, what);
}

bool olecf_is_olecf(const uint8_t *head, size_t len)
{
    return len >= sizeof olecf_magic && memcmp(head, olecf_magic, sizeof olecf_magic) == 0;
}

/* Reads len bytes at offset; a range outside the file is malformed. */
static MUST_CHECK error_code read_at(const olecf_file *cf, uint64_t offset, void *buf, size_t len, error_info *err)
{
    if (offset > cf->file_size || len > cf->file_size - offset)
        return malformed(err, "a sector lies past the end of the file");
    error_code rc = platform_read_at(cf->f, offset, buf, len, err);
    if (rc != ERR_OK)
        error_prefix(err, "the installer");
    return rc;
}

static MUST_CHECK error_code read_sector(const olecf_file *cf, uint32_t sector, uint32_t offset, void *buf, size_t len,
                                         error_info *err)
{
    if (sector >= cf->sector_count)
        return malformed(err, "sector number out of range");
    return read_at(cf, ((uint64_t)sector + 1) * cf->sector_size + offset, buf, len, err);
}

/* Marks bit n of map; false when it was already set. */
static bool mark(uint8_t *map, uint32_t n)
{
    uint8_t bit = (uint8_t)(1u << (n & 7));
    if (map[n >> 3] & bit)
        return false;
    map[n >> 3] |= bit;
    return true;
}

static bool marked(const uint8_t *map, uint32_t n)
{
    return (map[n >> 3] >> (n & 7)) & 1u;
}

/* Records that a table (FAT or DIFAT sector) occupies sector s. */
static MUST_CHECK error_code claim(olecf_file *cf, uint32_t s, error_info *err)
{
    if (s >= cf->sector_count)
        return malformed(err, "sector number out of range");
    if (!mark(cf->used, s))
        return malformed_at(err, "sector", s, "is claimed twice");
    cf->priv->steps++;
    return ERR_OK;
}

/*
 * Follows the FAT chain from first, collecting at most max sectors (stops at
 * ENDOFCHAIN); *rest (may be NULL) gets the FAT value after the last one,
 * ENDOFCHAIN when the chain ended. Each sector may appear once in the pass
 * (loops and chains sharing a sector are refused).
 */
static MUST_CHECK error_code fat_chain(olecf_file *cf, uint32_t first, size_t max, uint32_t **out, size_t *count,
                                       uint32_t *rest, error_info *err)
{
    *out = NULL;
    *count = 0;
    if (rest)
        *rest = first;
    if (max == 0 || first == ENDOFCHAIN)
        return ERR_OK;
    uint32_t *list = malloc(max * sizeof *list);
    if (!list)
        return error_set(err, ERR_NOMEM, "out of memory reading a compound file");
    size_t n = 0;
    uint32_t s = first;
    while (s != ENDOFCHAIN && n < max) {
        if (s >= cf->sector_count || s >= cf->fat_len || !mark(cf->used, s)) {
            free(list);
            return malformed(err, "broken or looping sector chain");
        }
        list[n++] = s;
        cf->priv->steps++;
        s = cf->fat[s];
    }
    *out = list;
    *count = n;
    if (rest)
        *rest = s;
    return ERR_OK;
}

static MUST_CHECK error_code load_fat(olecf_file *cf, const uint8_t *header, error_info *err)
{
    uint32_t fat_sectors = get_le32(header + 0x2c);
    uint32_t difat_first = get_le32(header + 0x44);
    uint32_t difat_count = get_le32(header + 0x48);
    uint32_t per_sector = cf->sector_size / 4;
    if (fat_sectors == 0 || fat_sectors > cf->sector_count || difat_count > cf->sector_count)
        return malformed(err, "FAT size out of range");
    uint32_t *locations = malloc((size_t)fat_sectors * sizeof *locations);
    cf->fat_len = (size_t)fat_sectors * per_sector;
    cf->fat = malloc(cf->fat_len * sizeof *cf->fat);
    uint8_t *buf = malloc(cf->sector_size);
    error_code rc = ERR_OK;
    if (!locations || !cf->fat || !buf) {
        rc = error_set(err, ERR_NOMEM, "out of memory reading a compound file");
        goto cleanup;
    }
    uint32_t n = 0;
    for (; n < fat_sectors && n < HEADER_DIFAT_COUNT; n++)
        locations[n] = get_le32(header + 0x4c + 4 * n);
    uint32_t difat = difat_first, seen = 0;
    while (n < fat_sectors) {
        if (seen++ >= difat_count || difat >= cf->sector_count) {
            rc = malformed(err, "DIFAT chain too short");
            goto cleanup;
        }
        rc = claim(cf, difat, err);
        if (rc == ERR_OK)
            rc = read_sector(cf, difat, 0, buf, cf->sector_size, err);
        if (rc != ERR_OK)
            goto cleanup;
        for (uint32_t i = 0; i < per_sector - 1 && n < fat_sectors; i++)
            locations[n++] = get_le32(buf + 4 * i);
        difat = get_le32(buf + cf->sector_size - 4);
    }
    for (uint32_t i = 0; i < fat_sectors; i++) {
        rc = claim(cf, locations[i], err);
        if (rc == ERR_OK)
            rc = read_sector(cf, locations[i], 0, buf, cf->sector_size, err);
        if (rc != ERR_OK)
            goto cleanup;
        for (uint32_t j = 0; j < per_sector; j++)
            cf->fat[(size_t)i * per_sector + j] = get_le32(buf + 4 * j);
    }
cleanup:
    free(locations);
    free(buf);
    return rc;
}

/* Reads the whole chain from first (at most max sectors) into *data; *rest
 * as for fat_chain. */
static MUST_CHECK error_code read_chain(olecf_file *cf, uint32_t first, size_t max, uint8_t **data, size_t *len,
                                        uint32_t *rest, error_info *err)
{
    uint32_t *chain;
    size_t count;
    *data = NULL;
    *len = 0;
    error_code rc = fat_chain(cf, first, max, &chain, &count, rest, err);
    if (rc != ERR_OK || count == 0)
        return rc;
    uint8_t *buf = malloc(count * cf->sector_size);
    if (!buf) {
        free(chain);
        return error_set(err, ERR_NOMEM, "out of memory reading a compound file");
    }
    for (size_t i = 0; i < count && rc == ERR_OK; i++)
        rc = read_sector(cf, chain[i], 0, buf + i * cf->sector_size, cf->sector_size, err);
    free(chain);
    if (rc != ERR_OK) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = count * cf->sector_size;
    return ERR_OK;
}

static MUST_CHECK error_code load_minifat(olecf_file *cf, const uint8_t *header, error_info *err)
{
    uint32_t first = get_le32(header + 0x3c), count = get_le32(header + 0x40);
    if (count == 0 || first == ENDOFCHAIN)
        return ERR_OK;
    if (count > cf->sector_count)
        return malformed(err, "mini FAT size out of range");
    uint8_t *data;
    size_t len;
    error_code rc = read_chain(cf, first, count, &data, &len, NULL, err);
    if (rc != ERR_OK)
        return rc;
    cf->minifat_len = len / 4;
    cf->minifat = malloc((cf->minifat_len ? cf->minifat_len : 1) * sizeof *cf->minifat);
    if (!cf->minifat) {
        free(data);
        return error_set(err, ERR_NOMEM, "out of memory reading a compound file");
    }
    for (size_t i = 0; i < cf->minifat_len; i++)
        cf->minifat[i] = get_le32(data + 4 * i);
    free(data);
    return ERR_OK;
}

static MUST_CHECK error_code parse_entry(const olecf_file *cf, const uint8_t *p, bool version3, olecf_entry *e,
                                         error_info *err)
{
    memset(e, 0, sizeof *e);
    e->type = p[0x42];
    e->parent = OLECF_NOSTREAM;
    if (e->type == OLECF_UNUSED)
        return ERR_OK;
    if (e->type != OLECF_STORAGE && e->type != OLECF_STREAM && e->type != OLECF_ROOT)
        return malformed(err, "unknown directory entry type");
    e->name_len = get_le16(p + 0x40);
    if (e->name_len < 2 || e->name_len > 64 || (e->name_len & 1) || p[e->name_len - 2] || p[e->name_len - 1])
        return malformed(err, "bad directory entry name");
    memcpy(e->name, p, e->name_len);
    e->left = get_le32(p + 0x44);
    e->right = get_le32(p + 0x48);
    e->child = get_le32(p + 0x4c);
    memcpy(e->clsid, p + 0x50, 16);
    memcpy(e->state_bits, p + 0x60, 4);
    memcpy(e->created, p + 0x64, 8);
    memcpy(e->modified, p + 0x6c, 8);
    e->start_sector = get_le32(p + 0x74);
    memcpy(e->raw_size, p + 0x78, 8);
    /* Version 3 files may leave garbage in the high half ([MS-CFB] 2.6.3). */
    e->size = version3 ? get_le32(p + 0x78) : get_le64(p + 0x78);
    if (e->size >= cf->file_size && e->type != OLECF_STORAGE)
        return malformed(err, "stream larger than the file");
    return ERR_OK;
}

static MUST_CHECK error_code load_directory(olecf_file *cf, const uint8_t *header, bool version3, error_info *err)
{
    uint8_t *data;
    size_t len;
    uint32_t rest;
    size_t max_sectors = (size_t)OLECF_MAX_ENTRIES * DIRENT_SIZE / cf->sector_size;
    error_code rc = read_chain(cf, get_le32(header + 0x30), max_sectors, &data, &len, &rest, err);
    if (rc != ERR_OK)
        return rc;
    if (len < DIRENT_SIZE) {
        free(data);
        return malformed(err, "no directory");
    }
    if (rest != ENDOFCHAIN) {
        free(data);
        return error_set(err, ERR_REJECTED, "malformed compound file: directory holds more than %u entries",
                         OLECF_MAX_ENTRIES);
    }
    cf->entry_count = len / DIRENT_SIZE;
    cf->entries = calloc(cf->entry_count, sizeof *cf->entries);
    if (!cf->entries) {
        free(data);
        return error_set(err, ERR_NOMEM, "out of memory reading a compound file");
    }
    for (size_t i = 0; i < cf->entry_count && rc == ERR_OK; i++)
        rc = parse_entry(cf, data + i * DIRENT_SIZE, version3, &cf->entries[i], err);
    cf->priv->steps += cf->entry_count;
    free(data);
    if (rc == ERR_OK && cf->entries[0].type != OLECF_ROOT)
        rc = malformed(err, "first directory entry is not the root");
    return rc;
}

/*
 * Walks the directory from the root without recursion, setting each
 * reachable entry's parent. An entry reached twice (a loop or a shared
 * subtree) is malformed. The explicit stack holds at most entry_count ids.
 */
static MUST_CHECK error_code link_tree(olecf_file *cf, error_info *err)
{
    uint32_t *stack = malloc(cf->entry_count * sizeof *stack);
    if (!stack)
        return error_set(err, ERR_NOMEM, "out of memory reading a compound file");
    size_t top = 0;
    error_code rc = ERR_OK;
    cf->entries[0].parent = 0;
    /* Push the root's child tree; each popped entry pushes its siblings
     * (same parent) and its own child tree (parent = itself). */
    if (cf->entries[0].child != OLECF_NOSTREAM) {
        if (cf->entries[0].child >= cf->entry_count || cf->entries[0].child == 0) {
            rc = malformed(err, "bad child id");
            goto cleanup;
        }
        cf->entries[cf->entries[0].child].parent = 0;
        stack[top++] = cf->entries[0].child;
    }
    while (top > 0 && rc == ERR_OK) {
        uint32_t id = stack[--top];
        cf->priv->steps++;
        const olecf_entry *e = &cf->entries[id];
        uint32_t links[3] = {e->left, e->right, e->child};
        for (int k = 0; k < 3; k++) {
            uint32_t next = links[k];
            if (next == OLECF_NOSTREAM)
                continue;
            if (k == 2 && e->type != OLECF_STORAGE) {
                rc = malformed(err, "a stream has children");
                break;
            }
            if (next >= cf->entry_count || next == 0 || cf->entries[next].parent != OLECF_NOSTREAM ||
                cf->entries[next].type == OLECF_UNUSED || cf->entries[next].type == OLECF_ROOT) {
                rc = malformed(err, "directory tree is broken or loops");
                break;
            }
            cf->entries[next].parent = k == 2 ? id : e->parent;
            if (top >= cf->entry_count) {
                rc = malformed(err, "directory tree is broken or loops");
                break;
            }
            stack[top++] = next;
        }
    }
cleanup:
    free(stack);
    return rc;
}

/*
 * Groups the entry ids by parent (a counting sort, ascending ids within a
 * group) so that olecf_children costs the number of children, not the size
 * of the directory: a walk over every storage stays linear.
 */
static MUST_CHECK error_code index_children(olecf_file *cf, error_info *err)
{
    size_t n = cf->entry_count;
    uint32_t *first = calloc(n + 1, sizeof *first);
    uint32_t *ids = malloc(n * sizeof *ids);
    cf->priv->child_first = first;
    cf->priv->child_ids = ids;
    if (!first || !ids)
        return error_set(err, ERR_NOMEM, "out of memory reading a compound file");
    for (size_t i = 1; i < n; i++) {
        if (cf->entries[i].parent != OLECF_NOSTREAM)
            first[cf->entries[i].parent + 1]++;
    }
    for (size_t i = 0; i < n; i++)
        first[i + 1] += first[i];
    /* Placing the entries moves each first[p] to the end of group p, which
     * is where group p + 1 starts: shifting by one restores the starts. */
    for (size_t i = 1; i < n; i++) {
        if (cf->entries[i].parent != OLECF_NOSTREAM)
            ids[first[cf->entries[i].parent]++] = (uint32_t)i;
    }
    for (size_t i = n; i > 0; i--)
        first[i] = first[i - 1];
    first[0] = 0;
    cf->priv->steps += n;
    return ERR_OK;
}

static MUST_CHECK error_code load_mini_stream(olecf_file *cf, error_info *err)
{
    const olecf_entry *root = &cf->entries[0];
    cf->mini_stream_size = root->size;
    size_t needed = (size_t)((root->size + cf->sector_size - 1) / cf->sector_size);
    error_code rc = fat_chain(cf, root->start_sector, needed, &cf->mini_sectors, &cf->mini_sector_count, NULL, err);
    if (rc == ERR_OK && cf->mini_sector_count < needed)
        rc = malformed(err, "mini stream chain too short");
    return rc;
}

/* Marks the count sectors of the chain from first as a stream's. */
static MUST_CHECK error_code claim_chain(olecf_file *cf, uint32_t first, uint64_t count, error_info *err)
{
    uint32_t s = first;
    for (uint64_t n = 0; n < count; n++) {
        if (s >= cf->sector_count || s >= cf->fat_len)
            return malformed(err, "a stream's sector chain is broken or shorter than the stream");
        if (!mark(cf->used, s))
            return malformed_at(err, "sector", s, "is claimed twice (a chain loops or two chains share it)");
        cf->priv->steps++;
        s = cf->fat[s];
    }
    return ERR_OK;
}

/* Marks the count mini sectors of the mini chain from first; extent is the
 * number of mini sectors in the mini stream. */
static MUST_CHECK error_code claim_mini_chain(olecf_file *cf, uint32_t first, uint64_t count, uint64_t extent,
                                              error_info *err)
{
    uint32_t s = first;
    for (uint64_t n = 0; n < count; n++) {
        if (s >= cf->minifat_len || s >= extent)
            return malformed(err, "a stream's mini sector chain is broken or leaves the mini stream");
        if (!mark(cf->mini_used, s))
            return malformed_at(err, "mini sector", s, "is claimed twice (a chain loops or two chains share it)");
        cf->priv->steps++;
        s = cf->minifat[s];
    }
    return ERR_OK;
}

/*
 * Accounts for every sector of the file (the GlueBall / CVE-2020-1464
 * pattern: bytes inside the file that the signature's digest does not
 * cover). The tables have claimed theirs while loading; here every stream
 * of the directory tree claims its chain (the mini stream's container
 * already has). Then each sector must be claimed, or be free in the FAT:
 * Windows' writers leave freed sectors inside files (compound files are
 * only compacted by a copy), so free space is accepted, but a sector the
 * FAT marks as used that nothing reaches, or one claimed twice, is not.
 * Mini sectors get the same rules inside the mini stream, and the mini
 * stream must end with a mini sector in use (Windows sizes it so), or a
 * container grown by whole free sectors would carry appended data. FAT
 * entries past the end of the file describe no byte of it and are not
 * looked at (some writers leave used ones there). Costs one step per
 * entry, sector and mini sector.
 */
static MUST_CHECK error_code account_sectors(olecf_file *cf, error_info *err)
{
    uint64_t extent = (cf->mini_stream_size + MINI_SECTOR_SIZE - 1) / MINI_SECTOR_SIZE;
    error_code rc = ERR_OK;
    for (size_t i = 1; i < cf->entry_count && rc == ERR_OK; i++) {
        const olecf_entry *e = &cf->entries[i];
        if (e->type != OLECF_STREAM || e->parent == OLECF_NOSTREAM || e->size == 0)
            continue;
        uint64_t sectors = (e->size + cf->sector_size - 1) / cf->sector_size;
        uint64_t mini_sectors = (e->size + MINI_SECTOR_SIZE - 1) / MINI_SECTOR_SIZE;
        rc = e->size >= MINI_STREAM_CUTOFF ? claim_chain(cf, e->start_sector, sectors, err)
                                           : claim_mini_chain(cf, e->start_sector, mini_sectors, extent, err);
    }
    cf->priv->steps += cf->entry_count;
    for (uint32_t s = 0; s < cf->sector_count && rc == ERR_OK; s++) {
        if (marked(cf->used, s))
            continue;
        if (s >= cf->fat_len)
            rc = malformed_at(err, "sector", s, "lies beyond what the FAT describes");
        else if (cf->fat[s] != OLECF_FREESECT)
            rc = malformed_at(err, "sector", s,
                              "is marked in use but no stream or table reaches it (data outside the signed content)");
    }
    cf->priv->steps += cf->sector_count;
    for (uint32_t m = 0; m < extent && rc == ERR_OK; m++) {
        if (m < cf->minifat_len && marked(cf->mini_used, m))
            continue;
        if (m >= cf->minifat_len)
            rc = malformed_at(err, "mini sector", m, "lies beyond what the mini FAT describes");
        else if (cf->minifat[m] != OLECF_FREESECT)
            rc = malformed_at(err, "mini sector", m,
                              "is marked in use but no stream reaches it (data outside the signed content)");
        else if (m + 1 == extent)
            rc = malformed(err, "the mini stream ends in unused space (data outside the signed content)");
    }
    cf->priv->steps += extent;
    return rc;
}

error_code olecf_open(olecf_file *cf, FILE *f, uint64_t file_size, error_info *err)
{
    uint8_t header[512];
    memset(cf, 0, sizeof *cf);
    cf->f = f;
    cf->file_size = file_size;
    if (file_size < sizeof header)
        return malformed(err, "file shorter than its header");
    error_code rc = read_at(cf, 0, header, sizeof header, err);
    if (rc != ERR_OK)
        return rc;
    if (!olecf_is_olecf(header, sizeof header))
        return malformed(err, "no compound file signature");
    uint16_t major = get_le16(header + 0x1a), shift = get_le16(header + 0x1e);
    if (!((major == 3 && shift == 9) || (major == 4 && shift == 12)) || get_le16(header + 0x1c) != 0xFFFE ||
        get_le16(header + 0x20) != 6 || get_le32(header + 0x38) != MINI_STREAM_CUTOFF)
        return malformed(err, "unsupported version, byte order or sector sizes");
    cf->sector_size = 1u << shift;
    uint64_t sectors = file_size / cf->sector_size;
    if (sectors < 2)
        return malformed(err, "file too small");
    /* A trailing partial sector is still addressable; read_at bounds reads. */
    sectors = (file_size + cf->sector_size - 1) / cf->sector_size - 1;
    if (sectors >= MAXREGSECT)
        return malformed(err, "file too large");
    cf->sector_count = (uint32_t)sectors;
    cf->used = calloc((size_t)(sectors + 8) / 8, 1);
    cf->priv = calloc(1, sizeof *cf->priv);
    rc = cf->used && cf->priv ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory reading a compound file");

    if (rc == ERR_OK)
        rc = load_fat(cf, header, err);
    if (rc == ERR_OK)
        rc = load_minifat(cf, header, err);
    if (rc == ERR_OK)
        rc = load_directory(cf, header, major == 3, err);
    if (rc == ERR_OK)
        rc = link_tree(cf, err);
    if (rc == ERR_OK)
        rc = index_children(cf, err);
    if (rc == ERR_OK)
        rc = load_mini_stream(cf, err);
    if (rc == ERR_OK) {
        cf->mini_used = calloc((size_t)(cf->minifat_len + 8) / 8, 1);
        if (!cf->mini_used)
            rc = error_set(err, ERR_NOMEM, "out of memory reading a compound file");
    }
    if (rc == ERR_OK)
        rc = account_sectors(cf, err);
    if (rc == ERR_OK)
        olecf_begin_pass(cf);
    if (rc != ERR_OK) {
        olecf_close(cf);
        cf->f = f;
    }
    return rc;
}

void olecf_close(olecf_file *cf)
{
    free(cf->fat);
    free(cf->minifat);
    free(cf->mini_sectors);
    free(cf->entries);
    free(cf->used);
    free(cf->mini_used);
    if (cf->priv) {
        free(cf->priv->child_first);
        free(cf->priv->child_ids);
    }
    free(cf->priv);
    memset(cf, 0, sizeof *cf);
}

uint64_t olecf_steps(const olecf_file *cf)
{
    return cf->priv ? cf->priv->steps : 0;
}

void olecf_begin_pass(olecf_file *cf)
{
    if (cf->used)
        memset(cf->used, 0, (size_t)(cf->sector_count + 8) / 8);
    if (cf->mini_used)
        memset(cf->mini_used, 0, (cf->minifat_len + 8) / 8);
}

error_code olecf_children(const olecf_file *cf, uint32_t id, uint32_t **ids, size_t *count, error_info *err)
{
    *ids = NULL;
    *count = 0;
    if (!cf->priv || !cf->priv->child_first || id >= cf->entry_count)
        return ERR_OK;
    const uint32_t *first = cf->priv->child_first;
    size_t n = first[id + 1] - first[id];
    cf->priv->steps += n + 1;
    if (n == 0)
        return ERR_OK;
    uint32_t *list = malloc(n * sizeof *list);
    if (!list)
        return error_set(err, ERR_NOMEM, "out of memory reading a compound file");
    memcpy(list, cf->priv->child_ids + first[id], n * sizeof *list);
    *ids = list;
    *count = n;
    return ERR_OK;
}

static MUST_CHECK error_code read_regular(olecf_file *cf, const olecf_entry *e, olecf_sink sink, void *ctx,
                                          uint8_t *buf, error_info *err)
{
    uint64_t left = e->size;
    uint32_t s = e->start_sector;
    while (left > 0) {
        if (s >= cf->sector_count || s >= cf->fat_len || !mark(cf->used, s))
            return malformed(err, "broken or looping stream chain");
        cf->priv->steps++;
        size_t n = left < cf->sector_size ? (size_t)left : cf->sector_size;
        error_code rc = read_sector(cf, s, 0, buf, n, err);
        if (rc != ERR_OK)
            return rc;
        if (!sink(ctx, buf, n))
            return error_set(err, ERR_INTERNAL, "stream consumer failed");
        left -= n;
        s = cf->fat[s];
    }
    return ERR_OK;
}

static MUST_CHECK error_code read_mini(olecf_file *cf, const olecf_entry *e, olecf_sink sink, void *ctx, uint8_t *buf,
                                       error_info *err)
{
    uint64_t left = e->size;
    uint32_t s = e->start_sector;
    while (left > 0) {
        uint64_t offset = (uint64_t)s * MINI_SECTOR_SIZE;
        if (s >= cf->minifat_len || offset + MINI_SECTOR_SIZE > (uint64_t)cf->mini_sector_count * cf->sector_size ||
            !mark(cf->mini_used, s))
            return malformed(err, "broken or looping mini stream chain");
        cf->priv->steps++;
        size_t n = left < MINI_SECTOR_SIZE ? (size_t)left : MINI_SECTOR_SIZE;
        /* Mini sectors never straddle a sector: sector sizes are multiples of 64. */
        uint32_t sector = cf->mini_sectors[offset / cf->sector_size];
        error_code rc = read_sector(cf, sector, (uint32_t)(offset % cf->sector_size), buf, n, err);
        if (rc != ERR_OK)
            return rc;
        if (!sink(ctx, buf, n))
            return error_set(err, ERR_INTERNAL, "stream consumer failed");
        left -= n;
        s = cf->minifat[s];
    }
    return ERR_OK;
}

error_code olecf_read_stream(olecf_file *cf, uint32_t id, olecf_sink sink, void *ctx, error_info *err)
{
    if (id >= cf->entry_count || cf->entries[id].type != OLECF_STREAM)
        return malformed(err, "not a stream");
    const olecf_entry *e = &cf->entries[id];
    uint8_t *buf = malloc(READ_BUFFER);
    if (!buf)
        return error_set(err, ERR_NOMEM, "out of memory reading a compound file");
    error_code rc =
        e->size < MINI_STREAM_CUTOFF ? read_mini(cf, e, sink, ctx, buf, err) : read_regular(cf, e, sink, ctx, buf, err);
    free(buf);
    return rc;
}
