/* status.c — merge-and-replace of status.json (see status.h). */
#include "report/status.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/jsonx.h"
#include "report/feed.h"
#include "report/newest.h"
#include "platform/platform.h"
#include "core/timefmt.h"

cJSON *status_agent_object(void)
{
    char host[256];
    platform_hostname(host, sizeof host);
    cJSON *agent = cJSON_CreateObject();
    if (!agent)
        return NULL;
    if (!cJSON_AddStringToObject(agent, "version", OUTPOST_VERSION) ||
        !cJSON_AddStringToObject(agent, "hostname", host) ||
        !cJSON_AddStringToObject(agent, "os", platform_os_name()) ||
        !cJSON_AddStringToObject(agent, "arch", platform_arch())) {
        cJSON_Delete(agent);
        return NULL;
    }
    return agent;
}

bool status_run_succeeded(int exit_code)
{
    return exit_code == 0 || exit_code == 3010;
}

static const char *member_text(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* The previous last_run's last success: its own member, or (a file written
 * before the member existed) its finish when it succeeded. */
static const char *previous_success(const cJSON *previous)
{
    const char *at = member_text(previous, "last_success_at");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(previous, "exit_code");
    if (!at && cJSON_IsNumber(code) && status_run_succeeded(code->valueint))
        at = member_text(previous, "finished_at");
    return at;
}

/* Since when the runs have been failing, this one failed: the previous
 * failure's failing_since (or its start), else this run's start. */
static const char *failing_since(const cJSON *previous, const char *started_at)
{
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(previous, "exit_code");
    if (!cJSON_IsObject(previous) || !cJSON_IsNumber(code) || status_run_succeeded(code->valueint))
        return started_at;
    const char *since = member_text(previous, "failing_since");
    if (!since)
        since = member_text(previous, "started_at");
    return since ? since : started_at;
}

static bool add_string_or_null(cJSON *o, const char *name, const char *value)
{
    return value ? cJSON_AddStringToObject(o, name, value) != NULL : cJSON_AddNullToObject(o, name) != NULL;
}

/* Adds last_success_at and failing_since to last_run (which has
 * started_at, finished_at and exit_code), carried on from previous. */
static bool add_history(cJSON *last_run, const cJSON *previous)
{
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(last_run, "exit_code");
    const char *started = member_text(last_run, "started_at");
    bool ok_run = cJSON_IsNumber(code) && status_run_succeeded(code->valueint);
    return add_string_or_null(last_run, "last_success_at",
                              ok_run ? member_text(last_run, "finished_at") : previous_success(previous)) &&
           add_string_or_null(last_run, "failing_since", ok_run ? NULL : failing_since(previous, started));
}

error_code status_last_run(const status_run *run, cJSON **out, error_info *err)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *errors = run->errors ? cJSON_Duplicate(run->errors, true) : cJSON_CreateArray();
    bool ok = o && errors && cJSON_AddStringToObject(o, "started_at", run->started_at) &&
              cJSON_AddStringToObject(o, "finished_at", run->finished_at) &&
              cJSON_AddStringToObject(o, "result", run->result) &&
              cJSON_AddNumberToObject(o, "exit_code", run->exit_code) && cJSON_AddItemToObject(o, "errors", errors);
    if (!ok)
        cJSON_Delete(errors); /* added last of these: never attached when !ok */
    if (!ok || !add_history(o, run->previous)) {
        cJSON_Delete(o);
        *out = NULL;
        return error_set(err, ERR_NOMEM, "out of memory while recording the run's outcome (last_run)");
    }
    *out = o;
    return ERR_OK;
}

error_code status_run_error(cJSON *errors, const char *stage, const char *message, error_info *err)
{
    cJSON *e = cJSON_CreateObject();
    if (!e || !cJSON_AddStringToObject(e, "stage", stage) || !cJSON_AddStringToObject(e, "message", message) ||
        !cJSON_AddItemToArray(errors, e)) {
        cJSON_Delete(e);
        return error_set(err, ERR_NOMEM, "out of memory while recording a failed part (last_run.errors)");
    }
    return ERR_OK;
}

error_code status_read(const config *cfg, cJSON **doc, error_info *err)
{
    char *path = config_state_path(cfg, cfg->report.status_file);
    if (!path)
        return error_set(err, ERR_NOMEM, "out of memory");
    char *text = NULL;
    size_t len = 0;
    error_code rc = platform_read_file(path, STATUS_MAX_BYTES, &text, &len, err);
    if (rc == ERR_OK) {
        *doc = cJSON_ParseWithLength(text, len);
        if (!*doc || !cJSON_IsObject(*doc)) {
            cJSON_Delete(*doc);
            *doc = NULL;
            rc = error_set(err, ERR_IO, "status file %s is not valid JSON", path);
        }
    }
    free(text);
    free(path);
    return rc;
}

