/*
 * fetch.c — plain GETs for the fleet mirror: libcurl easy for http(s), the
 * platform layer for file://.
 */
#include "net/fetch.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base/dynbuf.h"
#include "base/text.h"
#include "net/tlsprefs.h"
#include "platform/platform.h"

#define DEFAULT_MAX (64 * 1024)
#define FILE_CHUNK (256 * 1024)

typedef struct transfer {
    const fetch_request *req;
    fetch_result *res;
    int64_t max;
    dynbuf body;         /* the kept body, handed to res->body at the end */
    bool started;        /* on_start was called */
    bool bad_range;      /* a 206 for a range we did not ask for */
    int64_t range_first; /* first byte of a 206's Content-Range, -1 when none */
} transfer;

void fetch_result_free(fetch_result *r)
{
    if (!r)
        return;
    free(r->etag);
    free(r->last_modified);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* Calls on_start once; false stops the transfer. */
static bool start(transfer *t)
{
    if (t->started)
        return true;
    t->started = true;
    if (t->req->on_start && !t->req->on_start(t->req->user, t->res)) {
        t->res->stopped = true;
        return false;
    }
    return true;
}

/* Keeps or hands on one chunk; false stops the transfer. */
static bool take(transfer *t, const char *data, size_t len)
{
    fetch_result *r = t->res;
    if (!start(t))
        return false;
    r->body_bytes += (int64_t)len;
    if (t->req->on_data) {
        if (!t->req->on_data(t->req->user, data, len)) {
            r->stopped = true;
            return false;
        }
        return true;
    }
    size_t room = (size_t)t->max - t->body.len;
    size_t keep = len < room ? len : room; /* the body holds max_bytes when more came */
    if (!dynbuf_append(&t->body, data, keep))
        return false;
    if (keep < len) {
        r->too_large = true;
        return false;
    }
    return true;
}

/* ---- file:// -------------------------------------------------------------------- */

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *fetch_file_url_path(const char *url)
{
    if (!text_equal_nocase_n(url, "file://", 7))
        return NULL;
    const char *rest = url + 7;
    if (!rest[0])
        return NULL;
    char *raw;
    if (rest[0] == '/') {
        /* file:///C:/x -> C:/x; file:///srv/x -> /srv/x */
        if (isalpha((unsigned char)rest[1]) && (rest[2] == ':' || rest[2] == '|'))
            rest++;
        raw = text_dup(rest);
    } else if (text_equal_nocase_n(rest, "localhost/", 10)) {
        raw = text_dup(rest + 9);
    } else {
        /* file://server/share/x: a UNC path, //server/share/x */
        size_t n = strlen(rest);
        raw = malloc(n + 3);
        if (raw)
            snprintf(raw, n + 3, "//%s", rest);
    }
    if (!raw)
        return NULL;
    char *out = raw;
    for (char *in = raw; *in; in++) {
        if (*in == '%' && hex_digit(in[1]) >= 0 && hex_digit(in[2]) >= 0) {
            char c = (char)(hex_digit(in[1]) * 16 + hex_digit(in[2]));
            if (c == '\0') {
                free(raw);
                return NULL;
            }
            *out++ = c;
            in += 2;
        } else if (*in == '?' || *in == '#') {
            break;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
    if (!raw[0]) {
        free(raw);
        return NULL;
    }
    return raw;
}

static MUST_CHECK error_code fetch_file(transfer *t, error_info *err)
{
    const char *url = t->req->url;
    char *path = fetch_file_url_path(url);
    if (!path)
        return error_set(err, ERR_HTTP,
                         "%s is not a usable file:// URL (file:///path, file:///C:/path or "
                         "file://server/share/path)",
                         url);
    uint64_t size = 0;
    if (platform_path_stat(path, &size) != PLATFORM_PATH_FILE) {
        free(path);
        return error_set(err, ERR_NOT_FOUND, "%s: no such file", url);
    }
    FILE *f = platform_fopen(path, "rb");
    free(path);
    if (!f)
        return error_set(err, ERR_IO, "%s: cannot open the file", url);
    int64_t from = t->req->range_from > 0 && (uint64_t)t->req->range_from <= size ? t->req->range_from : 0;
    t->res->status = from > 0 ? 206 : 200;
    t->res->range_start = from;
    t->res->content_length = (int64_t)size - from;
    char *buf = malloc(FILE_CHUNK);
    error_code rc = buf ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK && from > 0 && platform_seek(f, (uint64_t)from, NULL) != ERR_OK)
        rc = error_set(err, ERR_TEMPORARY, "%s: read error (is the share reachable?)", url);
    bool go = rc == ERR_OK && start(t);
    while (go) {
        size_t n = fread(buf, 1, FILE_CHUNK, f);
        if (n > 0 && !take(t, buf, n))
            break;
        if (n < FILE_CHUNK) {
            if (ferror(f))
                rc = error_set(err, ERR_TEMPORARY, "%s: read error (is the share reachable?)", url);
            break;
        }
    }
    free(buf);
    fclose(f);
    if (rc == ERR_OK && t->body.status == DYNBUF_NOMEM)
        rc = error_set(err, ERR_NOMEM, "out of memory reading %s", url);
    return rc;
}

/* ---- http(s) ---------------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *user)
{
    transfer *t = user;
    size_t len = size * nmemb;
    long status = t->res->status;
    if (status == 206 && t->req->range_from > 0) {
        if (t->range_first != t->req->range_from) {
            t->bad_range = true;
            return 0;
        }
        t->res->range_start = t->range_first;
    } else if (status != 200) {
        return len; /* an error page or a 304: not ours to keep */
    }
    return take(t, data, len) ? len : 0;
}

