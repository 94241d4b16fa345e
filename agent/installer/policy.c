/*
 * policy.c — the fleet policy (policy.h): maintenance windows over a time
 * zone given as an offset function, the version pin, deferral on a
 * metered connection or battery, `run`'s deploy gate, and state section
 * "policy" with the status.json member made from it.
 *
 * Layout: the machine's environment; windows (the wall clock, a local time's
 * instants, the next start); the pin; deferral; the state section; the
 * deploy gate; the status member.
 */
#include "installer/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/jsonx.h"
#include "core/timefmt.h"
#include "installer/deploy.h"
#include "installer/installer_state.h"
#include "installer/staging.h"
#include "installer/version.h"
#include "platform/platform.h"

#define SECTION "policy"
#define DAY_S 86400
#define HORIZON_DAYS 16

/* ---- This machine ------------------------------------------------------------------- */

static error_code machine_offset(void *user, int64_t utc_s, int32_t *offset_s, error_info *err)
{
    (void)user;
    return platform_local_offset(utc_s, offset_s, err);
}

static int64_t machine_now(void *user)
{
    (void)user;
    return platform_time_utc_ms() / 1000;
}

static bool machine_metered(void *user, char *detail, size_t size)
{
    (void)user;
    return platform_network_metered(detail, size);
}

static bool machine_on_battery(void *user, char *detail, size_t size)
{
    (void)user;
    return platform_on_battery(detail, size);
}

static const policy_zone machine_zone = {machine_offset, NULL};
static const policy_env machine_env = {machine_now, &machine_zone, machine_metered, machine_on_battery, NULL};

const policy_env *policy_machine(void)
{
    return &machine_env;
}

/* ---- Windows --------------------------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* Day of the week of a day number (days since 1970-01-01, a Thursday): 0 Sunday. */
static int weekday(int64_t day)
{
    return (int)(((day + 4) % 7 + 7) % 7);
}

/* Whether the wall-clock time wall (local seconds since 1970-01-01 00:00)
 * is inside one of the windows. */
static bool wall_inside(const config_window *windows, size_t count, int64_t wall)
{
    int64_t day = floor_div(wall, DAY_S);
    int minute = (int)((wall - day * DAY_S) / 60);
    int today = weekday(day), yesterday = (today + 6) % 7;
    for (size_t i = 0; i < count; i++) {
        const config_window *w = &windows[i];
        bool starts_today = (w->days >> today) & 1;
        if (w->start_min < w->end_min) {
            if (starts_today && minute >= w->start_min && minute < w->end_min)
                return true;
        } else if ((starts_today && minute >= w->start_min) || (((w->days >> yesterday) & 1) && minute < w->end_min)) {
            return true;
        }
    }
    return false;
}

static MUST_CHECK error_code offset_at(const policy_zone *zone, int64_t t, int32_t *offset, error_info *err)
{
    return zone->offset(zone->user, t, offset, err);
}

error_code policy_in_window(const config_window *windows, size_t count, const policy_zone *zone, int64_t utc_s,
                            bool *inside, error_info *err)
{
    if (count == 0) {
        *inside = true;
        return ERR_OK;
    }
    int32_t offset = 0;
    error_code rc = offset_at(zone, utc_s, &offset, err);
    if (rc == ERR_OK)
        *inside = wall_inside(windows, count, utc_s + offset);
    return rc;
}

/*
 * The instants whose wall clock shows wall: none (a time a spring change
 * skips), one, or two (a time an autumn change repeats), earliest first.
 * Zone offsets are within 15 hours of UTC and change at most once in a
 * day and a half, so every instant that can show wall lies between wall -
 * 15 h and wall + 15 h and has the offset in force at one end or the other.
 */
static MUST_CHECK error_code instants_of(const policy_zone *zone, int64_t wall, int64_t out[2], int *count,
                                         error_info *err)
{
    int32_t probes[2];
    error_code rc = offset_at(zone, wall - 15 * 3600, &probes[0], err);
    if (rc == ERR_OK)
        rc = offset_at(zone, wall + 15 * 3600, &probes[1], err);
    *count = 0;
    for (int i = 0; rc == ERR_OK && i < 2; i++) {
        if (i == 1 && probes[1] == probes[0])
            break;
        int64_t t = wall - probes[i];
        int32_t actual = 0;
        rc = offset_at(zone, t, &actual, err);
        if (rc == ERR_OK && actual == probes[i])
            out[(*count)++] = t;
    }
    if (*count == 2 && out[1] < out[0]) {
        int64_t first = out[1];
        out[1] = out[0];
        out[0] = first;
    }
    return rc;
}

