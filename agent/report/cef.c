/*
 * cef.c — the CEF line of one incident (see cef.h).
 *
 * CEF:0|outpost|outpost|<version>|dlp-incident|DLP incident: <policy>|<0-10>|
 * externalId=<id> first (cef_line_id finds it there), then the standard
 * keys CEF has (rt, start, end, suser, shost, dhost, fname, filePath,
 * request, act), then the rest in labelled custom strings (cs1..cs6,
 * flexString1..2). Header fields never hold a line break (one becomes a
 * space); extension values hold them escaped.
 */
#include "report/cef.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"
#include "base/text.h"
#include "core/timefmt.h"
#include "report/incident.h"

static const char *string_of(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static void header_field(dynbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '\\')
            dynbuf_append(b, "\\", 1);
        dynbuf_append(b, *s == '\r' || *s == '\n' ? " " : s, 1);
    }
    dynbuf_append(b, "|", 1);
}

static void escaped_value(dynbuf *b, const char *value)
{
    for (const char *s = value; *s; s++) {
        if (*s == '\r')
            dynbuf_append(b, "\\r", 2);
        else if (*s == '\n')
            dynbuf_append(b, "\\n", 2);
        else {
            if (*s == '\\' || *s == '=')
                dynbuf_append(b, "\\", 1);
            dynbuf_append(b, s, 1);
        }
    }
}

static void extension(dynbuf *b, const char *key, const char *value)
{
    if (!value)
        return;
    dynbuf_printf(b, " %s=", key);
    escaped_value(b, value);
}

static void labelled(dynbuf *b, const char *key, const char *label, const char *value)
{
    if (!value)
        return;
    char label_key[32];
    snprintf(label_key, sizeof label_key, "%sLabel", key);
    extension(b, key, value);
    extension(b, label_key, label);
}

static void time_extension(dynbuf *b, const char *key, const cJSON *obj, const char *name)
{
    const char *text = string_of(obj, name);
    int64_t s;
    if (text && timefmt_parse_iso8601(text, &s))
        dynbuf_printf(b, " %s=%lld", key, (long long)s * 1000);
}

/* CEF severity 0-10: from ai_severity, else the risk score (0-100) / 10. */
static int severity(const cJSON *item)
{
    static const struct {
        const char *suffix;
        int value;
    } known[] = {{"informational", 1}, {"info", 1}, {"low", 3}, {"medium", 5}, {"high", 8}, {"critical", 10}};
    const char *ai = string_of(item, "ai_severity");
    size_t n = ai ? strlen(ai) : 0;
    for (size_t i = 0; ai && i < sizeof known / sizeof *known; i++) {
        size_t k = strlen(known[i].suffix);
        if (n >= k && text_equal_nocase(ai + n - k, known[i].suffix))
            return known[i].value;
    }
    const cJSON *risk = cJSON_GetObjectItemCaseSensitive(item, "risk_score");
    if (!cJSON_IsNumber(risk))
        return 0;
    double v = round(risk->valuedouble / 10);
    return v < 0 ? 0 : v > 10 ? 10 : (int)v;
}

/* A list of strings joined by ",". */
static char *joined(const cJSON *list, const char *member)
{
    dynbuf b;
    dynbuf_init(&b, 0, false);
    const cJSON *entry;
    bool any = false;
    cJSON_ArrayForEach(entry, list)
    {
        const char *s = member ? string_of(entry, member) : cJSON_IsString(entry) ? entry->valuestring : NULL;
        if (!s)
            continue;
        if (any)
            dynbuf_append(&b, ",", 1);
        dynbuf_append_str(&b, s);
        any = true;
    }
    if (!any)
        dynbuf_append(&b, "", 0);
    bool ok = dynbuf_ok(&b);
    char *s = ok && any ? dynbuf_take(&b, NULL) : NULL;
    dynbuf_free(&b);
    return s;
}

