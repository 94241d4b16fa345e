/*
 * jsonx.h — reading and writing cJSON trees the same way everywhere.
 *
 * Readers follow a dotted path ("action.kind") and, given a jsonx_reader,
 * name that path in the first error they meet, so a user reads
 * "incidents/list: resources[3].trigger_time is not a string" and not
 * "bad answer". Absent and null read alike (the fallback, or NULL). With a
 * NULL reader they are lenient: a value of the wrong type reads as absent
 * and nothing is reported (for outpost's own files, which it rewrites).
 * Returned strings point into the tree and live as long as it does.
 *
 * Writers: add a string or null, and set a member (replace or add) taking
 * ownership of the value in every case.
 */
#ifndef OUTPOST_JSONX_H
#define OUTPOST_JSONX_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* Where a field lives, for error messages: "incidents/list: resources[3].user". */
typedef struct jsonx_reader {
    const char *where;  /* names the document: "incidents/list", "token exchange" */
    const char *prefix; /* the object's place in it, "resources[3]", or "" */
    error_code code;    /* what a failure is (ERR_PROTOCOL for the platform's answers) */
    error_info *err;    /* gets the first failure; may be NULL */
    error_code rc;      /* the first failure; ERR_OK while none */
} jsonx_reader;

/* A reader with no failure yet; prefix may be NULL for "". */
void jsonx_reader_init(jsonx_reader *r, const char *where, const char *prefix, error_code code, error_info *err);

/*
 * Records that the field at path is wrong (what: "is not a string"), unless
 * a failure is recorded already: "<where>: <prefix>.<path> <what>", or
 * "<where>: field `<path>` <what>" without a prefix. Returns r->rc.
 */
error_code jsonx_fail(jsonx_reader *r, const char *path, const char *what);

/* The value at path from obj, or NULL when a step is absent or null. An
 * intermediate that is not an object fails ("is not an object"). */
const cJSON *jsonx_walk(jsonx_reader *r, const cJSON *obj, const char *path);

/* The string at path; NULL when absent, null or (failing) not a string. */
const char *jsonx_string(jsonx_reader *r, const cJSON *obj, const char *path);

/* As jsonx_string, and NULL for "" too (ids, tokens, names). */
const char *jsonx_nonempty(jsonx_reader *r, const cJSON *obj, const char *path);

/* The boolean at path, fallback when absent, null or (failing) not one. */
bool jsonx_bool(jsonx_reader *r, const cJSON *obj, const char *path, bool fallback);

/* The number at path; *present tells whether there was one (0 when not). */
double jsonx_number(jsonx_reader *r, const cJSON *obj, const char *path, bool *present);

/* The integer at path: a JSON number without fraction within int64, or with
 * allow_string a decimal string (protobuf's JSON form of int64). fallback
 * when absent, null or (failing) not one. */
int64_t jsonx_int64(jsonx_reader *r, const cJSON *obj, const char *path, bool allow_string, int64_t fallback);

/* The member name of o as an integer from min to 2^53 - 1, into *out: a
 * JSON number without fraction. Above 2^53 a JSON number (a double in
 * cJSON and most readers) no longer holds every integer exactly, so two
 * values could read as one: the signed mirror documents refuse them.
 * False (nothing set) when absent or anything else. */
bool jsonx_exact_integer(const cJSON *o, const char *name, int64_t min, int64_t *out);

/* The array at path whose elements are all strings; NULL when absent, null
 * or (failing) anything else. */
const cJSON *jsonx_string_array(jsonx_reader *r, const cJSON *obj, const char *path);

/* Adds name: value, or name: null when value is NULL. False on out of memory. */
bool jsonx_add_string_or_null(cJSON *obj, const char *name, const char *value);

/*
 * Sets member name of obj to value, replacing a member of that name or
 * adding one. Takes value in every case: on failure (obj NULL, value NULL,
 * out of memory) value is deleted and false returned.
 */
bool jsonx_set(cJSON *obj, const char *name, cJSON *value);

#endif
