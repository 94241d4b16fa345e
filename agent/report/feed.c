/* feed.c — feed files readable by report.readers_group (see feed.h). */
#include "report/feed.h"

#include <stdlib.h>
#include <string.h>

#include "base/text.h"
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

error_code feed_write(const char *path, const char *data, size_t len, const char *readers_group, error_info *err)
{
    if (!readers_group)
        return platform_write_atomic(path, data, len, err);
    /* Written whole and shared under a name of its own, then renamed: the
     * file behind path is always complete and always readable by the group.
     * Only one outpost writes (the lock), so the name is fixed; one left by
     * a killed process is replaced. */
    size_t n = strlen(path) + sizeof ".shared.tmp";
    char *tmp = malloc(n);
    if (!tmp)
        return error_set(err, ERR_NOMEM, "out of memory");
    strcpy(tmp, path);
    strcat(tmp, ".shared.tmp");
    error_code rc = ERR_OK;
    if (platform_path_stat(tmp, NULL) != PLATFORM_PATH_NONE)
        rc = platform_remove_file(tmp, err);
    if (rc == ERR_OK)
        rc = platform_write_new_file(tmp, data, len, true, err);
    if (rc == ERR_OK && (rc = feed_share(tmp, readers_group, err)) == ERR_OK &&
        (rc = platform_rename(tmp, path, err)) == ERR_OK)
        rc = platform_sync_parent_dir(path, err);
    if (rc != ERR_OK && platform_path_stat(tmp, NULL) != PLATFORM_PATH_NONE) {
        error_info ignored;
        if (platform_remove_file(tmp, &ignored) != ERR_OK)
            error_clear(&ignored);
    }
    free(tmp);
    return rc;
}
