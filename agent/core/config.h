/*
 * config.h — outpost's configuration: the JSON file of PRODUCT.md section 2
 * turned into a validated struct.
 *
 * Every key has a default; unknown keys, wrong types and out-of-range values
 * are ERR_CONFIG with a message that names the key ("report.page_size: must
 * be 1 to 1000, got 5000"). Paths in the struct are as written in the file;
 * state_dir-relative names (status_file, jsonl_file, metrics_file,
 * ocsf_file, cef_file and log.file) are resolved with config_state_path().
 */
#ifndef OUTPOST_CONFIG_H
#define OUTPOST_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

struct cJSON;

typedef struct config_verify {
    bool require_signature;  /* reject unsigned installers */
    char *trusted_ca_file;   /* publisher CA (PEM); NULL when not set */
    char *timestamp_ca_file; /* CA of timestamp countersignatures; NULL: trusted_ca_file */
    char *signer_subject;    /* required signer subject or CN; NULL: any */
    char **signer_sha256;    /* pinned signer certificate SHA-256s (lower-case hex); none: any */
    size_t pin_count;        /* entries of signer_sha256 */
    char **crl_files;        /* CRLs (DER or PEM) checked offline; none: no revocation check */
    size_t crl_file_count;
    char *expected_sha256;      /* lower-case hex; NULL: not checked */
    bool allow_sha1;            /* accept SHA-1 Authenticode digests */
    bool require_version_match; /* reject an installer without a version resource
                                   (PRODUCT.md 4.3, version binding) */
} config_verify;

typedef struct config_installer {
    bool enabled;                /* `run` updates (and deploys) the installer */
    char *target_version_prefix; /* only offered versions starting with it are taken; NULL: any */
    char **defer_on;             /* installer.defer_on as written: "metered", "battery" */
    size_t defer_on_count;
    bool defer_metered;           /* `run` neither downloads nor deploys on a metered connection */
    bool defer_battery;           /* ... nor on battery */
    char *platform;               /* installer route's platform: "windows" */
    char *installed_version;      /* fixed installed version; NULL: look it up */
    char *installed_version_file; /* file holding the installed version; NULL: none */
    char *product_name;           /* display name in the OS inventory (Windows Uninstall keys) */
    int keep_versions;            /* staged versions kept, >= 1 */
    int64_t max_bytes_per_second; /* download bandwidth cap; 0: none */
    config_verify verify;
} config_installer;

/*
 * One weekly maintenance window of deploy.windows (PRODUCT.md section 11):
 * a range of the local wall clock starting on the given days. A window
 * whose end is not after its start runs into the next day (the days are
 * the days it starts).
 */
typedef struct config_window {
    uint8_t days;  /* the days it starts on: bit 0 Sunday, 1 Monday ... 6 Saturday */
    int start_min; /* minutes after local midnight, 0..1439 */
    int end_min;   /* 1..1440 (24:00); not after start_min: it ends the next day */
} config_window;

typedef struct config_deploy {
    bool enabled;           /* run deploys from `run` */
    char **command;         /* argv, NULL-terminated; "{installer}" and "{log}" are
                               replaced; NULL: the default for the staged format */
    size_t command_count;   /* entries in command, not counting the NULL */
    char **pe_args;         /* arguments of a PE installer run by the default command */
    size_t pe_args_count;   /* entries in pe_args, not counting the NULL */
    int64_t timeout_s;      /* kill the installer after this long */
    bool pass_reboot_code;  /* a deploy asking for a reboot exits 3010 */
    char **window_texts;    /* deploy.windows as written, for messages and status.json */
    size_t window_count;    /* 0: `run` deploys at any time */
    config_window *windows; /* window_texts parsed, window_count of them */
} config_deploy;

typedef struct config_report {
    bool enabled;               /* run the report from `run` */
    int64_t initial_lookback_s; /* first poll starts this far back */
    struct cJSON *filter;       /* incident list filter, passed through (owned) */
    int page_size;              /* 1..1000 */
    int details_batch;          /* event ids per event-details call, 1..1000 */
    int keep_incidents;         /* items kept in status.json */
    char *status_file;          /* relative to state_dir unless absolute */
    char *jsonl_file;           /* relative to state_dir unless absolute */
    int64_t jsonl_max_bytes;    /* rotate incidents.jsonl past this size */
    int jsonl_keep;             /* rotated files kept */
    char *metrics_file;         /* Prometheus textfile; NULL: none */
    char *ocsf_file;            /* OCSF Data Security Finding lines; NULL: none */
    char *cef_file;             /* CEF lines; NULL: none */
    char *readers_group;        /* group that may read the feeds (status, jsonl, metrics); NULL: none */
} config_report;

