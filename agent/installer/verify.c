/*
 * verify.c — the verification layers of PRODUCT.md section 4.3: length,
 * format (PE, MSI, or an archive to open), expected SHA-256, Authenticode
 * (delegated to authenticode.c) and the version binding (the file's own
 * version, read by pe.c / msi.c), each recording its finding in a
 * verify_report for the manifest. The signature rules are in verify.h.
 */
#include "installer/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "authenticode/authenticode.h"
#include "authenticode/msi.h"
#include "authenticode/pe.h"
#include "base/text.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "crypto/sha256.h"
#include "core/timefmt.h"
#include "installer/version.h"
#include "platform/platform.h"

#define HASH_BUFFER (256 * 1024)

static uint32_t read_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool is_msi(const uint8_t *head, size_t len)
{
    static const uint8_t magic[8] = {0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1};
    return len >= sizeof magic && memcmp(head, magic, sizeof magic) == 0;
}

/* e_lfanew of an MZ header, or -1 when head is not one. */
static int64_t mz_pe_offset(const uint8_t *head, size_t len)
{
    if (len < 0x40 || head[0] != 'M' || head[1] != 'Z')
        return -1;
    return (int64_t)read_le32(head + 0x3C);
}

static bool is_pe_signature(const uint8_t *p)
{
    return p[0] == 'P' && p[1] == 'E' && p[2] == 0 && p[3] == 0;
}

static verify_format archive_format(const uint8_t *head, size_t len)
{
    if (len >= 4 && head[0] == 'P' && head[1] == 'K' &&
        ((head[2] == 3 && head[3] == 4) || (head[2] == 5 && head[3] == 6)))
        return VERIFY_FORMAT_ZIP;
    static const uint8_t sevenzip[6] = {'7', 'z', 0xBC, 0xAF, 0x27, 0x1C};
    if (len >= sizeof sevenzip && memcmp(head, sevenzip, sizeof sevenzip) == 0)
        return VERIFY_FORMAT_7Z;
    if (len >= 4 && memcmp(head, "MSCF", 4) == 0)
        return VERIFY_FORMAT_CAB;
    if (len >= 2 && head[0] == 0x1F && head[1] == 0x8B)
        return VERIFY_FORMAT_TAR_GZ;
    if (len >= 262 && memcmp(head + 257, "ustar", 5) == 0)
        return VERIFY_FORMAT_TAR;
    return VERIFY_FORMAT_UNKNOWN;
}

verify_format verify_detect_format(const uint8_t *head, size_t len)
{
    if (!head)
        return VERIFY_FORMAT_UNKNOWN;
    int64_t pe_offset = mz_pe_offset(head, len);
    if (pe_offset >= 0) {
        if ((uint64_t)pe_offset + 4 > len)
            return VERIFY_FORMAT_UNKNOWN;
        return is_pe_signature(head + pe_offset) ? VERIFY_FORMAT_PE : VERIFY_FORMAT_UNKNOWN;
    }
    if (is_msi(head, len))
        return VERIFY_FORMAT_MSI;
    return archive_format(head, len);
}

error_code verify_file_format(const char *path, verify_format *format, error_info *err)
{
    *format = VERIFY_FORMAT_UNKNOWN;
    FILE *f = platform_fopen(path, "rb");
    if (!f)
        return platform_stdio_error(err, "cannot open %s", path);
    uint8_t head[VERIFY_HEAD_BYTES];
    size_t len = fread(head, 1, sizeof head, f);
    int64_t pe_offset = mz_pe_offset(head, len);
    if (pe_offset < 0 || (uint64_t)pe_offset + 4 <= len) {
        *format = verify_detect_format(head, len);
        fclose(f);
        return ERR_OK;
    }
    /* The PE header lies beyond the first bytes: read it where it is, if the
     * file reaches that far. */
    uint8_t sig[4];
    if (platform_read_at(f, (uint64_t)pe_offset, sig, sizeof sig, NULL) == ERR_OK && is_pe_signature(sig))
        *format = VERIFY_FORMAT_PE;
    fclose(f);
    return ERR_OK;
}

