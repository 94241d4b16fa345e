/* newest.c — the report's newest items, held as text (see newest.h). */
#include "report/newest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/incident.h"

/* One item: its id, its trigger_time (absent: has_time false) and its
 * unformatted JSON, each NUL-terminated, in one allocation. */
typedef struct record {
    size_t json_len;
    const char *time; /* into data, NULL when the item has none */
    const char *json; /* into data */
    char id[];        /* the id, then the time, then the JSON */
} record;

struct newest {
    record **records; /* newest first */
    size_t count;
    size_t keep;
};

newest *newest_new(int keep)
{
    newest *n = calloc(1, sizeof *n);
    if (n)
        n->keep = keep > 0 ? (size_t)keep : 0;
    return n;
}

static void clear(newest *n)
{
    for (size_t i = 0; i < n->count; i++)
        free(n->records[i]);
    n->count = 0;
}

void newest_free(newest *n)
{
    if (!n)
        return;
    clear(n);
    free(n->records);
    free(n);
}

size_t newest_count(const newest *n)
{
    return n->count;
}

/* incident_compare_newest on records: trigger_time descending (none last),
 * then id. */
static int compare(const char *time_a, const char *id_a, const record *b)
{
    if (!time_a || !b->time) {
        if ((time_a == NULL) != (b->time == NULL))
            return time_a == NULL ? 1 : -1;
    } else {
        int c = strcmp(b->time, time_a);
        if (c)
            return c;
    }
    return strcmp(id_a, b->id);
}

/* Inserts r (taken) in order, dropping the oldest beyond keep; the record
 * of its id is replaced (replace), or r is dropped. false, r freed, when out
 * of memory. */