static char *header_value(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);
    if (len <= n || !text_equal_nocase_n(line, name, n) || line[n] != ':')
        return NULL;
    const char *v = line + n + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    return text_dup_n(v, (size_t)(end - v));
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *user)
{
    transfer *t = user;
    size_t len = size * nmemb;
    fetch_result *r = t->res;
    if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* A new response (after a redirect or a 100): forget the last one's headers. */
        const char *sp = memchr(line, ' ', len);
        r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        free(r->etag);
        free(r->last_modified);
        r->etag = r->last_modified = NULL;
        r->content_length = -1;
        t->range_first = -1;
        return len;
    }
    char *v;
    if ((v = header_value(line, len, "ETag"))) {
        free(r->etag);
        r->etag = v;
    } else if ((v = header_value(line, len, "Last-Modified"))) {
        free(r->last_modified);
        r->last_modified = v;
    } else if ((v = header_value(line, len, "Content-Length"))) {
        r->content_length = strtoll(v, NULL, 10);
        free(v);
    } else if ((v = header_value(line, len, "Content-Range"))) {
        /* bytes FIRST-LAST/TOTAL; anything else leaves range_first -1 */
        long long first = -1;
        char unit[8];
        if (sscanf(v, "%7s %lld-", unit, &first) == 2 && text_equal_nocase_n(unit, "bytes", 6) && first >= 0)
            t->range_first = first;
        free(v);
    }
    return len;
}