const char *verify_format_name(verify_format format)
{
    switch (format) {
    case VERIFY_FORMAT_PE: return "pe";
    case VERIFY_FORMAT_MSI: return "msi";
    case VERIFY_FORMAT_ZIP: return "zip";
    case VERIFY_FORMAT_7Z: return "7z";
    case VERIFY_FORMAT_CAB: return "cab";
    case VERIFY_FORMAT_TAR: return "tar";
    case VERIFY_FORMAT_TAR_GZ: return "tar.gz";
    case VERIFY_FORMAT_UNKNOWN: break;
    }
    return "unknown";
}

bool verify_format_is_archive(verify_format format)
{
    return format == VERIFY_FORMAT_ZIP || format == VERIFY_FORMAT_7Z || format == VERIFY_FORMAT_CAB ||
           format == VERIFY_FORMAT_TAR || format == VERIFY_FORMAT_TAR_GZ;
}

/*
 * The two digests of one pass (the file's SHA-256 and a PE's Authenticode
 * digest) are two full SHA-256 computations over nearly the same bytes: the
 * CPU of `stage`. The Authenticode one runs on a thread of its own, fed
 * through a small ring of copies (the caller's buffer is reused as soon as
 * update returns), so on two cores the digests overlap each other and the
 * caller's disk writes. Should the thread not start, both run on the
 * caller's thread as before.
 */
#define HASHER_SLOTS 4
/* 1 MiB a slot: with 256 KiB ones the two threads woke each other about
 * 4,000 times for 512 MiB, a tenth of stage's CPU in futex wake-ups
 * (perf, issue 32). */
#define HASHER_SLOT_BYTES (1024 * 1024)

struct verify_hasher {
    sha256_ctx sha256;
    pe_stream *pe;
    int64_t size;
    platform_thread *thread; /* NULL: pe_stream_update runs on the caller's thread */
    platform_mutex *mutex;
    platform_cond *cond; /* any change of filled, consumed or done; broadcast */
    unsigned char *slots[HASHER_SLOTS];
    size_t lengths[HASHER_SLOTS];
    uint64_t filled;   /* slots handed to the thread */
    uint64_t consumed; /* slots the thread has hashed */
    bool done;         /* no more slots will come */
    bool thread_waits; /* the thread sleeps on cond for a slot */
    bool caller_waits; /* the caller sleeps on cond for a free slot */
};

static void hasher_pe_main(void *arg)
{
    verify_hasher *h = arg;
    platform_mutex_lock(h->mutex);
    for (;;) {
        while (h->consumed == h->filled && !h->done) {
            h->thread_waits = true;
            platform_cond_wait(h->cond, h->mutex);
            h->thread_waits = false;
        }
        if (h->consumed == h->filled)
            break;
        size_t slot = (size_t)(h->consumed % HASHER_SLOTS);
        platform_mutex_unlock(h->mutex);
        pe_stream_update(h->pe, h->slots[slot], h->lengths[slot]);
        platform_mutex_lock(h->mutex);
        h->consumed++;
        if (h->caller_waits) /* a wake-up only where someone sleeps */
            platform_cond_broadcast(h->cond);
    }
    platform_mutex_unlock(h->mutex);
}

/* Starts the Authenticode thread; on any failure h simply stays single-threaded. */
static void hasher_start_thread(verify_hasher *h)
{
    h->mutex = platform_mutex_new();
    h->cond = platform_cond_new();
    bool ok = h->mutex && h->cond;
    for (size_t i = 0; ok && i < HASHER_SLOTS; i++)
        ok = (h->slots[i] = malloc(HASHER_SLOT_BYTES)) != NULL;
    error_info ignored;
    error_clear(&ignored);
    if (ok && platform_thread_start(&h->thread, hasher_pe_main, h, &ignored) != ERR_OK)
        h->thread = NULL;
}

