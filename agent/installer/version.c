/*
 * version.c — validation and ordering of installer version strings (see
 * version.h and PRODUCT.md section 4.1).
 *
 * A version is read as: numeric parts ("26.01.03.24329"), then a suffix.
 * Numeric parts are compared as numbers of any length (leading zeros are
 * skipped, digits compared as text, so no overflow), missing parts are 0.
 * The suffix is a pre-release only when it comes after '-' or directly after
 * the numbers ("3.2.0-rc1", "3.2.0rc1") and is one of the known words,
 * optionally numbered ("rc", "rc1", "rc.2", "beta-3"), optionally followed by
 * '+' build metadata. Anything else ("-0de7ab+", "+build.5") is build
 * metadata and does not change the order; semver's rule that '+' always
 * starts metadata is kept, so "1.0+rc1" equals "1.0".
 */
#include "installer/version.h"

#include <string.h>

#include "base/text.h"

/* Rank of a release: pre-releases sort before the plain release. */
enum { RANK_ALPHA = 1, RANK_BETA, RANK_PRE, RANK_RC, RANK_RELEASE };

static const struct {
    const char *word;
    int rank;
} prerelease_words[] = {
    {"preview", RANK_PRE}, /* before "pre", which is its prefix */
    {"alpha", RANK_ALPHA}, {"beta", RANK_BETA}, {"pre", RANK_PRE}, {"rc", RANK_RC},
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_allowed(char c)
{
    return is_digit(c) || is_alpha(c) || c == '.' || c == '+' || c == '-';
}

bool version_is_valid(const char *text, error_info *err)
{
    if (!text || !text[0]) {
        error_set(err, ERR_REJECTED, "the installer version is empty");
        return false;
    }
    size_t len = strlen(text);
    if (len > VERSION_MAX_LENGTH) {
        error_set(err, ERR_REJECTED, "the installer version is %zu characters long, more than the %d allowed", len,
                  VERSION_MAX_LENGTH);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (!is_allowed(text[i])) {
            error_set(err, ERR_REJECTED, "the installer version \"%.64s\" holds a character outside [0-9A-Za-z.+-]",
                      text);
            return false;
        }
    }
    /* A leading digit also rules out ".", ".." and hidden names. */
    if (!is_digit(text[0])) {
        error_set(err, ERR_REJECTED, "the installer version \"%s\" does not start with a number", text);
        return false;
    }
    return true;
}

/* One numeric part at *p: its digits without leading zeros. Advances *p. */
static void take_number(const char **p, const char **digits, size_t *count)
{
    const char *s = *p;
    while (*s == '0' && is_digit(s[1]))
        s++;
    *digits = s;
    while (is_digit(*s))
        s++;
    *count = (size_t)(s - *digits);
    *p = s;
}

static int compare_digits(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen)
        return alen < blen ? -1 : 1;
    int c = memcmp(a, b, alen);
    return c < 0 ? -1 : c > 0;
}

/* Compares the numeric parts; on return *a and *b point at the suffixes. */
static int compare_numbers(const char **a, const char **b)
{
    static const char zero[] = "0";
    for (;;) {
        bool a_more = is_digit(**a);
        bool b_more = is_digit(**b);
        if (!a_more && !b_more)
            return 0;
        const char *ad = zero, *bd = zero;
        size_t al = 1, bl = 1;
        if (a_more)
            take_number(a, &ad, &al);
        if (b_more)
            take_number(b, &bd, &bl);
        int c = compare_digits(ad, al, bd, bl);
        if (c != 0)
            return c;
        /* A '.' continues the numbers only when a digit follows it. */
        if (**a == '.' && is_digit((*a)[1]))
            (*a)++;
        if (**b == '.' && is_digit((*b)[1]))
            (*b)++;
    }
}

/* Rank and number of the suffix (RANK_RELEASE for build metadata). */
static void suffix_rank(const char *s, int *rank, const char **number, size_t *number_len)
{
    *rank = RANK_RELEASE;
    *number = "0";
    *number_len = 1;
    if (*s == '-')
        s++;
    else if (!is_alpha(*s))
        return; /* '+' (or nothing) starts build metadata */
    for (size_t i = 0; i < sizeof prerelease_words / sizeof prerelease_words[0]; i++) {
        size_t wl = strlen(prerelease_words[i].word);
        if (!text_equal_nocase_n(s, prerelease_words[i].word, wl))
            continue;
        const char *p = s + wl;
        if ((*p == '.' || *p == '-') && is_digit(p[1]))
            p++;
        const char *digits = "0";
        size_t count = 1;
        if (is_digit(*p))
            take_number(&p, &digits, &count);
        if (*p != '\0' && *p != '+')
            return; /* "rcx", "beta-0de7ab": not a pre-release word after all */
        *rank = prerelease_words[i].rank;
        *number = digits;
        *number_len = count;
        return;
    }
}

int version_compare(const char *a, const char *b)
{
    bool a_ok = version_is_valid(a, NULL);
    bool b_ok = version_is_valid(b, NULL);
    if (!a_ok || !b_ok)
        return a_ok == b_ok ? 0 : (a_ok ? 1 : -1);

    int c = compare_numbers(&a, &b);
    if (c != 0)
        return c;
    int ar, br;
    const char *an, *bn;
    size_t al, bl;
    suffix_rank(a, &ar, &an, &al);
    suffix_rank(b, &br, &bn, &bl);
    if (ar != br)
        return ar < br ? -1 : 1;
    return compare_digits(an, al, bn, bl);
}

bool version_is_update(const char *latest, const char *installed)
{
    return latest && (!installed || version_compare(latest, installed) > 0);
}

int version_compare_numbers(const char *a, const char *b)
{
    return compare_numbers(&a, &b);
}

bool version_numbers_of(const char *text, char *out, size_t size)
{
    size_t used = 0;
    if (size > 0)
        out[0] = '\0';
    while (*text == ' ' || *text == '\t')
        text++;
    while (is_digit(*text)) {
        const char *start = text;
        while (is_digit(*text))
            text++;
        size_t n = (size_t)(text - start);
        if (used + (used > 0) + n + 1 > size) {
            if (size > 0)
                out[0] = '\0';
            return false;
        }
        if (used > 0)
            out[used++] = '.';
        memcpy(out + used, start, n);
        used += n;
        out[used] = '\0';
        /* The next part: ".7", ",7" or ", 7" (a digit must follow). */
        const char *next = text;
        if (*next == '.' || *next == ',') {
            bool comma = *next == ',';
            next++;
            while (comma && *next == ' ')
                next++;
        }
        if (next == text || !is_digit(*next))
            break;
        text = next;
    }
    return used > 0;
}
