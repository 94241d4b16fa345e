/* test_fetch.c — the mirror's plain GET: file:// URLs turned into paths
 * (POSIX, drive letters, UNC shares, escapes) and read with the body cap;
 * http(s) is exercised against nginx by tests/integration/test_mirror.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "net/fetch.h"

static void test_file_url_paths(void **unused)
{
    (void)unused;
    static const struct {
        const char *url;
        const char *path; /* NULL: refused */
    } cases[] = {
        {"file:///srv/mirror/manifest.json", "/srv/mirror/manifest.json"},
        {"FILE:///srv/mirror/a%20b.json", "/srv/mirror/a b.json"},
        {"file:///C:/mirror/manifest.json", "C:/mirror/manifest.json"},
        {"file:///c|/mirror/manifest.json", "c|/mirror/manifest.json"},
        {"file://localhost/srv/m.json", "/srv/m.json"},
        {"file://fileserver/outpost$/manifest.json", "//fileserver/outpost$/manifest.json"},
        {"file:///srv/m.json?x=1", "/srv/m.json"},
        {"file:///srv/%00.json", NULL},
        {"file://", NULL},
        {"https://example.com/m.json", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *path = fetch_file_url_path(cases[i].url);
        if (!cases[i].path) {
            if (path)
                fail_msg("%s: should be refused, got %s", cases[i].url, path);
            continue;
        }
        if (!path || strcmp(path, cases[i].path) != 0)
            fail_msg("%s: got %s, want %s", cases[i].url, path ? path : "(null)", cases[i].path);
        free(path);
    }
}

static bool count_chunks(void *user, const void *data, size_t len)
{
    (void)data;
    *(size_t *)user += len;
    return true;
}

typedef struct start_seen {
    long status;
    int64_t start;
    int calls;
} start_seen;

static bool record_start(void *user, const fetch_result *res)
{
    start_seen *seen = user;
    seen->status = res->status;
    seen->start = res->range_start;
    seen->calls++;
    return true;
}

static void test_file_reads_with_cap(void **unused)
{
    (void)unused;
    char dir[] = "/tmp/outpost-fetch-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], url[300];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    /* file:///tmp/... on POSIX, file:///C:/... where the temporary directory has a drive letter */
    snprintf(url, sizeof url, "file://%s%s", path[0] == '/' ? "" : "/", path);
    for (char *c = url; *c; c++)
        if (*c == '\\')
            *c = '/';
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 1000; i++)
        fputs("0123456789", f);
    fclose(f);

    config cfg;
    assert_int_equal(config_init_defaults(&cfg, NULL), ERR_OK);
    fetch_result res;
    error_info err;
    fetch_request req = {.url = url, .max_bytes = 20000};
    assert_int_equal(fetch_get(&cfg, &req, &res, &err), ERR_OK);
    assert_int_equal(res.status, 200);
    assert_int_equal(res.body_len, 10000);
    assert_false(res.too_large);
    assert_memory_equal(res.body, "0123456789", 10);
    fetch_result_free(&res);

    req.max_bytes = 4096; /* more than the cap: kept up to it, flagged */
    assert_int_equal(fetch_get(&cfg, &req, &res, &err), ERR_OK);
    assert_true(res.too_large);
    assert_int_equal(res.body_len, 4096);
    fetch_result_free(&res);

    size_t seen = 0;
    fetch_request streamed = {.url = url, .on_data = count_chunks, .user = &seen};
    assert_int_equal(fetch_get(&cfg, &streamed, &res, &err), ERR_OK);
    assert_int_equal(seen, 10000);
    assert_null(res.body);
    fetch_result_free(&res);

    /* A range: on_start sees a 206 that starts there, the body is the rest of the file. */
    start_seen seen_start = {0, -1, 0};
    fetch_request ranged = {
        .url = url, .max_bytes = 20000, .range_from = 9995, .on_start = record_start, .user = &seen_start};
    assert_int_equal(fetch_get(&cfg, &ranged, &res, &err), ERR_OK);
    assert_int_equal(seen_start.calls, 1);
    assert_int_equal(seen_start.status, 206);
    assert_int_equal(seen_start.start, 9995);
    assert_int_equal(res.body_len, 5);
    assert_memory_equal(res.body, "56789", 5);
    fetch_result_free(&res);

    ranged.range_from = 10001; /* past the end: the whole file, as a 200 */
    seen_start.calls = 0;
    assert_int_equal(fetch_get(&cfg, &ranged, &res, &err), ERR_OK);
    assert_int_equal(seen_start.calls, 1);
    assert_int_equal(seen_start.status, 200);
    assert_int_equal(res.range_start, 0);
    assert_int_equal(res.body_len, 10000);
    fetch_result_free(&res);

    char missing[300];
    snprintf(missing, sizeof missing, "%.*s/nothing.json", (int)(strlen(url) - strlen("/manifest.json")), url);
    fetch_request gone = {.url = missing};
    assert_int_equal(fetch_get(&cfg, &gone, &res, &err), ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, missing));
    fetch_result_free(&res);

    remove(path);
    remove(dir);
    config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_url_paths),
        cmocka_unit_test(test_file_reads_with_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
