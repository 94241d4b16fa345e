/*
 * test_authenticode.c — unit tests of the Authenticode module (authenticode,
 * pe, olecf, msi) on files built in memory: PE header and certificate table
 * bounds, malformed PKCS#7 DER, compound-file structure and loops. No
 * external tool is needed; real signatures are covered by
 * tests/integration/test_authenticode.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "authenticode/authenticode.h"
#include "authenticode/authenticode_int.h"
#include "platform/platform.h"
#include "support.h"

static char ca_path[1024];

static int setup_ca(void **state)
{
    (void)state;
    const char *dir = getenv("OUTPOST_TEST_TMP");
    if (!dir)
        dir = ".";
    if (platform_mkdirs(dir, NULL) != ERR_OK)
        return -1;
    snprintf(ca_path, sizeof ca_path, "%s/authenticode-test-root.pem", dir);
    return platform_write_atomic(ca_path, support_ec_root_pem, strlen(support_ec_root_pem), NULL) == ERR_OK ? 0 : -1;
}

/* Set by the tests of a policy without a trust anchor. */
static bool without_ca;

static authenticode_policy policy(void)
{
    authenticode_policy p = {.trusted_ca_file = without_ca ? NULL : ca_path, .now = 1800000000};
    return p;
}

/* Judges len bytes of data as a file; returns the verdict (ERR_OK asserted). */
static authenticode_verdict judge(const uint8_t *data, size_t len, authenticode_result *result)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    authenticode_policy p = policy();
    error_info err;
    assert_int_equal(authenticode_verify_stream(f, &p, result, &err), ERR_OK);
    fclose(f);
    return result->verdict;
}

static authenticode_verdict judge_blob(const uint8_t *der, size_t len, authenticode_result *result)
{
    authenticode_policy p = policy();
    error_info err;
    assert_int_equal(authenticode_check_blob(der, len, &p, result, &err), ERR_OK);
    return result->verdict;
}

/* ---- PE ------------------------------------------------------------------- */

#define PE_NT 0x80
#define PE_OPT (PE_NT + 24)
#define PE_SIZE 1024

/* A PE image of PE_SIZE bytes with 16 data directories and no signature. */
static void make_pe(uint8_t *buf, bool plus)
{
    memset(buf, 0, PE_SIZE);
    buf[0] = 'M';
    buf[1] = 'Z';
    support_put32(buf + 0x3c, PE_NT);
    memcpy(buf + PE_NT, "PE\0\0", 4);
    support_put16(buf + PE_NT + 4, plus ? 0x8664 : 0x14c);
    support_put16(buf + PE_NT + 4 + 16, plus ? 240 : 224);
    support_put16(buf + PE_OPT, plus ? 0x20b : 0x10b);
    support_put32(buf + PE_OPT + (plus ? 108 : 92), 16);
}

static size_t security_entry(bool plus)
{
    return PE_OPT + (plus ? 144 : 128);
}

/* Makes buf a PE of PE_SIZE bytes whose last table_size bytes are the
 * certificate table, holding one WIN_CERTIFICATE with der. */
static void make_signed_pe(uint8_t *buf, const uint8_t *der, size_t der_len, size_t table_size)
{
    make_pe(buf, true);
    size_t offset = PE_SIZE - table_size;
    support_put32(buf + security_entry(true), (uint32_t)offset);
    support_put32(buf + security_entry(true) + 4, (uint32_t)table_size);
    support_put32(buf + offset, (uint32_t)(8 + der_len));
    support_put16(buf + offset + 4, 0x0200);
    support_put16(buf + offset + 6, 0x0002);
    memcpy(buf + offset + 8, der, der_len);
}