/* The first instant in (from, to] with an offset other than from's (a
 * clock change), found by halving: to when none is earlier. */
static MUST_CHECK error_code change_between(const policy_zone *zone, int64_t from, int64_t to, int32_t before,
                                            int64_t *change, error_info *err)
{
    while (to - from > 1) {
        int64_t mid = from + (to - from) / 2;
        int32_t offset = 0;
        error_code rc = offset_at(zone, mid, &offset, err);
        if (rc != ERR_OK)
            return rc;
        if (offset == before)
            from = mid;
        else
            to = mid;
    }
    *change = to;
    return ERR_OK;
}

error_code policy_next_window(const config_window *windows, size_t count, const policy_zone *zone, int64_t now_s,
                              int64_t *start_s, error_info *err)
{
    bool inside = false;
    error_code rc = policy_in_window(windows, count, zone, now_s, &inside, err);
    if (rc != ERR_OK || inside) {
        *start_s = now_s;
        return rc;
    }
    int32_t now_offset = 0;
    rc = offset_at(zone, now_s, &now_offset, err);
    int64_t best = INT64_MAX, horizon = now_s + (int64_t)HORIZON_DAYS * DAY_S;
    int64_t today = floor_div(now_s + now_offset, DAY_S);
    /* Every window's start on each of its days ... */
    for (size_t i = 0; rc == ERR_OK && i < count; i++) {
        for (int64_t day = today - 1; rc == ERR_OK && day <= today + HORIZON_DAYS; day++) {
            if (!((windows[i].days >> weekday(day)) & 1))
                continue;
            int64_t at[2];
            int n = 0;
            rc = instants_of(zone, day * DAY_S + windows[i].start_min * 60, at, &n, err);
            for (int k = 0; rc == ERR_OK && k < n; k++)
                if (at[k] > now_s && at[k] < best)
                    best = at[k];
        }
    }
    /* ... and every clock change that lands inside a window (02:00-04:00 on
     * the European spring day begins when 02:00 becomes 03:00). */
    int64_t from = now_s;
    int32_t before = now_offset;
    while (rc == ERR_OK && from < horizon && from < best) {
        int64_t to = from + 6 * 3600;
        int32_t after = 0;
        rc = offset_at(zone, to, &after, err);
        if (rc == ERR_OK && after != before) {
            int64_t change = to;
            rc = change_between(zone, from, to, before, &change, err);
            if (rc == ERR_OK)
                rc = policy_in_window(windows, count, zone, change, &inside, err);
            if (rc == ERR_OK && inside && change < best)
                best = change;
        }
        from = to;
        before = after;
    }
    if (rc != ERR_OK)
        return rc;
    if (best == INT64_MAX)
        return error_set(err, ERR_NOT_FOUND, "no maintenance window of deploy.windows begins within %d days",
                         HORIZON_DAYS);
    *start_s = best;
    return ERR_OK;
}

void policy_local_text(const policy_zone *zone, int64_t utc_s, char *buf, size_t size)
{
    int32_t offset = 0;
    char iso[TIMEFMT_ISO8601_SIZE];
    if (!size)
        return;
    buf[0] = '\0';
    if (offset_at(zone, utc_s, &offset, NULL) != ERR_OK)
        return;
    timefmt_iso8601(utc_s + offset, iso); /* the wall clock, written as if it were UTC */
    snprintf(buf, size, "%.10s %.5s", iso, iso + 11);
}

/* ---- The pin --------------------------------------------------------------------------- */

bool policy_pin_takes(const char *prefix, const char *offered, const char *installed, bool downgrade_allowed,
                      char *reason, size_t size)
{
    if (size)
        reason[0] = '\0';
    if (!prefix)
        return true;
    if (strncmp(offered, prefix, strlen(prefix)) != 0) {
        snprintf(reason, size, "not taken: %s is outside target_version_prefix %s", offered, prefix);
        return false;
    }
    if (installed && version_compare(offered, installed) < 0 && !downgrade_allowed) {
        snprintf(reason, size,
                 "not taken: %s (target_version_prefix %s) is older than the installed %s; a downgrade needs the "
                 "mirror manifest's allow_downgrade or update --allow-downgrade",
                 offered, prefix, installed);
        return false;
    }
    return true;
}

