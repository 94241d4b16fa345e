/*
 * source_api.c — the offer of the platform's installer route, read from its
 * answer's headers: for check from one GET that stops there, for update
 * from the answer download.c streams the body of.
 */
#include "installer/source_api.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "core/log.h"
#include "installer/disposition.h"
#include "installer/version.h"
#include "net/api.h"

error_code source_api_offer(const http_stream_headers *h, int64_t total_length, download_offer *offer, char **file_name,
                            error_info *err)
{
    memset(offer, 0, sizeof *offer);
    if (file_name)
        *file_name = NULL;
    const char *version = api_installer_version(h);
    if (!version) {
        /* An absent version is an empty one: rejected (PRODUCT.md 4.1). */
        return error_set(err, ERR_REJECTED,
                         "installer: the answer (Content-Type %s) carries no X-Installer-Version header, so it cannot "
                         "be an installer; check the platform URL and any proxy or gateway in between",
                         h->content_type ? h->content_type : "unknown");
    }
    if (!version_is_valid(version, err)) {
        if (err)
            err->code = ERR_REJECTED;
        return error_prefix(err, "X-Installer-Version");
    }
    error_code rc = file_name ? disposition_file_name(h->content_disposition, file_name, err) : ERR_OK;
    if (rc != ERR_OK)
        return error_prefix(err, "Content-Disposition");
    offer->version = version;
    offer->file_name = file_name ? *file_name : NULL;
    offer->total_length = total_length;
    offer->url = h->url;
    return ERR_OK;
}

/* ---- The installer route's latest version (check) ----------------------------------- */

/* What check's one GET learned: the answer's headers judged as the offer. */
typedef struct check_answer {
    bool seen;      /* the answer's headers arrived */
    error_code rc;  /* source_api_offer's judgement of them */
    error_info why; /* its message */
    char *version;  /* the offer's version, malloc'd */
} check_answer;

static void judge_answer(check_answer *answer, const http_stream_headers *h)
{
    download_offer offer;
    answer->seen = true;
    answer->rc = source_api_offer(h, -1, &offer, NULL, &answer->why);
    if (answer->rc == ERR_OK && !(answer->version = text_dup(offer.version)))
        answer->rc = error_set(&answer->why, ERR_NOMEM, "out of memory");
}

static http_stream_action check_on_headers(void *user, const http_stream_headers *h)
{
    judge_answer(user, h);
    return HTTP_STREAM_STOP;
}

error_code source_api_latest(http_client *http, const char *platform, char **version, error_info *err)
{
    *version = NULL;
    check_answer answer;
    memset(&answer, 0, sizeof answer);
    http_stream_callbacks cb = {check_on_headers, NULL, &answer};
    api_installer_request req = {.platform = platform};
    http_stream_result res;
    memset(&res, 0, sizeof res);
    error_code rc = api_installer_get(http, &req, &cb, &res, err);
    log_trace("check: %" PRId64 " bytes of installer body read", res.body_bytes);
    if (rc == ERR_OK && !answer.seen) {
        http_stream_headers none; /* no headers at all: no X-Installer-Version either */
        memset(&none, 0, sizeof none);
        judge_answer(&answer, &none);
    }
    if (rc == ERR_OK && answer.rc != ERR_OK) {
        rc = answer.rc;
        if (err)
            *err = answer.why;
    }
    if (rc == ERR_OK) {
        *version = answer.version;
        answer.version = NULL;
    }
    free(answer.version);
    return rc;
}
