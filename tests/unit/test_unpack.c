/* test_unpack.c — archive extraction (agent/installer/unpack.c; the "archive" module of
 * the issue): good archives come out under generated names; zip-slip, absolute
 * paths, symbolic and hard links, devices, too many entries and expansion
 * bombs are refused and leave nothing outside the extraction directory.
 * Archives are made here with libarchive's writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/platform.h"
#include "installer/unpack.h"

#include "support.h"

typedef struct spec {
    const char *name;
    unsigned int type;   /* AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR; 0: hard link */
    const char *content; /* regular files */
    size_t zeros;        /* or this many zero bytes */
    const char *target;  /* links */
} spec;

static char *make_dir(void)
{
    return support_tempdir("unpack");
}

static void make_archive(const char *path, bool zip, const spec *entries, size_t count)
{
    struct archive *a = archive_write_new();
    if (zip) {
        archive_write_set_format_zip(a);
    } else {
        archive_write_set_format_pax_restricted(a);
        archive_write_add_filter_gzip(a);
    }
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    static char block[65536];
    for (size_t i = 0; i < count; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, entries[i].name);
        size_t size = entries[i].content ? strlen(entries[i].content) : entries[i].zeros;
        if (entries[i].type == 0) {
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_hardlink(e, entries[i].target);
            size = 0;
        } else {
            archive_entry_set_filetype(e, entries[i].type);
        }
        if (entries[i].type == AE_IFLNK)
            archive_entry_set_symlink(e, entries[i].target);
        if (entries[i].type == AE_IFCHR)
            archive_entry_set_rdev(e, 0x0103);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, entries[i].type == AE_IFREG ? (la_int64_t)size : 0);
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        if (entries[i].type == AE_IFREG && entries[i].content)
            archive_write_data(a, entries[i].content, size);
        for (size_t left = entries[i].type == AE_IFREG ? entries[i].zeros : 0; left > 0;) {
            size_t n = left < sizeof block ? left : sizeof block;
            archive_write_data(a, block, n);
            left -= n;
        }
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
}

