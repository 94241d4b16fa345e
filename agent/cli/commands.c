/*
 * commands.c — what the commands share: the run's API client.
 */
#include "cli/commands.h"

error_code command_http(command_context *ctx, http_client **http, error_info *err)
{
    if (!ctx->http) {
        error_code rc = config_check_api(ctx->cfg, err);
        if (rc != ERR_OK)
            return rc;
        char *key = NULL;
        if ((rc = config_load_api_key(ctx->cfg, &key, err)) != ERR_OK)
            return rc;
        int verbosity = ctx->opts ? ctx->opts->verbosity : 0;
        http_options options = {.verbosity = verbosity >= 3 ? 2 : verbosity >= 2 ? 1 : 0};
        rc = http_client_new(ctx->cfg, key, &options, &ctx->http, err);
        config_secret_free(key);
        if (rc != ERR_OK)
            return rc;
    }
    *http = ctx->http;
    return ERR_OK;
}
