/* test_download.c — the resume decisions of download.c, driven through the
 * fake transport of http.h: fresh download, 206 continuing a partial with
 * If-Range, a server that answers 200 to Range, a 206 that does not match
 * (no validator), 416, the accept hook, and rejected headers; an offer
 * known ahead (the mirror's) through the same path: no byte past its
 * length, its SHA-256 compared, its URL's credentials never shown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <mbedtls/md.h>

#include "core/config.h"
#include "installer/download.h"
#include "net/api.h"
#include "net/http.h"
#include "net/http_fake.h"
#include "core/log.h"
#include "platform/platform.h"
#include "base/text.h"

#include "support.h"

#define BODY_LEN (3 * 1024 * 1024 + 17)

typedef struct fake_server {
    unsigned char *body;
    const char *version;
    const char *disposition;
    bool validators;        /* send ETag */
    bool ranges;            /* honour Range */
    bool answer_416;        /* answer 416 to any Range */
    int64_t total_override; /* Content-Range total to announce (0: real) */
    bool second_answer;     /* a second 200's headers follow the first's on the same transfer */
    int64_t big_total;      /* non-zero: a 206 continues an installer of this many bytes (zeros) */
    int installer_requests;
    char last_range[128]; /* "Range: ..." line of the last installer request, "" if none */
    char last_if_range[128];
} fake_server;

static error_code fake(void *ctx, const char *method, const char *url, const char *body, size_t body_len,
                       const char *extra, http_fake_response *r, error_info *err)
{
    fake_server *s = ctx;
    (void)body, (void)body_len, (void)err, (void)method;
    if (support_answer_token(url, "tok", r))
        return ERR_OK;
    s->installer_requests++;
    char *range = support_header_value(extra, "Range: bytes=");
    char *if_range = support_header_value(extra, "If-Range: ");
    snprintf(s->last_range, sizeof s->last_range, "%s", range ? range : "");
    snprintf(s->last_if_range, sizeof s->last_if_range, "%s", if_range ? if_range : "");
    long long start = range ? strtoll(range, NULL, 10) : 0; /* past 2 GiB too: long is 32 bits on Windows */
    bool partial = range && s->ranges && !s->answer_416 && (!if_range || strcmp(if_range, "\"v1\"") == 0);
    char headers[1024];
    int n = snprintf(headers, sizeof headers, "X-Installer-Version: %s\r\nContent-Disposition: %s\r\n%s", s->version,
                     s->disposition, s->validators ? "ETag: \"v1\"\r\n" : "");
    if (partial && s->big_total) {
        r->status = 206;
        r->body_len = (size_t)(s->big_total - start);
        snprintf(headers + n, sizeof headers - (size_t)n,
                 "Content-Range: bytes %lld-%lld/%lld\r\nContent-Length: %zu\r\n", start, (long long)s->big_total - 1,
                 (long long)s->big_total, r->body_len);
        r->body = calloc(1, r->body_len);
    } else if (range && s->answer_416) {
        r->status = 416;
        snprintf(headers + n, sizeof headers - (size_t)n, "Content-Range: bytes */%d\r\n", BODY_LEN);
    } else if (partial) {
        r->status = 206;
        snprintf(headers + n, sizeof headers - (size_t)n,
                 "Content-Range: bytes %lld-%d/%lld\r\nContent-Length: %lld\r\n", start, BODY_LEN - 1,
                 (long long)(s->total_override ? s->total_override : BODY_LEN), BODY_LEN - start);
        r->body_len = (size_t)(BODY_LEN - start);
        r->body = malloc(r->body_len);
        memcpy(r->body, s->body + start, r->body_len);
    } else {
        r->status = 200;
        n += snprintf(headers + n, sizeof headers - (size_t)n, "Content-Length: %d\r\n", BODY_LEN);
        if (s->second_answer)
            snprintf(headers + n, sizeof headers - (size_t)n,
                     "\r\nHTTP/1.1 200 OK\r\nX-Installer-Version: 24.3.2\r\nContent-Length: %d\r\n", BODY_LEN);
        r->body_len = BODY_LEN;
        r->body = malloc(BODY_LEN);
        memcpy(r->body, s->body, BODY_LEN);
    }
    r->headers = text_dup(headers);
    free(range);
    free(if_range);
    return ERR_OK;
}

typedef struct fixture {
    char *dir; /* support_tempdir */
    char path[128];
    fake_server server;
    config cfg;
    http_client *http;
    char sha[65];
} fixture;