static void forget_unrecorded(const config *cfg);

/* value itself, lent to the document being printed; a copy for scalars. */
static cJSON *lent(const cJSON *value)
{
    if (cJSON_IsObject(value))
        return cJSON_CreateObjectReference(value->child);
    if (cJSON_IsArray(value))
        return cJSON_CreateArrayReference(value->child);
    return cJSON_Duplicate(value, 1);
}

#define ITEMS_MARK "\001items\001"

cJSON *status_items_placeholder(void)
{
    return cJSON_CreateRaw(ITEMS_MARK);
}

static bool put_piece(void *stream, const void *data, size_t len)
{
    return feed_put(stream, data, len);
}

/* Writes text to path, with items streamed where its placeholder is. */
static MUST_CHECK error_code write_text(const char *path, const char *text, const newest *items,
                                        const char *readers_group, error_info *err)
{
    const char *mark = items ? strstr(text, ITEMS_MARK) : NULL;
    if (items && !mark)
        return error_set(err, ERR_INTERNAL, "the report's items have no place in the status file");
    feed_stream *f = NULL;
    error_code rc = feed_open(path, readers_group, &f, err);
    if (rc != ERR_OK)
        return rc;
    size_t head = mark ? (size_t)(mark - text) : strlen(text);
    feed_put(f, text, head); /* a failure is reported by the commit */
    if (mark) {
        error_info ignored; /* a failed put is the stream's, reported by the commit */
        rc = newest_print(items, 2, put_piece, f, &ignored);
        if (rc != ERR_OK && rc != ERR_IO) {
            *err = ignored;
            feed_abort(f);
            return rc;
        }
        feed_put(f, mark + strlen(ITEMS_MARK), strlen(mark + strlen(ITEMS_MARK)));
    }
    return feed_commit(f, err);
}

error_code status_write(const config *cfg, const status_parts *parts, error_info *err)
{
    /* Only what the caller did not supply comes from the previous document:
     * read the file (all of it, items included) only when that is needed and
     * the caller has not kept it. */
    cJSON *read = NULL;
    const cJSON *previous = parts->previous;
    if (!previous && (!parts->last_run || !parts->installer || !parts->incidents || !parts->deploy)) {
        error_info ignored;
        if (status_read(cfg, &read, &ignored) != ERR_OK)
            read = NULL;
        previous = read;
    }

    /* A last_run built without the previous one (`report` alone) carries
     * the history on from the file it replaces. */
    if (parts->last_run && !cJSON_HasObjectItem(parts->last_run, "failing_since") &&
        !add_history(parts->last_run, cJSON_GetObjectItemCaseSensitive(previous, "last_run"))) {
        cJSON_Delete(read);
        return error_set(err, ERR_NOMEM, "out of memory while writing the status file");
    }

    /* Rebuild in the schema's order: identity first, then the parts. */
    cJSON *doc = cJSON_CreateObject();
    char now[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, now);
    bool ok = doc && cJSON_AddNumberToObject(doc, "schema_version", STATUS_SCHEMA_VERSION) &&
              cJSON_AddStringToObject(doc, "generated_at", now) && jsonx_set(doc, "agent", status_agent_object());
    static const char *const members[] = {"last_run", "installer", "deploy", "incidents"};
    const cJSON *given[] = {parts->last_run, parts->installer, parts->deploy, parts->incidents};
    for (size_t i = 0; ok && i < sizeof members / sizeof members[0]; i++) {
        const cJSON *value = given[i] ? given[i] : cJSON_GetObjectItemCaseSensitive(previous, members[i]);
        /* By reference: the parts stay the caller's and are not copied (the
         * report's items are most of the document). */
        if (value)
            ok = jsonx_set(doc, members[i], lent(value));
    }
    char *text = ok ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc); /* the references only */
    cJSON_Delete(read);
    if (!text)
        return error_set(err, ERR_NOMEM, "out of memory while writing the status file");

    char *path = config_state_path(cfg, cfg->report.status_file);
    error_code rc = path ? write_text(path, text, parts->items, cfg->report.readers_group, err)
                         : error_set(err, ERR_NOMEM, "out of memory");
    free(path);
    cJSON_free(text);
    if (rc != ERR_OK)
        return error_prefix(err, "cannot write the status file");
    if (parts->last_run)
        forget_unrecorded(cfg);
    return ERR_OK;
}