/* Lets the thread finish what it was given and joins it. */
static void hasher_stop_thread(verify_hasher *h)
{
    if (!h->thread)
        return;
    platform_mutex_lock(h->mutex);
    h->done = true;
    platform_cond_broadcast(h->cond);
    platform_mutex_unlock(h->mutex);
    platform_thread_join(h->thread);
    h->thread = NULL;
}

verify_hasher *verify_hasher_new(uint64_t file_size)
{
    verify_hasher *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    sha256_init(&h->sha256);
    h->pe = pe_stream_new(file_size);
    if (!h->pe) {
        verify_hasher_free(h);
        return NULL;
    }
    hasher_start_thread(h);
    return h;
}

/* Hands a copy of at most HASHER_SLOT_BYTES to the thread, waiting while
 * the ring is full. */
static void hasher_hand_over(verify_hasher *h, const unsigned char *data, size_t len)
{
    platform_mutex_lock(h->mutex);
    while (h->filled - h->consumed >= HASHER_SLOTS) {
        h->caller_waits = true;
        platform_cond_wait(h->cond, h->mutex);
        h->caller_waits = false;
    }
    size_t slot = (size_t)(h->filled % HASHER_SLOTS);
    platform_mutex_unlock(h->mutex);
    memcpy(h->slots[slot], data, len); /* the thread is done with this slot */
    platform_mutex_lock(h->mutex);
    h->lengths[slot] = len;
    h->filled++;
    if (h->thread_waits)
        platform_cond_broadcast(h->cond);
    platform_mutex_unlock(h->mutex);
}

void verify_hasher_update(verify_hasher *h, const void *data, size_t len)
{
    const unsigned char *p = data;
    h->size += (int64_t)len;
    if (!h->thread) {
        sha256_update(&h->sha256, p, len);
        pe_stream_update(h->pe, p, len);
        return;
    }
    while (len > 0) {
        size_t n = len < HASHER_SLOT_BYTES ? len : HASHER_SLOT_BYTES;
        hasher_hand_over(h, p, n);
        sha256_update(&h->sha256, p, n);
        p += n;
        len -= n;
    }
}

error_code verify_hasher_finish(verify_hasher *h, verify_digests *out, error_info *err)
{
    unsigned char digest[32];
    memset(out, 0, sizeof *out);
    hasher_stop_thread(h);
    (void)err; /* nothing here can fail any more; the signature keeps callers unchanged */
    error_code rc = ERR_OK;
    sha256_finish(&h->sha256, digest);
    text_hex(digest, sizeof digest, out->sha256);
    out->size = h->size;
    out->have_pe = rc == ERR_OK && pe_stream_finish(h->pe, &out->pe);
    verify_hasher_free(h);
    return rc;
}

void verify_hasher_free(verify_hasher *h)
{
    if (!h)
        return;
    hasher_stop_thread(h);
    for (size_t i = 0; i < HASHER_SLOTS; i++)
        free(h->slots[i]);
    platform_cond_free(h->cond);
    platform_mutex_free(h->mutex);
    pe_stream_free(h->pe);
    free(h);
}

error_code verify_sha256_file(const char *path, char hex[65], int64_t *size, error_info *err)
{
    FILE *f = platform_fopen(path, "rb");
    if (!f)
        return platform_stdio_error(err, "cannot open %s", path);
    error_code rc = verify_sha256_stream(f, path, hex, size, err);
    fclose(f);
    return rc;
}

