/*
 * http.c — the client (see http.h for the contract): its queues, the token
 * exchange, the drive loop and the public entry points.
 *
 * Every request is an xfer that lives from its submission to its
 * completion across any number of attempts. Xfers wait in one FIFO list
 * until the token, the pacing (ratelimit.c) and their retry delay let them
 * start. An attempt runs on libcurl's multi handle (curl.c), or reads a
 * file:// URL (file.c), or, in unit tests, asks the fake transport (fake.c),
 * the last two at once; whatever the transport, what arrives is read by
 * response.c. The attempt's end comes back here as an attempt_end:
 * outcome.c decides what it means (done, failed, retried after backoff,
 * renewed after a 401, redirected by url.c's rules) and this file acts on
 * the verdict, completing the xfer or queuing it again. drive() is the one
 * loop that does all this; http_run, http_call, http_stream_get and
 * http_url_get run it.
 *
 * Layout: the xfers and their two lists, the client, an attempt's start and
 * end, the token exchange, the loop, then the public entry points.
 */
#include "net/http.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/text.h"
#include "net/http_int.h"
#include "net/proxy.h"
#include "net/ratelimit.h"
#include "net/speed.h"
#include "net/tls.h"
#include "net/token.h"
#include "net/url.h"
#include "platform/platform.h"

#define POLL_MAX_MS 1000

/* ---- Xfers and their lists ------------------------------------------------------- */

static void xfer_free(xfer *x)
{
    if (!x)
        return;
    response_clear(x);
    url_forget_hops(x);
    if (x->body) {
        dynbuf_wipe(x->body, x->body_len);
        free(x->body);
    }
    dynbuf_free(&x->response);
    free(x->route);
    free(x->endpoint);
    free(x->label);
    free(x->url);
    free(x);
}

static xfer *xfer_new(http_client *c, xfer_kind kind, http_method method, const char *route, const char *label)
{
    xfer *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->client = c;
    x->kind = kind;
    dynbuf_init(&x->response, 0, kind == XFER_TOKEN);
    x->method = method;
    x->retry_after_ms = -1;
    x->route = text_dup(route);
    x->endpoint = x->route ? text_dup_n(route, strcspn(route, "?#")) : NULL;
    x->label = label ? text_dup(label) : (x->endpoint ? text_dup(x->endpoint) : NULL);
    if (!x->route || !x->endpoint || !x->label) {
        xfer_free(x);
        return NULL;
    }
    return x;
}

static void waiting_push_back(http_client *c, xfer *x)
{
    x->next = NULL;
    if (c->waiting_tail)
        c->waiting_tail->next = x;
    else
        c->waiting_head = x;
    c->waiting_tail = x;
}

static void waiting_push_front(http_client *c, xfer *x)
{
    x->next = c->waiting_head;
    c->waiting_head = x;
    if (!c->waiting_tail)
        c->waiting_tail = x;
}

static void waiting_remove(http_client *c, xfer *x, xfer *prev)
{
    if (prev)
        prev->next = x->next;
    else
        c->waiting_head = x->next;
    if (c->waiting_tail == x)
        c->waiting_tail = prev;
    x->next = NULL;
}

static void running_add(http_client *c, xfer *x)
{
    x->run_prev = NULL;
    x->run_next = c->running_head;
    if (c->running_head)
        c->running_head->run_prev = x;
    c->running_head = x;
    x->running = true;
    c->running++;
    if ((int64_t)c->running > c->stats.max_in_flight)
        c->stats.max_in_flight = (int64_t)c->running;
}

static void running_remove(http_client *c, xfer *x)
{
    if (x->run_prev)
        x->run_prev->run_next = x->run_next;
    else
        c->running_head = x->run_next;
    if (x->run_next)
        x->run_next->run_prev = x->run_prev;
    x->run_next = x->run_prev = NULL;
    x->running = false;
    c->running--;
}

/* ---- The client ------------------------------------------------------------------ */

static char *trimmed_base_url(const char *url)
{
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    return text_dup_n(url, n);
}