static int setup(void **ctx)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = support_tempdir("download");
    f->server.body = malloc(BODY_LEN);
    for (size_t i = 0; i < BODY_LEN; i++)
        f->server.body[i] = (unsigned char)(i * 2654435761u >> 13);
    f->server.version = "24.3.1";
    f->server.disposition = "attachment; filename=\"setup.exe\"";
    f->server.validators = true;
    f->server.ranges = true;
    unsigned char digest[32];
    mbedtls_md(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), f->server.body, BODY_LEN, digest);
    for (int i = 0; i < 32; i++)
        sprintf(f->sha + 2 * i, "%02x", digest[i]);
    f->http = support_platform_client(&f->cfg, fake, &f->server);
    snprintf(f->path, sizeof f->path, "%s%cdownloads%c24.3.1.part", f->dir, platform_path_separator(),
             platform_path_separator());
    log_set_level(LOG_QUIET);
    *ctx = f;
    return 0;
}

static int teardown(void **ctx)
{
    fixture *f = *ctx;
    http_client_free(f->http);
    config_free(&f->cfg);
    error_info err;
    assert_int_equal(platform_remove_tree(f->dir, &err), ERR_OK);
    free(f->dir);
    free(f->server.body);
    free(f);
    return 0;
}

static error_code run(fixture *f, download_result *res, download_accept_fn accept, void *user, error_info *err)
{
    download_request req = {.state_dir = f->dir, .platform = "windows", .accept = accept, .accept_user = user};
    return download_run(f->http, &req, res, err);
}

/* A partial of `bytes` bytes from an earlier run, with its sidecar. */
static void seed_partial(fixture *f, size_t bytes, const char *etag)
{
    char path[160];
    snprintf(path, sizeof path, "%s/downloads", f->dir);
    mkdir(path, 0700);
    FILE *fp = fopen(f->path, "wb");
    fwrite(f->server.body, 1, bytes + 1000, fp); /* + an unflushed tail the sidecar does not vouch for */
    fclose(fp);
    snprintf(path, sizeof path, "%s.json", f->path);
    fp = fopen(path, "wb");
    fprintf(fp,
            "{\"version\":\"24.3.1\",\"url\":\"x\",\"etag\":%s,\"last_modified\":null,\"file_name\":\"setup.exe\","
            "\"total_length\":%d,\"bytes\":%zu}",
            etag ? etag : "null", BODY_LEN, bytes);
    fclose(fp);
}

static void expect_complete(fixture *f, const download_result *res)
{
    assert_false(res->skipped);
    assert_string_equal(res->sha256, f->sha);
    assert_int_equal(res->size, BODY_LEN);
    assert_string_equal(res->version, "24.3.1");
    assert_string_equal(res->file_name, "setup.exe");
    assert_string_equal(res->path, f->path);
    FILE *fp = fopen(f->path, "rb");
    unsigned char *data = malloc(BODY_LEN + 1);
    assert_int_equal(fread(data, 1, BODY_LEN + 1, fp), BODY_LEN);
    fclose(fp);
    assert_memory_equal(data, f->server.body, BODY_LEN);
    free(data);
}

static void test_fresh(void **ctx)
{
    fixture *f = *ctx;
    download_result res;
    error_info err;
    assert_int_equal(run(f, &res, NULL, NULL, &err), ERR_OK);
    expect_complete(f, &res);
    assert_int_equal(res.resumed_from, 0);
    assert_string_equal(f->server.last_range, "");
    download_result_free(&res);
}

static void test_resume_with_if_range(void **ctx)
{
    fixture *f = *ctx;
    seed_partial(f, 1234567, "\"\\\"v1\\\"\"");
    download_result res;
    error_info err;
    assert_int_equal(run(f, &res, NULL, NULL, &err), ERR_OK);
    assert_string_equal(f->server.last_range, "1234567-");
    assert_string_equal(f->server.last_if_range, "\"v1\"");
    assert_int_equal(res.resumed_from, 1234567);
    assert_int_equal(res.bytes_received, BODY_LEN - 1234567);
    expect_complete(f, &res); /* the kept prefix was re-hashed */
    download_result_free(&res);
}

static void test_changed_validator_starts_over(void **ctx)
{
    fixture *f = *ctx;
    seed_partial(f, 1000000, "\"\\\"old\\\"\"");
    download_result res;
    error_info err;
    assert_int_equal(run(f, &res, NULL, NULL, &err), ERR_OK);
    assert_int_equal(f->server.installer_requests, 1); /* the 200 is used as it comes */
    assert_int_equal(res.bytes_received, BODY_LEN);
    expect_complete(f, &res);
    download_result_free(&res);
}

