/*
 * cmd_run.c — `run` (what the scheduled task calls) and `status`. Not
 * written yet: each says so and fails rather than pretend to have done its work.
 */
#include "commands.h"

error_code command_run(command_context *ctx, error_info *err)
{
    (void)ctx;
    return error_set(err, ERR_NOT_IMPLEMENTED, "run is not implemented in this build of outpost");
}

error_code command_status(command_context *ctx, error_info *err)
{
    (void)ctx;
    return error_set(err, ERR_NOT_IMPLEMENTED, "status is not implemented in this build of outpost");
}
