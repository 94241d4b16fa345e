/*
 * support.c — the helpers of support.h.
 */
#include "support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

char *support_tempdir(const char *tag)
{
    const char *base = getenv("OUTPOST_TEST_TMP");
    if (!base || !*base)
        base = "/tmp";
    error_info err;
    if (platform_mkdirs(base, &err) != ERR_OK)
        fail_msg("cannot create %s: %s", base, err.message);
    size_t size = strlen(base) + strlen(tag) + 32;
    char *dir = malloc(size);
    assert_non_null(dir);
    snprintf(dir, size, "%s/outpost-%s-XXXXXX", base, tag);
    if (!mkdtemp(dir))
        fail_msg("cannot create a temporary directory %s", dir);
    return dir;
}

void support_tempdir_remove(char *dir)
{
    if (!dir)
        return;
    ERROR_IGNORE(platform_remove_tree(dir, NULL));
    free(dir);
}

char *support_dup(const char *text)
{
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    assert_non_null(copy);
    memcpy(copy, text, n + 1);
    return copy;
}

void support_answer(http_fake_response *r, long status, const char *headers, const char *body)
{
    r->status = status;
    r->headers = support_dup(headers);
    r->body = support_dup(body);
    r->body_len = body ? strlen(body) : 0;
}

bool support_answer_token(const char *url, const char *token, http_fake_response *r)
{
    if (!strstr(url, "/v2/auth/token/access"))
        return false;
    char json[256];
    snprintf(json, sizeof json, "{\"access_token\":\"%s\",\"expires_in\":900}", token);
    support_answer(r, 200, "Content-Type: application/json\r\n", json);
    return true;
}

char *support_header_value(const char *headers, const char *name)
{
    const char *p = headers ? strstr(headers, name) : NULL;
    if (!p)
        return NULL;
    p += strlen(name);
    size_t n = strcspn(p, "\r\n");
    char *value = malloc(n + 1);
    assert_non_null(value);
    memcpy(value, p, n);
    value[n] = '\0';
    return value;
}

static int64_t still_ms(void *ctx)
{
    (void)ctx;
    return 0;
}

static void no_sleep(void *ctx, int64_t ms)
{
    (void)ctx;
    (void)ms;
}

static error_code same_bytes(void *ctx, void *buf, size_t len, error_info *err)
{
    (void)ctx;
    (void)err;
    memset(buf, 0x5a, len);
    return ERR_OK;
}

const clock_source support_still_clock = {still_ms, still_ms, no_sleep, same_bytes, NULL};
