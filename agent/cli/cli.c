/*
 * cli.c — argument parsing and help texts. Every command's options live in
 * one table so `--help`, parsing and the README stay in step.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

typedef struct command_spec {
    const char *name;
    cli_command command;
    const char *usage;   /* after "outpost [global options] " */
    const char *summary; /* one line for the overview */
    const char *details; /* the command's --help body */
} command_spec;

static const command_spec commands[] = {
    {"check", CLI_CHECK, "check",
     "ask the platform for the latest installer version and compare it with the installed one",
     "Reads X-Installer-Version from the installer route without downloading the installer\n"
     "(at most 64 KiB of body) and compares it with the installed version.\n"
     "Exit status: 0 up to date, 10 an update is available.\n"},
    {"update", CLI_UPDATE, "update [--force] [--allow-downgrade]",
     "check, then download, verify and stage a newer installer",
     "Downloads the latest installer when it is newer than the installed one (resuming an\n"
     "interrupted download), verifies it (length, format, SHA-256, Authenticode) and stages it.\n"
     "  --force            download and stage again even when up to date or already staged\n"
     "  --allow-downgrade  accept a version older than the installed one\n"},
    {"stage", CLI_STAGE, "stage FILE [--version V] [--force] [--allow-downgrade]",
     "verify and stage a local installer or bundle",
     "Verifies FILE exactly as a download is verified and stages it. The version comes from\n"
     "--version, or from the manifest inside a bundle made by `outpost bundle`.\n"
     "  --version V        version of the installer in FILE\n"
     "  --force            replace a staged version of the same number with FILE\n"
     "  --allow-downgrade  accept a version older than the installed one\n"},
    {"deploy", CLI_DEPLOY, "deploy [--dry-run]", "run the staged installer with the configured command",
     "Runs deploy.command (argv, never a shell) with {installer} replaced by the staged file and\n"
     "{log} by a log file under state_dir/logs/; with deploy.command null, an MSI runs as\n"
     "msiexec /i {installer} /qn /norestart /l*v {log}, an EXE with deploy.pe_args. The\n"
     "installer's output goes to that log. Exit codes 0, 3010 and 1641 are success (the last\n"
     "two mean a reboot is needed; with deploy.pass_reboot_code outpost then exits 3010).\n"
     "  --dry-run  print the Windows command line that would run, and run nothing\n"},
    {"rollback", CLI_ROLLBACK, "rollback [--deploy]", "make the previously staged version current again",
     "Switches staging/current back to the version staged before the current one.\n"
     "  --deploy  also run it, as deploy does (hashed again right before it runs)\n"},
    {"bundle", CLI_BUNDLE, "bundle [--format zip|tar.gz] [-o FILE]",
     "pack the current staged version into a reproducible archive",
     "Packs the current staged installer and its manifest; the same input always gives the\n"
     "same bytes, so a pipeline can hash and sign the bundle.\n"
     "  --format zip|tar.gz  archive format (default zip)\n"
     "  -o, --output FILE    where to write it (default: outpost-<version>.<format> here)\n"},
    {"report", CLI_REPORT, "report", "trace new incidents and write the status and JSON-lines files",
     "Lists incidents since the saved cursor, traces each one's chain of events, writes\n"
     "status.json and appends new incidents to incidents.jsonl.\n"},
    {"run", CLI_RUN, "run", "what the scheduled task calls: update (+deploy), then report",
     "Takes the single-instance lock, waits the configured start jitter, runs update (and\n"
     "deploy when deploy.enabled) when installer.enabled, then report when report.enabled;\n"
     "one failing part does not stop the other, a part that is off is not run. Writes\n"
     "last_run in status.json. Exits with the most serious outcome: 4, 3, 1, 75, then 3010\n"
     "(a reboot is needed, with deploy.pass_reboot_code), then 0.\n"},
    {"status", CLI_STATUS, "status [--max-age DURATION] [--json]",
     "is this machine OK? the verdict and the status file",
     "Prints a one-line verdict first (OK ..., or ATTENTION: ... naming what needs a person:\n"
     "a failed run, a failed deploy, a reboot required, a stale status), then a readable\n"
     "summary of status.json; or the file itself with --json, plus its \"verdict\".\n"
     "ATTENTION too when the last success is older than status.max_age (3h), when failures\n"
     "have lasted longer than status.max_failing (24h), or when a run could not write the file.\n"
     "Exit status: the last scheduled run's exit code (0 when it succeeded; 75 when none has\n"
     "finished yet or the last success is too old).\n"
     "  --max-age DURATION  this maximum age instead of status.max_age (30m, 2h, 1d)\n"},
    {"keygen", CLI_KEYGEN, "keygen -o FILE [--public-out PUBFILE]",
     "write a new fleet-mirror signing key and print its public key",
     "Writes a new ECDSA P-256 private key (PEM, readable by its owner only) to FILE, which must\n"
     "not exist yet, and prints the public key (PEM) and its key id; with --json as JSON. Put the\n"
     "public key in every endpoint's mirror.public_keys and FILE in publish.signing_key_file.\n"
     "  -o, --output FILE         where to write the private key\n"
     "      --public-out PUBFILE  also write the public key there (PEM, readable by all)\n"},
    {"publish", CLI_PUBLISH, "publish [--dir DIR] [--rollout PERCENT]",
     "update through the API, then write the signed fleet mirror",
     "Runs update through the API, then writes the current staged installer into the mirror\n"
     "directory (installers/<sha256>.exe|.msi, then manifest.json signed with\n"
     "publish.signing_key_file, replaced atomically). Re-running it with nothing new re-signs\n"
     "with the next seq and a new expiry.\n"
     "  --dir DIR            mirror directory (default: publish.dir)\n"
     "  --rollout PERCENT    share of the fleet offered this version, 0-100 (default: publish.rollout_percent)\n"},
    {"service", CLI_SERVICE, "service install|uninstall",
     "register or remove the Windows scheduled task (the MSI calls it)",
     "install: makes %ProgramData%\\outpost and the state directory private (SYSTEM and\n"
     "Administrators only) and registers the Task Scheduler task \\outpost\\run, which runs\n"
     "`outpost run` as SYSTEM hourly (random delay up to 10 minutes, a missed run starts when the\n"
     "machine is back, 2 hours at most, never two at once); with -c the task uses that\n"
     "configuration. uninstall: removes the task and keeps the configuration and the state.\n"
     "Needs an elevated prompt. Windows only: on Linux the Debian package's outpost.timer\n"
     "schedules outpost.\n"},
    {"root", CLI_ROOT, "root init|sign|next|verify ...",
     "the mirror's offline root of trust: write, sign, rotate and check roots",
     "The ceremony of PRODUCT.md 8.1, run on offline machines (README: \"The mirror's root of trust\").\n"
     "  root init --root-key FILE... --root-threshold N --manifest-key FILE... [--manifest-threshold N]\n"
     "            --expires DURATION -o OUT\n"
     "      write root version 1, unsigned; key FILEs are PEM public keys (or signing keys, whose\n"
     "      public half is taken); each option may be given several times\n"
     "  root sign -k KEY FILE\n"
     "      add KEY's signature to the root in FILE (rewritten atomically); KEY must be readable by\n"
     "      its owner only; each root key holder runs it on their own machine\n"
     "  root next FILE -o OUT --expires DURATION [--add-root-key FILE] [--remove-root-key KEYID]\n"
     "            [--add-manifest-key FILE] [--remove-manifest-key KEYID] [--root-threshold N]\n"
     "            [--manifest-threshold N]\n"
     "      write version N+1 of the root in FILE, unsigned; it needs signatures by a threshold of\n"
     "      version N's root keys and a threshold of its own\n"
     "  root verify FILE...\n"
     "      judge a chain of roots given in order as an endpoint would (the first trusted as given):\n"
     "      exit 0 when the chain holds and the last root has not expired, 4 when a root fails, 75\n"
     "      when the last root has expired\n"},
    {"mirror", CLI_MIRROR, "mirror verify|trust ...",
     "judge a mirror exactly as an endpoint would; forget the kept mirror root",
     "mirror verify URL|DIR [--machine-id ID]\n"
     "  Reads the mirror at URL (or the directory DIR) with what the configuration trusts\n"
     "  (mirror.root_file, else mirror.public_keys): walks its roots, opens the manifest, applies\n"
     "  its rules, fetches the installer and checks its length, SHA-256 and Authenticode\n"
     "  signature, and says whether the machine (--machine-id, else mirror.machine_id or this\n"
     "  machine's id) is in the rollout. Prints each judgement; writes nothing. Exits as an\n"
     "  endpoint would: 0 when it would install or is up to date, else that exit code (4, 75, ...).\n"
     "  --machine-id ID  judge the rollout for this machine id\n"
     "mirror trust reset\n"
     "  Forgets the mirror root this endpoint kept (state_dir/mirror-root.json): the next run\n"
     "  trusts mirror.root_file again and walks the mirror's roots from it. Trust never moves\n"
     "  back to an older root by itself; this is how an administrator moves it. Takes the lock;\n"
     "  status.json's installer.mirror.trust_reset_at records when.\n"},
    {"version", CLI_VERSION, "version [--verbose]", "print outpost's version",
     "Prints outpost's version. With --verbose (-v), also what this binary runs on: the libraries\n"
     "  as linked (libcurl and its TLS library, Mbed TLS, cJSON, libarchive), whether its TLS\n"
     "  negotiates TLS 1.3, the CPU paths of SHA-256, AES-GCM and ChaCha20, and libcurl's features\n"
     "  (SSPI, GSS-API, NTLM, Kerberos/SPNEGO, HTTPS proxy: what proxy authentication can work).\n"},
    {"help", CLI_HELP, "help [COMMAND]", "show help for a command", "Shows the help of COMMAND, or the overview.\n"},
};