error_code verify_sha256_stream(FILE *f, const char *path, char hex[65], int64_t *size, error_info *err)
{
    error_code rc = ERR_OK;
    unsigned char *buf = malloc(HASH_BUFFER);
    sha256_ctx md;
    sha256_init(&md);
    if (!buf) {
        rc = error_set(err, ERR_NOMEM, "out of memory hashing %s", path);
        goto cleanup;
    }
    int64_t total = 0;
    size_t n;
    while ((n = fread(buf, 1, HASH_BUFFER, f)) > 0) {
        sha256_update(&md, buf, n);
        total += (int64_t)n;
    }
    if (ferror(f)) {
        rc = platform_stdio_error(err, "cannot read %s", path);
        goto cleanup;
    }
    unsigned char digest[32];
    sha256_finish(&md, digest);
    text_hex(digest, sizeof digest, hex);
    if (size)
        *size = total;
cleanup:
    free(buf);
    return rc;
}

void verify_report_init(verify_report *report)
{
    memset(report, 0, sizeof *report);
    report->expected_length = -1;
    report->actual_length = -1;
}

error_code verify_length(verify_report *report, int64_t expected_length, int64_t actual_length, error_info *err)
{
    report->expected_length = expected_length;
    report->actual_length = actual_length;
    if (expected_length >= 0 && expected_length != actual_length)
        return error_set(err, ERR_REJECTED,
                         "length check failed: received %lld bytes, the server announced %lld; the download "
                         "was cut short or altered, run the update again",
                         (long long)actual_length, (long long)expected_length);
    return ERR_OK;
}

error_code verify_expected_sha256(verify_report *report, const config_verify *policy, error_info *err)
{
    report->sha256_configured = policy->expected_sha256 != NULL;
    if (!policy->expected_sha256)
        return ERR_OK;
    char expected[65];
    snprintf(expected, sizeof expected, "%s", policy->expected_sha256);
    for (char *p = expected; *p; p++)
        if (*p >= 'A' && *p <= 'F')
            *p = (char)(*p - 'A' + 'a');
    if (strcmp(expected, report->received_sha256) != 0)
        return error_set(err, ERR_REJECTED,
                         "SHA-256 check failed: the file's SHA-256 is %s, installer.verify.expected_sha256 is %s; "
                         "do not install it, or correct expected_sha256",
                         report->received_sha256, expected);
    return ERR_OK;
}

error_code verify_signature(verify_report *report, const config_verify *policy, const char *path,
                            const authenticode_pe_digest *precomputed, error_info *err)
{
    /* A CA file that is named but missing is a configuration error, never a
     * reason to skip the check. */
    error_code rc = config_check_verify_files(policy, err);
    if (rc != ERR_OK)
        return rc;
    if (!policy->trusted_ca_file && policy->require_signature)
        return error_set(err, ERR_CONFIG,
                         "installer.verify.require_signature is true but installer.verify.trusted_ca_file is not "
                         "set; set it to the publisher's CA certificate (PEM)");
    authenticode_policy ap = {
        .trusted_ca_file = policy->trusted_ca_file,
        .timestamp_ca_file = policy->timestamp_ca_file,
        .signer_subject = policy->signer_subject,
        .signer_sha256 = (const char *const *)policy->signer_sha256,
        .signer_sha256_count = policy->pin_count,
        .crl_files = (const char *const *)policy->crl_files,
        .crl_file_count = policy->crl_file_count,
        .allow_sha1 = policy->allow_sha1,
        .precomputed = precomputed,
        .now = platform_time_utc_ms() / 1000,
    };
    authenticode_result result;
    rc = authenticode_verify_file(path, &ap, &result, err);
    if (rc != ERR_OK)
        return error_prefix(err, "signature check");
    snprintf(report->signer, sizeof report->signer, "%s", result.signer_subject);
    snprintf(report->signer_cert_sha256, sizeof report->signer_cert_sha256, "%s", result.signer_cert_sha256);
    snprintf(report->digest, sizeof report->digest, "%s", result.digest_algorithm);
    report->timestamped = result.timestamped;
    report->timestamp = result.timestamp;
    snprintf(report->timestamp_kind, sizeof report->timestamp_kind, "%s", result.timestamp_kind);
    report->signature_index = result.signature_index;
    report->signature_count = result.signature_count;
    if (result.notes[0])
        log_info("signature check: %s", result.notes);
    if (result.verdict == AUTHENTICODE_VALID) {
        snprintf(report->signature, sizeof report->signature, result.chain_checked ? "valid" : "skipped");
        return ERR_OK;
    }
    if (result.verdict == AUTHENTICODE_UNSIGNED && !policy->require_signature) {
        snprintf(report->signature, sizeof report->signature, "unsigned");
        return ERR_OK;
    }
    /* No trust anchor and no signature found (the image's headers could not
     * be read that far): nothing can be judged, as before a CA is set. */
    if (!policy->trusted_ca_file && !result.signature_found) {
        snprintf(report->signature, sizeof report->signature, "skipped");
        report->signer[0] = '\0';
        report->digest[0] = '\0';
        return ERR_OK;
    }
    if (result.verdict == AUTHENTICODE_UNSIGNED)
        return error_set(err, ERR_REJECTED,
                         "signature check failed: the installer is not signed and installer.verify.require_signature "
                         "is true; get a signed installer from the publisher");
    return error_set(err, ERR_REJECTED, "signature check failed (%s): %.200s; do not install this file",
                     authenticode_verdict_name(result.verdict), result.reason);
}

