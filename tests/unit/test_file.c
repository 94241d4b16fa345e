/* test_file.c — file:// URLs (agent/net/file.c): the local path each
 * names. Reading them through the client is test_http.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "net/http_int.h"

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
        char *path = file_url_path(cases[i].url);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_url_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
