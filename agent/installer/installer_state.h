/*
 * installer_state.h — state section "installer", and the only module that
 * touches its members (state.h's promise: one owner per section). The
 * others call these functions:
 *
 *   latest_version, checked_at, update_available   check/update (update.c)
 *   last_command {command, at, exit_code, error}    an interactive command (update.c, commands.c)
 *   deployed {...}, deployed_version, deploy_failure {...}   deploy.c
 *   staged_history [versions, oldest first], rolled_back_from   staging.c
 *
 * Setters change the document in memory only (state_save writes it) and
 * keep each member where state.json has always had it: a value replaced in
 * place, or an object removed and added again at the end, as before, so the
 * file stays byte for byte what earlier versions wrote. They fail only on
 * out of memory (ERR_NOMEM), leaving the member as it was. Getters return
 * pointers owned by the state (valid until the member changes or
 * state_free), NULL when the member is absent or of another type.
 */
#ifndef OUTPOST_INSTALLER_STATE_H
#define OUTPOST_INSTALLER_STATE_H

#include <stdbool.h>

#include "base/error.h"
#include "core/state.h"
#include "installer/deploy.h"

struct cJSON;

/* What check and update learned: the platform's latest version, when, and
 * whether it is newer than the installed one. */
MUST_CHECK error_code installer_state_set_latest(state *s, const char *latest_version, const char *checked_at,
                                                 bool update_available, error_info *err);
const char *installer_state_latest_version(state *s);
const char *installer_state_checked_at(state *s);

/* An interactive command's outcome; error NULL is recorded as null. */
MUST_CHECK error_code installer_state_set_last_command(state *s, const char *command, const char *at, int exit_code,
                                                       const char *error, error_info *err);
const struct cJSON *installer_state_last_command(state *s);
/* Records what an interactive command (check, update, stage, deploy,
 * rollback, publish) came to as last_command, at the time now: exit_code on
 * ERR_OK, else rc's exit code and err's message (rc's meaning when it has
 * none). Out of memory is a warning: the command's own outcome stands. */
void installer_state_note_outcome(state *s, const char *command, error_code rc, int exit_code, const error_info *err);

/* A deploy that succeeded: "deployed" (out's version, exit code, reboot,
 * verification and log, at, boot_id), "deployed_version"; any earlier
 * "deploy_failure" is removed. */
MUST_CHECK error_code installer_state_set_deployed(state *s, const deploy_outcome *out, const char *at,
                                                   const char *boot_id, error_info *err);
/* A deploy that failed: "deploy_failure" (exit code null when the installer
 * did not finish, log null before it was named). "deployed" stays. */
MUST_CHECK error_code installer_state_set_deploy_failure(state *s, const deploy_outcome *out, const char *at,
                                                         const char *message, error_info *err);
const struct cJSON *installer_state_deployed(state *s);
const struct cJSON *installer_state_deploy_failure(state *s);
/* The version outpost last deployed successfully (not checked here). */
const char *installer_state_deployed_version(state *s);

/* ---- Staged history (staging.c) ------------------------------------------ */

/* At most this many versions are remembered; the oldest go first. */
#define INSTALLER_STATE_HISTORY_MAX 32

/* Makes sure the history exists: an empty one replaces a missing or
 * damaged member (rollback and finish_commit have always written it). */
MUST_CHECK error_code installer_state_history_open(state *s, error_info *err);
/* Position of version in the history (larger: staged more recently), -1 if absent. */
int installer_state_history_rank(state *s, const char *version);
/* The version staged most recently, or NULL. */
const char *installer_state_history_last(state *s);
/* Moves (or adds) version to the end of the history. */
MUST_CHECK error_code installer_state_history_append(state *s, const char *version, error_info *err);
void installer_state_history_remove(state *s, const char *version);
/* Drops every version that is not one of the count names (the versions
 * staged now): prune calls it so that a version whose directory a killed
 * run removed does not stay in the history for good. */
void installer_state_history_keep_only(state *s, char *const *names, size_t count);

/* The version a rollback switched away from (cleared by the next staging). */
const char *installer_state_rolled_back_from(state *s);
/* Records it; NULL clears it. */
MUST_CHECK error_code installer_state_set_rolled_back_from(state *s, const char *version, error_info *err);

#endif
