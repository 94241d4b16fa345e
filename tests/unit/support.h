/*
 * support.h — what several unit tests need and each used to write for
 * itself: a private temporary directory, the pieces of a fake server
 * behind http.h's fake transport (answers, the token exchange, reading a
 * request header) and a clock that never moves. The staging fixture is in
 * support_staging.h (kept apart: its configuration and state types would
 * shadow the names tests give their variables, `config`, `state`).
 *
 * Linked into every unit test by tests/CMakeLists.txt (support.c; the name
 * does not match test_*.c, so it is not a test of its own). Failures end the
 * test through cmocka, so callers check nothing.
 */
#ifndef OUTPOST_TEST_SUPPORT_H
#define OUTPOST_TEST_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/clock.h"
#include "net/http.h"
#include "net/http_fake.h"

/* ---- Temporary directories ------------------------------------------------- */

/*
 * Creates a new, empty directory "<base>/outpost-<tag>-XXXXXX", where base is
 * $OUTPOST_TEST_TMP (CTest sets it to the build tree) or /tmp, and returns
 * its path (malloc'd; give it to support_tempdir_remove).
 */
char *support_tempdir(const char *tag);

/* Removes dir and everything under it, then frees the string. NULL is ignored. */
void support_tempdir_remove(char *dir);

/* ---- A fake server behind http.h's fake transport ------------------------------ */

/* A malloc'd copy of text (NULL for NULL), as http_fake_response wants. */
char *support_dup(const char *text);

/*
 * Fills r with an answer: status, header lines ("Name: value\r\n"..., or
 * NULL) and body (NULL: none), each copied.
 */
void support_answer(http_fake_response *r, long status, const char *headers, const char *body);

/*
 * The token exchange: when url is the token route, answers it with an
 * access token named token (valid 900 s) and returns true; false for any
 * other route, r untouched.
 */
bool support_answer_token(const char *url, const char *token, http_fake_response *r);

/* The value of header name ("Range: bytes=" style: name includes the colon
 * and what precedes the value) in a request's header lines, malloc'd; NULL
 * when absent. */
char *support_header_value(const char *headers, const char *name);

/* ---- A clock that never moves --------------------------------------------------- */

/* Time 0 on both clocks, sleeps that return at once, random bytes all 0x5a:
 * for code that takes a clock_source but whose test is not about time. */
extern const clock_source support_still_clock;

#endif
