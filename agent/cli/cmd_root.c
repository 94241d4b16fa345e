/*
 * cmd_root.c — `outpost root init|sign|next|verify`: the offline ceremony
 * of the mirror's root of trust (PRODUCT.md 8.1).
 *
 * init and next write an unsigned root (never over an existing file); sign
 * adds one holder's signature and rewrites the file atomically, so each
 * holder signs on their own offline machine and passes the file on; verify
 * judges a chain with the same code an endpoint runs (mirror/root.c).
 * The words after `root` come unparsed from cli.c (cli_options.args):
 * their options repeat (--root-key twice) and belong to one sub-command.
 */
#include "cli/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"
#include "base/text.h"
#include "core/timefmt.h"
#include "mirror/envelope.h"
#include "mirror/root.h"
#include "mirror/signkey.h"
#include "platform/platform.h"

#define MAX_ROOT_FILES 32

/* What the sub-command's words say. Strings point into argv. */
typedef struct root_args {
    const char *files[MAX_ROOT_FILES]; /* operands */
    size_t file_count;
    const char *root_keys[ROOT_MAX_KEYS]; /* --root-key, --add-root-key */
    size_t root_key_count;
    const char *manifest_keys[ROOT_MAX_KEYS]; /* --manifest-key, --add-manifest-key */
    size_t manifest_key_count;
    const char *remove_root[ROOT_MAX_KEYS]; /* --remove-root-key KEYID */
    size_t remove_root_count;
    const char *remove_manifest[ROOT_MAX_KEYS]; /* --remove-manifest-key KEYID */
    size_t remove_manifest_count;
    long root_threshold;     /* 0: not given */
    long manifest_threshold; /* 0: not given */
    const char *expires;
    const char *output; /* -o */
    const char *key;    /* -k */
} root_args;

static MUST_CHECK error_code add_to(const char **list, size_t *count, const char *value, const char *name,
                                    error_info *err)
{
    if (*count == ROOT_MAX_KEYS)
        return error_set(err, ERR_USAGE, "%s is given more than %d times", name, ROOT_MAX_KEYS);
    list[(*count)++] = value;
    return ERR_OK;
}

static MUST_CHECK error_code threshold_of(const char *text, const char *name, long *out, error_info *err)
{
    char *end = NULL;
    long n = strtol(text, &end, 10);
    if (end == text || *end != '\0' || n < 1 || n > ROOT_MAX_KEYS)
        return error_set(err, ERR_USAGE, "%s must be a number from 1 to %d, not \"%s\"", name, ROOT_MAX_KEYS, text);
    *out = n;
    return ERR_OK;
}

