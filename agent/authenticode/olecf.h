/*
 * olecf.h — a small, bounds-checked reader for OLE compound files
 * ([MS-CFB]; the container of MSI packages): header, FAT (with DIFAT),
 * mini FAT, the directory and its red-black trees, and streams.
 *
 * Built for hostile input: every sector number is checked against the file,
 * sector chains are followed at most as far as the stream size needs, and a
 * sector (or mini sector) handed out twice in one reading pass is refused,
 * so loops and shared chains cannot make a small file cost more than its own
 * size to read. The directory tree is walked without recursion and every
 * entry may belong to it once. Memory is bounded by the file size (FAT) and
 * OLECF_MAX_ENTRIES.
 *
 * Every sector is accounted for when the file is opened (the GlueBall /
 * CVE-2020-1464 pattern: bytes inside the file that a signature over the
 * streams does not cover): each must be claimed by exactly one of the
 * DIFAT, the FAT, the mini FAT, the directory, the mini stream's container
 * or the chain of a stream in the directory tree, or be free (FREESECT) in
 * the FAT, as Windows' writers leave freed sectors. A sector the FAT marks
 * as used that nothing reaches, or one claimed twice, is refused; so are a
 * mini sector in the mini stream marked used that no stream reaches, and a
 * mini stream that ends in free mini sectors. A file ending in free sectors
 * is left to the caller (msi_open refuses it).
 *
 * Caps: OLECF_MAX_ENTRIES directory entries (a longer directory is refused),
 * each chain at most the file's sector count (a sector once), a stream
 * smaller than the file. Opening costs a few steps per entry, sector and
 * mini sector, and olecf_children one per child returned (olecf_steps).
 *
 * Structural problems come back as ERR_REJECTED with "malformed compound
 * file: ..." in err; read failures as ERR_IO.
 */
#ifndef OUTPOST_OLECF_H
#define OUTPOST_OLECF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

#define OLECF_NOSTREAM 0xFFFFFFFFu
#define OLECF_FREESECT 0xFFFFFFFFu /* FAT value of an unallocated sector */
#define OLECF_MAX_ENTRIES 65536u   /* directory entries we accept */

typedef enum {
    OLECF_UNUSED = 0,  /* unallocated entry */
    OLECF_STORAGE = 1, /* a directory */
    OLECF_STREAM = 2,  /* a file */
    OLECF_ROOT = 5     /* the root storage, entry 0 */
} olecf_type;

typedef struct olecf_entry {
    uint8_t name[64];      /* UTF-16LE, as stored */
    uint16_t name_len;     /* bytes, terminating NUL included (2..64, even) */
    uint8_t type;          /* olecf_type */
    uint32_t left, right;  /* sibling entry ids, OLECF_NOSTREAM for none */
    uint32_t child;        /* root of the children's tree, OLECF_NOSTREAM for none */
    uint8_t clsid[16];     /* class id (storages) */
    uint8_t state_bits[4]; /* user flags */
    uint8_t created[8];    /* FILETIME, as stored */
    uint8_t modified[8];   /* FILETIME, as stored */
    uint32_t start_sector; /* first sector (or mini sector) of a stream */
    uint64_t size;         /* stream size in bytes (low 32 bits on version 3 files) */
    uint8_t raw_size[8];   /* the size field as stored */
    uint32_t parent;       /* storage holding this entry; OLECF_NOSTREAM if unreachable */
} olecf_entry;

/* What olecf.c keeps beside the public fields (child index, work count). */
typedef struct olecf_private olecf_private;

typedef struct olecf_file {
    FILE *f;                   /* not owned */
    uint64_t file_size;        /* bytes */
    uint32_t sector_size;      /* 512 (version 3) or 4096 (version 4) */
    uint32_t sector_count;     /* sectors after the header */
    uint32_t *fat;             /* next-sector table */
    size_t fat_len;            /* entries in fat */
    uint32_t *minifat;         /* next-mini-sector table */
    size_t minifat_len;        /* entries in minifat */
    uint32_t *mini_sectors;    /* the mini stream's sectors, in order */
    size_t mini_sector_count;  /* entries in mini_sectors */
    uint64_t mini_stream_size; /* bytes in the mini stream */
    olecf_entry *entries;      /* the directory */
    size_t entry_count;        /* entries in the directory */
    uint8_t *used;             /* one bit per sector read in this pass */
    uint8_t *mini_used;        /* one bit per mini sector read in this pass */
    olecf_private *priv;       /* owned; see olecf.c */
} olecf_file;

/* Whether the first bytes of a file (at least 8) are the CFB signature. */
bool olecf_is_olecf(const uint8_t *head, size_t len);

/* Reads the structure of the compound file in f (file_size bytes). On
 * success *cf must be released with olecf_close; on failure it holds
 * nothing (olecf_close is still safe). f stays the caller's. */
MUST_CHECK error_code olecf_open(olecf_file *cf, FILE *f, uint64_t file_size, error_info *err);

/* Frees what olecf_open allocated. Safe on a zeroed or failed *cf. */
void olecf_close(olecf_file *cf);

/*
 * The ids of the entries whose parent is storage id (the root is 0), in
 * ascending id order; *ids is malloc'd (the caller frees it), NULL when
 * there are none. Costs the number of children (indexed at open).
 */
MUST_CHECK error_code olecf_children(const olecf_file *cf, uint32_t id, uint32_t **ids, size_t *count, error_info *err);

/* Directory entries and sectors visited since olecf_open (and by the calls
 * after it): a count of the work done, which tests bound. */
uint64_t olecf_steps(const olecf_file *cf);

/* Forgets which sectors were read, starting a new reading pass. */
void olecf_begin_pass(olecf_file *cf);

/* Receives a stream's bytes in order; returns false to stop (the read then
 * fails with ERR_INTERNAL). */
typedef bool (*olecf_sink)(void *ctx, const uint8_t *data, size_t len);

/* Feeds the whole content of stream id to sink, through a fixed buffer. */
MUST_CHECK error_code olecf_read_stream(olecf_file *cf, uint32_t id, olecf_sink sink, void *ctx, error_info *err);

#endif
