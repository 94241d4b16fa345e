/*
 * fuzz_unpack.c — libFuzzer target for archive extraction (unpack.h): the
 * input is written to a file and extracted into a fresh temporary directory
 * with small caps (64 entries, 1 MiB). Besides memory errors, it checks
 * that nothing is ever written outside that directory: every listed path
 * lies inside it, and the directory's parent holds only the archive and
 * the directory afterwards.
 */
#define _GNU_SOURCE /* mkdtemp, nftw: this test program is Linux-only */
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "installer/unpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char root[] = "/tmp/outpost-fuzz-unpack-XXXXXX";
    if (!mkdtemp(root))
        abort();
    char archive[sizeof root + 16], dest[sizeof root + 16];
    snprintf(archive, sizeof archive, "%s/in", root);
    snprintf(dest, sizeof dest, "%s/out", root);
    FILE *f = fopen(archive, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
    if (mkdir(dest, 0700) != 0)
        abort();

    unpack_limits limits;
    unpack_limits_default(&limits);
    limits.max_entries = 64;
    limits.max_total_bytes = 1 << 20;
    limits.ratio_floor_bytes = 1 << 20;
    unpack_listing listing;
    error_info err;
    error_code rc = unpack_extract(archive, dest, &limits, &listing, &err);
    if (rc == ERR_OK) {
        for (size_t i = 0; i < listing.count; i++) {
            if (strncmp(listing.files[i].path, dest, strlen(dest)) != 0 || strstr(listing.files[i].path, "..") ||
                !unpack_name_is_safe(listing.files[i].name))
                abort();
        }
        unpack_listing_free(&listing);
    } else if (err.message[0] == '\0') {
        abort();
    }
    if (count_entries(root) != 2) /* "in" and "out": nothing beside them */
        abort();
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
