/* state.c — load, section access and atomic save of state.json, and the
 * report's seen set held compactly beside the cJSON document (see state.h). */
#include "core/state.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"
#include "base/strmap.h"
#include "core/log.h"
#include "platform/platform.h"

#define SEEN_SECTION "report"
#define SEEN_MEMBER "seen"
#define SEEN_BLOCK (64 * 1024) /* bytes of records per block, unless one record is longer */
#define SAVE_MARK "\001"       /* stands for the seen set in the printed document: cJSON
                                  escapes every control character inside strings */

/* ---- The seen set ------------------------------------------------------------------ */

/*
 * A record is a flag byte (1 live, 0 removed), the id and the time, each
 * NUL-terminated, packed one after another into blocks that never move, so
 * the index may key by the id inside its record. Removed records keep
 * their room until the next filter compacts the blocks.
 */
typedef struct seen_block {
    struct seen_block *next;
    size_t used, cap;
    char data[];
} seen_block;

struct state_seen {
    seen_block *first, *last;
    strmap *index;     /* id -> the same id inside its record */
    size_t count;      /* live records */
    size_t dead_bytes; /* room of removed records */
};

struct state {
    char *path;       /* state_dir/state.json */
    cJSON *root;      /* the document; always an object, its seen object empty */
    state_seen seen;  /* the seen set, out of the tree */
    size_t saved_len; /* length of the last document printed (the seen set aside), 0 before the first */
};

static void seen_clear(state_seen *set)
{
    for (seen_block *b = set->first, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    strmap_free(set->index);
    *set = (state_seen){0};
}

/* The record's time: after its id. */
static const char *record_time(const char *id)
{
    return id + strlen(id) + 1;
}

static bool seen_append(state_seen *set, const char *id, size_t id_len, const char *time, size_t time_len)
{
    if (!set->index && !(set->index = strmap_new()))
        return false;
    size_t need = 1 + id_len + 1 + time_len + 1;
    seen_block *b = set->last;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > SEEN_BLOCK ? need : SEEN_BLOCK;
        seen_block *grown = malloc(sizeof *grown + cap);
        if (!grown)
            return false;
        *grown = (seen_block){.cap = cap};
        if (set->last)
            set->last->next = grown;
        else
            set->first = grown;
        set->last = b = grown;
    }
    char *rec = b->data + b->used;
    rec[0] = 1;
    memcpy(rec + 1, id, id_len);
    rec[1 + id_len] = '\0';
    memcpy(rec + 2 + id_len, time, time_len);
    rec[2 + id_len + time_len] = '\0';
    if (!strmap_put(set->index, rec + 1, rec + 1))
        return false; /* the block's room is reused by the next append */
    b->used += need;
    set->count++;
    return true;
}

/* Walks the live records in order: seen_next gives each id, NULL at the end. */
typedef struct seen_iter {
    seen_block *block;
    size_t at;
} seen_iter;

static char *seen_next(seen_iter *it)
{
    for (; it->block; it->block = it->block->next, it->at = 0)
        while (it->at < it->block->used) {
            char *rec = it->block->data + it->at;
            it->at += 3 + strlen(rec + 1) + strlen(record_time(rec + 1));
            if (rec[0])
                return rec + 1;
        }
    return NULL;
}

const char *state_seen_get(const state_seen *set, const char *id)
{
    const char *rec_id = set ? strmap_get(set->index, id) : NULL;
    return rec_id ? record_time(rec_id) : NULL;
}

bool state_seen_remove(state_seen *set, const char *id)
{
    char *rec_id = set ? strmap_remove(set->index, id) : NULL;
    if (!rec_id)
        return false;
    rec_id[-1] = 0;
    set->count--;
    set->dead_bytes += 3 + strlen(rec_id) + strlen(record_time(rec_id));
    return true;
}

bool state_seen_put(state_seen *set, const char *id, const char *time)
{
    char *old = strmap_get(set->index, id);
    if (!seen_append(set, id, strlen(id), time, strlen(time)))
        return false;
    if (old) {
        /* The new record took the index; retire the old one. */
        old[-1] = 0;
        set->count--;
        set->dead_bytes += 3 + strlen(old) + strlen(record_time(old));
    }
    return true;
}

size_t state_seen_count(const state_seen *set)
{
    return set ? set->count : 0;
}

