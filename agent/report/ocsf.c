/*
 * ocsf.c — the OCSF Data Security Finding of one incident (see ocsf.h).
 *
 * Profiles: security_control (action_id, disposition_id) and host (actor,
 * device), named in metadata.profiles. What OCSF has no attribute for (the
 * whole lineage with its events as outpost saw them, created_by, an exact
 * fractional risk score, a severity OCSF does not know) goes to `unmapped`:
 * nothing of the incident is dropped.
 */
#include "report/ocsf.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"
#include "base/text.h"
#include "core/timefmt.h"
#include "report/incident.h"

#define CLASS_UID 2006
#define CATEGORY_UID 2

/* printf into a new string (malloc'd); NULL on out of memory. */
static char *format(const char *fmt, ...) OUTPOST_PRINTF(1, 2);
static char *format(const char *fmt, ...)
{
    dynbuf b;
    dynbuf_init(&b, 0, false);
    va_list ap;
    va_start(ap, fmt);
    bool ok = dynbuf_vprintf(&b, fmt, ap);
    va_end(ap);
    char *s = ok ? dynbuf_take(&b, NULL) : NULL;
    dynbuf_free(&b);
    return s;
}

static const char *string_of(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* OCSF timestamps: milliseconds since the epoch. */
static bool time_ms(const cJSON *obj, const char *name, double *ms)
{
    const char *text = string_of(obj, name);
    int64_t s;
    if (!text || !timefmt_parse_iso8601(text, &s))
        return false;
    *ms = (double)s * 1000.0;
    return true;
}

/* OCSF's hostname_t: dot-separated labels of letters, digits and inner '-'. */
static bool is_hostname(const char *s)
{
    size_t label = 0;
    char prev = '.';
    for (; *s; prev = *s++) {
        bool alnum = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9');
        if (*s == '.') {
            if (label == 0 || prev == '-')
                return false;
            label = 0;
        } else if (alnum || (*s == '-' && label > 0)) {
            label++;
        } else {
            return false;
        }
    }
    return label > 0 && prev != '-';
}

/* ai_severity ("high", "SEVERITY_HIGH", ...) as OCSF severity_id; 99 (Other)
 * for one OCSF does not know, 0 when absent. */
static int severity_id(const char *ai)
{
    static const struct {
        const char *suffix;
        int id;
    } known[] = {{"informational", 1}, {"info", 1}, {"low", 2}, {"medium", 3}, {"high", 4}, {"critical", 5}};
    if (!ai)
        return 0;
    size_t n = strlen(ai);
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        size_t k = strlen(known[i].suffix);
        if (n >= k && text_equal_nocase(ai + n - k, known[i].suffix) &&
            (n == k || ai[n - k - 1] == '_' || ai[n - k - 1] == '-' || ai[n - k - 1] == ' '))
            return known[i].id;
    }
    return 99;
}

static const char *severity_caption(int id)
{
    static const char *const names[] = {"Unknown", "Informational", "Low", "Medium", "High", "Critical"};
    return id >= 0 && id <= 5 ? names[id] : "Other";
}

static bool add_string(cJSON *obj, const char *name, const char *value)
{
    return !value || cJSON_AddStringToObject(obj, name, value);
}

/* A host of an event: device.hostname when it is a hostname, else device.name. */
static bool add_host(cJSON *parent, const char *member, const char *host)
{
    cJSON *device = cJSON_AddObjectToObject(parent, member);
    return device && cJSON_AddStringToObject(device, is_hostname(host) ? "hostname" : "name", host) &&
           cJSON_AddNumberToObject(device, "type_id", 0) && cJSON_AddStringToObject(device, "type", "Unknown");
}

/* file, dst_endpoint, actor and device from the chain's events: the first
 * event that has each (every event stays whole in unmapped.lineage). */
static bool add_from_events(cJSON *f, const cJSON *item)
{
    incident_chain_firsts c;
    incident_chain_firsts_of(item, &c);
    bool ok = true;
    if (c.user) {
        cJSON *actor = cJSON_AddObjectToObject(f, "actor");
        cJSON *u = actor ? cJSON_AddObjectToObject(actor, "user") : NULL;
        ok = u && cJSON_AddStringToObject(u, "name", c.user);
    }
    if (ok && c.host)
        ok = add_host(f, "device", c.host);
    if (ok && c.source) {
        cJSON *file = cJSON_AddObjectToObject(f, "file");
        ok = file && add_string(file, "name", string_of(c.source, "file")) &&
             add_string(file, "path", string_of(c.source, "path")) && cJSON_AddNumberToObject(file, "type_id", 1) &&
             cJSON_AddStringToObject(file, "type", "Regular File");
    }
    if (ok && c.domain) {
        cJSON *dst = cJSON_AddObjectToObject(f, "dst_endpoint");
        ok = dst && cJSON_AddStringToObject(dst, is_hostname(c.domain) ? "hostname" : "name", c.domain);
    }
    return ok;
}

