/*
 * cmd_mirror.c — `keygen` and `publish`, the publishing host's side of the
 * fleet mirror (PRODUCT.md section 8).
 *
 * keygen writes a new P-256 private key owner-only and never over an
 * existing file (overwriting a signing key would strand every endpoint that
 * pins it), and prints the public half for mirror.public_keys.
 * publish runs `update` through the API and then installer/publish.c.
 * mirror verify prints installer/mirror_verify.c's judgements and exits as
 * an endpoint would; mirror trust reset forgets the kept mirror root
 * (installer/source_mirror.c), so the next run trusts mirror.root_file.
 */
#include "cli/commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/text.h"
#include "core/log.h"
#include "core/state.h"
#include "core/timefmt.h"
#include "core/jsonx.h"
#include "installer/mirror_verify.h"
#include "installer/publish.h"
#include "installer/source_mirror.h"
#include "installer/update.h"
#include "mirror/signkey.h"
#include "platform/platform.h"
#include "report/status.h"

static bool json_output(const command_context *ctx)
{
    return ctx->opts && ctx->opts->json;
}

error_code command_keygen(command_context *ctx, error_info *err)
{
    const char *path = ctx->opts->output;
    signkey *key = NULL;
    char *private_pem = NULL, *public_pem = NULL;
    error_code rc = signkey_generate(&key, err);
    if (rc == ERR_OK)
        rc = signkey_private_pem(key, &private_pem, err);
    if (rc == ERR_OK)
        rc = signkey_public_pem(key, &public_pem, err);
    const char *public_path = ctx->opts->public_out;
    if (rc == ERR_OK && public_path && platform_path_stat(public_path, NULL) != PLATFORM_PATH_NONE)
        rc = error_set(err, ERR_USAGE, "--public-out %s already exists; name a new file", public_path);
    if (rc == ERR_OK && (rc = platform_write_new_file(path, private_pem, strlen(private_pem), true, err)) != ERR_OK)
        error_prefix(err, "cannot write the signing key");
    /* The public key is public: readable by all, for mirror.public_keys. */
    if (rc == ERR_OK && public_path &&
        (rc = platform_write_new_file(public_path, public_pem, strlen(public_pem), false, err)) != ERR_OK)
        error_prefix(err, "wrote the signing key to %s, but cannot write the public key", path);
    if (rc == ERR_OK) {
        if (json_output(ctx)) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "key_file", path);
            cJSON_AddStringToObject(o, "key_id", signkey_id(key));
            cJSON_AddStringToObject(o, "public_key", public_pem);
            if (public_path)
                cJSON_AddStringToObject(o, "public_key_file", public_path);
            command_print_json(o);
        } else {
            printf("%s", public_pem);
            printf("key id: %s\n", signkey_id(key));
            if (!command_quiet(ctx))
                fprintf(stderr,
                        "wrote the private key to %s (owner only); put it in publish.signing_key_file on the "
                        "publishing host, and the public key above in every endpoint's mirror.public_keys\n",
                        path);
        }
    }
    signkey_pem_free(private_pem);
    free(public_pem);
    signkey_free(key);
    return rc;
}

static MUST_CHECK error_code load_signing_key(const config *cfg, signkey **key, error_info *err)
{
    if (!cfg->publish.signing_key_file)
        return error_set(err, ERR_CONFIG,
                         "%s: `publish.signing_key_file` is not set; make a key with `outpost keygen -o "
                         "FILE` and name FILE there",
                         cfg->path ? cfg->path : "configuration");
    return signkey_load_private_file(cfg->publish.signing_key_file, key, err);
}

error_code command_publish(command_context *ctx, error_info *err)
{
    const config *cfg = ctx->cfg;
    const char *dir = ctx->opts->dir ? ctx->opts->dir : cfg->publish.dir;
    if (!dir)
        return error_set(err, ERR_CONFIG, "%s: no mirror directory: set `publish.dir` or pass publish --dir DIR",
                         cfg->path ? cfg->path : "configuration");
    double percent = ctx->opts->rollout ? strtod(ctx->opts->rollout, NULL) : cfg->publish.rollout_percent;
    signkey *key = NULL;
    error_code rc = load_signing_key(cfg, &key, err);
    /* What publish lacks of its own first (the signing key, the directory),
     * then the CA files verification reads, judged once before any byte is
     * downloaded (main.c does it for update, stage and run). */
    if (rc == ERR_OK)
        rc = config_check_verify_files(&cfg->installer.verify, err);
    if (rc != ERR_OK) {
        signkey_free(key);
        return rc;
    }
    rc = command_update_for_publish(ctx, err);
    state *s = NULL;
    if (rc == ERR_OK)
        rc = state_load(cfg->state_dir, &s, err);
    publish_result result;
    memset(&result, 0, sizeof result);
    if (rc == ERR_OK) {
        publish_request req = {
            .dir = dir,
            .rollout_percent = percent,
            .key = key,
            .now_s = platform_time_utc_ms() / 1000,
        };
        rc = publish_mirror(cfg, s, &req, &result, err);
    }
    if (rc == ERR_OK) {
        char expires[TIMEFMT_ISO8601_SIZE];
        timefmt_iso8601(result.expires_at, expires);
        if (json_output(ctx)) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "dir", dir);
            char seq_text[24]; /* written exactly: cJSON prints a number above 10^15 rounded */
            snprintf(seq_text, sizeof seq_text, "%lld", (long long)result.seq);
            cJSON_AddRawToObject(o, "seq", seq_text);
            cJSON_AddStringToObject(o, "version", result.version);
            cJSON_AddStringToObject(o, "installer", result.installer_path);
            cJSON_AddStringToObject(o, "manifest", result.manifest_path);
            cJSON_AddStringToObject(o, "sha256", result.sha256);
            cJSON_AddNumberToObject(o, "length", (double)result.length);
            cJSON_AddStringToObject(o, "expires_at", expires);
            cJSON_AddNumberToObject(o, "rollout_percent", percent);
            cJSON_AddBoolToObject(o, "new_installer", result.new_installer);
            cJSON_AddNumberToObject(o, "pruned", result.pruned);
            cJSON_AddStringToObject(o, "key_id", signkey_id(key));
            command_print_json(o);
        } else if (!command_quiet(ctx)) {
            printf("published %s (seq %" PRId64 ", expires %s, rollout %g%%) to %s\n", result.version, result.seq,
                   expires, percent, dir);
        }
    }
    state_free(s);
    signkey_free(key);
    return rc;
}

