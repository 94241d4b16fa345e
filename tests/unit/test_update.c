/* test_update.c — updating the installer, one flow for both sources: every
 * outcome of update_decide from a table (up to date, newer, downgrade
 * refused or allowed by the user or the mirror's manifest, forced, already
 * staged, not in the rollout), the check/update --json document's members,
 * and the flow itself (update_run) against http.h's fake transport: check,
 * update, already staged, a refused downgrade, publish's measure, and the
 * platform's Retry-After respected where it should be and only there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/error.h"
#include "base/text.h"
#include "core/state.h"
#include "installer/update.h"
#include "net/retry_after.h"
#include "platform/platform.h"

#include "net/api.h"
#include "net/http_fake.h"

#include "support.h"
#include "support_staging.h"

/* is_staged stub: user points at the one staged version (or NULL), and
 * counts how often it was asked (the real one hashes a file). */
typedef struct staged_stub {
    const char *version;
    int asked;
} staged_stub;

static bool stub_is_staged(const void *user, const char *version)
{
    staged_stub *stub = (staged_stub *)user;
    stub->asked++;
    return stub->version && strcmp(stub->version, version) == 0;
}

typedef struct decide_case {
    const char *name;
    const char *offered;
    const char *installed;
    bool force;
    bool allow_downgrade;
    bool source_allows_downgrade;
    bool eligible;
    const char *staged; /* the version staged and verified, or NULL */
    error_code rc;
    update_verdict verdict; /* when rc is ERR_OK */
    bool fetches;
} decide_case;

static const decide_case cases[] = {
    {"newer", "2.0", "1.0", false, false, false, true, NULL, ERR_OK, UPDATE_FETCH_NEWER, true},
    {"nothing installed", "2.0", NULL, false, false, false, true, NULL, ERR_OK, UPDATE_FETCH_NEWER, true},
    {"up to date", "1.0", "1.0", false, false, false, true, NULL, ERR_OK, UPDATE_UP_TO_DATE, false},
    {"up to date by numbers (suffix is build metadata)", "1.0.0-abc+", "1.0", false, false, false, true, NULL, ERR_OK,
     UPDATE_UP_TO_DATE, false},
    {"up to date, even outside the rollout", "1.0", "1.0", false, false, false, false, NULL, ERR_OK, UPDATE_UP_TO_DATE,
     false},
    {"up to date, forced", "1.0", "1.0", true, false, false, true, "1.0", ERR_OK, UPDATE_FETCH_FORCED, true},
    {"downgrade refused", "0.9", "1.0", false, false, false, true, NULL, ERR_REJECTED, UPDATE_UP_TO_DATE, false},
    {"downgrade refused even with force", "0.9", "1.0", true, false, false, true, NULL, ERR_REJECTED, UPDATE_UP_TO_DATE,
     false},
    {"downgrade allowed by the user", "0.9", "1.0", false, true, false, true, NULL, ERR_OK, UPDATE_FETCH_DOWNGRADE,
     true},
    {"downgrade allowed by the mirror's manifest", "0.9", "1.0", false, false, true, true, NULL, ERR_OK,
     UPDATE_FETCH_DOWNGRADE, true},
    {"allowed downgrade already staged", "0.9", "1.0", false, true, false, true, "0.9", ERR_OK, UPDATE_ALREADY_STAGED,
     false},
    {"already staged", "2.0", "1.0", false, false, false, true, "2.0", ERR_OK, UPDATE_ALREADY_STAGED, false},
    {"another version staged", "2.0", "1.0", false, false, false, true, "1.5", ERR_OK, UPDATE_FETCH_NEWER, true},
    {"already staged, forced", "2.0", "1.0", true, false, false, true, "2.0", ERR_OK, UPDATE_FETCH_NEWER, true},
    {"not in the rollout", "2.0", "1.0", false, false, false, false, NULL, ERR_OK, UPDATE_NOT_ELIGIBLE, false},
    {"not in the rollout but staged", "2.0", "1.0", false, false, false, false, "2.0", ERR_OK, UPDATE_NOT_ELIGIBLE,
     false},
    {"not in the rollout, forced", "2.0", "1.0", true, false, false, false, NULL, ERR_OK, UPDATE_FETCH_NEWER, true},
};

