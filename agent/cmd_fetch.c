/*
 * cmd_fetch.c — `check` and `update`: learn the latest installer version and
 * download it (PRODUCT.md section 4.1-4.2). Not written yet: each says so
 * and fails rather than pretend to have done its work.
 */
#include "commands.h"

error_code command_check(command_context *ctx, error_info *err)
{
    (void)ctx;
    return error_set(err, ERR_NOT_IMPLEMENTED, "check is not implemented in this build of outpost");
}

error_code command_update(command_context *ctx, error_info *err)
{
    (void)ctx;
    return error_set(err, ERR_NOT_IMPLEMENTED, "update is not implemented in this build of outpost");
}
