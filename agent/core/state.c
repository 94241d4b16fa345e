/* state.c — load, section access and atomic save of state.json, and the
 * report's seen set held compactly beside the cJSON document (see state.h). */
#include "core/state.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/strmap.h"
#include "core/log.h"
#include "platform/platform.h"

#define SEEN_SECTION "report"
#define SEEN_MEMBER "seen"
#define SEEN_BLOCK (64 * 1024) /* bytes of records per block, unless one record is longer */
/* Stands for the seen set in the printed document: cJSON escapes every
 * control character inside strings, so the byte appears nowhere else. */
#define SAVE_MARK "\001"

/* ---- The seen set ------------------------------------------------------------------ */

/*
 * A record is a flag byte (1 live, 0 removed), the id and the time, each
 * NUL-terminated, packed one after another into blocks of SEEN_BLOCK bytes
 * that never move (a longer record gets a block of its own, spanning as
 * many block numbers as it needs). A record is named by a 32-bit position,
 * block number × SEEN_BLOCK + offset, so the index is an open-addressing
 * table of 4-byte positions (a quarter of a pointer map's size), probed
 * with the ids' hash and compared by the ids in the records. Removed
 * records keep their room until the next filter compacts the blocks.
 */
typedef struct seen_block {
    char *data; /* NULL: a number taken by the long record before it */
    size_t used, cap;
} seen_block;

struct state_seen {
    seen_block *blocks;
    size_t block_count, block_cap;
    uint32_t *slots;   /* 1 + the position of a live record's id; 0: free */
    size_t slot_cap;   /* a power of two, or 0 */
    size_t count;      /* live records */
    size_t dead_bytes; /* room of removed records */
};

struct state {
    char *path;       /* state_dir/state.json */
    cJSON *root;      /* the document; always an object, its seen object empty */
    state_seen seen;  /* the seen set, out of the tree */
    size_t saved_len; /* length of the last document printed (the seen set aside), 0 before the first */
};

#define SEEN_MAX_POSITION (UINT32_MAX - 1)

static void seen_clear(state_seen *set)
{
    for (size_t i = 0; i < set->block_count; i++)
        free(set->blocks[i].data);
    free(set->blocks);
    free(set->slots);
    *set = (state_seen){0};
}

static char *seen_at(const state_seen *set, uint32_t slot)
{
    size_t pos = (size_t)slot - 1;
    return set->blocks[pos / SEEN_BLOCK].data + pos % SEEN_BLOCK;
}

/* The record's time: after its id. */
static const char *record_time(const char *id)
{
    return id + strlen(id) + 1;
}