/* finding_info: uid = the incident id, the events as related events in
 * lineage order, first and last seen = the chain's first and last event. */
static bool add_finding_info(cJSON *f, const cJSON *item, const cJSON *events)
{
    const char *policy = string_of(item, "policy");
    cJSON *info = cJSON_AddObjectToObject(f, "finding_info");
    char *title = format("DLP incident: %s", policy ? policy : "(no policy)");
    bool ok = info && title && cJSON_AddStringToObject(info, "uid", incident_item_id(item)) &&
              cJSON_AddStringToObject(info, "title", title) && cJSON_AddStringToObject(info, "product_uid", "outpost");
    free(title);
    double ms;
    if (ok && time_ms(item, "trigger_time", &ms))
        ok = cJSON_AddNumberToObject(info, "created_time", ms) != NULL;
    cJSON *types = ok ? cJSON_AddArrayToObject(info, "types") : NULL;
    ok = types && cJSON_AddItemToArray(types, cJSON_CreateString("Data Loss Prevention"));
    int n = cJSON_GetArraySize(events);
    if (ok && n > 0) {
        if (time_ms(cJSON_GetArrayItem(events, 0), "timestamp", &ms))
            ok = cJSON_AddNumberToObject(info, "first_seen_time", ms) && cJSON_AddNumberToObject(f, "start_time", ms);
        if (ok && time_ms(cJSON_GetArrayItem(events, n - 1), "timestamp", &ms))
            ok = cJSON_AddNumberToObject(info, "last_seen_time", ms) && cJSON_AddNumberToObject(f, "end_time", ms);
        cJSON *related = ok ? cJSON_AddArrayToObject(info, "related_events") : NULL;
        ok = related != NULL;
        const cJSON *event;
        cJSON_ArrayForEach(event, events)
        {
            const char *id = string_of(event, "id");
            cJSON *r = ok && id ? cJSON_CreateObject() : NULL;
            if (!id)
                continue;
            ok = r && cJSON_AddItemToArray(related, r) && cJSON_AddStringToObject(r, "uid", id);
        }
    }
    return ok;
}

static bool add_fixed(cJSON *f)
{
    cJSON *meta = cJSON_AddObjectToObject(f, "metadata");
    cJSON *product = meta ? cJSON_AddObjectToObject(meta, "product") : NULL;
    cJSON *profiles = meta ? cJSON_AddArrayToObject(meta, "profiles") : NULL;
    return product && profiles && cJSON_AddStringToObject(meta, "version", OCSF_VERSION) &&
           cJSON_AddStringToObject(meta, "log_name", "incidents") &&
           cJSON_AddStringToObject(product, "name", "outpost") &&
           cJSON_AddStringToObject(product, "vendor_name", "outpost") &&
           cJSON_AddStringToObject(product, "version", OUTPOST_VERSION) &&
           cJSON_AddItemToArray(profiles, cJSON_CreateString("host")) &&
           cJSON_AddItemToArray(profiles, cJSON_CreateString("security_control")) &&
           cJSON_AddNumberToObject(f, "activity_id", 1) && cJSON_AddStringToObject(f, "activity_name", "Create") &&
           cJSON_AddNumberToObject(f, "category_uid", CATEGORY_UID) &&
           cJSON_AddStringToObject(f, "category_name", "Findings") &&
           cJSON_AddNumberToObject(f, "class_uid", CLASS_UID) &&
           cJSON_AddStringToObject(f, "class_name", "Data Security Finding") &&
           cJSON_AddNumberToObject(f, "type_uid", CLASS_UID * 100 + 1) &&
           cJSON_AddStringToObject(f, "type_name", "Data Security Finding: Create") &&
           cJSON_AddNumberToObject(f, "status_id", 1) && cJSON_AddStringToObject(f, "status", "New");
}

/* severity, risk score, blocked or not; what OCSF cannot hold exactly goes
 * to unmapped. */
