/*
 * unpack.h — safe extraction of an installer archive (zip, 7z, cab, tar,
 * tar.gz) with libarchive, for the format layer of PRODUCT.md section 4.3.
 * (Named unpack, not archive: a header named archive.h on outpost's
 * include path could shadow libarchive's <archive.h>.)
 *
 * Archive entries are hostile input. Extraction never creates a path from an
 * entry's name: every regular file is written to dest_dir under a generated
 * name ("entry-000001"), and the listing maps it back to the name it had in
 * the archive. Names are still checked, and an archive holding an absolute
 * path, a ".." component, a symbolic or hard link, a device, fifo or
 * socket is refused as a whole (ERR_REJECTED), as is one with more entries
 * or more expanded bytes than the limits allow. Sizes announced in headers
 * are checked before anything is written, and the bytes actually written are
 * counted as well, so an archive that lies about sizes stops at the cap.
 * On failure the caller removes dest_dir (it holds nothing useful).
 */
#ifndef OUTPOST_UNPACK_H
#define OUTPOST_UNPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct unpack_limits {
    size_t max_entries;         /* entries of any kind (directories included) */
    uint64_t max_total_bytes;   /* expanded bytes of all regular files */
    uint64_t max_ratio;         /* expanded bytes at most this many times the archive's size... */
    uint64_t ratio_floor_bytes; /* ...but always allow this many (small archives) */
} unpack_limits;

/* 10,000 entries; 4 GiB; 100 times the archive's size, at least 64 MiB. */
void unpack_limits_default(unpack_limits *limits);

typedef struct unpack_file {
    char *name;    /* path inside the archive, '/'-separated (malloc'd) */
    char *path;    /* where it was extracted (malloc'd) */
    uint64_t size; /* bytes */
} unpack_file;

typedef struct unpack_listing {
    unpack_file *files; /* regular files, in archive order (malloc'd) */
    size_t count;
} unpack_listing;

/*
 * Extracts the regular files of the archive at path into dest_dir (which
 * must exist and be private to the caller). ERR_REJECTED with the reason for
 * an unsafe or over-limit archive or one libarchive cannot read; ERR_IO /
 * ERR_DISK_FULL for write failures. On success *listing must be released
 * with unpack_listing_free; on failure it is empty.
 */
MUST_CHECK error_code unpack_extract(const char *path, const char *dest_dir, const unpack_limits *limits,
                                     unpack_listing *listing, error_info *err);

void unpack_listing_free(unpack_listing *listing);

/*
 * Whether an entry name is acceptable: not empty, not absolute ('/', '\\',
 * a drive letter), no ".." component, no control characters. Both '/' and
 * '\\' count as separators (archives made on Windows use either).
 */
bool unpack_name_is_safe(const char *name);

#endif
