/* retry_after.c — state "run".retry_after_until and .mirror_retry_after_until, one rule (retry_after.h). */
#include "net/retry_after.h"

#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/timefmt.h"

#define SECTION "run"

static const char *member(retry_after_who who)
{
    return who == RETRY_AFTER_MIRROR ? "mirror_retry_after_until" : "retry_after_until";
}

int64_t retry_after_until_s(int64_t until_ms, int64_t now_ms)
{
    int64_t cap = now_ms + RETRY_AFTER_CAP_MS;
    int64_t ms = until_ms < cap ? until_ms : cap;
    /* Rounded towards +infinity for negative times too (not met in practice). */
    return ms >= 0 ? (ms + 999) / 1000 : -(-ms / 1000);
}

error_code retry_after_record_for(state *s, retry_after_who who, int64_t until_ms, int64_t now_ms, error_info *err)
{
    if (until_ms <= 0)
        return ERR_OK;
    char until[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(retry_after_until_s(until_ms, now_ms), until);
    cJSON *run = state_section(s, SECTION);
    cJSON *value = cJSON_CreateString(until);
    if (!run || !value) {
        cJSON_Delete(value);
        return error_set(err, ERR_NOMEM, "out of memory while recording the %s's Retry-After",
                         who == RETRY_AFTER_MIRROR ? "mirror" : "platform");
    }
    /* A constant key: the add allocates nothing, so it cannot fail once the
     * earlier time is gone. */
    cJSON_DeleteItemFromObjectCaseSensitive(run, member(who));
    cJSON_AddItemToObjectCS(run, member(who), value);
    return ERR_OK;
}

error_code retry_after_record(state *s, int64_t until_ms, int64_t now_ms, error_info *err)
{
    return retry_after_record_for(s, RETRY_AFTER_PLATFORM, until_ms, now_ms, err);
}

bool retry_after_pending(state *s, int64_t now_ms, char *until, size_t size)
{
    return retry_after_pending_for(s, RETRY_AFTER_PLATFORM, now_ms, until, size);
}

bool retry_after_pending_for(state *s, retry_after_who who, int64_t now_ms, char *until, size_t size)
{
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(state_section(s, SECTION), member(who)));
    if (until && size)
        snprintf(until, size, "%s", text ? text : "");
    int64_t until_s = 0;
    return text && timefmt_parse_iso8601(text, &until_s) && until_s * 1000 > now_ms;
}
