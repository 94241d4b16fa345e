/* test_cef.c — the CEF line of an incident: the header and extension
 * escapes of the CEF specification, the severity scale, externalId read
 * back from a line (the crash recovery's dedupe). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/cef.h"

static cJSON *item_of(const char *json)
{
    cJSON *item = cJSON_Parse(json);
    assert_non_null(item);
    return item;
}

static char *line_of(const char *json)
{
    cJSON *item = item_of(json);
    char *line = NULL;
    assert_int_equal(cef_format(item, &line, NULL), ERR_OK);
    cJSON_Delete(item);
    return line;
}

static void test_escapes_as_the_specification_says(void **unused)
{
    (void)unused;
    char *line = line_of("{\"id\":\"a=b\\\\c\",\"trigger_time\":\"2026-11-21T10:00:00Z\",\"policy\":\"P|Q\\\\R=S\\nT\","
                         "\"dataset\":\"x=y|z\\r\\n\\tq\",\"user\":null,\"risk_score\":12.5,\"ai_severity\":null,"
                         "\"blocked\":false,\"created_by\":\"policy\",\"lineage\":{\"status\":\"untraceable\","
                         "\"start_event_id\":null,\"end_event_id\":null,\"events\":[],\"missing_event_ids\":[]}}");
    /* Header: | and \ escaped, = not, a line break a space. Extension: = and
     * \ escaped, | not, CR and LF as \r and \n, a tab as is. */
    const char *expect = "CEF:0|outpost|outpost|" OUTPOST_VERSION "|dlp-incident|DLP incident: P\\|Q\\\\R=S T|1|"
                         "externalId=a\\=b\\\\c rt=1795255200000 act=detected cs1=P|Q\\\\R\\=S\\nT cs1Label=policy "
                         "cs2=x\\=y|z\\r\\n\tq cs2Label=dataset cs3=untraceable cs3Label=lineageStatus cs4=12.5 "
                         "cs4Label=riskScore cs5=policy cs5Label=createdBy";
    assert_string_equal(line, expect);
    char *id = NULL;
    assert_true(cef_line_id(line, strlen(line), &id));
    assert_string_equal(id, "a=b\\c");
    free(id);
    free(line);
}

static void test_severity_from_ai_severity_else_risk(void **unused)
{
    (void)unused;
    static const struct {
        const char *ai;
        const char *risk;
        const char *severity;
    } cases[] = {{"\"SEVERITY_CRITICAL\"", "1", "|10|"},
                 {"\"high\"", "1", "|8|"},
                 {"\"medium\"", "null", "|5|"},
                 {"\"low\"", "99", "|3|"},
                 {"null", "99", "|10|"},
                 {"null", "44", "|4|"},
                 {"null", "null", "|0|"},
                 {"\"weird\"", "-3", "|0|"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"id\":\"x\",\"ai_severity\":%s,\"risk_score\":%s}", cases[i].ai, cases[i].risk);
        char *line = line_of(json);
        if (!strstr(line, cases[i].severity))
            fail_msg("case %zu: %s", i, line);
        free(line);
    }
}

static void test_line_id_refuses_other_lines(void **unused)
{
    (void)unused;
    char *id = NULL;
    const char *lines[] = {"", "{\"id\":\"x\"}", "CEF:0|a|b|c|d|e|5|rt=1 externalId=x", "CEF:0|a|b|c|d|e|5",
                           "CEF:0|a|b|c|d|e|5|externalId="};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        if (cef_line_id(lines[i], strlen(lines[i]), &id))
            fail_msg("line %zu read as %s", i, id);
    const char *ok = "CEF:0|a\\|b|b|c|d|e|5|externalId=id 1 with spaces rt=1";
    assert_true(cef_line_id(ok, strlen(ok), &id));
    assert_string_equal(id, "id 1 with spaces");
    free(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes_as_the_specification_says),
        cmocka_unit_test(test_severity_from_ai_severity_else_risk),
        cmocka_unit_test(test_line_id_refuses_other_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
