/*
 * mirror_verify.c — the endpoint's judgement of a mirror: its own update
 * flow (update_flow) run against a scratch state directory (see
 * mirror_verify.h), each step said as a judgement.
 */
#include "installer/mirror_verify.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/text.h"
#include "core/jsonx.h"
#include "core/state.h"
#include "core/timefmt.h"
#include "installer/installed.h"
#include "installer/mirror_trust.h"
#include "installer/update.h"
#include "platform/platform.h"

static void step(mirror_verify_result *r, const char *name, bool ok, const char *fmt, ...) OUTPOST_PRINTF(4, 5);

static void step(mirror_verify_result *r, const char *name, bool ok, const char *fmt, ...)
{
    if (r->step_count == MIRROR_VERIFY_MAX_STEPS)
        return;
    mirror_verify_step *s = &r->steps[r->step_count++];
    s->name = name;
    s->ok = ok;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->message, sizeof s->message, fmt, ap);
    va_end(ap);
}

char *mirror_verify_url_of(const char *arg, error_info *err)
{
    if (strstr(arg, "://"))
        return text_dup(arg);
    bool posix = arg[0] == '/';
    bool drive = isalpha((unsigned char)arg[0]) && arg[1] == ':' && (arg[2] == '\\' || arg[2] == '/');
    bool unc = (arg[0] == '\\' && arg[1] == '\\');
    if (!posix && !drive && !unc) {
        error_set(err, ERR_USAGE, "give the mirror directory as an absolute path (or a URL), not \"%s\"", arg);
        return NULL;
    }
    size_t n = strlen(arg) + 16;
    char *url = malloc(n);
    if (!url)
        return NULL;
    snprintf(url, n, "%s%s", posix ? "file://" : drive ? "file:///" : "file:", arg);
    for (char *c = url; *c; c++)
        if (*c == '\\')
            *c = '/';
    return url;
}

/* A private scratch directory in the system's temporary folder. malloc'd. */
static MUST_CHECK error_code scratch_dir(char **out, error_info *err)
{
    const char *base = platform_getenv("TMPDIR");
    if (!base || !base[0])
        base = platform_getenv("TEMP");
    if (!base || !base[0])
        base = platform_getenv("TMP");
    if (!base || !base[0])
        base = "/tmp";
    unsigned char random[8];
    error_code rc = platform_random_bytes(random, sizeof random, err);
    if (rc != ERR_OK)
        return rc;
    char name[48], hex[17];
    text_hex(random, sizeof random, hex);
    snprintf(name, sizeof name, "outpost-mirror-verify-%s", hex);
    char *dir = platform_path_join(base, name);
    if (!dir)
        return error_set(err, ERR_NOMEM, "out of memory");
    rc = platform_mkdirs_private(dir, err);
    if (rc != ERR_OK) {
        free(dir);
        return error_prefix(err, "cannot make a scratch directory in %s (set TMPDIR)", base);
    }
    *out = dir;
    return ERR_OK;
}

/* The endpoint's kept root (and the lineage it belongs to), copied into the
 * scratch state so that the walk starts where the endpoint's would. */
static void copy_kept_root(const config *cfg, state *scratch_state, const char *scratch)
{
    state *own = NULL;
    if (state_load(cfg->state_dir, &own, NULL) == ERR_OK) {
        const cJSON *chain = cJSON_GetObjectItemCaseSensitive(state_section(own, "mirror"), "root_chain");
        if (chain)
            jsonx_set(state_section(scratch_state, "mirror"), "root_chain", cJSON_Duplicate(chain, 1));
    }
    state_free(own);
    char *from = platform_path_join(cfg->state_dir, MIRROR_TRUST_ROOT_FILE);
    char *to = platform_path_join(scratch, MIRROR_TRUST_ROOT_FILE);
    char *data = NULL;
    size_t len = 0;
    if (from && to && platform_read_file(from, ROOT_MAX_BYTES + 1, &data, &len, NULL) == ERR_OK)
        ERROR_IGNORE(platform_write_atomic(to, data, len, NULL));
    free(data);
    free(from);
    free(to);
}

/* The root step, from what source_mirror_fetch recorded in the scratch state. */
static void say_root(const config *cfg, state *s, mirror_verify_result *r)
{
    const cJSON *kept = cJSON_GetObjectItemCaseSensitive(state_section(s, "mirror"), "root");
    if (!cfg->mirror.root_file) {
        step(r, "root", true, "no mirror.root_file: the manifest is trusted by mirror.public_keys (%zu keys)",
             cfg->mirror.public_key_count);
        return;
    }
    bool present = false;
    if (cJSON_IsObject(kept))
        step(r, "root", true, "trusted root version %.0f (from %s and the mirror's roots/), expires %s",
             jsonx_number(NULL, kept, "version", &present), cfg->mirror.root_file,
             jsonx_string(NULL, kept, "expires_at") ? jsonx_string(NULL, kept, "expires_at") : "?");
}