static void test_decide_table(void **ctx)
{
    (void)ctx;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const decide_case *c = &cases[i];
        staged_stub stub = {c->staged, 0};
        update_facts facts = {
            .offered = c->offered,
            .installed = c->installed,
            .source = "the platform",
            .force = c->force,
            .allow_downgrade = c->allow_downgrade,
            .source_allows_downgrade = c->source_allows_downgrade,
            .eligible = c->eligible,
            .is_staged = stub_is_staged,
            .is_staged_user = &stub,
        };
        update_verdict verdict = (update_verdict)-1;
        error_info err;
        error_clear(&err);
        error_code rc = update_decide(&facts, &verdict, &err);
        if (rc != c->rc)
            fail_msg("%s: rc %d, expected %d (%s)", c->name, rc, c->rc, err.message);
        if (rc == ERR_OK && verdict != c->verdict)
            fail_msg("%s: verdict %d, expected %d", c->name, verdict, c->verdict);
        if (rc == ERR_OK && update_verdict_fetches(verdict) != c->fetches)
            fail_msg("%s: fetches is wrong", c->name);
        /* The staged file is hashed only when that decides: never for an
         * up-to-date, refused or forced offer. */
        if ((rc != ERR_OK || c->force || verdict == UPDATE_UP_TO_DATE || verdict == UPDATE_NOT_ELIGIBLE) &&
            stub.asked != 0)
            fail_msg("%s: is_staged asked %d times", c->name, stub.asked);
    }
}

static void test_refused_downgrade_names_source_and_the_way_out(void **ctx)
{
    (void)ctx;
    update_facts facts = {
        .offered = "0.9", .installed = "1.0", .source = "mirror https://m.example/", .eligible = true};
    update_verdict verdict;
    error_info err;
    assert_int_equal(update_decide(&facts, &verdict, &err), ERR_REJECTED);
    assert_int_equal(error_exit_code(err.code), 4);
    assert_non_null(strstr(err.message, "mirror https://m.example/ offers 0.9, older than the installed 1.0"));
    assert_non_null(strstr(err.message, "--allow-downgrade"));
}

static void test_no_is_staged_means_never_staged(void **ctx)
{
    (void)ctx;
    update_facts facts = {.offered = "2.0", .installed = "1.0", .source = "the platform", .eligible = true};
    update_verdict verdict;
    assert_int_equal(update_decide(&facts, &verdict, NULL), ERR_OK);
    assert_int_equal(verdict, UPDATE_FETCH_NEWER);
}

static void test_action_names(void **ctx)
{
    (void)ctx;
    assert_string_equal(update_action_name(update_action_of(UPDATE_UP_TO_DATE)), "up_to_date");
    assert_string_equal(update_action_name(update_action_of(UPDATE_NOT_ELIGIBLE)), "not_eligible");
    assert_string_equal(update_action_name(update_action_of(UPDATE_ALREADY_STAGED)), "already_staged");
    assert_string_equal(update_action_name(update_action_of(UPDATE_FETCH_NEWER)), "staged");
    assert_string_equal(update_action_name(update_action_of(UPDATE_FETCH_DOWNGRADE)), "staged");
    assert_string_equal(update_action_name(update_action_of(UPDATE_FETCH_FORCED)), "staged");
    assert_string_equal(update_action_name(UPDATE_ACTION_NONE), "");
}

/* The member names of o, sorted, comma-separated, in buf. */
static const char *members(const cJSON *o, char *buf, size_t size)
{
    const char *names[32];
    size_t n = 0;
    for (const cJSON *it = o ? o->child : NULL; it && n < 32; it = it->next)
        names[n++] = it->string;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(buf, names[i], size - strlen(buf) - 1);
        if (i + 1 < n)
            strncat(buf, ",", size - strlen(buf) - 1);
    }
    return buf;
}

/* check and update print the same members whichever the source: the
 * mirror's part is null for the API, an object for a mirror. */