#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static const command_spec *find_command(const char *name)
{
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static const command_spec *spec_of(cli_command command)
{
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (commands[i].command == command)
            return &commands[i];
    return NULL;
}

const char *cli_command_name(cli_command command)
{
    const command_spec *spec = spec_of(command);
    return spec ? spec->name : "outpost";
}

static const char global_help[] =
    "Global options (before or after the command):\n"
    "  -c, --config FILE    configuration file (default: $OUTPOST_CONFIG, then the platform default)\n"
    "      --state-dir DIR  state directory (overrides state_dir)\n"
    "      --json           machine-readable output\n"
    "  -q, --quiet          errors only\n"
    "  -v, --verbose        more detail; twice traces every request\n"
    "  -h, --help           this help\n";

void cli_print_help(FILE *out, cli_command command)
{
    const command_spec *spec = spec_of(command);
    if (spec && command != CLI_HELP) {
        fprintf(out, "usage: outpost [global options] %s\n\n%s\n%s", spec->usage, spec->details, global_help);
        return;
    }
    fprintf(out, "usage: outpost [-c CONFIG] [--state-dir DIR] [--json] [-q|-v] COMMAND [ARGS]\n\n"
                 "Keeps the platform's sensor installer current and reports the tenant's incidents.\n\nCommands:\n");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n%s\nExit status: 0 ok, 1 failure, 2 usage or configuration error, 3 authentication or\n"
            "permission, 4 installer rejected, 5 another instance running, 10 update available (check),\n"
            "75 temporary failure (try again later).\n"
            "`outpost help COMMAND` shows a command's options.\n",
            global_help);
}

