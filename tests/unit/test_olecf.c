/*
 * test_olecf.c — unit tests of the OLE compound file reader on files built
 * in memory: a valid file with a mini stream and a regular stream, chains
 * that loop or point outside the file, the accounting of every sector
 * (appended, free, shared and orphaned sectors and mini sectors), and the
 * work a 65,536-entry directory costs, counted with olecf_steps.
 * (test_authenticode.c covers the MSI verdicts.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "authenticode/msi.h"
#include "authenticode/olecf.h"

#include "support.h"

#define SECTOR 512
#define SECTORS 13 /* FAT, directory, mini FAT, mini stream, stream "B" (9 sectors) */
#define FILE_SIZE (SECTOR * (SECTORS + 1))
#define SPARE (SECTOR * 2) /* room for the cases that append sectors */
#define B_SIZE 4100u       /* stream "B": 8 full sectors and 4 bytes */

static uint8_t *sector(uint8_t *b, int n)
{
    return b + SECTOR * (n + 1);
}

/* FAT entry n (one FAT sector, sector 0) and mini FAT entry n (sector 2). */
static uint8_t *fat_at(uint8_t *b, int n)
{
    return sector(b, 0) + 4 * n;
}

static uint8_t *minifat_at(uint8_t *b, int n)
{
    return sector(b, 2) + 4 * n;
}

/* Directory entry n (the directory is sector 1: entries 0-3). */
static uint8_t *entry(uint8_t *b, int n)
{
    return sector(b, 1) + 128 * n;
}

/* Root entry, stream "A" of 100 bytes in the mini stream (mini sectors 0
 * and 1), whose bytes are 0, 1, 2, ..., and stream "B" of B_SIZE bytes in
 * sectors 4-12, whose bytes are i * 7 mod 256. Every sector is reached. */
static void make_file(uint8_t *b)
{
    static const uint8_t magic[8] = {0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1};
    memset(b, 0, FILE_SIZE);
    memcpy(b, magic, 8);
    support_put16(b + 0x1a, 3);
    support_put16(b + 0x1c, 0xfffe);
    support_put16(b + 0x1e, 9);
    support_put16(b + 0x20, 6);
    support_put32(b + 0x2c, 1);
    support_put32(b + 0x30, 1);
    support_put32(b + 0x38, 4096);
    support_put32(b + 0x3c, 2);
    support_put32(b + 0x40, 1);
    support_put32(b + 0x44, 0xfffffffe);
    memset(b + 0x4c, 0xff, 109 * 4);
    support_put32(b + 0x4c, 0);
    memset(sector(b, 0), 0xff, SECTOR);
    support_put32(fat_at(b, 0), 0xfffffffd);
    support_put32(fat_at(b, 1), 0xfffffffe);
    support_put32(fat_at(b, 2), 0xfffffffe);
    support_put32(fat_at(b, 3), 0xfffffffe);
    for (int s = 4; s < 12; s++)
        support_put32(fat_at(b, s), (uint32_t)s + 1);
    support_put32(fat_at(b, 12), 0xfffffffe);
    for (int e = 0; e < 4; e++) {
        support_put32(entry(b, e) + 0x44, 0xffffffff);
        support_put32(entry(b, e) + 0x48, 0xffffffff);
        support_put32(entry(b, e) + 0x4c, 0xffffffff);
    }
    uint8_t *root = entry(b, 0);
    const char *name = "Root Entry";
    for (size_t i = 0; name[i]; i++)
        root[2 * i] = (uint8_t)name[i];
    support_put16(root + 0x40, 22);
    root[0x42] = 5;
    support_put32(root + 0x4c, 1);
    support_put32(root + 0x74, 3);
    support_put32(root + 0x78, 128);
    uint8_t *a = entry(b, 1);
    a[0] = 'A';
    support_put16(a + 0x40, 4);
    a[0x42] = 2;
    support_put32(a + 0x48, 2);
    support_put32(a + 0x74, 0);
    support_put32(a + 0x78, 100);
    uint8_t *bs = entry(b, 2);
    bs[0] = 'B';
    support_put16(bs + 0x40, 4);
    bs[0x42] = 2;
    support_put32(bs + 0x74, 4);
    support_put32(bs + 0x78, B_SIZE);
    memset(sector(b, 2), 0xff, SECTOR);
    support_put32(minifat_at(b, 0), 1);
    support_put32(minifat_at(b, 1), 0xfffffffe);
    for (int i = 0; i < 100; i++)
        sector(b, 3)[i] = (uint8_t)i;
    for (uint32_t i = 0; i < B_SIZE; i++)
        sector(b, 4)[i] = (uint8_t)(i * 7);
}

