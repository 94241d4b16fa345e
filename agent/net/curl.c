/*
 * curl.c — libcurl under the engine: the multi handle and the pool of easy
 * handles kept for reuse (keep-alive and TLS sessions shared), each
 * attempt's options (protocols, timeouts, the minimum speed and deadline of
 * speed.c, TLS from tls.c, the proxy from proxy.c, the bearer token to
 * base_url's origin only, no redirects: url.c follows them), the request
 * headers (Range / If-Range, If-None-Match / If-Modified-Since; the fake
 * transport sends the same), and the callbacks that hand what arrives to
 * response.c, pausing a body to hold the receive cap. Ended transfers go
 * back to http.c as an attempt_end, their libcurl code sorted by outcome.c.
 * (Our functions are curl_pool_* and curl_attempt_*; libcurl's are
 * curl_easy_* and curl_multi_*.)
 */
#include <stdio.h>
#include <string.h>

#include "base/text.h"
#include "net/http_int.h"
#include "net/proxy.h"
#include "net/speed.h"
#include "net/tls.h"

/* ---- The pool -------------------------------------------------------------------- */

error_code curl_pool_open(http_client *c, error_info *err)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return error_set(err, ERR_INTERNAL, "libcurl could not be initialised");
    c->curl_initialised = true;
    c->multi = curl_multi_init();
    c->share = curl_share_init();
    if (!c->multi || !c->share)
        return error_set(err, ERR_NOMEM, "out of memory creating the HTTP client");
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, 32L);
    return ERR_OK;
}

void curl_pool_close(http_client *c)
{
    for (int i = 0; i < c->idle_count; i++)
        curl_easy_cleanup(c->idle[i]);
    c->idle_count = 0;
    if (c->multi)
        curl_multi_cleanup(c->multi);
    if (c->share)
        curl_share_cleanup(c->share);
    c->multi = NULL;
    c->share = NULL;
    if (c->curl_initialised)
        curl_global_cleanup();
    c->curl_initialised = false;
}

void curl_pool_perform(http_client *c)
{
    int still = 0;
    curl_multi_perform(c->multi, &still);
}

bool curl_pool_wait(http_client *c, long timeout_ms)
{
    return curl_multi_poll(c->multi, NULL, 0, (int)timeout_ms, NULL) == CURLM_OK;
}

static CURL *easy_take(http_client *c)
{
    if (c->idle_count > 0) {
        CURL *e = c->idle[--c->idle_count];
        curl_easy_reset(e);
        return e;
    }
    return curl_easy_init();
}

static void easy_give_back(http_client *c, CURL *e)
{
    if (c->idle_count < (int)(sizeof c->idle / sizeof c->idle[0]))
        c->idle[c->idle_count++] = e;
    else
        curl_easy_cleanup(e);
}

int64_t curl_pool_resume(http_client *c)
{
    int64_t wake = -1;
    int64_t now = clock_now_ms(c->clock);
    for (xfer *x = c->running_head; x; x = x->run_next) {
        if (!x->paused || !x->easy)
            continue;
        if (x->resume_at_ms <= now) {
            x->paused = false;
            curl_easy_pause(x->easy, CURLPAUSE_CONT);
            continue;
        }
        int64_t w = x->resume_at_ms - now;
        wake = wake < 0 || w < wake ? w : wake;
    }
    return wake;
}

/* ---- Callbacks ------------------------------------------------------------------ */

static size_t header_cb(char *buffer, size_t size, size_t nitems, void *userdata)
{
    size_t n = size * nitems;
    xfer *x = userdata;
    if (!x->final_ended && n >= 5 && memcmp(buffer, "HTTP/", 5) == 0) {
        /* The handshake is over once an answer arrives: keep its session. */
        tlssession_outcome kept = tls_keep_session(x->client->tls, x->easy);
        if (kept != TLSSESSION_NONE)
            http_trace(x->client, 2, "TLS session %s",
                       kept == TLSSESSION_RESUMED ? "resumed from an earlier run" : "kept for the next run");
    }
    return response_header_line(x, buffer, n) ? n : 0;
}

/*
 * The receive cap (installer.max_bytes_per_second): a body is taken no
 * faster than the cap from its first byte on. libcurl's own limit reads a
 * whole burst of buffers before it looks at the rate, so a file of a few
 * MiB came at full speed; pausing the transfer here (drive() resumes it)
 * holds the rate for any length, as file.c does for file://.
 */
static bool pace_wait(xfer *x, size_t len)
{
    int64_t now = clock_now_ms(x->client->clock);
    int64_t wait = speed_xfer_wait(x, now);
    if (wait > 0) {
        x->resume_at_ms = now + wait;
        x->paused = true;
        return true;
    }
    speed_xfer_took(x, len);
    return false;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    size_t n = size * nmemb;
    if (pace_wait(userdata, n))
        return CURL_WRITEFUNC_PAUSE; /* libcurl keeps the chunk and hands it again on resume */
    return response_body(userdata, ptr, n) ? n : 0;
}

