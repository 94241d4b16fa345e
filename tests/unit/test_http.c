/* test_http.c — the HTTP client (http.c) on its fake transport and a fake
 * clock: token exchange and renewal, 401/403 handling, retries with
 * backoff and Retry-After, the retry budget, network and TLS failures, the
 * response size cap, streaming with redirects (no Authorization to another
 * host), parallel submissions, pacing from rate headers, counters, and the
 * trace never showing a secret; the URL GETs of the fleet mirror (no token,
 * conditional, one attempt, the error-body cap, the redirect rules, file://
 * reads). The URL rules are test_url.c's, file:// paths test_file.c's. Nothing here sleeps or opens a socket; http(s)
 * against real servers is tests/integration/test_mirror.py and test_hostile_mirror.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "net/api.h"
#include "net/http.h"
#include "net/http_fake.h"

#include "support.h"

#define API_KEY "test-api-key-0123456789"
#define BASE "https://tenant.example.com/public/"

/* The header the installer route's version check reads (api.c names it). */
static const char *const KEEP[] = {"X-Installer-Version", NULL};

/* ---- the fake world: a clock and a scriptable server ------------------------- */

typedef struct scripted {
    const char *route; /* substring of the URL it answers */
    long status;
    const char *headers;
    const char *body;
    const char *trailers; /* trailer lines after the body, or NULL */
    error_code failure;   /* non-OK: transport failure instead */
} scripted;

typedef struct seen_request {
    char method[8];
    char url[256];
    bool authorization;
    bool range;
    bool conditional; /* If-None-Match sent */
} seen_request;

typedef struct world {
    int64_t now;   /* monotonic ms */
    int64_t slept; /* total ms slept */
    uint64_t random_state;
    int64_t latency_ms; /* each request advances the clock by this */
    scripted script[32];
    bool used[32];
    int script_count;
    seen_request seen[256];
    int seen_count;
    int tokens_issued;
    char current_token[64];
    int64_t token_expires_in; /* 0: not sent */
    char last_token_body[256];
    /* optional rate limiter: fixed windows opened by the first request */
    int rate_limit;
    int64_t rate_window;
    int64_t window_open;
    int window_used;
    int answers_429;
    int64_t server_skew_ms; /* server clock minus ours, shown in Date and Reset */
} world;

static int64_t w_monotonic(void *ctx)
{
    return ((world *)ctx)->now;
}

static int64_t w_utc(void *ctx)
{
    return 1700000000000LL + ((world *)ctx)->now;
}

static void w_sleep(void *ctx, int64_t ms)
{
    world *w = ctx;
    w->now += ms;
    w->slept += ms;
}

static error_code w_random(void *ctx, void *buf, size_t len, error_info *err)
{
    (void)err;
    world *w = ctx;
    unsigned char *p = buf;
    for (size_t i = 0; i < len; i++) {
        w->random_state ^= w->random_state << 13;
        w->random_state ^= w->random_state >> 7;
        w->random_state ^= w->random_state << 17;
        p[i] = (unsigned char)w->random_state;
    }
    return ERR_OK;
}