static FILE *as_file(const uint8_t *b, size_t len)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    return f;
}

typedef struct collected {
    uint8_t data[B_SIZE];
    size_t len;
} collected;

static bool collect(void *ctx, const uint8_t *data, size_t len)
{
    collected *c = ctx;
    if (len > sizeof c->data - c->len)
        return false;
    memcpy(c->data + c->len, data, len);
    c->len += len;
    return true;
}

static void test_reads_streams(void **state)
{
    (void)state;
    uint8_t b[FILE_SIZE];
    make_file(b);
    FILE *f = as_file(b, sizeof b);
    olecf_file cf;
    error_info err;
    if (olecf_open(&cf, f, sizeof b, &err) != ERR_OK)
        fail_msg("open failed: %s", err.message);
    uint32_t *ids;
    size_t count;
    assert_int_equal(olecf_children(&cf, 0, &ids, &count, &err), ERR_OK);
    assert_int_equal(count, 2);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    free(ids);
    assert_int_equal(olecf_children(&cf, 1, &ids, &count, &err), ERR_OK); /* a stream has none */
    assert_int_equal(count, 0);
    assert_null(ids);
    collected c = {.len = 0};
    olecf_begin_pass(&cf);
    assert_int_equal(olecf_read_stream(&cf, 1, collect, &c, &err), ERR_OK);
    assert_int_equal(c.len, 100);
    for (int i = 0; i < 100; i++)
        assert_int_equal(c.data[i], i);
    /* A second read in the same pass is refused (sector reuse guard)... */
    c.len = 0;
    assert_int_equal(olecf_read_stream(&cf, 1, collect, &c, &err), ERR_REJECTED);
    /* ...and allowed again in a new pass. */
    c.len = 0;
    olecf_begin_pass(&cf);
    assert_int_equal(olecf_read_stream(&cf, 1, collect, &c, &err), ERR_OK);
    assert_int_equal(olecf_read_stream(&cf, 0, collect, &c, &err), ERR_REJECTED); /* root is not a stream */
    c.len = 0;
    assert_int_equal(olecf_read_stream(&cf, 2, collect, &c, &err), ERR_OK);
    assert_int_equal(c.len, B_SIZE);
    for (uint32_t i = 0; i < B_SIZE; i++)
        assert_int_equal(c.data[i], (uint8_t)(i * 7));
    olecf_close(&cf);
    fclose(f);
}

/* Broken chains are refused when the file is opened: every stream's chain
 * is walked then (see test_sector_accounting). */
static void test_broken_chains(void **state)
{
    (void)state;
    struct {
        const char *name;
        size_t offset; /* where to write value */
        uint32_t value;
    } cases[] = {
        {"mini FAT loops", SECTOR * 3, 0},
        {"mini sector past the mini stream", SECTOR * 3, 9},
        {"mini FAT chain past the end", 0x3c, 500},
        {"mini stream container past the end", SECTOR * 2 + 0x74, 77},
        {"root stream larger than the file", SECTOR * 2 + 0x78, 100000},
        {"stream starts past the mini FAT", SECTOR * 2 + 128 + 0x74, 5000},
        {"stream chain loops", SECTOR + 4 * 6, 4},
        {"stream chain past the end", SECTOR + 4 * 6, 999},
        {"stream chain ends early", SECTOR + 4 * 6, 0xfffffffe},
        {"stream starts past the end", SECTOR * 2 + 256 + 0x74, 999},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t b[FILE_SIZE];
        make_file(b);
        support_put32(b + cases[i].offset, cases[i].value);
        FILE *f = as_file(b, sizeof b);
        olecf_file cf;
        error_info err;
        error_code rc = olecf_open(&cf, f, sizeof b, &err);
        if (rc != ERR_REJECTED)
            fail_msg("%s: got %s", cases[i].name, error_name(rc));
        olecf_close(&cf);
        fclose(f);
    }
}

/* ---- Sector accounting ----------------------------------------------------
 * Each case changes the file as a writer or an attacker would and returns
 * its new length; the file must then open (want == NULL) or be refused with
 * a message holding want. */

static size_t unchanged(uint8_t *b)
{
    (void)b;
    return FILE_SIZE;
}

/* Appends sector 13 holding data the signature does not cover. */
static void append_sector(uint8_t *b)
{
    memset(sector(b, 13), 'X', SECTOR);
}