/* Parses args[1..] for sub-command sub; allowed lists the options it takes. */
static MUST_CHECK error_code parse_args(const cli_options *opts, const char *sub, const char *allowed, root_args *a,
                                        error_info *err)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < opts->arg_count; i++) {
        const char *arg = opts->args[i];
        if (arg[0] != '-' || !arg[1]) {
            if (a->file_count == MAX_ROOT_FILES)
                return error_set(err, ERR_USAGE, "root %s takes at most %d files", sub, MAX_ROOT_FILES);
            a->files[a->file_count++] = arg;
            continue;
        }
        char name[40];
        const char *value = strchr(arg, '=');
        snprintf(name, sizeof name, "%.*s", value ? (int)(value - arg) : (int)strlen(arg), arg);
        if (strcmp(name, "-o") == 0)
            snprintf(name, sizeof name, "--output");
        if (strcmp(name, "-k") == 0)
            snprintf(name, sizeof name, "--key");
        char pattern[48];
        snprintf(pattern, sizeof pattern, " %s ", name);
        if (!strstr(allowed, pattern))
            return error_set(err, ERR_USAGE, "%s is not an option of root %s; `outpost help root` lists them", arg,
                             sub);
        if (value)
            value++;
        else if (i + 1 < opts->arg_count)
            value = opts->args[++i];
        if (!value || !value[0])
            return error_set(err, ERR_USAGE, "%s needs a value", name);
        error_code rc = ERR_OK;
        if (strcmp(name, "--root-key") == 0 || strcmp(name, "--add-root-key") == 0)
            rc = add_to(a->root_keys, &a->root_key_count, value, name, err);
        else if (strcmp(name, "--manifest-key") == 0 || strcmp(name, "--add-manifest-key") == 0)
            rc = add_to(a->manifest_keys, &a->manifest_key_count, value, name, err);
        else if (strcmp(name, "--remove-root-key") == 0)
            rc = add_to(a->remove_root, &a->remove_root_count, value, name, err);
        else if (strcmp(name, "--remove-manifest-key") == 0)
            rc = add_to(a->remove_manifest, &a->remove_manifest_count, value, name, err);
        else if (strcmp(name, "--root-threshold") == 0)
            rc = threshold_of(value, name, &a->root_threshold, err);
        else if (strcmp(name, "--manifest-threshold") == 0)
            rc = threshold_of(value, name, &a->manifest_threshold, err);
        else if (strcmp(name, "--expires") == 0)
            a->expires = value;
        else if (strcmp(name, "--output") == 0)
            a->output = value;
        else if (strcmp(name, "--key") == 0)
            a->key = value;
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

/* A key file given on the command line: a PEM public key, or a signing key whose public half is used. */
static MUST_CHECK error_code load_key_file(const char *path, signkey **key, error_info *err)
{
    char *text = NULL;
    size_t len = 0;
    error_code rc = platform_read_file(path, 64 * 1024, &text, &len, err);
    if (rc != ERR_OK) {
        err->code = ERR_USAGE;
        return error_prefix(err, "cannot read the key file %s", path);
    }
    char source[600];
    snprintf(source, sizeof source, "key file %s", path);
    if (strstr(text, "PRIVATE KEY"))
        rc = signkey_parse_private(text, len, source, key, err);
    else
        rc = signkey_parse_public(text, key, err);
    dynbuf_wipe(text, len);
    free(text);
    if (rc != ERR_OK)
        return error_set(err, ERR_USAGE,
                         "%s is not a PEM P-256 public key or signing key (what `outpost keygen` wrote or printed)",
                         source);
    return ERR_OK;
}

static MUST_CHECK error_code expiry_of(const root_args *a, int64_t *expires_at, error_info *err)
{
    if (!a->expires)
        return error_set(err, ERR_USAGE, "--expires DURATION is needed (how long the root is valid: 365d)");
    int64_t seconds = 0;
    if (config_parse_duration(a->expires, &seconds, err) != ERR_OK || seconds <= 0) {
        err->code = ERR_USAGE;
        return error_set(err, ERR_USAGE, "--expires must be a duration such as 365d, not \"%s\"", a->expires);
    }
    *expires_at = platform_time_utc_ms() / 1000 + seconds;
    return ERR_OK;
}

static void free_keys(signkey **keys, size_t count)
{
    for (size_t i = 0; i < count; i++)
        signkey_free(keys[i]);
}

/* Writes text to a new file (never over one) and says what it is. */
static MUST_CHECK error_code write_root(const command_context *ctx, const char *path, const char *text, size_t len,
                                        const root_spec *spec, error_info *err)
{
    error_code rc = platform_write_new_file(path, text, len, false, err);
    if (rc != ERR_OK)
        return error_prefix(err, "cannot write %s", path);
    char at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(spec->expires_at, at);
    if (ctx->opts->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "file", path);
        cJSON_AddNumberToObject(o, "version", (double)spec->version);
        cJSON_AddStringToObject(o, "expires_at", at);
        cJSON_AddNumberToObject(o, "root_threshold", (double)spec->root_threshold);
        cJSON_AddNumberToObject(o, "manifest_threshold", (double)spec->manifest_threshold);
        command_print_json(o);
    } else if (ctx->opts->verbosity >= 0) {
        printf("wrote root version %lld to %s (unsigned; expires %s)\n", (long long)spec->version, path, at);
        printf("  root keys: %zu, threshold %zu; manifest keys: %zu, threshold %zu\n", spec->root_key_count,
               spec->root_threshold, spec->manifest_key_count, spec->manifest_threshold);
        printf("next: each root key holder runs `outpost root sign -k KEY %s`%s\n", path,
               spec->version > 1 ? " (holders of the previous version's root keys too)" : "");
    }
    return ERR_OK;
}

