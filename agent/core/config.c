/*
 * config.c — loads and validates outpost.json (PRODUCT.md section 2).
 *
 * One table per JSON object lists its keys, their types, ranges and where
 * they land in the config struct; a single walker applies it, so an unknown
 * key, a wrong type or an out-of-range value is reported the same way
 * everywhere, with the key's full dotted name.
 */
#include "core/config.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"
#include "base/text.h"
#include "platform/platform.h"

#define CONFIG_MAX_BYTES (1024 * 1024)
#define CONFIG_MAX_DEPTH 32

typedef enum {
    FIELD_STRING,         /* char *, null not allowed; min PATH_OR_URL: no control characters */
    FIELD_STRING_OR_NULL, /* char *, null leaves NULL */
    FIELD_BOOL,           /* bool */
    FIELD_INT,            /* int in [min, max] */
    FIELD_INT64,          /* int64_t in [min, max] */
    FIELD_DURATION,       /* int64_t seconds from "30s"/"15m"/"24h", in [min, max] */
    FIELD_SHA256,         /* char *, 64 hex digits or null; stored lower-case */
    FIELD_ARGV,           /* char ** + size_t count: array of at least min strings, or null */
    FIELD_JSON_OBJECT,    /* cJSON * (duplicated), object only */
    FIELD_STRING_LIST,    /* char ** + size_t count (its offset in min): array of non-empty strings, may be empty */
    FIELD_PERCENT,        /* double in [min, max], decimals allowed */
    FIELD_PROXY_AUTH,     /* config_proxy_auth from its name */
    FIELD_SECTION         /* nested object described by children */
} field_type;

/* In a string field's min: the value is a path or URL, which never holds a
 * control character (see no_controls). */
#define PATH_OR_URL 1

typedef struct field {
    const char *key;
    field_type type;
    size_t offset;                /* into config */
    int64_t min, max;             /* numeric types: the range; FIELD_ARGV: min = fewest
                                     entries, max = offset of the size_t count */
    const struct field *children; /* FIELD_SECTION only; ends with key NULL */
} field;

#define AT(member) offsetof(config, member)
#define END                                                                                                            \
    {                                                                                                                  \
        NULL, 0, 0, 0, 0, NULL                                                                                         \
    }

static const field tls_fields[] = {
    {"ca_file", FIELD_STRING_OR_NULL, AT(tls_ca_file), PATH_OR_URL, 0, NULL},
    {"pinned_public_key", FIELD_STRING_OR_NULL, AT(tls_pinned_public_key), PATH_OR_URL, 0, NULL},
    {"session_resumption", FIELD_BOOL, AT(tls_session_resumption), 0, 0, NULL},
    END,
};

static const field verify_fields[] = {
    {"require_signature", FIELD_BOOL, AT(installer.verify.require_signature), 0, 0, NULL},
    {"trusted_ca_file", FIELD_STRING_OR_NULL, AT(installer.verify.trusted_ca_file), PATH_OR_URL, 0, NULL},
    {"timestamp_ca_file", FIELD_STRING_OR_NULL, AT(installer.verify.timestamp_ca_file), PATH_OR_URL, 0, NULL},
    {"signer_subject", FIELD_STRING_OR_NULL, AT(installer.verify.signer_subject), 0, 0, NULL},
    {"signer_sha256", FIELD_STRING_LIST, AT(installer.verify.signer_sha256), AT(installer.verify.pin_count), 0, NULL},
    {"crl_files", FIELD_STRING_LIST, AT(installer.verify.crl_files), AT(installer.verify.crl_file_count), 0, NULL},
    {"expected_sha256", FIELD_SHA256, AT(installer.verify.expected_sha256), 0, 0, NULL},
    {"allow_sha1", FIELD_BOOL, AT(installer.verify.allow_sha1), 0, 0, NULL},
    {"require_version_match", FIELD_BOOL, AT(installer.verify.require_version_match), 0, 0, NULL},
    END,
};

static const field installer_fields[] = {
    {"enabled", FIELD_BOOL, AT(installer.enabled), 0, 0, NULL},
    {"target_version_prefix", FIELD_STRING_OR_NULL, AT(installer.target_version_prefix), 0, 0, NULL},
    {"defer_on", FIELD_STRING_LIST, AT(installer.defer_on), AT(installer.defer_on_count), 0, NULL},
    {"platform", FIELD_STRING, AT(installer.platform), 0, 0, NULL},
    {"installed_version", FIELD_STRING_OR_NULL, AT(installer.installed_version), 0, 0, NULL},
    {"installed_version_file", FIELD_STRING_OR_NULL, AT(installer.installed_version_file), PATH_OR_URL, 0, NULL},
    {"product_name", FIELD_STRING, AT(installer.product_name), 0, 0, NULL},
    {"keep_versions", FIELD_INT, AT(installer.keep_versions), 1, 100, NULL},
    {"max_bytes_per_second", FIELD_INT64, AT(installer.max_bytes_per_second), 0, INT64_MAX, NULL},
    {"verify", FIELD_SECTION, 0, 0, 0, verify_fields},
    END,
};

static const field deploy_fields[] = {
    {"enabled", FIELD_BOOL, AT(deploy.enabled), 0, 0, NULL},
    {"command", FIELD_ARGV, AT(deploy.command), 1, AT(deploy.command_count), NULL},
    {"pe_args", FIELD_ARGV, AT(deploy.pe_args), 0, AT(deploy.pe_args_count), NULL},
    {"timeout_s", FIELD_INT64, AT(deploy.timeout_s), 1, 7 * 24 * 3600, NULL},
    {"pass_reboot_code", FIELD_BOOL, AT(deploy.pass_reboot_code), 0, 0, NULL},
    {"windows", FIELD_STRING_LIST, AT(deploy.window_texts), AT(deploy.window_count), 0, NULL},
    END,
};

static const field report_fields[] = {
    {"enabled", FIELD_BOOL, AT(report.enabled), 0, 0, NULL},
    {"initial_lookback", FIELD_DURATION, AT(report.initial_lookback_s), 0, 366LL * 24 * 3600, NULL},
    {"filter", FIELD_JSON_OBJECT, AT(report.filter), 0, 0, NULL},
    {"page_size", FIELD_INT, AT(report.page_size), 1, 1000, NULL},
    {"details_batch", FIELD_INT, AT(report.details_batch), 1, 1000, NULL},
    {"keep_incidents", FIELD_INT, AT(report.keep_incidents), 0, 100000, NULL},
    {"status_file", FIELD_STRING, AT(report.status_file), PATH_OR_URL, 0, NULL},
    {"jsonl_file", FIELD_STRING, AT(report.jsonl_file), PATH_OR_URL, 0, NULL},
    {"jsonl_max_bytes", FIELD_INT64, AT(report.jsonl_max_bytes), 4096, INT64_MAX, NULL},
    {"jsonl_keep", FIELD_INT, AT(report.jsonl_keep), 1, 100, NULL},
    {"metrics_file", FIELD_STRING_OR_NULL, AT(report.metrics_file), PATH_OR_URL, 0, NULL},
    {"ocsf_file", FIELD_STRING_OR_NULL, AT(report.ocsf_file), PATH_OR_URL, 0, NULL},
    {"cef_file", FIELD_STRING_OR_NULL, AT(report.cef_file), PATH_OR_URL, 0, NULL},
    {"readers_group", FIELD_STRING_OR_NULL, AT(report.readers_group), PATH_OR_URL, 0, NULL},
    END,
};