static void test_verdict_names(void **state)
{
    (void)state;
    assert_string_equal(authenticode_verdict_name(AUTHENTICODE_VALID), "valid");
    assert_string_equal(authenticode_verdict_name(AUTHENTICODE_UNSIGNED), "unsigned");
    assert_string_equal(authenticode_verdict_name(AUTHENTICODE_DIGEST_MISMATCH), "digest-mismatch");
    assert_string_equal(authenticode_verdict_name(AUTHENTICODE_BAD_SIGNATURE), "bad-signature");
    assert_string_equal(authenticode_verdict_name(AUTHENTICODE_UNTRUSTED_CHAIN), "untrusted-chain");
    assert_string_equal(authenticode_verdict_name(AUTHENTICODE_WRONG_SIGNER), "wrong-signer");
    assert_string_equal(authenticode_verdict_name(AUTHENTICODE_MALFORMED), "malformed");
    assert_string_equal(authenticode_verdict_name(AUTHENTICODE_UNSUPPORTED), "unsupported");
    assert_string_equal(authenticode_verdict_name((authenticode_verdict)99), "malformed");
}

static void test_missing_ca_file_is_config_error(void **state)
{
    (void)state;
    uint8_t buf[PE_SIZE];
    make_pe(buf, true);
    FILE *f = tmpfile();
    fwrite(buf, 1, sizeof buf, f);
    authenticode_policy p = policy();
    p.trusted_ca_file = "/nonexistent/outpost-ca.pem";
    authenticode_result r;
    error_info err;
    assert_int_equal(authenticode_verify_stream(f, &p, &r, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "/nonexistent/outpost-ca.pem"));
    assert_int_equal(r.verdict, AUTHENTICODE_MALFORMED); /* fails closed */
    fclose(f);
}

static void test_missing_file_is_an_error(void **state)
{
    (void)state;
    authenticode_policy p = policy();
    authenticode_result r;
    error_info err;
    assert_int_equal(authenticode_verify_file("/nonexistent/setup.exe", &p, &r, &err), ERR_NOT_FOUND);
    assert_int_equal(r.verdict, AUTHENTICODE_MALFORMED);
}

static void test_unsigned_pe32_and_pe32_plus(void **state)
{
    (void)state;
    uint8_t buf[PE_SIZE];
    authenticode_result r;
    make_pe(buf, false);
    assert_int_equal(judge(buf, sizeof buf, &r), AUTHENTICODE_UNSIGNED);
    assert_string_equal(r.file_format, "pe");
    make_pe(buf, true);
    assert_int_equal(judge(buf, sizeof buf, &r), AUTHENTICODE_UNSIGNED);
}

typedef struct pe_case {
    const char *name;
    void (*mutate)(uint8_t *buf, size_t *len);
    authenticode_verdict verdict;
} pe_case;

static void no_mz(uint8_t *b, size_t *len)
{
    (void)len;
    b[0] = 'X';
}
static void lfanew_past_end(uint8_t *b, size_t *len)
{
    (void)len;
    support_put32(b + 0x3c, 0xFFFFFFF0u);
}
static void lfanew_at_end(uint8_t *b, size_t *len)
{
    support_put32(b + 0x3c, (uint32_t)(*len - 4));
}
static void no_pe_signature(uint8_t *b, size_t *len)
{
    (void)len;
    b[PE_NT] = 'X';
}
static void bad_magic(uint8_t *b, size_t *len)
{
    (void)len;
    support_put16(b + PE_OPT, 0x107);
}
static void tiny_optional_header(uint8_t *b, size_t *len)
{
    (void)len;
    support_put16(b + PE_NT + 20, 16);
}
static void huge_optional_header(uint8_t *b, size_t *len)
{
    (void)len;
    support_put16(b + PE_NT + 20, 0xFFFF);
}
static void few_directories(uint8_t *b, size_t *len)
{
    (void)len;
    support_put32(b + PE_OPT + 108, 4);
}
static void half_empty_directory(uint8_t *b, size_t *len)
{
    (void)len;
    support_put32(b + security_entry(true), 512);
}
static void table_past_end(uint8_t *b, size_t *len)
{
    support_put32(b + security_entry(true), 512);
    support_put32(b + security_entry(true) + 4, (uint32_t)*len);
}
static void table_overflows(uint8_t *b, size_t *len)
{
    (void)len;
    support_put32(b + security_entry(true), 0xFFFFFFF8u);
    support_put32(b + security_entry(true) + 4, 0x10);
}
static void data_after_table(uint8_t *b, size_t *len)
{
    support_put32(b + security_entry(true), 512);
    support_put32(b + security_entry(true) + 4, (uint32_t)(*len - 512 - 8));
}
static void table_overlaps_headers(uint8_t *b, size_t *len)
{
    support_put32(b + security_entry(true), 8);
    support_put32(b + security_entry(true) + 4, (uint32_t)(*len - 8));
}
static void table_too_small(uint8_t *b, size_t *len)
{
    support_put32(b + security_entry(true), (uint32_t)(*len - 4));
    support_put32(b + security_entry(true) + 4, 4);
}
static void truncated_file(uint8_t *b, size_t *len)
{
    (void)b;
    *len = 0x60;
}

