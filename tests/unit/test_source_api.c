/* test_source_api.c — the platform's installer route as the source of the
 * offer: the answer's headers judged as the offer (source_api_offer), and
 * check's one GET that stops after them (source_api_latest), over http.h's
 * fake transport: a version that is there, absent, invalid, and a file name
 * check does not read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/text.h"
#include "core/config.h"
#include "core/log.h"
#include "installer/source_api.h"

#include "net/api.h"
#include "net/http_fake.h"

#include "support.h"

/* The platform's installer route answers with platform.headers. */
typedef struct fixture {
    support_installer_route platform;
    config cfg;
    http_client *http;
} fixture;

static int setup(void **ctx)
{
    fixture *f = calloc(1, sizeof *f);
    log_set_level(LOG_QUIET);
    f->platform.body = "MZ and the rest of an installer";
    f->platform.body_len = strlen(f->platform.body);
    f->http = support_platform_client(&f->cfg, support_fake_installer_route, &f->platform);
    *ctx = f;
    return 0;
}

static int teardown(void **ctx)
{
    fixture *f = *ctx;
    http_client_free(f->http);
    config_free(&f->cfg);
    free(f);
    return 0;
}

static void test_latest_is_the_answers_version(void **ctx)
{
    fixture *f = *ctx;
    f->platform.headers = "X-Installer-Version: 26.01.03.24329-0de7ab+\r\nContent-Type: application/octet-stream\r\n";
    char *version = NULL;
    error_info err;
    assert_int_equal(source_api_latest(f->http, "windows", &version, &err), ERR_OK);
    assert_string_equal(version, "26.01.03.24329-0de7ab+");
    assert_int_equal(f->platform.requests, 1);
    free(version);
}

/* An error page where the installer should be: no version, so no installer (exit 4). */
static void test_latest_without_a_version_is_rejected(void **ctx)
{
    fixture *f = *ctx;
    f->platform.headers = "Content-Type: text/html\r\n";
    char *version = NULL;
    error_info err;
    assert_int_equal(source_api_latest(f->http, "windows", &version, &err), ERR_REJECTED);
    assert_null(version);
    assert_int_equal(error_exit_code(err.code), 4);
    assert_non_null(strstr(err.message, "(Content-Type text/html) carries no X-Installer-Version header"));
}

static void test_latest_with_an_invalid_version_is_rejected(void **ctx)
{
    fixture *f = *ctx;
    f->platform.headers = "X-Installer-Version: ../../etc\r\n";
    char *version = NULL;
    error_info err;
    assert_int_equal(source_api_latest(f->http, "windows", &version, &err), ERR_REJECTED);
    assert_null(version);
    assert_non_null(strstr(err.message, "X-Installer-Version: "));
}

/* check wants the version only: a file name an update would refuse is not read. */
static void test_latest_does_not_read_the_file_name(void **ctx)
{
    fixture *f = *ctx;
    f->platform.headers = "X-Installer-Version: 2.0\r\nContent-Disposition: attachment; filename=\"CON.exe\"\r\n";
    char *version = NULL;
    error_info err;
    assert_int_equal(source_api_latest(f->http, "windows", &version, &err), ERR_OK);
    assert_string_equal(version, "2.0");
    free(version);

    http_stream_headers h;
    memset(&h, 0, sizeof h);
    static const char *const names[] = {"X-Installer-Version", NULL};
    static const char *const values[] = {"2.0"};
    h.keep_names = names;
    h.kept = values;
    h.content_disposition = "attachment; filename=\"CON.exe\"";
    download_offer offer;
    char *name = NULL;
    assert_int_equal(source_api_offer(&h, 10, &offer, &name, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "Content-Disposition"));
    assert_int_equal(source_api_offer(&h, 10, &offer, NULL, &err), ERR_OK);
    assert_string_equal(offer.version, "2.0");
    assert_null(offer.file_name);
    assert_int_equal(offer.total_length, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_latest_is_the_answers_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latest_without_a_version_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latest_with_an_invalid_version_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latest_does_not_read_the_file_name, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