/* Which options take a value, and which commands accept them. */
typedef struct option_spec {
    const char *long_name;
    char short_name;
    bool takes_value;
    cli_command only_for; /* CLI_NONE: global */
} option_spec;

static const option_spec options[] = {
    {"--config", 'c', true, CLI_NONE},    {"--state-dir", 0, true, CLI_NONE},
    {"--json", 0, false, CLI_NONE},       {"--quiet", 'q', false, CLI_NONE},
    {"--verbose", 'v', false, CLI_NONE},  {"--help", 'h', false, CLI_NONE},
    {"--force", 0, false, CLI_UPDATE},    {"--allow-downgrade", 0, false, CLI_UPDATE},
    {"--dry-run", 0, false, CLI_DEPLOY},  {"--version", 0, true, CLI_STAGE},
    {"--format", 0, true, CLI_BUNDLE},    {"--output", 'o', true, CLI_BUNDLE},
    {"--max-age", 0, true, CLI_STATUS},   {"--dir", 0, true, CLI_PUBLISH},
    {"--rollout", 0, true, CLI_PUBLISH},  {"--public-out", 0, true, CLI_KEYGEN},
    {"--deploy", 0, false, CLI_ROLLBACK},
};

static const option_spec *find_option(const char *arg, const char **inline_value)
{
    *inline_value = NULL;
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        const option_spec *o = &options[i];
        size_t n = strlen(o->long_name);
        if (strncmp(arg, o->long_name, n) == 0 && (arg[n] == '\0' || (arg[n] == '=' && o->takes_value))) {
            if (arg[n] == '=')
                *inline_value = arg + n + 1;
            return o;
        }
        if (o->short_name && arg[0] == '-' && arg[1] == o->short_name && arg[2] == '\0')
            return o;
    }
    return NULL;
}