static const pe_case pe_cases[] = {
    {"no MZ", no_mz, AUTHENTICODE_UNSUPPORTED},
    {"e_lfanew past the end", lfanew_past_end, AUTHENTICODE_MALFORMED},
    {"e_lfanew at the end", lfanew_at_end, AUTHENTICODE_MALFORMED},
    {"no PE signature", no_pe_signature, AUTHENTICODE_MALFORMED},
    {"bad optional header magic", bad_magic, AUTHENTICODE_MALFORMED},
    {"tiny optional header", tiny_optional_header, AUTHENTICODE_MALFORMED},
    {"optional header past the end", huge_optional_header, AUTHENTICODE_MALFORMED},
    {"no security directory", few_directories, AUTHENTICODE_UNSIGNED},
    {"half-empty security directory", half_empty_directory, AUTHENTICODE_MALFORMED},
    {"table past the end", table_past_end, AUTHENTICODE_MALFORMED},
    {"table offset overflows", table_overflows, AUTHENTICODE_MALFORMED},
    {"data after the table", data_after_table, AUTHENTICODE_MALFORMED},
    {"table overlaps the headers", table_overlaps_headers, AUTHENTICODE_MALFORMED},
    {"table smaller than an entry", table_too_small, AUTHENTICODE_MALFORMED},
    {"file truncated in the headers", truncated_file, AUTHENTICODE_MALFORMED},
};

static void test_pe_header_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pe_cases / sizeof pe_cases[0]; i++) {
        uint8_t buf[PE_SIZE];
        size_t len = sizeof buf;
        authenticode_result r;
        make_pe(buf, true);
        pe_cases[i].mutate(buf, &len);
        authenticode_verdict v = judge(buf, len, &r);
        if (v != pe_cases[i].verdict)
            fail_msg("%s: got %s (%s)", pe_cases[i].name, authenticode_verdict_name(v), r.reason);
        if (v != AUTHENTICODE_UNSIGNED)
            assert_true(r.reason[0] != '\0');
    }
}

/* A DER SEQUENCE that is not a SignedData. */
static const uint8_t not_signed_data[] = {0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86,
                                          0xf7, 0x0d, 0x01, 0x07, 0x01, 0xa0, 0x00};