error_code http_client_new(const config *cfg, const http_service *service, const char *secret, const http_options *opts,
                           http_client **client, error_info *err)
{
    bool platform = service != NULL; /* NULL: URL GETs only (the mirror) */
    if (!cfg || (platform && (!cfg->base_url || !cfg->base_url[0])))
        return error_set(err, ERR_CONFIG,
                         "`base_url` is not set; it names the platform tenant, e.g. https://tenant.example.com");
    error_code rc = platform ? url_check(cfg->base_url, err) : ERR_OK;
    if (rc != ERR_OK)
        return error_prefix(err, "base_url");
    if (platform && (!secret || !secret[0]))
        return error_set(err, ERR_CONFIG, "the secret of %s is empty", service->token_label);

    http_client *c = calloc(1, sizeof *c);
    if (!c)
        return error_set(err, ERR_NOMEM, "out of memory creating the HTTP client");
    token_state_init(&c->token);
    c->cfg = cfg->http;
    if (c->cfg.max_attempts < 1)
        c->cfg.max_attempts = 1;
    if (c->cfg.max_response_bytes <= 0)
        c->cfg.max_response_bytes = 64LL * 1024 * 1024;
    if (c->cfg.max_in_flight < 1)
        c->cfg.max_in_flight = 1;
    if (c->cfg.transfer_timeout_s <= 0)
        c->cfg.transfer_timeout_s = 600;
    if (c->cfg.min_speed <= 0)
        c->cfg.min_speed = SPEED_DEFAULT_MINIMUM;
    c->clock = opts && opts->clock ? opts->clock : clock_default();
    c->verbosity = opts ? opts->verbosity : 0;
    c->trace = opts ? opts->trace : NULL;
    c->fake = opts && opts->fake ? opts->fake->answer : NULL;
    c->fake_ctx = opts && opts->fake ? opts->fake->ctx : NULL;
    c->base_url = trimmed_base_url(platform ? cfg->base_url : "");
    c->origin = platform && c->base_url ? url_origin(c->base_url, NULL, NULL) : text_dup("");
    c->service = service;
    c->secret = text_dup(platform ? secret : "");
    c->rl = ratelimit_new(c->cfg.rate_limit_per_minute, 60000, c->cfg.max_in_flight);
    if (!c->base_url || !c->origin || !c->secret || !c->rl) {
        http_client_free(c);
        return error_set(err, ERR_NOMEM, "out of memory creating the HTTP client");
    }
    if ((rc = proxy_new(cfg, &c->proxy, err)) != ERR_OK || (!c->fake && (rc = curl_pool_open(c, err)) != ERR_OK)) {
        http_client_free(c);
        return rc;
    }
    if (!c->fake) {
        char *kept = opts && opts->keep_tls_session && cfg->state_dir
                         ? platform_path_join(cfg->state_dir, TLSSESSION_FILE)
                         : NULL;
        if (kept && !cfg->tls_session_resumption) {
            /* Off: no session is read or written, and one kept before goes. */
            ERROR_IGNORE(platform_remove_file(kept, NULL));
            free(kept);
            kept = NULL;
        }
        rc = tls_new(cfg->tls_ca_file, cfg->tls_pinned_public_key, kept, &c->tls, err);
        free(kept);
        if (rc != ERR_OK) {
            http_client_free(c);
            return rc;
        }
    }
    *client = c;
    return ERR_OK;
}

void http_client_free(http_client *c)
{
    if (!c)
        return;
    xfer *x = c->waiting_head;
    while (x) {
        xfer *next = x->next;
        if (x->kind == XFER_TOKEN && c->token_xfer == x)
            c->token_xfer = NULL;
        xfer_free(x);
        x = next;
    }
    /* Attempts still running (the client is freed mid-run) are dropped. */
    x = c->running_head;
    while (x) {
        xfer *next = x->run_next;
        curl_attempt_drop(c, x);
        xfer_free(x);
        x = next;
    }
    curl_pool_close(c);
    token_state_clear(&c->token);
    dynbuf_secret_free(c->secret);
    free(c->base_url);
    free(c->origin);
    tls_free(c->tls);
    proxy_free(c->proxy);
    ratelimit_free(c->rl);
    free(c);
}

bool http_client_has_key(const http_client *c)
{
    return c && c->secret && c->secret[0];
}

void http_client_set_verbosity(http_client *c, int verbosity)
{
    c->verbosity = verbosity;
}

