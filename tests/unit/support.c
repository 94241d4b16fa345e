/*
 * support.c — the helpers of support.h and support_staging.h.
 */
#include "support.h"

#include "ec_root_pem.h"
#include "support_staging.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/config.h"
#include "core/log.h"
#include "core/state.h"
#include "base/text.h"
#include "installer/intake.h"
#include "installer/staging.h"
#include "net/api.h"
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

support_staging *support_staging_new(const char *tag)
{
    support_staging *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = support_tempdir(tag);
    error_info err;
    if (config_init_defaults(&f->cfg, &err) != ERR_OK)
        fail_msg("%s", err.message);
    free(f->cfg.state_dir);
    f->cfg.state_dir = platform_path_join(f->dir, "state");
    free(f->cfg.installer.verify.trusted_ca_file);
    f->cfg.installer.verify.trusted_ca_file = NULL;
    f->cfg.installer.verify.require_signature = false;
    if (platform_mkdirs(f->cfg.state_dir, &err) != ERR_OK || state_load(f->cfg.state_dir, &f->s, &err) != ERR_OK)
        fail_msg("%s", err.message);
    log_set_level(-1);
    return f;
}

void support_staging_free(support_staging *f)
{
    if (!f)
        return;
    state_free(f->s);
    config_free(&f->cfg);
    support_tempdir_remove(f->dir);
    free(f);
}

int support_staging_setup(void **ctx)
{
    *ctx = support_staging_new("staging");
    return 0;
}

int support_staging_teardown(void **ctx)
{
    support_staging_free(*ctx);
    return 0;
}

char *support_write_pe(const char *dir, const char *name, size_t size, unsigned char seed)
{
    assert_true(size >= 512);
    unsigned char *pe = calloc(1, size);
    assert_non_null(pe);
    pe[0] = 'M';
    pe[1] = 'Z';
    pe[0x3C] = 0x80;
    memcpy(pe + 0x80, "PE\0\0", 4);
    for (size_t i = 0x100; i < size; i++)
        pe[i] = (unsigned char)(seed + i * 7);
    char *path = platform_path_join(dir, name);
    assert_non_null(path);
    error_info err;
    if (platform_write_atomic(path, pe, size, &err) != ERR_OK)
        fail_msg("%s", err.message);
    free(pe);
    return path;
}

error_code support_stage_as(support_staging *f, const char *path, const char *version, bool allow_downgrade, bool force,
                            intake_result *r, error_info *err)
{
    const char *name = path;
    for (const char *p = path; *p; p++)
        if (*p == '/' || *p == platform_path_separator())
            name = p + 1;
    intake_candidate c = {.path = path,
                          .version = version,
                          .file_name = name,
                          .source_url = path,
                          .expected_length = -1,
                          .allow_downgrade = allow_downgrade,
                          .force = force};
    return intake_stage(&f->cfg, f->s, &c, r, err);
}

void support_stage(support_staging *f, const char *path, const char *version)
{
    intake_result r;
    error_info err;
    if (support_stage_as(f, path, version, false, false, &r, &err) != ERR_OK)
        fail_msg("staging %s as %s failed: %s", path, version, err.message);
    free(r.path);
}

char *support_staged_current(support_staging *f)
{
    char *v = NULL;
    error_info err;
    if (staging_current_version(&f->cfg, &v, &err) != ERR_OK)
        fail_msg("%s", err.message);
    return v;
}

bool support_staged_dir_exists(support_staging *f, const char *version)
{
    char *staging = platform_path_join(f->cfg.state_dir, "staging");
    char *dir = staging ? platform_path_join(staging, version) : NULL;
    assert_non_null(dir);
    bool exists = platform_path_stat(dir, NULL) == PLATFORM_PATH_DIR;
    free(dir);
    free(staging);
    return exists;
}

