/* strmap.c — open addressing with linear probing on an FNV-1a hash, and
 * backward-shift deletion (no tombstones, so a map that sees as many
 * removals as insertions does not fill up). See strmap.h. */
#include "base/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
    const char *key; /* NULL: free */
    void *value;
} slot;

struct strmap {
    slot *slots;
    size_t cap; /* a power of two */
    size_t count;
};

uint64_t strmap_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The slot holding key, or the free slot where it would go. */
static size_t find(const slot *slots, size_t cap, const char *key)
{
    size_t i = (size_t)(strmap_hash(key) & (cap - 1));
    while (slots[i].key && strcmp(slots[i].key, key) != 0)
        i = (i + 1) & (cap - 1);
    return i;
}

static bool grow(strmap *m)
{
    size_t cap = m->cap * 2;
    slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            slots[find(slots, cap, m->slots[i].key)] = m->slots[i];
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return true;
}

strmap *strmap_new(void)
{
    strmap *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->cap = 64;
    m->slots = calloc(m->cap, sizeof *m->slots);
    if (!m->slots) {
        free(m);
        return NULL;
    }
    return m;
}

void strmap_free(strmap *m)
{
    if (!m)
        return;
    free(m->slots);
    free(m);
}

void *strmap_get(const strmap *m, const char *key)
{
    if (!m || !key)
        return NULL;
    return m->slots[find(m->slots, m->cap, key)].value;
}

bool strmap_put(strmap *m, const char *key, void *value)
{
    if (!m || !key || !value)
        return false;
    size_t i = find(m->slots, m->cap, key);
    if (m->slots[i].key) {
        m->slots[i] = (slot){key, value};
        return true;
    }
    /* At most three quarters full: probes stay short, and a map of the
     * report's seen ids stays small beside the ids themselves. */
    if ((m->count + 1) * 4 > m->cap * 3) {
        if (!grow(m))
            return false;
        i = find(m->slots, m->cap, key);
    }
    m->slots[i] = (slot){key, value};
    m->count++;
    return true;
}

void *strmap_remove(strmap *m, const char *key)
{
    if (!m || !key)
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = find(m->slots, m->cap, key);
    void *value = m->slots[i].value;
    if (!m->slots[i].key)
        return NULL;
    /* Shift back the entries of the run after i that may not stay past the
     * gap (their home is at or before it, cyclically). */
    size_t gap = i;
    for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = (size_t)(strmap_hash(m->slots[j].key) & mask);
        if (((j - home) & mask) >= ((j - gap) & mask)) {
            m->slots[gap] = m->slots[j];
            gap = j;
        }
    }
    m->slots[gap] = (slot){NULL, NULL};
    m->count--;
    return value;
}

size_t strmap_count(const strmap *m)
{
    return m ? m->count : 0;
}