static bool insert(newest *n, record *r, bool replace)
{
    for (size_t i = 0; i < n->count; i++)
        if (strcmp(n->records[i]->id, r->id) == 0) {
            if (!replace) {
                free(r);
                return true;
            }
            free(n->records[i]);
            memmove(&n->records[i], &n->records[i + 1], (n->count - i - 1) * sizeof *n->records);
            n->count--;
            break;
        }
    if (n->count == n->keep && (n->keep == 0 || compare(r->time, r->id, n->records[n->keep - 1]) >= 0)) {
        free(r); /* older than all kept: never among the newest */
        return true;
    }
    if (!n->records) {
        n->records = malloc(n->keep * sizeof *n->records);
        if (!n->records) {
            free(r);
            return false;
        }
    }
    size_t lo = 0, hi = n->count; /* the first record r comes before */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (compare(r->time, r->id, n->records[mid]) < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (n->count == n->keep)
        free(n->records[--n->count]);
    memmove(&n->records[lo + 1], &n->records[lo], (n->count - lo) * sizeof *n->records);
    n->records[lo] = r;
    n->count++;
    return true;
}

/* A record for item (its id and trigger_time) whose unformatted text is
 * json (json_len bytes). */
static record *record_new(const cJSON *item, const char *json, size_t json_len)
{
    const char *id = incident_item_id(item);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(item, "trigger_time");
    const char *time = cJSON_IsString(t) ? t->valuestring : NULL;
    size_t id_len = strlen(id), time_len = time ? strlen(time) : 0;
    record *r = malloc(sizeof *r + id_len + 1 + time_len + 1 + json_len + 1);
    if (!r)
        return NULL;
    char *p = r->id;
    memcpy(p, id, id_len + 1);
    p += id_len + 1;
    r->time = NULL;
    if (time) {
        memcpy(p, time, time_len + 1);
        r->time = p;
    }
    p += time_len + 1;
    memcpy(p, json, json_len);
    p[json_len] = '\0';
    r->json = p;
    r->json_len = json_len;
    return r;
}

error_code newest_add(newest *n, const cJSON *item, error_info *err)
{
    if (n->keep == 0)
        return ERR_OK;
    /* Decided before printing: most items of a long backlog are older than
     * a full store's last and are never printed at all. */
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(item, "trigger_time");
    if (n->count == n->keep &&
        compare(cJSON_IsString(t) ? t->valuestring : NULL, incident_item_id(item), n->records[n->keep - 1]) >= 0) {
        bool held = false;
        for (size_t i = 0; i < n->count && !held; i++)
            held = strcmp(n->records[i]->id, incident_item_id(item)) == 0;
        if (!held)
            return ERR_OK;
    }
    char *json = cJSON_PrintUnformatted(item);
    if (!json)
        return error_set(err, ERR_NOMEM, "out of memory while keeping the report's newest items");
    size_t len = strlen(json);
    if (len > NEWEST_ITEM_MAX) {
        cJSON_free(json);
        return error_set(err, ERR_PROTOCOL, "incident %s is %zu bytes as JSON, more than status.json keeps (%d MiB)",
                         incident_item_id(item), len, NEWEST_ITEM_MAX / (1024 * 1024));
    }
    record *r = record_new(item, json, len);
    cJSON_free(json);
    if (!r || !insert(n, r, true))
        return error_set(err, ERR_NOMEM, "out of memory while keeping the report's newest items");
    return ERR_OK;
}

error_code newest_item(const newest *n, size_t i, cJSON **out, error_info *err)
{
    *out = cJSON_ParseWithLength(n->records[i]->json, n->records[i]->json_len);
    return *out ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory while reading the report's newest items");
}

static const char *skip_string(const char *p, const char *end);

error_code newest_hosts(const newest *n, cJSON **out, error_info *err)
{
    incident_hosts_acc *acc = incident_hosts_begin();
    for (size_t i = 0; acc && i < n->count; i++) {
        cJSON *item = cJSON_ParseWithLength(n->records[i]->json, n->records[i]->json_len);
        incident_hosts_count(acc, item);
        cJSON_Delete(item);
    }
    return incident_hosts_end(acc, out, err);
}

/* ---- Printing --------------------------------------------------------------- */

typedef struct printer {
    bool (*put)(void *user, const void *data, size_t len);
    void *user;
    bool ok;
} printer;

static void emit(printer *pr, const char *data, size_t len)
{
    if (pr->ok && len)
        pr->ok = pr->put(pr->user, data, len);
}

static void emit_line(printer *pr, const char *before, size_t depth)
{
    static const char tabs[] = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
    emit(pr, before, strlen(before));
    for (; depth > sizeof tabs - 1; depth -= sizeof tabs - 1)
        emit(pr, tabs, sizeof tabs - 1);
    emit(pr, tabs, depth);
}

#define NESTING_MAX 256 /* deeper than any item; cJSON's own limit is 1000 */

/*
 * Puts the unformatted JSON json (cJSON_PrintUnformatted's, no white space
 * outside strings) as cJSON_Print prints the same value at depth: objects
 * one member a line, indented by tabs, "key":<tab>value; arrays on one
 * line, ", " between elements; "{\n}" at the depth for an empty object.
 * Strings, numbers and literals are copied as they are (raw values, such
 * as data_size's exact integers, stay exact).
 */
static bool put_formatted(printer *pr, const char *json, size_t len, size_t depth)
{
    unsigned char in_object[NESTING_MAX / 8] = {0};
    size_t level = 0; /* open containers */
    const char *p = json, *end = json + len, *run = p;
    while (p < end && pr->ok) {
        char c = *p;
        if (c == '"') {
            p = skip_string(p, end);
            if (!p)
                return false;
            continue;
        }
        if (!strchr("{}[]:,", c)) {
            p++;
            continue;
        }
        emit(pr, run, (size_t)(p - run));
        bool object = level > 0 && (in_object[(level - 1) / 8] >> ((level - 1) % 8) & 1);
        switch (c) {
        case '{':
            if (p + 1 < end && p[1] == '}') {
                emit_line(pr, "{\n", depth);
                emit(pr, "}", 1);
                p++;
                break;
            }
            if (level == NESTING_MAX)
                return false;
            in_object[level / 8] |= (unsigned char)(1u << (level % 8));
            level++;
            emit_line(pr, "{\n", ++depth);
            break;
        case '[':
            if (level == NESTING_MAX)
                return false;
            in_object[level / 8] &= (unsigned char)~(1u << (level % 8));
            level++;
            depth++;
            emit(pr, "[", 1);
            break;
        case '}':
        case ']':
            if (level == 0 || object != (c == '}'))
                return false;
            level--;
            depth--;
            if (c == '}')
                emit_line(pr, "\n", depth);
            emit(pr, p, 1);
            break;
        case ':': emit(pr, ":\t", 2); break;
        default: /* ',' */
            if (object)
                emit_line(pr, ",\n", depth);
            else
                emit(pr, ", ", 2);
        }
        run = ++p;
    }
    emit(pr, run, (size_t)(end - run));
    return level == 0;
}

error_code newest_print(const newest *n, int depth, bool (*put)(void *user, const void *data, size_t len), void *user,
                        error_info *err)
{
    printer pr = {put, user, true};
    emit(&pr, "[", 1);
    for (size_t i = 0; i < n->count && pr.ok; i++) {
        if (i > 0)
            emit(&pr, ", ", 2);
        if (!put_formatted(&pr, n->records[i]->json, n->records[i]->json_len, (size_t)depth + 1) && pr.ok)
            return error_set(err, ERR_INTERNAL, "item %s of the report's newest is not JSON", n->records[i]->id);
    }
    emit(&pr, "]", 1);
    return pr.ok ? ERR_OK : error_set(err, ERR_IO, "cannot write the report's items");
}

/* ---- Reading a status document ---------------------------------------------- */

/* The scanner: spans of JSON values, checked only as far as finding their
 * end needs (each item is parsed by cJSON, the rest of the document too). */

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* The end of the string starting at p ('"'), or NULL. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/* The end of the value starting at p, or NULL. */
static const char *skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return skip_string(p, end);
    if (*p != '{' && *p != '[') {
        const char *s = p;
        while (p < end && !strchr(",]} \t\r\n", *p))
            p++;
        return p > s ? p : NULL;
    }
    size_t depth = 0;
    while (p < end) {
        if (*p == '"') {
            if (!(p = skip_string(p, end)))
                return NULL;
            continue;
        }
        if (*p == '{' || *p == '[')
            depth++;
        else if ((*p == '}' || *p == ']') && --depth == 0)
            return p + 1;
        p++;
    }
    return NULL;
}

