/*
 * fleet_sim.c — the fleet simulation of bench/fleet_bench.py (issue 35,
 * PRODUCT.md section 11): what a day of hourly runs does for each of many
 * machine ids, decided by the agent's own modules: the staged rollout
 * (mirror/rollout.c) and the maintenance windows (installer/policy.c, the
 * same calls `run`'s deploy gate makes) in each group's time zone (the
 * platform's local offset under TZ). Not a test; the benchmark checks its
 * answers for a sample of ids against the real binary under libfaketime.
 *
 *   fleet_sim --machines N --start UTC_S --hours H --salt HEX --percent P
 *             --jitter S --group 'ZONE|WINDOW' [--group ...]
 *
 * Machine i is "fleet-NNNNN", in group i mod the group count; even ids run
 * from the Debian package's systemd timer (OnCalendar=hourly,
 * RandomizedDelaySec=10min, FixedRandomDelay=true: one delay per machine),
 * odd ids from the Windows task (an hourly trigger with RandomDelay PT10M,
 * drawn again for every run). Each run also waits schedule.jitter (a draw
 * up to S seconds). The draws are uniform and reproducible: the 32-bit
 * rollout bucket of the machine id under a salt of their own (SHA-256), not
 * systemd's or the Task Scheduler's own generators.
 *
 * A run asks the mirror for the manifest; a machine inside the rollout
 * downloads the installer at its first run and deploys at its first run
 * inside its window. One JSON line per machine on stdout:
 * {"id","zone","window","platform","eligible","runs":[UTC_S...],
 *  "download_run","deploy_run","waiting_until"} (runs are indexes into
 * "runs", -1 for none; waiting_until: the next window's start after the
 * first run, when the deploy waited there, else 0).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "installer/policy.h"
#include "mirror/rollout.h"
#include "platform/platform.h"

#define MAX_GROUPS 16
#define MAX_HOURS 48
#define DELAY_S 600 /* RandomizedDelaySec=10min, RandomDelay PT10M */

typedef struct group {
    char zone[64];
    char window[64];
    config_window parsed;
} group;

static error_code process_offset(void *user, int64_t utc_s, int32_t *offset_s, error_info *err)
{
    (void)user;
    return platform_local_offset(utc_s, offset_s, err);
}

/* A uniform draw in [0, span) for id under tag: the id's rollout bucket with
 * the tag's bytes as the salt. */
static int64_t draw(const char *tag, const char *id, int64_t span)
{
    char salt[64] = "";
    for (size_t i = 0; tag[i] && i < 31; i++)
        snprintf(salt + 2 * i, 3, "%02x", (unsigned char)tag[i]);
    uint32_t bucket = 0;
    error_info err = {0};
    if (span <= 0 || rollout_bucket(salt, id, &bucket, &err) != ERR_OK)
        return 0;
    return (int64_t)(((uint64_t)bucket * (uint64_t)span) >> 32);
}

static int usage(void)
{
    fprintf(stderr, "usage: fleet_sim --machines N --start UTC_S --hours H --salt HEX --percent P --jitter S "
                    "--group 'ZONE|WINDOW' [--group ...]\n");
    return 2;
}

int main(int argc, char **argv)
{
    long machines = 0, hours = 24;
    int64_t start = 0, jitter = 0;
    const char *salt = NULL;
    double percent = 100;
    group groups[MAX_GROUPS];
    size_t ngroups = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--machines"))
            machines = strtol(v, NULL, 10);
        else if (!strcmp(k, "--start"))
            start = strtoll(v, NULL, 10);
        else if (!strcmp(k, "--hours"))
            hours = strtol(v, NULL, 10);
        else if (!strcmp(k, "--salt"))
            salt = v;
        else if (!strcmp(k, "--percent"))
            percent = strtod(v, NULL);
        else if (!strcmp(k, "--jitter"))
            jitter = strtoll(v, NULL, 10);
        else if (!strcmp(k, "--group") && ngroups < MAX_GROUPS) {
            group *g = &groups[ngroups];
            const char *bar = strchr(v, '|');
            if (!bar || (size_t)(bar - v) >= sizeof g->zone || strlen(bar + 1) >= sizeof g->window)
                return usage();
            snprintf(g->zone, sizeof g->zone, "%.*s", (int)(bar - v), v);
            snprintf(g->window, sizeof g->window, "%s", bar + 1);
            error_info err = {0};
            if (config_parse_window(g->window, &g->parsed, &err) != ERR_OK) {
                fprintf(stderr, "fleet_sim: %s: %s\n", g->window, err.message);
                return 2;
            }
            ngroups++;
        } else
            return usage();
    }
    if (machines <= 0 || !salt || ngroups == 0 || hours <= 0 || hours > MAX_HOURS || start <= 0)
        return usage();

    policy_zone zone = {process_offset, NULL};
    for (size_t gi = 0; gi < ngroups; gi++) {
        const group *g = &groups[gi];
        if (setenv("TZ", g->zone, 1) != 0)
            return 1;
        for (long m = (long)gi; m < machines; m += (long)ngroups) {
            char id[32];
            snprintf(id, sizeof id, "fleet-%05ld", m);
            bool windows_task = m % 2 == 1;
            int64_t fixed = draw("timer", id, DELAY_S);
            int64_t runs[MAX_HOURS];
            for (long h = 0; h < hours; h++) {
                char tag[32];
                snprintf(tag, sizeof tag, "task-%ld", h);
                int64_t delay = windows_task ? draw(tag, id, DELAY_S) : fixed;
                snprintf(tag, sizeof tag, "jitter-%ld", h);
                runs[h] = start + h * 3600 + delay + draw(tag, id, jitter);
            }
            bool eligible = false;
            error_info err = {0};
            if (rollout_eligible(salt, id, percent, &eligible, NULL, &err) != ERR_OK) {
                fprintf(stderr, "fleet_sim: rollout: %s\n", err.message);
                return 1;
            }
            long download_run = eligible ? 0 : -1, deploy_run = -1;
            int64_t waiting_until = 0;
            for (long h = 0; eligible && h < hours && deploy_run < 0; h++) {
                bool inside = false;
                if (policy_in_window(&g->parsed, 1, &zone, runs[h], &inside, &err) != ERR_OK) {
                    fprintf(stderr, "fleet_sim: window: %s\n", err.message);
                    return 1;
                }
                if (inside)
                    deploy_run = h;
                else if (h == 0 && policy_next_window(&g->parsed, 1, &zone, runs[h], &waiting_until, &err) != ERR_OK)
                    waiting_until = -1; /* no window in 16 days */
            }
            printf("{\"id\":\"%s\",\"zone\":\"%s\",\"window\":\"%s\",\"platform\":\"%s\",\"eligible\":%s,\"runs\":[",
                   id, g->zone, g->window, windows_task ? "windows" : "linux", eligible ? "true" : "false");
            for (long h = 0; h < hours; h++)
                printf("%s%" PRId64, h ? "," : "", runs[h]);
            printf("],\"download_run\":%ld,\"deploy_run\":%ld,\"waiting_until\":%" PRId64 "}\n", download_run,
                   deploy_run, waiting_until);
        }
    }
    return 0;
}
