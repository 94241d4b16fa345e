/*
 * unpack.c — extracts installer archives with libarchive under the rules of
 * unpack.h: no path ever comes from an entry's name, unsafe entries reject
 * the whole archive, and entry count and expanded size are capped (announced
 * sizes before writing, actual bytes while writing).
 */
#include "installer/unpack.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>

#include "platform/platform.h"
#include "base/text.h"

#define COPY_BUFFER (64 * 1024)

void unpack_limits_default(unpack_limits *limits)
{
    limits->max_entries = 10000;
    limits->max_total_bytes = 4ULL * 1024 * 1024 * 1024;
    limits->max_ratio = 100;
    limits->ratio_floor_bytes = 64ULL * 1024 * 1024;
}

static bool is_separator(char c)
{
    return c == '/' || c == '\\';
}

bool unpack_name_is_safe(const char *name)
{
    if (!name || !name[0] || is_separator(name[0]))
        return false;
    if (((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z')) && name[1] == ':')
        return false;
    const char *component = name;
    for (const char *p = name;; p++) {
        if (*p && ((unsigned char)*p < 0x20 || *p == 0x7F))
            return false;
        if (*p == '\0' || is_separator(*p)) {
            if (p - component == 2 && component[0] == '.' && component[1] == '.')
                return false;
            if (*p == '\0')
                return true;
            component = p + 1;
        }
    }
}

void unpack_listing_free(unpack_listing *listing)
{
    for (size_t i = 0; i < listing->count; i++) {
        free(listing->files[i].name);
        free(listing->files[i].path);
    }
    free(listing->files);
    listing->files = NULL;
    listing->count = 0;
}

/* The expanded-size budget for an archive of archive_size bytes. */
static uint64_t size_budget(const unpack_limits *limits, uint64_t archive_size)
{
    uint64_t ratio = archive_size > UINT64_MAX / (limits->max_ratio ? limits->max_ratio : 1)
                         ? UINT64_MAX
                         : archive_size * limits->max_ratio;
    if (ratio < limits->ratio_floor_bytes)
        ratio = limits->ratio_floor_bytes;
    return ratio < limits->max_total_bytes ? ratio : limits->max_total_bytes;
}

typedef struct extraction {
    struct archive *reader;
    const char *archive_path;
    const char *dest_dir;
    uint64_t budget;       /* expanded bytes still allowed */
    uint64_t total_budget; /* the whole budget, for messages */
    unsigned char *buffer;
} extraction;

static MUST_CHECK error_code reject(error_info *err, const char *archive_path, const char *fmt, ...)
    OUTPOST_PRINTF(3, 4);
static MUST_CHECK error_code reject(error_info *err, const char *archive_path, const char *fmt, ...)
{
    char reason[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return error_set(err, ERR_REJECTED, "archive %s refused: %s; it was not extracted", archive_path, reason);
}

/* Refuses entries that are not plain files or directories, or whose names
 * could reach outside the extraction directory. */
static MUST_CHECK error_code check_entry(const extraction *x, struct archive_entry *entry, const char *name,
                                         error_info *err)
{
    if (!unpack_name_is_safe(name))
        return reject(err, x->archive_path, "entry \"%.200s\" has an absolute path, a \"..\" or a control character",
                      name);
    if (archive_entry_hardlink(entry))
        return reject(err, x->archive_path, "entry \"%.200s\" is a hard link", name);
    unsigned int type = (unsigned int)archive_entry_filetype(entry);
    if (type == AE_IFLNK || archive_entry_symlink(entry))
        return reject(err, x->archive_path, "entry \"%.200s\" is a symbolic link", name);
    if (type != AE_IFREG && type != AE_IFDIR)
        return reject(err, x->archive_path, "entry \"%.200s\" is a device, fifo or socket", name);
    return ERR_OK;
}

static MUST_CHECK error_code over_budget(const extraction *x, const char *name, error_info *err)
{
    char what[320];
    snprintf(what, sizeof what, "%.200s", name);
    return error_set(err, ERR_REJECTED,
                     "archive %s refused: expands beyond %llu bytes at entry \"%s\" (an expansion bomb?); it was "
                     "not extracted",
                     x->archive_path, (unsigned long long)x->total_budget, what);
}

/* Copies the current entry's data to path, counting against the budget. */
static MUST_CHECK error_code write_entry(extraction *x, const char *name, const char *path, uint64_t *written,
                                         error_info *err)
{
    FILE *out = platform_fopen(path, "wb");
    if (!out)
        return platform_stdio_error(err, "cannot create %s", path);
    error_code rc = ERR_OK;
    *written = 0;
    for (;;) {
        la_ssize_t n = archive_read_data(x->reader, x->buffer, COPY_BUFFER);
        if (n == 0)
            break;
        if (n < 0) {
            rc = error_set(err, ERR_REJECTED, "archive %s refused: cannot read entry \"%.200s\": %.200s",
                           x->archive_path, name, archive_error_string(x->reader));
            break;
        }
        if ((uint64_t)n > x->budget) {
            rc = over_budget(x, name, err);
            break;
        }
        x->budget -= (uint64_t)n;
        *written += (uint64_t)n;
        if (fwrite(x->buffer, 1, (size_t)n, out) != (size_t)n) {
            rc = platform_stdio_error(err, "cannot write %s", path);
            break;
        }
    }
    if (fclose(out) != 0 && rc == ERR_OK)
        rc = platform_stdio_error(err, "cannot write %s", path);
    return rc;
}

static MUST_CHECK error_code add_file(unpack_listing *listing, char *name, char *path, uint64_t size, error_info *err)
{
    unpack_file *grown = realloc(listing->files, (listing->count + 1) * sizeof *grown);
    if (!grown) {
        free(name);
        free(path);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    listing->files = grown;
    listing->files[listing->count++] = (unpack_file){name, path, size};
    return ERR_OK;
}

static MUST_CHECK error_code extract_regular(extraction *x, struct archive_entry *entry, const char *name, size_t index,
                                             unpack_listing *listing, error_info *err)
{
    if (archive_entry_size_is_set(entry) && archive_entry_size(entry) >= 0 &&
        (uint64_t)archive_entry_size(entry) > x->budget)
        return over_budget(x, name, err);
    char generated[32];
    snprintf(generated, sizeof generated, "entry-%06zu", index);
    char *path = platform_path_join(x->dest_dir, generated);
    char *copy = text_dup(name);
    if (!path || !copy) {
        free(path);
        free(copy);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    uint64_t written = 0;
    error_code rc = write_entry(x, name, path, &written, err);
    if (rc != ERR_OK) {
        free(path);
        free(copy);
        return rc;
    }
    return add_file(listing, copy, path, written, err);
}

static MUST_CHECK error_code open_reader(extraction *x, error_info *err)
{
    x->reader = archive_read_new();
    if (!x->reader)
        return error_set(err, ERR_NOMEM, "out of memory");
    archive_read_support_format_zip(x->reader);
    archive_read_support_format_7zip(x->reader);
    archive_read_support_format_cab(x->reader);
    archive_read_support_format_tar(x->reader);
    archive_read_support_filter_gzip(x->reader);
    archive_read_support_filter_bzip2(x->reader);
    archive_read_support_filter_xz(x->reader);
    if (archive_read_open_filename(x->reader, x->archive_path, COPY_BUFFER) != ARCHIVE_OK)
        return error_set(err, ERR_REJECTED, "archive %s cannot be read: %.200s", x->archive_path,
                         archive_error_string(x->reader));
    return ERR_OK;
}

error_code unpack_extract(const char *path, const char *dest_dir, const unpack_limits *limits, unpack_listing *listing,
                          error_info *err)
{
    listing->files = NULL;
    listing->count = 0;
    uint64_t archive_size = 0;
    if (platform_path_stat(path, &archive_size) != PLATFORM_PATH_FILE)
        return error_set(err, ERR_NOT_FOUND, "archive %s is not a regular file", path);
    extraction x = {.archive_path = path, .dest_dir = dest_dir};
    x.total_budget = x.budget = size_budget(limits, archive_size);
    x.buffer = malloc(COPY_BUFFER);
    if (!x.buffer)
        return error_set(err, ERR_NOMEM, "out of memory");
    error_code rc = open_reader(&x, err);
    size_t entries = 0;
    struct archive_entry *entry;
    while (rc == ERR_OK) {
        int r = archive_read_next_header(x.reader, &entry);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            rc =
                error_set(err, ERR_REJECTED, "archive %s cannot be read: %.200s", path, archive_error_string(x.reader));
            break;
        }
        if (++entries > limits->max_entries) {
            rc = reject(err, path, "more than %zu entries", limits->max_entries);
            break;
        }
        const char *name = archive_entry_pathname_utf8(entry);
        if (!name)
            name = archive_entry_pathname(entry);
        if (!name) {
            rc = reject(err, path, "an entry has no usable name");
            break;
        }
        rc = check_entry(&x, entry, name, err);
        if (rc == ERR_OK && archive_entry_filetype(entry) == AE_IFREG)
            rc = extract_regular(&x, entry, name, entries, listing, err);
    }
    if (x.reader) {
        archive_read_close(x.reader);
        archive_read_free(x.reader);
    }
    free(x.buffer);
    if (rc != ERR_OK)
        unpack_listing_free(listing);
    return rc;
}
