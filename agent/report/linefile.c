/*
 * linefile.c — append-only line file with rotation by rename, and the
 * scan used for crash recovery (see linefile.h).
 */
#include "report/linefile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "core/rotation.h"
#include "report/feed.h"
#include "platform/platform.h"

struct linefile_writer {
    char *path;                /* the live file */
    FILE *file;                /* open for appending, unbuffered: one write per line */
    uint64_t size;             /* bytes in the live file */
    int64_t max_bytes;         /* rotate past this */
    int keep;                  /* rotated files kept */
    int rotations;             /* done by this writer */
    const char *readers_group; /* borrowed; NULL: owner-only */
};

static MUST_CHECK error_code open_file(linefile_writer *w, error_info *err)
{
    bool creating = platform_path_stat(w->path, NULL) == PLATFORM_PATH_NONE;
    /* Created owner-only (report.readers_group is added below): outside
     * state_dir too, no other user reads the incidents. */
    w->file = platform_fopen_private(w->path, "ab");
    if (!w->file)
        return platform_stdio_error(err, "cannot open %s for appending", w->path);
    /* A new file (first run, or after a rotation): its name must survive a
     * crash as surely as the lines fsync'd into it later, or the lines that
     * the cursor has moved past would vanish with it. */
    error_code rc = creating ? platform_sync_parent_dir(w->path, err) : ERR_OK;
    /* Shared at every open: a file made before readers_group was set too. */
    if (rc == ERR_OK)
        rc = feed_share(w->path, w->readers_group, err);
    if (rc != ERR_OK) {
        fclose(w->file);
        w->file = NULL;
        return rc;
    }
    /* Unbuffered: each fwrite of a whole line becomes one write(). */
    setvbuf(w->file, NULL, _IONBF, 0);
    if (platform_path_stat(w->path, &w->size) != PLATFORM_PATH_FILE)
        w->size = 0;
    return ERR_OK;
}

static MUST_CHECK error_code write_all(linefile_writer *w, const char *data, size_t len, error_info *err)
{
    error_code rc = platform_append(w->file, data, len, err);
    if (rc != ERR_OK)
        return error_prefix(err, "cannot append to %s", w->path);
    w->size += len;
    return ERR_OK;
}

error_code linefile_open(const char *path, int64_t max_bytes, int keep, const char *readers_group,
                         linefile_writer **out, error_info *err)
{
    linefile_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = malloc(strlen(path) + 1))) {
        free(w);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    strcpy(w->path, path);
    w->max_bytes = max_bytes;
    w->keep = keep < 1 ? 1 : keep;
    w->readers_group = readers_group;
    bool torn = !rotation_ends_with_newline(path);
    error_code rc = open_file(w, err);
    if (rc == ERR_OK && torn && w->size > 0)
        rc = write_all(w, "\n", 1, err);
    if (rc != ERR_OK) {
        if (w->file)
            fclose(w->file);
        free(w->path);
        free(w);
        return rc;
    }
    *out = w;
    return ERR_OK;
}

/* Shifts name.(keep-1) → name.keep ... name → name.1, oldest first, so a
 * crash in between leaves a gap, never an overwritten file. */
static MUST_CHECK error_code rotate(linefile_writer *w, error_info *err)
{
    error_code rc = platform_fsync_file(w->file, err);
    fclose(w->file);
    w->file = NULL;
    if (rc != ERR_OK)
        return rc;
    rc = rotation_shift(w->path, w->keep, err);
    if (rc != ERR_OK)
        return error_prefix(err, "cannot rotate %s", w->path);
    w->rotations++;
    return open_file(w, err);
}

error_code linefile_append(linefile_writer *w, const char *line, size_t len, error_info *err)
{
    if (w->size > 0 && (int64_t)(w->size + len + 1) > w->max_bytes) {
        error_code rc = rotate(w, err);
        if (rc != ERR_OK)
            return rc;
    }
    char *buf = malloc(len + 1);
    if (!buf)
        return error_set(err, ERR_NOMEM, "out of memory");
    memcpy(buf, line, len);
    buf[len] = '\n';
    error_code rc = write_all(w, buf, len + 1, err);
    free(buf);
    return rc;
}

error_code linefile_sync(linefile_writer *w, error_info *err)
{
    error_code rc = platform_fsync_file(w->file, err);
    return rc == ERR_OK ? ERR_OK : error_prefix(err, "%s", w->path);
}

error_code linefile_close(linefile_writer *w, error_info *err)
{
    if (!w)
        return ERR_OK;
    error_code rc = w->file ? linefile_sync(w, err) : ERR_OK;
    if (w->file)
        fclose(w->file);
    free(w->path);
    free(w);
    return rc;
}

int linefile_rotations(const linefile_writer *w)
{
    return w->rotations;
}

/* Reads f line by line into a buffer capped at max_line: a longer line fails
 * the buffer's appends (sticky) until its newline, and is skipped. */
static void scan_file(FILE *f, size_t max_line, void (*fn)(void *, const char *, size_t), void *user)
{
    dynbuf line;
    dynbuf_init(&line, max_line ? max_line : 1, false);
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n') {
            if (dynbuf_ok(&line))
                fn(user, line.data ? line.data : "", line.len);
            dynbuf_reset(&line);
            continue;
        }
        char byte = (char)c;
        dynbuf_append(&line, &byte, 1);
    }
    dynbuf_free(&line);
}

error_code linefile_scan(const char *path, int keep, size_t max_line,
                         void (*fn)(void *user, const char *line, size_t len), void *user, error_info *err)
{
    for (int n = keep; n >= 0; n--) {
        char *name = n ? rotation_name(path, n) : NULL;
        if (n && !name)
            return error_set(err, ERR_NOMEM, "out of memory");
        FILE *f = platform_fopen(n ? name : path, "rb");
        free(name);
        if (!f)
            continue;
        scan_file(f, max_line, fn, user);
        fclose(f);
    }
    return ERR_OK;
}