static void test_server_ignores_range(void **ctx)
{
    fixture *f = *ctx;
    f->server.ranges = false;
    seed_partial(f, 2000000, NULL);
    download_result res;
    error_info err;
    assert_int_equal(run(f, &res, NULL, NULL, &err), ERR_OK);
    assert_string_equal(f->server.last_range, "2000000-");
    assert_string_equal(f->server.last_if_range, "");
    expect_complete(f, &res);
    download_result_free(&res);
}

static void test_mismatched_206_without_validator_asks_again(void **ctx)
{
    fixture *f = *ctx;
    f->server.validators = false;
    f->server.total_override = BODY_LEN + 5; /* not the partial's total length */
    seed_partial(f, 2000000, NULL);
    download_result res;
    error_info err;
    assert_int_equal(run(f, &res, NULL, NULL, &err), ERR_OK);
    assert_int_equal(f->server.installer_requests, 2);
    assert_string_equal(f->server.last_range, ""); /* the second request starts over */
    expect_complete(f, &res);
    download_result_free(&res);
}

static void test_416_starts_over(void **ctx)
{
    fixture *f = *ctx;
    f->server.answer_416 = true;
    seed_partial(f, 2000000, "\"\\\"v1\\\"\"");
    download_result res;
    error_info err;
    assert_int_equal(run(f, &res, NULL, NULL, &err), ERR_OK);
    assert_int_equal(f->server.installer_requests, 2);
    expect_complete(f, &res);
    download_result_free(&res);
}

static error_code skip_all(void *user, const download_offer *offer, bool *skip, error_info *err)
{
    (void)err;
    *(int *)user += 1;
    assert_string_equal(offer->version, "24.3.1");
    assert_int_equal(offer->total_length, BODY_LEN);
    *skip = true;
    return ERR_OK;
}

static void test_accept_hook_skips(void **ctx)
{
    fixture *f = *ctx;
    int calls = 0;
    download_result res;
    error_info err;
    assert_int_equal(run(f, &res, skip_all, &calls, &err), ERR_OK);
    assert_true(res.skipped);
    assert_int_equal(calls, 1);
    assert_int_equal(access(f->path, F_OK), -1);
    download_result_free(&res);
}

/* Records what the accept hook was offered, and skips. */
static error_code record_and_skip(void *user, const download_offer *offer, bool *skip, error_info *err)
{
    (void)err;
    *(int64_t *)user = offer->total_length;
    *skip = true;
    return ERR_OK;
}

/* A partial of more than 2 GiB (where Windows' long ends) is resumed, not
 * started over: the request asks for the rest with If-Range and the 206
 * continuing it is taken. The hook stops there, before the kept 2 GiB would
 * be re-hashed (minutes on a busy machine); writing at such an offset is
 * test_platform's. The partial is sparse: no disk is used. */
static void test_resume_past_2gib(void **ctx)
{
    fixture *f = *ctx;
    const int64_t kept = 2147483648LL + 4096, total = kept + 4096;
    f->server.big_total = total;
    char path[160];
    snprintf(path, sizeof path, "%s/downloads", f->dir);
    mkdir(path, 0700);
    error_info err;
    FILE *fp = platform_fopen(f->path, "wb");
    assert_non_null(fp);
    assert_int_equal(platform_seek(fp, (uint64_t)kept - 1, &err), ERR_OK);
    assert_int_equal(fputc(0, fp), 0);
    assert_int_equal(fclose(fp), 0);
    snprintf(path, sizeof path, "%s.json", f->path);
    fp = fopen(path, "wb");
    fprintf(fp,
            "{\"version\":\"24.3.1\",\"url\":\"x\",\"etag\":\"\\\"v1\\\"\",\"last_modified\":null,"
            "\"file_name\":\"setup.exe\",\"total_length\":%lld,\"bytes\":%lld}",
            (long long)total, (long long)kept);
    fclose(fp);

    int64_t offered = 0;
    download_result res;
    assert_int_equal(run(f, &res, record_and_skip, &offered, &err), ERR_OK);
    assert_string_equal(f->server.last_range, "2147487744-");
    assert_string_equal(f->server.last_if_range, "\"v1\"");
    assert_int_equal(f->server.installer_requests, 1);
    assert_true(offered == total); /* the 206 was taken as continuing the partial */
    assert_true(res.skipped);
    download_result_free(&res);
}