/* An IMF-fixdate for utc_ms, computed without the C library's time zone. */
static void http_date(int64_t utc_ms, char *buf, size_t size)
{
    static const char *const days[] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    int64_t s = utc_ms / 1000, days_since = s / 86400, rem = s % 86400;
    /* civil_from_days (Howard Hinnant) */
    int64_t z = days_since + 719468, era = z / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    snprintf(buf, size, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[days_since % 7], (int)d, months[m - 1], (int)y,
             (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
}

static error_code fake_server(void *ctx, const char *method, const char *url, const char *body, size_t body_len,
                              const char *extra_headers, http_fake_response *r, error_info *err)
{
    world *w = ctx;
    w->now += w->latency_ms;
    seen_request *s = &w->seen[w->seen_count < 255 ? w->seen_count++ : 255];
    snprintf(s->method, sizeof s->method, "%s", method);
    snprintf(s->url, sizeof s->url, "%s", url);
    s->authorization = strstr(extra_headers, "Authorization: Bearer ") != NULL;
    s->range = strstr(extra_headers, "Range: ") != NULL;
    s->conditional = strstr(extra_headers, "If-None-Match: \"v1\"") != NULL;
    for (int i = 0; i < w->script_count; i++) {
        if (w->used[i] || !strstr(url, w->script[i].route))
            continue;
        w->used[i] = true;
        if (w->script[i].failure != ERR_OK)
            return error_set(err, w->script[i].failure, "scripted failure");
        r->status = w->script[i].status;
        r->headers = support_dup(w->script[i].headers);
        r->body = support_dup(w->script[i].body);
        r->body_len = r->body ? strlen(r->body) : 0;
        r->trailers = support_dup(w->script[i].trailers);
        return ERR_OK;
    }
    if (strstr(url, "/v2/auth/token/access")) {
        snprintf(w->last_token_body, sizeof w->last_token_body, "%.*s", (int)body_len, body);
        snprintf(w->current_token, sizeof w->current_token, "tok-%d", ++w->tokens_issued);
        char json[200];
        if (w->token_expires_in)
            snprintf(json, sizeof json, "{\"access_token\":\"%s\",\"expires_in\":%lld}", w->current_token,
                     (long long)w->token_expires_in);
        else
            snprintf(json, sizeof json, "{\"access_token\":\"%s\"}", w->current_token);
        r->status = 200;
        r->body = support_dup(json);
        r->body_len = strlen(json);
        return ERR_OK;
    }
    if (w->rate_limit) {
        if (w->window_open < 0 || w->now >= w->window_open + w->rate_window) {
            w->window_open = w->now;
            w->window_used = 0;
        }
        char headers[300];
        long long reset = (1700000000000LL + w->server_skew_ms + w->window_open + w->rate_window + 999) / 1000;
        char date[64];
        http_date(1700000000000LL + w->server_skew_ms + w->now, date, sizeof date);
        if (w->window_used >= w->rate_limit) {
            w->answers_429++;
            r->status = 429;
            snprintf(headers, sizeof headers,
                     "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: %lld\r\nRetry-After: 1\r\nDate: %s\r\n", reset,
                     date);
        } else {
            w->window_used++;
            r->status = 200;
            snprintf(headers, sizeof headers, "X-RateLimit-Remaining: %d\r\nX-RateLimit-Reset: %lld\r\nDate: %s\r\n",
                     w->rate_limit - w->window_used, reset, date);
        }
        r->headers = support_dup(headers);
    } else {
        r->status = 200;
    }
    r->body = support_dup("{\"resources\":[],\"errors\":[]}");
    r->body_len = strlen(r->body);
    return ERR_OK;
}

static void script(world *w, const char *route, long status, const char *headers, const char *body)
{
    scripted *s = &w->script[w->script_count++];
    s->route = route;
    s->status = status;
    s->headers = headers;
    s->body = body;
    s->trailers = NULL;
    s->failure = ERR_OK;
}

static void script_failure(world *w, const char *route, error_code failure)
{
    scripted *s = &w->script[w->script_count++];
    memset(s, 0, sizeof *s);
    s->route = route;
    s->failure = failure;
}

typedef struct fixture {
    world w;
    clock_source clock;
    config cfg;
    http_client *http;
    FILE *trace;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->w.random_state = 88172645463325252ULL;
    f->w.window_open = -1;
    f->clock = (clock_source){w_monotonic, w_utc, w_sleep, w_random, &f->w};
    f->cfg.base_url = BASE;
    f->cfg.http.connect_timeout_s = 10;
    f->cfg.http.low_speed_time_s = 30;
    f->cfg.http.max_response_bytes = 4096;
    f->cfg.http.max_attempts = 5;
    f->cfg.http.max_retry_wait_s = 300;
    f->cfg.http.rate_limit_per_minute = 600;
    f->cfg.http.max_in_flight = 5;
    f->trace = tmpfile();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    http_client_free(f->http);
    if (f->trace)
        fclose(f->trace);
    free(f);
    return 0;
}

static void open_client(fixture *f, int verbosity)
{
    http_fake fake = {fake_server, &f->w};
    http_options opts = {.clock = &f->clock, .verbosity = verbosity, .trace = f->trace, .fake = &fake};
    error_info err;
    assert_int_equal(api_client_new(&f->cfg, API_KEY, &opts, &f->http, &err), ERR_OK);
}

static error_code call(fixture *f, const char *route, error_info *err, long *status)
{
    http_request req = {HTTP_POST, route, "{}", 0, NULL};
    char *body = NULL;
    error_code rc = http_call(f->http, &req, &body, NULL, status, err);
    free(body);
    return rc;
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_token_then_request(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    error_info err;
    long status = 0;
    assert_int_equal(call(f, "/v2/incidents/list", &err, &status), ERR_OK);
    assert_int_equal(status, 200);
    assert_int_equal(f->w.seen_count, 2);
    assert_string_equal(f->w.seen[0].url, "https://tenant.example.com/public/v2/auth/token/access");
    assert_false(f->w.seen[0].authorization);
    assert_string_equal(f->w.last_token_body, "{\"refresh_token\":\"" API_KEY "\"}");
    assert_string_equal(f->w.seen[1].url, "https://tenant.example.com/public/v2/incidents/list");
    assert_true(f->w.seen[1].authorization);
    /* One token for the run. */
    assert_int_equal(call(f, "/v2/event-lineage", &err, NULL), ERR_OK);
    http_stats st;
    http_client_stats(f->http, &st);
    assert_int_equal(st.api_calls, 3);
    assert_int_equal(st.token_exchanges, 1);
    assert_int_equal(st.retries, 0);
}

static void test_renews_before_expiry(void **state)
{
    fixture *f = *state;
    f->w.token_expires_in = 60;
    open_client(f, 0);
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    f->w.now += 55000;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    assert_int_equal(f->w.tokens_issued, 1);
    f->w.now += 1500; /* 56.5 s: inside the renewal margin (60 s / 15) */
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    assert_int_equal(f->w.tokens_issued, 2);
    assert_string_equal(f->w.seen[f->w.seen_count - 2].url + strlen(BASE) - 1, "/v2/auth/token/access");
    /* Without expires_in the 15-minute lifetime applies: renewed at 14 min. */
    f->w.token_expires_in = 0;
    f->w.now += 60000;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    assert_int_equal(f->w.tokens_issued, 3);
    f->w.now += 13 * 60000;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    assert_int_equal(f->w.tokens_issued, 3);
    f->w.now += 60000;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    assert_int_equal(f->w.tokens_issued, 4);
}

static void test_401_renews_once_and_retries(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/incidents/list", 401, NULL, "{\"errors\":[{\"code\":\"x\",\"message\":\"expired\"}]}");
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    assert_int_equal(f->w.tokens_issued, 2);
    http_stats st;
    http_client_stats(f->http, &st);
    assert_int_equal(st.retries, 1);
    assert_int_equal(st.api_calls, 4);
}

static void test_401_after_renewal_is_auth_error(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/incidents/list", 401, NULL, NULL);
    script(&f->w, "/v2/incidents/list", 401, NULL, NULL);
    error_info err;
    long status = 0;
    assert_int_equal(call(f, "/v2/incidents/list", &err, &status), ERR_AUTH);
    assert_int_equal(status, 401);
    assert_int_equal(error_exit_code(err.code), 3);
    assert_non_null(strstr(err.message, "401"));
    assert_int_equal(f->w.tokens_issued, 2);
}

static void test_403_is_final(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/event-details", 403, NULL, "{\"errors\":[{\"code\":\"forbidden\",\"message\":\"no scope\"}]}");
    error_info err;
    assert_int_equal(call(f, "/v2/event-details", &err, NULL), ERR_FORBIDDEN);
    assert_int_equal(error_exit_code(err.code), 3);
    assert_non_null(strstr(err.message, "403"));
    assert_non_null(strstr(err.message, "no scope"));
    assert_int_equal(f->w.seen_count, 2);
}

static void test_refused_key_never_echoed(void **state)
{
    fixture *f = *state;
    open_client(f, 2);
    script(&f->w, "/v2/auth/token/access", 401, NULL,
           "{\"errors\":[{\"code\":\"bad\",\"message\":\"unknown key " API_KEY "\"}]}");
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_AUTH);
    assert_non_null(strstr(err.message, "API key"));
    assert_null(strstr(err.message, API_KEY));
    assert_non_null(strstr(err.message, "incidents"));
}

static void test_5xx_retried_with_backoff(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/incidents/list", 503, NULL, NULL);
    script(&f->w, "/v2/incidents/list", 502, NULL, NULL);
    script(&f->w, "/v2/incidents/list", 500, NULL, NULL);
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    http_stats st;
    http_client_stats(f->http, &st);
    assert_int_equal(st.retries, 3);
    /* Full jitter: at most 500 + 1000 + 2000 ms in all. */
    assert_true(f->w.slept <= 3500);
}

static void test_429_retry_after_honoured(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/incidents/list", 429, "Retry-After: 3\r\n", NULL);
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    assert_true(f->w.slept >= 3000);
    http_stats st;
    http_client_stats(f->http, &st);
    assert_int_equal(st.responses_429, 1);
    assert_int_equal(st.retries, 1);
    assert_int_equal(st.retry_after_until_ms, 0);
}

static void test_retry_after_longer_than_run_may_wait(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/incidents/list", 503, "Retry-After: 3600\r\n", NULL);
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_TEMPORARY);
    assert_int_equal(error_exit_code(err.code), 75);
    assert_non_null(strstr(err.message, "Retry-After"));
    http_stats st;
    http_client_stats(f->http, &st);
    assert_true(st.retry_after_until_ms >= w_utc(&f->w) + 3590 * 1000);
    assert_true(st.retry_after_until_ms <= w_utc(&f->w) + 3600 * 1000);
    assert_int_equal(f->w.slept, 0);
}

static void test_gives_up_after_max_attempts(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    for (int i = 0; i < 6; i++)
        script(&f->w, "/v2/incidents/list", 503, NULL, NULL);
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_TEMPORARY);
    assert_non_null(strstr(err.message, "5 attempts"));
    assert_non_null(strstr(err.message, "503"));
    http_stats st;
    http_client_stats(f->http, &st);
    assert_int_equal(st.api_calls, 6);
    assert_int_equal(st.retries, 4);
}