static bool option_allowed(const option_spec *o, cli_command command)
{
    if (o->only_for == CLI_NONE || o->only_for == command)
        return true;
    if (strcmp(o->long_name, "--output") == 0 && command == CLI_KEYGEN)
        return true;
    return (strcmp(o->long_name, "--allow-downgrade") == 0 || strcmp(o->long_name, "--force") == 0) &&
           command == CLI_STAGE;
}

/* The command word: the first argument that is not an option or an option's value. */
static const command_spec *locate_command(int argc, char **argv, int *index)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0)
            break;
        if (arg[0] == '-' && arg[1]) {
            const char *inline_value;
            const option_spec *o = find_option(arg, &inline_value);
            bool consumes = o && o->takes_value && !inline_value;
            /* `--version` takes a value only for stage; `outpost --version` alone asks for ours. */
            if (consumes && strcmp(o->long_name, "--version") == 0 && (i + 1 >= argc || find_command(argv[i + 1])))
                consumes = false;
            if (consumes)
                i++;
            continue;
        }
        *index = i;
        return find_command(arg);
    }
    *index = -1;
    return NULL;
}

static void apply_option(const option_spec *o, const char *value, cli_options *opts)
{
    const char *name = o->long_name;
    if (strcmp(name, "--config") == 0)
        opts->config_path = value;
    else if (strcmp(name, "--state-dir") == 0)
        opts->state_dir = value;
    else if (strcmp(name, "--json") == 0)
        opts->json = true;
    else if (strcmp(name, "--quiet") == 0)
        opts->verbosity = -1;
    else if (strcmp(name, "--verbose") == 0)
        opts->verbosity = opts->verbosity < 0 ? 1 : opts->verbosity + 1;
    else if (strcmp(name, "--help") == 0)
        opts->help = true;
    else if (strcmp(name, "--force") == 0)
        opts->force = true;
    else if (strcmp(name, "--allow-downgrade") == 0)
        opts->allow_downgrade = true;
    else if (strcmp(name, "--dry-run") == 0)
        opts->dry_run = true;
    else if (strcmp(name, "--deploy") == 0)
        opts->deploy = true;
    else if (strcmp(name, "--version") == 0)
        opts->version = value;
    else if (strcmp(name, "--format") == 0)
        opts->format = value;
    else if (strcmp(name, "--output") == 0)
        opts->output = value;
    else if (strcmp(name, "--max-age") == 0)
        opts->max_age = value;
    else if (strcmp(name, "--dir") == 0)
        opts->dir = value;
    else if (strcmp(name, "--rollout") == 0)
        opts->rollout = value;
    else if (strcmp(name, "--public-out") == 0)
        opts->public_out = value;
}

