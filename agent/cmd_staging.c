/*
 * cmd_staging.c — `stage`, `deploy`, `rollback` and `bundle`: what happens to
 * an installer once it is on disk (PRODUCT.md section 4.3-4.5). Not written
 * yet: each says so and fails rather than pretend to have done its work.
 */
#include "commands.h"

static error_code not_yet(const char *what, error_info *err)
{
    return error_set(err, ERR_NOT_IMPLEMENTED, "%s is not implemented in this build of outpost", what);
}

error_code command_stage(command_context *ctx, error_info *err) { (void)ctx; return not_yet("stage", err); }
error_code command_deploy(command_context *ctx, error_info *err) { (void)ctx; return not_yet("deploy", err); }
error_code command_rollback(command_context *ctx, error_info *err) { (void)ctx; return not_yet("rollback", err); }
error_code command_bundle(command_context *ctx, error_info *err) { (void)ctx; return not_yet("bundle", err); }