static void test_retry_budget_bounds_total_wait(void **state)
{
    fixture *f = *state;
    f->cfg.http.max_attempts = 20;
    f->cfg.http.max_retry_wait_s = 10;
    open_client(f, 0);
    for (int i = 0; i < 21; i++)
        script(&f->w, "/v2/incidents/list", 502, NULL, NULL);
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_TEMPORARY);
    assert_true(f->w.slept <= 10000);
    assert_non_null(strstr(err.message, "max_retry_wait"));
}

static void test_network_failures_retried_tls_not(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script_failure(&f->w, "/v2/incidents/list", ERR_NETWORK);
    script_failure(&f->w, "/v2/incidents/list", ERR_TIMEOUT);
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    script_failure(&f->w, "/v2/event-lineage", ERR_TLS);
    int before = f->w.seen_count;
    assert_int_equal(call(f, "/v2/event-lineage", &err, NULL), ERR_TLS);
    assert_int_equal(error_exit_code(err.code), 1);
    assert_int_equal(f->w.seen_count, before + 1);
    assert_non_null(strstr(err.message, "TLS"));
}

static void test_other_4xx_not_retried(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/event-lineage", 404, NULL, "{\"errors\":[{\"code\":\"not_found\",\"message\":\"no chain\"}]}");
    error_info err;
    long status = 0;
    assert_int_equal(call(f, "/v2/event-lineage", &err, &status), ERR_HTTP);
    assert_int_equal(status, 404);
    assert_non_null(strstr(err.message, "404"));
    assert_non_null(strstr(err.message, "no chain"));
    assert_int_equal(f->w.seen_count, 2);
}

static void test_response_size_cap(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    char *big = malloc(5000);
    memset(big, ' ', 4999);
    big[0] = '{';
    big[4998] = '}';
    big[4999] = '\0';
    script(&f->w, "/v2/incidents/list", 200, NULL, big);
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "response larger than 4096 bytes"));
    /* Declared too large: refused at the headers. */
    script(&f->w, "/v2/incidents/list", 200, "Content-Length: 999999\r\n", "{}");
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_PROTOCOL);
    free(big);
}

/* ---- streams ---------------------------------------------------------------------------- */

typedef struct stream_seen {
    int headers_calls;
    long status;
    char version[64];
    char url[256];
    int redirects;
    int64_t content_length;
    int64_t range_start, range_total;
    size_t bytes;
    bool stop_at_headers;
} stream_seen;

static http_stream_action on_headers(void *user, const http_stream_headers *h)
{
    stream_seen *s = user;
    s->headers_calls++;
    s->status = h->status;
    snprintf(s->version, sizeof s->version, "%s",
             http_stream_header(h, "X-Installer-Version") ? http_stream_header(h, "X-Installer-Version") : "");
    snprintf(s->url, sizeof s->url, "%s", h->url);
    s->redirects = h->redirects;
    s->content_length = h->content_length;
    s->range_start = h->range_start;
    s->range_total = h->range_total;
    return s->stop_at_headers ? HTTP_STREAM_STOP : HTTP_STREAM_CONTINUE;
}

