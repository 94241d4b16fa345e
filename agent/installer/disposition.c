/*
 * disposition.c — Content-Disposition file names (see disposition.h).
 *
 * Two steps: parse the header's parameters into the raw name (filename*
 * decoded, else filename unquoted), then reduce the raw name to its base
 * name and check it against the safety rules.
 */
#include "installer/disposition.h"

#include <stdlib.h>
#include <string.h>

#include "base/text.h"

/* ---- Parsing ---------------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/*
 * Reads one parameter value at *p (a quoted string or a token) into a
 * malloc'd string and advances *p past it. In a quoted string "\"" and "\\"
 * are escapes; any other backslash is kept, because servers send Windows
 * paths unescaped ("C:\x\setup.exe") and dropping them would glue the
 * directories onto the name.
 */
static char *read_value(const char **p)
{
    const char *s = *p;
    size_t cap = strlen(s) + 1;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t n = 0;
    if (*s == '"') {
        s++;
        while (*s && *s != '"') {
            if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
                s++;
            out[n++] = *s++;
        }
        if (*s == '"')
            s++;
    } else {
        while (*s && *s != ';')
            out[n++] = *s++;
        while (n > 0 && is_space(out[n - 1]))
            n--;
    }
    out[n] = '\0';
    *p = s;
    return out;
}

/* Appends the UTF-8 form of a Latin-1 byte. */
static size_t put_latin1(char *out, size_t n, unsigned char c)
{
    if (c < 0x80) {
        out[n++] = (char)c;
    } else {
        out[n++] = (char)(0xC0 | (c >> 6));
        out[n++] = (char)(0x80 | (c & 0x3F));
    }
    return n;
}

/*
 * Decodes an RFC 5987 ext-value (charset'language'percent-encoded) into a
 * malloc'd UTF-8 string. NULL for a charset other than UTF-8 / ISO-8859-1 or
 * a malformed value: the caller then falls back to the plain filename.
 */
static char *decode_ext_value(const char *value)
{
    const char *q1 = strchr(value, '\'');
    const char *q2 = q1 ? strchr(q1 + 1, '\'') : NULL;
    if (!q2)
        return NULL;
    size_t charset_len = (size_t)(q1 - value);
    bool utf8 = charset_len == 5 && text_equal_nocase_n(value, "UTF-8", 5);
    bool latin1 = charset_len == 10 && text_equal_nocase_n(value, "ISO-8859-1", 10);
    if (!utf8 && !latin1)
        return NULL;
    const char *s = q2 + 1;
    char *out = malloc(strlen(s) * 2 + 1);
    if (!out)
        return NULL;
    size_t n = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '%') {
            int hi = text_hex_value(s[1]);
            int lo = hi < 0 ? -1 : text_hex_value(s[2]);
            if (lo < 0) {
                free(out);
                return NULL;
            }
            c = (unsigned char)(hi * 16 + lo);
            s += 2;
            /* %00 would silently cut the C string ("x.exe%00.txt"); keep it
             * visible as a control character so the safety rules reject it. */
            if (c == 0)
                c = 0x01;
        }
        if (latin1)
            n = put_latin1(out, n, c);
        else
            out[n++] = (char)c;
    }
    out[n] = '\0';
    return out;
}

/* Finds filename* and filename among the parameters; *raw gets the winner. */
static MUST_CHECK error_code parse_parameters(const char *header, char **raw)
{
    char *plain = NULL, *extended = NULL;
    const char *p = strchr(header, ';');
    while (p && *p == ';') {
        p++;
        while (is_space(*p))
            p++;
        const char *name = p;
        while (*p && *p != '=' && *p != ';' && !is_space(*p))
            p++;
        size_t name_len = (size_t)(p - name);
        while (is_space(*p))
            p++;
        if (*p != '=') {
            p = strchr(p, ';');
            continue;
        }
        p++;
        while (is_space(*p))
            p++;
        char *value = read_value(&p);
        if (!value)
            goto nomem;
        if (name_len == 9 && text_equal_nocase_n(name, "filename*", 9) && !extended) {
            extended = decode_ext_value(value);
            free(value);
        } else if (name_len == 8 && text_equal_nocase_n(name, "filename", 8) && !plain) {
            plain = value;
        } else {
            free(value);
        }
        p = strchr(p, ';');
    }
    *raw = extended ? extended : plain;
    if (extended)
        free(plain);
    return ERR_OK;
nomem:
    free(plain);
    free(extended);
    return ERR_NOMEM;
}