void http_client_stats(const http_client *c, http_stats *stats)
{
    *stats = c->stats;
}

size_t http_pending(const http_client *c)
{
    return c->pending;
}

/* ---- An attempt's start and end ---------------------------------------------------- */

static void token_complete(http_client *c, xfer *x, error_code code, const error_info *err);

/* Ends an xfer: hands the result to whoever waits for it and frees it. */
static void xfer_complete(http_client *c, xfer *x, error_code code, const error_info *err)
{
    error_info ok;
    if (code == ERR_OK) {
        error_clear(&ok);
        err = &ok;
    }
    switch (x->kind) {
    case XFER_TOKEN: token_complete(c, x, code, err); return;
    case XFER_STREAM: {
        stream_ctx *s = x->stream;
        s->finished = true;
        s->code = code;
        s->err = *err;
        if (!s->result.status)
            s->result.status = x->status;
        xfer_free(x);
        return;
    }
    case XFER_JSON: {
        http_response response;
        response.status = x->status;
        response.body = x->response.data ? x->response.data : "";
        response.body_len = x->response.len;
        response.attempts = x->attempts;
        c->pending--;
        x->done(x->user, code, err, &response);
        xfer_free(x);
        return;
    }
    }
}

/* An attempt ended: outcome.c says what it means, and this acts on it. */
static void attempt_finished(http_client *c, xfer *x, const attempt_end *end)
{
    running_remove(c, x);
    outcome_verdict verdict;
    outcome_decide(c, x, end, &verdict);
    if (verdict.again)
        waiting_push_front(c, x);
    else
        xfer_complete(c, x, verdict.code, &verdict.err);
}

static void start_attempt(http_client *c, xfer *x, int64_t now)
{
    response_reset(x);
    if (x->hop_pending) {
        x->hop_pending = false;
    } else {
        x->attempts++;
        if (x->attempts > 1)
            c->stats.retries++;
    }
    c->stats.api_calls++;
    if (x->kind == XFER_TOKEN)
        c->stats.token_exchanges++;
    x->started_ms = now;
    speed_xfer_start(c, x, now);
    x->token_generation = x->kind != XFER_TOKEN && x->same_origin ? c->token.generation : 0;
    running_add(c, x);
    attempt_end end;
    end.outcome = OUTCOME_RESPONSE;
    end.message[0] = '\0';
    if (x->direct && text_equal_nocase_n(x->url, "file://", 7))
        file_attempt(c, x, &end);
    else if (c->fake)
        fake_attempt(c, x, &end);
    else if (curl_attempt_start(c, x, &end))
        return; /* running: drive() collects its end */
    attempt_finished(c, x, &end);
}

/* Ends libcurl's finished transfers. */
static void collect_curl(http_client *c)
{
    xfer *x = NULL;
    attempt_end end;
    while (curl_attempt_collect(c, &x, &end))
        attempt_finished(c, x, &end);
}

/* ---- The token exchange -------------------------------------------------------------- */

static bool token_request(http_client *c, int64_t now)
{
    xfer *x = xfer_new(c, XFER_TOKEN, HTTP_POST, c->service->token_route, c->service->token_label);
    if (!x)
        return false;
    x->body = c->service->token_body(c->secret, &x->body_len);
    if (!x->body) {
        xfer_free(x);
        return false;
    }
    url_set_start(c, x);
    if (!x->url) {
        xfer_free(x);
        return false;
    }
    if (c->token.access_token)
        http_trace(c, 2, "token: renewing the access token (%s)", c->token.invalid ? "refused by the platform" : "due");
    else
        http_trace(c, 2, "token: exchanging the API key for an access token");
    x->not_before = now;
    c->token_xfer = x;
    waiting_push_front(c, x);
    return true;
}