static http_stream_action on_data(void *user, const void *data, size_t len)
{
    (void)data;
    ((stream_seen *)user)->bytes += len;
    return HTTP_STREAM_CONTINUE;
}

static void test_stream_redirect_keeps_token_home(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/installer/windows/latest", 302,
           "Location: https://storage.example.net/installer/SensorSetup.exe?sig=secret\r\nX-Installer-Version: "
           "26.01.03.24329-0de7ab+\r\n",
           "");
    script(&f->w, "storage.example.net", 206,
           "Content-Length: 10\r\nContent-Range: bytes 10-19/20\r\nETag: \"abc\"\r\n", "0123456789");
    stream_seen s = {0};
    http_stream_callbacks cb = {on_headers, on_data, &s};
    http_stream_request req = {"/v2/installer/windows/latest", "bytes=10-", "\"abc\"", 0, "installer", KEEP};
    http_stream_result result;
    error_info err;
    assert_int_equal(http_stream_get(f->http, &req, &cb, &result, &err), ERR_OK);
    assert_int_equal(s.headers_calls, 1);
    assert_int_equal(s.status, 206);
    assert_string_equal(s.version, "26.01.03.24329-0de7ab+");
    assert_string_equal(s.url, "https://storage.example.net/installer/SensorSetup.exe");
    assert_int_equal(s.redirects, 1);
    assert_int_equal(s.range_start, 10);
    assert_int_equal(s.range_total, 20);
    assert_int_equal(s.bytes, 10);
    assert_int_equal(result.body_bytes, 10);
    /* token, installer (with the token), storage (without) */
    assert_int_equal(f->w.seen_count, 3);
    assert_true(f->w.seen[1].authorization);
    assert_false(f->w.seen[2].authorization);
    assert_true(f->w.seen[2].range);
}

static void test_stream_stop_after_headers(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/installer/windows/latest", 200, "Content-Length: 5\r\nX-Installer-Version: 1.2.3\r\n", "MZabc");
    stream_seen s = {0};
    s.stop_at_headers = true;
    http_stream_callbacks cb = {on_headers, on_data, &s};
    http_stream_request req = {"/v2/installer/windows/latest", NULL, NULL, 0, NULL, KEEP};
    http_stream_result result;
    error_info err;
    assert_int_equal(http_stream_get(f->http, &req, &cb, &result, &err), ERR_OK);
    assert_true(result.stopped);
    assert_int_equal(s.bytes, 0);
    assert_string_equal(s.version, "1.2.3");
    assert_int_equal(s.content_length, 5);
}

static void test_stream_refuses_plain_http_redirect(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/installer/windows/latest", 301, "Location: http://cdn.example.net/f.exe\r\n", "");
    stream_seen s = {0};
    http_stream_callbacks cb = {on_headers, on_data, &s};
    http_stream_request req = {"/v2/installer/windows/latest", NULL, NULL, 0, NULL, KEEP};
    error_info err;
    assert_int_equal(http_stream_get(f->http, &req, &cb, NULL, &err), ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "redirect"));
    assert_int_equal(s.headers_calls, 0);
}

static void test_stream_retries_before_headers(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/installer/windows/latest", 503, NULL, "busy");
    script(&f->w, "/v2/installer/windows/latest", 200, "Content-Length: 4\r\n", "MZ!!");
    stream_seen s = {0};
    http_stream_callbacks cb = {on_headers, on_data, &s};
    http_stream_request req = {"/v2/installer/windows/latest", NULL, NULL, 0, NULL, KEEP};
    error_info err;
    assert_int_equal(http_stream_get(f->http, &req, &cb, NULL, &err), ERR_OK);
    assert_int_equal(s.headers_calls, 1);
    assert_int_equal(s.bytes, 4); /* the 503's body never reached on_data */
}

static error_code get_installer(fixture *f, stream_seen *s, error_info *err)
{
    http_stream_callbacks cb = {on_headers, on_data, s};
    http_stream_request req = {"/v2/installer/windows/latest", NULL, NULL, 0, NULL, KEEP};
    return http_stream_get(f->http, &req, &cb, NULL, err);
}

/* Interim answers on one transfer (a 1xx, the 407 of a proxy that libcurl
 * answers itself with credentials) do not count: only the final answer's
 * headers reach on_headers, once. */
static void test_stream_interim_answers_do_not_count(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/installer/windows/latest", 407,
           "Proxy-Authenticate: Basic realm=\"proxy\"\r\nX-Installer-Version: 6.6.6\r\n\r\n"
           "HTTP/1.1 103 Early Hints\r\nX-Installer-Version: 7.7.7\r\n\r\n"
           "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Type: application/octet-stream\r\n",
           "MZ!!");
    stream_seen s = {0};
    error_info err;
    assert_int_equal(get_installer(f, &s, &err), ERR_OK);
    assert_int_equal(s.headers_calls, 1);
    assert_int_equal(s.status, 200);
    assert_string_equal(s.version, ""); /* neither interim answer's version */
    assert_int_equal(s.content_length, 4);
    assert_int_equal(s.bytes, 4);
}

/* A second final answer on one transfer (what a proxy's CONNECT answer
 * looked like before CURLOPT_SUPPRESS_CONNECT_HEADERS) is refused, never
 * handed to on_headers a second time. */
