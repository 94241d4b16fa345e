/*
 * bundle.c — writes the reproducible bundle of bundle.h with libarchive:
 * every piece of metadata that could differ between two runs (times, owner
 * names, permissions from the umask, gzip header fields) is fixed.
 */
#include "installer/bundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>

#include "platform/platform.h"
#include "installer/staging.h"
#include "base/text.h"
#include "core/timefmt.h"

#define COPY_BUFFER (64 * 1024)

error_code bundle_parse_format(const char *text, bundle_format *format, error_info *err)
{
    if (!text || strcmp(text, "zip") == 0) {
        *format = BUNDLE_ZIP;
        return ERR_OK;
    }
    if (strcmp(text, "tar.gz") == 0) {
        *format = BUNDLE_TAR_GZ;
        return ERR_OK;
    }
    return error_set(err, ERR_USAGE, "--format must be zip or tar.gz, not \"%s\"", text);
}

typedef struct bundle_member {
    const char *name; /* name in the archive */
    const char *path; /* file on disk */
} bundle_member;

static MUST_CHECK error_code archive_failed(struct archive *a, const char *output, error_info *err)
{
    const char *why = archive_error_string(a);
    int os_error = archive_errno(a);
    return error_set_os(err, platform_os_error_code(os_error), os_error, "cannot write bundle %s: %s", output,
                        why ? why : "unknown libarchive error");
}

static MUST_CHECK error_code add_member(struct archive *a, const bundle_member *m, int64_t mtime, const char *output,
                                        unsigned char *buf, error_info *err)
{
    uint64_t size = 0;
    if (platform_path_stat(m->path, &size) != PLATFORM_PATH_FILE)
        return error_set(err, ERR_IO, "cannot bundle %s: it is not a regular file", m->path);
    FILE *in = platform_fopen(m->path, "rb");
    if (!in)
        return platform_stdio_error(err, "cannot open %s", m->path);
    struct archive_entry *e = archive_entry_new();
    error_code rc = ERR_OK;
    if (!e) {
        rc = error_set(err, ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    archive_entry_set_pathname(e, m->name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_mtime(e, (time_t)mtime, 0);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    if (archive_write_header(a, e) != ARCHIVE_OK) {
        rc = archive_failed(a, output, err);
        goto cleanup;
    }
    size_t n;
    while ((n = fread(buf, 1, COPY_BUFFER, in)) > 0) {
        if (archive_write_data(a, buf, n) != (la_ssize_t)n) {
            rc = archive_failed(a, output, err);
            goto cleanup;
        }
    }
    if (ferror(in))
        rc = platform_stdio_error(err, "cannot read %s", m->path);
cleanup:
    archive_entry_free(e);
    fclose(in);
    return rc;
}

static struct archive *open_writer(bundle_format format, const char *tmp, const char *output, error_info *err)
{
    struct archive *a = archive_write_new();
    if (!a) {
        error_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    int r;
    if (format == BUNDLE_ZIP) {
        r = archive_write_set_format_zip(a);
        if (r == ARCHIVE_OK)
            /* Stored: installers are compressed already (see bundle.h). */
            r = archive_write_set_options(a, "zip:compression=store");
    } else {
        r = archive_write_set_format_ustar(a);
        if (r == ARCHIVE_OK)
            r = archive_write_add_filter_gzip(a);
        /* The gzip header would otherwise carry the time of writing. */
        if (r == ARCHIVE_OK)
            r = archive_write_set_options(a, "gzip:!timestamp,gzip:compression-level=1");
    }
    if (r == ARCHIVE_OK)
        r = archive_write_open_filename(a, tmp);
    if (r != ARCHIVE_OK) {
        ERROR_IGNORE(archive_failed(a, output, err)); /* the caller reads err */
        archive_write_free(a);
        return NULL;
    }
    return a;
}

static MUST_CHECK error_code write_archive(bundle_format format, bundle_member *members, size_t count, int64_t mtime,
                                           const char *tmp, const char *output, error_info *err)
{
    unsigned char *buf = malloc(COPY_BUFFER);
    if (!buf)
        return error_set(err, ERR_NOMEM, "out of memory");
    struct archive *a = open_writer(format, tmp, output, err);
    error_code rc = a ? ERR_OK : (err ? err->code : ERR_IO);
    for (size_t i = 0; rc == ERR_OK && i < count; i++)
        rc = add_member(a, &members[i], mtime, output, buf, err);
    if (a && archive_write_close(a) != ARCHIVE_OK && rc == ERR_OK)
        rc = archive_failed(a, output, err);
    if (a)
        archive_write_free(a);
    free(buf);
    return rc;
}

static char *default_output(const char *version, bundle_format format)
{
    size_t size = strlen(version) + 32;
    char *out = malloc(size);
    if (out)
        snprintf(out, size, "outpost-%s.%s", version, format == BUNDLE_ZIP ? "zip" : "tar.gz");
    return out;
}

error_code bundle_write(const config *cfg, bundle_format format, const char *output, char **written, error_info *err)
{
    char *version = NULL, *installer = NULL, *manifest_path = NULL, *out = NULL, *tmp = NULL, *staging = NULL;
    staging_manifest manifest;
    error_code rc = staging_current(cfg, &version, &manifest, &installer, err);
    if (rc != ERR_OK)
        goto cleanup;
    if (!staging_has_verified(cfg, version)) {
        rc = error_set(err, ERR_REJECTED, "staged installer %s no longer matches its manifest; stage it again",
                       installer);
        goto cleanup;
    }
    staging = platform_path_join(cfg->state_dir, "staging");
    char *dir = staging ? platform_path_join(staging, version) : NULL;
    manifest_path = dir ? platform_path_join(dir, "manifest.json") : NULL;
    free(dir);
    out = output ? text_dup(output) : default_output(version, format);
    if (!manifest_path || !out) {
        rc = error_set(err, ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    if ((rc = platform_temp_name(out, &tmp, err)) != ERR_OK)
        goto cleanup;
    int64_t mtime = 0;
    if (!timefmt_parse_iso8601(manifest.staged_at, &mtime) || mtime < 0)
        mtime = 0;
    bundle_member members[2] = {{"manifest.json", manifest_path}, {manifest.file_name, installer}};
    if (strcmp(members[0].name, members[1].name) > 0) {
        bundle_member first = members[1];
        members[1] = members[0];
        members[0] = first;
    }
    rc = write_archive(format, members, 2, mtime, tmp, out, err);
    if (rc == ERR_OK)
        rc = platform_rename(tmp, out, err);
    if (rc != ERR_OK)
        ERROR_IGNORE(platform_remove_file(tmp, NULL));
    if (rc == ERR_OK && written) {
        *written = out;
        out = NULL;
    }
cleanup:
    free(version);
    free(installer);
    free(manifest_path);
    free(staging);
    free(out);
    free(tmp);
    staging_manifest_free(&manifest);
    return rc;
}