static void token_complete(http_client *c, xfer *x, error_code code, const error_info *err)
{
    error_info e;
    if (code == ERR_OK) {
        error_clear(&e);
        code = c->service->token_accept(&c->token, x->response.data ? x->response.data : "", x->response.len,
                                        x->started_ms, &e);
        if (code == ERR_OK)
            http_trace(c, 2, "token: obtained; valid %" PRId64 " s, renewed after %" PRId64 " s",
                       c->token.lifetime_ms / 1000, (c->token.renew_at_ms - c->token.obtained_ms) / 1000);
    } else {
        e = *err;
    }
    c->token_xfer = NULL;
    xfer_free(x);
    if (code == ERR_OK)
        return;
    /* Every request waiting for a token fails with the exchange's error. */
    xfer *keep_head = NULL, *keep_tail = NULL, *fail_head = NULL, *fail_tail = NULL;
    for (xfer *w = c->waiting_head, *next; w; w = next) {
        next = w->next;
        w->next = NULL;
        bool needs = w->kind != XFER_TOKEN && w->same_origin;
        xfer **head = needs ? &fail_head : &keep_head, **tail = needs ? &fail_tail : &keep_tail;
        if (*tail)
            (*tail)->next = w;
        else
            *head = w;
        *tail = w;
    }
    c->waiting_head = keep_head;
    c->waiting_tail = keep_tail;
    for (xfer *w = fail_head, *next; w; w = next) {
        next = w->next;
        error_info we = e;
        error_prefix(&we, "%s", w->label);
        xfer_complete(c, w, code, &we);
    }
}

/* ---- The loop ---------------------------------------------------------------------------- */

/* Starts every waiting xfer that may start now. Returns the ms until the
 * next one may (-1: none is waiting on time).
 *
 * The window's budget goes to the waiting xfers in their order: one whose
 * endpoint is at its concurrency cap keeps a claim on a start, and a later
 * xfer to a free endpoint may only use what the claims leave. Otherwise
 * each window's budget is spent mostly on whichever endpoint has the most
 * queued (event-lineage), the later calls (event-details, which the lineages
 * feed) pile up, and the last window, whose length the run waits for, is
 * spent at one endpoint's 5-in-flight rate instead of several endpoints'. */
static int64_t start_ready(http_client *c, bool *out_of_memory)
{
    int64_t wake = -1;
    int64_t now = clock_now_ms(c->clock);
restart:;
    int64_t claimed = 0; /* counted xfers before this one held at their endpoint's cap */
    for (xfer *prev = NULL, *x = c->waiting_head, *next; x; prev = x, x = next) {
        next = x->next;
        if (x->not_before > now) {
            int64_t w = x->not_before - now;
            wake = wake < 0 || w < wake ? w : wake;
            continue;
        }
        if (x->kind != XFER_TOKEN && x->same_origin && !token_usable(&c->token, now)) {
            if (!c->token_xfer) {
                if (!token_request(c, now)) {
                    *out_of_memory = true;
                    return -1;
                }
                goto restart;
            }
            continue;
        }
        /* In probe mode the one start (the probe) is the budget. */
        ratelimit_mode mode = ratelimit_get_mode(c->rl);
        bool budgeted = x->same_origin && mode != RATELIMIT_CONTRACT;
        if (budgeted && claimed > 0 && (mode == RATELIMIT_PROBE || ratelimit_budget(c->rl) <= claimed))
            continue; /* what is left is claimed by older xfers; a completion frees them */
        int64_t w = ratelimit_acquire(c->rl, x->same_origin ? x->endpoint : NULL, x->same_origin,
                                      x->same_origin && x->kind != XFER_TOKEN, now, &x->ticket);
        if (w == RATELIMIT_WAIT_COMPLETION) {
            if (budgeted)
                claimed++;
            continue;
        }
        if (w > 0) {
            wake = wake < 0 || w < wake ? w : wake;
            continue;
        }
        waiting_remove(c, x, prev);
        start_attempt(c, x, now);
        now = clock_now_ms(c->clock);
        wake = -1;
        goto restart;
    }
    return wake;
}

typedef bool (*drive_done_fn)(const http_client *c, const void *arg);