static bool add_verdict(cJSON *f, const cJSON *item, cJSON *unmapped)
{
    const char *ai = string_of(item, "ai_severity");
    int sev = severity_id(ai);
    bool ok = cJSON_AddNumberToObject(f, "severity_id", sev) &&
              cJSON_AddStringToObject(f, "severity", sev == 99 ? ai : severity_caption(sev));
    const cJSON *risk = cJSON_GetObjectItemCaseSensitive(item, "risk_score");
    if (ok && cJSON_IsNumber(risk)) {
        double r = risk->valuedouble, rounded = round(r);
        if (rounded >= INT32_MIN && rounded <= INT32_MAX)
            ok = cJSON_AddNumberToObject(f, "risk_score", rounded) != NULL;
        if (ok && rounded != r) /* OCSF's risk_score is an integer: the exact one too */
            ok = cJSON_AddNumberToObject(unmapped, "risk_score", r) != NULL;
    }
    bool blocked = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "blocked"));
    return ok && cJSON_AddNumberToObject(f, "action_id", blocked ? 2 : 1) &&
           cJSON_AddStringToObject(f, "action", blocked ? "Denied" : "Allowed") &&
           cJSON_AddNumberToObject(f, "disposition_id", blocked ? 2 : 1) &&
           cJSON_AddStringToObject(f, "disposition", blocked ? "Blocked" : "Allowed");
}

static bool add_data_security(cJSON *f, const cJSON *item)
{
    const char *policy = string_of(item, "policy"), *dataset = string_of(item, "dataset");
    cJSON *ds = cJSON_AddObjectToObject(f, "data_security");
    bool ok = ds && cJSON_AddNumberToObject(ds, "detection_system_id", 1) &&
              cJSON_AddStringToObject(ds, "detection_system", "Endpoint") &&
              add_string(ds, "detection_pattern", dataset);
    if (ok && policy) {
        cJSON *p = cJSON_AddObjectToObject(ds, "policy");
        ok = p && cJSON_AddStringToObject(p, "name", policy);
    }
    return ok;
}

static MUST_CHECK error_code build(const cJSON *item, cJSON *f, error_info *err)
{
    const cJSON *lineage = cJSON_GetObjectItemCaseSensitive(item, "lineage");
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(lineage, "events");
    const char *status = string_of(lineage, "status");
    double when;
    if (!time_ms(item, "trigger_time", &when))
        when = 0; /* required by OCSF; the missing time shows as the epoch */
    char *message = format("DLP incident %s: policy %s, dataset %s, user %s, lineage %s", incident_item_id(item),
                           string_of(item, "policy") ? string_of(item, "policy") : "-",
                           string_of(item, "dataset") ? string_of(item, "dataset") : "-",
                           string_of(item, "user") ? string_of(item, "user") : "-", status ? status : "-");
    bool ok = message && add_fixed(f) && cJSON_AddNumberToObject(f, "time", when) &&
              cJSON_AddStringToObject(f, "message", message) && add_string(f, "status_detail", status);
    free(message);
    cJSON *unmapped = ok ? cJSON_AddObjectToObject(f, "unmapped") : NULL;
    ok = unmapped && add_verdict(f, item, unmapped) && add_data_security(f, item) &&
         add_finding_info(f, item, events) && add_from_events(f, item);
    const cJSON *member;
    cJSON_ArrayForEach(member, item)
    {
        /* Whole in unmapped: what has an OCSF home above is there too, but
         * the lineage's events and their details have none. */
        static const char *const kept[] = {"created_by", "ai_severity", "lineage", "trigger_time"};
        for (size_t i = 0; ok && i < sizeof kept / sizeof *kept; i++)
            if (strcmp(member->string, kept[i]) == 0 && !cJSON_IsNull(member))
                ok = cJSON_AddItemToObject(unmapped, member->string, cJSON_Duplicate(member, 1));
    }
    return ok ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
}

error_code ocsf_format(const cJSON *item, char **line, error_info *err)
{
    cJSON *f = cJSON_CreateObject();
    error_code rc = f ? build(item, f, err) : error_set(err, ERR_NOMEM, "out of memory");
    *line = rc == ERR_OK ? cJSON_PrintUnformatted(f) : NULL;
    cJSON_Delete(f);
    if (rc == ERR_OK && !*line)
        rc = error_set(err, ERR_NOMEM, "out of memory");
    return rc;
}

bool ocsf_line_id(const char *line, size_t len, char **id)
{
    cJSON *doc = cJSON_ParseWithLength(line, len);
    const char *uid = string_of(cJSON_GetObjectItemCaseSensitive(doc, "finding_info"), "uid");
    *id = uid ? text_dup(uid) : NULL;
    cJSON_Delete(doc);
    return *id != NULL;
}
