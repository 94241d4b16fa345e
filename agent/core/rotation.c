/* rotation.c — rotation by rename and the torn-line check (see rotation.h). */
#include "core/rotation.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

char *rotation_name(const char *path, int n)
{
    size_t len = strlen(path) + 16;
    char *name = malloc(len);
    if (name)
        snprintf(name, len, "%s.%d", path, n);
    return name;
}

error_code rotation_shift(const char *path, int keep, error_info *err)
{
    error_code rc = ERR_OK;
    for (int n = keep - 1; n >= 0 && rc == ERR_OK; n--) {
        char *from = n ? rotation_name(path, n) : NULL;
        char *to = rotation_name(path, n + 1);
        const char *source = n ? from : path;
        if (!source || !to)
            rc = error_set(err, ERR_NOMEM, "out of memory");
        else if (platform_path_stat(source, NULL) == PLATFORM_PATH_FILE)
            rc = platform_rename(source, to, err);
        free(from);
        free(to);
    }
    return rc;
}

bool rotation_ends_with_newline(const char *path)
{
    FILE *f = platform_fopen(path, "rb");
    if (!f)
        return true;
    uint64_t size = 0;
    unsigned char last = '\n';
    if (platform_file_size(f, &size, NULL) == ERR_OK && size > 0 &&
        platform_read_at(f, size - 1, &last, 1, NULL) != ERR_OK)
        last = '\n';
    fclose(f);
    return last == '\n';
}