static MUST_CHECK error_code drive(http_client *c, drive_done_fn done, const void *arg, error_info *err)
{
    if (c->driving)
        return error_set(err, ERR_INTERNAL, "http: the client was driven from inside one of its callbacks");
    c->driving = true;
    error_code rc = ERR_OK;
    int64_t last_wait_note = -1;
    while (!done(c, arg)) {
        bool oom = false;
        int64_t wake = start_ready(c, &oom);
        if (oom) {
            rc = error_set(err, ERR_NOMEM, "http: out of memory");
            break;
        }
        if (done(c, arg))
            break;
        if (c->running > 0 && c->multi) {
            long timeout = wake < 0 || wake > POLL_MAX_MS ? POLL_MAX_MS : (long)wake;
            curl_pool_perform(c);
            collect_curl(c);
            if (done(c, arg))
                break;
            int64_t paced = curl_pool_resume(c);
            if (paced >= 0 && paced < timeout)
                timeout = (long)paced;
            if (!curl_pool_wait(c, timeout)) {
                rc = error_set(err, ERR_INTERNAL, "http: libcurl's multi interface failed");
                break;
            }
            curl_pool_perform(c);
            collect_curl(c);
        } else if (wake >= 0) {
            if (c->verbosity >= 2 && wake >= 200 && wake != last_wait_note)
                http_trace(c, 2, "ratelimit: waiting %" PRId64 " ms (%s)", wake,
                           ratelimit_get_mode(c->rl) == RATELIMIT_HEADERS ? "budget spent until the reset" : "pacing");
            last_wait_note = wake;
            clock_sleep_ms(c->clock, wake);
        } else if (c->running == 0) {
            rc = error_set(err, ERR_INTERNAL, "http: requests are pending but none can start");
            break;
        }
    }
    c->driving = false;
    return rc;
}

/* Called when drive() failed (out of memory, libcurl broken) while a
 * synchronous call's context, which lives on its caller's stack, is still
 * referenced by its xfer: the xfer is dropped without completion. */
static void abandon(http_client *c, const void *user, const stream_ctx *stream)
{
    for (xfer *prev = NULL, *x = c->waiting_head, *next; x; x = next) {
        next = x->next;
        if ((stream && x->stream == stream) || (user && x->kind == XFER_JSON && x->user == user)) {
            waiting_remove(c, x, prev);
            if (x->kind == XFER_JSON)
                c->pending--;
            xfer_free(x);
        } else {
            prev = x;
        }
    }
    for (xfer *x = c->running_head, *next; x; x = next) {
        next = x->run_next;
        if ((stream && x->stream == stream) || (user && x->kind == XFER_JSON && x->user == user)) {
            curl_attempt_drop(c, x);
            ratelimit_release(c->rl, &x->ticket, clock_now_ms(c->clock), NULL);
            running_remove(c, x);
            if (x->kind == XFER_JSON)
                c->pending--;
            xfer_free(x);
        }
    }
}

/* ---- Public entry points --------------------------------------------------------------- */

error_code http_submit(http_client *c, const http_request *request, http_done_fn done, void *user, error_info *err)
{
    if (!c || !request || !request->route || request->route[0] != '/' || !done)
        return error_set(err, ERR_INTERNAL, "http_submit: invalid request");
    if (!http_client_has_key(c))
        return error_set(err, ERR_CONFIG, "`base_url` and an API key are needed to call the platform");
    xfer *x = xfer_new(c, XFER_JSON, request->method, request->route, request->label);
    if (!x)
        return error_set(err, ERR_NOMEM, "out of memory queuing a request");
    if (request->method == HTTP_POST) {
        size_t len = request->body ? (request->body_len ? request->body_len : strlen(request->body)) : 0;
        x->body = malloc(len + 1);
        if (!x->body) {
            xfer_free(x);
            return error_set(err, ERR_NOMEM, "out of memory queuing a request");
        }
        if (len)
            memcpy(x->body, request->body, len);
        x->body[len] = '\0';
        x->body_len = len;
    }
    url_set_start(c, x);
    if (!x->url) {
        xfer_free(x);
        return error_set(err, ERR_NOMEM, "out of memory queuing a request");
    }
    x->done = done;
    x->user = user;
    x->not_before = 0;
    c->pending++;
    waiting_push_back(c, x);
    return ERR_OK;
}

typedef struct pending_target {
    size_t max_pending;
} pending_target;

static bool pending_at_most(const http_client *c, const void *arg)
{
    return c->pending <= ((const pending_target *)arg)->max_pending;
}

error_code http_run(http_client *c, size_t max_pending, error_info *err)
{
    pending_target t = {max_pending};
    return drive(c, pending_at_most, &t, err);
}

