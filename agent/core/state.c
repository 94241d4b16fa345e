/* state.c — load, section access and atomic save of state.json (see state.h). */
#include "core/state.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/log.h"
#include "platform/platform.h"

struct state {
    char *path;       /* state_dir/state.json */
    cJSON *root;      /* the document; always an object */
    size_t saved_len; /* length of the last text saved, 0 before the first */
};

static MUST_CHECK error_code move_aside(const char *path, const char *why, error_info *err)
{
    size_t n = strlen(path);
    char *bad = malloc(n + 5);
    if (!bad)
        return error_set(err, ERR_NOMEM, "out of memory");
    memcpy(bad, path, n);
    memcpy(bad + n, ".bad", 5);
    error_code rc = platform_rename(path, bad, err);
    if (rc == ERR_OK)
        log_warn("state file %s %s; moved it to %s and started with empty state", path, why, bad);
    free(bad);
    return rc;
}

error_code state_load(const char *state_dir, state **out, error_info *err)
{
    state *s = calloc(1, sizeof *s);
    if (!s || !(s->path = platform_path_join(state_dir, "state.json"))) {
        free(s);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    char *text = NULL;
    size_t len = 0;
    error_info read_err;
    error_code rc = platform_read_file(s->path, STATE_MAX_BYTES, &text, &len, &read_err);
    if (rc == ERR_OK) {
        s->root = cJSON_ParseWithLength(text, len);
        free(text);
        if (s->root && !cJSON_IsObject(s->root)) {
            cJSON_Delete(s->root);
            s->root = NULL;
        }
        if (!s->root && (rc = move_aside(s->path, "is not valid JSON", err)) != ERR_OK) {
            state_free(s);
            return rc;
        }
    } else if (rc == ERR_IO && platform_path_stat(s->path, NULL) == PLATFORM_PATH_FILE) {
        /* Too large to be ours: keep it for inspection, start afresh. */
        if ((rc = move_aside(s->path, "is larger than any state outpost writes", err)) != ERR_OK) {
            state_free(s);
            return rc;
        }
    } else if (rc != ERR_NOT_FOUND) {
        *err = read_err;
        state_free(s);
        return error_prefix(err, "cannot read the state file");
    }
    if (!s->root && !(s->root = cJSON_CreateObject())) {
        state_free(s);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    *out = s;
    return ERR_OK;
}

cJSON *state_section(state *s, const char *name)
{
    cJSON *section = cJSON_GetObjectItemCaseSensitive(s->root, name);
    if (cJSON_IsObject(section))
        return section;
    if (section)
        cJSON_DeleteItemFromObjectCaseSensitive(s->root, name);
    section = cJSON_CreateObject();
    if (section && !cJSON_AddItemToObject(s->root, name, section)) {
        cJSON_Delete(section);
        return NULL;
    }
    return section;
}

error_code state_save(state *s, error_info *err)
{
    cJSON_DeleteItemFromObjectCaseSensitive(s->root, "schema_version");
    if (!cJSON_AddNumberToObject(s->root, "schema_version", 1))
        return error_set(err, ERR_NOMEM, "out of memory");
    /* The report saves a growing state after every batch: one buffer of
     * about the last size, not a printer doubling its way up from 256 bytes
     * (the text of 20,000 seen ids is over a megabyte). */
    size_t guess = s->saved_len + s->saved_len / 8 + 4096;
    char *text = guess < INT_MAX ? cJSON_PrintBuffered(s->root, (int)guess, false) : cJSON_PrintUnformatted(s->root);
    if (!text)
        return error_set(err, ERR_NOMEM, "out of memory while writing the state");
    s->saved_len = strlen(text);
    error_code rc = platform_write_atomic(s->path, text, s->saved_len, err);
    free(text);
    return rc == ERR_OK ? ERR_OK : error_prefix(err, "cannot save the state");
}

void state_free(state *s)
{
    if (!s)
        return;
    cJSON_Delete(s->root);
    free(s->path);
    free(s);
}