/* In the object at p, the value of member name (first of that name):
 * *value and *value_end, or both NULL when absent. false when the object
 * does not scan. */
static bool find_member(const char *p, const char *end, const char *name, const char **value, const char **value_end)
{
    *value = *value_end = NULL;
    size_t name_len = strlen(name);
    p = skip_space(p, end);
    if (p >= end || *p != '{')
        return false;
    p = skip_space(p + 1, end);
    if (p < end && *p == '}')
        return true;
    for (;;) {
        const char *key = p, *key_end = p < end && *p == '"' ? skip_string(p, end) : NULL;
        if (!key_end)
            return false;
        p = skip_space(key_end, end);
        if (p >= end || *p != ':')
            return false;
        const char *v = skip_space(p + 1, end), *v_end = skip_value(v, end);
        if (!v_end)
            return false;
        if (!*value && (size_t)(key_end - key) == name_len + 2 && memcmp(key + 1, name, name_len) == 0) {
            *value = v;
            *value_end = v_end;
        }
        p = skip_space(v_end, end);
        if (p < end && *p == '}')
            return true;
        if (p >= end || *p != ',')
            return false;
        p = skip_space(p + 1, end);
    }
}

/* Adds the item whose (formatted) text is [text, text + len) to n, as its
 * unformatted text (white space outside strings dropped: the text
 * cJSON_PrintUnformatted prints for it, raw values kept exact). ERR_IO when
 * it does not parse; not an object: ERR_OK, not added. */
