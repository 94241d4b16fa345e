/*
 * state.h — state.json: what outpost remembers between runs (cursor,
 * seen-incident window, installed/deployed versions, retry-after).
 *
 * The document is a JSON object with one section per owner; each module
 * reads and writes only its own section through state_section(), so
 * modules can add fields without touching this one, and the others call
 * the owner's functions instead of touching its members:
 *   "installer"  installer/installer_state.c
 *   "report"     report/report.c
 *   "run"        net/retry_after.c (the platform's Retry-After)
 *   "publish"    installer/publish.c;  "mirror"  installer/source_mirror.c Changes are transactions: modify the
 * sections in memory, then state_save() replaces the file atomically; a crash before that leaves the previous state,
 * intact.
 */
#ifndef OUTPOST_STATE_H
#define OUTPOST_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct cJSON;
typedef struct state state;

#define STATE_MAX_BYTES (16 * 1024 * 1024)

/*
 * Loads state_dir/state.json (an absent file gives an empty state). A file
 * that does not parse or is too large is moved aside to state.json.bad
 * with a warning and an empty state is returned, so one damaged file never
 * stops every later run. *out is the caller's, freed with state_free.
 */
MUST_CHECK error_code state_load(const char *state_dir, state **out, error_info *err);

/* The section called name (an object), created when missing. Owned by the
 * state; valid until state_free. NULL only on out of memory. */
struct cJSON *state_section(state *s, const char *name);

/* Writes the whole document to state.json atomically. */
MUST_CHECK error_code state_save(state *s, error_info *err);

void state_free(state *s);

/*
 * The report's seen set, section "report" member "seen": {incident id:
 * trigger time text}, the one part of the state that grows with the
 * backlog (tens of thousands of ids during a run). It is not kept as a
 * cJSON tree (a node, a key and a value per id, over 150 bytes each) but
 * as records packed into large blocks with a hash index: state_load reads
 * the member's text straight into it, and state_save prints it back in
 * place, byte for byte as cJSON would (same order, same escapes), so the
 * file's shape is unchanged both ways (an older outpost reads it, and its
 * files load here). Ids are unique (a file's later duplicates are
 * dropped, as lookups found the first anyway); members whose value is not
 * a string are dropped on load. Anything put into the tree's "seen"
 * object directly is taken into the set on the next access or save.
 */
typedef struct state_seen state_seen;

/* The seen set of s; owned by the state, valid until state_free. */
state_seen *state_seen_of(state *s);

/* The time text of id, NULL when id is not in the set. Valid until the
 * set next changes. */
const char *state_seen_get(const state_seen *set, const char *id);

/* Sets id's time (copied; an id already there moves to the end, as a
 * removed and re-added member would). false on out of memory, the set as
 * it was. */
bool state_seen_put(state_seen *set, const char *id, const char *time);

/* Removes id; false when it was absent. */
bool state_seen_remove(state_seen *set, const char *id);

size_t state_seen_count(const state_seen *set);

/* Keeps the entries for which keep(id, time, user) is true, in order, and
 * gives back the room of the others. */
void state_seen_filter(state_seen *set, bool (*keep)(const char *id, const char *time, void *user), void *user);

#endif
