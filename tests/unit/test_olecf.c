/*
 * test_olecf.c — unit tests of the OLE compound file reader on files built
 * in memory: a valid file with a mini stream, and chains that loop or point
 * outside the file. (test_authenticode.c covers the MSI verdicts.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "authenticode/olecf.h"

#define SECTOR 512
#define FILE_SIZE (SECTOR * 5) /* header, FAT, directory, mini FAT, mini stream */

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static uint8_t *sector(uint8_t *b, int n)
{
    return b + SECTOR * (n + 1);
}

/* Root entry plus stream "A" of 100 bytes in the mini stream (mini sectors
 * 0 and 1), whose bytes are 0, 1, 2, ... */
static void make_file(uint8_t *b)
{
    static const uint8_t magic[8] = {0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1};
    memset(b, 0, FILE_SIZE);
    memcpy(b, magic, 8);
    put16(b + 0x1a, 3);
    put16(b + 0x1c, 0xfffe);
    put16(b + 0x1e, 9);
    put16(b + 0x20, 6);
    put32(b + 0x2c, 1);
    put32(b + 0x30, 1);
    put32(b + 0x38, 4096);
    put32(b + 0x3c, 2);
    put32(b + 0x40, 1);
    put32(b + 0x44, 0xfffffffe);
    memset(b + 0x4c, 0xff, 109 * 4);
    put32(b + 0x4c, 0);
    uint8_t *fat = sector(b, 0);
    memset(fat, 0xff, SECTOR);
    put32(fat, 0xfffffffd);
    put32(fat + 4, 0xfffffffe);
    put32(fat + 8, 0xfffffffe);
    put32(fat + 12, 0xfffffffe);
    uint8_t *dir = sector(b, 1);
    for (int e = 0; e < 4; e++) {
        put32(dir + 128 * e + 0x44, 0xffffffff);
        put32(dir + 128 * e + 0x48, 0xffffffff);
        put32(dir + 128 * e + 0x4c, 0xffffffff);
    }
    const char *root = "Root Entry";
    for (size_t i = 0; root[i]; i++)
        dir[2 * i] = (uint8_t)root[i];
    put16(dir + 0x40, 22);
    dir[0x42] = 5;
    put32(dir + 0x4c, 1);
    put32(dir + 0x74, 3);
    put32(dir + 0x78, 128);
    uint8_t *a = dir + 128;
    a[0] = 'A';
    put16(a + 0x40, 4);
    a[0x42] = 2;
    put32(a + 0x74, 0);
    put32(a + 0x78, 100);
    uint8_t *minifat = sector(b, 2);
    memset(minifat, 0xff, SECTOR);
    put32(minifat, 1);
    put32(minifat + 4, 0xfffffffe);
    for (int i = 0; i < 100; i++)
        sector(b, 3)[i] = (uint8_t)i;
}

static FILE *as_file(const uint8_t *b, size_t len)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    return f;
}

typedef struct collected {
    uint8_t data[256];
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

static void test_reads_mini_stream(void **state)
{
    (void)state;
    uint8_t b[FILE_SIZE];
    make_file(b);
    FILE *f = as_file(b, sizeof b);
    olecf_file cf;
    error_info err;
    assert_int_equal(olecf_open(&cf, f, sizeof b, &err), ERR_OK);
    uint32_t *ids;
    size_t count;
    assert_int_equal(olecf_children(&cf, 0, &ids, &count, &err), ERR_OK);
    assert_int_equal(count, 1);
    assert_int_equal(ids[0], 1);
    free(ids);
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
    olecf_close(&cf);
    fclose(f);
}

static void test_broken_chains(void **state)
{
    (void)state;
    struct {
        const char *name;
        size_t offset; /* where to write value */
        uint32_t value;
        bool at_open;  /* rejected by olecf_open (else by the stream read) */
    } cases[] = {
        {"mini FAT loops", SECTOR * 3, 0, false},
        {"mini sector past the mini stream", SECTOR * 3, 9, false},
        {"mini FAT chain past the end", 0x3c, 500, true},
        {"mini stream container past the end", SECTOR * 2 + 0x74, 77, true},
        {"root stream larger than the file", SECTOR * 2 + 0x78, 100000, true},
        {"stream starts past the mini FAT", SECTOR * 2 + 128 + 0x74, 5000, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t b[FILE_SIZE];
        make_file(b);
        put32(b + cases[i].offset, cases[i].value);
        FILE *f = as_file(b, sizeof b);
        olecf_file cf;
        error_info err;
        error_code rc = olecf_open(&cf, f, sizeof b, &err);
        if (!cases[i].at_open) {
            if (rc != ERR_OK)
                fail_msg("%s: open failed: %s", cases[i].name, err.message);
            collected c = {.len = 0};
            olecf_begin_pass(&cf);
            rc = olecf_read_stream(&cf, 1, collect, &c, &err);
        }
        if (rc != ERR_REJECTED)
            fail_msg("%s: got %s", cases[i].name, error_name(rc));
        olecf_close(&cf);
        fclose(f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_mini_stream),
        cmocka_unit_test(test_broken_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
