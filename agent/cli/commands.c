/*
 * commands.c — what the commands share: the run's API client, where an
 * interactive command records its outcome, and how results are printed
 * (--json, -q).
 */
#include "cli/commands.h"

#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"
#include "core/state.h"
#include "installer/installer_state.h"
#include "net/api.h"

static http_options command_http_options(const command_context *ctx)
{
    int verbosity = ctx->opts ? ctx->opts->verbosity : 0;
    http_options options = {.verbosity = verbosity >= 3   ? 2
                                         : verbosity >= 2 ? 1
                                                          : 0,
                            .keep_tls_session = ctx->holds_state_dir};
    return options;
}

error_code command_http(command_context *ctx, http_client **http, error_info *err)
{
    if (ctx->http && !http_client_has_key(ctx->http)) {
        /* A client for URLs only (the mirror) was made first: this one calls the platform. */
        http_client_free(ctx->http);
        ctx->http = NULL;
    }
    if (!ctx->http) {
        error_code rc = config_check_api(ctx->cfg, err);
        if (rc != ERR_OK)
            return rc;
        char *key = NULL;
        if ((rc = config_load_api_key(ctx->cfg, &key, err)) != ERR_OK)
            return rc;
        http_options options = command_http_options(ctx);
        rc = api_client_new(ctx->cfg, key, &options, &ctx->http, err);
        dynbuf_secret_free(key);
        if (rc != ERR_OK)
            return rc;
    }
    *http = ctx->http;
    return ERR_OK;
}

error_code command_http_urls(command_context *ctx, http_client **http, error_info *err)
{
    if (!ctx->http) {
        http_options options = command_http_options(ctx);
        error_code rc = http_client_new(ctx->cfg, NULL, NULL, &options, &ctx->http, err);
        if (rc != ERR_OK)
            return rc;
    }
    *http = ctx->http;
    return ERR_OK;
}

bool command_from_run(const command_context *ctx)
{
    return ctx->opts && ctx->opts->command == CLI_RUN;
}

void command_record_outcome(const command_context *ctx, state *s, error_code rc, int exit_code, const error_info *err)
{
    if (!s || command_from_run(ctx))
        return;
    installer_state_note_outcome(s, cli_command_name(ctx->opts ? ctx->opts->command : CLI_NONE), rc, exit_code, err);
}

bool command_print_json(cJSON *doc)
{
    char *text = doc ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    if (!text)
        return false;
    printf("%s\n", text);
    cJSON_free(text);
    return true;
}

void command_print_error_json(const error_info *err)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *e = doc ? cJSON_AddObjectToObject(doc, "error") : NULL;
    bool built = e && cJSON_AddStringToObject(e, "code", error_name(err->code)) &&
                 cJSON_AddNumberToObject(e, "exit", error_exit_code(err->code)) &&
                 cJSON_AddStringToObject(e, "message", err->message[0] ? err->message : error_meaning(err->code));
    if (built && command_print_json(doc)) /* takes doc */
        return;
    if (!built)
        cJSON_Delete(doc);
    /* Out of memory: the document by hand, with the code's fixed meaning. */
    printf("{\"error\": {\"code\": \"%s\", \"exit\": %d, \"message\": \"%s\"}}\n", error_name(err->code),
           error_exit_code(err->code), error_meaning(err->code));
}

bool command_quiet(const command_context *ctx)
{
    return ctx->opts && ctx->opts->verbosity < 0;
}