static void test_certificate_table_entries(void **state)
{
    (void)state;
    uint8_t buf[PE_SIZE];
    authenticode_result r;
    size_t der = sizeof not_signed_data;
    size_t table = (8 + der + 7) / 8 * 8;

    make_signed_pe(buf, not_signed_data, der, table);
    assert_int_equal(judge(buf, sizeof buf, &r), AUTHENTICODE_MALFORMED);
    assert_non_null(strstr(r.reason, "not SignedData"));

    make_signed_pe(buf, not_signed_data, der, table);
    support_put16(buf + PE_SIZE - table + 4, 0x0100); /* revision 1 */
    assert_int_equal(judge(buf, sizeof buf, &r), AUTHENTICODE_UNSUPPORTED);

    make_signed_pe(buf, not_signed_data, der, table);
    support_put32(buf + PE_SIZE - table, (uint32_t)table + 8); /* entry longer than the table */
    assert_int_equal(judge(buf, sizeof buf, &r), AUTHENTICODE_MALFORMED);

    make_signed_pe(buf, not_signed_data, der, table + 16); /* room for a second entry */
    support_put32(buf + PE_SIZE - table - 16, (uint32_t)(8 + der));
    assert_int_equal(judge(buf, sizeof buf, &r), AUTHENTICODE_MALFORMED);
    assert_non_null(strstr(r.reason, "more than one"));

    make_signed_pe(buf, not_signed_data, der, table);
    buf[PE_SIZE - 1] = 0x55; /* non-zero padding */
    assert_int_equal(judge(buf, sizeof buf, &r), AUTHENTICODE_MALFORMED);

    make_signed_pe(buf, not_signed_data, der, table);
    buf[PE_SIZE - table + 9] = 0x7f; /* DER length beyond the table */
    assert_int_equal(judge(buf, sizeof buf, &r), AUTHENTICODE_MALFORMED);

    make_signed_pe(buf, not_signed_data, der, table);
    buf[PE_SIZE - table + 8] = 0x31; /* not a SEQUENCE */
    assert_int_equal(judge(buf, sizeof buf, &r), AUTHENTICODE_MALFORMED);
}

/* A PE image of 3 GiB whose certificate table ends the file: past 2 GiB,
 * where Windows' 32-bit long (fseek, ftell) ends, the table is still found
 * and judged. The file is sparse: header and table written, the rest a
 * hole (on ext4 and, under wine, on the host's file system). */
static void test_pe_over_2gib(void **state)
{
    (void)state;
    const uint64_t size = 3ull * 1024 * 1024 * 1024;
    size_t der = sizeof not_signed_data;
    size_t table = (8 + der + 7) / 8 * 8;
    uint8_t head[PE_SIZE], entry[64] = {0};
    make_pe(head, true);
    support_put32(head + security_entry(true), (uint32_t)(size - table));
    support_put32(head + security_entry(true) + 4, (uint32_t)table);
    support_put32(entry, (uint32_t)(8 + der));
    support_put16(entry + 4, 0x0200);
    support_put16(entry + 6, 0x0002);
    memcpy(entry + 8, not_signed_data, der);

    char path[1100];
    snprintf(path, sizeof path, "%s.big.exe", ca_path);
    error_info err;
    FILE *f = platform_fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(head, 1, sizeof head, f), sizeof head);
    assert_int_equal(platform_seek(f, size - table, &err), ERR_OK);
    assert_int_equal(fwrite(entry, 1, table, f), table);
    assert_int_equal(fclose(f), 0);

    authenticode_policy p = policy();
    authenticode_result r;
    assert_int_equal(authenticode_verify_file(path, &p, &r, &err), ERR_OK);
    assert_string_equal(r.file_format, "pe");
    assert_true(r.signature_found);
    assert_int_equal(r.verdict, AUTHENTICODE_MALFORMED);
    assert_non_null(strstr(r.reason, "not SignedData"));

    /* The table announced one byte further than the file goes. */
    f = platform_fopen(path, "r+b");
    assert_non_null(f);
    support_put32(head + security_entry(true) + 4, (uint32_t)table + 1);
    assert_int_equal(fwrite(head, 1, sizeof head, f), sizeof head);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(authenticode_verify_file(path, &p, &r, &err), ERR_OK);
    assert_int_equal(r.verdict, AUTHENTICODE_MALFORMED);
    assert_non_null(strstr(r.reason, "(3221225472 bytes)"));
    assert_int_equal(platform_remove_file(path, &err), ERR_OK);
}