/* ---- Deferral -------------------------------------------------------------------------- */

const char *policy_defer_name(policy_defer why)
{
    return why == POLICY_DEFER_METERED ? "metered" : why == POLICY_DEFER_BATTERY ? "battery" : "";
}

const char *policy_defer_text(policy_defer why)
{
    return why == POLICY_DEFER_METERED ? "metered connection" : why == POLICY_DEFER_BATTERY ? "battery power" : "";
}

policy_defer policy_deferral(const config_installer *installer, const policy_env *env, char *detail, size_t size)
{
    if (!env)
        env = policy_machine();
    if (size)
        detail[0] = '\0';
    if (installer->defer_metered && env->metered(env->user, detail, size))
        return POLICY_DEFER_METERED;
    if (installer->defer_battery && env->on_battery(env->user, detail, size))
        return POLICY_DEFER_BATTERY;
    return POLICY_DEFER_NONE;
}

/* ---- State section "policy" -------------------------------------------------------------- */

/*
 * Members, each present only while it holds:
 *   not_taken         {version, reason, at}     the last offer the pin refused
 *   download_deferred {reason, detail, since}   `run` held a download back
 *   deploy_deferred   {reason, detail, since}   `run` held a deploy back
 *   waiting           {version, until, since}   `run`'s deploy waits for a window
 */

static void put_time(cJSON *o, const char *name, int64_t t)
{
    char text[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(t, text);
    jsonx_set(o, name, cJSON_CreateString(text));
}

void policy_note_not_taken(state *s, const char *version, const char *reason, int64_t now_s)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        jsonx_set(o, "version", cJSON_CreateString(version));
        jsonx_set(o, "reason", cJSON_CreateString(reason));
        put_time(o, "at", now_s);
    }
    jsonx_set(state_section(s, SECTION), "not_taken", o);
}

void policy_note_taken(state *s)
{
    cJSON_DeleteItemFromObjectCaseSensitive(state_section(s, SECTION), "not_taken");
}

/* Records (or, why NONE, removes) a deferral under member, keeping its since while the reason stays. */
static void note_deferred(state *s, const char *member, policy_defer why, const char *detail, int64_t now_s)
{
    cJSON *section = state_section(s, SECTION);
    if (why == POLICY_DEFER_NONE) {
        cJSON_DeleteItemFromObjectCaseSensitive(section, member);
        return;
    }
    const cJSON *kept = cJSON_GetObjectItemCaseSensitive(section, member);
    const char *reason = jsonx_string(NULL, kept, "reason");
    const char *since = jsonx_string(NULL, kept, "since");
    cJSON *o = cJSON_CreateObject();
    if (o) {
        jsonx_set(o, "reason", cJSON_CreateString(policy_defer_name(why)));
        jsonx_set(o, "detail", cJSON_CreateString(detail ? detail : ""));
        if (since && reason && strcmp(reason, policy_defer_name(why)) == 0)
            jsonx_set(o, "since", cJSON_CreateString(since));
        else
            put_time(o, "since", now_s);
    }
    jsonx_set(section, member, o);
}

void policy_note_download_deferred(state *s, policy_defer why, const char *detail, int64_t now_s)
{
    note_deferred(s, "download_deferred", why, detail, now_s);
}

/* Records (or, version NULL, removes) the wait for a window, keeping its since while the version stays. */
static void note_waiting(state *s, const char *version, int64_t until_s, int64_t now_s)
{
    cJSON *section = state_section(s, SECTION);
    if (!version) {
        cJSON_DeleteItemFromObjectCaseSensitive(section, "waiting");
        return;
    }
    const cJSON *kept = cJSON_GetObjectItemCaseSensitive(section, "waiting");
    const char *kept_version = jsonx_string(NULL, kept, "version");
    const char *since = jsonx_string(NULL, kept, "since");
    cJSON *o = cJSON_CreateObject();
    if (o) {
        jsonx_set(o, "version", cJSON_CreateString(version));
        put_time(o, "until", until_s);
        if (since && kept_version && strcmp(kept_version, version) == 0)
            jsonx_set(o, "since", cJSON_CreateString(since));
        else
            put_time(o, "since", now_s);
    }
    jsonx_set(section, "waiting", o);
}