static MUST_CHECK error_code root_init(const command_context *ctx, error_info *err)
{
    root_args a;
    error_code rc =
        parse_args(ctx->opts, "init",
                   " --root-key --root-threshold --manifest-key --manifest-threshold --expires --output ", &a, err);
    if (rc != ERR_OK)
        return rc;
    if (a.file_count || !a.output || !a.root_key_count || !a.manifest_key_count || !a.root_threshold)
        return error_set(err, ERR_USAGE,
                         "usage: outpost root init --root-key FILE... --root-threshold N --manifest-key FILE... "
                         "[--manifest-threshold N] --expires DURATION -o OUT");
    signkey *rk[ROOT_MAX_KEYS] = {NULL}, *mk[ROOT_MAX_KEYS] = {NULL};
    size_t rn = 0, mn = 0;
    root_spec spec = {.version = 1,
                      .root_keys = rk,
                      .root_threshold = (size_t)a.root_threshold,
                      .manifest_keys = mk,
                      .manifest_threshold = a.manifest_threshold ? (size_t)a.manifest_threshold : 1};
    rc = expiry_of(&a, &spec.expires_at, err);
    for (size_t i = 0; rc == ERR_OK && i < a.root_key_count; i++, rn++)
        rc = load_key_file(a.root_keys[i], &rk[i], err);
    for (size_t i = 0; rc == ERR_OK && i < a.manifest_key_count; i++, mn++)
        rc = load_key_file(a.manifest_keys[i], &mk[i], err);
    spec.root_key_count = rn;
    spec.manifest_key_count = mn;
    char *text = NULL;
    size_t len = 0;
    if (rc == ERR_OK)
        rc = root_write_unsigned(&spec, &text, &len, err);
    if (rc == ERR_OK)
        rc = write_root(ctx, a.output, text, len, &spec, err);
    free(text);
    free_keys(rk, rn);
    free_keys(mk, mn);
    return rc;
}

static MUST_CHECK error_code read_root_file(const char *path, char **data, size_t *len, error_info *err)
{
    error_code rc = platform_read_file(path, ROOT_MAX_BYTES + 1, data, len, err);
    if (rc != ERR_OK) {
        err->code = rc == ERR_NOT_FOUND ? ERR_USAGE : rc;
        return error_prefix(err, "cannot read the root %s", path);
    }
    return ERR_OK;
}