static const field schedule_fields[] = {
    {"jitter", FIELD_DURATION, AT(jitter_s), 0, 24 * 3600, NULL},
    END,
};

static const field http_fields[] = {
    {"connect_timeout", FIELD_DURATION, AT(http.connect_timeout_s), 1, 3600, NULL},
    {"low_speed_timeout", FIELD_DURATION, AT(http.low_speed_time_s), 1, 3600, NULL},
    {"min_speed", FIELD_INT64, AT(http.min_speed), 1, 1024LL * 1024 * 1024, NULL},
    {"transfer_timeout", FIELD_DURATION, AT(http.transfer_timeout_s), 1, 7 * 24 * 3600, NULL},
    {"max_response_bytes", FIELD_INT64, AT(http.max_response_bytes), 1024, 1024LL * 1024 * 1024, NULL},
    {"max_attempts", FIELD_INT, AT(http.max_attempts), 1, 20, NULL},
    {"max_retry_wait", FIELD_DURATION, AT(http.max_retry_wait_s), 0, 24 * 3600, NULL},
    {"rate_limit_per_minute", FIELD_INT, AT(http.rate_limit_per_minute), 1, 1000000, NULL},
    {"max_in_flight", FIELD_INT, AT(http.max_in_flight), 1, 5, NULL},
    END,
};

static const field mirror_fields[] = {
    {"urls", FIELD_STRING_LIST, AT(mirror.urls), AT(mirror.url_count), 0, NULL},
    {"public_keys", FIELD_STRING_LIST, AT(mirror.public_keys), AT(mirror.public_key_count), 0, NULL},
    {"root_file", FIELD_STRING_OR_NULL, AT(mirror.root_file), PATH_OR_URL, 0, NULL},
    {"channel", FIELD_STRING, AT(mirror.channel), 0, 0, NULL},
    {"machine_id", FIELD_STRING_OR_NULL, AT(mirror.machine_id), 0, 0, NULL},
    END,
};

static const field publish_fields[] = {
    {"dir", FIELD_STRING_OR_NULL, AT(publish.dir), PATH_OR_URL, 0, NULL},
    {"signing_key_file", FIELD_STRING_OR_NULL, AT(publish.signing_key_file), PATH_OR_URL, 0, NULL},
    {"roots_dir", FIELD_STRING_OR_NULL, AT(publish.roots_dir), PATH_OR_URL, 0, NULL},
    {"channel", FIELD_STRING, AT(publish.channel), 0, 0, NULL},
    {"expires", FIELD_DURATION, AT(publish.expires_s), 3600, 366LL * 24 * 3600, NULL},
    {"rollout_percent", FIELD_PERCENT, AT(publish.rollout_percent), 0, 100, NULL},
    {"keep_installers", FIELD_INT, AT(publish.keep_installers), 1, 100, NULL},
    END,
};

/* The log's size bounds: a line or two at least; at most a size a
 * scheduled task's log never needs (keep + 1 files of it stay on disk). */
#define LOG_MIN_BYTES 4096
#define LOG_MAX_BYTES (1024LL * 1024 * 1024)

static const field log_fields[] = {
    {"file", FIELD_STRING_OR_NULL, AT(log.file), PATH_OR_URL, 0, NULL},
    {"max_bytes", FIELD_INT64, AT(log.max_bytes), LOG_MIN_BYTES, LOG_MAX_BYTES, NULL},
    {"keep", FIELD_INT, AT(log.keep), 1, 100, NULL},
    END,
};

static const field status_fields[] = {
    {"max_age", FIELD_DURATION, AT(status.max_age_s), 60, 366LL * 24 * 3600, NULL},
    {"max_failing", FIELD_DURATION, AT(status.max_failing_s), 60, 366LL * 24 * 3600, NULL},
    END,
};

static const field top_fields[] = {
    {"base_url", FIELD_STRING_OR_NULL, AT(base_url), PATH_OR_URL, 0, NULL},
    {"api_key_file", FIELD_STRING_OR_NULL, AT(api_key_file), PATH_OR_URL, 0, NULL},
    {"state_dir", FIELD_STRING, AT(state_dir), PATH_OR_URL, 0, NULL},
    {"tls", FIELD_SECTION, 0, 0, 0, tls_fields},
    {"proxy", FIELD_STRING_OR_NULL, AT(proxy), PATH_OR_URL, 0, NULL},
    {"proxy_auth", FIELD_PROXY_AUTH, AT(proxy_auth), 0, 0, NULL},
    {"proxy_keytab", FIELD_STRING_OR_NULL, AT(proxy_keytab), PATH_OR_URL, 0, NULL},
    {"installer", FIELD_SECTION, 0, 0, 0, installer_fields},
    {"deploy", FIELD_SECTION, 0, 0, 0, deploy_fields},
    {"report", FIELD_SECTION, 0, 0, 0, report_fields},
    {"schedule", FIELD_SECTION, 0, 0, 0, schedule_fields},
    {"http", FIELD_SECTION, 0, 0, 0, http_fields},
    {"mirror", FIELD_SECTION, 0, 0, 0, mirror_fields},
    {"publish", FIELD_SECTION, 0, 0, 0, publish_fields},
    {"log", FIELD_SECTION, 0, 0, 0, log_fields},
    {"status", FIELD_SECTION, 0, 0, 0, status_fields},
    END,
};