size_t support_staging_entries(support_staging *f)
{
    char *staging = platform_path_join(f->cfg.state_dir, "staging");
    assert_non_null(staging);
    char **names;
    size_t count = 0;
    if (platform_list_dir(staging, &names, &count, NULL) == ERR_OK)
        platform_free_names(names, count);
    free(staging);
    return count;
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

error_code support_fake_installer_route(void *ctx, const char *method, const char *url, const char *body,
                                        size_t body_len, const char *extra, http_fake_response *r, error_info *err)
{
    support_installer_route *route = ctx;
    (void)method, (void)body, (void)body_len, (void)extra, (void)err;
    if (support_answer_token(url, "tok", r))
        return ERR_OK;
    assert_non_null(strstr(url, "/v2/installer/windows/latest"));
    route->requests++;
    r->status = 200;
    r->headers = support_dup(route->headers);
    r->body = malloc(route->body_len + 1);
    assert_non_null(r->body);
    memcpy(r->body, route->body, route->body_len);
    r->body_len = route->body_len;
    return ERR_OK;
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

http_client *support_fake_api_client(const config *cfg, http_fake_fn fn, void *fn_ctx, const clock_source *clock)
{
    http_fake transport = {fn, fn_ctx};
    http_options opts = {.clock = clock, .fake = &transport};
    http_client *client = NULL;
    error_info err;
    if (api_client_new(cfg, "key", &opts, &client, &err) != ERR_OK)
        fail_msg("api_client_new: %s", err.message);
    return client;
}

http_client *support_platform_client(config *cfg, http_fake_fn fn, void *fn_ctx)
{
    error_info err;
    if (config_init_defaults(cfg, &err) != ERR_OK)
        fail_msg("config_init_defaults: %s", err.message);
    cfg->base_url = text_dup("https://platform.test");
    assert_non_null(cfg->base_url);
    return support_fake_api_client(cfg, fn, fn_ctx, NULL);
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

const char support_ec_root_pem[] = EC_ROOT_PEM;

/* ---- Files and state -------------------------------------------------------------- */

char *support_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

int support_state_setup(void **ctx, const char *tag)
{
    support_state_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = support_tempdir(tag);
    assert_int_equal(state_load(f->dir, &f->s, NULL), ERR_OK);
    log_set_level(-1);
    *ctx = f;
    return 0;
}

int support_state_teardown(void **ctx)
{
    support_state_fixture *f = *ctx;
    state_free(f->s);
    ERROR_IGNORE(platform_remove_tree(f->dir, NULL));
    free(f->dir);
    free(f);
    return 0;
}

/* ---- Building binary files -------------------------------------------------------- */

void support_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

void support_put32(uint8_t *p, uint32_t v)
{
    support_put16(p, (uint16_t)v);
    support_put16(p + 2, (uint16_t)(v >> 16));
}

/* ---- cJSON out of memory ----------------------------------------------------------- */

static int allocations_left = -1;

static void *failing_malloc(size_t size)
{
    if (allocations_left == 0)
        return NULL;
    if (allocations_left > 0)
        allocations_left--;
    return malloc(size);
}

void support_cjson_fail_after(int n)
{
    allocations_left = n;
    cJSON_Hooks hooks = {.malloc_fn = failing_malloc, .free_fn = free};
    cJSON_InitHooks(n < 0 ? NULL : &hooks);
}

/* ---- The accelerated crypto's choice ------------------------------------------------ */

void support_check_accel_choice(int (*choose)(bool cpu_has, const char *forced), int portable, int cpu, int active,
                                const char *forced)
{
    static const struct {
        bool cpu_has;
        const char *env;
        bool want_portable;
    } cases[] = {
        {true, NULL, false}, {true, "", false},  {true, "0", false},   {true, "1", true},
        {false, NULL, true}, {false, "1", true}, {true, "yes", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = choose(cases[i].cpu_has, cases[i].env);
        if (cases[i].want_portable)
            assert_int_equal(got, portable);
        else
            assert_int_not_equal(got, 0);
    }
    if (forced && strcmp(forced, "1") == 0)
        assert_int_equal(active, portable);
    else
        assert_int_equal(active, cpu);
}