bool policy_waiting_until(state *s, char *buf, size_t size)
{
    const cJSON *waiting = cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), "waiting");
    const char *until = jsonx_string(NULL, waiting, "until");
    snprintf(buf, size, "%s", until ? until : "");
    return until != NULL;
}

/* ---- `run`'s deploy ------------------------------------------------------------------------ */

/* The version `run` would deploy (deploy_wanted), into out->version; false when none. */
static bool wanted_version(const config *cfg, policy_deploy *out)
{
    if (!deploy_wanted(cfg))
        return false;
    char *staged = NULL;
    error_info ignored;
    if (staging_current_version(cfg, &staged, &ignored) != ERR_OK || !staged)
        return false;
    snprintf(out->version, sizeof out->version, "%s", staged);
    free(staged);
    return true;
}

/* The windows' verdict at now: NOW, or WAIT with the next start. */
static MUST_CHECK error_code judge_windows(const config *cfg, const policy_env *env, int64_t now, policy_deploy *out,
                                           error_info *err)
{
    const config_deploy *d = &cfg->deploy;
    bool inside = true;
    error_code rc = policy_in_window(d->windows, d->window_count, env->zone, now, &inside, err);
    if (rc != ERR_OK || inside)
        return rc;
    out->verdict = POLICY_DEPLOY_WAIT;
    rc = policy_next_window(d->windows, d->window_count, env->zone, now, &out->until_s, err);
    if (rc != ERR_OK)
        return error_prefix(err, "deploy.windows");
    char until[TIMEFMT_ISO8601_SIZE], local[40];
    timefmt_iso8601(out->until_s, until);
    policy_local_text(env->zone, out->until_s, local, sizeof local);
    snprintf(out->message, sizeof out->message,
             "deploy of %s waits for a maintenance window (deploy.windows): the next begins %s (%s local time)",
             out->version, until, local);
    return ERR_OK;
}

error_code policy_deploy_gate(const config *cfg, const policy_env *env, policy_deploy *out, error_info *err)
{
    memset(out, 0, sizeof *out);
    if (!env)
        env = policy_machine();
    int64_t now = env->now_s(env->user);
    state *s = NULL;
    error_code rc = state_load(cfg->state_dir, &s, err);
    if (rc != ERR_OK)
        return rc;
    char detail[200] = "";
    policy_defer why = POLICY_DEFER_NONE;
    if (wanted_version(cfg, out)) {
        out->verdict = POLICY_DEPLOY_NOW;
        why = policy_deferral(&cfg->installer, env, detail, sizeof detail);
        if (why != POLICY_DEFER_NONE) {
            out->verdict = POLICY_DEPLOY_DEFERRED;
            out->why = why;
            snprintf(out->message, sizeof out->message,
                     "deferred: %s (installer.defer_on; %s): %s is not deployed until a run finds it gone",
                     policy_defer_text(why), detail, out->version);
        } else {
            rc = judge_windows(cfg, env, now, out, err);
        }
    }
    if (rc == ERR_OK) {
        note_deferred(s, "deploy_deferred", why, detail, now);
        note_waiting(s, out->verdict == POLICY_DEPLOY_WAIT ? out->version : NULL, out->until_s, now);
        rc = state_save(s, err);
    }
    state_free(s);
    return rc;
}

/* ---- status.json's "deploy" ---------------------------------------------------------------- */

static cJSON *string_list(char *const *items, size_t count)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < count; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(items[i]));
    return a;
}

static cJSON *copy_or_null(const cJSON *item)
{
    return cJSON_IsObject(item) ? cJSON_Duplicate(item, 1) : cJSON_CreateNull();
}

static const char *text_of(const cJSON *o, const char *name)
{
    return jsonx_string(NULL, o, name);
}

/* The later of two objects by their "at" (ISO 8601 compares as text); either may be absent. */
static const cJSON *later(const cJSON *a, const cJSON *b)
{
    const char *ta = text_of(a, "at"), *tb = text_of(b, "at");
    if (!ta)
        return tb ? b : NULL;
    return tb && strcmp(tb, ta) > 0 ? b : a;
}

