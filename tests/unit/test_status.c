/* test_status.c — status.json: identity members refreshed, supplied parts
 * replaced, the others kept from the previous file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/status.h"

static void test_merge(void **unused)
{
    (void)unused;
    config cfg;
    error_info err;
    assert_int_equal(config_init_defaults(&cfg, &err), ERR_OK);
    char dir[] = "/tmp/outpost-status-XXXXXX";
    assert_non_null(mkdtemp(dir));
    free(cfg.state_dir);
    cfg.state_dir = strdup(dir);

    cJSON *doc;
    assert_int_equal(status_read(&cfg, &doc, &err), ERR_NOT_FOUND);

    cJSON *incidents = cJSON_Parse("{\"new\": 3, \"items\": []}");
    status_parts parts = {.incidents = incidents};
    assert_int_equal(status_write(&cfg, &parts, &err), ERR_OK);
    cJSON_Delete(incidents);

    cJSON *installer = cJSON_Parse("{\"latest_version\": \"2.0\"}");
    status_parts second = {.installer = installer};
    assert_int_equal(status_write(&cfg, &second, &err), ERR_OK);
    cJSON_Delete(installer);

    assert_int_equal(status_read(&cfg, &doc, &err), ERR_OK);
    assert_int_equal(cJSON_GetObjectItem(doc, "schema_version")->valueint, 1);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(doc, "generated_at")));
    cJSON *agent = cJSON_GetObjectItem(doc, "agent");
    assert_string_equal(cJSON_GetObjectItem(agent, "version")->valuestring, OUTPOST_VERSION);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(agent, "hostname")));
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "incidents"), "new")->valueint, 3);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "installer"), "latest_version")->valuestring, "2.0");
    cJSON_Delete(doc);
    config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