/* ---- A run that could not record its outcome -------------------------------- */

void status_note_unrecorded(const config *cfg, const char *at, int exit_code, const char *message)
{
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    if (o && cJSON_AddStringToObject(o, "at", at) && cJSON_AddNumberToObject(o, "exit_code", exit_code) &&
        cJSON_AddStringToObject(o, "message", message))
        text = cJSON_Print(o);
    cJSON_Delete(o);
    char *path = config_state_path(cfg, STATUS_UNRECORDED_FILE);
    error_info ignored; /* best effort: the run already reports its failure */
    if (text && path && feed_write(path, text, strlen(text), cfg->report.readers_group, &ignored) != ERR_OK)
        error_clear(&ignored);
    free(path);
    cJSON_free(text);
}

cJSON *status_read_unrecorded(const config *cfg)
{
    char *path = config_state_path(cfg, STATUS_UNRECORDED_FILE);
    char *text = NULL;
    size_t len = 0;
    error_info ignored;
    cJSON *doc = NULL;
    if (path && platform_read_file(path, 64 * 1024, &text, &len, &ignored) == ERR_OK)
        doc = cJSON_ParseWithLength(text, len);
    free(text);
    free(path);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}

/* The note is stale once a status file was written after it. */
static void forget_unrecorded(const config *cfg)
{
    char *path = config_state_path(cfg, STATUS_UNRECORDED_FILE);
    error_info ignored;
    if (path && platform_path_stat(path, NULL) != PLATFORM_PATH_NONE && platform_remove_file(path, &ignored) != ERR_OK)
        error_clear(&ignored);
    free(path);
}

/* ---- The verdict ------------------------------------------------------------ */

#define OR_NONE(s) ((s) ? (s) : "none")

static double number(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void attention(status_verdict *v, const char *fmt, ...) OUTPOST_PRINTF(2, 3);

static void attention(status_verdict *v, const char *fmt, ...)
{
    size_t n = strlen(v->text);
    if (n + 3 >= sizeof v->text)
        return;
    n += (size_t)snprintf(v->text + n, sizeof v->text - n, "%s", v->attention ? "; " : "ATTENTION: ");
    v->attention = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->text + n, sizeof v->text - n, fmt, ap);
    va_end(ap);
}

void status_age_text(int64_t s, char *buf, size_t size)
{
    if (s < 0)
        s = 0;
    if (s >= 2 * 86400)
        snprintf(buf, size, "%" PRId64 "d %" PRId64 "h", s / 86400, s % 86400 / 3600);
    else if (s >= 3600)
        snprintf(buf, size, "%" PRId64 "h %" PRId64 "m", s / 3600, s % 3600 / 60);
    else if (s >= 60)
        snprintf(buf, size, "%" PRId64 "m %" PRId64 "s", s / 60, s % 60);
    else
        snprintf(buf, size, "%" PRId64 "s", s);
}

static bool member_time(const cJSON *obj, const char *name, int64_t *at)
{
    const char *text = member_text(obj, name);
    return text && timefmt_parse_iso8601(text, at);
}

/* A deploy asked for a reboot and the machine has not restarted since. */
static bool reboot_pending(const cJSON *deployed, const char *boot_id)
{
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(deployed, "reboot_required")))
        return false;
    const char *then = member_text(deployed, "boot_id");
    return !then || !boot_id || !boot_id[0] || strcmp(then, boot_id) == 0;
}

static void judge_run(const cJSON *run, const status_limits *limits, int64_t now_s, status_verdict *v)
{
    int run_exit = (int)number(run, "exit_code");
    if (!status_run_succeeded(run_exit)) {
        const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(run, "errors"), 0);
        attention(v, "the last run failed (exit code %d)%s%s%s%s", run_exit, first ? ": " : "",
                  first ? OR_NONE(member_text(first, "stage")) : "", first ? ": " : "",
                  first ? OR_NONE(member_text(first, "message")) : "");
    }
    int64_t since = 0, success = 0;
    char age[32], limit[32];
    if (!status_run_succeeded(run_exit) && member_time(run, "failing_since", &since) &&
        now_s - since > limits->max_failing_s) {
        status_age_text(now_s - since, age, sizeof age);
        status_age_text(limits->max_failing_s, limit, sizeof limit);
        attention(v, "failing since %s (%s, longer than status.max_failing %s)", member_text(run, "failing_since"), age,
                  limit);
    }
    bool have_success = member_time(run, "last_success_at", &success) ||
                        (status_run_succeeded(run_exit) && member_time(run, "finished_at", &success));
    if (have_success && now_s - success > limits->max_age_s) {
        status_age_text(now_s - success, age, sizeof age);
        status_age_text(limits->max_age_s, limit, sizeof limit);
        attention(v, "stale: the last successful run finished %s ago, longer than %s %s", age,
                  limits->max_age_from ? limits->max_age_from : "status.max_age", limit);
        if (v->exit_code == 0 || v->exit_code == 3010)
            v->exit_code = 75;
    }
}

