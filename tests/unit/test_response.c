/* test_response.c — reading an answer (agent/net/response.c), on its own:
 * Content-Range in every form RFC 9110 allows and none it does not (with
 * overflow checks, so a 206 that cannot be read never continues a partial
 * download); interim answers that do not count, trailers that are not
 * headers, a second final answer refused; a JSON body's size cap, whether
 * announced or not, and an error page read no further than
 * HTTP_ERROR_BODY_KEEP. The same through the client is test_http.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "net/http_int.h"

static void test_content_range_forms(void **unused)
{
    (void)unused;
    static const struct {
        const char *value;
        int64_t start, end, total;
    } cases[] = {
        {"bytes 10-19/20", 10, 19, 20},
        {"bytes 0-0/1", 0, 0, 1},
        {"bytes  10-19/20", 10, 19, 20},
        {"bytes 10-19/*", 10, 19, -1},
        {"bytes */200", -1, -1, 200},
        {"bytes 9223372036854775805-9223372036854775806/9223372036854775807", 9223372036854775805LL,
         9223372036854775806LL, 9223372036854775807LL},
        {"bytes 9223372036854775808-9223372036854775809/9223372036854775810", -1, -1, -1},
        {"bytes 0-9/18446744073709551626", -1, -1, -1},
        {"bytes 10-9/20", -1, -1, -1},  /* last before first */
        {"bytes 10-20/20", -1, -1, -1}, /* last past the end */
        {"bytes -5-9/20", -1, -1, -1},
        {"bytes 10-19/20x", -1, -1, -1},
        {"bytes 10-19", -1, -1, -1},
        {"items 10-19/20", -1, -1, -1},
        {"bytes */*", -1, -1, -1},
        {"", -1, -1, -1},
        {NULL, -1, -1, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_stream_headers h;
        memset(&h, 0x55, sizeof h);
        response_parse_content_range(cases[i].value, &h);
        if (h.range_start != cases[i].start || h.range_end != cases[i].end || h.range_total != cases[i].total)
            fail_msg("%s: %lld-%lld/%lld", cases[i].value ? cases[i].value : "(null)", (long long)h.range_start,
                     (long long)h.range_end, (long long)h.range_total);
    }
}

/* A JSON request's transfer, as http.c makes one, on a client whose cap
 * on JSON answers is max bytes. */
typedef struct json_xfer {
    http_client client;
    xfer x;
} json_xfer;

static json_xfer *json_xfer_new(int64_t max)
{
    json_xfer *j = calloc(1, sizeof *j);
    assert_non_null(j);
    j->client.cfg.max_response_bytes = max;
    j->x.client = &j->client;
    j->x.kind = XFER_JSON;
    dynbuf_init(&j->x.response, 0, false);
    return j;
}

static void json_xfer_free(json_xfer *j)
{
    response_clear(&j->x);
    dynbuf_free(&j->x.response);
    free(j);
}

static bool line(json_xfer *j, const char *text)
{
    return response_header_line(&j->x, text, strlen(text));
}

static void test_interim_answers_trailers_and_a_second_answer(void **unused)
{
    (void)unused;
    json_xfer *j = json_xfer_new(1024);
    assert_true(line(j, "HTTP/1.1 100 Continue\r\n"));
    assert_true(line(j, "Content-Type: text/plain\r\n"));
    assert_true(line(j, "\r\n"));
    assert_false(j->x.final_ended); /* an interim answer */
    assert_true(line(j, "HTTP/1.1 407 Proxy Authentication Required\r\n"));
    assert_true(line(j, "\r\n"));
    assert_false(j->x.final_ended); /* libcurl answers it itself */
    assert_true(line(j, "HTTP/2 200\r\n"));
    assert_null(j->x.headers[H_CONTENT_TYPE]); /* the interim answer's headers are gone */
    assert_true(line(j, "content-type:  application/json \r\n"));
    assert_true(line(j, "X-Unread: whatever\r\n"));
    assert_true(line(j, "\r\n"));
    assert_int_equal(j->x.status, 200);
    assert_true(j->x.headers_done);
    assert_true(j->x.final_ended);
    assert_string_equal(j->x.headers[H_CONTENT_TYPE], "application/json");
    assert_true(response_body(&j->x, "{}", 2));
    /* Trailers after a chunked body are not the response's headers. */
    assert_true(line(j, "Content-Type: text/html\r\n"));
    assert_string_equal(j->x.headers[H_CONTENT_TYPE], "application/json");
    /* A second final answer on the same transfer is refused, not mixed in. */
    assert_false(line(j, "HTTP/1.1 200 OK\r\n"));
    assert_true(j->x.second_response);
    json_xfer_free(j);
}

static void test_json_body_cap(void **unused)
{
    (void)unused;
    /* Announced too long: stopped at the end of the headers. */
    json_xfer *j = json_xfer_new(16);
    assert_true(line(j, "HTTP/1.1 200 OK"));
    assert_true(line(j, "Content-Length: 17"));
    assert_false(line(j, ""));
    assert_true(j->x.too_large);
    json_xfer_free(j);
    /* Not announced: stopped when the body goes over. */
    j = json_xfer_new(16);
    assert_true(line(j, "HTTP/1.1 200 OK"));
    assert_true(line(j, ""));
    assert_true(response_body(&j->x, "0123456789", 10));
    assert_true(response_body(&j->x, "012345", 6));
    assert_false(response_body(&j->x, "x", 1));
    assert_true(j->x.too_large);
    assert_int_equal(j->x.response.len, 16);
    json_xfer_free(j);
}

static void test_error_page_read_no_further_than_the_keep(void **unused)
{
    (void)unused;
    json_xfer *j = json_xfer_new(64LL * 1024 * 1024);
    assert_true(line(j, "HTTP/1.1 500 Internal Server Error"));
    assert_true(line(j, ""));
    char chunk[4096];
    memset(chunk, 'e', sizeof chunk);
    bool go = true;
    size_t sent = 0;
    while (go && sent < 100 * sizeof chunk) {
        go = response_body(&j->x, chunk, sizeof chunk);
        sent += sizeof chunk;
    }
    assert_false(go);
    assert_true(j->x.body_capped);
    assert_false(j->x.too_large);
    assert_int_equal(j->x.response.len, HTTP_ERROR_BODY_KEEP);
    json_xfer_free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_range_forms),
        cmocka_unit_test(test_interim_answers_trailers_and_a_second_answer),
        cmocka_unit_test(test_json_body_cap),
        cmocka_unit_test(test_error_page_read_no_further_than_the_keep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
