/*
 * backoff.c — full-jitter exponential backoff and Retry-After parsing
 * (see backoff.h).
 */
#include "net/backoff.h"

#include <ctype.h>
#include <string.h>

#include "core/timefmt.h"

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
    if (!timefmt_parse_http_date(buf, &when))
        return false;
    int64_t delay = when * 1000 - now_utc_ms;
    *delay_ms = delay > 0 ? delay : 0;
    return true;
}
