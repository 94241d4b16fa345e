/*
 * names.h — a growing list of strings, the one builder behind the lists
 * platform.h hands out (platform_list_dir on both sides, the Windows
 * platform_environment), so that growing, failing half-way and handing the
 * list over are written once. Implemented in common.c; agent/ never includes
 * this header.
 */
#ifndef OUTPOST_PLATFORM_NAMES_H
#define OUTPOST_PLATFORM_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* Start it as {0}; every string in it is owned by it. */
typedef struct platform_names {
    char **list;
    size_t used, cap;
} platform_names;

/* Appends name, which it takes (a malloc'ed string; NULL, the caller's copy
 * ran out of memory). false when out of memory: name is freed, the list
 * stays as it was, and the caller fails with its ERR_NOMEM. */
bool platform_names_push(platform_names *names, char *name);

/* Ends the build: when rc is ERR_OK the list (sorted by strcmp when sort)
 * and its length go to *out and *count, the caller's to free with
 * platform_free_names; otherwise the list is freed. Returns rc; names is
 * {0} again either way. */
error_code platform_names_finish(platform_names *names, error_code rc, bool sort, char ***out, size_t *count);

#endif