/* -vv, -vvv: -v given that many times. False when arg is not one. */
static bool take_repeated_v(const char *arg, cli_options *opts)
{
    if (arg[0] != '-' || arg[1] != 'v' || arg[2] != 'v' || arg[strspn(arg + 1, "v") + 1] != '\0')
        return false;
    for (const char *v = arg + 1; *v; v++)
        opts->verbosity = opts->verbosity < 0 ? 1 : opts->verbosity + 1;
    return true;
}

/* root and mirror: global options keep their meaning; every other word is the command's own (opts->args). */
static MUST_CHECK error_code take_own_word(int argc, char **argv, int *i, bool only_operands, cli_options *opts,
                                           error_info *err)
{
    const char *arg = argv[*i];
    const char *value = NULL;
    const option_spec *o = !only_operands && arg[0] == '-' && arg[1] ? find_option(arg, &value) : NULL;
    if (o && o->only_for == CLI_NONE && strcmp(o->long_name, "--version") != 0) {
        if (o->takes_value && !value) {
            if (*i + 1 >= argc)
                return error_set(err, ERR_USAGE, "%s needs a value", o->long_name);
            value = argv[++*i];
        }
        apply_option(o, value, opts);
        return ERR_OK;
    }
    if (opts->arg_count == CLI_MAX_ARGS)
        return error_set(err, ERR_USAGE, "too many arguments (at most %d)", CLI_MAX_ARGS);
    opts->args[opts->arg_count++] = arg;
    return ERR_OK;
}

/* An option (argv[*i] starts with '-'), with its value from the next word when it takes one. */
static MUST_CHECK error_code take_option(int argc, char **argv, int *i, cli_options *opts, error_info *err)
{
    const char *arg = argv[*i];
    const char *value;
    const option_spec *o = find_option(arg, &value);
    if (o && strcmp(o->long_name, "--version") == 0 && opts->command != CLI_STAGE && !value) {
        if (opts->command != CLI_NONE)
            return error_set(err, ERR_USAGE, "%s does not take --version; `outpost version` prints outpost's version",
                             cli_command_name(opts->command));
        opts->command = CLI_VERSION;
        return ERR_OK;
    }
    if (!o)
        return error_set(err, ERR_USAGE, "unknown option %s; `outpost help %s` lists the options", arg,
                         opts->command ? cli_command_name(opts->command) : "");
    if (!option_allowed(o, opts->command))
        return error_set(err, ERR_USAGE, "%s is not an option of %s", o->long_name,
                         opts->command ? cli_command_name(opts->command) : "outpost without a command");
    if (o->takes_value && !value) {
        if (*i + 1 >= argc)
            return error_set(err, ERR_USAGE, "%s needs a value", o->long_name);
        value = argv[++*i];
    }
    if (o->takes_value && !value[0])
        return error_set(err, ERR_USAGE, "%s needs a non-empty value", o->long_name);
    apply_option(o, value, opts);
    return ERR_OK;
}

/* An operand: stage's FILE, service's action, help's topic; anything else is unexpected. */
static MUST_CHECK error_code take_operand(const char *arg, cli_options *opts, error_info *err)
{
    if (opts->command == CLI_STAGE && !opts->file) {
        opts->file = arg;
    } else if (opts->command == CLI_SERVICE && !opts->action) {
        if (strcmp(arg, "install") != 0 && strcmp(arg, "uninstall") != 0)
            return error_set(err, ERR_USAGE, "service takes install or uninstall, not \"%s\"", arg);
        opts->action = arg;
    } else if (opts->command == CLI_HELP && opts->help_topic == CLI_NONE) {
        const command_spec *topic = find_command(arg);
        if (!topic)
            return error_set(err, ERR_USAGE, "no help for \"%s\": not a command", arg);
        opts->help_topic = topic->command;
    } else {
        return error_set(err, ERR_USAGE, "unexpected argument \"%s\"", arg);
    }
    return ERR_OK;
}