static MUST_CHECK error_code root_sign(const command_context *ctx, error_info *err)
{
    root_args a;
    error_code rc = parse_args(ctx->opts, "sign", " --key ", &a, err);
    if (rc != ERR_OK)
        return rc;
    if (a.file_count != 1 || !a.key)
        return error_set(err, ERR_USAGE, "usage: outpost root sign -k KEY FILE");
    signkey *key = NULL;
    rc = signkey_load_private_file(a.key, &key, err);
    if (rc != ERR_OK) {
        /* signkey.c speaks of publish.signing_key_file; here the key is -k's. */
        static const char other[] = " (`publish.signing_key_file`)";
        char *at = strstr(err->message, other);
        if (at)
            memmove(at, at + sizeof other - 1, strlen(at + sizeof other - 1) + 1);
        return rc;
    }
    char *data = NULL;
    size_t len = 0;
    root r;
    envelope env;
    memset(&r, 0, sizeof r);
    memset(&env, 0, sizeof env);
    rc = read_root_file(a.files[0], &data, &len, err);
    if (rc == ERR_OK)
        rc = root_read_unverified(data, len, a.files[0], &r, err);
    if (rc == ERR_OK)
        rc = envelope_open(data, len, &env, err);
    if (rc == ERR_OK)
        rc = envelope_add_signature(&env, ROOT_CONTEXT, key, err);
    char *text = NULL;
    size_t text_len = 0;
    if (rc == ERR_OK)
        rc = envelope_write(&env, &text, &text_len, err);
    if (rc == ERR_OK && (rc = platform_write_atomic(a.files[0], text, text_len, err)) != ERR_OK)
        error_prefix(err, "cannot rewrite %s", a.files[0]);
    if (rc == ERR_OK) {
        size_t own = envelope_count(&env, ROOT_CONTEXT, r.root_keys, r.root_key_count, NULL, NULL);
        bool listed = false;
        for (size_t i = 0; i < r.root_key_count; i++)
            listed = listed || strcmp(signkey_id(r.root_keys[i]), signkey_id(key)) == 0;
        if (ctx->opts->json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "file", a.files[0]);
            cJSON_AddNumberToObject(o, "version", (double)r.version);
            cJSON_AddStringToObject(o, "key_id", signkey_id(key));
            cJSON_AddBoolToObject(o, "listed", listed);
            cJSON_AddNumberToObject(o, "own_signatures", (double)own);
            cJSON_AddNumberToObject(o, "root_threshold", (double)r.root_threshold);
            command_print_json(o);
        } else if (ctx->opts->verbosity >= 0) {
            printf("signed root version %lld in %s with key %s\n", (long long)r.version, a.files[0], signkey_id(key));
            printf("  signatures by its own root keys: %zu of the %zu needed%s\n", own, r.root_threshold,
                   listed ? "" : " (this key is not one of them: it counts only as a previous version's root key)");
        }
    }
    free(text);
    free(data);
    envelope_free(&env);
    root_free(&r);
    signkey_free(key);
    return rc;
}

/* Index of the key whose id is keyid (or starts with it, when that is unique); -1 when none. */
static int find_key(signkey *const *keys, size_t count, const char *keyid)
{
    int found = -1;
    size_t n = strlen(keyid);
    for (size_t i = 0; i < count; i++)
        if (keys[i] && text_equal_nocase_n(signkey_id(keys[i]), keyid, n)) {
            if (found >= 0)
                return -2;
            found = (int)i;
        }
    return found;
}

/* Drops the keys named in remove from keys (borrowed pointers: nothing is freed). */
static MUST_CHECK error_code drop_keys(signkey **keys, size_t *count, const char *const *remove, size_t remove_count,
                                       const char *what, error_info *err)
{
    for (size_t r = 0; r < remove_count; r++) {
        int at = find_key(keys, *count, remove[r]);
        if (at < 0)
            return error_set(err, ERR_USAGE, "%s %s: %s", what, remove[r],
                             at == -2 ? "names more than one key; give more of the key id"
                                      : "no such key in the root (`outpost root verify FILE` lists them)");
        memmove(&keys[at], &keys[at + 1], (*count - (size_t)at - 1) * sizeof *keys);
        (*count)--;
    }
    return ERR_OK;
}

