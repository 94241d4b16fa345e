/*
 * main.c — outpost's entry point: parse the command line, load the
 * configuration, take the single-instance lock where the command writes
 * state, run the command, print its error once and exit with the code
 * PRODUCT.md section 1 gives it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/config.h"
#include "base/dynbuf.h"
#include "base/error.h"
#include "core/log.h"
#include "core/timefmt.h"
#include "platform/platform.h"
#include "report/feed.h"
#include "base/text.h"

typedef error_code (*command_fn)(command_context *ctx, error_info *err);

static const struct {
    cli_command command;
    command_fn run;
    bool takes_lock; /* writes under state_dir */
} dispatch[] = {
    {CLI_CHECK, command_check, true},    {CLI_UPDATE, command_update, true},     {CLI_STAGE, command_stage, true},
    {CLI_DEPLOY, command_deploy, true},  {CLI_ROLLBACK, command_rollback, true}, {CLI_BUNDLE, command_bundle, true},
    {CLI_REPORT, command_report, true},  {CLI_RUN, command_run, true},           {CLI_STATUS, command_status, false},
    {CLI_KEYGEN, command_keygen, false}, {CLI_PUBLISH, command_publish, true},   {CLI_SERVICE, command_service, false},
    {CLI_ROOT, command_root, false},     {CLI_MIRROR, command_mirror, false},
};

/* Whether the command writes under state_dir, and so takes the lock: the
 * table's word, and `mirror trust reset` (mirror verify writes nothing). */
static bool takes_lock(size_t i, const cli_options *opts)
{
    return dispatch[i].takes_lock || cli_mirror_trust_reset(opts);
}

/* The one line on stderr, and with --json the one document on stdout. */
static int fail(const char *command, const error_info *err, bool json)
{
    log_error("%s%s%s", command ? command : "", command ? ": " : "",
              err->message[0] ? err->message : error_meaning(err->code));
    if (json)
        command_print_error_json(err);
    return error_exit_code(err->code);
}

/* --json anywhere before "--", for a command line that did not parse. */
static bool json_asked(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0)
            return true;
    return false;
}

/* Whether the command talks to the platform's API with this configuration:
 * check and update do unless a mirror serves them; run for its enabled parts. */
static bool needs_api(cli_command command, const config *cfg)
{
    bool installer_api = cfg->mirror.url_count == 0;
    switch (command) {
    case CLI_CHECK:
    case CLI_UPDATE: return installer_api;
    case CLI_REPORT:
    case CLI_PUBLISH: return true;
    case CLI_RUN: return (cfg->installer.enabled && installer_api) || cfg->report.enabled;
    default: return false;
    }
}

/*
 * The configuration errors found before anything is written (PRODUCT.md
 * section 1: a usage or configuration error writes nothing anywhere, no
 * lock file, no state directory, no status): base_url (present, not the
 * shipped placeholder, https) and the API key for a command that needs them,
 * then the publisher CA files for a command that verifies an installer
 * (publish judges them itself, after what it lacks of its own), and the
 * mirror's root file and public key files for a command that reads a
 * mirror. The
 * installer's flow takes them as judged; verification checks the CA files
 * once more where it reads them.
 */
static MUST_CHECK error_code preflight(const cli_options *opts, const config *cfg, error_info *err)
{
    cli_command command = opts->command;
    error_code rc = ERR_OK;
    /* Nothing to reset without a root_file, and no state_dir made for it. */
    if (cli_mirror_trust_reset(opts) && !cfg->mirror.root_file)
        return error_set(
            err, ERR_CONFIG,
            "%s: `mirror.root_file` is not set; `mirror trust reset` starts again from it (mirror.public_keys "
            "keep nothing to reset)",
            cfg->path ? cfg->path : "configuration");
    if (needs_api(command, cfg)) {
        char *key = NULL;
        if ((rc = config_check_api(cfg, err)) == ERR_OK && (rc = config_load_api_key(cfg, &key, err)) == ERR_OK)
            dynbuf_secret_free(key);
    }
    /* The CA files the signature layer reads, for a command that verifies
     * an installer (check never does; publish says first what it lacks of
     * its own: the signing key, the directory). */
    bool verifies = command == CLI_UPDATE || command == CLI_STAGE || (command == CLI_RUN && cfg->installer.enabled);
    if (rc == ERR_OK && verifies)
        rc = config_check_verify_files(&cfg->installer.verify, err);
    /* What the mirror is trusted by (the root file, public key files), for
     * a command that reads a mirror. */
    bool mirror = command == CLI_MIRROR ||
                  (cfg->mirror.url_count > 0 &&
                   (command == CLI_CHECK || command == CLI_UPDATE || (command == CLI_RUN && cfg->installer.enabled)));
    if (rc == ERR_OK && mirror)
        rc = config_check_mirror_files(cfg, err);
    if (rc == ERR_OK && cfg->report.readers_group) {
        rc = platform_group_exists(cfg->report.readers_group, err);
        if (rc != ERR_OK)
            error_prefix(err, "`report.readers_group`");
    }
    return rc;
}

