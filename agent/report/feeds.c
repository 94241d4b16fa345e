/*
 * feeds.c — the line feeds (see feeds.h).
 */
#include "report/feeds.h"

#include <string.h>

#include <cjson/cJSON.h>

#include "base/text.h"

bool report_line_id(const char *line, size_t len, char **id)
{
    static const char prefix[] = "{\"id\":\"";
    size_t plen = sizeof prefix - 1;
    if (len <= plen || memcmp(line, prefix, plen) != 0)
        return false;
    const char *start = line + plen;
    const char *end = memchr(start, '"', len - plen);
    if (!end)
        return false;
    if (!memchr(start, '\\', (size_t)(end - start))) {
        *id = text_dup_n(start, (size_t)(end - start));
        return *id != NULL;
    }
    /* An escaped id: let the JSON parser undo the escapes. */
    cJSON *doc = cJSON_ParseWithLength(line, len);
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(doc, "id");
    *id = cJSON_IsString(value) ? text_dup(value->valuestring) : NULL;
    cJSON_Delete(doc);
    return *id != NULL;
}
