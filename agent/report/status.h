/*
 * status.h — status.json, the snapshot inventory feeds and SIEMs read
 * (schema: PRODUCT.md section 5 and the README).
 *
 * Each part of a run owns one member of the document: the installer
 * pipeline "installer" and "deploy", the report "incidents", `run` and the single
 * commands "last_run". status_write() reads the previous file, replaces the
 * members the caller supplies, refreshes schema_version, generated_at and
 * agent, and replaces the file atomically; members not supplied keep their
 * previous value, so `update` alone does not erase the incidents.
 */
#ifndef OUTPOST_STATUS_H
#define OUTPOST_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "base/error.h"

struct cJSON;
struct newest;

#define STATUS_SCHEMA_VERSION 1
#define STATUS_MAX_BYTES (64 * 1024 * 1024)

typedef struct status_parts {
    struct cJSON *last_run;  /* replaces "last_run" when not NULL */
    struct cJSON *installer; /* replaces "installer" when not NULL */
    struct cJSON *incidents; /* replaces "incidents" when not NULL */
    struct cJSON *deploy;    /* replaces "deploy" (the fleet policy's, installer/policy.h) when not NULL */
    /* The status document the members not supplied are kept from, as the
     * caller read it (status_read); NULL: status_write reads the file. */
    const struct cJSON *previous;
    /* The report's newest items (report/newest.h), written as
     * incidents.items where incidents holds status_items_placeholder():
     * streamed from their compact form, never a tree of the whole
     * document. NULL: incidents is written as it is. */
    const struct newest *items;
} status_parts;

/* What incidents.items holds for status_write to write parts->items there
 * (a raw value no JSON text contains). Caller owns it; NULL when out of
 * memory. */
struct cJSON *status_items_placeholder(void);

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
    const char *started_at;       /* ISO 8601 UTC */
    const char *finished_at;      /* ISO 8601 UTC */
    const char *result;           /* "ok" | "partial" | "failed" */
    int exit_code;                /* the run's exit code */
    const struct cJSON *errors;   /* array of {stage, message} (status_run_error);
                                     copied; NULL: [] */
    const struct cJSON *previous; /* the previous status file's last_run, which
                                     last_success_at and failing_since carry on
                                     from; NULL: none */
} status_run;

/* Whether a run's exit code counts as a success (0, or 3010: a deploy that
 * asks for a reboot). */
bool status_run_succeeded(int exit_code);

/*
 * The one builder of "last_run" (PRODUCT.md section 5): {started_at,
 * finished_at, result, exit_code, errors, last_success_at, failing_since},
 * in that order. last_success_at is this run's finished_at when it
 * succeeded, else the previous one's; failing_since is null after a
 * success, else the start of the first failed run since the last success. *out is the
 * caller's (cJSON_Delete), NULL on failure. ERR_NOMEM when memory runs out:
 * the run then knows its verdict was not written.
 */
MUST_CHECK error_code status_last_run(const status_run *run, struct cJSON **out, error_info *err);

/* Appends {stage, message} to errors (a cJSON array). ERR_NOMEM leaves
 * errors as it was. */
MUST_CHECK error_code status_run_error(struct cJSON *errors, const char *stage, const char *message, error_info *err);

/* The "agent" object: version, hostname, os, arch. Caller owns it. */
struct cJSON *status_agent_object(void);

/*
 * A run that could not write the status file leaves this small file
 * (STATUS_UNRECORDED_FILE in state_dir: {"at", "exit_code", "message"}) so
 * that the next `status` does not show the previous, older outcome as
 * current; the next successful status write removes it. Best effort: a
 * state directory that takes no write at all leaves only max_age to notice.
 */
#define STATUS_UNRECORDED_FILE "status.unrecorded.json"
void status_note_unrecorded(const config *cfg, const char *at, int exit_code, const char *message);

/* The note above, or NULL when there is none (or it cannot be read). Caller owns it. */
struct cJSON *status_read_unrecorded(const config *cfg);

/* What `status` judges against (PRODUCT.md section 5). */
typedef struct status_limits {
    int64_t max_age_s;        /* ATTENTION (exit 75) when the last success is older */
    const char *max_age_from; /* the setting that gave max_age_s, for the message */
    int64_t max_failing_s;    /* ATTENTION when failures have lasted longer */
} status_limits;

/* `status` says ATTENTION this long before the trusted mirror root expires
 * (PRODUCT.md 8.1). */
#define STATUS_ROOT_WARN_S (14 * 86400)

typedef struct status_verdict {
    char text[2048]; /* "OK: ..." or "ATTENTION: a; b" */
    bool attention;
    int exit_code; /* what `status` exits with */
} status_verdict;

/*
 * The verdict on a status document (NULL: no status file yet), at now_s,
 * with the note of an unrecorded run (NULL: none) and the machine's current
 * boot id (a reboot a deploy asked for is pending while it is unchanged).
 * What needs a person: no run finished yet (exit 75), a failed last run (its
 * exit code), failures lasting longer than max_failing, a last success older
 * than max_age (exit 75 when the last run itself succeeded), a run that
 * could not record its outcome, a failed deploy, a pending reboot.
 */
void status_judge(const struct cJSON *doc, const struct cJSON *unrecorded, const status_limits *limits, int64_t now_s,
                  const char *boot_id, status_verdict *v);

/* "2h 5m", "3d 1h" from seconds, for a person. */
void status_age_text(int64_t seconds, char *buf, size_t size);

/* The verdict as the "verdict" member `status --json` adds: {"attention",
 * "text", "exit_code"}. NULL when out of memory. */
struct cJSON *status_verdict_object(const status_verdict *v);

#endif