static void test_rejected_headers_write_nothing(void **ctx)
{
    fixture *f = *ctx;
    static const struct {
        const char *version, *disposition;
    } bad[] = {
        {"../../etc", "attachment; filename=\"setup.exe\""},
        {"24.3.1", "attachment; filename=\"../..\""},
        {"24.3.1", "attachment; filename=\"CON.msi\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f->server.version = bad[i].version;
        f->server.disposition = bad[i].disposition;
        download_result res;
        error_info err;
        assert_int_equal(run(f, &res, NULL, NULL, &err), ERR_REJECTED);
        assert_true(strlen(err.message) > 0);
        assert_int_equal(access(f->path, F_OK), -1);
        download_result_free(&res);
    }
}

/* Threads of this process (Linux); -1 where /proc is not there (wine). */
static int thread_count(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    if (!fp)
        return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(fp);
    return n;
}

/* A second "headers complete" event for one request (a proxy's answer
 * taken for the platform's) is refused with a clear error; the pipeline
 * started for the first is finished (no thread left behind), and the next
 * run downloads normally. */
static void test_second_answer_refused(void **ctx)
{
    fixture *f = *ctx;
    f->server.second_answer = true;
    int threads = thread_count();
    download_result res;
    error_info err;
    assert_int_equal(run(f, &res, NULL, NULL, &err), ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "second"));
    assert_int_equal(f->server.installer_requests, 1);
    assert_int_equal(thread_count(), threads);
    download_result_free(&res);

    f->server.second_answer = false;
    assert_int_equal(run(f, &res, NULL, NULL, &err), ERR_OK);
    expect_complete(f, &res);
    download_result_free(&res);
}

/* ---- An offer known ahead (the mirror's) through the same path ---------------------- */

static error_code run_offer(fixture *f, const download_offer *offer, download_result *res, error_info *err)
{
    download_request req = {.state_dir = f->dir, .offer = offer};
    return download_run(f->http, &req, res, err);
}

static bool downloads_empty(const fixture *f)
{
    char dir[160];
    snprintf(dir, sizeof dir, "%s/downloads", f->dir);
    char **names = NULL;
    size_t count = 0;
    if (platform_list_dir(dir, &names, &count, NULL) != ERR_OK)
        return true;
    platform_free_names(names, count);
    return count == 0;
}

static void test_known_offer(void **ctx)
{
    fixture *f = *ctx;
    download_offer offer = {.version = "24.3.1",
                            .file_name = "setup.exe",
                            .total_length = BODY_LEN,
                            .url = "https://fleet:pw-secret@mirror.test/installers/x.exe",
                            .sha256 = f->sha};
    download_result res;
    error_info err;
    assert_int_equal(run_offer(f, &offer, &res, &err), ERR_OK);
    expect_complete(f, &res);
    assert_int_equal(f->server.installer_requests, 1);
    assert_null(strstr(res.url, "pw-secret"));
    download_result_free(&res);
}

static void test_known_offer_longer_than_offered(void **ctx)
{
    fixture *f = *ctx;
    download_offer offer = {.version = "24.3.1",
                            .total_length = BODY_LEN - 100,
                            .url = "https://fleet:pw-secret@mirror.test/installers/x.exe",
                            .sha256 = f->sha};
    download_result res;
    error_info err;
    assert_int_equal(run_offer(f, &offer, &res, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "longer than"));
    assert_non_null(strstr(err.message, "https://mirror.test/installers/x.exe"));
    assert_null(strstr(err.message, "pw-secret"));
    assert_true(downloads_empty(f));
    download_result_free(&res);
}

static void test_known_offer_other_sha256(void **ctx)
{
    fixture *f = *ctx;
    download_offer offer = {.version = "24.3.1",
                            .total_length = BODY_LEN,
                            .url = "https://mirror.test/installers/x.exe",
                            .sha256 = "0000000000000000000000000000000000000000000000000000000000000000"};
    download_result res;
    error_info err;
    assert_int_equal(run_offer(f, &offer, &res, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "SHA-256"));
    assert_true(downloads_empty(f));
    download_result_free(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fresh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_known_offer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_known_offer_longer_than_offered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_known_offer_other_sha256, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume_with_if_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume_past_2gib, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changed_validator_starts_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_ignores_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mismatched_206_without_validator_asks_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_416_starts_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accept_hook_skips, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejected_headers_write_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_answer_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
