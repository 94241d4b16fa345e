/*
 * timefmt.c — civil-date arithmetic (Howard Hinnant's days_from_civil and
 * civil_from_days) for ISO 8601 UTC timestamps and HTTP dates: the one place
 * outpost turns a calendar date into seconds, so no module needs timegm,
 * mktime or the machine's time zone.
 */
#include "core/timefmt.h"

#include <stdio.h>
#include <string.h>

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int64_t timefmt_from_civil(int64_t year, int month, int day, int hour, int minute, int second)
{
    return days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

void timefmt_iso8601(int64_t t, char buf[TIMEFMT_ISO8601_SIZE])
{
    int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
    int64_t secs = t - days * 86400;
    int64_t year;
    int month, day;
    civil_from_days(days, &year, &month, &day);
    if (year < 0 || year > 9999) {
        snprintf(buf, TIMEFMT_ISO8601_SIZE, "%s", year < 0 ? "0000-01-01T00:00:00Z" : "9999-12-31T23:59:59Z");
        return;
    }
    /* A roomy scratch buffer: the compiler cannot see that every field fits. */
    char scratch[64];
    snprintf(scratch, sizeof scratch, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)year, month, day, (int)(secs / 3600),
             (int)(secs / 60 % 60), (int)(secs % 60));
    memcpy(buf, scratch, TIMEFMT_ISO8601_SIZE - 1);
    buf[TIMEFMT_ISO8601_SIZE - 1] = '\0';
}

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static bool leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

bool timefmt_parse_iso8601(const char *s, int64_t *out)
{
    static const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, se;
    if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' || !digits(s + 8, 2, &d) ||
        (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s + 11, 2, &h) || s[13] != ':' ||
        !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &se))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > month_days[mo - 1] + (mo == 2 && leap(y)) || h > 23 || mi > 59 || se > 60)
        return false;
    const char *p = s + 19;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    int64_t offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return false;
        offset = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return false;
    }
    if (*p != '\0')
        return false;
    *out = timefmt_from_civil(y, mo, d, h, mi, se) - offset;
    return true;
}

/* ---- HTTP dates ------------------------------------------------------------------ */

static int month_number(const char *name)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    for (int i = 0; i < 12; i++)
        if (strncmp(name, months + 3 * i, 3) == 0)
            return i + 1;
    return 0;
}

static bool valid_time(int day, int month, int hour, int minute, int second)
{
    return month >= 1 && day >= 1 && day <= 31 && hour >= 0 && hour <= 23 && minute >= 0 && minute <= 59 &&
           second >= 0 && second <= 60;
}

/* The three forms, s without surrounding blanks. */
static bool parse_http_date(const char *s, int64_t *unix_seconds)
{
    char wday[16], mon[4], zone[4];
    int day, year, hour, minute, second, used = 0;
    /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
    if (sscanf(s, "%15[A-Za-z], %2d %3s %4d %2d:%2d:%2d %3s%n", wday, &day, mon, &year, &hour, &minute, &second, zone,
               &used) == 8 &&
        s[used] == '\0' && strcmp(zone, "GMT") == 0) {
        int month = month_number(mon);
        if (!valid_time(day, month, hour, minute, second))
            return false;
        *unix_seconds = timefmt_from_civil(year, month, day, hour, minute, second);
        return true;
    }
    /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
    used = 0;
    if (sscanf(s, "%15[A-Za-z], %2d-%3s-%2d %2d:%2d:%2d %3s%n", wday, &day, mon, &year, &hour, &minute, &second, zone,
               &used) == 8 &&
        s[used] == '\0' && strcmp(zone, "GMT") == 0) {
        int month = month_number(mon);
        if (!valid_time(day, month, hour, minute, second))
            return false;
        year += year < 70 ? 2000 : 1900; /* RFC 9110: interpret as within 50 years */
        *unix_seconds = timefmt_from_civil(year, month, day, hour, minute, second);
        return true;
    }
    /* asctime: Sun Nov  6 08:49:37 1994 */
    used = 0;
    if (sscanf(s, "%3s %3s %2d %2d:%2d:%2d %4d%n", wday, mon, &day, &hour, &minute, &second, &year, &used) == 7 &&
        s[used] == '\0') {
        int month = month_number(mon);
        if (!valid_time(day, month, hour, minute, second))
            return false;
        *unix_seconds = timefmt_from_civil(year, month, day, hour, minute, second);
        return true;
    }
    return false;
}

bool timefmt_parse_http_date(const char *text, int64_t *unix_seconds)
{
    if (!text)
        return false;
    while (*text == ' ' || *text == '\t')
        text++;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\r' || text[n - 1] == '\n'))
        n--;
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, text, n);
    buf[n] = '\0';
    return parse_http_date(buf, unix_seconds);
}
