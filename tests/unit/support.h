/*
 * support.h — what several unit tests need and each used to write for
 * itself: a private temporary directory, the pieces of a fake server
 * behind http.h's fake transport (answers, the token exchange, reading a
 * request header), a clock that never moves and a throwaway certificate. The staging fixture is in
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

/*
 * A platform whose installer route for "windows" answers 200 with headers
 * and the body's bytes (the token exchange answered too): the fake
 * transport (http_fake_fn, ctx a support_installer_route) of the tests of
 * the installer's source and flow. Any other route fails the test.
 */
typedef struct support_installer_route {
    const char *headers; /* "Name: value\r\n" lines */
    const char *body;    /* body_len bytes */
    size_t body_len;
    int requests; /* answers of the installer route so far */
} support_installer_route;

error_code support_fake_installer_route(void *ctx, const char *method, const char *url, const char *body,
                                        size_t body_len, const char *extra, http_fake_response *r, error_info *err);

/* The value of header name ("Range: bytes=" style: name includes the colon
 * and what precedes the value) in a request's header lines, malloc'd; NULL
 * when absent. */
char *support_header_value(const char *headers, const char *name);

/* A new API client (api_client_new with the key "key") whose requests go to
 * fn(fn_ctx, ...) instead of the network, on clock when not NULL; fails the
 * test when it cannot be made. The caller frees it (http_client_free). */
http_client *support_fake_api_client(const config *cfg, http_fake_fn fn, void *fn_ctx, const clock_source *clock);

/* cfg set to the defaults with base_url https://platform.test (config_free
 * it), and support_fake_api_client on it with the system clock. */
http_client *support_platform_client(config *cfg, http_fake_fn fn, void *fn_ctx);

/* ---- A clock that never moves --------------------------------------------------- */

/* Time 0 on both clocks, sleeps that return at once, random bytes all 0x5a:
 * for code that takes a clock_source but whose test is not about time. */
extern const clock_source support_still_clock;

/* ---- A throwaway root certificate ------------------------------------------------ */

/* A self-signed EC (P-256) CA, "CN=Outpost Fuzz Root", valid from
 * 2026-11-21T19:20:09Z to 2126-10-28T19:20:09Z, PEM: a trust anchor for
 * Authenticode tests that need one (its key is nowhere). */
extern const char support_ec_root_pem[];

/* ---- Files and state -------------------------------------------------------------- */

/* path's contents, NUL-terminated, in a static buffer (64 KiB at most; the
 * next call overwrites it); NULL when it cannot be opened. */
char *support_slurp(const char *path);

/* A fixture for tests of a state section: an empty state directory made by
 * support_tempdir(tag) and its state loaded, logging off. cmocka setup and
 * teardown: *ctx is the support_state_fixture. */
typedef struct support_state_fixture {
    char *dir;       /* the state directory (support_tempdir) */
    struct state *s; /* state_load of dir */
} support_state_fixture;
int support_state_setup(void **ctx, const char *tag);
int support_state_teardown(void **ctx);

/* ---- Building binary files -------------------------------------------------------- */

/* v little-endian at p: the PE and OLE compound-file formats the tests build. */
void support_put16(uint8_t *p, uint16_t v);
void support_put32(uint8_t *p, uint32_t v);

/* ---- cJSON out of memory ----------------------------------------------------------- */

/* From now on cJSON's allocations succeed n more times, then fail (n < 0:
 * cJSON's own allocator again, never failing): for the out-of-memory paths
 * of code that builds JSON. */
void support_cjson_fail_after(int n);

/* ---- The accelerated crypto's choice ------------------------------------------------ */

/* The rule gcmaccel_choose and sha256accel_choose share, checked through
 * choose (the module's, its enum as int): the CPU's code when the CPU has it,
 * the portable one when it has not or the OUTPOST_*_PORTABLE value forced is
 * exactly "1"; then that this process's active choice (active, read with
 * forced, the variable's value or NULL) is the CPU's best (cpu) or the
 * portable one as forced says. */
void support_check_accel_choice(int (*choose)(bool cpu_has, const char *forced), int portable, int cpu, int active,
                                const char *forced);

#endif