/* `mirror trust reset`: the kept root forgotten (source_mirror_trust_reset), the state saved, status.json told. */
static MUST_CHECK error_code trust_reset(command_context *ctx, error_info *err)
{
    const config *cfg = ctx->cfg;
    state *s = NULL;
    int64_t forgotten = 0;
    char reset_at[TIMEFMT_ISO8601_SIZE];
    error_code rc = state_load(cfg->state_dir, &s, err);
    if (rc == ERR_OK)
        rc = source_mirror_trust_reset(cfg, s, platform_time_utc_ms() / 1000, &forgotten, reset_at, err);
    if (rc == ERR_OK)
        rc = state_save(s, err);
    if (rc == ERR_OK) {
        status_parts parts = {0};
        error_info why;
        error_clear(&why);
        if (update_status_section(cfg, s, &parts.installer, &why) != ERR_OK ||
            status_write(cfg, &parts, &why) != ERR_OK)
            log_warn("the status file was not updated: %s", why.message);
        cJSON_Delete(parts.installer);
        /* In the log too: who reads it later must see why trust moved. */
        if (forgotten)
            log_warn("mirror trust reset: the kept mirror root (version %lld) is forgotten; the next run trusts "
                     "mirror.root_file %s and walks the mirror's roots from it",
                     (long long)forgotten, cfg->mirror.root_file);
        else
            log_warn("mirror trust reset: no mirror root was kept; the next run trusts mirror.root_file %s",
                     cfg->mirror.root_file);
        if (json_output(ctx)) {
            cJSON *o = cJSON_CreateObject();
            if (forgotten)
                cJSON_AddNumberToObject(o, "forgotten_version", (double)forgotten);
            else
                cJSON_AddNullToObject(o, "forgotten_version");
            cJSON_AddStringToObject(o, "root_file", cfg->mirror.root_file);
            cJSON_AddStringToObject(o, "reset_at", reset_at);
            command_print_json(o);
        }
    }
    state_free(s);
    return rc;
}

error_code command_mirror(command_context *ctx, error_info *err)
{
    const cli_options *opts = ctx->opts;
    if (cli_mirror_trust_reset(opts))
        return trust_reset(ctx, err);
    const char *target = NULL, *machine_id = NULL;
    for (int i = 1; i < opts->arg_count; i++) {
        const char *arg = opts->args[i];
        if (strcmp(arg, "--machine-id") == 0 && i + 1 < opts->arg_count)
            machine_id = opts->args[++i];
        else if (strncmp(arg, "--machine-id=", 13) == 0 && arg[13])
            machine_id = arg + 13;
        else if (arg[0] != '-' && !target)
            target = arg;
        else
            return error_set(err, ERR_USAGE, "usage: outpost mirror verify URL|DIR [--machine-id ID] (not \"%s\")",
                             arg);
    }
    if (!target)
        return error_set(err, ERR_USAGE, "usage: outpost mirror verify URL|DIR [--machine-id ID]");
    char *url = mirror_verify_url_of(target, err);
    if (!url)
        return err && err->code != ERR_OK ? err->code : error_set(err, ERR_NOMEM, "out of memory");
    mirror_verify_result r;
    http_client *http = NULL;
    error_code rc = command_http_urls(ctx, &http, err);
    if (rc == ERR_OK)
        rc = mirror_verify_run(http, ctx->cfg, url, machine_id, &r, err);
    if (rc == ERR_OK) {
        int exit_code = error_exit_code(r.code);
        if (json_output(ctx)) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "url", url);
            cJSON *steps = cJSON_AddArrayToObject(o, "judgements");
            for (int i = 0; steps && i < r.step_count; i++) {
                cJSON *s = cJSON_CreateObject();
                cJSON_AddStringToObject(s, "step", r.steps[i].name);
                cJSON_AddBoolToObject(s, "ok", r.steps[i].ok);
                cJSON_AddStringToObject(s, "message", r.steps[i].message);
                cJSON_AddItemToArray(steps, s);
            }
            cJSON_AddStringToObject(o, "action", r.action ? r.action : "refuse");
            jsonx_add_string_or_null(o, "version", r.version[0] ? r.version : NULL);
            cJSON_AddNumberToObject(o, "exit", exit_code);
            command_print_json(o);
        } else {
            for (int i = 0; i < r.step_count; i++)
                printf("%-4s %s: %s\n", r.steps[i].ok ? "ok" : "FAIL", r.steps[i].name, r.steps[i].message);
            printf("an endpoint would: %s%s%s (exit %d)\n", r.action ? r.action : "refuse", r.version[0] ? " " : "",
                   r.version, exit_code);
        }
        /* The exit code an endpoint would have; the judgements are already printed. */
        ctx->exit_code = exit_code;
    }
    free(url);
    return rc;
}