/* The GlueBall / CVE-2020-1464 pattern: data appended, the FAT marking it used. */
static size_t appended_marked_used(uint8_t *b)
{
    append_sector(b);
    support_put32(fat_at(b, 13), 0xfffffffe);
    return FILE_SIZE + SECTOR;
}

/* Data appended in a sector the FAT calls free: olecf accepts free sectors,
 * msi_open refuses a compound file that ends in one. */
static size_t appended_free(uint8_t *b)
{
    append_sector(b);
    return FILE_SIZE + SECTOR;
}

/* B's last sector moved to the end of the file: sector 12 is left free
 * inside the file, as Windows' writers leave freed sectors. */
static size_t free_sector_inside(uint8_t *b)
{
    memcpy(sector(b, 13), sector(b, 12), SECTOR);
    memset(sector(b, 12), 'X', SECTOR);
    support_put32(fat_at(b, 11), 13);
    support_put32(fat_at(b, 13), 0xfffffffe);
    support_put32(fat_at(b, 12), 0xffffffff);
    return FILE_SIZE + SECTOR;
}

/* The same, but the FAT still marks sector 12 as used. */
static size_t used_sector_inside(uint8_t *b)
{
    free_sector_inside(b);
    support_put32(fat_at(b, 12), 0xfffffffe);
    return FILE_SIZE + SECTOR;
}

/* B shrinks to 8 sectors; its chain still runs through sector 12. */
static size_t chain_longer_than_stream(uint8_t *b)
{
    support_put32(entry(b, 2) + 0x78, 4096);
    return FILE_SIZE;
}

/* B's chain runs into the directory's sector. */
static size_t stream_shares_directory(uint8_t *b)
{
    support_put32(fat_at(b, 4), 1);
    return FILE_SIZE;
}

/* The FAT listed twice in the header: one sector, two claims. */
static size_t fat_listed_twice(uint8_t *b)
{
    support_put32(b + 0x2c, 2);
    support_put32(b + 0x4c + 4, 0);
    return FILE_SIZE;
}

/* Entry 3 is a stream no storage links to (an orphan), whose chain holds
 * the appended sector: the signature covers only the directory tree. */
static size_t orphan_stream(uint8_t *b)
{
    appended_marked_used(b);
    uint8_t *c = entry(b, 3);
    c[0] = 'C';
    support_put16(c + 0x40, 4);
    c[0x42] = 2;
    support_put32(c + 0x74, 13);
    support_put32(c + 0x78, 4096);
    return FILE_SIZE + SECTOR;
}

/* Stream "C" in the tree (B's right sibling), sharing A's second mini sector. */
static size_t mini_sector_shared(uint8_t *b)
{
    support_put32(entry(b, 2) + 0x48, 3);
    uint8_t *c = entry(b, 3);
    c[0] = 'C';
    support_put16(c + 0x40, 4);
    c[0x42] = 2;
    support_put32(c + 0x74, 1);
    support_put32(c + 0x78, 10);
    return FILE_SIZE;
}

/* The mini stream grows to 3 mini sectors; the third is marked used by
 * the mini FAT, but no stream reaches it. */
static size_t mini_sector_used_unreached(uint8_t *b)
{
    support_put32(entry(b, 0) + 0x78, 192);
    support_put32(minifat_at(b, 2), 0xfffffffe);
    return FILE_SIZE;
}

/* A used mini FAT entry past the end of the mini stream describes no byte
 * of the file (osslsigncode 2.9 writes one). */
static size_t minifat_entry_past_mini_stream(uint8_t *b)
{
    support_put32(minifat_at(b, 2), 0xfffffffe);
    return FILE_SIZE;
}

/* A's second mini sector moves to mini sector 2: mini sector 1 is left free. */
static size_t free_mini_sector_inside(uint8_t *b)
{
    memcpy(sector(b, 3) + 128, sector(b, 3) + 64, 64);
    memset(sector(b, 3) + 64, 'X', 64);
    support_put32(entry(b, 0) + 0x78, 192);
    support_put32(minifat_at(b, 0), 2);
    support_put32(minifat_at(b, 1), 0xffffffff);
    support_put32(minifat_at(b, 2), 0xfffffffe);
    return FILE_SIZE;
}

/* The mini stream ends with a free mini sector. */
static size_t mini_stream_ends_free(uint8_t *b)
{
    support_put32(entry(b, 0) + 0x78, 192);
    return FILE_SIZE;
}

/* The mini stream's container grows by an appended sector (and the root
 * entry's size with it), its mini sectors free. */