static void test_stream_second_final_answer_refused(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/installer/windows/latest", 200,
           "X-Installer-Version: 1.0\r\nContent-Length: 0\r\n\r\n"
           "HTTP/1.1 200 OK\r\nX-Installer-Version: 2.0\r\nContent-Length: 4\r\n",
           "MZ!!");
    stream_seen s = {0};
    error_info err;
    assert_int_equal(get_installer(f, &s, &err), ERR_PROTOCOL);
    assert_int_equal(s.headers_calls, 1);
    assert_string_equal(s.version, "1.0");
    assert_int_equal(s.bytes, 0);
    assert_non_null(strstr(err.message, "second HTTP response"));
    assert_int_equal(f->w.seen_count, 2); /* not retried: the caller already had headers */
}

/* Trailers after a chunked body reach the header callback too: they are
 * not a new set of headers. */
static void test_stream_trailers_are_not_headers(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/installer/windows/latest", 200, "X-Installer-Version: 1.2.3\r\n", "MZ!!");
    f->w.script[f->w.script_count - 1].trailers = "X-Installer-Version: 9.9.9\r\nX-Checksum: abc\r\n";
    stream_seen s = {0};
    error_info err;
    assert_int_equal(get_installer(f, &s, &err), ERR_OK);
    assert_int_equal(s.headers_calls, 1);
    assert_string_equal(s.version, "1.2.3");
    assert_int_equal(s.bytes, 4);
}

/* A proxy that refuses the credentials (407 as the final answer) is an
 * authentication failure (exit 3) naming the proxy, not "the platform
 * answered HTTP 407", and it is not retried. */
static void test_proxy_407_is_auth_failure(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/auth/token/access", 407, "Proxy-Authenticate: Basic realm=\"proxy\"\r\n", "denied");
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_AUTH);
    assert_non_null(strstr(err.message, "proxy"));
    assert_non_null(strstr(err.message, "407"));
    assert_null(strstr(err.message, "platform answered"));
    assert_int_equal(f->w.seen_count, 1);
}

/* A redirect never leaves TLS, not even for http:// to loopback, which a
 * loopback base_url may use. */
static void test_stream_refuses_https_to_http_loopback_redirect(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    script(&f->w, "/v2/installer/windows/latest", 302, "Location: http://127.0.0.1:8080/f.exe?sig=s3cret\r\n", "");
    stream_seen s = {0};
    error_info err;
    assert_int_equal(get_installer(f, &s, &err), ERR_PROTOCOL);
    assert_int_equal(s.headers_calls, 0);
    assert_int_equal(f->w.seen_count, 2); /* token, installer: the http:// URL was never asked */
    assert_non_null(strstr(err.message, "from https:// to http://127.0.0.1:8080/f.exe"));
    assert_null(strstr(err.message, "s3cret"));
}

/* A loopback http:// base_url may still redirect to http:// loopback
 * (a local gateway, the tests' simulator) and to https://. */
static void test_stream_http_loopback_redirects_allowed(void **state)
{
    fixture *f = *state;
    f->cfg.base_url = "http://127.0.0.1:9000";
    open_client(f, 0);
    script(&f->w, "/v2/installer/windows/latest", 302, "Location: http://127.0.0.1:9001/f.exe\r\n", "");
    script(&f->w, "127.0.0.1:9001/f.exe", 302, "Location: https://cdn.example.net/f.exe\r\n", "");
    script(&f->w, "cdn.example.net", 200, "X-Installer-Version: 1.0\r\n", "MZ");
    stream_seen s = {0};
    error_info err;
    assert_int_equal(get_installer(f, &s, &err), ERR_OK);
    assert_int_equal(s.redirects, 2);
    assert_string_equal(s.url, "https://cdn.example.net/f.exe");
}

/* Content-Range and Content-Length are parsed with overflow checks: a value
 * that does not fit, a sign, white space or junk makes them absent (-1), so
 * a 206 that cannot be read never continues a partial download. */
static void test_stream_content_range_parsing(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *content_range;
        const char *content_length;
        int64_t start, total, length;
    } cases[] = {
        {"bytes 10-19/20", "10", 10, 20, 10},
        {"bytes 0-0/1", "1", 0, 1, 1},
        {"bytes 10-19/*", "10", 10, -1, 10},
        {"bytes 9223372036854775805-9223372036854775806/9223372036854775807", "2", 9223372036854775805LL,
         9223372036854775807LL, 2},
        {"bytes 9223372036854775808-9223372036854775809/9223372036854775810", "2", -1, -1, 2},
        {"bytes 99999999999999999999999-1/2", "99999999999999999999999", -1, -1, -1},
        {"bytes 0-9/18446744073709551626", "10", -1, -1, 10},
        {"bytes 10-9/20", "+10", -1, -1, -1},
        {"bytes 10-20/20", "1 0", -1, -1, -1},
        {"bytes -5-9/20", "-5", -1, -1, -1},
        {"bytes 10-19/20x", "10x", -1, -1, -1},
        {"bytes 10-19", "", -1, -1, -1},
        {"items 10-19/20", "10", -1, -1, 10},
        {"bytes */*", "10", -1, -1, 10},
    };
    open_client(f, 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char headers[300];
        snprintf(headers, sizeof headers, "Content-Range: %s\r\nContent-Length: %s\r\n", cases[i].content_range,
                 cases[i].content_length);
        f->w.script_count = 0;
        memset(f->w.used, 0, sizeof f->w.used);
        script(&f->w, "/v2/installer/windows/latest", 206, headers, "");
        stream_seen s = {0};
        s.stop_at_headers = true;
        http_stream_callbacks cb = {on_headers, on_data, &s};
        http_stream_request req = {"/v2/installer/windows/latest", "bytes=10-", NULL, 0, NULL, KEEP};
        error_info err;
        assert_int_equal(http_stream_get(f->http, &req, &cb, NULL, &err), ERR_OK);
        if (s.range_start != cases[i].start || s.range_total != cases[i].total || s.content_length != cases[i].length)
            fail_msg("case %zu (%s / %s): start %lld total %lld length %lld", i, cases[i].content_range,
                     cases[i].content_length, (long long)s.range_start, (long long)s.range_total,
                     (long long)s.content_length);
    }
    /* The 416 form: no range, the complete length. */
    f->w.script_count = 0;
    memset(f->w.used, 0, sizeof f->w.used);
    script(&f->w, "/v2/installer/windows/latest", 416, "Content-Range: bytes */200\r\n", "");
    stream_seen s = {0};
    error_info err;
    assert_int_equal(get_installer(f, &s, &err), ERR_OK);
    assert_int_equal(s.range_start, -1);
    assert_int_equal(s.range_total, 200);
}