error_code config_init_defaults(config *cfg, error_info *err)
{
    static const char *const default_pe_args[] = {"/quiet", "/norestart"};
    const size_t default_count = sizeof default_pe_args / sizeof default_pe_args[0];

    memset(cfg, 0, sizeof *cfg);
    cfg->state_dir = platform_default_state_dir();
    cfg->proxy_auth = CONFIG_PROXY_AUTH_AUTO;
    cfg->installer.enabled = true;
    cfg->installer.platform = text_dup("windows");
    cfg->installer.product_name = text_dup("Security Platform Sensor");
    cfg->installer.keep_versions = 2;
    cfg->installer.verify.require_signature = true;
    cfg->tls_session_resumption = true;
    cfg->installer.verify.trusted_ca_file = text_dup("/etc/outpost/publisher-ca.pem");
    cfg->deploy.enabled = false;
    cfg->deploy.timeout_s = 1800;
    cfg->deploy.pe_args = calloc(default_count + 1, sizeof(char *));
    cfg->report.enabled = true;
    cfg->report.initial_lookback_s = 24 * 3600;
    cfg->report.filter = cJSON_CreateObject();
    cfg->report.page_size = 1000;
    cfg->report.details_batch = 50;
    cfg->report.keep_incidents = 200;
    cfg->report.status_file = text_dup("status.json");
    cfg->report.jsonl_file = text_dup("incidents.jsonl");
    cfg->report.jsonl_max_bytes = 64LL * 1024 * 1024;
    cfg->report.jsonl_keep = 5;
    cfg->status.max_age_s = 3 * 3600; /* 3 x the shipped timer's hour */
    cfg->status.max_failing_s = 24 * 3600;
    cfg->http.connect_timeout_s = 30;
    cfg->http.low_speed_time_s = 60;
    cfg->http.min_speed = 1024;
    cfg->http.transfer_timeout_s = 600;
    cfg->http.max_response_bytes = 64LL * 1024 * 1024;
    cfg->http.max_attempts = 5;
    cfg->http.max_retry_wait_s = 300;
    cfg->http.rate_limit_per_minute = 60;
    cfg->http.max_in_flight = 5;
    cfg->jitter_s = 0;
    cfg->mirror.channel = text_dup("stable");
    cfg->publish.channel = text_dup("stable");
    cfg->publish.expires_s = 14LL * 24 * 3600;
    cfg->publish.rollout_percent = 100;
    cfg->publish.keep_installers = 3;
    cfg->log.max_bytes = 1024 * 1024;
    cfg->log.keep = 3;

    bool ok = cfg->mirror.channel && cfg->publish.channel && cfg->state_dir && cfg->installer.platform &&
              cfg->installer.product_name && cfg->installer.verify.trusted_ca_file && cfg->deploy.pe_args &&
              cfg->report.filter && cfg->report.status_file && cfg->report.jsonl_file;
    if (ok) {
        for (size_t i = 0; i < default_count && ok; i++) {
            cfg->deploy.pe_args[i] = text_dup(default_pe_args[i]);
            ok = cfg->deploy.pe_args[i] != NULL;
        }
        cfg->deploy.pe_args_count = default_count;
    }
    return ok ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory while setting configuration defaults");
}

void config_free(config *cfg)
{
    if (!cfg)
        return;
    free(cfg->path);
    free(cfg->base_url);
    free(cfg->api_key_file);
    free(cfg->state_dir);
    free(cfg->tls_ca_file);
    free(cfg->tls_pinned_public_key);
    dynbuf_secret_free(cfg->proxy); /* may hold proxy credentials */
    free(cfg->proxy_keytab);
    free(cfg->installer.platform);
    free(cfg->installer.target_version_prefix);
    platform_free_names(cfg->installer.defer_on, cfg->installer.defer_on_count);
    platform_free_names(cfg->deploy.window_texts, cfg->deploy.window_count);
    free(cfg->deploy.windows);
    free(cfg->installer.installed_version);
    free(cfg->installer.installed_version_file);
    free(cfg->installer.product_name);
    free(cfg->installer.verify.trusted_ca_file);
    free(cfg->installer.verify.timestamp_ca_file);
    free(cfg->installer.verify.signer_subject);
    free(cfg->installer.verify.expected_sha256);
    platform_free_names(cfg->installer.verify.signer_sha256, cfg->installer.verify.pin_count);
    platform_free_names(cfg->installer.verify.crl_files, cfg->installer.verify.crl_file_count);
    platform_free_names(cfg->deploy.command, cfg->deploy.command_count);
    platform_free_names(cfg->deploy.pe_args, cfg->deploy.pe_args_count);
    cJSON_Delete(cfg->report.filter);
    free(cfg->report.status_file);
    free(cfg->report.jsonl_file);
    free(cfg->report.metrics_file);
    free(cfg->report.ocsf_file);
    free(cfg->report.cef_file);
    free(cfg->report.readers_group);
    platform_free_names(cfg->mirror.urls, cfg->mirror.url_count);
    platform_free_names(cfg->mirror.public_keys, cfg->mirror.public_key_count);
    free(cfg->mirror.channel);
    free(cfg->mirror.machine_id);
    free(cfg->mirror.root_file);
    free(cfg->publish.dir);
    free(cfg->publish.signing_key_file);
    free(cfg->publish.roots_dir);
    free(cfg->publish.channel);
    free(cfg->log.file);
    memset(cfg, 0, sizeof *cfg);
}

error_code config_parse_duration(const char *text, int64_t *seconds, error_info *err)
{
    const char *p = text;
    int64_t value = 0;
    if (!isdigit((unsigned char)*p))
        return error_set(err, ERR_CONFIG,
                         "\"%s\" is not a duration (a number and s, m, h or d, such as 30s, 15m, 24h, 14d)", text);
    while (isdigit((unsigned char)*p)) {
        if (value > (INT64_MAX - 9) / 10 / (24 * 3600))
            return error_set(err, ERR_CONFIG, "duration \"%s\" is too large", text);
        value = value * 10 + (*p++ - '0');
    }
    int64_t unit;
    switch (*p) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 24 * 3600; break;
    default:
        return error_set(err, ERR_CONFIG,
                         "\"%s\" is not a duration (a number and s, m, h or d, such as 30s, 15m, 24h, 14d)", text);
    }
    if (p[1] != '\0')
        return error_set(err, ERR_CONFIG, "\"%s\" is not a duration (a number and one unit: s, m, h or d)", text);
    *seconds = value * unit;
    return ERR_OK;
}

static const char *json_type_name(const cJSON *item)
{
    if (cJSON_IsNull(item))
        return "null";
    if (cJSON_IsBool(item))
        return "a boolean";
    if (cJSON_IsNumber(item))
        return "a number";
    if (cJSON_IsString(item))
        return "a string";
    if (cJSON_IsArray(item))
        return "an array";
    if (cJSON_IsObject(item))
        return "an object";
    return "invalid";
}

static MUST_CHECK error_code wrong_type(error_info *err, const char *source, const char *key, const char *want,
                                        const cJSON *got)
{
    return error_set(err, ERR_CONFIG, "%s: `%s` must be %s, not %s", source, key, want, json_type_name(got));
}

