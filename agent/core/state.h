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

#endif