typedef struct config_http {
    int64_t connect_timeout_s;  /* TCP + TLS connect */
    int64_t low_speed_time_s;   /* abort a transfer slower than min_speed for this long */
    int64_t min_speed;          /* bytes/s a transfer must keep up (over low_speed_time_s) */
    int64_t transfer_timeout_s; /* overall deadline of one transfer; an installer's grows
                                   by its length at min_speed */
    int64_t max_response_bytes; /* cap on JSON response bodies */
    int max_attempts;           /* attempts per request, retries included */
    int64_t max_retry_wait_s;   /* longest total wait spent retrying one request */
    int rate_limit_per_minute;  /* pacing before the server's headers say otherwise */
    int max_in_flight;          /* concurrent requests per endpoint */
} config_http;

typedef struct config_mirror {
    char **urls;        /* mirror directories (or manifest .json URLs): https, http, file */
    size_t url_count;   /* 0: no mirror; check/update talk to the API */
    char **public_keys; /* PEM public keys, or paths of files holding one */
    size_t public_key_count;
    char *root_file;  /* the first trusted mirror root (PRODUCT.md 8.1); NULL: public_keys alone */
    char *channel;    /* must equal the manifest's channel */
    char *machine_id; /* rollout identity; NULL: the OS's machine id */
} config_mirror;

typedef struct config_publish {
    char *dir;              /* mirror directory publish writes; NULL: --dir needed */
    char *signing_key_file; /* PEM private key (keygen); NULL: publish refuses */
    char *roots_dir;        /* the signed roots (1.root.json, ...) publish copies; NULL: none */
    char *channel;          /* written into the manifest */
    int64_t expires_s;      /* manifest lifetime */
    double rollout_percent; /* 0..100, decimals allowed */
    int keep_installers;    /* installer files kept in the mirror, >= 1 */
} config_publish;

typedef struct config_log {
    char *file;        /* log file, relative to state_dir unless absolute; NULL: none */
    int64_t max_bytes; /* rotate past this size */
    int keep;          /* rotated files kept: file.1 ... file.keep */
} config_log;

typedef struct config_status {
    int64_t max_age_s;     /* ATTENTION when the last success is older */
    int64_t max_failing_s; /* ATTENTION (and `run` exits 1) when failures last longer */
} config_status;

/* proxy_auth: which schemes answer a proxy's 407 (PRODUCT.md section 2). */
typedef enum {
    CONFIG_PROXY_AUTH_AUTO,      /* Negotiate, NTLM with the process's identity, then Basic/Digest */
    CONFIG_PROXY_AUTH_NEGOTIATE, /* Negotiate (Kerberos) only */
    CONFIG_PROXY_AUTH_NTLM,      /* NTLM only */
    CONFIG_PROXY_AUTH_BASIC,     /* Basic with the proxy URL's credentials only */
    CONFIG_PROXY_AUTH_NONE       /* never answer a 407 */
} config_proxy_auth;

typedef struct config {
    char *path;         /* file it was loaded from (or looked for, see path_missing) */
    bool path_missing;  /* no file at the default path: all defaults */
    char *base_url;     /* without trailing slash */
    char *api_key_file; /* NULL when not set */
    char *state_dir;
    char *tls_ca_file;            /* NULL: system store */
    char *tls_pinned_public_key;  /* libcurl form (sha256//base64 or a PEM/DER path); NULL: none */
    bool tls_session_resumption;  /* keep state_dir/tls-session for the next run's handshake */
    char *proxy;                  /* "system" or NULL: the machine's own; "direct"; or one proxy's URL */
    config_proxy_auth proxy_auth; /* which schemes answer a proxy's 407 */
    char *proxy_keytab;           /* Kerberos client keytab (GSS-API builds); NULL: the credentials cache */
    config_installer installer;
    config_deploy deploy;
    config_report report;
    config_http http;
    config_mirror mirror;
    config_publish publish;
    config_log log;
    config_status status;
    int64_t jitter_s; /* schedule.jitter: random start delay of `run` */
} config;

/* Fills cfg with every default of PRODUCT.md section 2 (base_url NULL). */
MUST_CHECK error_code config_init_defaults(config *cfg, error_info *err);

