/* test_update.c — the update policy, one for both sources: every outcome
 * of update_decide from a table (up to date, newer, downgrade refused or
 * allowed by the user or the mirror's manifest, forced, already staged, not
 * in the rollout), and the check/update --json document's members. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/error.h"
#include "installer/update.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide_table),
        cmocka_unit_test(test_refused_downgrade_names_source_and_the_way_out),
        cmocka_unit_test(test_no_is_staged_means_never_staged),
        cmocka_unit_test(test_action_names),
        cmocka_unit_test(test_report_same_members_from_both_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
