/*
 * backoff.c — full-jitter exponential backoff and Retry-After parsing
 * (see backoff.h).
 */
#include "net/backoff.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int64_t backoff_ceiling_ms(int retry, int64_t base_ms, int64_t cap_ms)
{
    if (base_ms < 0)
        base_ms = 0;
    if (cap_ms < base_ms)
        cap_ms = base_ms;
    int64_t ceiling = base_ms;
    for (int i = 1; i < retry && ceiling < cap_ms; i++)
        ceiling *= 2;
    return ceiling < cap_ms ? ceiling : cap_ms;
}

int64_t backoff_delay_ms(int retry, int64_t base_ms, int64_t cap_ms, const clock_source *clock)
{
    return clock_random_upto(clock, backoff_ceiling_ms(retry, base_ms, cap_ms));
}

int64_t backoff_civil_to_unix(int64_t year, int month, int day, int hour, int minute, int second)
{
    /* Howard Hinnant's days_from_civil. */
    year -= month <= 2;
    int64_t era = (year >= 0 ? year : year - 399) / 400;
    int64_t yoe = year - era * 400;
    int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    return days * 86400 + hour * 3600 + minute * 60 + second;
}

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

/* Parses the three HTTP-date forms into seconds since the epoch. */
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
        *unix_seconds = backoff_civil_to_unix(year, month, day, hour, minute, second);
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
        *unix_seconds = backoff_civil_to_unix(year, month, day, hour, minute, second);
        return true;
    }
    /* asctime: Sun Nov  6 08:49:37 1994 */
    used = 0;
    if (sscanf(s, "%3s %3s %2d %2d:%2d:%2d %4d%n", wday, mon, &day, &hour, &minute, &second, &year, &used) == 7 &&
        s[used] == '\0') {
        int month = month_number(mon);
        if (!valid_time(day, month, hour, minute, second))
            return false;
        *unix_seconds = backoff_civil_to_unix(year, month, day, hour, minute, second);
        return true;
    }
    return false;
}

/* A header value without surrounding blanks, copied into buf (size bytes);
 * false when it is empty or does not fit. *len is its length. */
static bool header_value_copy(const char *value, char *buf, size_t size, size_t *len)
{
    while (*value == ' ' || *value == '\t')
        value++;
    size_t n = strlen(value);
    while (n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t' || value[n - 1] == '\r' || value[n - 1] == '\n'))
        n--;
    if (n == 0 || n >= size)
        return false;
    memcpy(buf, value, n);
    buf[n] = '\0';
    *len = n;
    return true;
}

bool backoff_parse_http_date(const char *value, int64_t *unix_ms)
{
    char buf[64];
    if (!value)
        return false;
    size_t len;
    if (!header_value_copy(value, buf, sizeof buf, &len))
        return false;
    int64_t seconds;
    if (!parse_http_date(buf, &seconds))
        return false;
    *unix_ms = seconds * 1000;
    return true;
}

bool backoff_parse_retry_after(const char *value, int64_t now_utc_ms, int64_t *delay_ms)
{
    if (!value)
        return false;
    char buf[64];
    size_t len;
    if (!header_value_copy(value, buf, sizeof buf, &len))
        return false;

    if (isdigit((unsigned char)buf[0])) {
        int64_t seconds = 0;
        for (size_t i = 0; i < len; i++) {
            if (!isdigit((unsigned char)buf[i]))
                return false;
            if (seconds > (INT64_MAX / 1000 - 9) / 10)
                seconds = INT64_MAX / 1000 / 10; /* absurdly long: saturate */
            else
                seconds = seconds * 10 + (buf[i] - '0');
        }
        *delay_ms = seconds * 1000;
        return true;
    }
    int64_t when = 0;
    if (!parse_http_date(buf, &when))
        return false;
    int64_t delay = when * 1000 - now_utc_ms;
    *delay_ms = delay > 0 ? delay : 0;
    return true;
}
