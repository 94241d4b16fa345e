/*
 * test_msi.c — unit tests of the MSI ProductVersion reader (msi.c) on
 * compound files built here: stream-name decoding, the string pool (short
 * and long string references, empty ids, strings over 64 KiB), the
 * Property table, and broken pools and tables. The Authenticode side of
 * msi.c is covered by test_authenticode.c; a real MSI made by wixl by
 * tests/integration/test_version_binding.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "authenticode/msi.h"

#include "support.h"

#define SECTOR 512u
#define MINI 64u
#define CUTOFF 4096u
#define FAT_SECTORS 2u /* 256 sectors: enough for every file built here */
#define DIR_SECTORS 2u /* 8 entries */
#define MAX_FILE (260u * SECTOR)
#define ENDOFCHAIN 0xfffffffeu
#define FREESECT 0xffffffffu

/* ---- Stream names: Wine's encode_streamname, to build files with ---- */

static int mime(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 36;
    if (c == '.')
        return 62;
    return c == '_' ? 63 : -1;
}

/* UTF-16LE of name as MSI stores it (table: with the 0x4840 marker); bytes with the NUL. */
static size_t encode_name(const char *name, bool table, uint8_t out[64])
{
    size_t n = 0;
    if (table) {
        support_put16(out, 0x4840);
        n = 2;
    }
    while (*name) {
        int a = mime(name[0]), b = name[1] ? mime(name[1]) : -1;
        uint16_t unit = (uint16_t)(unsigned char)name[0];
        if (a >= 0 && b >= 0) {
            unit = (uint16_t)(0x3800 + a + (b << 6));
            name += 2;
        } else if (a >= 0) {
            unit = (uint16_t)(0x4800 + a);
            name++;
        } else {
            name++;
        }
        support_put16(out + n, unit);
        n += 2;
    }
    support_put16(out + n, 0);
    return n + 2;
}

static void test_decode_stream_names(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        bool table;
        const char *decoded;
    } cases[] = {
        {"_StringPool", true, "!_StringPool"},
        {"_StringData", true, "!_StringData"},
        {"Property", true, "!Property"},
        {"Binary.Logo", false, "Binary.Logo"},
        {"\005DigitalSignature", false, "\005DigitalSignature"},
        {"x", false, "x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t raw[64];
        char out[72];
        size_t len = encode_name(cases[i].name, cases[i].table, raw);
        msi_decode_stream_name(raw, len, out, sizeof out);
        if (strcmp(out, cases[i].decoded) != 0)
            fail_msg("case %zu: \"%s\", expected \"%s\"", i, out, cases[i].decoded);
    }
    /* Non-ASCII code units, and a buffer too small: cut, terminated. */
    uint8_t raw[6] = {0xe9, 0x00, 0x00, 0x4e, 0, 0};
    char out[4];
    msi_decode_stream_name(raw, sizeof raw, out, sizeof out);
    assert_string_equal(out, "??");
    uint8_t packed[64];
    size_t len = encode_name("_StringPool", true, packed);
    msi_decode_stream_name(packed, len, out, sizeof out);
    assert_string_equal(out, "!_S");
}

/* ---- A compound file holding root streams ---- */

typedef struct stream_spec {
    const char *name; /* decoded name */
    bool table;       /* encoded with the table marker */
    const uint8_t *data;
    size_t len;
} stream_spec;

/* Sector n's bytes (the header is sector -1). */
static uint8_t *sector(uint8_t *b, uint32_t n)
{
    return b + SECTOR * (n + 1);
}

/* Lays out: FAT, directory, mini FAT (1 sector), mini stream, then the
 * regular streams (len >= CUTOFF). Every sector is allocated and reached. */