static size_t count_dir(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Extracts entries (as zip or tar.gz) into a fresh dir/out; returns the code. */
static error_code extract(bool zip, const spec *entries, size_t count, const unpack_limits *limits, char **root_out,
                          unpack_listing *listing, error_info *err)
{
    char *root = make_dir();
    char archive[600], out[600];
    snprintf(archive, sizeof archive, "%s/in.%s", root, zip ? "zip" : "tar.gz");
    snprintf(out, sizeof out, "%s/out", root);
    make_archive(archive, zip, entries, count);
    assert_int_equal(mkdir(out, 0700), 0);
    unpack_limits defaults;
    unpack_limits_default(&defaults);
    error_code rc = unpack_extract(archive, out, limits ? limits : &defaults, listing, err);
    *root_out = root;
    return rc;
}

static void cleanup(char *root)
{
    ERROR_IGNORE(platform_remove_tree(root, NULL));
    free(root);
}

static void test_good_archive(void **unused)
{
    (void)unused;
    for (int zip = 0; zip <= 1; zip++) {
        spec entries[] = {
            {"dir/", AE_IFDIR, NULL, 0, NULL},
            {"dir/setup.msi", AE_IFREG, "installer bytes", 0, NULL},
            {"readme.txt", AE_IFREG, "hello", 0, NULL},
        };
        char *root;
        unpack_listing listing;
        error_info err;
        assert_int_equal(extract(zip, entries, 3, NULL, &root, &listing, &err), ERR_OK);
        assert_int_equal(listing.count, 2);
        assert_string_equal(listing.files[0].name, "dir/setup.msi");
        assert_int_equal(listing.files[0].size, 15);
        char needle[16]; /* "/out/entry-"; on Windows "out\entry-" after either separator */
        snprintf(needle, sizeof needle, "out%centry-", platform_path_separator());
        const char *at_out = strstr(listing.files[0].path, needle);
        assert_non_null(at_out);
        assert_true(at_out > listing.files[0].path && (at_out[-1] == '/' || at_out[-1] == platform_path_separator()));
        char *data;
        size_t len;
        assert_int_equal(platform_read_file(listing.files[1].path, 100, &data, &len, &err), ERR_OK);
        assert_string_equal(data, "hello");
        free(data);
        unpack_listing_free(&listing);
        cleanup(root);
    }
}

static void expect_refused(bool zip, const spec *entries, size_t count, const unpack_limits *limits, const char *why)
{
    char *root;
    unpack_listing listing;
    error_info err;
    assert_int_equal(extract(zip, entries, count, limits, &root, &listing, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, why));
    assert_int_equal(listing.count, 0);
    /* Nothing appeared beside the archive, nor above the root. */
    assert_int_equal(count_dir(root), 2);
    char evil[700];
    snprintf(evil, sizeof evil, "%s/../evil", root);
    assert_int_equal(access(evil, F_OK), -1);
    cleanup(root);
}

static void test_zip_slip(void **unused)
{
    (void)unused;
    spec entries[] = {{"ok.txt", AE_IFREG, "x", 0, NULL}, {"../evil", AE_IFREG, "pwned", 0, NULL}};
    expect_refused(true, entries, 2, NULL, "\"..\"");
    expect_refused(false, entries, 2, NULL, "\"..\"");
    spec nested[] = {{"a/../../evil", AE_IFREG, "pwned", 0, NULL}};
    expect_refused(true, nested, 1, NULL, "..");
    spec backslash[] = {{"a\\..\\..\\evil", AE_IFREG, "pwned", 0, NULL}};
    expect_refused(false, backslash, 1, NULL, "..");
}

static void test_absolute_path(void **unused)
{
    (void)unused;
    spec entries[] = {{"/tmp/evil", AE_IFREG, "pwned", 0, NULL}};
    expect_refused(false, entries, 1, NULL, "absolute");
    spec drive[] = {{"C:/Windows/evil.exe", AE_IFREG, "pwned", 0, NULL}};
    expect_refused(true, drive, 1, NULL, "absolute");
}

static void test_symlink(void **unused)
{
    (void)unused;
    spec entries[] = {{"link", AE_IFLNK, NULL, 0, "/etc/passwd"}};
    expect_refused(true, entries, 1, NULL, "symbolic link");
    expect_refused(false, entries, 1, NULL, "symbolic link");
}

static void test_hardlink(void **unused)
{
    (void)unused;
    spec entries[] = {{"a.txt", AE_IFREG, "x", 0, NULL}, {"b.txt", 0, NULL, 0, "a.txt"}};
    expect_refused(false, entries, 2, NULL, "hard link");
}

static void test_device(void **unused)
{
    (void)unused;
    spec entries[] = {{"null", AE_IFCHR, NULL, 0, NULL}};
    expect_refused(false, entries, 1, NULL, "device");
    spec fifo[] = {{"pipe", AE_IFIFO, NULL, 0, NULL}};
    expect_refused(false, fifo, 1, NULL, "fifo");
}

static void test_too_many_entries(void **unused)
{
    (void)unused;
    spec entries[6];
    char names[6][16];
    for (int i = 0; i < 6; i++) {
        snprintf(names[i], sizeof names[i], "f%d", i);
        entries[i] = (spec){names[i], AE_IFREG, "x", 0, NULL};
    }
    unpack_limits limits;
    unpack_limits_default(&limits);
    limits.max_entries = 5;
    expect_refused(true, entries, 6, &limits, "more than 5 entries");
    char *root;
    unpack_listing listing;
    error_info err;
    assert_int_equal(extract(true, entries, 5, &limits, &root, &listing, &err), ERR_OK);
    assert_int_equal(listing.count, 5);
    unpack_listing_free(&listing);
    cleanup(root);
}

static void test_expansion_bomb(void **unused)
{
    (void)unused;
    /* 8 MiB of zeros compress to a few KiB: far beyond 10 times the archive. */
    spec entries[] = {{"bomb.bin", AE_IFREG, NULL, 8u << 20, NULL}};
    unpack_limits limits;
    unpack_limits_default(&limits);
    limits.max_ratio = 10;
    limits.ratio_floor_bytes = 1 << 20;
    expect_refused(true, entries, 1, &limits, "expands beyond");
    expect_refused(false, entries, 1, &limits, "expands beyond");
    /* The absolute cap holds whatever the ratio. */
    limits.max_ratio = 1000000;
    limits.max_total_bytes = 4u << 20;
    expect_refused(false, entries, 1, &limits, "expands beyond");
}

static void test_not_an_archive(void **unused)
{
    (void)unused;
    char *root = make_dir();
    char path[600];
    snprintf(path, sizeof path, "%s/x.zip", root);
    FILE *f = fopen(path, "wb");
    fputs("PK\3\4 but nothing else that makes sense", f);
    fclose(f);
    unpack_limits limits;
    unpack_limits_default(&limits);
    unpack_listing listing;
    error_info err;
    assert_int_equal(unpack_extract(path, root, &limits, &listing, &err), ERR_REJECTED);
    cleanup(root);
}

static void test_name_rules(void **unused)
{
    (void)unused;
    assert_true(unpack_name_is_safe("setup.exe"));
    assert_true(unpack_name_is_safe("a/b/c.msi"));
    assert_true(unpack_name_is_safe("..a/b..c"));
    assert_false(unpack_name_is_safe(""));
    assert_false(unpack_name_is_safe(NULL));
    assert_false(unpack_name_is_safe(".."));
    assert_false(unpack_name_is_safe("a/.."));
    assert_false(unpack_name_is_safe("/etc/passwd"));
    assert_false(unpack_name_is_safe("\\\\server\\share"));
    assert_false(unpack_name_is_safe("c:evil"));
    assert_false(unpack_name_is_safe("bad\nname"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_archive),     cmocka_unit_test(test_zip_slip),
        cmocka_unit_test(test_absolute_path),    cmocka_unit_test(test_symlink),
        cmocka_unit_test(test_hardlink),         cmocka_unit_test(test_device),
        cmocka_unit_test(test_too_many_entries), cmocka_unit_test(test_expansion_bomb),
        cmocka_unit_test(test_not_an_archive),   cmocka_unit_test(test_name_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
