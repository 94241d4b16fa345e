/*
 * cli.h — the command line of PRODUCT.md section 1 turned into options.
 *
 *   outpost [-c CONFIG] [--state-dir DIR] [--json] [-q|-v] COMMAND [ARGS]
 *
 * Global options are accepted before or after the command. Parsing never
 * touches the file system; strings in cli_options point into argv.
 */
#ifndef OUTPOST_CLI_H
#define OUTPOST_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "base/error.h"

typedef enum {
    CLI_NONE = 0,
    CLI_CHECK,
    CLI_UPDATE,
    CLI_STAGE,
    CLI_DEPLOY,
    CLI_ROLLBACK,
    CLI_BUNDLE,
    CLI_REPORT,
    CLI_RUN,
    CLI_STATUS,
    CLI_VERSION,
    CLI_HELP,
    CLI_KEYGEN,
    CLI_PUBLISH,
    CLI_SERVICE,
    CLI_ROOT,  /* root init|sign|next|verify: its own words, in args */
    CLI_MIRROR /* mirror verify|trust reset: its own words, in args */
} cli_command;

#define CLI_MAX_ARGS 64

typedef struct cli_options {
    cli_command command;
    cli_command help_topic;         /* `help COMMAND` / `COMMAND --help`: which command */
    bool help;                      /* print help for help_topic and exit 0 */
    const char *config_path;        /* -c / --config; NULL: OUTPOST_CONFIG or the default */
    const char *state_dir;          /* --state-dir; NULL: from the configuration */
    bool json;                      /* --json */
    int verbosity;                  /* -1 with -q, 0 by default, +1 per -v */
    bool force;                     /* update --force */
    bool allow_downgrade;           /* update/stage --allow-downgrade */
    bool dry_run;                   /* deploy --dry-run */
    bool deploy;                    /* rollback --deploy */
    const char *file;               /* stage FILE */
    const char *version;            /* stage --version V */
    const char *format;             /* bundle --format zip|tar.gz (NULL: zip) */
    const char *output;             /* bundle / keygen -o FILE */
    const char *max_age;            /* status --max-age DURATION */
    const char *dir;                /* publish --dir DIR */
    const char *rollout;            /* publish --rollout PERCENT (validated: 0..100) */
    const char *public_out;         /* keygen --public-out FILE: the public key's file */
    const char *action;             /* service install|uninstall (validated) */
    const char *args[CLI_MAX_ARGS]; /* root, mirror: every argument after the command word that is not a
                                       global option, in order (cmd_root.c, cmd_mirror.c parse them) */
    int arg_count;
} cli_options;

/* Parses argv into *opts. ERR_USAGE with a one-line message on bad input. */
MUST_CHECK error_code cli_parse(int argc, char **argv, cli_options *opts, error_info *err);

/* Prints the overview (CLI_NONE) or one command's help to out. */
void cli_print_help(FILE *out, cli_command command);

/* The command's name as typed ("check"); "outpost" for CLI_NONE. */
const char *cli_command_name(cli_command command);

/* Whether opts is `mirror trust reset` (which, unlike mirror verify, writes state). */
bool cli_mirror_trust_reset(const cli_options *opts);

#endif