static size_t build_file(uint8_t *b, const stream_spec *streams, size_t count)
{
    static const uint8_t magic[8] = {0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1};
    assert_true(count + 1 <= DIR_SECTORS * 4);
    memset(b, 0, MAX_FILE);
    memcpy(b, magic, 8);
    support_put16(b + 0x18, 0x3e);
    support_put16(b + 0x1a, 3);
    support_put16(b + 0x1c, 0xfffe);
    support_put16(b + 0x1e, 9);
    support_put16(b + 0x20, 6);
    support_put32(b + 0x2c, FAT_SECTORS);
    support_put32(b + 0x30, FAT_SECTORS);
    support_put32(b + 0x38, CUTOFF);
    uint32_t minifat_sector = FAT_SECTORS + DIR_SECTORS;
    support_put32(b + 0x3c, minifat_sector);
    support_put32(b + 0x40, 1);
    support_put32(b + 0x44, ENDOFCHAIN);
    memset(b + 0x4c, 0xff, 109 * 4);
    for (uint32_t i = 0; i < FAT_SECTORS; i++)
        support_put32(b + 0x4c + 4 * i, i);

    uint32_t fat[FAT_SECTORS * 128];
    for (size_t i = 0; i < FAT_SECTORS * 128; i++)
        fat[i] = FREESECT;
    for (uint32_t i = 0; i < FAT_SECTORS; i++)
        fat[i] = 0xfffffffdu;
    for (uint32_t i = 0; i < DIR_SECTORS; i++)
        fat[FAT_SECTORS + i] = i + 1 < DIR_SECTORS ? FAT_SECTORS + i + 1 : ENDOFCHAIN;
    fat[minifat_sector] = ENDOFCHAIN;

    uint8_t *dir = sector(b, FAT_SECTORS);
    for (uint32_t e = 0; e < DIR_SECTORS * 4; e++) {
        support_put32(dir + 128 * e + 0x44, FREESECT);
        support_put32(dir + 128 * e + 0x48, FREESECT);
        support_put32(dir + 128 * e + 0x4c, FREESECT);
    }
    const char *root = "Root Entry";
    for (size_t i = 0; root[i]; i++)
        dir[2 * i] = (uint8_t)root[i];
    support_put16(dir + 0x40, 22);
    dir[0x42] = 5;
    dir[0x43] = 1;
    if (count)
        support_put32(dir + 0x4c, 1);

    /* Mini streams first: their mini sectors, back to back. */
    uint8_t mini[CUTOFF * 2];
    uint32_t minifat[128];
    for (size_t i = 0; i < 128; i++)
        minifat[i] = FREESECT;
    uint32_t mini_used = 0, next = minifat_sector + 1;
    for (size_t s = 0; s < count; s++) {
        uint8_t *e = dir + 128 * (s + 1);
        uint16_t name_len = (uint16_t)encode_name(streams[s].name, streams[s].table, e);
        support_put16(e + 0x40, name_len);
        e[0x42] = 2;
        e[0x43] = 1;
        if (s + 1 < count)
            support_put32(e + 0x48, (uint32_t)(s + 2)); /* a chain of right siblings */
        support_put32(e + 0x78, (uint32_t)streams[s].len);
        if (streams[s].len >= CUTOFF || streams[s].len == 0) {
            support_put32(e + 0x74, streams[s].len ? 0 : ENDOFCHAIN);
            continue;
        }
        uint32_t sectors = (uint32_t)((streams[s].len + MINI - 1) / MINI);
        assert_true((mini_used + sectors) * MINI <= sizeof mini);
        support_put32(e + 0x74, mini_used);
        memcpy(mini + mini_used * MINI, streams[s].data, streams[s].len);
        for (uint32_t i = 0; i < sectors; i++)
            minifat[mini_used + i] = i + 1 < sectors ? mini_used + i + 1 : ENDOFCHAIN;
        mini_used += sectors;
    }
    for (size_t i = 0; i < 128; i++)
        support_put32(sector(b, minifat_sector) + 4 * i, minifat[i]);
    if (mini_used) {
        uint32_t bytes = mini_used * MINI, sectors = (bytes + SECTOR - 1) / SECTOR;
        support_put32(dir + 0x74, next);
        support_put32(dir + 0x78, bytes);
        memcpy(sector(b, next), mini, bytes);
        for (uint32_t i = 0; i < sectors; i++)
            fat[next + i] = i + 1 < sectors ? next + i + 1 : ENDOFCHAIN;
        next += sectors;
    } else {
        support_put32(dir + 0x74, ENDOFCHAIN);
    }
    /* Then the regular streams. */
    for (size_t s = 0; s < count; s++) {
        if (streams[s].len < CUTOFF)
            continue;
        uint32_t sectors = (uint32_t)((streams[s].len + SECTOR - 1) / SECTOR);
        assert_true(next + sectors <= FAT_SECTORS * 128 && (next + sectors + 1) * SECTOR <= MAX_FILE);
        support_put32(dir + 128 * (s + 1) + 0x74, next);
        memcpy(sector(b, next), streams[s].data, streams[s].len);
        for (uint32_t i = 0; i < sectors; i++)
            fat[next + i] = i + 1 < sectors ? next + i + 1 : ENDOFCHAIN;
        next += sectors;
    }
    for (size_t i = 0; i < FAT_SECTORS * 128; i++)
        support_put32(sector(b, 0) + 4 * i, fat[i]);
    return (size_t)(next + 1) * SECTOR;
}

