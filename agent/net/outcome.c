/*
 * outcome.c — what an ended attempt means for its transfer, decided here
 * and acted on by http.c: done; failed, with one line that says what
 * failed, why and what to do; tried again after backoff or the server's
 * Retry-After (within http.max_attempts and http.max_retry_wait; a URL GET
 * never: the next mirror or run is its retry), the token renewed once after
 * a 401, or a redirect followed (url.c). Also what the answer tells the
 * pacing (X-RateLimit-*, Retry-After, read on the server's clock as its
 * Date headers show it), the one trace line per attempt, and libcurl's
 * result codes sorted into outcomes.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timefmt.h"
#include "net/backoff.h"
#include "net/http_int.h"
#include "net/url.h"

#define RETRY_AFTER_RECORD_CAP_MS (24LL * 3600 * 1000)
#define MAX_CLOCK_OFFSET_MS (3600LL * 1000) /* a Date further off is not believed */

static const char *reason_phrase(long status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 407: return "Proxy Authentication Required";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 416: return "Range Not Satisfiable";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
    }
}

static bool is_retryable_status(long status)
{
    return status == 429 || status == 500 || status == 502 || status == 503;
}

/* The verdict that x fails with code and a message naming its label. */
static void fail(const xfer *x, outcome_verdict *v, error_code code, const char *fmt, ...) OUTPOST_PRINTF(4, 5);