static MUST_CHECK error_code apply_number(const field *f, const cJSON *item, char *base, const char *source,
                                          const char *key, error_info *err)
{
    if (!cJSON_IsNumber(item))
        return wrong_type(err, source, key, "a whole number", item);
    double d = item->valuedouble;
    /* The range first: converting a double beyond int64_t (1e300) is undefined. */
    if (!(d >= (double)f->min && d <= (double)f->max && d < 9223372036854775808.0) || d != (double)(int64_t)d) {
        if (f->max == INT64_MAX)
            return error_set(err, ERR_CONFIG, "%s: `%s` must be a whole number of at least %lld", source, key,
                             (long long)f->min);
        return error_set(err, ERR_CONFIG, "%s: `%s` must be a whole number from %lld to %lld", source, key,
                         (long long)f->min, (long long)f->max);
    }
    if (f->type == FIELD_INT)
        *(int *)(base + f->offset) = (int)d;
    else
        *(int64_t *)(base + f->offset) = (int64_t)d;
    return ERR_OK;
}

/*
 * No configured path, URL or name holds a control character; one there is
 * nearly always a JSON escape the writer did not mean: "C:\temp\new" is
 * C:, a tab, "emp", a newline and "ew".
 */
static MUST_CHECK error_code no_controls(const char *s, const char *source, const char *key, error_info *err)
{
    for (size_t i = 0; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return error_set(err, ERR_CONFIG,
                             "%s: `%s` contains a control character (0x%02x at position %zu); in a Windows path "
                             "write `\\\\` or `/` (\"C:\\\\temp\\\\new\" or \"C:/temp/new\"): a single "
                             "backslash starts a JSON escape such as \\t or \\n",
                             source, key, c, i + 1);
    }
    return ERR_OK;
}

static MUST_CHECK error_code apply_string(const field *f, const cJSON *item, char *base, const char *source,
                                          const char *key, error_info *err)
{
    char **slot = (char **)(base + f->offset);
    if (cJSON_IsNull(item) && f->type != FIELD_STRING) {
        free(*slot);
        *slot = NULL;
        return ERR_OK;
    }
    if (!cJSON_IsString(item))
        return wrong_type(err, source, key, f->type == FIELD_STRING ? "a string" : "a string or null", item);
    const char *s = item->valuestring;
    if (f->type == FIELD_STRING && s[0] == '\0')
        return error_set(err, ERR_CONFIG, "%s: `%s` must not be empty", source, key);
    error_code rc = f->min == PATH_OR_URL ? no_controls(s, source, key, err) : ERR_OK;
    if (rc != ERR_OK)
        return rc;
    if (f->type == FIELD_SHA256) {
        if (!text_is_hex(s, 64, false))
            return error_set(err, ERR_CONFIG, "%s: `%s` must be 64 hexadecimal digits (a SHA-256)", source, key);
    }
    char *copy = text_dup(s);
    if (!copy)
        return error_set(err, ERR_NOMEM, "out of memory reading %s", key);
    if (f->type == FIELD_SHA256)
        for (char *c = copy; *c; c++)
            *c = (char)tolower((unsigned char)*c);
    free(*slot);
    *slot = copy;
    return ERR_OK;
}

static MUST_CHECK error_code apply_argv(const field *f, const cJSON *item, char *base, const char *source,
                                        const char *key, error_info *err)
{
    char ***slot = (char ***)(base + f->offset);
    size_t *count = (size_t *)(base + f->max);
    if (cJSON_IsNull(item)) {
        platform_free_names(*slot, *count);
        *slot = NULL;
        *count = 0;
        return ERR_OK;
    }
    int n = cJSON_IsArray(item) ? cJSON_GetArraySize(item) : -1;
    if (n < f->min) {
        if (f->min > 0)
            return error_set(err, ERR_CONFIG,
                             "%s: `%s` must be a non-empty array of strings (the program and its arguments) or null",
                             source, key);
        return error_set(err, ERR_CONFIG, "%s: `%s` must be an array of strings", source, key);
    }
    char **argv = calloc((size_t)n + 1, sizeof(char *));
    if (!argv)
        return error_set(err, ERR_NOMEM, "out of memory reading %s", key);
    int i = 0;
    const cJSON *arg;
    cJSON_ArrayForEach(arg, item)
    {
        bool program = i == 0 && f->min > 0;
        if (!cJSON_IsString(arg) || (program && arg->valuestring[0] == '\0')) {
            platform_free_names(argv, (size_t)i);
            return error_set(err, ERR_CONFIG, "%s: `%s[%d]` must be a%s string", source, key, i,
                             program ? " non-empty" : "");
        }
        if (!(argv[i++] = text_dup(arg->valuestring))) {
            platform_free_names(argv, (size_t)i);
            return error_set(err, ERR_NOMEM, "out of memory reading %s", key);
        }
    }
    platform_free_names(*slot, *count);
    *slot = argv;
    *count = (size_t)n;
    return ERR_OK;
}

static MUST_CHECK error_code apply_fields(const field *fields, const cJSON *object, config *cfg, const char *prefix,
                                          const char *source, error_info *err);

/* An array of non-empty strings (mirror.urls, mirror.public_keys); the
 * count lives at offset f->min. Empty is allowed: it means "none". */
static MUST_CHECK error_code apply_string_list(const field *f, const cJSON *item, char *base, const char *source,
                                               const char *key, error_info *err)
{
    if (!cJSON_IsArray(item))
        return wrong_type(err, source, key, "an array of strings", item);
    int n = cJSON_GetArraySize(item);
    char **list = calloc((size_t)n + 1, sizeof(char *));
    if (!list)
        return error_set(err, ERR_NOMEM, "out of memory reading %s", key);
    int i = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, item)
    {
        if (!cJSON_IsString(entry) || !entry->valuestring[0]) {
            platform_free_names(list, (size_t)i);
            return error_set(err, ERR_CONFIG, "%s: `%s[%d]` must be a non-empty string", source, key, i);
        }
        if (!(list[i++] = text_dup(entry->valuestring))) {
            platform_free_names(list, (size_t)i);
            return error_set(err, ERR_NOMEM, "out of memory reading %s", key);
        }
    }
    char ***slot = (char ***)(base + f->offset);
    size_t *count = (size_t *)(base + (size_t)f->min);
    platform_free_names(*slot, *count);
    *slot = list;
    *count = (size_t)n;
    return ERR_OK;
}