/* ---- The string pool and the Property table ---- */

typedef struct database {
    uint8_t pool[4096];
    size_t pool_len;
    uint8_t *data; /* malloc'd */
    size_t data_len;
    uint8_t table[512];
    size_t table_len;
} database;

/* strings[i] gets id i + 1; "" is an empty id (0, 0). A string longer than
 * 64 KiB takes two pool entries. rows: pairs of ids (key, value). */
static void make_database(database *db, const char *const *strings, size_t count, const uint32_t (*rows)[2],
                          size_t row_count, bool long_refs)
{
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += strlen(strings[i]);
    db->data = malloc(total ? total : 1);
    assert_non_null(db->data);
    db->data_len = 0;
    support_put16(db->pool, 1252);
    support_put16(db->pool + 2, long_refs ? 0x8000 : 0);
    db->pool_len = 4;
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(strings[i]);
        memcpy(db->data + db->data_len, strings[i], len);
        db->data_len += len;
        if (len > 0xffff) {
            support_put16(db->pool + db->pool_len, 0);
            support_put16(db->pool + db->pool_len + 2, 1);
            support_put16(db->pool + db->pool_len + 4, (uint16_t)len);
            support_put16(db->pool + db->pool_len + 6, (uint16_t)(len >> 16));
            db->pool_len += 8;
        } else {
            support_put16(db->pool + db->pool_len, (uint16_t)len);
            support_put16(db->pool + db->pool_len + 2, len ? 1 : 0);
            db->pool_len += 4;
        }
    }
    size_t w = long_refs ? 3 : 2;
    db->table_len = 2 * w * row_count;
    for (size_t r = 0; r < row_count; r++) {
        for (size_t c = 0; c < 2; c++) {
            uint8_t *p = db->table + c * w * row_count + r * w;
            support_put16(p, (uint16_t)rows[r][c]);
            if (w == 3)
                p[2] = (uint8_t)(rows[r][c] >> 16);
        }
    }
}

static error_code read_version(const uint8_t *b, size_t len, char *out, size_t size, error_info *err)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    error_code rc = msi_read_product_version(f, len, out, size, err);
    fclose(f);
    return rc;
}

/* Builds the file from db (pool, data, table; NULL names leave one out). */
static error_code version_of(const database *db, bool with_pool, bool with_table, char *out, size_t size,
                             error_info *err)
{
    static uint8_t file[MAX_FILE];
    static const uint8_t summary[] = "summary information";
    stream_spec streams[4];
    size_t n = 0;
    streams[n++] = (stream_spec){"\005SummaryInformation", false, summary, sizeof summary};
    if (with_pool) {
        streams[n++] = (stream_spec){"_StringPool", true, db->pool, db->pool_len};
        streams[n++] = (stream_spec){"_StringData", true, db->data, db->data_len};
    }
    if (with_table)
        streams[n++] = (stream_spec){"Property", true, db->table, db->table_len};
    size_t len = build_file(file, streams, n);
    return read_version(file, len, out, size, err);
}

static const char *const strings_plain[] = {"Manufacturer", "Example",        "ProductCode",
                                            "{8C5B0AB3}",   "ProductVersion", " 26.1.3.24329 "};
static const uint32_t rows_plain[][2] = {{1, 2}, {3, 4}, {5, 6}};
static const char *const strings_empty_id[] = {"ProductVersion", "", "Manufacturer", "Example", "1.2\x01\xe9"};
static const uint32_t rows_empty_id[][2] = {{3, 4}, {1, 5}};
static const uint32_t rows_no_version[][2] = {{1, 2}, {3, 4}};