/* The configuration: -c, then OUTPOST_CONFIG, then the platform default; a
 * missing default file means "all defaults", an explicitly named one is an error. */
static MUST_CHECK error_code load_config(const cli_options *opts, config *cfg, error_info *err)
{
    error_code rc = config_init_defaults(cfg, err);
    if (rc != ERR_OK)
        return rc;
    const char *path = opts->config_path;
    if (!path) {
        const char *env = platform_getenv("OUTPOST_CONFIG");
        if (env && env[0])
            path = env;
    }
    char *default_path = NULL;
    if (!path) {
        default_path = platform_default_config_path();
        if (!default_path)
            return error_set(err, ERR_NOMEM, "out of memory");
        if (platform_path_stat(default_path, NULL) == PLATFORM_PATH_NONE) {
            /* All defaults; remember where we looked, for "base_url is not set". */
            free(cfg->path);
            cfg->path = default_path;
            cfg->path_missing = true;
            default_path = NULL;
        } else {
            path = default_path;
        }
    }
    rc = path ? config_load(cfg, path, err) : ERR_OK;
    free(default_path);
    if (rc != ERR_OK)
        return rc;
    /* --state-dir wins whether or not a configuration file was read. */
    if (opts->state_dir) {
        free(cfg->state_dir);
        cfg->state_dir = text_dup(opts->state_dir);
        if (!cfg->state_dir)
            return error_set(err, ERR_NOMEM, "out of memory");
    }
    return ERR_OK;
}

/*
 * state_dir and the folders outpost keeps in it must not be owned or
 * writable by a less privileged user (PRODUCT.md section 9). Checked before
 * the lock is taken, so nothing is created or written in a directory that
 * is refused (not even outpost.lock). staging/<version>/ is checked again
 * where it is staged or deployed.
 */
static MUST_CHECK error_code check_state_dir(const config *cfg, error_info *err)
{
    static const char *const folders[] = {NULL, "staging", "downloads", "logs"};
    for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++) {
        char *path = folders[i] ? platform_path_join(cfg->state_dir, folders[i]) : text_dup(cfg->state_dir);
        if (!path)
            return error_set(err, ERR_NOMEM, "out of memory");
        error_code rc = platform_check_private_dir(path, err);
        free(path);
        if (rc == ERR_NOT_FOUND && folders[i]) {
            error_clear(err);
            continue;
        }
        if (rc != ERR_OK)
            return rc;
        /* From here on the judged directory is held and everything below it
         * is reached from that handle, never by its name again (PRODUCT.md
         * section 9): a rename race can make the run fail, not redirect it.
         * Its folders are judged through the handle too, so a link there
         * is refused here, not halfway through the run. */
        if (!folders[i]) {
            rc = platform_state_root_open(cfg->state_dir, err);
            if (rc != ERR_OK)
                return rc;
        }
    }
    return ERR_OK;
}

/*
 * The folders of log.file and the feeds placed outside state_dir, judged
 * like state_dir and held, so that a file there is reached from the held
 * folder and never through a link (PRODUCT.md section 9); before the lock,
 * so a refusal writes nothing.
 */