/* ---- Malformed PKCS#7 ----------------------------------------------------- */

typedef struct der_case {
    const char *name;
    const uint8_t *der;
    size_t len;
} der_case;

#define SIGNED_DATA_OID 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02
static const uint8_t der_empty_seq[] = {0x30, 0x00};
static const uint8_t der_truncated[] = {0x30, 0x82, 0x10, 0x00, 0x06};
static const uint8_t der_indefinite[] = {0x30, 0x80, SIGNED_DATA_OID, 0x00, 0x00};
static const uint8_t der_huge_length[] = {0x30, 0x84, 0xff, 0xff, 0xff, 0xff, SIGNED_DATA_OID};
static const uint8_t der_no_content[] = {0x30, 0x0b, SIGNED_DATA_OID};
static const uint8_t der_trailing[] = {0x30, 0x0b, SIGNED_DATA_OID, 0x00};
/* SignedData with an empty SET of signers. */
static const uint8_t der_no_signer[] = {0x30, 0x1e, SIGNED_DATA_OID,
                                        0xa0, 0x11, 0x30,
                                        0x0f, 0x02, 0x01,
                                        0x01, 0x31, 0x00,
                                        0x30, 0x06, 0x06,
                                        0x04, 0x2b, 0x06,
                                        0x01, 0x04, 0x31,
                                        0x00};
/* Same, with an OID-less encapsulated content and a non-SET signers field. */
static const uint8_t der_bad_signers[] = {0x30, 0x1e, SIGNED_DATA_OID,
                                          0xa0, 0x11, 0x30,
                                          0x0f, 0x02, 0x01,
                                          0x01, 0x31, 0x00,
                                          0x30, 0x06, 0x06,
                                          0x04, 0x2b, 0x06,
                                          0x01, 0x04, 0x30,
                                          0x00};
/* One signer whose SignerInfo is an empty SEQUENCE. */
static const uint8_t der_empty_signer[] = {0x30, 0x20, SIGNED_DATA_OID,
                                           0xa0, 0x13, 0x30,
                                           0x11, 0x02, 0x01,
                                           0x01, 0x31, 0x00,
                                           0x30, 0x06, 0x06,
                                           0x04, 0x2b, 0x06,
                                           0x01, 0x04, 0x31,
                                           0x02, 0x30, 0x00};
/* One signer identified by subjectKeyIdentifier ([0]): unsupported, so malformed. */
static const uint8_t der_ski_signer[] = {0x30, 0x25, SIGNED_DATA_OID,
                                         0xa0, 0x18, 0x30,
                                         0x16, 0x02, 0x01,
                                         0x01, 0x31, 0x00,
                                         0x30, 0x06, 0x06,
                                         0x04, 0x2b, 0x06,
                                         0x01, 0x04, 0x31,
                                         0x07, 0x30, 0x05,
                                         0x02, 0x01, 0x03,
                                         0x80, 0x00};

static const der_case der_cases[] = {
    {"empty", der_empty_seq, 0},
    {"empty sequence", der_empty_seq, sizeof der_empty_seq},
    {"truncated", der_truncated, sizeof der_truncated},
    {"indefinite length", der_indefinite, sizeof der_indefinite},
    {"huge length", der_huge_length, sizeof der_huge_length},
    {"no content", der_no_content, sizeof der_no_content},
    {"trailing byte", der_trailing, sizeof der_trailing},
    {"no signer", der_no_signer, sizeof der_no_signer},
    {"signers not a set", der_bad_signers, sizeof der_bad_signers},
    {"empty signer", der_empty_signer, sizeof der_empty_signer},
    {"signer by key identifier", der_ski_signer, sizeof der_ski_signer},
};