static MUST_CHECK error_code apply_field(const field *f, const cJSON *item, config *cfg, const char *key,
                                         const char *source, error_info *err)
{
    char *base = (char *)cfg;
    switch (f->type) {
    case FIELD_STRING:
    case FIELD_STRING_OR_NULL:
    case FIELD_SHA256: return apply_string(f, item, base, source, key, err);
    case FIELD_BOOL:
        if (!cJSON_IsBool(item))
            return wrong_type(err, source, key, "true or false", item);
        *(bool *)(base + f->offset) = cJSON_IsTrue(item);
        return ERR_OK;
    case FIELD_INT:
    case FIELD_INT64: return apply_number(f, item, base, source, key, err);
    case FIELD_DURATION: {
        if (!cJSON_IsString(item))
            return wrong_type(err, source, key, "a duration string such as \"30s\", \"15m\" or \"24h\"", item);
        int64_t seconds;
        if (config_parse_duration(item->valuestring, &seconds, err) != ERR_OK)
            return error_prefix(err, "%s: `%s`", source, key);
        if (seconds < f->min || seconds > f->max)
            return error_set(err, ERR_CONFIG, "%s: `%s` must be from %llds to %llds", source, key, (long long)f->min,
                             (long long)f->max);
        *(int64_t *)(base + f->offset) = seconds;
        return ERR_OK;
    }
    case FIELD_ARGV: return apply_argv(f, item, base, source, key, err);
    case FIELD_STRING_LIST: return apply_string_list(f, item, base, source, key, err);
    case FIELD_PERCENT:
        if (!cJSON_IsNumber(item) || !(item->valuedouble >= (double)f->min && item->valuedouble <= (double)f->max))
            return error_set(err, ERR_CONFIG, "%s: `%s` must be a number from %lld to %lld (decimals allowed)", source,
                             key, (long long)f->min, (long long)f->max);
        *(double *)(base + f->offset) = item->valuedouble;
        return ERR_OK;
    case FIELD_JSON_OBJECT: {
        if (!cJSON_IsObject(item))
            return wrong_type(err, source, key, "an object", item);
        cJSON *copy = cJSON_Duplicate(item, 1);
        if (!copy)
            return error_set(err, ERR_NOMEM, "out of memory reading %s", key);
        cJSON **slot = (cJSON **)(base + f->offset);
        cJSON_Delete(*slot);
        *slot = copy;
        return ERR_OK;
    }
    case FIELD_PROXY_AUTH: {
        static const char *const names[] = {"auto", "negotiate", "ntlm", "basic", "none"};
        for (size_t i = 0; cJSON_IsString(item) && i < sizeof names / sizeof names[0]; i++)
            if (strcmp(item->valuestring, names[i]) == 0) {
                *(config_proxy_auth *)(base + f->offset) = (config_proxy_auth)i;
                return ERR_OK;
            }
        return error_set(err, ERR_CONFIG, "%s: `%s` must be \"auto\", \"negotiate\", \"ntlm\", \"basic\" or \"none\"",
                         source, key);
    }
    case FIELD_SECTION:
        if (!cJSON_IsObject(item))
            return wrong_type(err, source, key, "an object", item);
        return apply_fields(f->children, item, cfg, key, source, err);
    }
    return error_set(err, ERR_INTERNAL, "unhandled configuration field type for %s", key);
}

static MUST_CHECK error_code apply_fields(const field *fields, const cJSON *object, config *cfg, const char *prefix,
                                          const char *source, error_info *err)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, object)
    {
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "", item->string);
        const field *f = fields;
        while (f->key && strcmp(f->key, item->string) != 0)
            f++;
        if (!f->key)
            return error_set(err, ERR_CONFIG, "%s: unknown key `%s` (check its spelling against the README)", source,
                             key);
        error_code rc = apply_field(f, item, cfg, key, source, err);
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

static bool url_host_is_loopback(const char *url)
{
    const char *host = strstr(url, "://");
    if (!host)
        return false;
    host += 3;
    const char *at = strpbrk(host, "@/");
    if (at && *at == '@')
        host = at + 1;
    size_t len;
    if (host[0] == '[') {
        const char *close = strchr(host, ']');
        if (!close)
            return false;
        host++;
        len = (size_t)(close - host);
        return len == 3 && strncmp(host, "::1", 3) == 0;
    }
    len = strcspn(host, ":/?#");
    if (len == 9 && text_equal_nocase_n(host, "localhost", 9))
        return true;
    if (len > 10 && text_equal_nocase_n(host + len - 10, ".localhost", 10))
        return true;
    if (len >= 4 && strncmp(host, "127.", 4) == 0) {
        for (size_t i = 4; i < len; i++)
            if (!isdigit((unsigned char)host[i]) && host[i] != '.')
                return false;
        return true;
    }
    return false;
}

static MUST_CHECK error_code check_base_url(config *cfg, const char *source, error_info *err)
{
    char *url = cfg->base_url;
    if (!url)
        return ERR_OK;
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        url[--n] = '\0';
    if (text_equal_nocase_n(url, "https://", 8) && n > 8)
        return ERR_OK;
    if (text_equal_nocase_n(url, "http://", 7) && n > 7) {
        if (url_host_is_loopback(url))
            return ERR_OK;
        return error_set(
            err, ERR_CONFIG,
            "%s: `base_url` %s uses http:// to a host that is not loopback; use https:// (plain HTTP is only for "
            "127.0.0.1, ::1 and localhost)",
            source, url);
    }
    return error_set(err, ERR_CONFIG, "%s: `base_url` must be an https:// URL, got \"%s\"", source, url);
}

/* The line (from 1) of the first backslash in a JSON string that starts no
 * valid escape ("C:\ProgramData"), or 0. */
static size_t bad_escape_line(const char *text, size_t len)
{
    size_t line = 1;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\n')
            line++;
        if (c == '"') {
            in_string = !in_string;
        } else if (in_string && c == '\\') {
            if (i + 1 >= len || !strchr("\"\\/bfnrtu", text[i + 1]) || text[i + 1] == '\0')
                return line;
            i++;
        }
    }
    return 0;
}

/* mirror.urls: https://, http:// (anywhere: the signature, not the
 * transport, carries the trust) or file://. */
static MUST_CHECK error_code check_mirror_urls(const config *cfg, const char *source, error_info *err)
{
    for (size_t i = 0; i < cfg->mirror.url_count; i++) {
        const char *url = cfg->mirror.urls[i];
        char key[48];
        snprintf(key, sizeof key, "mirror.urls[%zu]", i);
        error_code rc = no_controls(url, source, key, err);
        if (rc != ERR_OK)
            return rc;
        /* file://host/path names a host: on Windows a UNC share
         * (file://server/share/), elsewhere a mistake: "file://tmp/x" meant /tmp/x. */
        if (platform_path_separator() == '/' && text_equal_nocase_n(url, "file://", 7) && url[7] && url[7] != '/' &&
            !text_equal_nocase_n(url + 7, "localhost/", 10))
            return error_set(err, ERR_CONFIG,
                             "%s: `%s` is \"%s\", which names the host \"%.*s\"; a local directory takes three "
                             "slashes: file:///%s",
                             source, key, url, (int)strcspn(url + 7, "/"), url + 7, url + 7);
        if ((text_equal_nocase_n(url, "https://", 8) && url[8]) || (text_equal_nocase_n(url, "http://", 7) && url[7]) ||
            (text_equal_nocase_n(url, "file://", 7) && url[7]))
            continue;
        if (url[0] == '/' || (isalpha((unsigned char)url[0]) && url[1] == ':'))
            return error_set(err, ERR_CONFIG,
                             "%s: `%s` must be a URL, got the path \"%s\"; for a local directory write "
                             "file://%s%s",
                             source, key, url, url[0] == '/' ? "" : "/", url);
        char *shown = text_url_redact(url); /* the error is printed: never a password */
        error_set(err, ERR_CONFIG, "%s: `%s` must be an https://, http:// or file:// URL, got \"%s\"", source, key,
                  shown ? shown : "(out of memory)");
        free(shown);
        return ERR_CONFIG;
    }
    return ERR_OK;
}