void state_seen_filter(state_seen *set, bool (*keep)(const char *id, const char *time, void *user), void *user)
{
    seen_iter it = {set->first, 0};
    for (char *id; (id = seen_next(&it)) != NULL;)
        if (!keep(id, record_time(id), user))
            state_seen_remove(set, id);
    if (set->dead_bytes == 0)
        return;
    /* Compact into new blocks; out of memory leaves the set as it is. */
    state_seen packed = {0};
    it = (seen_iter){set->first, 0};
    for (char *id; (id = seen_next(&it)) != NULL;) {
        const char *time = record_time(id);
        if (!seen_append(&packed, id, strlen(id), time, strlen(time))) {
            seen_clear(&packed);
            return;
        }
    }
    seen_clear(set);
    *set = packed;
}

/* ---- Reading the seen set's text ---------------------------------------------------- */

/*
 * Just enough of a JSON scanner to find state.report.seen in the file's
 * text and read its members without a tree; anything it does not expect
 * makes it give up, and the whole text then goes to cJSON as before (the
 * set is taken from the tree: absorb_tree).
 */
typedef struct scan {
    const char *p, *end;
} scan;

static void scan_space(scan *sc)
{
    while (sc->p < sc->end && (*sc->p == ' ' || *sc->p == '\t' || *sc->p == '\n' || *sc->p == '\r'))
        sc->p++;
}

static bool scan_char(scan *sc, char c)
{
    scan_space(sc);
    if (sc->p < sc->end && *sc->p == c) {
        sc->p++;
        return true;
    }
    return false;
}

/* A string token: *start at its opening quote, sc past its closing one. */
static bool scan_string(scan *sc, const char **start)
{
    scan_space(sc);
    if (sc->p >= sc->end || *sc->p != '"')
        return false;
    *start = sc->p++;
    for (; sc->p < sc->end; sc->p++) {
        if (*sc->p == '\\')
            sc->p++;
        else if (*sc->p == '"') {
            sc->p++;
            return true;
        }
    }
    return false;
}

/* Skips one value of any kind (cJSON checks it later). */
static bool scan_skip(scan *sc)
{
    const char *start;
    int depth = 0;
    scan_space(sc);
    do {
        if (sc->p >= sc->end)
            return false;
        char c = *sc->p;
        if (c == '"') {
            if (!scan_string(sc, &start))
                return false;
        } else if (c == '{' || c == '[') {
            depth++;
            sc->p++;
        } else if (c == '}' || c == ']') {
            if (depth-- == 0)
                return false;
            sc->p++;
        } else {
            sc->p++;
            while (depth == 0 && sc->p < sc->end && !strchr(",}] \t\n\r", *sc->p))
                sc->p++;
        }
    } while (depth > 0);
    return true;
}

/* In the object at sc, the value of the first member called name: sc at it. */
static bool scan_member(scan *sc, const char *name)
{
    size_t n = strlen(name);
    if (!scan_char(sc, '{'))
        return false;
    if (scan_char(sc, '}'))
        return false;
    do {
        const char *key;
        if (!scan_string(sc, &key))
            return false;
        const char *key_end = sc->p;
        if (!scan_char(sc, ':'))
            return false;
        scan_space(sc);
        if ((size_t)(key_end - key) == n + 2 && memcmp(key + 1, name, n) == 0 && key[n + 1] == '"')
            return true;
        if (!scan_skip(sc))
            return false;
    } while (scan_char(sc, ','));
    return false;
}

/* The text of a string token, unescaped (malloc'd through cJSON only when it has escapes). */
static char *token_text(const char *start, const char *end, cJSON **holder)
{
    *holder = NULL;
    if (!memchr(start, '\\', (size_t)(end - start))) {
        char *copy = malloc((size_t)(end - start) - 1);
        if (copy) {
            memcpy(copy, start + 1, (size_t)(end - start) - 2);
            copy[end - start - 2] = '\0';
        }
        return copy;
    }
    *holder = cJSON_ParseWithLength(start, (size_t)(end - start));
    return cJSON_IsString(*holder) ? (*holder)->valuestring : NULL;
}

static void token_free(char *text, cJSON *holder)
{
    if (holder)
        cJSON_Delete(holder);
    else
        free(text);
}

/* Reads the seen object at sc into set; false when its text is not what
 * the scanner expects (the set then holds what it read so far). */