/* The slot holding id, or the free slot where it would go (slot_cap > 0). */
static size_t seen_find(const state_seen *set, const char *id)
{
    size_t mask = set->slot_cap - 1;
    size_t i = (size_t)(strmap_hash(id) & mask);
    while (set->slots[i] && strcmp(seen_at(set, set->slots[i]), id) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Room for one more id at most three quarters full (probes stay short). */
static bool seen_index_room(state_seen *set)
{
    if ((set->count + 1) * 4 <= set->slot_cap * 3)
        return true;
    state_seen grown = *set;
    grown.slot_cap = set->slot_cap ? set->slot_cap * 2 : 256;
    if (!(grown.slots = calloc(grown.slot_cap, sizeof *grown.slots)))
        return false;
    for (size_t i = 0; i < set->slot_cap; i++)
        if (set->slots[i])
            grown.slots[seen_find(&grown, seen_at(set, set->slots[i]))] = set->slots[i];
    free(set->slots);
    *set = grown;
    return true;
}

/* Writes a record at the end of the blocks; its position (1-based), 0 on out of memory. */
static uint32_t seen_write(state_seen *set, const char *id, size_t id_len, const char *time, size_t time_len)
{
    size_t need = 1 + id_len + 1 + time_len + 1;
    seen_block *last = set->block_count ? &set->blocks[set->block_count - 1] : NULL;
    if (!last || !last->data || last->cap - last->used < need) {
        size_t spans = (need + SEEN_BLOCK - 1) / SEEN_BLOCK;
        if ((set->block_count + spans) * (size_t)SEEN_BLOCK > SEEN_MAX_POSITION)
            return 0;
        if (set->block_count + spans > set->block_cap) {
            size_t cap =
                set->block_cap * 2 > set->block_count + spans ? set->block_cap * 2 : set->block_count + spans + 16;
            seen_block *grown = realloc(set->blocks, cap * sizeof *grown);
            if (!grown)
                return 0;
            set->blocks = grown;
            set->block_cap = cap;
        }
        size_t cap = spans * SEEN_BLOCK;
        char *data = malloc(cap);
        if (!data)
            return 0;
        last = &set->blocks[set->block_count];
        *last = (seen_block){.data = data, .cap = cap};
        for (size_t i = 1; i < spans; i++)
            set->blocks[set->block_count + i] = (seen_block){0};
        set->block_count += spans;
    }
    char *rec = last->data + last->used;
    rec[0] = 1;
    memcpy(rec + 1, id, id_len);
    rec[1 + id_len] = '\0';
    memcpy(rec + 2 + id_len, time, time_len);
    rec[2 + id_len + time_len] = '\0';
    size_t block = (size_t)(last - set->blocks);
    uint32_t slot = (uint32_t)(block * SEEN_BLOCK + last->used + 1 + 1); /* the id's position, 1-based */
    last->used += need;
    return slot;
}

/* Appends a new id (not in the set); false on out of memory, the set as it was. */
static bool seen_append(state_seen *set, const char *id, size_t id_len, const char *time, size_t time_len)
{
    if (!seen_index_room(set))
        return false;
    uint32_t slot = seen_write(set, id, id_len, time, time_len);
    if (!slot)
        return false;
    set->slots[seen_find(set, id)] = slot;
    set->count++;
    return true;
}

/* Marks the record of id (a pointer into it) removed. */
static void seen_retire(state_seen *set, char *id)
{
    id[-1] = 0;
    set->dead_bytes += 3 + strlen(id) + strlen(record_time(id));
}

/* Walks the live records in order: seen_next gives each id, NULL at the end. */
typedef struct seen_iter {
    size_t block, at;
} seen_iter;

static char *seen_next(const state_seen *set, seen_iter *it)
{
    for (; it->block < set->block_count; it->block++, it->at = 0) {
        const seen_block *b = &set->blocks[it->block];
        while (b->data && it->at < b->used) {
            char *rec = b->data + it->at;
            it->at += 3 + strlen(rec + 1) + strlen(record_time(rec + 1));
            if (rec[0])
                return rec + 1;
        }
    }
    return NULL;
}

const char *state_seen_get(const state_seen *set, const char *id)
{
    if (!set || !id || set->count == 0)
        return NULL;
    uint32_t slot = set->slots[seen_find(set, id)];
    return slot ? record_time(seen_at(set, slot)) : NULL;
}

bool state_seen_remove(state_seen *set, const char *id)
{
    if (!set || !id || set->count == 0)
        return false;
    size_t mask = set->slot_cap - 1;
    size_t i = seen_find(set, id);
    if (!set->slots[i])
        return false;
    seen_retire(set, seen_at(set, set->slots[i]));
    /* Backward-shift deletion (as strmap.c): no tombstones. */
    size_t gap = i;
    for (size_t j = (i + 1) & mask; set->slots[j]; j = (j + 1) & mask) {
        size_t home = (size_t)(strmap_hash(seen_at(set, set->slots[j])) & mask);
        if (((j - home) & mask) >= ((j - gap) & mask)) {
            set->slots[gap] = set->slots[j];
            gap = j;
        }
    }
    set->slots[gap] = 0;
    set->count--;
    return true;
}

bool state_seen_put(state_seen *set, const char *id, const char *time)
{
    if (!set || !id || !time)
        return false;
    if (!state_seen_get(set, id))
        return seen_append(set, id, strlen(id), time, strlen(time));
    /* Already there: a new record at the end takes its slot. */
    size_t i = seen_find(set, id);
    char *old = seen_at(set, set->slots[i]);
    uint32_t slot = seen_write(set, id, strlen(id), time, strlen(time));
    if (!slot)
        return false;
    seen_retire(set, old);
    set->slots[i] = slot;
    return true;
}

size_t state_seen_count(const state_seen *set)
{
    return set ? set->count : 0;
}

void state_seen_filter(state_seen *set, bool (*keep)(const char *id, const char *time, void *user), void *user)
{
    seen_iter it = {0, 0};
    for (char *id; (id = seen_next(set, &it)) != NULL;)
        if (!keep(id, record_time(id), user))
            state_seen_remove(set, id);
    if (set->dead_bytes == 0)
        return;
    /* Compact into new blocks and a new index; out of memory leaves the set as it is. */
    state_seen packed = {0};
    it = (seen_iter){0, 0};
    for (char *id; (id = seen_next(set, &it)) != NULL;) {
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
    cJSON *seen =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s->root, SEEN_SECTION), SEEN_MEMBER);
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
    seen_iter it = {0, 0};
    for (char *id; (id = seen_next(set, &it)) != NULL;)
        n += json_string_len(id) + 1 + json_string_len(record_time(id)) + 1;
    return set->count ? n - 1 : n;
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

/* The seen set written through f as a JSON object, a buffer at a time. */
static MUST_CHECK error_code seen_text_write(const state_seen *set, platform_atomic_file *f, error_info *err)
{
    enum { BUFFER = 64 * 1024 };
    char *buf = malloc(BUFFER);
    if (!buf)
        return error_set(err, ERR_NOMEM, "out of memory while writing the state");
    char *out = buf;
    *out++ = '{';
    seen_iter it = {0, 0};
    bool first = true;
    error_code rc = ERR_OK;
    for (char *id; rc == ERR_OK && (id = seen_next(set, &it)) != NULL; first = false) {
        size_t need = 1 + json_string_len(id) + 1 + json_string_len(record_time(id)) + 1;
        if ((size_t)(out - buf) + need > BUFFER) {
            rc = platform_atomic_write(f, buf, (size_t)(out - buf), err);
            out = buf;
        }
        /* An entry larger than the buffer: the state's own limit is far
         * above any id, but never written past the buffer. */
        char *entry = need > BUFFER ? malloc(need) : out, *p = entry;
        if (!entry) {
            rc = rc == ERR_OK ? error_set(err, ERR_NOMEM, "out of memory while writing the state") : rc;
            break;
        }
        if (!first)
            *p++ = ',';
        p = json_string_put(p, id);
        *p++ = ':';
        p = json_string_put(p, record_time(id));
        if (entry != out) {
            if (rc == ERR_OK)
                rc = platform_atomic_write(f, entry, (size_t)(p - entry), err);
            free(entry);
        } else {
            out = p;
        }
    }
    *out++ = '}';
    if (rc == ERR_OK)
        rc = platform_atomic_write(f, buf, (size_t)(out - buf), err);
    free(buf);
    return rc;
}

/*
 * Writes the document: cJSON prints the tree with a mark where the seen
 * object stands (a raw value for the moment), and the set is written in
 * the mark's place as the file is written, so its entries are never cJSON
 * nodes and the whole text is never held at once.
 */
static MUST_CHECK error_code write_document(state *s, error_info *err)
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
    /* The tree without the set is small; the guess is the last print's. */
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
    size_t head = at ? (size_t)(at - doc) : doc_len;
    if (at) {
        size_t len = doc_len - 1 + seen_text_len(&s->seen);
        if (len > STATE_MAX_BYTES) {
            free(doc);
            /* Written, the next load would put it aside and forget every id. */
            return error_set(err, ERR_IO,
                             "the state would be %zu bytes, over the %d MiB a state file may have (%zu incidents seen "
                             "since the cursor)",
                             len, STATE_MAX_BYTES / (1024 * 1024), s->seen.count);
        }
    }
    platform_atomic_file *f = NULL;
    error_code rc = platform_atomic_open(s->path, false, &f, err);
    if (rc == ERR_OK)
        rc = platform_atomic_write(f, doc, head, err);
    if (rc == ERR_OK && at && (rc = seen_text_write(&s->seen, f, err)) == ERR_OK)
        rc = platform_atomic_write(f, at + 1, doc_len - head - 1, err);
    free(doc);
    if (rc != ERR_OK) {
        platform_atomic_abort(f);
        return rc;
    }
    return platform_atomic_commit(f, NULL, err);
}

error_code state_save(state *s, error_info *err)
{
    cJSON_DeleteItemFromObjectCaseSensitive(s->root, "schema_version");
    if (!cJSON_AddNumberToObject(s->root, "schema_version", 1))
        return error_set(err, ERR_NOMEM, "out of memory");
    error_code rc = write_document(s, err);
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