static MUST_CHECK error_code root_next(const command_context *ctx, error_info *err)
{
    root_args a;
    error_code rc = parse_args(ctx->opts, "next",
                               " --add-root-key --remove-root-key --add-manifest-key --remove-manifest-key "
                               "--root-threshold --manifest-threshold --expires --output ",
                               &a, err);
    if (rc != ERR_OK)
        return rc;
    if (a.file_count != 1 || !a.output)
        return error_set(err, ERR_USAGE,
                         "usage: outpost root next FILE -o OUT --expires DURATION [--add-root-key FILE] "
                         "[--remove-root-key KEYID] [--add-manifest-key FILE] [--remove-manifest-key KEYID] "
                         "[--root-threshold N] [--manifest-threshold N]");
    char *data = NULL;
    size_t len = 0;
    root prev;
    memset(&prev, 0, sizeof prev);
    signkey *added[2 * ROOT_MAX_KEYS] = {NULL};
    size_t added_count = 0;
    signkey *rk[2 * ROOT_MAX_KEYS], *mk[2 * ROOT_MAX_KEYS];
    root_spec spec = {.root_keys = rk, .manifest_keys = mk};
    rc = expiry_of(&a, &spec.expires_at, err);
    if (rc == ERR_OK)
        rc = read_root_file(a.files[0], &data, &len, err);
    if (rc == ERR_OK)
        rc = root_read_unverified(data, len, a.files[0], &prev, err);
    if (rc == ERR_OK) {
        spec.version = prev.version + 1;
        memcpy(rk, prev.root_keys, prev.root_key_count * sizeof *rk);
        memcpy(mk, prev.manifest_keys, prev.manifest_key_count * sizeof *mk);
        spec.root_key_count = prev.root_key_count;
        spec.manifest_key_count = prev.manifest_key_count;
        rc = drop_keys(rk, &spec.root_key_count, a.remove_root, a.remove_root_count, "--remove-root-key", err);
    }
    if (rc == ERR_OK)
        rc = drop_keys(mk, &spec.manifest_key_count, a.remove_manifest, a.remove_manifest_count,
                       "--remove-manifest-key", err);
    for (size_t i = 0; rc == ERR_OK && i < a.root_key_count; i++)
        if ((rc = load_key_file(a.root_keys[i], &added[added_count], err)) == ERR_OK)
            rk[spec.root_key_count++] = added[added_count++];
    for (size_t i = 0; rc == ERR_OK && i < a.manifest_key_count; i++)
        if ((rc = load_key_file(a.manifest_keys[i], &added[added_count], err)) == ERR_OK)
            mk[spec.manifest_key_count++] = added[added_count++];
    spec.root_threshold = a.root_threshold ? (size_t)a.root_threshold : prev.root_threshold;
    spec.manifest_threshold = a.manifest_threshold ? (size_t)a.manifest_threshold : prev.manifest_threshold;
    char *text = NULL;
    size_t text_len = 0;
    if (rc == ERR_OK)
        rc = root_write_unsigned(&spec, &text, &text_len, err);
    if (rc == ERR_OK)
        rc = write_root(ctx, a.output, text, text_len, &spec, err);
    free(text);
    free(data);
    free_keys(added, added_count);
    root_free(&prev);
    return rc;
}

/* One line (or JSON entry) per root judged. */
static void say_root(const command_context *ctx, cJSON *list, const char *file, const root *r, const char *how,
                     const error_info *why)
{
    char at[TIMEFMT_ISO8601_SIZE] = "";
    if (r)
        timefmt_iso8601(r->expires_at, at);
    if (ctx->opts->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddBoolToObject(o, "ok", r != NULL);
        if (r) {
            cJSON_AddNumberToObject(o, "version", (double)r->version);
            cJSON_AddStringToObject(o, "expires_at", at);
            cJSON_AddNumberToObject(o, "root_threshold", (double)r->root_threshold);
            cJSON_AddNumberToObject(o, "manifest_threshold", (double)r->manifest_threshold);
            cJSON *ids = cJSON_AddArrayToObject(o, "manifest_keys");
            for (size_t i = 0; ids && i < r->manifest_key_count; i++)
                cJSON_AddItemToArray(ids, cJSON_CreateString(signkey_id(r->manifest_keys[i])));
            ids = cJSON_AddArrayToObject(o, "root_keys");
            for (size_t i = 0; ids && i < r->root_key_count; i++)
                cJSON_AddItemToArray(ids, cJSON_CreateString(signkey_id(r->root_keys[i])));
        } else {
            cJSON_AddStringToObject(o, "error", why->message);
        }
        cJSON_AddItemToArray(list, o);
        return;
    }
    if (!r) {
        printf("REFUSED: %s\n", why->message);
        return;
    }
    printf("%s: version %lld %s; expires %s\n", file, (long long)r->version, how, at);
    printf("  root keys (threshold %zu):", r->root_threshold);
    for (size_t i = 0; i < r->root_key_count; i++)
        printf(" %.16s", signkey_id(r->root_keys[i]));
    printf("\n  manifest keys (threshold %zu):", r->manifest_threshold);
    for (size_t i = 0; i < r->manifest_key_count; i++)
        printf(" %.16s", signkey_id(r->manifest_keys[i]));
    printf("\n");
}

