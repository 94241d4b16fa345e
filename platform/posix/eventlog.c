/*
 * eventlog.c — POSIX has no event log to write to: journald and cron keep
 * what outpost writes to stderr (and log.file, when set, a copy of it), so
 * platform_event_log does nothing here.
 */
#include "platform/posix/posix_int.h"

error_code platform_event_log(platform_event_level level, unsigned event_id, const char *text, error_info *err)
{
    (void)level;
    (void)event_id;
    (void)text;
    (void)err;
    return ERR_OK;
}
