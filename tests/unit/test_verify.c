/* test_verify.c — the verification layers: format detection on crafted
 * buffers (truncated and hostile PE headers included), length, SHA-256,
 * expected_sha256, the signature rule when no CA is configured, and the
 * version binding of files that state no version. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <mbedtls/md.h>

#include "authenticode/pe.h"
#include "installer/verify.h"
#include "platform/platform.h"

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* An MZ header whose e_lfanew is pe_offset, with "PE\0\0" there when it fits. */
static size_t make_pe(uint8_t *buf, size_t size, uint32_t pe_offset)
{
    memset(buf, 0, size);
    buf[0] = 'M';
    buf[1] = 'Z';
    put32(buf + 0x3C, pe_offset);
    if ((uint64_t)pe_offset + 4 <= size)
        memcpy(buf + pe_offset, "PE\0\0", 4);
    return size;
}

static void test_detect_pe(void **unused)
{
    (void)unused;
    uint8_t buf[512];
    make_pe(buf, sizeof buf, 0x80);
    assert_int_equal(verify_detect_format(buf, sizeof buf), VERIFY_FORMAT_PE);
}

static void test_detect_truncated_pe(void **unused)
{
    (void)unused;
    uint8_t buf[512];
    make_pe(buf, sizeof buf, 0x80);
    /* e_lfanew points past what we have, or the MZ header itself is cut short. */
    assert_int_equal(verify_detect_format(buf, 0x82), VERIFY_FORMAT_UNKNOWN);
    assert_int_equal(verify_detect_format(buf, 0x3F), VERIFY_FORMAT_UNKNOWN);
    assert_int_equal(verify_detect_format(buf, 2), VERIFY_FORMAT_UNKNOWN);
    put32(buf + 0x3C, 0xFFFFFFFFu); /* must not wrap around */
    assert_int_equal(verify_detect_format(buf, sizeof buf), VERIFY_FORMAT_UNKNOWN);
    put32(buf + 0x3C, 0xFFFFFFFEu);
    assert_int_equal(verify_detect_format(buf, sizeof buf), VERIFY_FORMAT_UNKNOWN);
}

static void test_detect_mz_without_pe(void **unused)
{
    (void)unused;
    uint8_t buf[512];
    make_pe(buf, sizeof buf, 0x80);
    buf[0x81] = 'X';
    assert_int_equal(verify_detect_format(buf, sizeof buf), VERIFY_FORMAT_UNKNOWN);
}

static void test_detect_other_formats(void **unused)
{
    (void)unused;
    static const uint8_t msi[8] = {0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1};
    static const uint8_t sevenzip[6] = {'7', 'z', 0xBC, 0xAF, 0x27, 0x1C};
    static const uint8_t gz[3] = {0x1F, 0x8B, 8};
    uint8_t tar[512] = {0};
    memcpy(tar + 257, "ustar", 5);
    const char *html = "<!DOCTYPE html><html><body>Service unavailable</body></html>";
    assert_int_equal(verify_detect_format(msi, sizeof msi), VERIFY_FORMAT_MSI);
    assert_int_equal(verify_detect_format(msi, 7), VERIFY_FORMAT_UNKNOWN);
    assert_int_equal(verify_detect_format((const uint8_t *)"PK\3\4xxxx", 8), VERIFY_FORMAT_ZIP);
    assert_int_equal(verify_detect_format(sevenzip, sizeof sevenzip), VERIFY_FORMAT_7Z);
    assert_int_equal(verify_detect_format((const uint8_t *)"MSCF\0\0\0\0", 8), VERIFY_FORMAT_CAB);
    assert_int_equal(verify_detect_format(gz, sizeof gz), VERIFY_FORMAT_TAR_GZ);
    assert_int_equal(verify_detect_format(tar, sizeof tar), VERIFY_FORMAT_TAR);
    assert_int_equal(verify_detect_format((const uint8_t *)html, strlen(html)), VERIFY_FORMAT_UNKNOWN);
    assert_int_equal(verify_detect_format(NULL, 0), VERIFY_FORMAT_UNKNOWN);
    assert_true(verify_format_is_archive(VERIFY_FORMAT_ZIP));
    assert_false(verify_format_is_archive(VERIFY_FORMAT_PE));
    assert_string_equal(verify_format_name(VERIFY_FORMAT_TAR_GZ), "tar.gz");
}