/* What the whole command line must hold once every word is read: help, a command, its operands, valid values. */
static MUST_CHECK error_code check_complete(cli_options *opts, error_info *err)
{
    if (opts->command == CLI_HELP) {
        opts->help = true;
    } else if (opts->help) {
        opts->help_topic = opts->command;
    } else if (opts->command == CLI_NONE) {
        return error_set(err, ERR_USAGE, "no command given; `outpost help` lists the commands");
    }
    if (opts->help)
        return ERR_OK;
    if (opts->command == CLI_STAGE && !opts->file)
        return error_set(err, ERR_USAGE, "stage needs the installer FILE: outpost stage FILE [--version V]");
    if (opts->command == CLI_SERVICE && !opts->action)
        return error_set(err, ERR_USAGE, "service needs what to do: outpost service install|uninstall");
    if (opts->command == CLI_ROOT && opts->arg_count == 0)
        return error_set(err, ERR_USAGE, "root needs what to do: outpost root init|sign|next|verify ...");
    if (opts->command == CLI_MIRROR &&
        (opts->arg_count == 0 || (strcmp(opts->args[0], "verify") != 0 && strcmp(opts->args[0], "trust") != 0)))
        return error_set(err, ERR_USAGE,
                         "mirror takes verify or trust: outpost mirror verify URL|DIR [--machine-id ID], outpost "
                         "mirror trust reset");
    if (opts->command == CLI_MIRROR && strcmp(opts->args[0], "trust") == 0 &&
        (opts->arg_count != 2 || strcmp(opts->args[1], "reset") != 0))
        return error_set(err, ERR_USAGE, "mirror trust takes reset: outpost mirror trust reset");
    if (opts->command == CLI_KEYGEN && !opts->output)
        return error_set(err, ERR_USAGE, "keygen needs the key file to write: outpost keygen -o FILE");
    if (opts->rollout) {
        char *end = NULL;
        double percent = strtod(opts->rollout, &end);
        if (end == opts->rollout || *end != '\0' || !(percent >= 0 && percent <= 100))
            return error_set(err, ERR_USAGE, "--rollout must be a percentage from 0 to 100, not \"%s\"", opts->rollout);
    }
    if (opts->format && strcmp(opts->format, "zip") != 0 && strcmp(opts->format, "tar.gz") != 0)
        return error_set(err, ERR_USAGE, "--format must be zip or tar.gz, not \"%s\"", opts->format);
    return ERR_OK;
}

bool cli_mirror_trust_reset(const cli_options *opts)
{
    return opts->command == CLI_MIRROR && opts->arg_count >= 1 && strcmp(opts->args[0], "trust") == 0;
}

error_code cli_parse(int argc, char **argv, cli_options *opts, error_info *err)
{
    memset(opts, 0, sizeof *opts);
    int command_index;
    const command_spec *spec = locate_command(argc, argv, &command_index);
    if (command_index > 0 && !spec)
        return error_set(err, ERR_USAGE, "unknown command \"%s\"; `outpost help` lists the commands",
                         argv[command_index]);
    opts->command = spec ? spec->command : CLI_NONE;

    bool only_operands = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        error_code rc = ERR_OK;
        if (i == command_index)
            continue;
        if (!only_operands && strcmp(arg, "--") == 0)
            only_operands = true;
        else if (!only_operands && take_repeated_v(arg, opts))
            continue;
        else if (opts->command == CLI_ROOT || opts->command == CLI_MIRROR)
            rc = take_own_word(argc, argv, &i, only_operands, opts, err);
        else if (!only_operands && arg[0] == '-' && arg[1])
            rc = take_option(argc, argv, &i, opts, err);
        else
            rc = take_operand(arg, opts, err);
        if (rc != ERR_OK)
            return rc;
    }
    return check_complete(opts, err);
}