static void test_product_version(void **state)
{
    (void)state;
    static const struct {
        const char *const *strings;
        size_t count;
        const uint32_t (*rows)[2];
        size_t row_count;
        bool long_refs;
        const char *expect;
    } cases[] = {
        {strings_plain, 6, rows_plain, 3, false, "26.1.3.24329"},
        {strings_plain, 6, rows_plain, 3, true, "26.1.3.24329"},
        {strings_empty_id, 5, rows_empty_id, 2, false, "1.2??"}, /* ids count the empty one */
        {strings_plain, 6, rows_no_version, 2, false, ""},       /* the string exists, no row */
        {strings_plain + 1, 1, NULL, 0, false, ""},              /* no such string at all */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        database db;
        make_database(&db, cases[i].strings, cases[i].count, cases[i].rows, cases[i].row_count, cases[i].long_refs);
        char out[MSI_VERSION_TEXT];
        error_info err;
        error_clear(&err);
        error_code rc = version_of(&db, true, true, out, sizeof out, &err);
        free(db.data);
        if (rc != ERR_OK || strcmp(out, cases[i].expect) != 0)
            fail_msg("case %zu: rc %d (%s) \"%s\", expected \"%s\"", i, rc, err.message, out, cases[i].expect);
    }
}

/* A string over 64 KiB takes two pool entries but one id. */
static void test_long_string(void **state)
{
    (void)state;
    char *big = malloc(70001);
    assert_non_null(big);
    memset(big, 'x', 70000);
    big[70000] = '\0';
    const char *strings[] = {"Comments", big, "ProductVersion", "7.0.1"};
    const uint32_t rows[][2] = {{1, 2}, {3, 4}};
    database db;
    make_database(&db, strings, 4, rows, 2, false);
    char out[MSI_VERSION_TEXT];
    error_info err;
    error_code rc = version_of(&db, true, true, out, sizeof out, &err);
    free(db.data);
    free(big);
    assert_int_equal(rc, ERR_OK);
    assert_string_equal(out, "7.0.1");
}

static void test_no_property_table(void **state)
{
    (void)state;
    database db;
    make_database(&db, strings_plain, 6, rows_plain, 3, false);
    char out[MSI_VERSION_TEXT] = "junk";
    assert_int_equal(version_of(&db, true, false, out, sizeof out, NULL), ERR_OK);
    assert_string_equal(out, "");
    /* A Property table without a string pool cannot be read. */
    error_info err;
    assert_int_equal(version_of(&db, false, true, out, sizeof out, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "string pool"));
    free(db.data);
}

/* Broken pools and tables: ERR_REJECTED "malformed MSI", never a read
 * outside what was read. */
static void test_broken(void **state)
{
    (void)state;
    enum { POOL_PAST_DATA, POOL_ENDS_IN_LONG_ENTRY, TABLE_NOT_ROWS, VALUE_NOT_IN_POOL };
    for (int kind = POOL_PAST_DATA; kind <= VALUE_NOT_IN_POOL; kind++) {
        database db;
        make_database(&db, strings_plain, 6, rows_plain, 3, false);
        if (kind == POOL_PAST_DATA)
            db.data_len -= 3;
        if (kind == POOL_ENDS_IN_LONG_ENTRY) {
            support_put16(db.pool + 4,
                          0); /* "Manufacturer": (0, refs) = a long string, whose second entry is missing */
            db.pool_len = 8;
        }
        if (kind == TABLE_NOT_ROWS)
            db.table_len -= 1;
        if (kind == VALUE_NOT_IN_POOL)
            support_put16(db.table + 2 * 3 + 2 * 2, 40); /* the third row's value */
        char out[MSI_VERSION_TEXT];
        error_info err;
        error_clear(&err);
        error_code rc = version_of(&db, true, true, out, sizeof out, &err);
        free(db.data);
        if (rc != ERR_REJECTED || !strstr(err.message, "malformed MSI"))
            fail_msg("kind %d: rc %d \"%s\"", kind, rc, err.message);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_stream_names),
        cmocka_unit_test(test_product_version),
        cmocka_unit_test(test_long_string),
        cmocka_unit_test(test_no_property_table),
        cmocka_unit_test(test_broken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