/* installer.verify.signer_sha256: 64 hex digits each, stored lower-case. */
static MUST_CHECK error_code check_signer_pins(const config *cfg, const char *source, error_info *err)
{
    for (size_t i = 0; i < cfg->installer.verify.pin_count; i++) {
        char *pin = cfg->installer.verify.signer_sha256[i];
        size_t n = strspn(pin, "0123456789abcdefABCDEF");
        if (n != 64 || pin[n])
            return error_set(err, ERR_CONFIG,
                             "%s: `installer.verify.signer_sha256[%zu]` must be a certificate's SHA-256 (64 hex "
                             "digits), got \"%.80s\"",
                             source, i, pin);
        for (char *p = pin; *p; p++)
            if (*p >= 'A' && *p <= 'F')
                *p = (char)(*p - 'A' + 'a');
    }
    return ERR_OK;
}

/* ---- The fleet policy's keys (PRODUCT.md section 11) ----------------------------------- */

/* A day's name at *p (three letters or the whole name, any case); its
 * number (0 Sunday .. 6 Saturday) and *p moved past it, or -1. */
static int parse_day(const char **p)
{
    static const char *const names[] = {"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"};
    size_t n = 0;
    while (isalpha((unsigned char)(*p)[n]))
        n++;
    for (int d = 0; d < 7; d++) {
        if ((n == 3 || n == strlen(names[d])) && text_equal_nocase_n(*p, names[d], n)) {
            *p += n;
            return d;
        }
    }
    return -1;
}

/* H:MM or HH:MM at *p into minutes after midnight (24:00 only when allow_24); -1 if it is not one. */
static int parse_clock(const char **p, bool allow_24)
{
    const char *c = *p;
    int hours = 0, digits = 0;
    while (isdigit((unsigned char)*c) && digits < 2) {
        hours = hours * 10 + (*c++ - '0');
        digits++;
    }
    if (digits == 0 || *c != ':' || !isdigit((unsigned char)c[1]) || !isdigit((unsigned char)c[2]))
        return -1;
    int minutes = (c[1] - '0') * 10 + (c[2] - '0');
    if (minutes > 59 || hours > 24 || (hours == 24 && (minutes != 0 || !allow_24)))
        return -1;
    *p = c + 3;
    return hours * 60 + minutes;
}