static MUST_CHECK error_code root_verify(command_context *ctx, error_info *err)
{
    root_args a;
    error_code rc = parse_args(ctx->opts, "verify", " ", &a, err);
    if (rc != ERR_OK)
        return rc;
    if (a.file_count == 0)
        return error_set(err, ERR_USAGE, "usage: outpost root verify FILE... (the chain in order, oldest first)");
    cJSON *doc = ctx->opts->json ? cJSON_CreateObject() : NULL;
    cJSON *list = doc ? cJSON_AddArrayToObject(doc, "roots") : NULL;
    root trusted;
    memset(&trusted, 0, sizeof trusted);
    for (size_t i = 0; rc == ERR_OK && i < a.file_count; i++) {
        char *data = NULL;
        size_t len = 0;
        root r;
        rc = read_root_file(a.files[i], &data, &len, err);
        if (rc == ERR_OK)
            rc = i == 0 ? root_open_trusted(data, len, a.files[i], &r, err)
                        : root_open_next(&trusted, data, len, a.files[i], &r, err);
        free(data);
        if (rc != ERR_OK) {
            say_root(ctx, list, a.files[i], NULL, NULL, err);
            break;
        }
        char how[64];
        snprintf(how, sizeof how, i == 0 ? "trusted as given" : "follows version %lld", (long long)trusted.version);
        say_root(ctx, list, a.files[i], &r, how, NULL);
        root_free(&trusted);
        trusted = r;
    }
    if (rc == ERR_OK) {
        rc = root_check_expiry(&trusted, platform_time_utc_ms() / 1000, err);
        if (rc != ERR_OK && !doc)
            printf("%s\n", err->message);
    }
    if (doc) {
        cJSON_AddBoolToObject(doc, "ok", rc == ERR_OK);
        cJSON_AddNumberToObject(doc, "exit", error_exit_code(rc));
        if (rc != ERR_OK)
            cJSON_AddStringToObject(doc, "error", err->message);
        command_print_json(doc);
        /* One document on stdout, and the exit code an endpoint would have. */
        ctx->exit_code = error_exit_code(rc);
        rc = ERR_OK;
    }
    if (rc == ERR_OK && !ctx->opts->json && ctx->opts->verbosity >= 0)
        printf("OK: an endpoint trusting %s would trust version %lld\n", a.files[0], (long long)trusted.version);
    root_free(&trusted);
    return rc;
}

error_code command_root(command_context *ctx, error_info *err)
{
    const char *sub = ctx->opts->args[0];
    if (strcmp(sub, "init") == 0)
        return root_init(ctx, err);
    if (strcmp(sub, "sign") == 0)
        return root_sign(ctx, err);
    if (strcmp(sub, "next") == 0)
        return root_next(ctx, err);
    if (strcmp(sub, "verify") == 0)
        return root_verify(ctx, err);
    return error_set(err, ERR_USAGE, "root takes init, sign, next or verify, not \"%s\"", sub);
}
