/* test_feeds.c — the feeds behind one interface: which are enabled, and the
 * recovery after a crash that appends to the OCSF and CEF files exactly the
 * pending incidents they lack (and nothing when run again). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/feeds.h"

#include "support.h"

static char *path_in(const char *dir, const char *name)
{
    static char buf[3][512];
    static int next;
    char *p = buf[next++ % 3];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

static int count_lines(const char *path)
{
    const char *text = support_slurp(path);
    int n = 0;
    for (; text && *text; text++)
        n += *text == '\n';
    return n;
}

static void test_enabled_feeds_jsonl_first(void **unused)
{
    (void)unused;
    config cfg = {.report = {.jsonl_file = "incidents.jsonl"}};
    feed_file feeds[FEEDS_MAX];
    assert_int_equal(feeds_enabled(&cfg, feeds), 1);
    assert_ptr_equal(feeds[0].writer, &feed_jsonl);
    cfg.report.cef_file = "x.cef";
    cfg.report.ocsf_file = "";
    assert_int_equal(feeds_enabled(&cfg, feeds), 2);
    assert_ptr_equal(feeds[1].writer, &feed_cef);
    cfg.report.ocsf_file = "x.ocsf";
    assert_int_equal(feeds_enabled(&cfg, feeds), 3);
    assert_ptr_equal(feeds[1].writer, &feed_ocsf);
    assert_ptr_equal(feeds[2].writer, &feed_cef);
}

static void test_recovery_appends_what_each_feed_lacks_once(void **unused)
{
    (void)unused;
    char *dir = support_tempdir("feeds");
    config cfg = {.state_dir = dir,
                  .report = {.jsonl_file = "incidents.jsonl",
                             .ocsf_file = "f.ocsf",
                             .cef_file = "f.cef",
                             .jsonl_max_bytes = 1 << 20,
                             .jsonl_keep = 5}};
    cJSON *items =
        cJSON_Parse("[{\"id\":\"a\",\"policy\":\"P\",\"lineage\":{\"status\":\"untraceable\",\"events\":[]}},"
                    "{\"id\":\"b|=\\\\\",\"policy\":\"Q\",\"lineage\":{\"status\":\"untraceable\","
                    "\"events\":[]}}]");
    assert_non_null(items);
    /* The crash came after "a" reached the OCSF file: it lacks "b", the CEF
     * file lacks both (and holds another program's line). */
    char *line = NULL;
    assert_int_equal(feed_ocsf.format(cJSON_GetArrayItem(items, 0), &line, NULL), ERR_OK);
    FILE *f = fopen(path_in(dir, "f.ocsf"), "wb");
    fprintf(f, "%s\n", line);
    fclose(f);
    free(line);
    f = fopen(path_in(dir, "f.cef"), "wb");
    fputs("not CEF at all\n", f);
    fclose(f);
    assert_int_equal(feeds_recover(&cfg, items, NULL), ERR_OK);
    assert_int_equal(count_lines(path_in(dir, "f.ocsf")), 2);
    assert_int_equal(count_lines(path_in(dir, "f.cef")), 3);
    assert_non_null(strstr(support_slurp(path_in(dir, "f.cef")), "externalId=b|\\=\\\\ "));
    assert_int_equal(feeds_recover(&cfg, items, NULL), ERR_OK); /* a second crash right after */
    assert_int_equal(count_lines(path_in(dir, "f.ocsf")), 2);
    assert_int_equal(count_lines(path_in(dir, "f.cef")), 3);
    cJSON_Delete(items);
    support_tempdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enabled_feeds_jsonl_first),
        cmocka_unit_test(test_recovery_appends_what_each_feed_lacks_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
