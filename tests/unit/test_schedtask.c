/* test_schedtask.c — the Task Scheduler definition of \outpost\run
 * (agent/cli/schedtask.c), which `outpost service install` registers: the
 * settings that make it a well-behaved agent task, the command line, and
 * the escaping of the paths it carries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cli/schedtask.h"

static char *xml_for(const char *exe, const char *config)
{
    char *xml = NULL;
    error_info err;
    error_clear(&err);
    assert_int_equal(schedtask_xml(exe, config, &xml, &err), ERR_OK);
    assert_non_null(xml);
    return xml;
}

/* Each element appears exactly once, with this content. */
static void assert_element(const char *xml, const char *element)
{
    const char *at = strstr(xml, element);
    if (!at)
        fail_msg("missing %s in:\n%s", element, xml);
    assert_null(strstr(at + 1, element));
}

static void test_settings(void **state)
{
    (void)state;
    char *xml = xml_for("C:\\Program Files\\outpost\\outpost.exe", NULL);
    static const char *const expected[] = {
        "<?xml version=\"1.0\" encoding=\"UTF-16\"?>",
        "<URI>\\outpost\\run</URI>",
        "<Interval>PT1H</Interval>",        /* hourly */
        "<RandomDelay>PT10M</RandomDelay>", /* spread over the fleet */
        "<UserId>S-1-5-18</UserId>",        /* SYSTEM */
        "<RunLevel>HighestAvailable</RunLevel>",
        "<MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>",
        "<StartWhenAvailable>true</StartWhenAvailable>", /* a missed run starts later */
        "<DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>",
        "<StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>",
        "<ExecutionTimeLimit>PT2H</ExecutionTimeLimit>",
        "<StartBoundary>2020-01-01T00:00:00</StartBoundary>", /* fixed: no install-date dependency */
        "<Command>\"C:\\Program Files\\outpost\\outpost.exe\"</Command>",
        "<Arguments>run</Arguments>",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        assert_element(xml, expected[i]);
    /* Same input, same bytes: nothing of the clock or the machine in it. */
    char *again = xml_for("C:\\Program Files\\outpost\\outpost.exe", NULL);
    assert_string_equal(xml, again);
    free(again);
    free(xml);
}

static void test_paths_escaped(void **state)
{
    (void)state;
    static const struct {
        const char *exe, *config, *command, *arguments;
    } cases[] = {
        {"D:\\Tools & More\\outpost.exe", NULL, "<Command>\"D:\\Tools &amp; More\\outpost.exe\"</Command>",
         "<Arguments>run</Arguments>"},
        {"C:\\x\\outpost.exe", "C:\\cfg <test>\\o'p.json", "<Command>\"C:\\x\\outpost.exe\"</Command>",
         "<Arguments>-c &quot;C:\\cfg &lt;test&gt;\\o&apos;p.json&quot; run</Arguments>"},
        {"C:\\M\xc3\xbcller\\outpost.exe", "C:\\ProgramData\\outpost\\outpost.json",
         "<Command>\"C:\\M\xc3\xbcller\\outpost.exe\"</Command>",
         "<Arguments>-c &quot;C:\\ProgramData\\outpost\\outpost.json&quot; run</Arguments>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *xml = xml_for(cases[i].exe, cases[i].config);
        assert_element(xml, cases[i].command);
        assert_element(xml, cases[i].arguments);
        free(xml);
    }
}

static void test_unusable_paths(void **state)
{
    (void)state;
    static const struct {
        const char *exe, *config;
    } cases[] = {
        {"C:\\a\"b\\outpost.exe", NULL}, /* a quote would end the quoted path */
        {"C:\\x\\outpost.exe", "C:\\a\"b.json"}, {"C:\\x\\out\npost.exe", NULL}, {"", NULL}, {NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *xml = NULL;
        error_info err;
        error_clear(&err);
        assert_int_equal(schedtask_xml(cases[i].exe, cases[i].config, &xml, &err), ERR_USAGE);
        assert_null(xml);
        assert_true(err.message[0] != '\0');
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settings),
        cmocka_unit_test(test_paths_escaped),
        cmocka_unit_test(test_unusable_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
