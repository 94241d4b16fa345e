/*
 * eventlog.c — the Application event log, source "outpost"
 * (platform_event_log), where an administrator looks when stderr went
 * nowhere. The POSIX twin does nothing: journald and cron keep stderr.
 */
#include "platform/win32/win32_int.h"

#include <stdlib.h>
#include <string.h>

/*
 * ReportEventW with the text as the single insertion string. The event id
 * has no severity bits (the message table, cross/windows/outpost-events.mc,
 * declares each id with "%1"), so Event Viewer shows it as is; the level
 * comes from the event type. When the source is not registered (no MSI),
 * Windows still records the entry, and Event Viewer shows the text under
 * "the following information was included with the event".
 */
error_code platform_event_log(platform_event_level level, unsigned event_id, const char *text, error_info *err)
{
    /* Line ends as Event Viewer's text box shows them: CRLF. */
    size_t lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    char *crlf = malloc(strlen(text) + lines + 1);
    if (!crlf)
        return win32_fail_nomem(err);
    char *q = crlf;
    for (const char *p = text; *p; p++) {
        if (*p == '\n' && (p == text || p[-1] != '\r'))
            *q++ = '\r';
        *q++ = *p;
    }
    *q = '\0';
    wchar_t *wtext = win32_widen(crlf);
    free(crlf);
    if (!wtext)
        return win32_fail_nomem(err);
    HANDLE source = RegisterEventSourceW(NULL, L"outpost");
    if (!source) {
        DWORD e = GetLastError();
        free(wtext);
        return win32_fail(err, e, "cannot open the Application event log for", "source outpost");
    }
    WORD type = level == PLATFORM_EVENT_ERROR     ? EVENTLOG_ERROR_TYPE
                : level == PLATFORM_EVENT_WARNING ? EVENTLOG_WARNING_TYPE
                                                  : EVENTLOG_INFORMATION_TYPE;
    LPCWSTR strings[1] = {wtext};
    BOOL ok = ReportEventW(source, type, 0, (DWORD)event_id, NULL, 1, 0, strings, NULL);
    DWORD e = ok ? 0 : GetLastError();
    DeregisterEventSource(source);
    free(wtext);
    if (!ok)
        return win32_fail(err, e, "cannot write to the Application event log as", "source outpost");
    return ERR_OK;
}