static void test_report_same_members_from_both_sources(void **ctx)
{
    (void)ctx;
    char api_members[512], mirror_members[512];
    update_report api = {.installed = "1.0",
                         .latest = "1.0",
                         .checked_at = "2026-11-21T10:00:00Z",
                         .source = "api",
                         .action = UPDATE_ACTION_UP_TO_DATE};
    cJSON *a = NULL;
    assert_int_equal(update_report_json(NULL, &api, &a, NULL), ERR_OK);
    cJSON *detail = cJSON_CreateObject();
    cJSON_AddNumberToObject(detail, "seq", 3);
    update_report mirror = api;
    mirror.source = "mirror";
    mirror.mirror = detail;
    cJSON *m = NULL;
    assert_int_equal(update_report_json(NULL, &mirror, &m, NULL), ERR_OK);
    assert_string_equal(members(a, api_members, sizeof api_members), members(m, mirror_members, sizeof mirror_members));
    assert_string_equal(api_members,
                        "action,checked_at,installed_version,latest_version,mirror,source,staged,update_available");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(a, "mirror")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(a, "staged")));
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "mirror"), "seq")->valueint, 3);
    assert_string_equal(cJSON_GetObjectItem(m, "source")->valuestring, "mirror");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(m, "update_available")));
    cJSON_Delete(a);
    cJSON_Delete(m);

    /* check: no action, no staged */
    update_report check = {.installed = NULL, .latest = "2.0", .checked_at = "2026-11-21T10:00:00Z", .source = "api"};
    cJSON *c = NULL;
    assert_int_equal(update_report_json(NULL, &check, &c, NULL), ERR_OK);
    assert_string_equal(members(c, api_members, sizeof api_members),
                        "checked_at,installed_version,latest_version,mirror,source,update_available");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c, "update_available")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "installed_version")));
    cJSON_Delete(c);
}

/* ---- The flow (update_run) against a fake platform ---------------------------------------- */

#define INSTALLER_BYTES 4096

typedef struct flow_fixture {
    support_staging *staging;         /* cfg: state_dir, no signature required */
    support_installer_route platform; /* offers version, the body a minimal PE */
    char headers[256];
    char *installer;
    http_client *http;
    int transports; /* times the flow asked for the client */
    int statuses;   /* times it handed the state over for status.json */
    bool status_had_state;
} flow_fixture;

static error_code stub_transport(void *user, update_source source, http_client **http, error_info *err)
{
    flow_fixture *f = user;
    (void)err;
    assert_int_equal(source, UPDATE_SOURCE_API);
    f->transports++;
    *http = f->http;
    return ERR_OK;
}

static error_code stub_write_status(void *user, state *s, error_info *err)
{
    flow_fixture *f = user;
    (void)err;
    f->statuses++;
    f->status_had_state = s != NULL;
    return ERR_OK;
}

/* The platform offers version from now on. */
static void offer(flow_fixture *f, const char *version)
{
    snprintf(f->headers, sizeof f->headers,
             "X-Installer-Version: %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n", version,
             INSTALLER_BYTES);
    f->platform.headers = f->headers;
}

static int flow_setup(void **ctx)
{
    flow_fixture *f = calloc(1, sizeof *f);
    f->staging = support_staging_new("update");
    config *cfg = &f->staging->cfg;
    cfg->base_url = text_dup("https://platform.test");
    cfg->installer.installed_version = text_dup("1.0");
    char *pe = support_write_pe(f->staging->dir, "fixture.exe", INSTALLER_BYTES, 3);
    size_t len = 0;
    error_info err;
    assert_int_equal(platform_read_file(pe, INSTALLER_BYTES, &f->installer, &len, &err), ERR_OK);
    assert_int_equal(len, INSTALLER_BYTES);
    free(pe);
    f->platform.body = f->installer;
    f->platform.body_len = len;
    offer(f, "2.0");
    f->http = support_fake_api_client(cfg, support_fake_installer_route, &f->platform, NULL);
    *ctx = f;
    return 0;
}

static int flow_teardown(void **ctx)
{
    flow_fixture *f = *ctx;
    http_client_free(f->http);
    free(f->installer);
    support_staging_free(f->staging);
    free(f);
    return 0;
}

/* What check (fetch false) or update asks, as the command line would. */
static update_request request(flow_fixture *f, const char *command, bool fetch)
{
    update_request req = {
        .source = UPDATE_SOURCE_API,
        .fetch = fetch,
        .command = command,
        .hooks = {stub_transport, stub_write_status, f},
    };
    return req;
}