static bool scan_seen(scan *sc, state_seen *set)
{
    if (!scan_char(sc, '{'))
        return false;
    if (scan_char(sc, '}'))
        return true;
    do {
        const char *key, *key_end, *value;
        if (!scan_string(sc, &key))
            return false;
        key_end = sc->p;
        if (!scan_char(sc, ':'))
            return false;
        scan_space(sc);
        if (sc->p >= sc->end || *sc->p != '"') {
            if (!scan_skip(sc)) /* not a time: dropped */
                return false;
            continue;
        }
        if (!scan_string(sc, &value))
            return false;
        cJSON *key_holder, *value_holder;
        char *id = token_text(key, key_end, &key_holder);
        char *time = token_text(value, sc->p, &value_holder);
        bool ok = id && time && (state_seen_get(set, id) || seen_append(set, id, strlen(id), time, strlen(time)));
        token_free(id, key_holder);
        token_free(time, value_holder);
        if (!ok)
            return false;
    } while (scan_char(sc, ','));
    return scan_char(sc, '}');
}

/*
 * Takes state.report.seen out of text (len bytes, malloc'd) into set,
 * leaving an empty object in its place so that cJSON parses the rest.
 * Nothing is changed when the text is not as expected.
 */
static void seen_take_text(char *text, size_t *len, state_seen *set)
{
    scan sc = {text, text + *len};
    if (!scan_member(&sc, SEEN_SECTION) || !scan_member(&sc, SEEN_MEMBER))
        return;
    char *start = (char *)sc.p;
    if (!scan_seen(&sc, set)) {
        seen_clear(set);
        return;
    }
    char *end = (char *)sc.p;
    start[0] = '{';
    start[1] = '}';
    memmove(start + 2, end, (size_t)(text + *len - end));
    *len -= (size_t)(end - start) - 2;
    text[*len] = '\0';
}

/* Members put into the tree's seen object (an older file the scanner gave
 * up on, or a caller) join the set, and the object is emptied: the first
 * of equal ids wins, values that are not strings are dropped. */
static bool absorb_tree(state *s)
{
    cJSON *seen = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s->root, SEEN_SECTION), SEEN_MEMBER);
    if (!cJSON_IsObject(seen))
        return true;
    while (seen->child) {
        cJSON *entry = seen->child;
        if (entry->string && cJSON_IsString(entry) && !state_seen_get(&s->seen, entry->string) &&
            !seen_append(&s->seen, entry->string, strlen(entry->string), entry->valuestring,
                         strlen(entry->valuestring)))
            return false; /* the rest stays in the tree for the next try */
        cJSON_Delete(cJSON_DetachItemViaPointer(seen, entry));
    }
    return true;
}

/* ---- The document ---------------------------------------------------------------- */

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
        seen_take_text(text, &len, &s->seen);
        s->root = cJSON_ParseWithLength(text, len);
        free(text);
        if (s->root && !cJSON_IsObject(s->root)) {
            cJSON_Delete(s->root);
            s->root = NULL;
        }
        if (!s->root)
            seen_clear(&s->seen);
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
    if ((!s->root && !(s->root = cJSON_CreateObject())) || !absorb_tree(s)) {
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

state_seen *state_seen_of(state *s)
{
    (void)absorb_tree(s); /* out of memory: the rest waits in the tree for the save */
    return &s->seen;
}

/* ---- Printing the seen set back --------------------------------------------------- */

/* The escape cJSON prints for byte c in a string: 0 none, 'u' \u00XX, else the letter after the backslash. */
static char json_escape(unsigned char c)
{
    static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";
    if (c > 31 && c != '"' && c != '\\')
        return 0;
    const char *at = c ? strchr(from, c) : NULL;
    return at ? to[at - from] : 'u';
}

/* A string as cJSON prints it: quoted, with its escapes. */
static size_t json_string_len(const char *str)
{
    size_t n = 2;
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        char e = json_escape(*p);
        n += e == 0 ? 1 : e == 'u' ? 6 : 2;
    }
    return n;
}

static char *json_string_put(char *out, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    *out++ = '"';
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        char e = json_escape(*p);
        if (e == 0) {
            *out++ = (char)*p;
            continue;
        }
        *out++ = '\\';
        *out++ = e;
        if (e == 'u') {
            memcpy(out, "00", 2);
            out[2] = hex[*p >> 4];
            out[3] = hex[*p & 15];
            out += 4;
        }
    }
    *out++ = '"';
    return out;
}

/* The length of the set printed as a JSON object. */
static size_t seen_text_len(const state_seen *set)
{
    size_t n = 2;
    seen_iter it = {set->first, 0};
    for (char *id; (id = seen_next(&it)) != NULL;)
        n += json_string_len(id) + 1 + json_string_len(record_time(id)) + 1;
    return set->count ? n - 1 : n;
}