static char *temp_file(const void *data, size_t len)
{
    char *path = strdup("/tmp/outpost-verify-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
    return path;
}

static void test_file_format_far_pe_header(void **unused)
{
    (void)unused;
    static uint8_t buf[8192];
    make_pe(buf, sizeof buf, 4096);
    char *path = temp_file(buf, sizeof buf);
    verify_format f;
    error_info err;
    assert_int_equal(verify_file_format(path, &f, &err), ERR_OK);
    assert_int_equal(f, VERIFY_FORMAT_PE);
    unlink(path);
    free(path);

    /* The same header, but the file ends before e_lfanew. */
    path = temp_file(buf, 4098);
    assert_int_equal(verify_file_format(path, &f, &err), ERR_OK);
    assert_int_equal(f, VERIFY_FORMAT_UNKNOWN);
    unlink(path);
    free(path);

    assert_int_equal(verify_file_format("/nonexistent/outpost", &f, &err), ERR_NOT_FOUND);
}

/* e_lfanew past 2 GiB (Windows' 32-bit long): the PE signature is still read
 * where it is, in a sparse file that uses no disk for the hole. */
static void test_file_format_pe_header_past_2gib(void **unused)
{
    (void)unused;
    const uint32_t pe_offset = 0x80000040u;
    static uint8_t buf[512];
    make_pe(buf, sizeof buf, pe_offset);
    char *path = temp_file(buf, sizeof buf);
    error_info err;
    FILE *fp = platform_fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(platform_seek(fp, pe_offset, &err), ERR_OK);
    assert_int_equal(fwrite("PE\0\0", 1, 4, fp), 4);
    assert_int_equal(fclose(fp), 0);
    verify_format f;
    assert_int_equal(verify_file_format(path, &f, &err), ERR_OK);
    assert_int_equal(f, VERIFY_FORMAT_PE);
    unlink(path);
    free(path);
}

static void test_sha256_and_expected(void **unused)
{
    (void)unused;
    char *path = temp_file("abc", 3);
    char hex[65];
    int64_t size = 0;
    error_info err;
    assert_int_equal(verify_sha256_file(path, hex, &size, &err), ERR_OK);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_int_equal(size, 3);
    unlink(path);
    free(path);

    verify_report r;
    verify_report_init(&r);
    snprintf(r.received_sha256, sizeof r.received_sha256, "%s", hex);
    config_verify policy = {0};
    assert_int_equal(verify_expected_sha256(&r, &policy, &err), ERR_OK);
    assert_false(r.sha256_configured);
    policy.expected_sha256 = (char *)"BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
    assert_int_equal(verify_expected_sha256(&r, &policy, &err), ERR_OK);
    assert_true(r.sha256_configured);
    policy.expected_sha256 = (char *)"0000000000000000000000000000000000000000000000000000000000000000";
    assert_int_equal(verify_expected_sha256(&r, &policy, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "SHA-256"));
}

/* A signed-looking PE32+ of `size` bytes: its certificate table is the
 * last 64 bytes (pe_stream then computes an Authenticode digest). */
static void make_signed_pe(uint8_t *b, size_t size)
{
    for (size_t i = 0; i < size; i++)
        b[i] = (uint8_t)(i * 131 + (i >> 11));
    memset(b, 0, 0x200);
    make_pe(b, 0x200, 0x80);
    b[0x80 + 20] = 240; /* SizeOfOptionalHeader */
    b[0x98] = 0x0b;     /* PE32+ magic 0x20b */
    b[0x99] = 0x02;
    put32(b + 0x98 + 108, 16);                  /* NumberOfRvaAndSizes */
    put32(b + 0x98 + 144, (uint32_t)size - 64); /* the certificate table */
    put32(b + 0x98 + 148, 64);
}

/* verify_hasher hands the Authenticode digest to a thread through a ring
 * of copies: whatever the pieces it is fed (smaller than a slot, larger
 * than the whole ring), both digests equal those of one pass on one thread. */
static void test_hasher_digests_whatever_the_pieces(void **unused)
{
    (void)unused;
    enum { SIZE = 1536 * 1024 + 77 };
    uint8_t *b = malloc(SIZE);
    assert_non_null(b);
    make_signed_pe(b, SIZE);
    pe_stream *one = pe_stream_new(SIZE);
    assert_non_null(one);
    pe_stream_update(one, b, SIZE);
    authenticode_pe_digest want;
    assert_true(pe_stream_finish(one, &want));
    pe_stream_free(one);
    uint8_t sha[32];
    char want_hex[65];
    assert_int_equal(mbedtls_md(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), b, SIZE, sha), 0);
    for (size_t i = 0; i < 32; i++)
        snprintf(want_hex + 2 * i, 3, "%02x", sha[i]);

    static const size_t pieces[] = {1021, 4096, 300 * 1024, 1024 * 1024 + 3, SIZE};
    for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
        verify_hasher *h = verify_hasher_new(SIZE);
        assert_non_null(h);
        for (size_t at = 0; at < SIZE; at += pieces[p])
            verify_hasher_update(h, b + at, at + pieces[p] <= SIZE ? pieces[p] : SIZE - at);
        verify_digests got;
        error_info err;
        assert_int_equal(verify_hasher_finish(h, &got, &err), ERR_OK);
        assert_string_equal(got.sha256, want_hex);
        assert_int_equal(got.size, SIZE);
        assert_true(got.have_pe);
        assert_memory_equal(got.pe.sha256, want.sha256, 32);
        assert_int_equal(got.pe.cert_table_offset, SIZE - 64);
    }
    /* An abandoned pass stops its thread (free does not hang or leak). */
    verify_hasher *h = verify_hasher_new(SIZE);
    assert_non_null(h);
    verify_hasher_update(h, b, SIZE / 2);
    verify_hasher_free(h);
    verify_hasher_free(NULL);
    free(b);
}

