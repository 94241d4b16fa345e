/*
 * text.h — small string helpers the C library lacks or spells differently
 * across platforms (strdup, strncasecmp), so the core stays portable C11.
 */
#ifndef OUTPOST_TEXT_H
#define OUTPOST_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* malloc'd copy of s (NULL when s is NULL or on out of memory). */
char *text_dup(const char *s);

/* malloc'd copy of the first n bytes of s, NUL-terminated. */
char *text_dup_n(const char *s, size_t n);

/* ASCII case-insensitive comparison of the first n bytes; true when equal. */
bool text_equal_nocase_n(const char *a, const char *b, size_t n);

/* ASCII case-insensitive equality of two NUL-terminated strings. */
bool text_equal_nocase(const char *a, const char *b);

/* Whether s starts with prefix (case-sensitive). */
bool text_starts_with(const char *s, const char *prefix);

/*
 * Reads the decimal digits at *p (at least one, at most max_value) into *out
 * and moves *p past them; false (nothing moved) otherwise. Values from the
 * network go through this rather than sscanf("%lld") / "%u", whose
 * behaviour on overflow is undefined, or strtoll, which also takes signs
 * and white space no header may carry.
 */
bool text_parse_digits(const char **p, int64_t max_value, int64_t *out);

/* Writes the n bytes at bytes as lower-case hex into out, which holds
 * 2 * n + 1 bytes, and NUL-terminates it: the one hex encoder of outpost
 * (digests, random names, key ids, escapes). */
void text_hex(const void *bytes, size_t n, char *out);

/* The value of one hex digit (0-9, a-f, A-F), -1 for any other character:
 * the one hex decoder (percent-escapes, salts). */
int text_hex_value(char c);

/* Whether s is exactly len hex digits; with lower_only, only the lower-case
 * ones text_hex writes (digests outpost compares with strcmp). */
bool text_is_hex(const char *s, size_t len, bool lower_only);

/* Decodes the 2 * n hex digits at hex into the n bytes at out; false when
 * one of them is not a hex digit (out is then partly written). */
bool text_unhex(const char *hex, void *out, size_t n);

/* malloc'd copy of s safe to print on a terminal: C0 control characters
 * (tab excepted), DEL and the C1 controls (U+0080..U+009F, as UTF-8) become
 * "\xHH" escapes, so text that came from the network cannot move the
 * cursor, recolour or retitle an administrator's terminal, or forge a second
 * log line. NULL when s is NULL or on out of memory; free() it. */
char *text_escape_controls(const char *s);

/*
 * Files a person edits on Windows (Notepad, PowerShell) may start with a
 * UTF-8 byte-order mark: its length (3) when data[0..len) starts with one,
 * else 0. Skip that many bytes before reading the text.
 */
size_t text_utf8_bom_length(const char *data, size_t len);

/*
 * Whether data[0..len) looks like UTF-16 (PowerShell 5.1's Out-File and
 * `>` write it): a UTF-16 byte-order mark (FF FE or FE FF), or a NUL byte
 * among the first bytes, which text never holds.
 */
bool text_looks_utf16(const char *data, size_t len);
/*
 * url as it may be printed or recorded: without the "user:password@" of
 * its authority (scheme://user:password@host/... -> scheme://host/...), the
 * one rule for every place a URL is shown (messages, the trace, the log,
 * status.json, state.json). malloc'd; NULL only when out of memory. A
 * string that is not a URL comes back unchanged.
 */
char *text_url_redact(const char *url);

#endif