static void test_malformed_pkcs7(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof der_cases / sizeof der_cases[0]; i++) {
        authenticode_result r;
        authenticode_verdict v = judge_blob(der_cases[i].der, der_cases[i].len, &r);
        if (v != AUTHENTICODE_MALFORMED)
            fail_msg("%s: got %s (%s)", der_cases[i].name, authenticode_verdict_name(v), r.reason);
    }
}

/* Every prefix of a structurally plausible blob is refused without crashing. */
/* Without a trusted CA, everything but the chain is still judged
 * (PRODUCT.md 4.3): the same verdicts as with one for every structural
 * case, and the result says the chain was not checked. */
static void test_without_ca_everything_but_the_chain(void **state)
{
    (void)state;
    without_ca = true;
    uint8_t buf[PE_SIZE];
    authenticode_result r;
    make_pe(buf, true);
    assert_int_equal(judge(buf, sizeof buf, &r), AUTHENTICODE_UNSIGNED);
    assert_false(r.signature_found);
    assert_false(r.chain_checked);
    for (size_t i = 0; i < sizeof pe_cases / sizeof pe_cases[0]; i++) {
        size_t len = sizeof buf;
        make_pe(buf, true);
        pe_cases[i].mutate(buf, &len);
        authenticode_verdict v = judge(buf, len, &r);
        if (v != pe_cases[i].verdict)
            fail_msg("%s without a CA: got %s (%s)", pe_cases[i].name, authenticode_verdict_name(v), r.reason);
        assert_false(r.chain_checked);
    }
    for (size_t i = 0; i < sizeof der_cases / sizeof der_cases[0]; i++) {
        authenticode_verdict v = judge_blob(der_cases[i].der, der_cases[i].len, &r);
        if (v != AUTHENTICODE_MALFORMED)
            fail_msg("%s without a CA: got %s (%s)", der_cases[i].name, authenticode_verdict_name(v), r.reason);
        assert_true(r.signature_found);
        assert_false(r.chain_checked);
    }
    without_ca = false;
}

static void test_truncated_pkcs7_prefixes(void **state)
{
    (void)state;
    for (size_t n = 0; n < sizeof der_ski_signer; n++) {
        authenticode_result r;
        assert_int_equal(judge_blob(der_ski_signer, n, &r), AUTHENTICODE_MALFORMED);
    }
}

/* ---- OLE compound files ---------------------------------------------------- */

#define CFB_SIZE (512 * 3)

/* A version 3 compound file: header, sector 0 = FAT, sector 1 = directory
 * holding only the root entry. */
static void make_cfb(uint8_t *b)
{
    static const uint8_t magic[8] = {0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1};
    memset(b, 0, CFB_SIZE);
    memcpy(b, magic, 8);
    support_put16(b + 0x18, 0x3e);
    support_put16(b + 0x1a, 3);
    support_put16(b + 0x1c, 0xfffe);
    support_put16(b + 0x1e, 9);
    support_put16(b + 0x20, 6);
    support_put32(b + 0x2c, 1);          /* one FAT sector */
    support_put32(b + 0x30, 1);          /* directory at sector 1 */
    support_put32(b + 0x38, 4096);       /* mini stream cutoff */
    support_put32(b + 0x3c, 0xfffffffe); /* no mini FAT */
    support_put32(b + 0x44, 0xfffffffe); /* no DIFAT sectors */
    memset(b + 0x4c, 0xff, 109 * 4);
    support_put32(b + 0x4c, 0); /* FAT in sector 0 */
    uint8_t *fat = b + 512;
    memset(fat, 0xff, 512);
    support_put32(fat, 0xfffffffd);     /* sector 0: FAT */
    support_put32(fat + 4, 0xfffffffe); /* sector 1: end of the directory chain */
    uint8_t *dir = b + 1024;
    const char *root = "Root Entry";
    for (size_t i = 0; root[i]; i++)
        dir[2 * i] = (uint8_t)root[i];
    support_put16(dir + 0x40, 22);
    dir[0x42] = 5;
    for (int e = 0; e < 4; e++) {
        support_put32(dir + 128 * e + 0x44, 0xffffffff);
        support_put32(dir + 128 * e + 0x48, 0xffffffff);
        support_put32(dir + 128 * e + 0x4c, 0xffffffff);
    }
    support_put32(dir + 0x74, 0xfffffffe);
}