/* ---- parallel submissions, pacing ------------------------------------------------------ */

typedef struct tally {
    int ok, failed;
} tally;

static void count_done(void *user, error_code code, const error_info *err, const http_response *response)
{
    (void)err;
    (void)response;
    tally *t = user;
    if (code == ERR_OK)
        t->ok++;
    else
        t->failed++;
}

static void test_submit_many_and_run(void **state)
{
    fixture *f = *state;
    open_client(f, 0);
    tally t = {0};
    error_info err;
    for (int i = 0; i < 40; i++) {
        http_request req = {HTTP_POST, i % 2 ? "/v2/event-lineage" : "/v2/event-details", "{\"ids\":[\"a\"]}", 0, NULL};
        assert_int_equal(http_submit(f->http, &req, count_done, &t, &err), ERR_OK);
    }
    assert_int_equal(http_pending(f->http), 40);
    assert_int_equal(http_run(f->http, 10, &err), ERR_OK);
    assert_true(http_pending(f->http) <= 10);
    assert_int_equal(http_run(f->http, 0, &err), ERR_OK);
    assert_int_equal(t.ok, 40);
    assert_int_equal(http_pending(f->http), 0);
}

static void test_paces_from_rate_headers(void **state)
{
    fixture *f = *state;
    f->w.rate_limit = 10;
    f->w.rate_window = 2000;
    f->w.latency_ms = 20;
    open_client(f, 0);
    tally t = {0};
    error_info err;
    for (int i = 0; i < 45; i++) {
        http_request req = {HTTP_POST, "/v2/event-lineage", "{}", 0, NULL};
        assert_int_equal(http_submit(f->http, &req, count_done, &t, &err), ERR_OK);
    }
    assert_int_equal(http_run(f->http, 0, &err), ERR_OK);
    assert_int_equal(t.ok, 45);
    assert_int_equal(f->w.answers_429, 0);
    /* Five windows at least (the first opened at the first request). */
    assert_true(f->w.now >= 4 * 2000);
    assert_true(f->w.now <= 5 * 3200);
}

static void test_server_clock_behind_ours(void **state)
{
    fixture *f = *state;
    /* The server's clock runs 30 s behind: its Reset would read as "now"
     * on ours. The Date header gives the offset away. */
    f->w.rate_limit = 10;
    f->w.rate_window = 2000;
    f->w.latency_ms = 20;
    f->w.server_skew_ms = -30000;
    open_client(f, 0);
    tally t = {0};
    error_info err;
    for (int i = 0; i < 35; i++) {
        http_request req = {HTTP_POST, "/v2/event-lineage", "{}", 0, NULL};
        assert_int_equal(http_submit(f->http, &req, count_done, &t, &err), ERR_OK);
    }
    assert_int_equal(http_run(f->http, 0, &err), ERR_OK);
    assert_int_equal(t.ok, 35);
    assert_int_equal(f->w.answers_429, 0);
    char date[64];
    http_date(784111777000LL, date, sizeof date);
    assert_string_equal(date, "Sun, 06 Nov 1994 08:49:37 GMT");
}

/* ---- trace, URLs ----------------------------------------------------------------------- */

static void test_trace_shows_requests_never_secrets(void **state)
{
    fixture *f = *state;
    open_client(f, 2);
    script(&f->w, "/v2/incidents/list", 503, "X-RateLimit-Remaining: 7\r\nX-RateLimit-Reset: 1700000060\r\n", NULL);
    error_info err;
    assert_int_equal(call(f, "/v2/incidents/list", &err, NULL), ERR_OK);
    fflush(f->trace);
    long size = ftell(f->trace);
    assert_true(size > 0);
    char *text = calloc(1, (size_t)size + 1);
    rewind(f->trace);
    assert_int_equal(fread(text, 1, (size_t)size, f->trace), (size_t)size);
    assert_non_null(strstr(text, "POST /v2/incidents/list -> 503"));
    assert_non_null(strstr(text, "POST /v2/incidents/list -> 200"));
    assert_non_null(strstr(text, "attempt 2"));
    assert_non_null(strstr(text, "remaining 7"));
    assert_non_null(strstr(text, "/v2/auth/token/access"));
    assert_null(strstr(text, API_KEY));
    assert_null(strstr(text, "tok-1"));
    assert_null(strstr(text, "Bearer"));
    free(text);
}

static void test_client_refuses_bad_config(void **state)
{
    fixture *f = *state;
    http_client *c = NULL;
    error_info err;
    f->cfg.base_url = "http://tenant.example.com";
    assert_int_equal(api_client_new(&f->cfg, API_KEY, NULL, &c, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "base_url"));
    f->cfg.base_url = NULL;
    assert_int_equal(api_client_new(&f->cfg, API_KEY, NULL, &c, &err), ERR_CONFIG);
    f->cfg.base_url = BASE;
    assert_int_equal(api_client_new(&f->cfg, "", NULL, &c, &err), ERR_CONFIG);
    assert_null(c);
}

/* ---- URL GETs (the fleet mirror) ------------------------------------------------- */