/* The mirror root's expiry is a cliff a person must see coming (PRODUCT.md
 * 8.1): ATTENTION once it has expired, and from STATUS_ROOT_WARN_S before. */
static void judge_mirror_root(const cJSON *inst, int64_t now_s, status_verdict *v)
{
    const cJSON *root = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(inst, "mirror"), "root");
    int64_t expires = 0;
    if (!member_time(root, "expires_at", &expires))
        return;
    if (now_s >= expires)
        attention(v, "mirror root expired at %s: no update is installed until a new root is published",
                  member_text(root, "expires_at"));
    else if (expires - now_s <= STATUS_ROOT_WARN_S)
        attention(v, "mirror root expires at %s: its key holders must sign and publish the next version",
                  member_text(root, "expires_at"));
}

void status_judge(const cJSON *doc, const cJSON *unrecorded, const status_limits *limits, int64_t now_s,
                  const char *boot_id, status_verdict *v)
{
    memset(v, 0, sizeof *v);
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(doc, "last_run");
    const cJSON *inst = cJSON_GetObjectItemCaseSensitive(doc, "installer");
    const cJSON *failure = cJSON_GetObjectItemCaseSensitive(inst, "deploy_failure");
    const cJSON *deployed = cJSON_GetObjectItemCaseSensitive(inst, "deployed");
    int64_t finished = 0, noted = 0;
    bool have_run = cJSON_IsObject(run) && member_time(run, "finished_at", &finished);
    v->exit_code = have_run ? (int)number(run, "exit_code") : 75;
    if (!have_run)
        attention(v, "no scheduled run has finished yet (outpost run)");
    else
        judge_run(run, limits, now_s, v);
    if (cJSON_IsObject(unrecorded) && member_time(unrecorded, "at", &noted) && (!have_run || noted >= finished)) {
        int code = (int)number(unrecorded, "exit_code");
        attention(v, "the run at %s could not record its outcome in the status file (exit code %d): %s",
                  member_text(unrecorded, "at"), code, OR_NONE(member_text(unrecorded, "message")));
        if (v->exit_code == 0 || v->exit_code == 3010 || v->exit_code == 75)
            v->exit_code = code && !status_run_succeeded(code) ? code : 1;
    }
    if (cJSON_IsObject(failure))
        attention(v, "the deploy of %s failed%s%s", OR_NONE(member_text(failure, "version")),
                  member_text(failure, "log") ? ", see " : "",
                  member_text(failure, "log") ? member_text(failure, "log") : "");
    if (cJSON_IsObject(deployed) && reboot_pending(deployed, boot_id))
        attention(v, "reboot required to finish the deploy of %s", OR_NONE(member_text(deployed, "version")));
    judge_mirror_root(inst, now_s, v);
    if (v->attention)
        return;
    const char *installed = member_text(inst, "installed_version");
    const cJSON *incidents = cJSON_GetObjectItemCaseSensitive(doc, "incidents");
    char age[32];
    status_age_text(now_s - finished, age, sizeof age);
    int n = snprintf(v->text, sizeof v->text, "OK: the last run succeeded %s ago (%s)", age,
                     OR_NONE(member_text(run, "finished_at")));
    if (installed && n > 0 && (size_t)n < sizeof v->text)
        n += snprintf(v->text + n, sizeof v->text - (size_t)n, "; installer %s installed", installed);
    if (cJSON_IsObject(incidents) && n > 0 && (size_t)n < sizeof v->text)
        snprintf(v->text + n, sizeof v->text - (size_t)n, "; %.0f new incidents in the last report",
                 number(incidents, "new"));
}

cJSON *status_verdict_object(const status_verdict *v)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddBoolToObject(o, "attention", v->attention) || !cJSON_AddStringToObject(o, "text", v->text) ||
        !cJSON_AddNumberToObject(o, "exit_code", v->exit_code)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