static void fail(const xfer *x, outcome_verdict *v, error_code code, const char *fmt, ...)
{
    char text[ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    v->again = false;
    v->code = code;
    error_clear(&v->err);
    error_set(&v->err, code, "%s: %s", x->label, text);
}

/* ---- Retries and redirects ------------------------------------------------------ */

/* Records a Retry-After into *slot (one of the stats' times) for the
 * caller's state: the platform's that the run cannot honour
 * (retry_after_until_ms), or any a URL GET met (url_retry_after_until_ms:
 * a mirror holds its fleet back with one on its manifest or a 503). */
static void record_retry_after(http_client *c, int64_t retry_after_ms, int64_t *slot)
{
    if (retry_after_ms > RETRY_AFTER_RECORD_CAP_MS)
        retry_after_ms = RETRY_AFTER_RECORD_CAP_MS;
    int64_t until = clock_utc_ms(c->clock) + retry_after_ms;
    if (until > *slot)
        *slot = until;
}

/* Schedules another attempt after backoff, or gives up with ERR_TEMPORARY. */
static void retry(http_client *c, xfer *x, int64_t now, const char *reason, outcome_verdict *v)
{
    int64_t budget_ms = c->cfg.max_retry_wait_s * 1000;
    int64_t spent_s = x->waited_ms / 1000;
    if (x->direct) {
        /* A URL GET is not retried here: the next mirror, or the next run, is. */
        fail(x, v, ERR_TEMPORARY, "%s; try again later", reason);
        return;
    }
    if (x->attempts >= c->cfg.max_attempts) {
        if (x->retry_after_ms > 0)
            record_retry_after(c, x->retry_after_ms, &c->stats.retry_after_until_ms);
        fail(x, v, ERR_TEMPORARY, "%s; gave up after %d attempts over %" PRId64 " s; try again later", reason,
             x->attempts, spent_s);
        return;
    }
    int64_t delay;
    if (x->retry_after_ms >= 0)
        delay = x->retry_after_ms;
    else
        delay = backoff_delay_ms(x->attempts, BACKOFF_BASE_MS, BACKOFF_CAP_MS, c->clock);
    if (x->waited_ms + delay > budget_ms) {
        if (x->retry_after_ms >= 0) {
            record_retry_after(c, x->retry_after_ms, &c->stats.retry_after_until_ms);
            char until[TIMEFMT_ISO8601_SIZE];
            timefmt_iso8601(c->stats.retry_after_until_ms / 1000, until);
            fail(x, v, ERR_TEMPORARY,
                 "%s and the platform asked to wait %" PRId64 " s (Retry-After), longer than this run may wait "
                 "(http.max_retry_wait %" PRId64 " s); try again after %s",
                 reason, (x->retry_after_ms + 999) / 1000, c->cfg.max_retry_wait_s, until);
        } else {
            fail(x, v, ERR_TEMPORARY,
                 "%s; gave up after %d attempts and %" PRId64 " s of waiting (http.max_retry_wait); try again later",
                 reason, x->attempts, spent_s);
        }
        return;
    }
    http_trace(c, 2, "http: %s %s: %s; retrying in %" PRId64 " ms", x->method == HTTP_POST ? "POST" : "GET",
               x->endpoint, reason, delay);
    x->waited_ms += delay;
    if (delay > c->stats.retry_wait_longest_ms)
        c->stats.retry_wait_longest_ms = delay;
    if (x->waited_ms > c->stats.retry_wait_most_ms)
        c->stats.retry_wait_most_ms = x->waited_ms;
    x->not_before = now + delay;
    if (x->kind == XFER_STREAM)
        url_set_start(c, x); /* start again from the platform (signed URLs expire) */
    v->again = true;
}

/* Follows a redirect (url.c's rules), or fails with why it is refused. */
static void redirect(http_client *c, xfer *x, int64_t now, outcome_verdict *v)
{
    error_info why;
    error_code rc = url_follow(c, x, &why);
    if (rc != ERR_OK) {
        fail(x, v, rc, "%s", why.message);
        return;
    }
    x->not_before = now;
    v->again = true;
}

/* ---- What the answer says ---------------------------------------------------------- */

/*
 * The server's clock as far as we can be sure of it. X-RateLimit-Reset and
 * a Retry-After date are read on the server's clock; an endpoint whose own
 * clock runs ahead would otherwise call before the reset. Each Date header
 * (whole seconds, so the server's time was at least that when it answered)
 * gives a lower bound of the offset; the highest one seen is kept. Adding a
 * lower bound never makes a wait shorter than the server meant, and after a
 * few answers it is within milliseconds of the truth.
 */
static int64_t server_utc_ms(http_client *c, const xfer *x)
{
    int64_t utc = clock_utc_ms(c->clock);
    int64_t date_s;
    if (x && x->same_origin && timefmt_parse_http_date(x->headers[H_DATE], &date_s)) {
        int64_t offset = date_s * 1000 - utc;
        if (offset < MAX_CLOCK_OFFSET_MS && -offset < MAX_CLOCK_OFFSET_MS) {
            if (!c->have_offset || offset > c->server_offset_ms)
                c->server_offset_ms = offset;
            c->have_offset = true;
        }
    }
    return c->have_offset ? utc + c->server_offset_ms : utc;
}

/* The attempt's HTTP answer, as the pacing wants it. */
static void read_rate_answer(http_client *c, xfer *x, ratelimit_answer *a)
{
    memset(a, 0, sizeof *a);
    a->retry_after_ms = -1;
    int64_t utc = server_utc_ms(c, x);
    a->has_remaining = ratelimit_parse_remaining(x->headers[H_RL_REMAINING], &a->remaining);
    a->has_reset = ratelimit_parse_reset(x->headers[H_RL_RESET], utc, &a->reset_in_ms);
    a->has_reset_utc = ratelimit_parse_reset_utc(x->headers[H_RL_RESET], utc, &a->reset_utc_ms);
    a->too_many = x->status == 429;
    int64_t ra;
    if (backoff_parse_retry_after(x->headers[H_RETRY_AFTER], utc, &ra))
        a->retry_after_ms = ra;
}

static void trace_attempt(http_client *c, xfer *x, attempt_outcome outcome, const char *message, int64_t ms)
{
    if (c->verbosity < 1)
        return;
    char where[300];
    if (x->same_origin) {
        snprintf(where, sizeof where, "%s", x->endpoint);
    } else {
        char *shown = url_without_query(x->url);
        snprintf(where, sizeof where, "%s", shown ? shown : "(redirect)");
        free(shown);
    }
    char result[200];
    if (x->stopped)
        snprintf(result, sizeof result, "%ld (stopped by the caller)", x->status);
    else if (x->too_large)
        snprintf(result, sizeof result, "%ld (over the size cap)", x->status);
    else if (outcome == OUTCOME_RESPONSE)
        snprintf(result, sizeof result, "%ld", x->status);
    else
        snprintf(result, sizeof result, "failed (%.150s)", message ? message : "");
    char rate[120] = "";
    if (x->headers[H_RL_REMAINING] || x->headers[H_RL_RESET] || x->headers[H_RETRY_AFTER])
        snprintf(rate, sizeof rate, ", remaining %.20s, reset %.20s%s%.20s",
                 x->headers[H_RL_REMAINING] ? x->headers[H_RL_REMAINING] : "-",
                 x->headers[H_RL_RESET] ? x->headers[H_RL_RESET] : "-",
                 x->headers[H_RETRY_AFTER] ? ", retry-after " : "",
                 x->headers[H_RETRY_AFTER] ? x->headers[H_RETRY_AFTER] : "");
    http_trace(c, 1, "http: %s %s -> %s in %" PRId64 " ms (attempt %d%s, %" PRIu64 " in flight%s)", xfer_method(x),
               where, result, ms, x->attempts, x->redirects ? ", after redirect" : "", (uint64_t)c->running, rate);
}

/* Decides what an HTTP answer means for its xfer. */
static void handle_response(http_client *c, xfer *x, int64_t now, outcome_verdict *v)
{
    long status = x->status;
    char detail[300];
    if (x->stopped)
        return; /* done: the caller had what it wanted */
    if (x->too_large) {
        fail(x, v, ERR_PROTOCOL, "response larger than %" PRId64 " bytes (http.max_response_bytes)",
             c->cfg.max_response_bytes);
        return;
    }
    if ((status >= 200 && status < 300) || (x->kind == XFER_STREAM && status == 416) ||
        (x->direct && status == 304 && x->stream->result.headers_delivered))
        return; /* done */
    if (status >= 300 && status < 400 && x->kind == XFER_STREAM) {
        redirect(c, x, now, v);
        return;
    }
    /* Never quote the token exchange's body: it might echo the key. */
    detail[0] = '\0';
    if (x->kind != XFER_TOKEN && c->service && c->service->error_detail) {
        char first[280];
        c->service->error_detail(x->response.data, x->response.len, first, sizeof first);
        if (first[0])
            snprintf(detail, sizeof detail, " (%s)", first);
    }
    if (status == 407) {
        char refused[ERROR_MESSAGE_MAX];
        proxy_refused_message(c->proxy, x->url, refused, sizeof refused);
        fail(x, v, ERR_AUTH, "%s", refused);
        return;
    }
    if (x->direct) {
        char reason[120];
        snprintf(reason, sizeof reason, "the server answered HTTP %ld %s", status, reason_phrase(status));
        if (is_retryable_status(status) || status >= 500)
            retry(c, x, now, reason, v);
        else
            fail(x, v, ERR_HTTP, "the server answered HTTP %ld %s; check the URL", status, reason_phrase(status));
        return;
    }
    if (x->kind == XFER_TOKEN && (status == 400 || status == 401)) {
        fail(x, v, ERR_AUTH, "the platform refused the API key (HTTP %ld); %s", status,
             c->service->token_refused_advice);
        return;
    }
    if (status == 401) {
        if (x->auth_renewals < 1 && x->token_generation) {
            x->auth_renewals++;
            if (token_invalidate(&c->token, x->token_generation))
                http_trace(c, 2, "token: refused with 401 on %s; renewing it once", x->endpoint);
            x->not_before = now;
            v->again = true;
            return;
        }
        if (x->token_generation)
            fail(x, v, ERR_AUTH, "the platform refused a freshly renewed access token (HTTP 401)%s", detail);
        else
            fail(x, v, ERR_AUTH, "the redirect target refused the request (HTTP 401)%s", detail);
        return;
    }
    if (status == 403) {
        fail(x, v, ERR_FORBIDDEN, "the platform denied access (HTTP 403)%s; the API key lacks permission for this",
             detail);
        return;
    }
    if (is_retryable_status(status)) {
        char reason[340];
        snprintf(reason, sizeof reason, "the platform answered HTTP %ld %s%s", status, reason_phrase(status), detail);
        retry(c, x, now, reason, v);
        return;
    }
    if (status >= 300 && status < 400) {
        fail(x, v, ERR_HTTP, "unexpected redirect (HTTP %ld)", status);
        return;
    }
    fail(x, v, ERR_HTTP, "the platform answered HTTP %ld %s%s%s%s", status, reason_phrase(status), detail,
         status == 404 && c->service->not_found_advice ? "; " : "",
         status == 404 && c->service->not_found_advice ? c->service->not_found_advice : "");
}

void outcome_decide(http_client *c, xfer *x, const attempt_end *end, outcome_verdict *v)
{
    attempt_outcome outcome = end->outcome;
    const char *message = end->message[0] ? end->message : NULL;
    v->again = false;
    v->code = ERR_OK;
    error_clear(&v->err);
    int64_t now = clock_now_ms(c->clock);
    ratelimit_answer answer;
    bool answered = x->status > 0 && x->headers_done;
    if (answered)
        read_rate_answer(c, x, &answer);
    /* An answer without rate headers says "this server sends none" only
     * when it comes from the API itself: 401s and gateway 5xx never carry
     * them, whatever the server does otherwise. */
    bool informative = answered && (answer.has_remaining || answer.too_many || (x->status != 401 && x->status < 500));
    ratelimit_release(c->rl, &x->ticket, now, informative ? &answer : NULL);
    x->retry_after_ms = answered && is_retryable_status(x->status) ? answer.retry_after_ms : -1;
    if (answered && x->direct && answer.retry_after_ms >= 0)
        record_retry_after(c, answer.retry_after_ms, &c->stats.url_retry_after_until_ms);
    if (answered && x->status == 429)
        c->stats.responses_429++;
    trace_attempt(c, x, outcome, message, now - x->started_ms);

    if (x->out_of_memory || outcome == OUTCOME_NOMEM) {
        fail(x, v, ERR_NOMEM, "out of memory");
        return;
    }
    if (x->second_response) {
        fail(x, v, ERR_PROTOCOL,
             "a second HTTP response arrived for one request (from the server or a proxy in between); it was "
             "refused rather than mixed with the first; run again, and check any proxy or gateway if it recurs");
        return;
    }
    if (x->deadline_hit || outcome == OUTCOME_DEADLINE) {
        int64_t limit_s = (x->deadline_ms - x->started_ms + 999) / 1000;
        fail(x, v, ERR_TEMPORARY,
             "the transfer took longer than its deadline of %" PRId64 " s (http.transfer_timeout, plus the "
             "announced length at http.min_speed) and was stopped%s; try again later",
             limit_s, x->kind == XFER_STREAM && x->stream->result.headers_delivered ? " (what arrived is kept)" : "");
        return;
    }
    if (x->stopped || x->too_large || x->body_capped || outcome == OUTCOME_RESPONSE) {
        handle_response(c, x, now, v);
        return;
    }
    if (x->kind == XFER_STREAM && x->stream->result.headers_delivered) {
        fail(x, v, ERR_TEMPORARY, "connection lost after %" PRId64 " bytes of the body (%.200s); resume later",
             x->stream->result.body_bytes, message ? message : "");
        return;
    }
    switch (outcome) {
    case OUTCOME_NETWORK: {
        char reason[300];
        snprintf(reason, sizeof reason, "network failure (%.250s)", message ? message : "unknown");
        retry(c, x, now, reason, v);
        return;
    }
    case OUTCOME_TLS:
        fail(x, v, ERR_TLS,
             "TLS failure (%.250s); check %s, tls.ca_file, tls.pinned_public_key and the server's certificate; "
             "retrying will not help",
             message ? message : "", x->direct ? "the URL" : "`base_url`");
        return;
    case OUTCOME_CONFIG: fail(x, v, ERR_CONFIG, "%.300s", message ? message : "unusable URL"); return;
    case OUTCOME_RESOLVE:
        /* A name that does not resolve is a wrong URL far more often than a
         * passing DNS failure: retrying will not fix it (PRODUCT.md section 1). */
        fail(x, v, ERR_NETWORK, "%.250s; check the host name in %s%s", message ? message : "cannot resolve",
             x->direct ? "the URL" : "`base_url`", proxy_configured(c->proxy) ? " and `proxy`" : "");
        return;
    case OUTCOME_NOT_FOUND: fail(x, v, ERR_NOT_FOUND, "%.300s", message ? message : "no such file"); return;
    case OUTCOME_PROXY_AUTH: {
        char refused[ERROR_MESSAGE_MAX];
        proxy_refused_message(c->proxy, x->url, refused, sizeof refused);
        fail(x, v, ERR_AUTH, "%s", refused);
        return;
    }
    case OUTCOME_PROXY_SCRIPT:
        fail(x, v, ERR_TEMPORARY, "%.400s", message ? message : "the proxy script failed");
        return;
    default: fail(x, v, ERR_NETWORK, "%.300s", message ? message : "transfer failed"); return;
    }
}

attempt_outcome outcome_of_curl(CURLcode cc, const char *errbuf)
{
    switch (cc) {
    case CURLE_OK: return OUTCOME_RESPONSE;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return OUTCOME_RESOLVE;
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_WRITE_ERROR: return OUTCOME_NETWORK;
    case CURLE_SSL_CONNECT_ERROR:
        /* A handshake cut by the network (reset, EOF) is not a TLS verdict. */
        if (errbuf &&
            (strstr(errbuf, "reset") || strstr(errbuf, "SYSCALL") || strstr(errbuf, "EOF") || strstr(errbuf, "eof")))
            return OUTCOME_NETWORK;
        return OUTCOME_TLS;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_USE_SSL_FAILED: return OUTCOME_TLS;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT: return OUTCOME_CONFIG;
    case CURLE_OUT_OF_MEMORY: return OUTCOME_NOMEM;
    default: return OUTCOME_OTHER;
    }
}
