/*
 * test_pe.c — unit tests of pe.c: header layout of PE32 and PE32+, the
 * bytes the Authenticode image digest covers, and the certificate table
 * reader, and the version resource (read from images built here). Verdict-
 * level cases (truncations, bad tables) are in test_authenticode.c.
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

#include "support.h"

#define NT 0x80
#define OPT (NT + 24)
#define SIZE 2048

static void make_pe(uint8_t *b, bool plus)
{
    for (size_t i = 0; i < SIZE; i++)
        b[i] = (uint8_t)(i * 7 + 1);
    memset(b, 0, 0x200);
    b[0] = 'M';
    b[1] = 'Z';
    support_put32(b + 0x3c, NT);
    memcpy(b + NT, "PE\0\0", 4);
    support_put16(b + NT + 20, plus ? 240 : 224);
    support_put16(b + OPT, plus ? 0x20b : 0x10b);
    support_put32(b + OPT + (plus ? 108 : 92), 16);
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
        support_put32(b + entry, SIZE - 64);
        support_put32(b + entry + 4, 64);
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
    support_put32(b + entry, SIZE - 64);
    support_put32(b + entry + 4, 64);
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
    support_put32(b + OPT + 64, 0xdeadbeef);
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

/* The streamed digest (pe_stream) equals pe_hash's whatever the chunk
 * sizes, the headers split included; anything else yields none. */
static void test_stream_digest_equals_pe_hash(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    for (int plus = 0; plus <= 1; plus++) {
        make_pe(b, plus);
        uint32_t entry = OPT + (plus ? 144 : 128);
        support_put32(b + entry, SIZE - 64);
        support_put32(b + entry + 4, 64);
        FILE *f = as_file(b, SIZE);
        pe_layout layout;
        authenticode_result r;
        assert_int_equal(pe_parse(f, SIZE, &layout, &r, NULL), ERR_OK);
        mbedtls_md_context_t md;
        mbedtls_md_init(&md);
        assert_int_equal(mbedtls_md_setup(&md, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), 0), 0);
        assert_int_equal(mbedtls_md_starts(&md), 0);
        assert_int_equal(pe_hash(f, &layout, &md, NULL), ERR_OK);
        uint8_t want[32];
        assert_int_equal(mbedtls_md_finish(&md, want), 0);
        mbedtls_md_free(&md);
        fclose(f);

        static const size_t chunks[] = {1, 3, 64, 100, 511, SIZE};
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            pe_stream *s = pe_stream_new(SIZE);
            assert_non_null(s);
            for (size_t at = 0; at < SIZE; at += chunks[c])
                pe_stream_update(s, b + at, at + chunks[c] <= SIZE ? chunks[c] : SIZE - at);
            authenticode_pe_digest got;
            assert_true(pe_stream_finish(s, &got));
            assert_memory_equal(got.sha256, want, 32);
            assert_int_equal(got.cert_table_offset, SIZE - 64);
            assert_int_equal(got.security_entry_offset, entry);
            pe_stream_free(s);
        }
        /* A download of unknown length: the same digest, its length counted. */
        pe_stream *s = pe_stream_new(PE_SIZE_UNKNOWN);
        pe_stream_update(s, b, 1000);
        pe_stream_update(s, b + 1000, SIZE - 1000);
        authenticode_pe_digest got;
        assert_true(pe_stream_finish(s, &got));
        assert_memory_equal(got.sha256, want, 32);
        assert_int_equal(got.file_size, SIZE);
        pe_stream_free(s);
    }
    /* A short file, an unsigned image, a file that is not a PE: no digest. */
    pe_stream *s = pe_stream_new(SIZE);
    pe_stream_update(s, b, SIZE - 1);
    authenticode_pe_digest got;
    assert_false(pe_stream_finish(s, &got));
    pe_stream_free(s);
    make_pe(b, false);
    s = pe_stream_new(SIZE);
    pe_stream_update(s, b, SIZE);
    assert_false(pe_stream_finish(s, &got));
    pe_stream_free(s);
    b[0] = 'X';
    s = pe_stream_new(SIZE);
    pe_stream_update(s, b, SIZE);
    assert_false(pe_stream_finish(s, &got));
    pe_stream_free(s);
}