/* Turns directory entry 1 into a stream named "A" under the root. */
static void add_stream(uint8_t *b)
{
    uint8_t *dir = b + 1024;
    support_put32(dir + 0x4c, 1);
    uint8_t *e = dir + 128;
    e[0] = 'A';
    support_put16(e + 0x40, 4);
    e[0x42] = 2;
    support_put32(e + 0x74, 0xfffffffe);
}

static void test_cfb_unsigned(void **state)
{
    (void)state;
    uint8_t b[CFB_SIZE];
    authenticode_result r;
    make_cfb(b);
    assert_int_equal(judge(b, sizeof b, &r), AUTHENTICODE_UNSIGNED);
    assert_string_equal(r.file_format, "msi");
    add_stream(b);
    assert_int_equal(judge(b, sizeof b, &r), AUTHENTICODE_UNSIGNED);
}

static void cfb_bad_version(uint8_t *b)
{
    support_put16(b + 0x1a, 5);
}
static void cfb_bad_sector_shift(uint8_t *b)
{
    support_put16(b + 0x1e, 12);
}
static void cfb_directory_loop(uint8_t *b)
{
    support_put32(b + 512 + 4, 1);
}
static void cfb_directory_past_end(uint8_t *b)
{
    support_put32(b + 0x30, 1000);
}
static void cfb_fat_past_end(uint8_t *b)
{
    support_put32(b + 0x4c, 77);
}
static void cfb_too_many_fat_sectors(uint8_t *b)
{
    support_put32(b + 0x2c, 0x40000000);
}
static void cfb_root_is_its_own_child(uint8_t *b)
{
    support_put32(b + 1024 + 0x4c, 0);
}
static void cfb_child_out_of_range(uint8_t *b)
{
    support_put32(b + 1024 + 0x4c, 99999);
}
static void cfb_child_unused(uint8_t *b)
{
    support_put32(b + 1024 + 0x4c, 2);
}
static void cfb_sibling_loop(uint8_t *b)
{
    add_stream(b);
    support_put32(b + 1024 + 128 + 0x44, 1);
}
static void cfb_stream_with_child(uint8_t *b)
{
    add_stream(b);
    support_put32(b + 1024 + 128 + 0x4c, 1);
}
static void cfb_bad_name_length(uint8_t *b)
{
    add_stream(b);
    support_put16(b + 1024 + 128 + 0x40, 65);
}
static void cfb_unterminated_name(uint8_t *b)
{
    add_stream(b);
    b[1024 + 128 + 2] = 'B';
}
static void cfb_first_entry_not_root(uint8_t *b)
{
    b[1024 + 0x42] = 1;
}
static void cfb_huge_stream(uint8_t *b)
{
    add_stream(b);
    support_put32(b + 1024 + 128 + 0x78, 0x7fffffff);
}
static void cfb_stream_chain_past_end(uint8_t *b)
{
    add_stream(b);
    support_put32(b + 1024 + 128 + 0x78, 1000); /* mini stream, but there is no mini FAT */
}
static void cfb_unknown_type(uint8_t *b)
{
    add_stream(b);
    b[1024 + 128 + 0x42] = 7;
}
static void cfb_last_sector_free(uint8_t *b)
{
    support_put32(b + 512 + 4, 0xffffffff);
}

typedef struct cfb_case {
    const char *name;
    void (*mutate)(uint8_t *b);
} cfb_case;