static error_code add_text(newest *n, const char *text, size_t len, error_info *err)
{
    char *json = malloc(len + 1);
    if (!json)
        return error_set(err, ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (const char *p = text, *end = text + len; p < end;) {
        if (*p == '"') {
            const char *s = skip_string(p, end);
            if (!s)
                break;
            memcpy(json + k, p, (size_t)(s - p));
            k += (size_t)(s - p);
            p = s;
        } else if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            p++;
        } else {
            json[k++] = *p++;
        }
    }
    json[k] = '\0';
    cJSON *item = cJSON_ParseWithLength(json, k);
    error_code rc = item ? ERR_OK : error_set(err, ERR_IO, "an item of the status file is not valid JSON");
    if (rc == ERR_OK && cJSON_IsObject(item) && n->keep > 0 && k <= NEWEST_ITEM_MAX) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(item, "trigger_time");
        if (n->count < n->keep ||
            compare(cJSON_IsString(t) ? t->valuestring : NULL, incident_item_id(item), n->records[n->keep - 1]) < 0) {
            record *r = record_new(item, json, k);
            if (!r || !insert(n, r, true))
                rc = error_set(err, ERR_NOMEM, "out of memory");
        }
    }
    cJSON_Delete(item);
    free(json);
    return rc;
}

/* Adds each object of the array [p, end) to n; false when it does not
 * scan or an item does not parse. */
static bool load_items(newest *n, const char *p, const char *end, error_info *err, bool *nomem)
{
    p = skip_space(p, end);
    if (p >= end || *p != '[')
        return true; /* not an array: no items, as cJSON_ArrayForEach would find none */
    p = skip_space(p + 1, end);
    if (p < end && *p == ']')
        return true;
    for (;;) {
        const char *v_end = skip_value(p, end);
        if (!v_end)
            return false;
        error_code rc = add_text(n, p, (size_t)(v_end - p), err);
        if (rc != ERR_OK) {
            *nomem = rc == ERR_NOMEM;
            return false;
        }
        p = skip_space(v_end, end);
        if (p < end && *p == ']')
            return true;
        if (p >= end || *p != ',')
            return false;
        p = skip_space(p + 1, end);
    }
}

error_code newest_load_status(newest *n, char *text, size_t len, cJSON **rest, error_info *err)
{
    *rest = NULL;
    const char *end = text + len, *incidents = NULL, *incidents_end = NULL, *items = NULL, *items_end = NULL;
    newest *loaded = newest_new((int)n->keep);
    if (!loaded)
        return error_set(err, ERR_NOMEM, "out of memory");
    bool nomem = false;
    bool ok = find_member(text, end, "incidents", &incidents, &incidents_end) &&
              (!incidents || *incidents != '{' || find_member(incidents, incidents_end, "items", &items, &items_end)) &&
              (!items || load_items(loaded, items, items_end, err, &nomem));
    if (ok && incidents) {
        /* The member's value becomes 0, and is dropped once parsed. */
        text[incidents - text] = '0';
        memmove(text + (incidents - text) + 1, incidents_end, (size_t)(end - incidents_end));
        len -= (size_t)(incidents_end - incidents) - 1;
    }
    cJSON *doc = ok ? cJSON_ParseWithLength(text, len) : NULL;
    if (nomem || !cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        newest_free(loaded);
        return nomem ? err->code : error_set(err, ERR_IO, "the status file is not valid JSON");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "incidents");
    /* Into n: the store's own insert, so n's rules hold for the mix; an
     * item n holds already stays n's. */
    for (size_t i = loaded->count; i-- > 0;) { /* oldest first: n's own newer ones stay */
        record *r = loaded->records[i];
        loaded->records[i] = NULL;
        loaded->count = i;
        if (!insert(n, r, false)) {
            cJSON_Delete(doc);
            newest_free(loaded);
            return error_set(err, ERR_NOMEM, "out of memory");
        }
    }
    newest_free(loaded);
    *rest = doc;
    return ERR_OK;
}