static char *seen_text_put(const state_seen *set, char *out)
{
    *out++ = '{';
    seen_iter it = {set->first, 0};
    bool first = true;
    for (char *id; (id = seen_next(&it)) != NULL; first = false) {
        if (!first)
            *out++ = ',';
        out = json_string_put(out, id);
        *out++ = ':';
        out = json_string_put(out, record_time(id));
    }
    *out++ = '}';
    return out;
}

/* The seen object in the tree that stands for the set (created when the
 * set has entries), NULL when there is none. */
static cJSON *seen_placeholder(state *s)
{
    cJSON *section = cJSON_GetObjectItemCaseSensitive(s->root, SEEN_SECTION);
    cJSON *seen = cJSON_IsObject(section) ? cJSON_GetObjectItemCaseSensitive(section, SEEN_MEMBER) : NULL;
    if (cJSON_IsObject(seen) || s->seen.count == 0)
        return cJSON_IsObject(seen) ? seen : NULL;
    if (!(section = state_section(s, SEEN_SECTION)))
        return NULL;
    cJSON *fresh = cJSON_CreateObject();
    if (!fresh)
        return NULL;
    if (seen ? !cJSON_ReplaceItemInObjectCaseSensitive(section, SEEN_MEMBER, fresh)
             : !cJSON_AddItemToObject(section, SEEN_MEMBER, fresh)) {
        cJSON_Delete(fresh);
        return NULL;
    }
    return fresh;
}

/*
 * The document's text: cJSON prints the tree with a mark where the seen
 * object stands (a raw value for the moment), and the set is printed into
 * the mark's place, so its entries are never cJSON nodes.
 */
static MUST_CHECK error_code print_document(state *s, char **out, size_t *out_len, error_info *err)
{
    if (!absorb_tree(s))
        return error_set(err, ERR_NOMEM, "out of memory");
    cJSON *seen = seen_placeholder(s);
    if (!seen && s->seen.count > 0)
        return error_set(err, ERR_NOMEM, "out of memory");
    static char mark[] = SAVE_MARK;
    int type = seen ? seen->type : 0;
    if (seen) {
        seen->type = (type & ~0xFF) | cJSON_Raw;
        seen->valuestring = mark;
    }
    /* The report saves a growing state after every batch: one buffer of
     * about the last size, not a printer doubling its way up from 256 bytes. */
    size_t guess = s->saved_len + s->saved_len / 8 + 4096;
    char *doc = guess < INT_MAX ? cJSON_PrintBuffered(s->root, (int)guess, false) : cJSON_PrintUnformatted(s->root);
    if (seen) {
        seen->type = type;
        seen->valuestring = NULL;
    }
    if (!doc)
        return error_set(err, ERR_NOMEM, "out of memory while writing the state");
    size_t doc_len = strlen(doc);
    s->saved_len = doc_len;
    char *at = seen ? strchr(doc, SAVE_MARK[0]) : NULL;
    if (!at) {
        *out = doc;
        *out_len = doc_len;
        return ERR_OK;
    }
    size_t seen_len = seen_text_len(&s->seen);
    size_t len = doc_len - 1 + seen_len;
    if (len > STATE_MAX_BYTES) {
        free(doc);
        /* Written, the next load would put it aside and forget every id. */
        return error_set(err, ERR_IO,
                         "the state would be %zu bytes, over the %d MiB a state file may have (%zu incidents seen "
                         "since the cursor)",
                         len, STATE_MAX_BYTES / (1024 * 1024), s->seen.count);
    }
    char *text = malloc(len + 1);
    if (!text) {
        free(doc);
        return error_set(err, ERR_NOMEM, "out of memory while writing the state");
    }
    size_t head = (size_t)(at - doc);
    memcpy(text, doc, head);
    char *end = seen_text_put(&s->seen, text + head);
    memcpy(end, at + 1, doc_len - head - 1);
    text[len] = '\0';
    free(doc);
    *out = text;
    *out_len = len;
    return ERR_OK;
}

error_code state_save(state *s, error_info *err)
{
    cJSON_DeleteItemFromObjectCaseSensitive(s->root, "schema_version");
    if (!cJSON_AddNumberToObject(s->root, "schema_version", 1))
        return error_set(err, ERR_NOMEM, "out of memory");
    char *text = NULL;
    size_t len = 0;
    error_code rc = print_document(s, &text, &len, err);
    if (rc == ERR_OK)
        rc = platform_write_atomic(s->path, text, len, err);
    free(text);
    return rc == ERR_OK ? ERR_OK : error_prefix(err, "cannot save the state");
}

void state_free(state *s)
{
    if (!s)
        return;
    cJSON_Delete(s->root);
    seen_clear(&s->seen);
    free(s->path);
    free(s);
}