static MUST_CHECK error_code hold_written_dirs(const config *cfg, error_info *err)
{
    config_written_file files[CONFIG_WRITTEN_FILES_MAX];
    size_t n = config_written_files(cfg, files);
    for (size_t i = 0; i < n; i++) {
        char *path = config_state_path(cfg, files[i].value);
        if (!path)
            return error_set(err, ERR_NOMEM, "out of memory");
        error_code rc = platform_hold_dir_of(path, err);
        if (rc == ERR_NOT_FOUND) {
            /* Nothing there to redirect: writing the file says it is missing
             * (a warning for log.file, as ever). */
            error_clear(err);
            rc = ERR_OK;
        } else if (rc != ERR_OK) {
            error_prefix(err, "`%s` %s", files[i].key, path);
        }
        free(path);
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

static MUST_CHECK error_code take_lock(const config *cfg, platform_lock **lock, error_info *err)
{
    error_code rc = platform_mkdirs_private(cfg->state_dir, err);
    if (rc != ERR_OK)
        return error_prefix(err, "cannot create the state directory");
    rc = check_state_dir(cfg, err); /* and holds it open */
    if (rc != ERR_OK)
        return rc;
    /* The readers may list it (0750) to reach the feeds; what else it holds
     * stays owner-only. Only a directory judged trusted is shared. */
    rc = feed_share(cfg->state_dir, cfg->report.readers_group, err);
    if (rc != ERR_OK)
        return rc;
    rc = hold_written_dirs(cfg, err);
    if (rc != ERR_OK)
        return rc;
    char *path = platform_path_join(cfg->state_dir, "outpost.lock");
    if (!path)
        return error_set(err, ERR_NOMEM, "out of memory");
    rc = platform_lock_acquire(path, lock, err);
    free(path);
    return rc;
}

/* log.file from here on (lines before the configuration was read, usage
 * and configuration errors, go to stderr only). */
static void start_log_file(const config *cfg, const char *command)
{
    char *path = cfg->log.file ? config_state_path(cfg, cfg->log.file) : NULL;
    log_start(command, path, cfg->log.max_bytes, cfg->log.keep);
    free(path);
}

/* The one line every command that writes state leaves in log.file, even
 * when it said nothing else (PRODUCT.md section 10). */
static void log_outcome(const char *started_at, int64_t started_ms, int status)
{
    int64_t ms = platform_monotonic_ms() - started_ms;
    log_file_only("started %s, finished %s, exit code %d, %" PRId64 ".%01" PRId64 " s", started_at,
                  status == 0 || status == 3010 ? "ok"
                  : status == 75                ? "with a temporary failure"
                                                : "with a failure",
                  status, ms / 1000, ms % 1000 / 100);
}

int main(int argc, char **argv)
{
    platform_harden_process(); /* no core dump of the API key */
    error_info err;
    error_clear(&err);
    cli_options opts;
    if (cli_parse(argc, argv, &opts, &err) != ERR_OK)
        return fail(NULL, &err, json_asked(argc, argv));
    if (opts.help) {
        cli_print_help(stdout, opts.help_topic);
        return 0;
    }
    if (opts.command == CLI_VERSION) {
        if (command_version(opts.verbosity > 0, opts.json, &err) != ERR_OK)
            return fail(NULL, &err, opts.json);
        return 0;
    }
    log_set_level(opts.verbosity);

    const char *name = cli_command_name(opts.command);
    size_t i = 0;
    while (i < sizeof dispatch / sizeof dispatch[0] && dispatch[i].command != opts.command)
        i++;
    if (i == sizeof dispatch / sizeof dispatch[0]) {
        error_set(&err, ERR_INTERNAL, "no handler for this command");
        return fail(name, &err, opts.json);
    }

    int status;
    config cfg;
    bool loaded = load_config(&opts, &cfg, &err) == ERR_OK;
    if (!loaded || preflight(&opts, &cfg, &err) != ERR_OK) {
        config_free(&cfg);
        /* As the command would have said it, once it is known which runs. */
        status = fail(loaded ? name : NULL, &err, opts.json);
        /* A scheduled run that cannot start must reach the event log too. */
        if (opts.command == CLI_RUN)
            log_run_event(status, 0, 0);
        return status;
    }
    /* Read-only commands (status) leave the log alone: nothing to record,
     * and no warning about a log they do not write. */
    char started_at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(platform_time_utc_ms() / 1000, started_at);
    int64_t started_ms = platform_monotonic_ms();
    bool logged = takes_lock(i, &opts);
    if (logged) /* Ctrl-C: a word, not a silent 130; nothing is lost (PRODUCT.md section 3). */
        platform_exit_on_interrupt("outpost: interrupted; the next run resumes where this one stopped\n");

    /* log.file is opened only once state_dir is judged and held (PRODUCT.md
     * section 9): a refused state_dir gets its message on stderr, and
     * nothing is written through it, not even a log line. */
    platform_lock *lock = NULL;
    if (logged && take_lock(&cfg, &lock, &err) != ERR_OK) {
        platform_state_root_close();
        config_free(&cfg);
        status = fail(name, &err, opts.json);
        if (opts.command == CLI_RUN)
            log_run_event(status, 0, 0);
        log_outcome(started_at, started_ms, status);
        log_stop();
        return status;
    }

    if (logged)
        start_log_file(&cfg, name);

    command_context ctx = {.opts = &opts, .cfg = &cfg, .exit_code = 0, .http = NULL, .holds_state_dir = lock != NULL};
    error_code rc = dispatch[i].run(&ctx, &err);
    status = rc == ERR_OK ? ctx.exit_code : fail(name, &err, opts.json);
    http_client_free(ctx.http);

    platform_lock_release(lock);
    platform_state_root_close();
    config_free(&cfg);
    if (logged)
        log_outcome(started_at, started_ms, status);
    log_stop();
    return status;
}