static void from_events(dynbuf *b, const cJSON *events, const cJSON *item)
{
    incident_chain_firsts c;
    incident_chain_firsts_of(item, &c);
    int n = cJSON_GetArraySize(events);
    if (n > 0) {
        time_extension(b, "start", cJSON_GetArrayItem(events, 0), "timestamp");
        time_extension(b, "end", cJSON_GetArrayItem(events, n - 1), "timestamp");
    }
    extension(b, "suser", c.user);
    extension(b, "shost", c.host);
    extension(b, "dhost", c.domain);
    extension(b, "fname", string_of(c.source, "file"));
    extension(b, "filePath", string_of(c.source, "path"));
    extension(b, "request", c.url);
}

error_code cef_format(const cJSON *item, char **line, error_info *err)
{
    dynbuf b;
    dynbuf_init(&b, 0, false);
    const char *policy = string_of(item, "policy");
    const cJSON *lineage = cJSON_GetObjectItemCaseSensitive(item, "lineage");
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(lineage, "events");
    dynbuf_append_str(&b, "CEF:0|");
    header_field(&b, "outpost");
    header_field(&b, "outpost");
    header_field(&b, OUTPOST_VERSION);
    header_field(&b, "dlp-incident");
    dynbuf_append_str(&b, "DLP incident: ");
    header_field(&b, policy ? policy : "(no policy)");
    dynbuf_printf(&b, "%d|externalId=", severity(item));
    escaped_value(&b, incident_item_id(item));
    time_extension(&b, "rt", item, "trigger_time");
    from_events(&b, events, item);
    extension(&b, "act", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "blocked")) ? "blocked" : "detected");
    char risk[64] = "";
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(item, "risk_score");
    if (cJSON_IsNumber(r))
        for (int digits = 15; digits <= 17; digits++) { /* the shortest that reads back exactly */
            snprintf(risk, sizeof risk, "%.*g", digits, r->valuedouble);
            if (strtod(risk, NULL) == r->valuedouble)
                break;
        }
    char *ids = joined(events, "id"),
         *missing = joined(cJSON_GetObjectItemCaseSensitive(lineage, "missing_event_ids"), NULL);
    labelled(&b, "cs1", "policy", policy);
    labelled(&b, "cs2", "dataset", string_of(item, "dataset"));
    labelled(&b, "cs3", "lineageStatus", string_of(lineage, "status"));
    labelled(&b, "cs4", "riskScore", risk[0] ? risk : NULL);
    labelled(&b, "cs5", "createdBy", string_of(item, "created_by"));
    labelled(&b, "cs6", "eventIds", ids);
    labelled(&b, "flexString1", "aiSeverity", string_of(item, "ai_severity"));
    labelled(&b, "flexString2", "missingEventIds", missing);
    free(ids);
    free(missing);
    bool ok = dynbuf_ok(&b);
    *line = ok ? dynbuf_take(&b, NULL) : NULL;
    dynbuf_free(&b);
    return *line ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
}

/* The value of the extension that starts at s (just after "key="): up to the
 * space before the next unescaped '=''s key, or the end. */
static size_t value_length(const char *s, size_t n)
{
    size_t last_space = n;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\') {
            i++;
            continue;
        }
        if (s[i] == ' ')
            last_space = i;
        else if (s[i] == '=')
            return last_space < i ? last_space : n;
    }
    return n;
}

bool cef_line_id(const char *line, size_t len, char **id)
{
    static const char key[] = "externalId=";
    size_t pipes = 0, i = 0;
    for (; i < len && pipes < 7; i++) {
        if (line[i] == '\\')
            i++;
        else if (line[i] == '|')
            pipes++;
    }
    if (pipes < 7 || len - i < sizeof key - 1 || memcmp(line + i, key, sizeof key - 1) != 0 ||
        memcmp(line, "CEF:0|", 6) != 0)
        return false;
    const char *v = line + i + sizeof key - 1;
    size_t n = value_length(v, len - (size_t)(v - line));
    char *out = malloc(n + 1);
    if (!out)
        return false;
    size_t k = 0;
    for (size_t j = 0; j < n; j++) {
        if (v[j] == '\\' && j + 1 < n) {
            j++;
            out[k++] = v[j] == 'n' ? '\n' : v[j] == 'r' ? '\r' : v[j];
        } else {
            out[k++] = v[j];
        }
    }
    out[k] = '\0';
    if (k == 0) {
        free(out);
        return false;
    }
    *id = out;
    return true;
}
