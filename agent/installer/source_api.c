/*
 * source_api.c — the offer of the platform's installer route, read from its
 * answer's headers.
 */
#include "installer/source_api.h"

#include <inttypes.h>
#include <stdio.h>
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
    *file_name = NULL;
    const char *version = h->installer_version;
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
    error_code rc = disposition_file_name(h->content_disposition, file_name, err);
    if (rc != ERR_OK)
        return error_prefix(err, "Content-Disposition");
    offer->version = version;
    offer->file_name = *file_name;
    offer->total_length = total_length;
    offer->url = h->url;
    return ERR_OK;
}

/* ---- The installer route's latest version (check) ----------------------------------- */

typedef struct check_answer {
    char *version;         /* X-Installer-Version, malloc'd; NULL when absent */
    char content_type[64]; /* for the error message when it is absent */
} check_answer;

static http_stream_action check_on_headers(void *user, const http_stream_headers *h)
{
    check_answer *answer = user;
    if (h->installer_version)
        answer->version = text_dup(h->installer_version);
    snprintf(answer->content_type, sizeof answer->content_type, "%s", h->content_type ? h->content_type : "");
    return HTTP_STREAM_STOP;
}

error_code source_api_latest(http_client *http, const char *platform, char **version, error_info *err)
{
    *version = NULL;
    check_answer answer = {0};
    http_stream_callbacks cb = {check_on_headers, NULL, &answer};
    api_installer_request req = {.platform = platform};
    http_stream_result res;
    memset(&res, 0, sizeof res);
    error_code rc = api_installer_get(http, &req, &cb, &res, err);
    log_trace("check: %" PRId64 " bytes of installer body read", res.body_bytes);
    if (rc == ERR_OK && !answer.version)
        rc = error_set(err, ERR_REJECTED,
                       "installer: the answer (Content-Type %s) carries no X-Installer-Version header, so it cannot be "
                       "an installer; check the platform URL and any proxy or gateway in between",
                       answer.content_type[0] ? answer.content_type : "unknown");
    if (rc == ERR_OK && !version_is_valid(answer.version, err))
        rc = error_prefix(err, "X-Installer-Version");
    if (rc == ERR_OK) {
        *version = answer.version;
        answer.version = NULL;
    }
    free(answer.version);
    return rc;
}
