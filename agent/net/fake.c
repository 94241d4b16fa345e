/*
 * fake.c — the unit tests' transport (http_fake.h): every attempt the
 * client would send goes to the test's function with the request headers
 * libcurl would have sent (the bearer token included), and its answer is
 * read through response.c as libcurl's would be: interim answers, a second
 * final answer and trailers included. Synchronous: the attempt has ended
 * when this returns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "net/http_int.h"

void fake_attempt(http_client *c, xfer *x, attempt_end *end)
{
    bool ok = true;
    struct curl_slist *list = curl_request_headers(x, &ok);
    dynbuf extra;
    dynbuf_init(&extra, 0, true); /* the Authorization header */
    for (struct curl_slist *l = list; l && ok; l = l->next)
        ok = dynbuf_append(&extra, l->data, strlen(l->data)) && dynbuf_append(&extra, "\r\n", 2);
    curl_slist_free_all(list);
    if (ok && x->token_generation) {
        ok = dynbuf_append(&extra, "Authorization: Bearer ", 22) &&
             dynbuf_append(&extra, c->token.access_token, strlen(c->token.access_token)) &&
             dynbuf_append(&extra, "\r\n", 2);
    }
    if (!ok) {
        dynbuf_free(&extra);
        end->outcome = OUTCOME_NOMEM;
        return;
    }
    http_fake_response r;
    memset(&r, 0, sizeof r);
    error_info fe;
    error_clear(&fe);
    error_code rc = c->fake(c->fake_ctx, xfer_method(x), x->url, x->body ? x->body : "", x->body_len,
                            extra.data ? extra.data : "", &r, &fe);
    dynbuf_free(&extra);
    if (rc != ERR_OK) {
        free(r.headers);
        free(r.body);
        free(r.trailers);
        end->outcome = rc == ERR_TLS ? OUTCOME_TLS : OUTCOME_NETWORK;
        snprintf(end->message, sizeof end->message, "%s", fe.message[0] ? fe.message : error_meaning(rc));
        return;
    }
    char status_line[64];
    snprintf(status_line, sizeof status_line, "HTTP/1.1 %ld Fake\r\n", r.status);
    bool go = response_header_line(x, status_line, strlen(status_line));
    for (const char *p = r.headers; go && p && *p;) {
        size_t n = strcspn(p, "\n");
        go = response_header_line(x, p, n); /* an empty line ends an interim response */
        p += n;
        if (*p == '\n')
            p++;
    }
    if (go)
        go = response_header_line(x, "\r\n", 2);
    bool cut = !go;
    for (size_t off = 0; go && off < r.body_len;) {
        size_t n = r.body_len - off < 16384 ? r.body_len - off : 16384;
        go = response_body(x, r.body + off, n);
        off += n;
    }
    for (const char *p = r.trailers; go && p && *p;) {
        size_t n = strcspn(p, "\n");
        go = response_header_line(x, p, n);
        p += n;
        if (*p == '\n')
            p++;
    }
    if (go && r.trailers)
        go = response_header_line(x, "\r\n", 2);
    if (!go && !x->stopped && !x->too_large && !x->body_capped)
        cut = true;
    free(r.headers);
    free(r.body);
    free(r.trailers);
    end->outcome =
        cut && !x->stopped && !x->too_large && !x->body_capped && !x->out_of_memory ? OUTCOME_OTHER : OUTCOME_RESPONSE;
    snprintf(end->message, sizeof end->message, "%s", cut ? "aborted" : "");
}
