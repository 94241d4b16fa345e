/*
 * feeds.c — the three line feeds behind one interface, and the recovery
 * of the later feeds after a crash (see feeds.h).
 */
#include "report/feeds.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/strmap.h"
#include "base/text.h"
#include "core/log.h"
#include "report/cef.h"
#include "report/incident.h"
#include "report/linefile.h"
#include "report/ocsf.h"

#define LINE_MAX_BYTES (16 * 1024 * 1024) /* longest line read back */

static MUST_CHECK error_code jsonl_format(const cJSON *item, char **line, error_info *err)
{
    *line = cJSON_PrintUnformatted(item);
    return *line ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
}

const feed_writer feed_jsonl = {"incidents file", jsonl_format, report_line_id};
const feed_writer feed_ocsf = {"OCSF file", ocsf_format, ocsf_line_id};
const feed_writer feed_cef = {"CEF file", cef_format, cef_line_id};

size_t feeds_enabled(const config *cfg, feed_file out[FEEDS_MAX])
{
    size_t n = 0;
    out[n++] = (feed_file){&feed_jsonl, cfg->report.jsonl_file};
    if (cfg->report.ocsf_file && *cfg->report.ocsf_file)
        out[n++] = (feed_file){&feed_ocsf, cfg->report.ocsf_file};
    if (cfg->report.cef_file && *cfg->report.cef_file)
        out[n++] = (feed_file){&feed_cef, cfg->report.cef_file};
    return n;
}

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

typedef struct held {
    const feed_writer *writer;
    strmap *wanted; /* pending id -> non-NULL; removed once found in the file */
} held;

static void find_line(void *user, const char *line, size_t len)
{
    held *h = user;
    char *id = NULL;
    if (h->writer->line_id(line, len, &id) && strmap_get(h->wanted, id))
        strmap_remove(h->wanted, id);
    free(id);
}

static MUST_CHECK error_code recover_feed(const config *cfg, const feed_file *feed, const cJSON *items, error_info *err)
{
    held h = {.writer = feed->writer, .wanted = strmap_new()};
    char *path = config_state_path(cfg, feed->name);
    error_code rc = h.wanted && path ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
    const cJSON *item;
    cJSON_ArrayForEach(item, items)
    {
        if (rc == ERR_OK && !strmap_put(h.wanted, incident_item_id(item), (void *)item))
            rc = error_set(err, ERR_NOMEM, "out of memory");
    }
    if (rc == ERR_OK)
        rc = linefile_scan(path, cfg->report.jsonl_keep, LINE_MAX_BYTES, find_line, &h, err);
    linefile_writer *w = NULL;
    size_t appended = 0;
    cJSON_ArrayForEach(item, items)
    {
        if (rc != ERR_OK || !strmap_get(h.wanted, incident_item_id(item)))
            continue;
        if (!w)
            rc = linefile_open(path, cfg->report.jsonl_max_bytes, cfg->report.jsonl_keep, cfg->report.readers_group, &w,
                               err);
        char *line = NULL;
        if (rc == ERR_OK)
            rc = feed->writer->format(item, &line, err);
        if (rc == ERR_OK)
            rc = linefile_append(w, line, strlen(line), err);
        free(line);
        appended++;
    }
    error_info close_err;
    error_code closed = linefile_close(w, &close_err);
    if (rc == ERR_OK && closed != ERR_OK) {
        *err = close_err;
        rc = closed;
    }
    if (rc == ERR_OK && appended)
        log_info("report: recovered an interrupted append: %zu incidents added to the %s", appended,
                 feed->writer->what);
    free(path);
    strmap_free(h.wanted);
    return rc == ERR_OK ? ERR_OK : error_prefix(err, "recovering the %s", feed->writer->what);
}

error_code feeds_recover(const config *cfg, const cJSON *items, error_info *err)
{
    if (cJSON_GetArraySize(items) <= 0)
        return ERR_OK;
    feed_file feeds[FEEDS_MAX];
    size_t n = feeds_enabled(cfg, feeds);
    for (size_t i = 1; i < n; i++) {
        error_code rc = recover_feed(cfg, &feeds[i], items, err);
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}
