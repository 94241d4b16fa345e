/*
 * policy.h — the fleet policy (PRODUCT.md section 11): which offered
 * versions an endpoint takes (installer.target_version_prefix), when `run`
 * holds back a download or a deploy (installer.defer_on: a metered
 * connection, battery power) and when it deploys (deploy.windows, weekly
 * maintenance windows in local wall-clock time).
 *
 * Decided here from the configuration and what the platform reports (the
 * clock, the time zone's offset, the power source, the connection's cost:
 * policy_env), never in cli/ and never by asking the OS for more. The one
 * update flow's decide step (update.c, pass_decide) asks policy_pin_takes
 * and policy_deferral; `run` asks policy_deploy_gate before its deploy
 * part. What they decided is kept in state section "policy", which only
 * this module touches, and shown as status.json's "deploy" member and the
 * Windows inventory values (policy_status_section).
 *
 * A window is a range of the local wall clock. On the day the clock jumps
 * the machine's zone rules decide: a wall-clock time that does not exist
 * (spring) is in no window, so a window wholly inside the skipped hour
 * has no time that day and one partly inside it is shorter (02:00-04:00
 * on the European spring day is 03:00-04:00); a wall-clock time that
 * exists twice (autumn) is inside both times (02:00-03:00 on the autumn day
 * lasts two hours). The next window's start is the first instant the wall
 * clock shows a time inside a window.
 */
#ifndef OUTPOST_POLICY_H
#define OUTPOST_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/config.h"
#include "core/state.h"

struct cJSON;

/* ---- What the policy judges from ------------------------------------------------------ */

/* A time zone: the offset of local time from UTC at an instant (seconds
 * east), as platform_local_offset gives it. */
typedef struct policy_zone {
    error_code (*offset)(void *user, int64_t utc_s, int32_t *offset_s, error_info *err);
    void *user;
} policy_zone;

/* What the policy reads of the machine; tests hand down their own. */
typedef struct policy_env {
    int64_t (*now_s)(void *user);                              /* UTC, Unix seconds */
    const policy_zone *zone;                                   /* local time */
    bool (*metered)(void *user, char *detail, size_t size);    /* platform_network_metered */
    bool (*on_battery)(void *user, char *detail, size_t size); /* platform_on_battery */
    void *user;
} policy_env;

/* This machine's clock, zone, connection and power source (platform.h). Static. */
const policy_env *policy_machine(void);

/* ---- Maintenance windows (deploy.windows) ----------------------------------------------- */

/* Whether the local wall clock at utc_s is inside one of the count
 * windows; no window is any time. */
MUST_CHECK error_code policy_in_window(const config_window *windows, size_t count, const policy_zone *zone,
                                       int64_t utc_s, bool *inside, error_info *err);

/*
 * The first instant at or after now_s when the local wall clock is inside
 * one of the windows (now_s itself when it is): a window's start on one of
 * its days, or the moment a clock change lands inside one. Looks 16 days
 * ahead (a weekly window a spring day skips comes a week later);
 * ERR_NOT_FOUND when nothing is inside that long, which only windows
 * wholly inside skipped hours can do.
 */
MUST_CHECK error_code policy_next_window(const config_window *windows, size_t count, const policy_zone *zone,
                                         int64_t now_s, int64_t *start_s, error_info *err);

/* The local wall-clock time at utc_s as "YYYY-MM-DD HH:MM" into buf (for
 * messages); "" when the zone cannot say. */
void policy_local_text(const policy_zone *zone, int64_t utc_s, char *buf, size_t size);

/* ---- The version pin (installer.target_version_prefix) ------------------------------- */

/*
 * Whether an offered version is taken under prefix (NULL: any version):
 * it must start with prefix, and one older than installed (NULL: none)
 * only with downgrade_allowed (the mirror manifest's allow_downgrade or
 * --allow-downgrade). When it is not, reason (size bytes) says why, for
 * the status and the message: "not taken: outside target_version_prefix
 * 26.1." or "not taken: 26.1.4 is older than the installed 26.2.0 ...".
 * Without a prefix it takes everything: a downgrade is then update_decide's
 * refusal (exit 4), as before the pin existed.
 */
bool policy_pin_takes(const char *prefix, const char *offered, const char *installed, bool downgrade_allowed,
                      char *reason, size_t size);

/* ---- Deferral (installer.defer_on) ------------------------------------------------------ */

typedef enum policy_defer {
    POLICY_DEFER_NONE,
    POLICY_DEFER_METERED, /* "metered connection" */
    POLICY_DEFER_BATTERY  /* "battery power" */
} policy_defer;

/* "metered", "battery" (status.json) or "" for none. */
const char *policy_defer_name(policy_defer why);

/* "metered connection", "battery power" (messages) or "". */
const char *policy_defer_text(policy_defer why);

/* Whether `run` holds back now: what installer.defer_on names and env
 * reports, metered first. detail (size bytes) gets what env saw. */
policy_defer policy_deferral(const config_installer *installer, const policy_env *env, char *detail, size_t size);

/* ---- What the decide step records (state section "policy") ---------------------------- */

/* An offer the pin refused (version, reason, at now_s); removed by
 * policy_note_taken when a later offer is not refused. */
void policy_note_not_taken(state *s, const char *version, const char *reason, int64_t now_s);
void policy_note_taken(state *s);

/* A download `run` held back (why NONE: none now). The since-when stays
 * while the same reason holds. */
void policy_note_download_deferred(state *s, policy_defer why, const char *detail, int64_t now_s);

/* ---- `run`'s deploy ------------------------------------------------------------------- */

typedef enum policy_deploy_verdict {
    POLICY_DEPLOY_NOTHING, /* deploy.enabled off, nothing staged, or the current version is deployed */
    POLICY_DEPLOY_NOW,     /* inside a window (or none), not deferred: deploy */
    POLICY_DEPLOY_WAIT,    /* outside every window: until the next one */
    POLICY_DEPLOY_DEFERRED /* a metered connection or battery power */
} policy_deploy_verdict;

typedef struct policy_deploy {
    policy_deploy_verdict verdict;
    char version[65];  /* the staged version it is about ("" with NOTHING) */
    int64_t until_s;   /* WAIT: the next window's start (UTC) */
    policy_defer why;  /* DEFERRED */
    char message[512]; /* WAIT and DEFERRED: the line `run` prints ("deploy of ... waits ...") */
} policy_deploy;

/*
 * Whether `run` deploys now (deploy_wanted, then the windows and the
 * deferral), recorded in state section "policy" (waiting since when and
 * until when, or deferred since when) and saved. env NULL: this machine.
 */
MUST_CHECK error_code policy_deploy_gate(const config *cfg, const policy_env *env, policy_deploy *out, error_info *err);

/* ---- For status.json and the inventory -------------------------------------------------- */

/* The UTC time the deploy waits for (installer.deploy_waiting_until) into
 * buf; false (buf "") when it does not wait. */
bool policy_waiting_until(state *s, char *buf, size_t size);

/*
 * status.json's "deploy" member (README: "The status file"): the policy
 * as configured (enabled, windows, target_version_prefix, defer_on), the
 * state a person or an inventory tool reads first ("idle", "pending",
 * "waiting_for_window", "deferred", "reboot_required", "failed",
 * "disabled") with since when, waiting_until, deferred, not_taken, and the
 * last deploy (version, at, exit_code, result, reboot_required). boot_id
 * is the running boot's (a reboot clears reboot_required). *out is the
 * caller's.
 */
MUST_CHECK error_code policy_status_section(const config *cfg, state *s, const char *boot_id, struct cJSON **out,
                                            error_info *err);

#endif
