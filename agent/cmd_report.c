/*
 * cmd_report.c — the `report` command (PRODUCT.md section 5). Not written
 * yet: it says so and fails rather than pretend to have done its work.
 */
#include "commands.h"

error_code command_report(command_context *ctx, error_info *err)
{
    (void)ctx;
    return error_set(err, ERR_NOT_IMPLEMENTED, "report is not implemented in this build of outpost");
}