typedef struct call_ctx {
    bool finished;
    error_code code;
    error_info err;
    char *body;
    size_t body_len;
    long status;
} call_ctx;

static void call_done(void *user, error_code code, const error_info *err, const http_response *response)
{
    call_ctx *ctx = user;
    ctx->finished = true;
    ctx->code = code;
    ctx->err = *err;
    ctx->status = response->status;
    if (code == ERR_OK) {
        ctx->body = malloc(response->body_len + 1);
        if (!ctx->body) {
            ctx->code = error_set(&ctx->err, ERR_NOMEM, "out of memory keeping an answer");
            return;
        }
        memcpy(ctx->body, response->body, response->body_len);
        ctx->body[response->body_len] = '\0';
        ctx->body_len = response->body_len;
    }
}

static bool call_finished(const http_client *c, const void *arg)
{
    (void)c;
    return ((const call_ctx *)arg)->finished;
}

error_code http_call(http_client *c, const http_request *request, char **body, size_t *body_len, long *status,
                     error_info *err)
{
    *body = NULL;
    if (status)
        *status = 0;
    call_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    error_code rc = http_submit(c, request, call_done, &ctx, err);
    if (rc != ERR_OK)
        return rc;
    rc = drive(c, call_finished, &ctx, err);
    if (rc != ERR_OK) {
        if (!ctx.finished)
            abandon(c, &ctx, NULL);
        free(ctx.body);
        return rc;
    }
    if (status)
        *status = ctx.status;
    if (ctx.code != ERR_OK) {
        if (err)
            *err = ctx.err;
        return ctx.code;
    }
    *body = ctx.body;
    if (body_len)
        *body_len = ctx.body_len;
    return ERR_OK;
}

static bool stream_finished(const http_client *c, const void *arg)
{
    (void)c;
    return ((const stream_ctx *)arg)->finished;
}

/* Runs a stream xfer (set up by its caller) to its end. */
static MUST_CHECK error_code stream_run(http_client *c, xfer *x, stream_ctx *s, http_stream_result *result,
                                        error_info *err)
{
    x->stream = s;
    url_set_start(c, x);
    if (!x->url) {
        xfer_free(x);
        return error_set(err, ERR_NOMEM, "out of memory starting a download");
    }
    waiting_push_back(c, x);
    error_code rc = drive(c, stream_finished, s, err);
    if (rc != ERR_OK && !s->finished)
        abandon(c, NULL, s);
    if (result)
        *result = s->result;
    if (rc != ERR_OK)
        return rc;
    if (s->code != ERR_OK && err)
        *err = s->err;
    return s->code;
}

error_code http_stream_get(http_client *c, const http_stream_request *request, const http_stream_callbacks *callbacks,
                           http_stream_result *result, error_info *err)
{
    if (result)
        memset(result, 0, sizeof *result);
    if (!c || !request || !request->route || request->route[0] != '/' || !callbacks)
        return error_set(err, ERR_INTERNAL, "http_stream_get: invalid request");
    if (!http_client_has_key(c))
        return error_set(err, ERR_CONFIG, "`base_url` and an API key are needed to call the platform");
    stream_ctx s;
    memset(&s, 0, sizeof s);
    s.callbacks = callbacks;
    s.range = request->range;
    s.if_range = request->if_range;
    s.max_bytes_per_second = request->max_bytes_per_second;
    s.scale_deadline = callbacks->on_data != NULL; /* an installer: its length is announced */
    s.keep_headers = request->keep_headers;
    while (s.keep_headers && s.keep_headers[s.keep_count])
        if (++s.keep_count > HTTP_KEEP_HEADERS_MAX)
            return error_set(err, ERR_INTERNAL, "http_stream_get: more than %d headers to keep", HTTP_KEEP_HEADERS_MAX);
    xfer *x = xfer_new(c, XFER_STREAM, HTTP_GET, request->route, request->label);
    if (!x)
        return error_set(err, ERR_NOMEM, "out of memory starting a download");
    return stream_run(c, x, &s, result, err);
}

const char *http_stream_header(const http_stream_headers *h, const char *name)
{
    for (size_t i = 0; h->keep_names && h->keep_names[i]; i++)
        if (text_equal_nocase(h->keep_names[i], name))
            return h->kept[i];
    return NULL;
}