/* State section "installer" as saved, member name (a copy, the caller's). */
static cJSON *saved_member(flow_fixture *f, const char *name)
{
    state *s = NULL;
    error_info err;
    assert_int_equal(state_load(f->staging->cfg.state_dir, &s, &err), ERR_OK);
    cJSON *copy = cJSON_Duplicate(cJSON_GetObjectItem(state_section(s, "installer"), name), true);
    state_free(s);
    return copy;
}

static void test_check_learns_the_offer_and_records_it(void **ctx)
{
    flow_fixture *f = *ctx;
    update_request req = request(f, "check", false);
    update_outcome out;
    error_info err;
    assert_int_equal(update_run(&f->staging->cfg, &req, &out, &err), ERR_OK);
    assert_int_equal(out.exit_code, UPDATE_EXIT_AVAILABLE);
    assert_string_equal(out.installed, "1.0");
    assert_string_equal(out.latest, "2.0");
    assert_true(out.update_available && out.eligible);
    assert_int_equal(out.action, UPDATE_ACTION_NONE);
    assert_int_equal(out.failed, UPDATE_STEP_NONE);
    assert_int_equal(f->platform.requests, 1);
    assert_int_equal(f->transports, 1);
    assert_true(f->statuses == 1 && f->status_had_state);
    /* Saved: what the platform offers, and the command's outcome. */
    cJSON *latest = saved_member(f, "latest_version");
    cJSON *last = saved_member(f, "last_command");
    assert_string_equal(latest->valuestring, "2.0");
    assert_string_equal(cJSON_GetObjectItem(last, "command")->valuestring, "check");
    assert_int_equal(cJSON_GetObjectItem(last, "exit_code")->valueint, UPDATE_EXIT_AVAILABLE);
    cJSON_Delete(latest);
    cJSON_Delete(last);
    /* --json: the API's members, no action. */
    cJSON *doc = NULL;
    assert_int_equal(update_outcome_json(&f->staging->cfg, &req, &out, &doc, &err), ERR_OK);
    assert_string_equal(cJSON_GetObjectItem(doc, "source")->valuestring, "api");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(doc, "mirror")));
    assert_null(cJSON_GetObjectItem(doc, "action"));
    cJSON_Delete(doc);
    update_outcome_free(&out);
}

static void test_update_stages_then_finds_it_staged(void **ctx)
{
    flow_fixture *f = *ctx;
    update_request req = request(f, "update", true);
    update_outcome out;
    error_info err;
    assert_int_equal(update_run(&f->staging->cfg, &req, &out, &err), ERR_OK);
    assert_int_equal(out.action, UPDATE_ACTION_STAGED);
    assert_string_equal(out.staged.version, "2.0");
    assert_non_null(out.staged.path);
    assert_int_equal(out.exit_code, 0);
    char *current = support_staged_current(f->staging);
    assert_string_equal(current, "2.0");
    free(current);
    cJSON *doc = NULL;
    assert_int_equal(update_outcome_json(&f->staging->cfg, &req, &out, &doc, &err), ERR_OK);
    assert_string_equal(cJSON_GetObjectItem(doc, "action")->valuestring, "staged");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "staged"), "version")->valuestring, "2.0");
    cJSON_Delete(doc);
    update_outcome_free(&out);

    /* Again: decided on the answer's headers, nothing staged anew. */
    assert_int_equal(update_run(&f->staging->cfg, &req, &out, &err), ERR_OK);
    assert_int_equal(out.action, UPDATE_ACTION_ALREADY_STAGED);
    assert_int_equal(out.verdict, UPDATE_ALREADY_STAGED);
    assert_null(out.staged.path);
    assert_int_equal(f->platform.requests, 2);
    update_outcome_free(&out);
}

static void test_update_refuses_a_downgrade(void **ctx)
{
    flow_fixture *f = *ctx;
    offer(f, "0.9");
    update_request req = request(f, "update", true);
    update_outcome out;
    error_info err;
    assert_int_equal(update_run(&f->staging->cfg, &req, &out, &err), ERR_REJECTED);
    assert_int_equal(out.failed, UPDATE_STEP_DECIDE);
    assert_non_null(strstr(err.message, "the platform offers 0.9, older than the installed 1.0"));
    assert_int_equal(support_staging_entries(f->staging), 0);
    cJSON *last = saved_member(f, "last_command");
    assert_int_equal(cJSON_GetObjectItem(last, "exit_code")->valueint, 4);
    assert_non_null(strstr(cJSON_GetObjectItem(last, "error")->valuestring, "older than the installed 1.0"));
    cJSON_Delete(last);
    assert_int_equal(f->statuses, 1);
    update_outcome_free(&out);
}