/* libcurl's progress callback, at least once a second while a transfer
 * runs, stalled or not: where the overall deadline is enforced (it grows
 * when a body's length is announced, which CURLOPT_TIMEOUT cannot do). */
static int progress_cb(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    xfer *x = user;
    if (!speed_xfer_late(x, clock_now_ms(x->client->clock)))
        return 0;
    x->deadline_hit = true;
    return 1;
}

/* ---- An attempt -------------------------------------------------------------------- */

struct curl_slist *curl_request_headers(const xfer *x, bool *ok)
{
    struct curl_slist *list = NULL, *next;
    char line[1200];
    *ok = true;
#define ADD(text)                                                                                                      \
    do {                                                                                                               \
        next = curl_slist_append(list, (text));                                                                        \
        if (!next) {                                                                                                   \
            *ok = false;                                                                                               \
            return list;                                                                                               \
        }                                                                                                              \
        list = next;                                                                                                   \
    } while (0)
    if (x->kind == XFER_STREAM) {
        const stream_ctx *r = x->stream;
        if (r->range) {
            snprintf(line, sizeof line, "Range: %.1000s", r->range);
            ADD(line);
            if (r->if_range) {
                snprintf(line, sizeof line, "If-Range: %.1000s", r->if_range);
                ADD(line);
            }
        }
        if (r->if_none_match) {
            snprintf(line, sizeof line, "If-None-Match: %.1000s", r->if_none_match);
            ADD(line);
        }
        if (r->if_modified_since) {
            snprintf(line, sizeof line, "If-Modified-Since: %.1000s", r->if_modified_since);
            ADD(line);
        }
    } else {
        ADD("Accept: application/json");
        if (x->method == HTTP_POST) {
            ADD("Content-Type: application/json");
            ADD("Expect:");
        }
    }
#undef ADD
    return list;
}

/* libcurl's trace, watched for the scheme of a Proxy-Authorization header
 * it sends (the credentials after it are never looked at). */
static int debug_cb(CURL *e, curl_infotype type, char *data, size_t size, void *userp)
{
    (void)e;
    xfer *x = userp;
    static const char name[] = "Proxy-Authorization: ";
    size_t n = sizeof name - 1;
    if (type != CURLINFO_HEADER_OUT)
        return 0;
    for (size_t i = 0; i + n < size; i++) {
        if ((i == 0 || data[i - 1] == '\n') && text_equal_nocase_n(data + i, name, n)) {
            size_t k = 0;
            while (i + n + k < size && k + 1 < sizeof x->proxy_scheme && data[i + n + k] != ' ' &&
                   data[i + n + k] != '\r')
                k++;
            memcpy(x->proxy_scheme, data + i + n, k);
            x->proxy_scheme[k] = '\0';
        }
    }
    return 0;
}

/* Sets the proxy for x's URL on e (proxy.h), saying at -v what was chosen
 * for a new origin; *end says why when it cannot be chosen. */
static bool attempt_proxy(http_client *c, xfer *x, CURL *e, attempt_end *end)
{
    char note[600];
    error_info err;
    error_clear(&err);
    if (proxy_apply(c->proxy, e, x->url, note, sizeof note, &err) != ERR_OK) {
        end->outcome = err.code == ERR_TEMPORARY ? OUTCOME_PROXY_SCRIPT
                       : err.code == ERR_CONFIG  ? OUTCOME_CONFIG
                                                 : OUTCOME_NOMEM;
        snprintf(end->message, sizeof end->message, "%s", err.message);
        return false;
    }
    if (note[0])
        log_info("%s", note);
    /* At -v, which scheme authenticated to the proxy, once per origin:
     * libcurl says what it sent (curl before 8.12 has no
     * CURLINFO_PROXYAUTH_USED), and only its scheme's name is kept. */
    x->proxy_scheme[0] = '\0';
    bool watch = log_get_level() >= LOG_VERBOSE && proxy_auth_unsaid(c->proxy, x->url);
    curl_easy_setopt(e, CURLOPT_DEBUGFUNCTION, watch ? debug_cb : NULL);
    curl_easy_setopt(e, CURLOPT_DEBUGDATA, watch ? (void *)x : NULL);
    curl_easy_setopt(e, CURLOPT_VERBOSE, watch ? 1L : 0L);
    return true;
}