static void open_url_client(fixture *f)
{
    http_fake fake = {fake_server, &f->w};
    http_options opts = {.clock = &f->clock, .trace = f->trace, .fake = &fake};
    error_info err;
    f->cfg.base_url = NULL; /* the mirror needs no platform */
    assert_int_equal(http_client_new(&f->cfg, NULL, NULL, &opts, &f->http, &err), ERR_OK);
    assert_false(http_client_has_key(f->http));
}

static error_code url_read(fixture *f, const char *url, const char *etag, http_url_body *out, error_info *err)
{
    http_url_request req = {.url = url, .if_none_match = etag};
    return http_url_read(f->http, &req, 4096, out, err);
}

static void test_url_get_no_token_conditional(void **state)
{
    fixture *f = *state;
    open_url_client(f);
    script(&f->w, "/m1/manifest.json", 200, "ETag: \"v1\"\r\nLast-Modified: Wed, 01 Jan 2025 00:00:00 GMT\r\n", "{}");
    script(&f->w, "/m1/manifest.json", 304, "ETag: \"v1\"\r\n", NULL);
    http_url_body b;
    error_info err;
    assert_int_equal(url_read(f, "https://user:secret@mirror.example.com/m1/manifest.json", NULL, &b, &err), ERR_OK);
    assert_int_equal(b.status, 200);
    assert_string_equal(b.body, "{}");
    assert_string_equal(b.etag, "\"v1\"");
    assert_non_null(b.last_modified);
    http_url_body_free(&b);
    assert_int_equal(url_read(f, "https://mirror.example.com/m1/manifest.json", "\"v1\"", &b, &err), ERR_OK);
    assert_int_equal(b.status, 304);
    assert_null(b.body);
    http_url_body_free(&b);
    /* No token exchange, no Authorization, the condition sent. */
    assert_int_equal(f->w.tokens_issued, 0);
    assert_int_equal(f->w.seen_count, 2);
    assert_false(f->w.seen[0].authorization);
    assert_false(f->w.seen[0].conditional);
    assert_true(f->w.seen[1].conditional);
    /* The platform's routes need the key. */
    http_stream_request sreq = {"/v2/installer/windows/latest", NULL, NULL, 0, NULL, KEEP};
    http_stream_callbacks cb = {NULL, NULL, NULL};
    assert_int_equal(http_stream_get(f->http, &sreq, &cb, NULL, &err), ERR_CONFIG);
}

static void test_url_get_failures_one_attempt(void **state)
{
    fixture *f = *state;
    open_url_client(f);
    static char big[200 * 1024];
    memset(big, 'x', sizeof big - 1);
    script(&f->w, "/a/", 404, NULL, big);
    script(&f->w, "/b/", 503, NULL, "busy");
    script_failure(&f->w, "/c/", ERR_NETWORK);
    script(&f->w, "/d/", 401, NULL, "no");
    http_url_body b;
    error_info err;
    /* An endless error page is read no further than its cap; the URL is
     * named without its credentials. */
    assert_int_equal(url_read(f, "https://u:pw@mirror.example.com/a/manifest.json", NULL, &b, &err), ERR_HTTP);
    assert_non_null(strstr(err.message, "404"));
    assert_non_null(strstr(err.message, "https://mirror.example.com/a/manifest.json"));
    assert_null(strstr(err.message, "pw"));
    http_url_body_free(&b);
    assert_int_equal(url_read(f, "https://mirror.example.com/b/manifest.json", NULL, &b, &err), ERR_TEMPORARY);
    assert_non_null(strstr(err.message, "503"));
    http_url_body_free(&b);
    assert_int_equal(url_read(f, "https://mirror.example.com/c/manifest.json", NULL, &b, &err), ERR_TEMPORARY);
    http_url_body_free(&b);
    assert_int_equal(url_read(f, "https://mirror.example.com/d/manifest.json", NULL, &b, &err), ERR_HTTP);
    http_url_body_free(&b);
    /* One attempt each, no waiting: the next mirror is the retry. */
    assert_int_equal(f->w.seen_count, 4);
    assert_int_equal(f->w.slept, 0);
    assert_int_equal(url_read(f, "ftp://mirror.example.com/x.json", NULL, &b, &err), ERR_CONFIG);
    http_url_body_free(&b);
}

static void test_url_get_body_cap_and_redirects(void **state)
{
    fixture *f = *state;
    open_url_client(f);
    script(&f->w, "/big/", 200, NULL, "0123456789012345678901234567890123456789");
    script(&f->w, "http://lan-mirror.example.com/r/", 302, "Location: https://mirror.example.com/r2/m.json\r\n", NULL);
    script(&f->w, "/r2/", 200, NULL, "{}");
    script(&f->w, "https://mirror.example.com/down/", 302, "Location: http://lan-mirror.example.com/x.json\r\n", NULL);
    script(&f->w, "/loop/", 302, "Location: /loop/again\r\n", NULL);
    script(&f->w, "/loop/", 302, "Location: /loop/again\r\n", NULL);
    script(&f->w, "/loop/", 302, "Location: /loop/again\r\n", NULL);
    script(&f->w, "/loop/", 302, "Location: /loop/again\r\n", NULL);
    script(&f->w, "/loop/", 302, "Location: /loop/again\r\n", NULL);
    script(&f->w, "/loop/", 302, "Location: /loop/again\r\n", NULL);
    http_url_request req = {.url = "https://mirror.example.com/big/m.json"};
    http_url_body b;
    error_info err;
    assert_int_equal(http_url_read(f->http, &req, 10, &b, &err), ERR_OK);
    assert_true(b.too_large);
    assert_int_equal(b.body_len, 10);
    http_url_body_free(&b);
    /* A mirror on plain http (the manifest's signature carries the trust) may
     * move to https; https never moves to http. */
    assert_int_equal(url_read(f, "http://lan-mirror.example.com/r/m.json", NULL, &b, &err), ERR_OK);
    assert_string_equal(b.body, "{}");
    http_url_body_free(&b);
    assert_int_equal(url_read(f, "https://mirror.example.com/down/m.json", NULL, &b, &err), ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "never continues without TLS"));
    http_url_body_free(&b);
    assert_int_equal(url_read(f, "https://mirror.example.com/loop/m.json", NULL, &b, &err), ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "redirects"));
    http_url_body_free(&b);
}

