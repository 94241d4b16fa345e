/* feed.c — feed files readable by report.readers_group (see feed.h). */
#include "report/feed.h"

#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

error_code feed_share(const char *path, const char *readers_group, error_info *err)
{
    if (!readers_group)
        return ERR_OK;
    error_code rc = platform_share_with_group(path, readers_group, err);
    if (rc == ERR_CONFIG)
        return error_prefix(err, "report.readers_group");
    return rc;
}

struct feed_stream {
    platform_atomic_file *file;
    const char *readers_group; /* borrowed */
    size_t used;               /* bytes in buf */
    error_info error;          /* the first failure, ERR_OK while none */
    char buf[FEED_BUFFER];
};

error_code feed_open(const char *path, const char *readers_group, feed_stream **out, error_info *err)
{
    *out = NULL;
    feed_stream *f = malloc(sizeof *f);
    if (!f)
        return error_set(err, ERR_NOMEM, "out of memory");
    *f = (feed_stream){.readers_group = readers_group};
    error_clear(&f->error);
    /* Shared with a group: private until it is shared, never the old file's
     * mode (which may be from before readers_group was set). */
    error_code rc = platform_atomic_open(path, readers_group != NULL, &f->file, err);
    if (rc != ERR_OK) {
        free(f);
        return rc;
    }
    *out = f;
    return ERR_OK;
}

static bool feed_flush(feed_stream *f)
{
    if (f->error.code == ERR_OK && f->used && platform_atomic_write(f->file, f->buf, f->used, &f->error) != ERR_OK)
        return false;
    f->used = 0;
    return f->error.code == ERR_OK;
}

bool feed_put(feed_stream *f, const void *data, size_t len)
{
    if (f->error.code != ERR_OK)
        return false;
    if (f->used + len > sizeof f->buf && !feed_flush(f))
        return false;
    if (len >= sizeof f->buf) /* a large piece goes straight through */
        return platform_atomic_write(f->file, data, len, &f->error) == ERR_OK;
    memcpy(f->buf + f->used, data, len);
    f->used += len;
    return true;
}

void feed_abort(feed_stream *f)
{
    if (!f)
        return;
    platform_atomic_abort(f->file);
    free(f);
}

error_code feed_commit(feed_stream *f, error_info *err)
{
    if (!feed_flush(f)) {
        *err = f->error;
        feed_abort(f);
        return err->code;
    }
    error_code rc = platform_atomic_commit(f->file, f->readers_group, err);
    free(f);
    if (rc == ERR_CONFIG)
        return error_prefix(err, "report.readers_group");
    return rc;
}

error_code feed_write(const char *path, const char *data, size_t len, const char *readers_group, error_info *err)
{
    feed_stream *f = NULL;
    error_code rc = feed_open(path, readers_group, &f, err);
    if (rc != ERR_OK)
        return rc;
    feed_put(f, data, len); /* a failure is reported by the commit */
    return feed_commit(f, err);
}
