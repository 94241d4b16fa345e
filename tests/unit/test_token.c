/* test_token.c — the access token's exchange body, answer parsing (flat
 * and envelope shapes, expires_in) and renewal timing, with no network and
 * simulated time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "net/token.h"

static error_code accept_text(token_state *t, const char *body, int64_t now, error_info *err)
{
    return token_accept(t, body, strlen(body), now, err);
}

static void test_request_body_escapes_key(void **state)
{
    (void)state;
    size_t len = 0;
    char *body = token_request_body("k\"ey\\\x01", &len);
    assert_non_null(body);
    assert_string_equal(body, "{\"refresh_token\":\"k\\\"ey\\\\\\u0001\"}");
    assert_int_equal(len, strlen(body));
    dynbuf_secret_free(body);
}

static void test_flat_answer_default_lifetime(void **state)
{
    (void)state;
    token_state t;
    token_state_init(&t);
    error_info err;
    assert_int_equal(accept_text(&t, "{\"access_token\":\"abc\"}", 1000, &err), ERR_OK);
    assert_string_equal(t.access_token, "abc");
    assert_int_equal(t.generation, 1);
    assert_int_equal(t.lifetime_ms, 15 * 60 * 1000);
    /* Renewed after 14 of its 15 minutes. */
    assert_int_equal(t.renew_at_ms, 1000 + 14 * 60 * 1000);
    assert_true(token_usable(&t, 1000 + 14 * 60 * 1000 - 1));
    assert_false(token_usable(&t, 1000 + 14 * 60 * 1000));
    token_state_clear(&t);
    assert_null(t.access_token);
}

static void test_envelope_answer_and_expires_in(void **state)
{
    (void)state;
    token_state t;
    token_state_init(&t);
    error_info err;
    /* Inside resources[0], with a short expires_in (a string, as some
     * gateways send it). */
    assert_int_equal(accept_text(&t,
                                 "{\"type\":\"x\",\"resources\":[{\"access_token\":\"tok\",\"expires_in\":\"30\"}],"
                                 "\"errors\":[]}",
                                 0, &err),
                     ERR_OK);
    assert_string_equal(t.access_token, "tok");
    assert_int_equal(t.lifetime_ms, 30000);
    assert_int_equal(t.renew_at_ms, 30000 - 2000);
    /* expires_in at the top level next to an envelope token. */
    assert_int_equal(accept_text(&t, "{\"expires_in\":60,\"resources\":[{\"access_token\":\"t2\"}]}", 5000, &err),
                     ERR_OK);
    assert_int_equal(t.generation, 2);
    assert_int_equal(t.lifetime_ms, 60000);
    assert_int_equal(t.renew_at_ms, 5000 + 60000 - 4000);
    /* Nonsense expires_in values fall back to 15 minutes. */
    assert_int_equal(accept_text(&t, "{\"access_token\":\"t3\",\"expires_in\":-5}", 0, &err), ERR_OK);
    assert_int_equal(t.lifetime_ms, TOKEN_DEFAULT_LIFETIME_MS);
    assert_int_equal(accept_text(&t, "{\"access_token\":\"t3\",\"expires_in\":\"soon\"}", 0, &err), ERR_OK);
    assert_int_equal(t.lifetime_ms, TOKEN_DEFAULT_LIFETIME_MS);
    token_state_clear(&t);
}

static void test_bad_answers(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        const char *message;
    } cases[] = {
        {"not json", "not JSON"},
        {"{}", "missing"},
        {"{\"access_token\":42}", "not a string"},
        {"{\"access_token\":\"\"}", "empty"},
        {"{\"resources\":[{\"access_token\":null}]}", "not a string"},
        {"{\"resources\":[]}", "missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        token_state t;
        token_state_init(&t);
        error_info err;
        assert_int_equal(accept_text(&t, cases[i].body, 0, &err), ERR_PROTOCOL);
        if (!strstr(err.message, cases[i].message))
            fail_msg("%s: message \"%s\"", cases[i].body, err.message);
        assert_non_null(strstr(err.message, "token exchange"));
        assert_null(t.access_token);
        token_state_clear(&t);
    }
}

static void test_invalidate_once_per_generation(void **state)
{
    (void)state;
    token_state t;
    token_state_init(&t);
    error_info err;
    assert_int_equal(accept_text(&t, "{\"access_token\":\"a\"}", 0, &err), ERR_OK);
    assert_true(token_invalidate(&t, 1));
    assert_false(token_invalidate(&t, 1)); /* a second concurrent 401 */
    assert_false(token_usable(&t, 1));
    assert_int_equal(accept_text(&t, "{\"access_token\":\"b\"}", 10, &err), ERR_OK);
    assert_true(token_usable(&t, 11));
    /* A late 401 for the old token leaves the new one alone. */
    assert_false(token_invalidate(&t, 1));
    assert_true(token_usable(&t, 11));
    token_state_clear(&t);
}

static void test_margin(void **state)
{
    (void)state;
    assert_int_equal(token_renew_margin_ms(900000), 60000);
    assert_int_equal(token_renew_margin_ms(3000), 200);
    assert_int_equal(token_renew_margin_ms(1), 1);
}

static void test_wipe(void **state)
{
    (void)state;
    char buf[8] = "secret!";
    dynbuf_wipe(buf, sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++)
        assert_int_equal(buf[i], 0);
    dynbuf_secret_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_body_escapes_key),
        cmocka_unit_test(test_flat_answer_default_lifetime),
        cmocka_unit_test(test_envelope_answer_and_expires_in),
        cmocka_unit_test(test_bad_answers),
        cmocka_unit_test(test_invalidate_once_per_generation),
        cmocka_unit_test(test_margin),
        cmocka_unit_test(test_wipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