static void fail(mirror_verify_result *r, const char *name, error_code code, const error_info *why)
{
    step(r, name, false, "%s", why->message);
    r->code = code;
    r->action = code == ERR_TEMPORARY ? "wait" : "refuse";
}

/* The endpoint's installed version, from its own configuration and state (read, not written). */
static MUST_CHECK error_code endpoint_installed(const config *cfg, char **installed, error_info *err)
{
    state *own = NULL;
    error_code rc = state_load(cfg->state_dir, &own, err);
    if (rc == ERR_OK)
        rc = installed_version_get(cfg, own, installed, NULL, err);
    state_free(own);
    return rc;
}

/* The judgements after the root's, from what the flow learned and did; the failing one last. */
static void say_flow(const update_outcome *out, error_code judged, const error_info *why, mirror_verify_result *r)
{
    const mirror_offer *offer = &out->offer;
    if (out->failed == UPDATE_STEP_OFFER) {
        fail(r, "manifest", judged, why);
        return;
    }
    char expires[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(offer->m.expires_at, expires);
    snprintf(r->version, sizeof r->version, "%s", offer->m.version);
    step(r, "manifest", true, "%s: seq %lld, version %s, channel %s, platform %s, expires %s", offer->manifest_url,
         (long long)offer->m.seq, offer->m.version, offer->m.channel, offer->m.platform, expires);
    step(r, "rollout", true, "%g%% of the fleet; this machine (bucket %u) is %s", offer->m.rollout_percent,
         (unsigned)offer->bucket, offer->eligible ? "in it" : "not in it yet");
    if (out->failed == UPDATE_STEP_DOWNLOAD) {
        fail(r, "installer", judged, why);
        return;
    }
    step(r, "installer", true, "%s: %lld bytes, SHA-256 %s as the manifest says", offer->installer_url,
         (long long)offer->m.length, offer->m.sha256);
    if (out->failed == UPDATE_STEP_STAGE) {
        fail(r, "verification", judged, why);
        return;
    }
    step(r, "verification", true, "signature %s%s%s; verified as update would before staging", out->staged.signature,
         out->staged.signer[0] ? " by " : "", out->staged.signer);
    /* The endpoint's own decision, as `update` without options takes it. */
    if (out->refusal.code != ERR_OK)
        fail(r, "version", ERR_REJECTED, &out->refusal);
    else
        r->action = out->verdict == UPDATE_UP_TO_DATE     ? "up-to-date"
                    : out->verdict == UPDATE_NOT_ELIGIBLE ? "not-eligible"
                    : out->verdict == UPDATE_NOT_TAKEN    ? "not-taken"
                                                          : "install";
    if (out->verdict == UPDATE_NOT_TAKEN)
        step(r, "pin", true, "%s", out->policy_reason);
}

error_code mirror_verify_run(http_client *http, const config *cfg, const char *url, const char *machine_id,
                             mirror_verify_result *r, error_info *err)
{
    memset(r, 0, sizeof *r);
    char *scratch = NULL;
    error_code rc = scratch_dir(&scratch, err);
    if (rc != ERR_OK)
        return rc;
    config c = *cfg; /* a shallow copy: nothing in it is freed here */
    char *urls[1] = {(char *)url};
    c.state_dir = scratch;
    c.mirror.urls = urls;
    c.mirror.url_count = 1;
    if (machine_id)
        c.mirror.machine_id = (char *)machine_id;
    state *s = NULL;
    char *installed = NULL;
    rc = state_load(scratch, &s, err);
    if (rc == ERR_OK)
        copy_kept_root(cfg, s, scratch);
    if (rc == ERR_OK)
        rc = endpoint_installed(cfg, &installed, err);
    /* The endpoint's own flow on the scratch state: the installer is always
     * fetched, verified and staged there, and the decision reported. */
    update_request request = {.source = UPDATE_SOURCE_MIRROR, .fetch = true, .always_fetch = true};
    update_outcome out;
    memset(&out, 0, sizeof out);
    error_info why;
    error_clear(&why);
    error_code judged = rc == ERR_OK ? update_flow(&c, s, http, installed, &request, &out, &why) : rc;
    if (rc == ERR_OK)
        say_root(cfg, s, r);
    /* A judgement of the mirror, or of this machine's configuration (no machine id for the rollout), or nothing judged.
     */
    bool judgement = out.failed == UPDATE_STEP_NONE || out.failed == UPDATE_STEP_OFFER ||
                     out.failed == UPDATE_STEP_DOWNLOAD || out.failed == UPDATE_STEP_STAGE;
    if (rc == ERR_OK && ((out.failed == UPDATE_STEP_OFFER && judged == ERR_CONFIG) || !judgement)) {
        rc = judged;
        *err = why;
    } else if (rc == ERR_OK) {
        say_flow(&out, judged, &why, r);
    }
    free(installed);
    update_outcome_free(&out);
    state_free(s);
    ERROR_IGNORE(platform_remove_tree(scratch, NULL));
    free(scratch);
    return rc;
}