/* The last deploy, successful or not: {version, at, exit_code, result, reboot_required}. */
static cJSON *last_deploy(state *s, bool *reboot_pending, bool *failed, const char *boot_id)
{
    const cJSON *ok = installer_state_deployed(s);
    const cJSON *bad = installer_state_deploy_failure(s);
    const cJSON *last = later(cJSON_IsObject(ok) ? ok : NULL, cJSON_IsObject(bad) ? bad : NULL);
    *failed = last && last == bad;
    *reboot_pending = false;
    if (!last)
        return cJSON_CreateNull();
    bool reboot = !*failed && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(last, "reboot_required"));
    const char *then = text_of(last, "boot_id");
    *reboot_pending = reboot && (!then || !boot_id || !boot_id[0] || strcmp(then, boot_id) == 0);
    cJSON *o = cJSON_CreateObject();
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(last, "exit_code");
    if (o) {
        jsonx_set(o, "version", cJSON_CreateString(text_of(last, "version") ? text_of(last, "version") : ""));
        jsonx_set(o, "at", cJSON_CreateString(text_of(last, "at") ? text_of(last, "at") : ""));
        jsonx_set(o, "exit_code", cJSON_IsNumber(code) ? cJSON_CreateNumber(code->valuedouble) : cJSON_CreateNull());
        jsonx_set(o, "result", cJSON_CreateString(*failed ? "failed" : "ok"));
        jsonx_set(o, "reboot_required", cJSON_CreateBool(reboot));
    }
    return o;
}

/* The deferral status.json shows: the earlier of the download's and the deploy's. */
static const cJSON *deferral(state *s)
{
    const cJSON *section = state_section(s, SECTION);
    const cJSON *download = cJSON_GetObjectItemCaseSensitive(section, "download_deferred");
    const cJSON *deploy = cJSON_GetObjectItemCaseSensitive(section, "deploy_deferred");
    const char *a = text_of(download, "since"), *b = text_of(deploy, "since");
    if (!a)
        return b ? deploy : NULL;
    return b && strcmp(b, a) < 0 ? deploy : download;
}

error_code policy_status_section(const config *cfg, state *s, const char *boot_id, cJSON **out, error_info *err)
{
    *out = NULL;
    const cJSON *section = state_section(s, SECTION);
    const cJSON *waiting = cJSON_GetObjectItemCaseSensitive(section, "waiting");
    const cJSON *deferred = deferral(s);
    bool reboot_pending = false, failed = false;
    cJSON *last = last_deploy(s, &reboot_pending, &failed, boot_id);
    char *staged = NULL;
    error_info ignored;
    if (staging_current_version(cfg, &staged, &ignored) != ERR_OK)
        staged = NULL;
    const char *deployed = installer_state_deployed_version(s);
    bool pending = staged && (!deployed || strcmp(staged, deployed) != 0);
    free(staged);

    const char *state_name = "idle", *since = NULL;
    if (!cfg->deploy.enabled)
        state_name = "disabled";
    else if (failed)
        state_name = "failed";
    else if (reboot_pending)
        state_name = "reboot_required";
    else if (deferred)
        state_name = "deferred", since = text_of(deferred, "since");
    else if (cJSON_IsObject(waiting))
        state_name = "waiting_for_window", since = text_of(waiting, "since");
    else if (pending)
        state_name = "pending";

    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddBoolToObject(o, "enabled", cfg->deploy.enabled) &&
              jsonx_set(o, "windows", string_list(cfg->deploy.window_texts, cfg->deploy.window_count)) &&
              jsonx_add_string_or_null(o, "target_version_prefix", cfg->installer.target_version_prefix) &&
              jsonx_set(o, "defer_on", string_list(cfg->installer.defer_on, cfg->installer.defer_on_count)) &&
              cJSON_AddStringToObject(o, "state", state_name) && jsonx_add_string_or_null(o, "since", since) &&
              jsonx_add_string_or_null(o, "waiting_until", text_of(waiting, "until")) &&
              jsonx_set(o, "deferred", copy_or_null(deferred)) &&
              jsonx_set(o, "not_taken", copy_or_null(cJSON_GetObjectItemCaseSensitive(section, "not_taken"))) &&
              cJSON_AddBoolToObject(o, "reboot_required", reboot_pending);
    if (!jsonx_set(o, "last_deploy", last))
        ok = false;
    if (!ok) {
        cJSON_Delete(o);
        return error_set(err, ERR_NOMEM, "out of memory describing the deploy in the status file");
    }
    *out = o;
    return ERR_OK;
}