static size_t mini_stream_grown(uint8_t *b)
{
    append_sector(b);
    support_put32(fat_at(b, 3), 13);
    support_put32(fat_at(b, 13), 0xfffffffe);
    support_put32(entry(b, 0) + 0x78, 128 + SECTOR);
    return FILE_SIZE + SECTOR;
}

static void test_sector_accounting(void **state)
{
    (void)state;
    struct {
        const char *name;
        size_t (*change)(uint8_t *b);
        const char *want; /* NULL: opens */
    } cases[] = {
        {"every sector reached", unchanged, NULL},
        {"appended sector marked used", appended_marked_used, "sector 13 is marked in use but no stream or table"},
        {"appended free sector", appended_free, NULL},
        {"free sector inside the file", free_sector_inside, NULL},
        {"used sector inside the file that nothing reaches", used_sector_inside, "sector 12 is marked in use"},
        {"chain longer than its stream", chain_longer_than_stream, "sector 12 is marked in use"},
        {"stream chain shares the directory's sector", stream_shares_directory, "sector 1 is claimed twice"},
        {"FAT sector listed twice", fat_listed_twice, "sector 0 is claimed twice"},
        {"orphan stream's chain", orphan_stream, "sector 13 is marked in use"},
        {"mini sector shared by two streams", mini_sector_shared, "mini sector 1 is claimed twice"},
        {"mini sector used that nothing reaches", mini_sector_used_unreached, "mini sector 2 is marked in use"},
        {"used mini FAT entry past the mini stream", minifat_entry_past_mini_stream, NULL},
        {"free mini sector inside the mini stream", free_mini_sector_inside, NULL},
        {"mini stream ends in a free mini sector", mini_stream_ends_free, "mini stream ends in unused space"},
        {"mini stream container grown by an appended sector", mini_stream_grown, "mini stream ends in unused space"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t b[FILE_SIZE + SPARE];
        memset(b, 0, sizeof b);
        make_file(b);
        size_t len = cases[i].change(b);
        FILE *f = as_file(b, len);
        olecf_file cf;
        error_info err;
        error_code rc = olecf_open(&cf, f, len, &err);
        if (!cases[i].want && rc != ERR_OK)
            fail_msg("%s: refused: %s", cases[i].name, err.message);
        if (cases[i].want && (rc != ERR_REJECTED || !strstr(err.message, cases[i].want)))
            fail_msg("%s: got %s (%s), want a rejection naming \"%s\"", cases[i].name, error_name(rc),
                     rc == ERR_OK ? "" : err.message, cases[i].want);
        if (rc == ERR_OK) { /* what opens still reads back intact */
            collected c = {.len = 0};
            olecf_begin_pass(&cf);
            assert_int_equal(olecf_read_stream(&cf, 1, collect, &c, &err), ERR_OK);
            assert_int_equal(c.len, 100);
            assert_int_equal(c.data[99], 99);
            c.len = 0;
            assert_int_equal(olecf_read_stream(&cf, 2, collect, &c, &err), ERR_OK);
            assert_int_equal(c.len, B_SIZE);
            assert_int_equal(c.data[B_SIZE - 1], (uint8_t)((B_SIZE - 1) * 7));
        }
        olecf_close(&cf);
        fclose(f);
    }
}

/* ---- A large directory ------------------------------------------------------
 * A version 4 file (4096-byte sectors): FAT sectors first, then the
 * directory: the root and entries - 1 storages, each the right sibling of
 * the one before, all children of the root. Entries past `entries` in the
 * last directory sector are unused. The caller frees the buffer. */

#define BIG_SECTOR 4096u

static uint8_t *make_big_directory(uint32_t entries, uint32_t dir_sectors, size_t *len)
{
    uint32_t per = BIG_SECTOR / 4, fat_sectors = 1;
    while (fat_sectors * per < fat_sectors + dir_sectors)
        fat_sectors++;
    uint32_t sectors = fat_sectors + dir_sectors;
    *len = (size_t)(sectors + 1) * BIG_SECTOR;
    uint8_t *b = calloc(1, *len);
    assert_non_null(b);
    static const uint8_t magic[8] = {0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1};
    memcpy(b, magic, 8);
    support_put16(b + 0x1a, 4);
    support_put16(b + 0x1c, 0xfffe);
    support_put16(b + 0x1e, 12);
    support_put16(b + 0x20, 6);
    support_put32(b + 0x28, dir_sectors);
    support_put32(b + 0x2c, fat_sectors);
    support_put32(b + 0x30, fat_sectors);
    support_put32(b + 0x38, 4096);
    support_put32(b + 0x3c, 0xfffffffe);
    support_put32(b + 0x44, 0xfffffffe);
    memset(b + 0x4c, 0xff, 109 * 4);
    uint8_t *fat = b + BIG_SECTOR;
    memset(fat, 0xff, (size_t)fat_sectors * BIG_SECTOR);
    for (uint32_t s = 0; s < fat_sectors; s++) {
        support_put32(b + 0x4c + 4 * s, s);
        support_put32(fat + 4 * s, 0xfffffffd);
    }
    for (uint32_t s = fat_sectors; s + 1 < sectors; s++)
        support_put32(fat + 4 * s, s + 1);
    support_put32(fat + 4 * (sectors - 1), 0xfffffffe);
    uint8_t *dir = b + (size_t)(fat_sectors + 1) * BIG_SECTOR;
    for (uint32_t i = 0; i < dir_sectors * (BIG_SECTOR / 128); i++) {
        uint8_t *e = dir + (size_t)128 * i;
        support_put32(e + 0x44, 0xffffffff);
        support_put32(e + 0x48, 0xffffffff);
        support_put32(e + 0x4c, 0xffffffff);
        if (i >= entries)
            continue;
        e[0] = i == 0 ? 'R' : 'S';
        support_put16(e + 0x40, 4);
        e[0x42] = i == 0 ? 5 : 1;
        if (i == 0)
            support_put32(e + 0x4c, 1);
        else if (i + 1 < entries)
            support_put32(e + 0x48, i + 1);
        support_put32(e + 0x74, i == 0 ? 0xfffffffe : 0);
    }
    return b;
}

/* Opening a 65,536-entry directory and listing every storage's children
 * (what the MSI digest walk does) costs a bounded number of steps per
 * entry and sector; it used to cost one directory scan per storage. */
static void test_large_directory_is_linear(void **state)
{
    (void)state;
    const uint32_t entries = OLECF_MAX_ENTRIES, dir_sectors = OLECF_MAX_ENTRIES * 128 / BIG_SECTOR;
    size_t len;
    uint8_t *b = make_big_directory(entries, dir_sectors, &len);
    FILE *f = as_file(b, len);
    free(b);
    olecf_file cf;
    error_info err;
    if (olecf_open(&cf, f, len, &err) != ERR_OK)
        fail_msg("open failed: %s", err.message);
    assert_int_equal(cf.entry_count, entries);
    uint64_t bound = 8 * ((uint64_t)entries + cf.sector_count);
    assert_true(olecf_steps(&cf) <= bound);
    size_t total = 0;
    for (uint32_t id = 0; id < entries; id++) {
        uint32_t *ids;
        size_t count;
        assert_int_equal(olecf_children(&cf, id, &ids, &count, &err), ERR_OK);
        total += count;
        free(ids);
        if (olecf_steps(&cf) > bound)
            fail_msg("%llu steps after listing %lu storages: the work is not linear",
                     (unsigned long long)olecf_steps(&cf), (unsigned long)id + 1);
    }
    assert_int_equal(total, entries - 1);
    olecf_close(&cf);
    fclose(f);

    /* Through the MSI digest walk, which lists every storage twice over. */
    b = make_big_directory(entries, dir_sectors, &len);
    f = as_file(b, len);
    free(b);
    msi_package msi;
    authenticode_result result;
    memset(&result, 0, sizeof result);
    unsigned char digest[MBEDTLS_MD_MAX_SIZE];
    assert_int_equal(msi_open(&msi, f, len, &result, &err), ERR_OK);
    assert_int_equal(msi_hash(&msi, MBEDTLS_MD_SHA256, digest, &result, &err), ERR_OK);
    if (olecf_steps(&msi.cf) > bound)
        fail_msg("msi_hash: %llu steps for %lu entries", (unsigned long long)olecf_steps(&msi.cf),
                 (unsigned long)entries);
    msi_close(&msi);
    fclose(f);

    /* One directory sector more is over the cap, and refused as such. */
    b = make_big_directory(entries, dir_sectors + 1, &len);
    f = as_file(b, len);
    free(b);
    assert_int_equal(olecf_open(&cf, f, len, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "more than 65536 entries"));
    olecf_close(&cf);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_streams),
        cmocka_unit_test(test_broken_chains),
        cmocka_unit_test(test_sector_accounting),
        cmocka_unit_test(test_large_directory_is_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