static MUST_CHECK error_code fetch_http(const config *cfg, transfer *t, error_info *err)
{
    static bool initialised;
    if (!initialised) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        initialised = true;
    }
    const fetch_request *req = t->req;
    CURL *e = curl_easy_init();
    if (!e)
        return error_set(err, ERR_NOMEM, "out of memory starting a transfer");
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;
    char line[600];
    if (req->if_none_match) {
        snprintf(line, sizeof line, "If-None-Match: %s", req->if_none_match);
        headers = curl_slist_append(headers, line);
    }
    if (req->if_modified_since) {
        snprintf(line, sizeof line, "If-Modified-Since: %s", req->if_modified_since);
        headers = curl_slist_append(headers, line);
    }
    char range[32];
    if (req->range_from > 0) {
        snprintf(range, sizeof range, "%lld-", (long long)req->range_from);
        curl_easy_setopt(e, CURLOPT_RANGE, range);
    }
    bool https = text_equal_nocase_n(req->url, "https://", 8);
    char *ca_bundle = NULL;
    size_t ca_len = 0;
    curl_easy_setopt(e, CURLOPT_URL, req->url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85.0 */
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS,
                     https ? (long)CURLPROTO_HTTPS : (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)cfg->http.connect_timeout_s);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)cfg->http.low_speed_time_s);
    curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    tlsprefs_apply(e);
    if (cfg->tls_ca_file) {
        curl_easy_setopt(e, CURLOPT_CAINFO, cfg->tls_ca_file);
    } else if (platform_system_ca_bundle(&ca_bundle, &ca_len, NULL) == ERR_OK) {
#if LIBCURL_VERSION_NUM >= 0x074d00 /* 7.77.0: CURLOPT_CAINFO_BLOB */
        struct curl_blob blob = {ca_bundle, ca_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
#endif
    } else {
        const char *system_ca = platform_system_ca_file();
        if (system_ca)
            curl_easy_setopt(e, CURLOPT_CAINFO, system_ca);
    }
    if (cfg->proxy)
        curl_easy_setopt(e, CURLOPT_PROXY, cfg->proxy);
    curl_easy_setopt(e, CURLOPT_PROXYAUTH, (long)CURLAUTH_ANY);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "outpost/" OUTPOST_VERSION);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, (void *)t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    if (req->on_data)
        curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024);

    CURLcode cc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(e);
    curl_slist_free_all(headers);
    free(ca_bundle);
    fetch_result *r = t->res;
    r->status = status;
    bool stopped = r->too_large || r->stopped;
    if (cc == CURLE_WRITE_ERROR && stopped)
        return ERR_OK;
    if (t->body.status == DYNBUF_NOMEM)
        return error_set(err, ERR_NOMEM, "out of memory reading %s", req->url);
    if (t->bad_range)
        return error_set(err, ERR_HTTP, "%s: answered a range request with another range", req->url);
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);
    switch (cc) {
    case CURLE_OK: break;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
#if LIBCURL_VERSION_NUM < 0x073e00
    case CURLE_SSL_CACERT:
#endif
        return error_set(err, ERR_TLS, "%s: TLS failure: %s; check tls.ca_file", req->url, why);
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_TOO_MANY_REDIRECTS:
        return error_set(err, ERR_HTTP, "%s: %s (redirects go at most 5 hops and never from https to http)", req->url,
                         why);
    default: return error_set(err, ERR_TEMPORARY, "%s: %s", req->url, why);
    }
    if (status == 200 || (status == 206 && req->range_from > 0)) {
        if (status == 206)
            r->range_start = t->range_first;
        start(t); /* an empty body: the caller still learns which answer it was */
        return ERR_OK;
    }
    if (status == 304)
        return ERR_OK;
    if (status == 429 || status >= 500)
        return error_set(err, ERR_TEMPORARY, "%s: HTTP %ld; the mirror is busy or failing, try again later", req->url,
                         status);
    return error_set(err, ERR_HTTP, "%s: HTTP %ld", req->url, status);
}

error_code fetch_get(const config *cfg, const fetch_request *request, fetch_result *result, error_info *err)
{
    memset(result, 0, sizeof *result);
    result->content_length = -1;
    transfer t = {.req = request,
                  .res = result,
                  .max = request->max_bytes > 0 ? request->max_bytes : DEFAULT_MAX,
                  .range_first = -1};
    dynbuf_init(&t.body, (size_t)t.max, false);
    error_code rc = text_equal_nocase_n(request->url, "file://", 7) ? fetch_file(&t, err) : fetch_http(cfg, &t, err);
    result->body = dynbuf_take(&t.body, &result->body_len);
    return rc;
}
