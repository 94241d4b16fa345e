/*
 * source_api.c — the offer of the platform's installer route, read from its
 * answer's headers.
 */
#include "installer/source_api.h"

#include <string.h>

#include "installer/disposition.h"
#include "net/api.h"
#include "installer/version.h"

error_code source_api_offer(const http_stream_headers *h, int64_t total_length, download_offer *offer, char **file_name,
                            error_info *err)
{
    memset(offer, 0, sizeof *offer);
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
    error_code rc = disposition_file_name(h->content_disposition, file_name, err);
    if (rc != ERR_OK)
        return error_prefix(err, "Content-Disposition");
    offer->version = version;
    offer->file_name = *file_name;
    offer->total_length = total_length;
    offer->url = h->url;
    return ERR_OK;
}
