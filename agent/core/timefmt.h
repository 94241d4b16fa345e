/*
 * timefmt.h — UTC timestamps in the API's ISO 8601 form
 * (YYYY-MM-DDThh:mm:ssZ), computed arithmetically so the machine's time zone
 * and C library never matter.
 */
#ifndef OUTPOST_TIMEFMT_H
#define OUTPOST_TIMEFMT_H

#include <stdbool.h>
#include <stdint.h>

#define TIMEFMT_ISO8601_SIZE 21 /* "2026-11-21T10:00:00Z" plus NUL */

/* Formats unix_seconds as YYYY-MM-DDThh:mm:ssZ into buf (TIMEFMT_ISO8601_SIZE bytes). */
void timefmt_iso8601(int64_t unix_seconds, char buf[TIMEFMT_ISO8601_SIZE]);

/*
 * Parses an ISO 8601 UTC timestamp: YYYY-MM-DDThh:mm:ss, optional fraction,
 * then Z or +hh:mm / -hh:mm. Returns false on anything else (out-of-range
 * fields included).
 */
bool timefmt_parse_iso8601(const char *text, int64_t *unix_seconds);

/*
 * Parses an HTTP date (RFC 9110 section 5.6.7) in any of the three forms
 * recipients must accept: IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT",
 * RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT" (a two-digit year is read as
 * 1970..2069) and asctime "Sun Nov  6 08:49:37 1994". Blanks around the
 * value (a header's OWS, CR, LF) are ignored. Returns false, *unix_seconds
 * untouched, on anything else: NULL, a value of 64 bytes or more, another
 * zone than GMT, an unknown month, a field out of range.
 */
bool timefmt_parse_http_date(const char *text, int64_t *unix_seconds);

/*
 * Seconds since the Unix epoch of a UTC civil date and time (proleptic
 * Gregorian; fields are not range-checked).
 */
int64_t timefmt_from_civil(int64_t year, int month, int day, int hour, int minute, int second);

#endif