static const char *skip_spaces(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* The days part of a window: "daily", or days and ranges joined by commas. */
static MUST_CHECK error_code parse_days(const char **at, uint8_t *days, error_info *err)
{
    const char *p = *at;
    *days = 0;
    if (text_equal_nocase_n(p, "daily", 5) && !isalpha((unsigned char)p[5])) {
        *days = 0x7f;
        *at = p + 5;
        return ERR_OK;
    }
    for (;;) {
        const char *word = p;
        int first = parse_day(&p);
        if (first < 0)
            return error_set(err, ERR_CONFIG, "\"%.*s\" is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun, or daily)",
                             (int)strcspn(word, " \t,-"), word);
        int last = first;
        if (*p == '-' && isalpha((unsigned char)p[1])) {
            word = ++p;
            last = parse_day(&p);
            if (last < 0)
                return error_set(err, ERR_CONFIG, "\"%.*s\" is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)",
                                 (int)strcspn(word, " \t,-"), word);
        }
        for (int d = first;; d = (d + 1) % 7) { /* a range may wrap: Fri-Mon */
            *days |= (uint8_t)(1u << d);
            if (d == last)
                break;
        }
        const char *after = skip_spaces(p);
        if (*after != ',')
            break;
        p = skip_spaces(after + 1);
    }
    *at = p;
    return ERR_OK;
}

error_code config_parse_window(const char *text, config_window *out, error_info *err)
{
    const char *p = skip_spaces(text);
    config_window w = {0};
    error_code rc = parse_days(&p, &w.days, err);
    if (rc != ERR_OK)
        return rc;
    if (*p != ' ' && *p != '\t')
        return error_set(err, ERR_CONFIG, "the days must be followed by a space and a time range such as 22:00-05:00");
    p = skip_spaces(p);
    const char *times = p;
    w.start_min = parse_clock(&p, false);
    p = skip_spaces(p);
    if (w.start_min >= 0 && *p == '-') {
        p = skip_spaces(p + 1);
        w.end_min = parse_clock(&p, true);
    } else {
        w.end_min = -1;
    }
    if (w.start_min < 0 || w.end_min < 0 || *skip_spaces(p) != '\0')
        return error_set(err, ERR_CONFIG,
                         "\"%s\" is not a time range: write HH:MM-HH:MM in local time, from 00:00 to 24:00 "
                         "(22:00-05:00 runs past midnight into the next day)",
                         times);
    if (w.start_min == w.end_min)
        return error_set(err, ERR_CONFIG, "the window starts and ends at the same time; a whole day is 00:00-24:00");
    *out = w;
    return ERR_OK;
}

/* installer.target_version_prefix, installer.defer_on and deploy.windows:
 * what the policy reads, judged here so that a mistake is exit 2 naming it. */
static MUST_CHECK error_code check_policy(config *cfg, const char *source, error_info *err)
{
    const char *prefix = cfg->installer.target_version_prefix;
    if (prefix && (!prefix[0] || strlen(prefix) > 64 ||
                   strspn(prefix, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "abcdefghijklmnopqrstuvwxyz.+-") != strlen(prefix)))
        return error_set(err, ERR_CONFIG,
                         "%s: `installer.target_version_prefix` must be the start of a version (1 to 64 of 0-9 A-Z "
                         "a-z . + -, such as \"26.1.\") or null, got \"%.80s\"",
                         source, prefix);
    cfg->installer.defer_metered = cfg->installer.defer_battery = false;
    for (size_t i = 0; i < cfg->installer.defer_on_count; i++) {
        const char *what = cfg->installer.defer_on[i];
        if (strcmp(what, "metered") == 0)
            cfg->installer.defer_metered = true;
        else if (strcmp(what, "battery") == 0)
            cfg->installer.defer_battery = true;
        else
            return error_set(err, ERR_CONFIG,
                             "%s: `installer.defer_on[%zu]` is \"%.80s\"; it may hold \"metered\" and \"battery\"",
                             source, i, what);
    }
    free(cfg->deploy.windows);
    cfg->deploy.windows = NULL;
    if (cfg->deploy.window_count == 0)
        return ERR_OK;
    cfg->deploy.windows = calloc(cfg->deploy.window_count, sizeof *cfg->deploy.windows);
    if (!cfg->deploy.windows)
        return error_set(err, ERR_NOMEM, "out of memory reading deploy.windows");
    for (size_t i = 0; i < cfg->deploy.window_count; i++) {
        error_info why;
        if (config_parse_window(cfg->deploy.window_texts[i], &cfg->deploy.windows[i], &why) != ERR_OK)
            return error_set(err, ERR_CONFIG,
                             "%s: `deploy.windows[%zu]` \"%.80s\" is not a maintenance window: %s; write days and "
                             "local times such as \"Mon-Fri 22:00-05:00\", \"Sat 01:00-06:00\" or \"daily "
                             "02:00-04:00\"",
                             source, i, cfg->deploy.window_texts[i], why.message);
    }
    return ERR_OK;
}

/* proxy: "system", "direct", or one proxy as libcurl takes it (a URL of
 * http, https, socks4, socks4a, socks5 or socks5h, or host:port for
 * http). The value may hold a password: an error never prints it. */
static MUST_CHECK error_code check_proxy(const config *cfg, const char *source, error_info *err)
{
    if (cfg->proxy_keytab && !cfg->proxy_keytab[0])
        return error_set(err, ERR_CONFIG,
                         "%s: `proxy_keytab` is empty; name a Kerberos client keytab (e.g. /etc/krb5.keytab) or use "
                         "null",
                         source);
    const char *p = cfg->proxy;
    if (!p || strcmp(p, "system") == 0 || strcmp(p, "direct") == 0)
        return ERR_OK;
    static const char *const schemes[] = {"http://", "https://", "socks4://", "socks4a://", "socks5://", "socks5h://"};
    const char *sep = strstr(p, "://");
    bool known = false;
    for (size_t i = 0; sep && i < sizeof schemes / sizeof schemes[0]; i++)
        known |= text_equal_nocase_n(p, schemes[i], strlen(schemes[i])) && p[strlen(schemes[i])];
    /* host:port without a scheme is an http proxy, as libcurl and HTTPS_PROXY take it. */
    bool bare = !sep && p[0] && !strchr(p, '/') && !strchr(p, ' ');
    if (known || bare)
        return ERR_OK;
    char *shown = text_url_redact(p);
    error_set(err, ERR_CONFIG,
              "%s: `proxy` must be \"system\" (the machine's own proxy), \"direct\" (none) or a proxy's URL "
              "(http://host:port, https://, socks5://), got \"%s\"",
              source, shown ? shown : "(out of memory)");
    free(shown);
    return ERR_CONFIG;
}

/* log.file names a file: "" would be state_dir itself. */
static MUST_CHECK error_code check_log(const config *cfg, const char *source, error_info *err)
{
    if (cfg->log.file && !cfg->log.file[0])
        return error_set(err, ERR_CONFIG,
                         "%s: `log.file` must be a file name (relative to state_dir, or absolute) or "
                         "null, not \"\"",
                         source);
    return ERR_OK;
}

error_code config_load_text(config *cfg, const char *text, size_t len, const char *source, error_info *err)
{
    if (len > CONFIG_MAX_BYTES)
        return error_set(err, ERR_CONFIG, "%s: larger than %d bytes; is this the right file?", source,
                         CONFIG_MAX_BYTES);
    if (text_looks_utf16(text, len))
        return error_set(err, ERR_CONFIG,
                         "%s: the file is UTF-16 text; save it as UTF-8 (Notepad: Save As, Encoding UTF-8; "
                         "PowerShell: Set-Content -Encoding UTF8)",
                         source);
    size_t bom = text_utf8_bom_length(text, len);
    text += bom;
    len -= bom;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        size_t escape_line = bad_escape_line(text, len);
        if (escape_line)
            return error_set(
                err, ERR_CONFIG,
                "%s: not valid JSON: line %zu has a single backslash, which starts an escape in JSON; "
                "in a Windows path write `\\\\` or `/` (C:\\\\ProgramData\\\\outpost or C:/ProgramData/outpost)",
                source, escape_line);
        size_t offset = end && end >= text ? (size_t)(end - text) : 0;
        size_t line = 1;
        for (size_t i = 0; i < offset && i < len; i++)
            line += text[i] == '\n';
        return error_set(err, ERR_CONFIG, "%s: not valid JSON (near line %zu)", source, line);
    }
    error_code rc;
    if (!cJSON_IsObject(root))
        rc = error_set(err, ERR_CONFIG, "%s: the configuration must be a JSON object", source);
    else
        rc = apply_fields(top_fields, root, cfg, "", source, err);
    cJSON_Delete(root);
    if (rc == ERR_OK)
        rc = check_base_url(cfg, source, err);
    if (rc == ERR_OK)
        rc = check_mirror_urls(cfg, source, err);
    if (rc == ERR_OK)
        rc = check_log(cfg, source, err);
    if (rc == ERR_OK)
        rc = check_proxy(cfg, source, err);
    if (rc == ERR_OK)
        rc = check_signer_pins(cfg, source, err);
    if (rc == ERR_OK)
        rc = check_policy(cfg, source, err);
    return rc;
}

error_code config_load(config *cfg, const char *path, error_info *err)
{
    char *text = NULL;
    size_t len = 0;
    /* Judged and read through one handle (PRODUCT.md section 9): the
     * configuration decides deploy.command. */
    error_code rc = platform_read_trusted_file("configuration file", path, false, CONFIG_MAX_BYTES, &text, &len, err);
    if (rc == ERR_NOT_FOUND)
        return error_set(err, ERR_CONFIG, "configuration file %s does not exist; create it or pass -c FILE", path);
    if (rc != ERR_OK)
        return rc;
    free(cfg->path);
    cfg->path = text_dup(path);
    rc = config_load_text(cfg, text, len, path, err);
    free(text);
    return rc;
}

error_code config_check_file(const char *key, const char *path, error_info *err)
{
    if (!path)
        return ERR_OK;
    platform_path_kind kind = platform_path_stat(path, NULL);
    /* What it names decides what runs or is trusted (PRODUCT.md section 9). */
    error_code trusted = kind == PLATFORM_PATH_DIR ? ERR_OK : platform_check_trusted_file(key, path, false, err);
    if (trusted != ERR_NOT_FOUND && kind != PLATFORM_PATH_DIR)
        return trusted;
    if (kind == PLATFORM_PATH_DIR)
        return error_set(err, ERR_CONFIG, "%s: %s is a directory, not a file; correct the key", key, path);
    /* lstat saw a link (or nothing): what matters is what opening finds. */
    if (kind == PLATFORM_PATH_OTHER) {
        FILE *f = platform_fopen(path, "rb");
        if (f) {
            fclose(f);
            return ERR_OK;
        }
        error_info why;
        if (platform_stdio_error(&why, "%s cannot be read", path) != ERR_NOT_FOUND)
            return error_set_os(err, ERR_CONFIG, why.os_error, "%s: %s", key, why.message);
    }
    return error_set(err, ERR_CONFIG, "%s: %s does not exist; create the file or correct the key", key, path);
}