static void test_read_signature_strips_padding(void **state)
{
    (void)state;
    uint8_t b[SIZE];
    make_pe(b, false);
    static const uint8_t der[] = {0x30, 0x03, 0x02, 0x01, 0x05};
    uint32_t table = SIZE - 16;
    support_put32(b + OPT + 128, table);
    support_put32(b + OPT + 128 + 4, 16);
    support_put32(b + table, 8 + sizeof der);
    support_put16(b + table + 4, 0x0200);
    support_put16(b + table + 6, 0x0002);
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

/* ---- The version resource ------------------------------------------------------ */

#define RSRC_FILE 0x400 /* file offset of the .rsrc section */
#define RSRC_RVA 0x1000 /* its RVA */
#define RSRC_SIZE 0x800 /* its raw size */
#define VS_AT 0x60      /* VS_VERSIONINFO, from the section's start */
#define IMAGE (RSRC_FILE + RSRC_SIZE)

typedef struct vs_out {
    uint8_t b[RSRC_SIZE - VS_AT]; /* the VS_VERSIONINFO being built */
    size_t n;                     /* bytes used */
} vs_out;

static void vs_align(vs_out *o)
{
    while (o->n % 4)
        o->b[o->n++] = 0;
}

static void vs_utf16(vs_out *o, const char *s)
{
    for (; *s; s++) {
        support_put16(o->b + o->n, (uint8_t)*s);
        o->n += 2;
    }
    support_put16(o->b + o->n, 0);
    o->n += 2;
}

/* Starts a block (its length is patched by vs_end); value_length as stored. */
static size_t vs_begin(vs_out *o, const char *key, uint16_t type, const void *value, size_t value_bytes,
                       uint16_t value_length)
{
    vs_align(o);
    size_t start = o->n;
    support_put16(o->b + start + 2, value_length);
    support_put16(o->b + start + 4, type);
    o->n += 6;
    vs_utf16(o, key);
    vs_align(o);
    if (value_bytes)
        memcpy(o->b + o->n, value, value_bytes);
    o->n += value_bytes;
    return start;
}

static void vs_end(vs_out *o, size_t start)
{
    support_put16(o->b + start, (uint16_t)(o->n - start));
}

static void vs_string(vs_out *o, const char *key, const char *text)
{
    vs_out v = {.n = 0};
    vs_utf16(&v, text);
    vs_end(o, vs_begin(o, key, 1, v.b, v.n, (uint16_t)(v.n / 2)));
}

/* VS_VERSIONINFO with a fixed part (product/file MS, LS; 0 = none) and
 * string tables given as "key=value" lists, one NULL-terminated list per
 * table, the lists themselves NULL-terminated. */
static void vs_build(vs_out *o, const uint32_t fixed[4], const char *const *const *tables)
{
    uint8_t ffi[52] = {0};
    support_put32(ffi, 0xFEEF04BDu);
    support_put32(ffi + 4, 0x00010000);
    support_put32(ffi + 16, fixed[0]);
    support_put32(ffi + 20, fixed[1]);
    support_put32(ffi + 8, fixed[2]);
    support_put32(ffi + 12, fixed[3]);
    o->n = 0;
    size_t root = vs_begin(o, "VS_VERSION_INFO", 0, ffi, sizeof ffi, sizeof ffi);
    if (tables) {
        size_t info = vs_begin(o, "StringFileInfo", 1, NULL, 0, 0);
        for (size_t t = 0; tables[t]; t++) {
            size_t table = vs_begin(o, t == 0 ? "040904b0" : "040704b0", 1, NULL, 0, 0);
            for (size_t s = 0; tables[t][s]; s++) {
                char key[64];
                const char *eq = strchr(tables[t][s], '=');
                snprintf(key, sizeof key, "%.*s", (int)(eq - tables[t][s]), tables[t][s]);
                vs_string(o, key, eq + 1);
            }
            vs_end(o, table);
        }
        vs_end(o, info);
    }
    size_t var = vs_begin(o, "VarFileInfo", 1, NULL, 0, 0);
    uint8_t translation[4] = {0x09, 0x04, 0xb0, 0x04};
    vs_end(o, vs_begin(o, "Translation", 0, translation, 4, 4));
    vs_end(o, var);
    vs_end(o, root);
}

/* A PE32 or PE32+ image with one .rsrc section holding a resource tree
 * type -> name -> language whose leaf is vs (type_id: the resource type). */
static void make_pe_with_resource(uint8_t *b, bool plus, uint32_t type_id, const vs_out *vs)
{
    memset(b, 0, IMAGE);
    b[0] = 'M';
    b[1] = 'Z';
    support_put32(b + 0x3c, NT);
    memcpy(b + NT, "PE\0\0", 4);
    support_put16(b + NT + 4 + 2, 1); /* NumberOfSections */
    uint16_t opt_size = plus ? 240 : 224;
    support_put16(b + NT + 4 + 16, opt_size);
    support_put16(b + OPT, plus ? 0x20b : 0x10b);
    support_put32(b + OPT + (plus ? 108 : 92), 16);
    uint32_t dirs = OPT + (plus ? 112 : 96);
    support_put32(b + dirs + 16, RSRC_RVA);
    support_put32(b + dirs + 20, RSRC_SIZE);
    uint8_t *sec = b + OPT + opt_size;
    memcpy(sec, ".rsrc", 5);
    support_put32(sec + 8, RSRC_SIZE);
    support_put32(sec + 12, RSRC_RVA);
    support_put32(sec + 16, RSRC_SIZE);
    support_put32(sec + 20, RSRC_FILE);
    uint8_t *r = b + RSRC_FILE;
    support_put16(r + 14, 1); /* root: one ID entry */
    support_put32(r + 16, type_id);
    support_put32(r + 20, 0x80000000u | 0x18);
    support_put16(r + 0x18 + 14, 1); /* name level */
    support_put32(r + 0x18 + 16, 1);
    support_put32(r + 0x18 + 20, 0x80000000u | 0x30);
    support_put16(r + 0x30 + 14, 1); /* language level */
    support_put32(r + 0x30 + 16, 0x409);
    support_put32(r + 0x30 + 20, 0x48);
    support_put32(r + 0x48, RSRC_RVA + VS_AT); /* data entry: RVA, size */
    support_put32(r + 0x48 + 4, (uint32_t)vs->n);
    memcpy(r + VS_AT, vs->b, vs->n);
}

static error_code read_version(const uint8_t *b, size_t len, pe_version *v, error_info *err)
{
    FILE *f = as_file(b, len);
    error_code rc = pe_read_version(f, len, v, err);
    fclose(f);
    return rc;
}

static const char *const strings_both[] = {"CompanyName=Example", "FileVersion=26.1.3.24329",
                                           "ProductVersion=26.01.03.24329-0de7ab", NULL};
static const char *const strings_file[] = {"FileVersion=1.2.3", NULL};
static const char *const strings_bad_product[] = {"ProductVersion=n/a", "FileVersion= 4, 5, 6, 7 ", NULL};
static const char *const strings_none[] = {"CompanyName=Example", NULL};
static const char *const strings_product[] = {"ProductVersion=9.8.7", NULL};
static const char *const strings_non_ascii[] = {"ProductVersion=2.0\xc3\xa9", NULL};
static const char *const *const tables_both[] = {strings_both, NULL};
static const char *const *const tables_file[] = {strings_file, NULL};
static const char *const *const tables_bad_product[] = {strings_bad_product, NULL};
static const char *const *const tables_second[] = {strings_none, strings_product, NULL};
static const char *const *const tables_non_ascii[] = {strings_non_ascii, NULL};

/* Which version each well-formed resource yields, PE32 and PE32+. */
static void test_version_sources(void **state)
{
    (void)state;
    static const struct {
        const char *const *const *tables;
        uint32_t fixed[4]; /* product MS, LS, file MS, LS */
        const char *text, *source;
    } cases[] = {
        {tables_both, {0x001a0001, 0x00035f09, 0x001a0001, 0x00035f09}, "26.01.03.24329-0de7ab", "ProductVersion"},
        {tables_file, {0x00010000, 0, 0, 0}, "1.2.3", "FileVersion"},
        {tables_bad_product, {0, 0, 0, 0}, "4, 5, 6, 7", "FileVersion"},
        {tables_second, {0, 0, 0, 0}, "9.8.7", "ProductVersion"},
        {NULL, {0x001a0001, 0x00035f09, 0x00010000, 0}, "26.1.3.24329", "fixed ProductVersion"},
        {NULL, {0, 0, 0x00010002, 0x00030004}, "1.2.3.4", "fixed FileVersion"},
        {tables_non_ascii, {0, 0, 0, 0}, "2.0??", "ProductVersion"},
        {NULL, {0, 0, 0, 0}, "", NULL}, /* a resource that states nothing */
    };
    static uint8_t b[IMAGE];
    static vs_out vs;
    for (int plus = 0; plus <= 1; plus++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            vs_build(&vs, cases[i].fixed, cases[i].tables);
            make_pe_with_resource(b, plus, 16, &vs);
            pe_version v;
            error_info err;
            error_code rc = read_version(b, IMAGE, &v, &err);
            if (rc != ERR_OK)
                fail_msg("case %zu (plus %d): %s", i, plus, err.message);
            if (strcmp(v.text, cases[i].text) != 0 || (v.source == NULL) != (cases[i].source == NULL) ||
                (v.source && strcmp(v.source, cases[i].source) != 0))
                fail_msg("case %zu (plus %d): \"%s\" from %s, expected \"%s\" from %s", i, plus, v.text,
                         v.source ? v.source : "(none)", cases[i].text, cases[i].source ? cases[i].source : "(none)");
        }
    }
}

