/*
 * status.h — status.json, the snapshot inventory feeds and SIEMs read
 * (schema: PRODUCT.md section 5 and the README).
 *
 * Each part of a run owns one member of the document: the installer
 * pipeline "installer", the report "incidents", `run` and the single
 * commands "last_run". status_write() reads the previous file, replaces the
 * members the caller supplies, refreshes schema_version, generated_at and
 * agent, and replaces the file atomically; members not supplied keep their
 * previous value, so `update` alone does not erase the incidents.
 */
#ifndef OUTPOST_STATUS_H
#define OUTPOST_STATUS_H

#include "core/config.h"
#include "base/error.h"

struct cJSON;

#define STATUS_SCHEMA_VERSION 1
#define STATUS_MAX_BYTES (64 * 1024 * 1024)

typedef struct status_parts {
    struct cJSON *last_run;  /* replaces "last_run" when not NULL */
    struct cJSON *installer; /* replaces "installer" when not NULL */
    struct cJSON *incidents; /* replaces "incidents" when not NULL */
    /* The status document the members not supplied are kept from, as the
     * caller read it (status_read); NULL: status_write reads the file. */
    const struct cJSON *previous;
} status_parts;

/*
 * Writes the status file (cfg->report.status_file under state_dir). The
 * parts stay the caller's (they are printed where they are, not copied).
 * A previous file that does not parse is replaced.
 */
MUST_CHECK error_code status_write(const config *cfg, const status_parts *parts, error_info *err);

/*
 * Reads the current status file. *doc is the caller's (cJSON_Delete).
 * ERR_NOT_FOUND when there is none yet.
 */
MUST_CHECK error_code status_read(const config *cfg, struct cJSON **doc, error_info *err);

/* What a run (`run`, or `report` alone) did, for status.json's "last_run". */
typedef struct status_run {
    const char *started_at;     /* ISO 8601 UTC */
    const char *finished_at;    /* ISO 8601 UTC */
    const char *result;         /* "ok" | "partial" | "failed" */
    int exit_code;              /* the run's exit code */
    const struct cJSON *errors; /* array of {stage, message} (status_run_error);
                                   copied; NULL: [] */
} status_run;

/*
 * The one builder of "last_run" (PRODUCT.md section 5): {started_at,
 * finished_at, result, exit_code, errors}, in that order. *out is the
 * caller's (cJSON_Delete), NULL on failure. ERR_NOMEM when memory runs out:
 * the run then knows its verdict was not written.
 */
MUST_CHECK error_code status_last_run(const status_run *run, struct cJSON **out, error_info *err);

/* Appends {stage, message} to errors (a cJSON array). ERR_NOMEM leaves
 * errors as it was. */
MUST_CHECK error_code status_run_error(struct cJSON *errors, const char *stage, const char *message, error_info *err);

/* The "agent" object: version, hostname, os, arch. Caller owns it. */
struct cJSON *status_agent_object(void);

#endif