/* ---- Safety rules ------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s, 0 when malformed. */
static size_t utf8_sequence(const unsigned char *s)
{
    size_t len = s[0] < 0x80             ? 1
                 : (s[0] & 0xE0) == 0xC0 ? 2
                 : (s[0] & 0xF0) == 0xE0 ? 3
                 : (s[0] & 0xF8) == 0xF0 ? 4
                                         : 0;
    if (len == 0 || (len == 2 && s[0] < 0xC2))
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* Whether the two bytes at s are the UTF-8 of a superscript one, two or
 * three (C2 B9, C2 B2, C2 B3). */
static bool is_superscript_digit(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    return u[0] == 0xC2 && (u[1] == 0xB9 || u[1] == 0xB2 || u[1] == 0xB3);
}

bool disposition_is_device_name(const char *name)
{
    static const char *const devices[] = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"};
    /* Windows looks at the name up to its first dot, trailing spaces
     * dropped: "CON.exe", "con .msi", "NUL..", "CON   " are all devices. */
    size_t stem = strcspn(name, ".");
    while (stem > 0 && name[stem - 1] == ' ')
        stem--;
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++)
        if (stem == strlen(devices[i]) && text_equal_nocase_n(name, devices[i], stem))
            return true;
    if (stem < 4 || !(text_equal_nocase_n(name, "COM", 3) || text_equal_nocase_n(name, "LPT", 3)))
        return false;
    /* COM0-9 and LPT0-9 (Microsoft's list names 0 too), and COM¹²³ / LPT¹²³. */
    if (stem == 4 && name[3] >= '0' && name[3] <= '9')
        return true;
    return stem == 5 && is_superscript_digit(name + 3);
}

bool disposition_name_is_safe(const char *name, error_info *err)
{
    if (!name || !name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        error_set(err, ERR_REJECTED, "the installer file name is empty or names a directory");
        return false;
    }
    size_t len = strlen(name);
    if (len > DISPOSITION_NAME_MAX) {
        error_set(err, ERR_REJECTED, "the installer file name is %zu bytes long, more than the %d allowed", len,
                  DISPOSITION_NAME_MAX);
        return false;
    }
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7F) {
            error_set(err, ERR_REJECTED, "the installer file name holds a control character");
            return false;
        }
        if (strchr("/\\:<>\"|?*", (char)c)) {
            error_set(err, ERR_REJECTED,
                      "the installer file name \"%.128s\" holds '%c', which is not allowed in a file name", name,
                      (char)c);
            return false;
        }
        size_t step = utf8_sequence((const unsigned char *)name + i);
        if (step == 0) {
            error_set(err, ERR_REJECTED, "the installer file name is not valid UTF-8");
            return false;
        }
        i += step;
    }
    if (name[len - 1] == '.' || name[len - 1] == ' ') {
        error_set(err, ERR_REJECTED, "the installer file name \"%.128s\" ends in a dot or a space", name);
        return false;
    }
    if (disposition_is_device_name(name)) {
        error_set(err, ERR_REJECTED, "the installer file name \"%.128s\" is a Windows device name", name);
        return false;
    }
    return true;
}

/*
 * Drops the directories of raw (in place) and returns the base name: what
 * follows the last '/' or '\\' ("../../evil.exe" → "evil.exe", as RFC 6266
 * section 4.3 asks), without a drive prefix, surrounding white space or
 * trailing dots. May be empty: nothing safe remained.
 */
static char *reduce_to_base(char *raw)
{
    char *base = raw;
    for (char *s = raw; *s; s++)
        if (*s == '/' || *s == '\\')
            base = s + 1;
    /* A drive prefix with no separator after it: "C:setup.exe". */
    if (((base[0] >= 'A' && base[0] <= 'Z') || (base[0] >= 'a' && base[0] <= 'z')) && base[1] == ':' && base == raw)
        base += 2;
    while (is_space(*base))
        base++;
    size_t len = strlen(base);
    while (len > 0 && (base[len - 1] == '.' || base[len - 1] == ' ' || base[len - 1] == '\t'))
        len--;
    base[len] = '\0';
    return base;
}

error_code disposition_file_name(const char *header, char **name, error_info *err)
{
    *name = NULL;
    if (!header)
        return ERR_OK;
    if (strlen(header) > DISPOSITION_HEADER_MAX)
        return error_set(err, ERR_REJECTED, "the Content-Disposition header is longer than %d bytes",
                         DISPOSITION_HEADER_MAX);
    char *raw = NULL;
    if (parse_parameters(header, &raw) != ERR_OK)
        return error_set(err, ERR_NOMEM, "out of memory");
    if (!raw)
        return ERR_OK;
    if (!raw[0]) {
        free(raw);
        return ERR_OK;
    }
    error_code rc = ERR_OK;
    char *base = reduce_to_base(raw);
    if (!disposition_name_is_safe(base, err)) {
        rc = ERR_REJECTED;
    } else {
        *name = text_dup(base);
        if (!*name)
            rc = error_set(err, ERR_NOMEM, "out of memory");
    }
    free(raw);
    return rc;
}