static const cfb_case cfb_cases[] = {
    {"bad version", cfb_bad_version},
    {"bad sector shift", cfb_bad_sector_shift},
    {"directory chain loops", cfb_directory_loop},
    {"directory past the end", cfb_directory_past_end},
    {"FAT past the end", cfb_fat_past_end},
    {"too many FAT sectors", cfb_too_many_fat_sectors},
    {"root is its own child", cfb_root_is_its_own_child},
    {"child out of range", cfb_child_out_of_range},
    {"child is an unused entry", cfb_child_unused},
    {"sibling loop", cfb_sibling_loop},
    {"stream with a child", cfb_stream_with_child},
    {"name length over 64", cfb_bad_name_length},
    {"unterminated name", cfb_unterminated_name},
    {"first entry not the root", cfb_first_entry_not_root},
    {"stream larger than the file", cfb_huge_stream},
    {"unknown entry type", cfb_unknown_type},
    {"last sector not allocated", cfb_last_sector_free},
};

static void test_cfb_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cfb_cases / sizeof cfb_cases[0]; i++) {
        uint8_t b[CFB_SIZE];
        authenticode_result r;
        make_cfb(b);
        cfb_cases[i].mutate(b);
        authenticode_verdict v = judge(b, sizeof b, &r);
        if (v != AUTHENTICODE_MALFORMED)
            fail_msg("%s: got %s (%s)", cfb_cases[i].name, authenticode_verdict_name(v), r.reason);
    }
}

static void test_cfb_bytes_after_the_file(void **state)
{
    (void)state;
    uint8_t b[CFB_SIZE + 512];
    authenticode_result r;
    make_cfb(b);
    memset(b + CFB_SIZE, 0x41, 512);
    assert_int_equal(judge(b, CFB_SIZE + 100, &r), AUTHENTICODE_MALFORMED);
    assert_int_equal(judge(b, CFB_SIZE + 512, &r), AUTHENTICODE_MALFORMED);
    assert_non_null(strstr(r.reason, "end of the compound file"));
}

/* A mini stream whose chain points past the mini FAT: readable structure,
 * broken stream; reading it (while hashing) must fail cleanly. The stream
 * is only read when a signature exists, so this goes through the signature
 * stream itself. */
static void test_cfb_broken_signature_stream(void **state)
{
    (void)state;
    uint8_t b[CFB_SIZE];
    authenticode_result r;
    make_cfb(b);
    add_stream(b);
    static const uint8_t name[] = {0x05, 0, 'D', 0, 'i', 0, 'g', 0, 'i', 0, 't', 0, 'a', 0, 'l', 0, 'S', 0,
                                   'i',  0, 'g', 0, 'n', 0, 'a', 0, 't', 0, 'u', 0, 'r', 0, 'e', 0, 0,   0};
    uint8_t *e = b + 1024 + 128;
    memcpy(e, name, sizeof name);
    support_put16(e + 0x40, sizeof name);
    cfb_stream_chain_past_end(b);
    memcpy(e, name, sizeof name);
    support_put16(e + 0x40, sizeof name);
    assert_int_equal(judge(b, sizeof b, &r), AUTHENTICODE_MALFORMED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_names),
        cmocka_unit_test(test_missing_ca_file_is_config_error),
        cmocka_unit_test(test_missing_file_is_an_error),
        cmocka_unit_test(test_unsigned_pe32_and_pe32_plus),
        cmocka_unit_test(test_pe_header_cases),
        cmocka_unit_test(test_certificate_table_entries),
        cmocka_unit_test(test_pe_over_2gib),
        cmocka_unit_test(test_malformed_pkcs7),
        cmocka_unit_test(test_truncated_pkcs7_prefixes),
        cmocka_unit_test(test_without_ca_everything_but_the_chain),
        cmocka_unit_test(test_cfb_unsigned),
        cmocka_unit_test(test_cfb_malformed),
        cmocka_unit_test(test_cfb_bytes_after_the_file),
        cmocka_unit_test(test_cfb_broken_signature_stream),
    };
    return cmocka_run_group_tests(tests, setup_ca, NULL);
}