/* What the file states about its version, into report; an unreadable or
 * absent version only sets binding_reason (ERR_OK). */
static MUST_CHECK error_code read_file_version(verify_report *report, const char *path, error_info *err)
{
    uint64_t size = 0;
    if (platform_path_stat(path, &size) != PLATFORM_PATH_FILE)
        return error_set(err, ERR_NOT_FOUND, "cannot read %s: it is not a regular file", path);
    FILE *f = platform_fopen(path, "rb");
    if (!f)
        return platform_stdio_error(err, "cannot open %s", path);
    uint8_t head[8];
    size_t n = fread(head, 1, sizeof head, f);
    error_info local;
    error_clear(&local);
    error_code rc = ERR_OK;
    const char *none = "it is neither a PE image nor an MSI package";
    if (msi_is_msi(head, n)) {
        none = "it has no ProductVersion property";
        rc = msi_read_product_version(f, size, report->file_version, sizeof report->file_version, &local);
        if (rc == ERR_OK && report->file_version[0])
            snprintf(report->binding_source, sizeof report->binding_source, "msi ProductVersion");
    } else if (pe_is_pe(head, n)) {
        none = "it carries no version resource";
        pe_version v;
        rc = pe_read_version(f, size, &v, &local);
        if (rc == ERR_OK && v.source) {
            snprintf(report->file_version, sizeof report->file_version, "%s", v.text);
            snprintf(report->binding_source, sizeof report->binding_source, "%s", v.source);
        }
    }
    fclose(f);
    if (rc == ERR_REJECTED) {
        snprintf(report->binding_reason, sizeof report->binding_reason, "its version cannot be read (%.150s)",
                 local.message);
        return ERR_OK;
    }
    if (rc != ERR_OK) {
        if (err)
            *err = local;
        return rc;
    }
    if (!report->binding_source[0])
        snprintf(report->binding_reason, sizeof report->binding_reason, "%s", none);
    return ERR_OK;
}

