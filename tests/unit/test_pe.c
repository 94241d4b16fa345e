/*
 * test_pe.c — unit tests of pe.c: header layout of PE32 and PE32+, the
 * bytes the Authenticode image digest covers, and the certificate table
 * reader. Verdict-level cases (truncations, bad tables) are in
 * test_authenticode.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "authenticode/pe.h"

#define NT 0x80
#define OPT (NT + 24)
#define SIZE 2048

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

static void make_pe(uint8_t *b, bool plus)
{
    for (size_t i = 0; i < SIZE; i++)
        b[i] = (uint8_t)(i * 7 + 1);
    memset(b, 0, 0x200);
    b[0] = 'M';
    b[1] = 'Z';
    put32(b + 0x3c, NT);
    memcpy(b + NT, "PE\0\0", 4);
    put16(b + NT + 20, plus ? 240 : 224);
    put16(b + OPT, plus ? 0x20b : 0x10b);
    put32(b + OPT + (plus ? 108 : 92), 16);
}

static FILE *as_file(const uint8_t *b, size_t len)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    return f;
}

static void test_layout_pe32_and_pe32_plus(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    for (int plus = 0; plus <= 1; plus++) {
        make_pe(b, plus);
        uint32_t entry = OPT + (plus ? 144 : 128);
        put32(b + entry, SIZE - 64);
        put32(b + entry + 4, 64);
        FILE *f = as_file(b, SIZE);
        pe_layout layout;
        authenticode_result r;
        assert_int_equal(pe_parse(f, SIZE, &layout, &r, NULL), ERR_OK);
        assert_int_equal(layout.pe32_plus, plus);
        assert_int_equal(layout.checksum_offset, OPT + 64);
        assert_int_equal(layout.security_entry_offset, entry);
        assert_int_equal(layout.cert_table_offset, SIZE - 64);
        assert_int_equal(layout.cert_table_size, 64);
        fclose(f);
    }
}

/* The digest covers everything before the table except CheckSum and the
 * security directory entry: compare with hashing those ranges directly. */
static void test_digest_ranges(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    make_pe(b, true);
    uint32_t entry = OPT + 144;
    put32(b + entry, SIZE - 64);
    put32(b + entry + 4, 64);
    FILE *f = as_file(b, SIZE);
    pe_layout layout;
    authenticode_result r;
    assert_int_equal(pe_parse(f, SIZE, &layout, &r, NULL), ERR_OK);

    const mbedtls_md_info_t *info = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    mbedtls_md_context_t md;
    mbedtls_md_init(&md);
    assert_int_equal(mbedtls_md_setup(&md, info, 0), 0);
    assert_int_equal(mbedtls_md_starts(&md), 0);
    assert_int_equal(pe_hash(f, &layout, &md, NULL), ERR_OK);
    uint8_t got[32], want[32];
    assert_int_equal(mbedtls_md_finish(&md, got), 0);
    mbedtls_md_free(&md);

    mbedtls_md_init(&md);
    assert_int_equal(mbedtls_md_setup(&md, info, 0), 0);
    assert_int_equal(mbedtls_md_starts(&md), 0);
    mbedtls_md_update(&md, b, OPT + 64);
    mbedtls_md_update(&md, b + OPT + 68, entry - (OPT + 68));
    mbedtls_md_update(&md, b + entry + 8, SIZE - 64 - (entry + 8));
    assert_int_equal(mbedtls_md_finish(&md, want), 0);
    mbedtls_md_free(&md);
    assert_memory_equal(got, want, 32);

    /* The checksum and the directory entry do not change the digest. */
    put32(b + OPT + 64, 0xdeadbeef);
    fclose(f);
    f = as_file(b, SIZE);
    mbedtls_md_init(&md);
    assert_int_equal(mbedtls_md_setup(&md, info, 0), 0);
    assert_int_equal(mbedtls_md_starts(&md), 0);
    assert_int_equal(pe_hash(f, &layout, &md, NULL), ERR_OK);
    assert_int_equal(mbedtls_md_finish(&md, got), 0);
    mbedtls_md_free(&md);
    assert_memory_equal(got, want, 32);
    fclose(f);
}

static void test_read_signature_strips_padding(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    make_pe(b, false);
    static const uint8_t der[] = {0x30, 0x03, 0x02, 0x01, 0x05};
    uint32_t table = SIZE - 16;
    put32(b + OPT + 128, table);
    put32(b + OPT + 128 + 4, 16);
    put32(b + table, 8 + sizeof der);
    put16(b + table + 4, 0x0200);
    put16(b + table + 6, 0x0002);
    memset(b + table + 8, 0, 8);
    memcpy(b + table + 8, der, sizeof der);
    FILE *f = as_file(b, SIZE);
    pe_layout layout;
    authenticode_result r;
    uint8_t *out = NULL;
    size_t len = 0;
    assert_int_equal(pe_parse(f, SIZE, &layout, &r, NULL), ERR_OK);
    assert_int_equal(pe_read_signature(f, &layout, &out, &len, &r, NULL), ERR_OK);
    assert_int_equal(len, sizeof der);
    assert_memory_equal(out, der, sizeof der);
    free(out);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_pe32_and_pe32_plus),
        cmocka_unit_test(test_digest_ranges),
        cmocka_unit_test(test_read_signature_strips_padding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