error_code http_url_get(http_client *c, const http_url_request *request, const http_stream_callbacks *callbacks,
                        http_stream_result *result, error_info *err)
{
    if (result)
        memset(result, 0, sizeof *result);
    if (!c || !request || !request->url || !callbacks)
        return error_set(err, ERR_INTERNAL, "http_url_get: invalid request");
    char *shown = url_without_query(request->url);
    if (!shown)
        return error_set(err, ERR_NOMEM, "out of memory starting a transfer");
    const char *u = request->url;
    if (!text_equal_nocase_n(u, "https://", 8) && !text_equal_nocase_n(u, "http://", 7) &&
        !text_equal_nocase_n(u, "file://", 7)) {
        error_set(err, ERR_CONFIG, "%s is not an https://, http:// or file:// URL", shown);
        free(shown);
        return ERR_CONFIG;
    }
    stream_ctx s;
    memset(&s, 0, sizeof s);
    s.callbacks = callbacks;
    s.range = request->range;
    s.if_range = request->range ? request->if_range : NULL;
    s.if_none_match = request->if_none_match;
    s.if_modified_since = request->if_modified_since;
    s.max_bytes_per_second = request->max_bytes_per_second;
    s.expected_bytes = request->expected_bytes;
    /* The route is the URL itself (url_set_start), the label what may be shown. */
    xfer *x = xfer_new(c, XFER_STREAM, HTTP_GET, "/", request->label ? request->label : shown);
    free(shown);
    if (!x)
        return error_set(err, ERR_NOMEM, "out of memory starting a transfer");
    free(x->route);
    free(x->endpoint);
    x->route = text_dup(request->url);
    x->endpoint = text_dup(x->label);
    x->direct = true;
    if (!x->route || !x->endpoint) {
        xfer_free(x);
        return error_set(err, ERR_NOMEM, "out of memory starting a transfer");
    }
    return stream_run(c, x, &s, result, err);
}

typedef struct url_body_ctx {
    http_url_body *out;
    size_t max;
    dynbuf body;
} url_body_ctx;

static http_stream_action url_body_headers(void *user, const http_stream_headers *h)
{
    url_body_ctx *b = user;
    b->out->status = h->status;
    free(b->out->etag);
    free(b->out->last_modified);
    b->out->etag = h->etag ? text_dup(h->etag) : NULL;
    b->out->last_modified = h->last_modified ? text_dup(h->last_modified) : NULL;
    return HTTP_STREAM_CONTINUE;
}

static http_stream_action url_body_data(void *user, const void *data, size_t len)
{
    url_body_ctx *b = user;
    size_t room = b->max - b->body.len;
    size_t keep = len < room ? len : room; /* the body holds max bytes when more came */
    if (keep && !dynbuf_append(&b->body, data, keep))
        return HTTP_STREAM_STOP;
    if (keep < len) {
        b->out->too_large = true;
        return HTTP_STREAM_STOP;
    }
    return HTTP_STREAM_CONTINUE;
}

error_code http_url_read(http_client *c, const http_url_request *request, size_t max_bytes, http_url_body *out,
                         error_info *err)
{
    memset(out, 0, sizeof *out);
    url_body_ctx b = {.out = out, .max = max_bytes};
    dynbuf_init(&b.body, max_bytes, false);
    http_stream_callbacks cb = {url_body_headers, url_body_data, &b};
    error_code rc = http_url_get(c, request, &cb, NULL, err);
    if (rc == ERR_OK && b.body.status == DYNBUF_NOMEM)
        rc = error_set(err, ERR_NOMEM, "out of memory reading %s", request->url);
    if (rc == ERR_OK && out->status != 304) {
        out->body = dynbuf_take(&b.body, &out->body_len);
        if (!out->body)
            out->body = text_dup(""); /* an empty body */
    }
    dynbuf_free(&b.body);
    if (rc == ERR_OK && out->status != 304 && !out->body)
        rc = error_set(err, ERR_NOMEM, "out of memory reading a transfer");
    return rc;
}

void http_url_body_free(http_url_body *body)
{
    if (!body)
        return;
    free(body->body);
    free(body->etag);
    free(body->last_modified);
    memset(body, 0, sizeof *body);
}
