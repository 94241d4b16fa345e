/*
 * strmap.h — a hash map from strings to pointers, for sets that grow with
 * the backlog (the report's working set of listed incidents) where a cJSON
 * object's member lookup, a linear scan, would make a run quadratic. The
 * report's seen ids have an index of their own in core/state.c, with the
 * same hash (strmap_hash).
 *
 * Keys are borrowed, not copied: each must stay alive and unchanged while
 * it is in the map (the report keys by strings inside the items it maps
 * to). Values are borrowed too and must not be NULL (NULL is "absent").
 */
#ifndef OUTPOST_STRMAP_H
#define OUTPOST_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct strmap strmap;

/* An empty map; NULL on out of memory. Free with strmap_free. */
strmap *strmap_new(void);

void strmap_free(strmap *m);

/* The value of key, NULL when absent (or m is NULL). */
void *strmap_get(const strmap *m, const char *key);

/* Sets key to value (replacing the key and value of an equal key). false on
 * out of memory, the map as it was. */
bool strmap_put(strmap *m, const char *key, void *value);

/* Removes key; returns its value, NULL when it was absent. */
void *strmap_remove(strmap *m, const char *key);

/* The number of keys. */
size_t strmap_count(const strmap *m);

/* The map's hash of a string (FNV-1a), for an index of its own that
 * probes like the map (state.c's seen set keeps 4-byte positions). */
uint64_t strmap_hash(const char *s);

#endif