/* An image without resources, or without RT_VERSION among them, has none. */
static void test_version_absent(void **state)
{
    (void)state;
    static uint8_t b[IMAGE];
    static vs_out vs;
    uint32_t fixed[4] = {0x00010000, 0, 0, 0};
    vs_build(&vs, fixed, tables_both);
    make_pe_with_resource(b, true, 3 /* RT_ICON */, &vs);
    pe_version v;
    assert_int_equal(read_version(b, IMAGE, &v, NULL), ERR_OK);
    assert_null(v.source);
    assert_string_equal(v.text, "");
    make_pe_with_resource(b, true, 16, &vs);
    support_put32(b + OPT + 112 + 16, 0); /* no resource directory */
    support_put32(b + OPT + 112 + 20, 0);
    assert_int_equal(read_version(b, IMAGE, &v, NULL), ERR_OK);
    assert_null(v.source);
    make_pe(b, false); /* the plain header of the tests above: no sections */
    assert_int_equal(read_version(b, SIZE, &v, NULL), ERR_OK);
    assert_null(v.source);
}

static void break_data_rva(uint8_t *b)
{
    support_put32(b + RSRC_FILE + 0x48, 0x9000);
}
static void break_root_key(uint8_t *b)
{
    b[RSRC_FILE + VS_AT + 6] = 'X';
}
static void break_tree_depth(uint8_t *b)
{
    support_put32(b + RSRC_FILE + 0x18 + 20, 0x30);
}
static void break_directory_offset(uint8_t *b)
{
    support_put32(b + RSRC_FILE + 20, 0x80000000u | 0x7ff0);
}
static void break_sections(uint8_t *b)
{
    support_put16(b + NT + 4 + 2, 97);
}
static void break_raw_pointer(uint8_t *b)
{
    support_put32(b + OPT + 240 + 20, 0x10000);
}
static void break_entry_count(uint8_t *b) /* the search for RT_VERSION runs off the section */
{
    support_put16(b + RSRC_FILE + 14, 0xffff);
    support_put32(b + RSRC_FILE + 16, 3);
}
static void break_root_length(uint8_t *b)
{
    support_put16(b + RSRC_FILE + VS_AT, 0xffff);
} /* clamped, still read */
static void break_child_length(uint8_t *b)
{
    support_put16(b + RSRC_FILE + VS_AT + 92, 0);
} /* StringFileInfo: stop */

