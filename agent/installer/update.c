/*
 * update.c — the update policy for both sources (update.h): one decision
 * on an offer, one document for `check --json` / `update --json`. Before
 * this file the decision was written twice in cli/cmd_fetch.c and the
 * "staged" object three times, and the copies had drifted apart.
 */
#include "installer/update.h"

#include <stdlib.h>

#include <cjson/cJSON.h>

#include "core/jsonx.h"
#include "installer/staging.h"
#include "installer/version.h"

error_code update_decide(const update_facts *f, update_verdict *verdict, error_info *err)
{
    int order = f->installed ? version_compare(f->offered, f->installed) : 1;
    bool downgrade_allowed = f->allow_downgrade || f->source_allows_downgrade;
    if (order < 0 && !downgrade_allowed)
        return error_set(err, ERR_REJECTED,
                         "%s offers %s, older than the installed %s; refusing the downgrade (use update "
                         "--allow-downgrade to accept it)",
                         f->source ? f->source : "the source", f->offered, f->installed);
    if (!f->force && order == 0)
        *verdict = UPDATE_UP_TO_DATE;
    else if (!f->force && !f->eligible)
        *verdict = UPDATE_NOT_ELIGIBLE;
    else if (!f->force && f->is_staged && f->is_staged(f->is_staged_user, f->offered))
        *verdict = UPDATE_ALREADY_STAGED;
    else if (order < 0)
        *verdict = UPDATE_FETCH_DOWNGRADE;
    else if (order == 0)
        *verdict = UPDATE_FETCH_FORCED;
    else
        *verdict = UPDATE_FETCH_NEWER;
    return ERR_OK;
}

bool update_verdict_fetches(update_verdict verdict)
{
    return verdict == UPDATE_FETCH_NEWER || verdict == UPDATE_FETCH_DOWNGRADE || verdict == UPDATE_FETCH_FORCED;
}

error_code update_stage_download(const config *cfg, state *s, const download_result *dl,
                                 const update_stage_options *options, intake_result *staged, error_info *err)
{
    intake_candidate candidate = {
        .path = dl->path,
        .take_ownership = true,
        .version = dl->version,
        .file_name = dl->file_name,
        .source_url = dl->url,
        .etag = dl->etag,
        .expected_length = dl->total_length,
        .sha256_hex = dl->sha256[0] ? dl->sha256 : NULL,
        .pe_digest = dl->have_pe_digest ? &dl->pe_digest : NULL,
        .allow_downgrade = options->allow_downgrade,
        .force = options->force,
        .expected_signer_sha256 = options->signer_cert_sha256,
    };
    error_code rc = intake_stage(cfg, s, &candidate, staged, err);
    if (rc != ERR_DISK_FULL)
        download_discard(cfg->state_dir, dl->version);
    return rc;
}

bool update_staged_in(const void *cfg, const char *version)
{
    return staging_has_verified(cfg, version);
}

update_action update_action_of(update_verdict verdict)
{
    /* in update_verdict's order */
    static const update_action actions[] = {UPDATE_ACTION_STAGED,       UPDATE_ACTION_STAGED,
                                            UPDATE_ACTION_STAGED,       UPDATE_ACTION_UP_TO_DATE,
                                            UPDATE_ACTION_NOT_ELIGIBLE, UPDATE_ACTION_ALREADY_STAGED};
    return (size_t)verdict < sizeof actions / sizeof actions[0] ? actions[verdict] : UPDATE_ACTION_STAGED;
}

const char *update_action_name(update_action action)
{
    /* in update_action's order: the names `update --json` prints */
    static const char *const names[] = {"", "staged", "up_to_date", "already_staged", "not_eligible"};
    return (size_t)action < sizeof names / sizeof names[0] ? names[action] : "";
}

/* The staged version's status.json object, read back from its manifest, plus
 * resumed_from: what this update staged, whichever source it came from. */
static MUST_CHECK error_code staged_json(const config *cfg, const char *version, int64_t resumed_from, cJSON **out,
                                         error_info *err)
{
    error_code rc = staging_status_of(cfg, version, out, err);
    if (rc == ERR_OK && !cJSON_AddNumberToObject(*out, "resumed_from", (double)resumed_from))
        rc = error_set(err, ERR_NOMEM, "out of memory");
    return rc;
}

error_code update_report_json(const config *cfg, const update_report *r, cJSON **out, error_info *err)
{
    *out = NULL;
    cJSON *mirror = r->mirror;
    cJSON *o = cJSON_CreateObject();
    bool ok = o && jsonx_add_string_or_null(o, "installed_version", r->installed) &&
              jsonx_add_string_or_null(o, "latest_version", r->latest) &&
              cJSON_AddBoolToObject(o, "update_available", version_is_update(r->latest, r->installed)) &&
              jsonx_add_string_or_null(o, "checked_at", r->checked_at && r->checked_at[0] ? r->checked_at : NULL) &&
              jsonx_add_string_or_null(o, "source", r->source);
    /* jsonx_set takes mirror in every case, o NULL included */
    if (!jsonx_set(o, "mirror", mirror ? mirror : cJSON_CreateNull()))
        ok = false;
    error_code rc = ok ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
    if (rc == ERR_OK && r->action != UPDATE_ACTION_NONE) {
        cJSON *staged = NULL;
        if (!cJSON_AddStringToObject(o, "action", update_action_name(r->action)))
            rc = error_set(err, ERR_NOMEM, "out of memory");
        else if (r->action == UPDATE_ACTION_STAGED && r->staged_version)
            rc = staged_json(cfg, r->staged_version, r->resumed_from, &staged, err);
        if (rc == ERR_OK && !jsonx_set(o, "staged", staged ? staged : cJSON_CreateNull()))
            rc = error_set(err, ERR_NOMEM, "out of memory");
    }
    if (rc != ERR_OK) {
        cJSON_Delete(o);
        return rc;
    }
    *out = o;
    return ERR_OK;
}