error_code verify_version_binding(verify_report *report, const config_verify *policy, const char *path,
                                  const char *version, error_info *err)
{
    report->file_version[0] = report->binding_source[0] = report->binding_reason[0] = '\0';
    snprintf(report->binding, sizeof report->binding, "unbound");
    error_code rc = read_file_version(report, path, err);
    if (rc != ERR_OK)
        return error_prefix(err, "version check");
    char numbers[VERSION_MAX_LENGTH + 1];
    if (report->binding_source[0] && !version_numbers_of(report->file_version, numbers, sizeof numbers))
        snprintf(report->binding_reason, sizeof report->binding_reason, "its %s \"%.100s\" holds no version number",
                 report->binding_source, report->file_version);
    if (report->binding_reason[0]) {
        if (!policy->require_version_match)
            return ERR_OK;
        return error_set(err, ERR_REJECTED,
                         "version check failed: the installer states no version it could be bound to (%s) and "
                         "installer.verify.require_version_match is true; get an installer that carries its "
                         "version from the publisher, or set require_version_match to false",
                         report->binding_reason);
    }
    if (version_compare_numbers(numbers, version) == 0) {
        snprintf(report->binding, sizeof report->binding, "bound");
        return ERR_OK;
    }
    snprintf(report->binding, sizeof report->binding, "mismatch");
    return error_set(err, ERR_REJECTED,
                     "version check failed: the installer states version %.100s (its %s) but was offered as version "
                     "%s; a storage host or mirror may be replaying an old installer under a new version number; do "
                     "not install it",
                     report->file_version, report->binding_source, version);
}

cJSON *verify_report_to_json(const verify_report *report)
{
    cJSON *v = cJSON_CreateObject();
    cJSON *length = cJSON_AddObjectToObject(v, "length");
    if (!length)
        goto fail;
    if (report->expected_length >= 0)
        cJSON_AddNumberToObject(length, "expected", (double)report->expected_length);
    else
        cJSON_AddNullToObject(length, "expected");
    cJSON_AddNumberToObject(length, "actual", (double)report->actual_length);
    cJSON_AddStringToObject(length, "result", report->expected_length >= 0 ? "matched" : "not-known");
    cJSON_AddStringToObject(v, "format", report->format);
    if (report->inner_format[0]) {
        cJSON_AddStringToObject(v, "inner_format", report->inner_format);
        cJSON_AddStringToObject(v, "inner_name", report->inner_name);
    }
    cJSON_AddStringToObject(v, "received_sha256", report->received_sha256);
    cJSON_AddStringToObject(v, "sha256", report->sha256_configured ? "matched" : "not-configured");
    cJSON *sig = cJSON_AddObjectToObject(v, "signature");
    if (!sig)
        goto fail;
    cJSON_AddStringToObject(sig, "result", report->signature);
    if (report->signer[0])
        cJSON_AddStringToObject(sig, "signer", report->signer);
    else
        cJSON_AddNullToObject(sig, "signer");
    if (report->signer_cert_sha256[0])
        cJSON_AddStringToObject(sig, "signer_cert_sha256", report->signer_cert_sha256);
    cJSON_AddBoolToObject(sig, "timestamped", report->timestamped);
    if (report->digest[0])
        cJSON_AddStringToObject(sig, "digest", report->digest);
    else
        cJSON_AddNullToObject(sig, "digest");
    if (report->signature_index) {
        cJSON_AddNumberToObject(sig, "signature_index", report->signature_index);
        cJSON_AddNumberToObject(sig, "signature_count", report->signature_count);
    }
    if (report->timestamped) {
        char when[TIMEFMT_ISO8601_SIZE];
        timefmt_iso8601(report->timestamp, when);
        cJSON_AddStringToObject(sig, "timestamp_kind", report->timestamp_kind);
        cJSON_AddStringToObject(sig, "timestamp", when);
    }
    if (report->binding[0]) {
        cJSON *binding = cJSON_AddObjectToObject(v, "version_binding");
        if (!binding)
            goto fail;
        cJSON_AddStringToObject(binding, "status", report->binding);
        jsonx_add_string_or_null(binding, "file_version", report->file_version[0] ? report->file_version : NULL);
        jsonx_add_string_or_null(binding, "source", report->binding_source[0] ? report->binding_source : NULL);
        if (report->binding_reason[0])
            cJSON_AddStringToObject(binding, "reason", report->binding_reason);
    }
    return v;
fail:
    cJSON_Delete(v);
    return NULL;
}
