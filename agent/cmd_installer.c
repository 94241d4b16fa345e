/*
 * cmd_installer.c — the installer commands: check, update, stage, deploy,
 * rollback and bundle (PRODUCT.md section 4). Not written yet: each says so
 * and fails rather than pretend to have done its work.
 */
#include "commands.h"

static error_code not_yet(const char *what, error_info *err)
{
    return error_set(err, ERR_NOT_IMPLEMENTED, "%s is not implemented in this build of outpost", what);
}

error_code command_check(command_context *ctx, error_info *err) { (void)ctx; return not_yet("check", err); }
error_code command_update(command_context *ctx, error_info *err) { (void)ctx; return not_yet("update", err); }
error_code command_stage(command_context *ctx, error_info *err) { (void)ctx; return not_yet("stage", err); }
error_code command_deploy(command_context *ctx, error_info *err) { (void)ctx; return not_yet("deploy", err); }
error_code command_rollback(command_context *ctx, error_info *err) { (void)ctx; return not_yet("rollback", err); }
error_code command_bundle(command_context *ctx, error_info *err) { (void)ctx; return not_yet("bundle", err); }