static void test_length(void **unused)
{
    (void)unused;
    verify_report r;
    error_info err;
    verify_report_init(&r);
    assert_int_equal(verify_length(&r, -1, 10, &err), ERR_OK);
    assert_int_equal(verify_length(&r, 10, 10, &err), ERR_OK);
    assert_int_equal(verify_length(&r, 11, 10, &err), ERR_REJECTED);
    assert_non_null(strstr(err.message, "length"));
}

static void test_signature_without_ca(void **unused)
{
    (void)unused;
    uint8_t buf[512];
    make_pe(buf, sizeof buf, 0x80);
    char *path = temp_file(buf, sizeof buf);
    verify_report r;
    verify_report_init(&r);
    error_info err;
    config_verify policy = {.require_signature = false, .trusted_ca_file = NULL};
    assert_int_equal(verify_signature(&r, &policy, path, NULL, &err), ERR_OK);
    assert_string_equal(r.signature, "skipped");

    policy.require_signature = true;
    assert_int_equal(verify_signature(&r, &policy, path, NULL, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "trusted_ca_file"));
    /* A CA file that is named but missing never turns the check into
     * "skipped", whether or not signatures are required. */
    policy.trusted_ca_file = (char *)"/nonexistent/ca.pem";
    assert_int_equal(verify_signature(&r, &policy, path, NULL, &err), ERR_CONFIG);
    policy.require_signature = false;
    verify_report_init(&r);
    assert_int_equal(verify_signature(&r, &policy, path, NULL, &err), ERR_CONFIG);
    assert_string_equal(err.message, "installer.verify.trusted_ca_file: /nonexistent/ca.pem does not exist; create "
                                     "the file or correct the key");
    assert_string_equal(r.signature, "");
    unlink(path);
    free(path);
}

