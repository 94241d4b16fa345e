/*
 * schedtask.c — the Task Scheduler XML of `\outpost\run` (schedtask.h).
 * The settings are those an administrator would otherwise click together:
 * the ones Task Scheduler defaults wrongly for an agent (battery, missed
 * runs, no time limit) are spelled out.
 */
#include "cli/schedtask.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing string; on out of memory text becomes NULL and stays so. */
typedef struct xml_out {
    char *text;
    size_t len, cap;
} xml_out;

static void put(xml_out *out, const char *s)
{
    if (!out->text)
        return;
    size_t n = strlen(s);
    if (out->len + n + 1 > out->cap) {
        size_t cap = (out->len + n + 1) * 2;
        char *bigger = realloc(out->text, cap);
        if (!bigger) {
            free(out->text);
            out->text = NULL;
            return;
        }
        out->text = bigger;
        out->cap = cap;
    }
    memcpy(out->text + out->len, s, n + 1);
    out->len += n;
}

/* Appends s with XML's five special characters escaped. */
static void put_escaped(xml_out *out, const char *s)
{
    char one[2] = {0, 0};
    for (; *s; s++) {
        switch (*s) {
        case '&': put(out, "&amp;"); break;
        case '<': put(out, "&lt;"); break;
        case '>': put(out, "&gt;"); break;
        case '"': put(out, "&quot;"); break;
        case '\'': put(out, "&apos;"); break;
        default:
            one[0] = *s;
            put(out, one);
            break;
        }
    }
}

/* A path that goes between double quotes on a Windows command line. */
static MUST_CHECK error_code check_path(const char *what, const char *path, error_info *err)
{
    if (!path || !path[0])
        return error_set(err, ERR_USAGE, "the scheduled task needs the %s's path", what);
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        if (*p == '"' || *p < 0x20 || *p == 0x7f)
            return error_set(err, ERR_USAGE,
                             "the %s's path holds a double quote or a control character, which a task's "
                             "command line cannot carry: install outpost under a plain path",
                             what);
    return ERR_OK;
}

error_code schedtask_xml(const char *exe_path, const char *config_path, char **xml, error_info *err)
{
    error_code rc = check_path("program", exe_path, err);
    if (rc == ERR_OK && config_path)
        rc = check_path("configuration", config_path, err);
    if (rc != ERR_OK)
        return rc;

    xml_out out = {malloc(4096), 0, 4096};
    if (out.text)
        out.text[0] = '\0';
    put(&out,
        "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\r\n"
        "<Task version=\"1.2\" xmlns=\"http://schemas.microsoft.com/windows/2004/02/mit/task\">\r\n"
        "  <RegistrationInfo>\r\n"
        "    <Author>outpost</Author>\r\n"
        "    <Description>Keeps the security platform's sensor installer current and reports incidents "
        "(outpost run). Registered by outpost service install; its exit codes are in the README.</Description>\r\n"
        "    <URI>" SCHEDTASK_NAME "</URI>\r\n"
        "  </RegistrationInfo>\r\n"
        "  <Triggers>\r\n"
        "    <TimeTrigger>\r\n"
        "      <Repetition>\r\n"
        "        <Interval>PT1H</Interval>\r\n"
        "        <StopAtDurationEnd>false</StopAtDurationEnd>\r\n"
        "      </Repetition>\r\n"
        /* A fixed boundary in the past: the repetition runs from it, every
         * hour from now on, whatever the install date. */
        "      <StartBoundary>2020-01-01T00:00:00</StartBoundary>\r\n"
        "      <Enabled>true</Enabled>\r\n"
        "      <RandomDelay>PT10M</RandomDelay>\r\n"
        "    </TimeTrigger>\r\n"
        "  </Triggers>\r\n"
        "  <Principals>\r\n"
        "    <Principal id=\"Author\">\r\n"
        "      <UserId>S-1-5-18</UserId>\r\n"
        "      <RunLevel>HighestAvailable</RunLevel>\r\n"
        "    </Principal>\r\n"
        "  </Principals>\r\n"
        "  <Settings>\r\n"
        "    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>\r\n"
        "    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>\r\n"
        "    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>\r\n"
        "    <AllowHardTerminate>true</AllowHardTerminate>\r\n"
        "    <StartWhenAvailable>true</StartWhenAvailable>\r\n"
        "    <RunOnlyIfNetworkAvailable>false</RunOnlyIfNetworkAvailable>\r\n"
        "    <IdleSettings>\r\n"
        "      <StopOnIdleEnd>false</StopOnIdleEnd>\r\n"
        "      <RestartOnIdle>false</RestartOnIdle>\r\n"
        "    </IdleSettings>\r\n"
        "    <AllowStartOnDemand>true</AllowStartOnDemand>\r\n"
        "    <Enabled>true</Enabled>\r\n"
        "    <Hidden>false</Hidden>\r\n"
        "    <RunOnlyIfIdle>false</RunOnlyIfIdle>\r\n"
        "    <WakeToRun>false</WakeToRun>\r\n"
        /* deploy.timeout_s defaults to 30 minutes; a download on a slow
         * link and the report come on top. */
        "    <ExecutionTimeLimit>PT2H</ExecutionTimeLimit>\r\n"
        "    <Priority>7</Priority>\r\n"
        "  </Settings>\r\n"
        "  <Actions Context=\"Author\">\r\n"
        "    <Exec>\r\n"
        "      <Command>\"");
    put_escaped(&out, exe_path);
    put(&out, "\"</Command>\r\n      <Arguments>");
    if (config_path) {
        put(&out, "-c &quot;");
        put_escaped(&out, config_path);
        put(&out, "&quot; ");
    }
    put(&out, "run</Arguments>\r\n"
              "    </Exec>\r\n"
              "  </Actions>\r\n"
              "</Task>\r\n");
    if (!out.text)
        return error_set(err, ERR_NOMEM, "out of memory");
    *xml = out.text;
    return ERR_OK;
}