/* Sets up x's attempt on an easy handle and adds it to the multi handle. */
static bool attempt_setup(http_client *c, xfer *x, attempt_end *end)
{
    bool ok = true;
    end->outcome = OUTCOME_NOMEM;
    CURL *e = easy_take(c);
    if (!e)
        return false;
    x->easy = e;
    x->request_headers = curl_request_headers(x, &ok);
    if (!ok)
        return false;
    curl_easy_setopt(e, CURLOPT_URL, x->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)x);
    curl_easy_setopt(e, CURLOPT_SHARE, c->share);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L); /* redirects are ours: see url_follow */
    /* Protocols: http and https only (file:// is ours: file.c). Redirect
     * protocols too, should libcurl ever follow one itself: https only, as
     * url_follow decides for the ones we follow. */
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, (long)CURLPROTO_HTTPS);
#endif
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)c->cfg.connect_timeout_s);
    /* The minimum speed and the deadline (PRODUCT.md section 8): a server
     * that drips or stalls ends the transfer, never the run. */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, (long)speed_xfer_minimum(c, x));
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)c->cfg.low_speed_time_s);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, progress_cb);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, (void *)x);
    tls_apply(c->tls, e, x->same_origin);
    /* Servers close idle keep-alive connections after about a minute
     * (nginx 75 s, load balancers 60 s); a run that waited for its rate
     * window must not trip over a connection the server already dropped. */
    curl_easy_setopt(e, CURLOPT_MAXAGE_CONN, 50L);
    if (!attempt_proxy(c, x, e, end))
        return false;
    curl_easy_setopt(e, CURLOPT_USERAGENT, "outpost/" OUTPOST_VERSION);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, (void *)x);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    if (x->kind == XFER_STREAM) {
        /* A download takes large reads (fewer callbacks); a version check
         * (no on_data) keeps libcurl's 16 KiB so that stopping after the
         * headers reads little body. */
        if (x->stream->callbacks->on_data)
            curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024);
    } else {
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* the size cap counts decoded bytes */
    }
    if (x->method == HTTP_POST) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body ? x->body : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    }
    if (x->token_generation) {
        /* libcurl's bearer option, not a custom header: libcurl itself never
         * sends it to another host, and our redirects never ask it to. */
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(e, CURLOPT_XOAUTH2_BEARER, c->token.access_token);
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->request_headers);
    return curl_multi_add_handle(c->multi, e) == CURLM_OK;
}

bool curl_attempt_start(http_client *c, xfer *x, attempt_end *end)
{
    if (attempt_setup(c, x, end))
        return true;
    curl_attempt_drop(c, x);
    return false;
}

void curl_attempt_drop(http_client *c, xfer *x)
{
    if (x->easy) {
        curl_multi_remove_handle(c->multi, x->easy);
        easy_give_back(c, x->easy);
        x->easy = NULL;
    }
    curl_slist_free_all(x->request_headers);
    x->request_headers = NULL;
}

/* After an attempt through a proxy: the -v line on how it authenticated
 * (once per origin, after a transfer the proxy let through), and the next proxy of the origin's list (a PAC
 * answer's) when this one could not be reached, so that the retry uses it. */
static void attempt_proxy_end(http_client *c, xfer *x, CURLcode cc, attempt_end *end)
{
    char note[600];
    if (cc == CURLE_OK && x->status != 407 && proxy_auth_unsaid(c->proxy, x->url) && log_get_level() >= LOG_VERBOSE &&
        proxy_note_auth(c->proxy, x->url, x->proxy_scheme, note, sizeof note))
        log_info("%s", note);
    if (cc != CURLE_COULDNT_CONNECT && cc != CURLE_COULDNT_RESOLVE_PROXY)
        return;
    /* The failure is the proxy's: say which, and where it came from. */
    char shown[300];
    proxy_shown(c->proxy, x->url, shown, sizeof shown);
    if (shown[0]) {
        char message[sizeof end->message];
        snprintf(message, sizeof message, "%s", end->message);
        snprintf(end->message, sizeof end->message, "the proxy %.300s: %.180s", shown, message);
    }
    if (proxy_next(c->proxy, x->url, note, sizeof note)) {
        log_info("%s, the one before could not be reached (%s)", note, curl_easy_strerror(cc));
        end->outcome = OUTCOME_NETWORK; /* retried, through the next one */
    }
}

bool curl_attempt_collect(http_client *c, xfer **done, attempt_end *end)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *e = m->easy_handle;
        CURLcode cc = m->data.result;
        xfer *x = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&x);
        curl_multi_remove_handle(c->multi, e);
        char *message = end->message;
        snprintf(message, sizeof end->message, "%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc));
        size_t n = strlen(message);
        while (n > 0 && (message[n - 1] == '\n' || message[n - 1] == '\r'))
            message[--n] = '\0';
        attempt_outcome outcome = outcome_of_curl(cc, message);
        if (outcome == OUTCOME_TLS)
            tls_session_failed(c->tls);
        long connect_code = 0;
        if (cc != CURLE_OK && curl_easy_getinfo(e, CURLINFO_HTTP_CONNECTCODE, &connect_code) == CURLE_OK &&
            connect_code == 407)
            outcome = OUTCOME_PROXY_AUTH;
        easy_give_back(c, e);
        x->easy = NULL;
        curl_slist_free_all(x->request_headers);
        x->request_headers = NULL;
        end->outcome = outcome;
        if (cc == CURLE_OK)
            end->message[0] = '\0';
        attempt_proxy_end(c, x, cc, end);
        *done = x;
        return true;
    }
    return false;
}
