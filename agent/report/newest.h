/*
 * newest.h — the newest keep_incidents items the report keeps for
 * status.json, held compactly: each item as its unformatted JSON text in one
 * record (with its id and trigger_time beside it for the order), not as a
 * cJSON tree. With chains of a hundred events, the trees were most of the
 * report's memory (PRODUCT.md section 7); the text is about a fifth of it.
 *
 * The order is incident_compare_newest's (newest first, then by id); an item
 * whose id is already held replaces it. The store never holds more than
 * keep items: an item older than a full store's last is not kept at all.
 * status.json's items are written from it one item at a time
 * (newest_print), and read back into it from a status file without parsing
 * that file whole (newest_load_status).
 */
#ifndef OUTPOST_NEWEST_H
#define OUTPOST_NEWEST_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct cJSON;

/* The largest item held (its unformatted text): larger ones are refused
 * (ERR_PROTOCOL), as incidents.jsonl's reader refuses such a line. */
#define NEWEST_ITEM_MAX (16 * 1024 * 1024)

typedef struct newest newest;

/* A store for the newest keep items (keep <= 0: none are kept). NULL when
 * out of memory. newest_free(NULL) does nothing. */
newest *newest_new(int keep);
void newest_free(newest *n);

/*
 * Keeps a compact copy of item (a JSON object; item stays the caller's)
 * when it is among the newest keep, replacing the item of the same id, and
 * drops the oldest beyond keep. ERR_OK whether kept or not; ERR_NOMEM, or
 * ERR_PROTOCOL for an item over NEWEST_ITEM_MAX, leave the store as it was.
 */
MUST_CHECK error_code newest_add(newest *n, const struct cJSON *item, error_info *err);

/* How many items are held. */
size_t newest_count(const newest *n);

/* The i-th newest item (i < newest_count), parsed anew: the caller owns
 * *out (cJSON_Delete). ERR_NOMEM when out of memory. */
MUST_CHECK error_code newest_item(const newest *n, size_t i, struct cJSON **out, error_info *err);

/* The "hosts" array over the held items (incident_hosts), parsing one
 * item at a time. *out is the caller's. ERR_NOMEM when out of memory. */
MUST_CHECK error_code newest_hosts(const newest *n, struct cJSON **out, error_info *err);

/*
 * Writes the held items as the JSON array cJSON_Print prints as a member's
 * value at depth (the tabs before that member: 2 for status.json's
 * incidents.items, 0 for the array alone), byte for byte, through put
 * (false: stop, ERR_IO; the writer keeps its own error). Nothing is parsed:
 * the text held is laid out as cJSON lays it out.
 */
MUST_CHECK error_code newest_print(const newest *n, int depth, bool (*put)(void *user, const void *data, size_t len),
                                   void *user, error_info *err);

/*
 * Reads a status document's text: its incidents.items join n (oldest
 * dropped beyond keep; an id n holds already stays n's), and *rest is the
 * document without its "incidents" member, parsed (the caller owns it).
 * Only one item at a time is ever parsed. text is changed (the incidents
 * member is cut out of it). Text that is not a JSON object, or an item that
 * does not parse: ERR_IO, n as it was, *rest NULL.
 */
MUST_CHECK error_code newest_load_status(newest *n, char *text, size_t len, struct cJSON **rest, error_info *err);

#endif