/* Hostile resources: every offset is checked; a broken tree is ERR_REJECTED
 * with "malformed version resource", never a crash or a read outside. */
static void test_version_hostile(void **state)
{
    (void)state;
    static const struct {
        void (*mutate)(uint8_t *b);
        error_code expect;
        const char *text; /* for ERR_OK */
    } cases[] = {
        {break_data_rva, ERR_REJECTED, NULL},         {break_root_key, ERR_REJECTED, NULL},
        {break_tree_depth, ERR_REJECTED, NULL},       {break_directory_offset, ERR_REJECTED, NULL},
        {break_sections, ERR_REJECTED, NULL},         {break_raw_pointer, ERR_REJECTED, NULL},
        {break_entry_count, ERR_REJECTED, NULL},      {break_root_length, ERR_OK, "26.01.03.24329-0de7ab"},
        {break_child_length, ERR_OK, "26.1.3.24329"}, /* the strings are lost: the fixed part remains */
    };
    static uint8_t b[IMAGE];
    static vs_out vs;
    uint32_t fixed[4] = {0x001a0001, 0x00035f09, 0, 0};
    vs_build(&vs, fixed, tables_both);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        make_pe_with_resource(b, true, 16, &vs);
        cases[i].mutate(b);
        pe_version v;
        error_info err;
        error_clear(&err);
        error_code rc = read_version(b, IMAGE, &v, &err);
        if (rc != cases[i].expect)
            fail_msg("case %zu: rc %d (%s), expected %d", i, rc, err.message, cases[i].expect);
        if (rc == ERR_REJECTED && !strstr(err.message, "malformed version resource"))
            fail_msg("case %zu: message \"%s\"", i, err.message);
        if (rc == ERR_OK && strcmp(v.text, cases[i].text) != 0)
            fail_msg("case %zu: \"%s\", expected \"%s\"", i, v.text, cases[i].text);
    }
    /* A file cut inside the resource section. */
    make_pe_with_resource(b, true, 16, &vs);
    pe_version v;
    assert_int_equal(read_version(b, RSRC_FILE + VS_AT + 20, &v, NULL), ERR_REJECTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_pe32_and_pe32_plus),
        cmocka_unit_test(test_digest_ranges),
        cmocka_unit_test(test_stream_digest_equals_pe_hash),
        cmocka_unit_test(test_read_signature_strips_padding),
        cmocka_unit_test(test_version_sources),
        cmocka_unit_test(test_version_absent),
        cmocka_unit_test(test_version_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