/*
 * Loads path (size-capped) over the defaults, validating every key.
 * On failure cfg holds defaults plus whatever was read; free it anyway.
 */
MUST_CHECK error_code config_load(config *cfg, const char *path, error_info *err);

/* As config_load, from a JSON text (for tests). source names it in errors. */
MUST_CHECK error_code config_load_text(config *cfg, const char *text, size_t len, const char *source, error_info *err);

/*
 * Checks what a command that talks to the platform needs: base_url present,
 * https:// or http:// to a loopback host only, and the TLS files it names
 * (tls.ca_file, tls.pinned_public_key when that is a file) present, with
 * config_check_file. api_key_file is checked by config_load_api_key, since
 * OUTPOST_API_KEY makes it unnecessary.
 */
MUST_CHECK error_code config_check_api(const config *cfg, error_info *err);

/*
 * Files the configuration names are checked when the command that reads
 * them starts, not when the configuration is loaded: a machine that only
 * runs `report` has no publisher CA, and its default trusted_ca_file must
 * not fail it (PRODUCT.md section 2). A named file that is missing is
 * ERR_CONFIG, one line naming the key and the path
 * ("installer.verify.trusted_ca_file: /etc/outpost/publisher-ca.pem does not
 * exist; ..."), never a silent fallback. path NULL (key not set) is ERR_OK;
 * a directory is ERR_CONFIG too. Symbolic links are followed.
 */
MUST_CHECK error_code config_check_file(const char *key, const char *path, error_info *err);

/* config_check_file for what the signature layer reads:
 * installer.verify.trusted_ca_file (unless "system"), timestamp_ca_file
 * and every crl_files entry. */
MUST_CHECK error_code config_check_verify_files(const config_verify *verify, error_info *err);

/*
 * Parses one deploy.windows entry: days, then a time range in local time:
 * "Mon-Fri 22:00-05:00", "Sat 01:00-06:00", "daily 02:00-04:00",
 * "Mon,Wed 02:00-04:00", "Fri-Mon 23:00-01:30". Days are Mon Tue Wed Thu
 * Fri Sat Sun or their full names, in any case, single or as ranges (a
 * range may wrap: Fri-Mon), joined by commas, or "daily"; times are H:MM or
 * HH:MM, 00:00 to 23:59, and the end may be 24:00. ERR_CONFIG with what is
 * wrong (without the key: the caller names the entry).
 */
MUST_CHECK error_code config_parse_window(const char *text, config_window *out, error_info *err);

/* A file outpost writes that the configuration may place outside state_dir. */
typedef struct config_written_file {
    const char *key;   /* "log.file", "report.status_file", ... */
    const char *value; /* as configured: relative to state_dir, or absolute */
} config_written_file;

#define CONFIG_WRITTEN_FILES_MAX 8

/*
 * The files outpost writes whose place the configuration decides: log.file,
 * report.status_file, report.jsonl_file, report.metrics_file,
 * report.ocsf_file, report.cef_file (a feed added later belongs here too),
 * those set, into out. main.c holds the folder of
 * each one outside state_dir (platform_hold_dir_of) before anything is
 * written. Returns how many.
 */
size_t config_written_files(const config *cfg, config_written_file out[CONFIG_WRITTEN_FILES_MAX]);

/* config_check_file for what a mirror is trusted by: mirror.root_file and
 * every mirror.public_keys entry that names a file (an inline PEM is part
 * of the configuration itself). */
MUST_CHECK error_code config_check_mirror_files(const config *cfg, error_info *err);

/* Frees everything cfg owns (not cfg itself). */
void config_free(config *cfg);

/*
 * The API key: OUTPOST_API_KEY if set, else the trimmed contents of
 * api_key_file (refused when readable by group or others). *key is malloc'd;
 * release it with dynbuf_secret_free (base/dynbuf.h), which wipes it first.
 */
MUST_CHECK error_code config_load_api_key(const config *cfg, char **key, error_info *err);

/* state_dir joined with name unless name is absolute. malloc'd; NULL on OOM. */
char *config_state_path(const config *cfg, const char *name);

/*
 * Parses a duration in the API's form: a non-negative number and one unit
 * suffix s, m, h or d ("30s", "15m", "24h", "14d"). ERR_CONFIG on anything else.
 */
MUST_CHECK error_code config_parse_duration(const char *text, int64_t *seconds, error_info *err);

#endif