size_t config_written_files(const config *cfg, config_written_file out[CONFIG_WRITTEN_FILES_MAX])
{
    const config_written_file all[] = {
        {"log.file", cfg->log.file},
        {"report.status_file", cfg->report.status_file},
        {"report.jsonl_file", cfg->report.jsonl_file},
        {"report.metrics_file", cfg->report.metrics_file},
        {"report.ocsf_file", cfg->report.ocsf_file},
        {"report.cef_file", cfg->report.cef_file},
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0] && n < CONFIG_WRITTEN_FILES_MAX; i++)
        if (all[i].value)
            out[n++] = all[i];
    return n;
}

error_code config_check_mirror_files(const config *cfg, error_info *err)
{
    error_code rc = config_check_file("mirror.root_file", cfg->mirror.root_file, err);
    for (size_t i = 0; rc == ERR_OK && i < cfg->mirror.public_key_count; i++) {
        const char *entry = cfg->mirror.public_keys[i];
        if (strstr(entry, "-----BEGIN"))
            continue; /* inline: signkey_parse_public tells the two apart the same way */
        char key[48];
        snprintf(key, sizeof key, "mirror.public_keys[%zu]", i);
        rc = config_check_file(key, entry, err);
    }
    return rc;
}

error_code config_check_verify_files(const config_verify *verify, error_info *err)
{
    error_code rc = ERR_OK;
    if (!verify->trusted_ca_file || strcmp(verify->trusted_ca_file, "system") != 0)
        rc = config_check_file("installer.verify.trusted_ca_file", verify->trusted_ca_file, err);
    if (rc == ERR_OK)
        rc = config_check_file("installer.verify.timestamp_ca_file", verify->timestamp_ca_file, err);
    for (size_t i = 0; rc == ERR_OK && i < verify->crl_file_count; i++)
        rc = config_check_file("installer.verify.crl_files", verify->crl_files[i], err);
    return rc;
}

error_code config_check_api(const config *cfg, error_info *err)
{
    if (!cfg->base_url && cfg->path_missing)
        return error_set(err, ERR_CONFIG,
                         "no configuration file: %s does not exist, so `base_url` is not set; create that file (the "
                         "README gives examples) or pass -c FILE",
                         cfg->path);
    if (!cfg->base_url)
        return error_set(err, ERR_CONFIG,
                         "%s: `base_url` is not set; it names the platform tenant, e.g. https://tenant.example.com",
                         cfg->path ? cfg->path : "configuration");
    /* The shipped configuration's placeholder: retrying never reaches it. */
    const char *host = strstr(cfg->base_url, "://");
    host = host ? host + 3 : cfg->base_url;
    static const char placeholder[] = "tenant.example.com";
    size_t n = sizeof placeholder - 1;
    if (strlen(host) >= n && text_equal_nocase_n(host, placeholder, n) &&
        (host[n] == '\0' || host[n] == '/' || host[n] == ':'))
        return error_set(err, ERR_CONFIG,
                         "%s: `base_url` is still the placeholder %s of the shipped configuration; set it to your "
                         "tenant's address",
                         cfg->path ? cfg->path : "configuration", cfg->base_url);
    error_code rc = config_check_file("tls.ca_file", cfg->tls_ca_file, err);
    /* The proxy's Kerberos keys: a secret, judged like the API key file. */
    if (rc == ERR_OK && cfg->proxy_keytab)
        rc = platform_check_secret_file("proxy keytab (`proxy_keytab`)", cfg->proxy_keytab, err);
    /* libcurl's pin is either sha256//<base64>[;sha256//...] or a key file. */
    const char *pin = cfg->tls_pinned_public_key;
    if (rc == ERR_OK && pin && strncmp(pin, "sha256//", 8) != 0)
        rc = config_check_file("tls.pinned_public_key", pin, err);
    return rc;
}

static char *trim_copy(const char *s, size_t len)
{
    while (len > 0 && isspace((unsigned char)*s)) {
        s++;
        len--;
    }
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        len--;
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

error_code config_load_api_key(const config *cfg, char **key, error_info *err)
{
    const char *from_env = platform_getenv("OUTPOST_API_KEY");
    if (from_env && from_env[0]) {
        char *copy = trim_copy(from_env, strlen(from_env));
        if (!copy)
            return error_set(err, ERR_NOMEM, "out of memory");
        if (!copy[0]) {
            dynbuf_secret_free(copy);
            return error_set(err, ERR_CONFIG, "OUTPOST_API_KEY is blank");
        }
        *key = copy;
        return ERR_OK;
    }
    if (!cfg->api_key_file)
        return error_set(err, ERR_CONFIG, "no API key: set OUTPOST_API_KEY or `api_key_file` in %s%s",
                         cfg->path ? cfg->path : "the configuration",
                         cfg->path_missing ? " (that file does not exist; create it or pass -c FILE)" : "");
    error_code rc = config_check_file("api_key_file", cfg->api_key_file, err);
    if (rc != ERR_OK)
        return rc;
    char *text = NULL;
    size_t len = 0;
    rc = platform_read_trusted_file("API key file", cfg->api_key_file, true, 64 * 1024, &text, &len, err);
    if (rc != ERR_OK) {
        err->code = ERR_CONFIG;
        return rc == ERR_NOT_FOUND ? error_prefix(err, "cannot read the API key file (`api_key_file`)") : ERR_CONFIG;
    }
    if (text_looks_utf16(text, len)) {
        dynbuf_wipe(text, len);
        free(text);
        return error_set(err, ERR_CONFIG,
                         "API key file %s is UTF-16 text; save it as UTF-8 (PowerShell: Set-Content -Encoding UTF8)",
                         cfg->api_key_file);
    }
    size_t bom = text_utf8_bom_length(text, len);
    char *trimmed = trim_copy(text + bom, len - bom);
    /* A memset before free is a dead store the compiler may drop. */
    dynbuf_wipe(text, len);
    free(text);
    if (!trimmed)
        return error_set(err, ERR_NOMEM, "out of memory");
    if (!trimmed[0]) {
        dynbuf_secret_free(trimmed);
        return error_set(err, ERR_CONFIG, "API key file %s is empty", cfg->api_key_file);
    }
    *key = trimmed;
    return ERR_OK;
}

char *config_state_path(const config *cfg, const char *name)
{
    bool absolute = name[0] == '/' || name[0] == '\\' || (isalpha((unsigned char)name[0]) && name[1] == ':');
    return absolute ? text_dup(name) : platform_path_join(cfg->state_dir, name);
}