/* publish serves the fleet: the host's own installed version is not the measure. */
static void test_publish_is_measured_for_the_fleet(void **ctx)
{
    flow_fixture *f = *ctx;
    offer(f, "1.0");
    update_request req = request(f, "update", true);
    update_outcome out;
    error_info err;
    assert_int_equal(update_run(&f->staging->cfg, &req, &out, &err), ERR_OK);
    assert_int_equal(out.action, UPDATE_ACTION_UP_TO_DATE);
    update_outcome_free(&out);
    req.command = "publish";
    req.for_fleet = true;
    assert_int_equal(update_run(&f->staging->cfg, &req, &out, &err), ERR_OK);
    assert_null(out.installed);
    assert_int_equal(out.action, UPDATE_ACTION_STAGED);
    assert_string_equal(out.staged.version, "1.0");
    update_outcome_free(&out);
}

/* A Retry-After an earlier run recorded: check and update do not call the
 * platform before it; update --force does, and so does run's update part,
 * run having judged it before its parts. */
static void test_retry_after_is_respected_where_it_should_be(void **ctx)
{
    flow_fixture *f = *ctx;
    error_info err;
    int64_t now = platform_time_utc_ms();
    assert_int_equal(retry_after_record(f->staging->s, now + 3600 * 1000, now, &err), ERR_OK);
    assert_int_equal(state_save(f->staging->s, &err), ERR_OK);
    assert_int_equal(update_respect_retry_after(f->staging->s, "then what", &err), ERR_TEMPORARY);
    assert_non_null(strstr(err.message, "(Retry-After); then what"));

    update_outcome out;
    update_request check = request(f, "check", false);
    assert_int_equal(update_run(&f->staging->cfg, &check, &out, &err), ERR_TEMPORARY);
    assert_int_equal(out.failed, UPDATE_STEP_OPEN);
    assert_non_null(strstr(err.message, "try again after that time"));
    assert_null(strstr(err.message, "--force"));
    update_outcome_free(&out);
    update_request update = request(f, "update", true);
    assert_int_equal(update_run(&f->staging->cfg, &update, &out, &err), ERR_TEMPORARY);
    assert_non_null(strstr(err.message, "or use update --force"));
    update_outcome_free(&out);
    assert_int_equal(f->platform.requests, 0);

    update.force = true;
    assert_int_equal(update_run(&f->staging->cfg, &update, &out, &err), ERR_OK);
    update_outcome_free(&out);
    assert_int_equal(f->platform.requests, 1);
    check.retry_after_judged = true;
    check.command = NULL; /* run drives it: no last_command */
    assert_int_equal(update_run(&f->staging->cfg, &check, &out, &err), ERR_OK);
    update_outcome_free(&out);
    assert_int_equal(f->platform.requests, 2);
    cJSON *last = saved_member(f, "last_command");
    assert_string_equal(cJSON_GetObjectItem(last, "command")->valuestring, "update");
    cJSON_Delete(last);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide_table),
        cmocka_unit_test(test_refused_downgrade_names_source_and_the_way_out),
        cmocka_unit_test(test_no_is_staged_means_never_staged),
        cmocka_unit_test(test_action_names),
        cmocka_unit_test(test_report_same_members_from_both_sources),
        cmocka_unit_test_setup_teardown(test_check_learns_the_offer_and_records_it, flow_setup, flow_teardown),
        cmocka_unit_test_setup_teardown(test_update_stages_then_finds_it_staged, flow_setup, flow_teardown),
        cmocka_unit_test_setup_teardown(test_update_refuses_a_downgrade, flow_setup, flow_teardown),
        cmocka_unit_test_setup_teardown(test_publish_is_measured_for_the_fleet, flow_setup, flow_teardown),
        cmocka_unit_test_setup_teardown(test_retry_after_is_respected_where_it_should_be, flow_setup, flow_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