static void test_signature_unsigned_with_ca(void **unused)
{
    (void)unused;
    /* A CA file that holds a certificate is needed for the authenticode layer
     * to run; a garbage one is a configuration error naming the file. */
    char *ca = temp_file("not a certificate", 17);
    uint8_t buf[512];
    make_pe(buf, sizeof buf, 0x80);
    char *path = temp_file(buf, sizeof buf);
    verify_report r;
    verify_report_init(&r);
    error_info err;
    config_verify policy = {.require_signature = false, .trusted_ca_file = ca};
    assert_int_equal(verify_signature(&r, &policy, path, NULL, &err), ERR_CONFIG);
    unlink(path);
    unlink(ca);
    free(path);
    free(ca);
}

static void test_report_json(void **unused)
{
    (void)unused;
    verify_report r;
    verify_report_init(&r);
    snprintf(r.format, sizeof r.format, "zip");
    snprintf(r.inner_format, sizeof r.inner_format, "msi");
    snprintf(r.signature, sizeof r.signature, "unsigned");
    cJSON *j = verify_report_to_json(&r);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "format")->valuestring, "zip");
    assert_string_equal(cJSON_GetObjectItem(j, "inner_format")->valuestring, "msi");
    assert_string_equal(cJSON_GetObjectItem(j, "sha256")->valuestring, "not-configured");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "signature"), "result")->valuestring, "unsigned");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "length"), "expected")));
    cJSON_Delete(j);
}

/* Version binding on files that state no version: "unbound", accepted
 * unless require_version_match (a mismatch is in test_version_binding.py). */
static void test_version_binding_unbound(void **unused)
{
    (void)unused;
    uint8_t buf[512];
    make_pe(buf, sizeof buf, 0x80); /* no optional header: its version cannot be read */
    char *pe = temp_file(buf, sizeof buf);
    char *text = temp_file("hello", 5);
    const struct {
        const char *path, *reason;
    } cases[] = {{pe, "cannot be read"}, {text, "neither a PE image nor an MSI"}};
    for (size_t i = 0; i < 2; i++) {
        verify_report r;
        verify_report_init(&r);
        error_info err;
        config_verify policy = {.require_version_match = false};
        assert_int_equal(verify_version_binding(&r, &policy, cases[i].path, "1.2.3", &err), ERR_OK);
        assert_string_equal(r.binding, "unbound");
        assert_string_equal(r.file_version, "");
        assert_non_null(strstr(r.binding_reason, cases[i].reason));
        cJSON *j = verify_report_to_json(&r);
        const cJSON *b = cJSON_GetObjectItem(j, "version_binding");
        assert_string_equal(cJSON_GetObjectItem(b, "status")->valuestring, "unbound");
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(b, "file_version")));
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(b, "source")));
        assert_non_null(strstr(cJSON_GetObjectItem(b, "reason")->valuestring, cases[i].reason));
        cJSON_Delete(j);

        policy.require_version_match = true;
        assert_int_equal(verify_version_binding(&r, &policy, cases[i].path, "1.2.3", &err), ERR_REJECTED);
        assert_non_null(strstr(err.message, "require_version_match"));
        assert_non_null(strstr(err.message, cases[i].reason));
    }
    verify_report r;
    verify_report_init(&r);
    error_info err;
    config_verify policy = {.require_version_match = false};
    assert_int_equal(verify_version_binding(&r, &policy, "/nonexistent/installer.exe", "1.2.3", &err), ERR_NOT_FOUND);
    unlink(pe);
    unlink(text);
    free(pe);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect_pe),
        cmocka_unit_test(test_detect_truncated_pe),
        cmocka_unit_test(test_detect_mz_without_pe),
        cmocka_unit_test(test_detect_other_formats),
        cmocka_unit_test(test_file_format_far_pe_header),
        cmocka_unit_test(test_file_format_pe_header_past_2gib),
        cmocka_unit_test(test_sha256_and_expected),
        cmocka_unit_test(test_length),
        cmocka_unit_test(test_signature_without_ca),
        cmocka_unit_test(test_signature_unsigned_with_ca),
        cmocka_unit_test(test_report_json),
        cmocka_unit_test(test_version_binding_unbound),
        cmocka_unit_test(test_hasher_digests_whatever_the_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