typedef struct file_seen {
    long status;
    int64_t range_start;
    int calls;
    size_t bytes;
    char first[8];
} file_seen;

static http_stream_action file_headers(void *user, const http_stream_headers *h)
{
    file_seen *seen = user;
    seen->status = h->status;
    seen->range_start = h->range_start;
    seen->calls++;
    return HTTP_STREAM_CONTINUE;
}

static http_stream_action file_data(void *user, const void *data, size_t len)
{
    file_seen *seen = user;
    if (seen->bytes == 0)
        memcpy(seen->first, data, len < 5 ? len : 5);
    seen->bytes += len;
    return HTTP_STREAM_CONTINUE;
}

static void test_file_url_reads(void **state)
{
    fixture *f = *state;
    open_url_client(f);
    char *dir = support_tempdir("fileurl");
    char path[512], url[600];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    /* file:///tmp/... on POSIX, file:///C:/... where the temporary directory has a drive letter */
    snprintf(url, sizeof url, "file://%s%s", path[0] == '/' ? "" : "/", path);
    for (char *c = url; *c; c++)
        if (*c == '\\')
            *c = '/';
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    for (int i = 0; i < 1000; i++)
        fputs("0123456789", fp);
    fclose(fp);

    http_url_request req = {.url = url};
    http_url_body b;
    error_info err;
    assert_int_equal(http_url_read(f->http, &req, 20000, &b, &err), ERR_OK);
    assert_int_equal(b.status, 200);
    assert_int_equal(b.body_len, 10000);
    assert_false(b.too_large);
    http_url_body_free(&b);
    assert_int_equal(http_url_read(f->http, &req, 4096, &b, &err), ERR_OK);
    assert_true(b.too_large);
    assert_int_equal(b.body_len, 4096);
    http_url_body_free(&b);

    /* A range: a 206 that starts there, the body the rest of the file. */
    file_seen seen;
    memset(&seen, 0, sizeof seen);
    http_stream_callbacks cb = {file_headers, file_data, &seen};
    http_url_request ranged = {.url = url, .range = "bytes=9995-"};
    assert_int_equal(http_url_get(f->http, &ranged, &cb, NULL, &err), ERR_OK);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.status, 206);
    assert_int_equal(seen.range_start, 9995);
    assert_int_equal(seen.bytes, 5);
    assert_memory_equal(seen.first, "56789", 5);
    /* Past the end: 416, as a server answers. */
    memset(&seen, 0, sizeof seen);
    ranged.range = "bytes=10000-";
    assert_int_equal(http_url_get(f->http, &ranged, &cb, NULL, &err), ERR_OK);
    assert_int_equal(seen.status, 416);
    assert_int_equal(seen.bytes, 0);

    /* The receive cap holds for file:// too: 10000 bytes at 4000 bytes/s
     * take at least two seconds of the (fake) clock. */
    memset(&seen, 0, sizeof seen);
    http_url_request capped = {.url = url, .max_bytes_per_second = 4000};
    int64_t before = f->w.now;
    assert_int_equal(http_url_get(f->http, &capped, &cb, NULL, &err), ERR_OK);
    assert_int_equal(seen.bytes, 10000);
    assert_true(f->w.now - before >= 2000);

    char missing[700];
    snprintf(missing, sizeof missing, "%.*s/nothing.json", (int)(strlen(url) - strlen("/manifest.json")), url);
    http_url_request gone = {.url = missing};
    assert_int_equal(http_url_read(f->http, &gone, 100, &b, &err), ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "nothing.json"));
    http_url_body_free(&b);
    remove(path);
    support_tempdir_remove(dir);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_token_then_request),
        T(test_renews_before_expiry),
        T(test_401_renews_once_and_retries),
        T(test_401_after_renewal_is_auth_error),
        T(test_403_is_final),
        T(test_refused_key_never_echoed),
        T(test_5xx_retried_with_backoff),
        T(test_429_retry_after_honoured),
        T(test_retry_after_longer_than_run_may_wait),
        T(test_gives_up_after_max_attempts),
        T(test_retry_budget_bounds_total_wait),
        T(test_network_failures_retried_tls_not),
        T(test_other_4xx_not_retried),
        T(test_response_size_cap),
        T(test_stream_redirect_keeps_token_home),
        T(test_stream_stop_after_headers),
        T(test_stream_refuses_plain_http_redirect),
        T(test_stream_interim_answers_do_not_count),
        T(test_stream_second_final_answer_refused),
        T(test_stream_trailers_are_not_headers),
        T(test_proxy_407_is_auth_failure),
        T(test_stream_refuses_https_to_http_loopback_redirect),
        T(test_stream_http_loopback_redirects_allowed),
        T(test_stream_content_range_parsing),
        T(test_stream_retries_before_headers),
        T(test_submit_many_and_run),
        T(test_paces_from_rate_headers),
        T(test_server_clock_behind_ours),
        T(test_trace_shows_requests_never_secrets),
        T(test_client_refuses_bad_config),
        T(test_url_get_no_token_conditional),
        T(test_url_get_failures_one_attempt),
        T(test_url_get_body_cap_and_redirects),
        T(test_file_url_reads),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
