/*
 * intake.c — takes in a new candidate installer (intake.h): a private copy
 * inside staging/.tmp-<random>/ (staging_work_dir), the verification layers
 * on that copy, an archive's one installer extracted and a bundle's
 * manifest read, the downgrade rule, and the manifest written beside it.
 * Only then is the directory handed to staging_adopt(), which owns what is
 * staged: a candidate that fails any layer never reaches staging/<version>.
 */
#include "installer/intake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/jsonx.h"
#include "installer/installed.h"
#include "core/log.h"
#include "platform/platform.h"
#include "installer/staging.h"
#include "core/timefmt.h"
#include "installer/unpack.h"
#include "installer/verify.h"
#include "installer/version.h"

#define BUNDLE_MANIFEST_MAX_BYTES (1024 * 1024)

static MUST_CHECK error_code oom(error_info *err)
{
    return error_set(err, ERR_NOMEM, "out of memory");
}

/* platform_copy_file's observer: the bytes copied go through the hasher,
 * so the copy is the one pass over the file (PRODUCT.md 4.3). */
static void hash_copied(void *hasher, const void *data, size_t len)
{
    verify_hasher_update(hasher, data, len);
}

static MUST_CHECK error_code fsync_path(const char *path, error_info *err)
{
    FILE *f = platform_fopen(path, "r+b");
    if (!f)
        return platform_stdio_error(err, "cannot open %s", path);
    error_code rc = platform_fsync_file(f, err);
    fclose(f);
    return rc;
}

/* ---- Taking in a candidate ---------------------------------------------------- */

typedef struct intake_job {
    const config *cfg;
    state *s;
    const intake_candidate *candidate;
    char *root;          /* staging/ */
    char *tmp;           /* staging/.tmp-<random>/ */
    char *received;      /* tmp/.received: the private copy of the candidate */
    char *installer;     /* tmp/<disk_name>: the installer to stage */
    char file_name[256]; /* the name it came with (manifest and status only) */
    char disk_name[16];  /* the name outpost gives it on disk: installer.exe / .msi */
    char version[VERSION_MAX_LENGTH + 1];
    char sha256[65]; /* of the installer */
    int64_t size;    /* of the installer */
    verify_report report;
    verify_digests copied; /* computed while copying; copied.sha256 "" when not */
} intake_job;

static MUST_CHECK error_code make_private_copy(intake_job *job, error_info *err)
{
    const intake_candidate *c = job->candidate;
    uint64_t size = 0;
    if (platform_path_stat(c->path, &size) != PLATFORM_PATH_FILE)
        return error_set(err, ERR_NOT_FOUND, "cannot stage %s: it is not a regular file", c->path);
    uint64_t free_bytes = 0;
    if (!c->take_ownership && platform_free_space(job->root, &free_bytes, NULL) == ERR_OK &&
        free_bytes < size + 1024 * 1024)
        return error_set(err, ERR_DISK_FULL, "cannot stage %s: %llu bytes needed under %s, %llu free; free some space",
                         c->path, (unsigned long long)size, job->root, (unsigned long long)free_bytes);
    if (c->take_ownership && platform_rename(c->path, job->received, NULL) == ERR_OK)
        return ERR_OK;
    verify_hasher *hasher = verify_hasher_new(size);
    if (!hasher)
        return oom(err);
    error_code rc = platform_copy_file(c->path, job->received, hash_copied, hasher, err);
    if (rc == ERR_OK)
        return verify_hasher_finish(hasher, &job->copied, err);
    verify_hasher_free(hasher);
    return rc;
}

/* Layers on the file as received: length, SHA-256, expected_sha256. */
static MUST_CHECK error_code check_received(intake_job *job, error_info *err)
{
    const intake_candidate *c = job->candidate;
    int64_t size = 0;
    char hex[65];
    error_code rc = ERR_OK;
    uint64_t stat_size = 0;
    /* A download moved into our private directory was hashed as its bytes
     * arrived; hashing it again would cost a second pass over the file. */
    if (c->take_ownership && c->sha256_hex && strlen(c->sha256_hex) == 64 &&
        platform_path_stat(job->received, &stat_size) == PLATFORM_PATH_FILE) {
        snprintf(hex, sizeof hex, "%s", c->sha256_hex);
        size = (int64_t)stat_size;
    } else if (job->copied.sha256[0]) {
        snprintf(hex, sizeof hex, "%s", job->copied.sha256); /* hashed while copying */
        size = job->copied.size;
    } else {
        rc = verify_sha256_file(job->received, hex, &size, err);
    }
    if (rc != ERR_OK)
        return rc;
    snprintf(job->report.received_sha256, sizeof job->report.received_sha256, "%s", hex);
    rc = verify_length(&job->report, c->expected_length, size, err);
    if (rc == ERR_OK)
        rc = verify_expected_sha256(&job->report, &job->cfg->installer.verify, err);
    job->size = size;
    snprintf(job->sha256, sizeof job->sha256, "%s", hex);
    return rc;
}

static MUST_CHECK error_code set_version(intake_job *job, const char *version, error_info *err)
{
    if (!version_is_valid(version, err))
        return error_prefix(err, "version \"%.64s\" refused", version);
    snprintf(job->version, sizeof job->version, "%s", version);
    return ERR_OK;
}

/* A bundle's manifest.json: its version (unless one was given) and the SHA-256
 * the installer beside it must have. */
static MUST_CHECK error_code read_bundle_manifest(intake_job *job, const char *path, const char *installer_sha,
                                                  error_info *err)
{
    char *text = NULL;
    size_t len = 0;
    error_code rc = platform_read_file(path, BUNDLE_MANIFEST_MAX_BYTES, &text, &len, err);
    if (rc != ERR_OK)
        return error_set(err, ERR_REJECTED, "the bundle's manifest.json cannot be read (over 1 MiB?)");
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    staging_manifest m;
    error_info why;
    if (staging_manifest_from_json(doc, &m, &why) != ERR_OK) {
        cJSON_Delete(doc);
        return error_set(err, ERR_REJECTED, "the bundle's %s", why.message);
    }
    cJSON_Delete(doc);
    const char *version = m.version;
    if (strcmp(m.sha256, installer_sha) != 0)
        rc = error_set(err, ERR_REJECTED, "the installer in the bundle does not match the SHA-256 in its manifest");
    else if (job->version[0] && version_compare(job->version, version) != 0)
        rc = error_set(err, ERR_REJECTED, "--version %s contradicts the bundle's manifest, which says %.64s",
                       job->version, version);
    else if (!job->version[0])
        rc = set_version(job, version, err);
    staging_manifest_free(&m);
    return rc;
}

static const char *base_name(const char *name)
{
    const char *base = name;
    for (const char *p = name; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    return base;
}

/* The one PE/MSI among the extracted files (the rule: exactly one). */
static MUST_CHECK error_code find_installer(intake_job *job, const unpack_listing *listing, const unpack_file **found,
                                            verify_format *format, error_info *err)
{
    size_t installers = 0;
    char names[300] = "";
    *found = NULL;
    for (size_t i = 0; i < listing->count; i++) {
        verify_format f = VERIFY_FORMAT_UNKNOWN;
        error_code rc = verify_file_format(listing->files[i].path, &f, err);
        if (rc != ERR_OK)
            return rc;
        if (f != VERIFY_FORMAT_PE && f != VERIFY_FORMAT_MSI)
            continue;
        if (installers++ == 0) {
            *found = &listing->files[i];
            *format = f;
        }
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%.80s", used ? ", " : "", listing->files[i].name);
    }
    if (installers == 0)
        return error_set(err, ERR_REJECTED,
                         "format check failed: the %s archive holds no Windows installer (PE or MSI)",
                         job->report.format);
    if (installers > 1)
        return error_set(err, ERR_REJECTED,
                         "format check failed: the archive holds %zu Windows installers (%s); it must hold exactly one",
                         installers, names);
    return ERR_OK;
}

/* The name the installer gets on disk, chosen by outpost from its format:
 * no server-chosen character reaches a command line or a file system's
 * special names (PRODUCT.md section 4.3). */
static void set_disk_name(intake_job *job, verify_format format)
{
    snprintf(job->disk_name, sizeof job->disk_name, "%s",
             format == VERIFY_FORMAT_MSI ? STAGING_DISK_NAME_MSI : STAGING_DISK_NAME_PE);
}

static MUST_CHECK error_code take_from_archive(intake_job *job, error_info *err)
{
    char *work = platform_path_join(job->tmp, "extracted");
    if (!work)
        return oom(err);
    unpack_listing listing = {0};
    unpack_limits limits;
    unpack_limits_default(&limits);
    const unpack_file *found = NULL;
    verify_format format = VERIFY_FORMAT_UNKNOWN;
    error_code rc = platform_mkdirs(work, err);
    if (rc == ERR_OK)
        rc = unpack_extract(job->received, work, &limits, &listing, err);
    if (rc == ERR_OK)
        rc = find_installer(job, &listing, &found, &format, err);
    if (rc == ERR_OK) {
        snprintf(job->report.inner_format, sizeof job->report.inner_format, "%s", verify_format_name(format));
        snprintf(job->report.inner_name, sizeof job->report.inner_name, "%s", found->name);
        snprintf(job->file_name, sizeof job->file_name, "%s", base_name(found->name));
        if (!staging_file_name_is_safe(job->file_name))
            rc = error_set(err, ERR_REJECTED,
                           "the installer's name in the archive, \"%.100s\", is not a safe file name", job->file_name);
    }
    if (rc == ERR_OK)
        rc = verify_sha256_file(found->path, job->sha256, &job->size, err);
    for (size_t i = 0; rc == ERR_OK && i < listing.count; i++)
        if (strcmp(listing.files[i].name, "manifest.json") == 0)
            rc = read_bundle_manifest(job, listing.files[i].path, job->sha256, err);
    if (rc == ERR_OK) {
        set_disk_name(job, format);
        job->installer = platform_path_join(job->tmp, job->disk_name);
        rc = job->installer ? platform_rename(found->path, job->installer, err) : oom(err);
    }
    if (rc == ERR_OK)
        rc = fsync_path(job->installer, err);
    unpack_listing_free(&listing);
    if (rc == ERR_OK || rc == ERR_REJECTED)
        ERROR_IGNORE(platform_remove_tree(work, NULL));
    free(work);
    return rc;
}

/* Format layer: a PE/MSI is staged as it came; an archive is opened and its
 * installer taken out; anything else is rejected. */
static MUST_CHECK error_code check_format(intake_job *job, error_info *err)
{
    verify_format format = VERIFY_FORMAT_UNKNOWN;
    error_code rc = verify_file_format(job->received, &format, err);
    if (rc != ERR_OK)
        return rc;
    snprintf(job->report.format, sizeof job->report.format, "%s", verify_format_name(format));
    if (verify_format_is_archive(format))
        return take_from_archive(job, err);
    if (format != VERIFY_FORMAT_PE && format != VERIFY_FORMAT_MSI)
        return error_set(err, ERR_REJECTED,
                         "format check failed: %s is not a Windows installer (PE or MSI) nor an archive holding one "
                         "(an error page served as the file?)",
                         job->candidate->path);
    const char *name = job->candidate->file_name;
    if (name && !staging_file_name_is_safe(name))
        return error_set(err, ERR_REJECTED, "file name \"%.100s\" is not a safe file name", name);
    if (name)
        snprintf(job->file_name, sizeof job->file_name, "%s", name);
    else
        snprintf(job->file_name, sizeof job->file_name, "installer-%s.%s", job->version[0] ? job->version : "unknown",
                 format == VERIFY_FORMAT_MSI ? "msi" : "exe");
    set_disk_name(job, format);
    job->installer = platform_path_join(job->tmp, job->disk_name);
    if (!job->installer)
        return oom(err);
    return platform_rename(job->received, job->installer, err);
}

static MUST_CHECK error_code check_downgrade(intake_job *job, error_info *err)
{
    char *installed = NULL;
    error_code rc = installed_version_get(job->cfg, job->s, &installed, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (installed && !job->candidate->allow_downgrade && version_compare(job->version, installed) < 0)
        rc = error_set(err, ERR_REJECTED,
                       "version %s is older than the installed %s; a downgrade needs --allow-downgrade", job->version,
                       installed);
    free(installed);
    return rc;
}

static cJSON *build_manifest(const intake_job *job, int64_t now)
{
    char staged_at[TIMEFMT_ISO8601_SIZE];
    timefmt_iso8601(now, staged_at);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "manifest_version", 1);
    cJSON_AddStringToObject(m, "version", job->version);
    cJSON_AddStringToObject(m, "file_name", job->file_name);
    cJSON_AddStringToObject(m, "staged_file", job->disk_name);
    cJSON_AddNumberToObject(m, "size", (double)job->size);
    cJSON_AddStringToObject(m, "sha256", job->sha256);
    if (job->candidate->source_url)
        cJSON_AddStringToObject(m, "source_url", job->candidate->source_url);
    else
        cJSON_AddNullToObject(m, "source_url");
    if (job->candidate->etag)
        cJSON_AddStringToObject(m, "etag", job->candidate->etag);
    else
        cJSON_AddNullToObject(m, "etag");
    cJSON_AddStringToObject(m, "staged_at", staged_at);
    cJSON *verification = verify_report_to_json(&job->report);
    if (!verification || !cJSON_AddItemToObject(m, "verification", verification)) {
        cJSON_Delete(verification);
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}

static MUST_CHECK error_code write_manifest(const intake_job *job, error_info *err)
{
    cJSON *m = build_manifest(job, platform_time_utc_ms() / 1000);
    char *text = m ? cJSON_Print(m) : NULL;
    char *path = platform_path_join(job->tmp, "manifest.json");
    error_code rc = text && path ? platform_write_atomic(path, text, strlen(text), err) : oom(err);
    free(path);
    cJSON_free(text);
    cJSON_Delete(m);
    return rc;
}

static void fill_result(const intake_job *job, intake_result *result)
{
    snprintf(result->version, sizeof result->version, "%s", job->version);
    snprintf(result->file_name, sizeof result->file_name, "%s", job->file_name);
    snprintf(result->sha256, sizeof result->sha256, "%s", job->sha256);
    result->size = job->size;
    snprintf(result->signature, sizeof result->signature, "%s", job->report.signature);
    snprintf(result->signer, sizeof result->signer, "%s", job->report.signer);
    char *dir = staging_path(job->cfg, job->version);
    result->path = dir ? platform_path_join(dir, job->disk_name) : NULL;
    free(dir);
}

/* Fleet mirror: the signer the publisher verified must be the one found here.
 * Only a verified signature has a signer to compare; without a CA the
 * manifest's sha256 alone binds the file. */
static MUST_CHECK error_code check_expected_signer(const intake_job *job, error_info *err)
{
    const char *expected = job->candidate->expected_signer_sha256;
    if (!expected || strcmp(job->report.signature, "valid") != 0)
        return ERR_OK;
    if (strcmp(expected, job->report.signer_cert_sha256) == 0)
        return ERR_OK;
    return error_set(err, ERR_REJECTED,
                     "signer check failed: the installer is signed by \"%.120s\" (certificate SHA-256 %s), not by the "
                     "certificate the mirror's manifest names (%s); do not install it, and ask the publisher",
                     job->report.signer, job->report.signer_cert_sha256, expected);
}

/* This version is staged already: report what is there, change nothing. */
static MUST_CHECK error_code report_already_staged(intake_job *job, intake_result *result, error_info *err)
{
    staging_manifest m;
    char *path = NULL;
    error_code rc = staging_load(job->cfg, job->version, &m, &path, err);
    if (rc != ERR_OK)
        return rc;
    result->already_staged = true;
    snprintf(result->version, sizeof result->version, "%s", job->version);
    snprintf(result->file_name, sizeof result->file_name, "%s", m.file_name);
    snprintf(result->sha256, sizeof result->sha256, "%s", m.sha256);
    result->size = m.size;
    snprintf(result->signature, sizeof result->signature, "%s", m.signature);
    snprintf(result->signer, sizeof result->signer, "%s", m.signer ? m.signer : "");
    result->path = path;
    if (strcmp(result->sha256, job->sha256) != 0)
        log_warn("version %s is already staged from a different file (SHA-256 %s); kept it, use --force to replace it",
                 job->version, result->sha256);
    staging_manifest_free(&m);
    return ERR_OK;
}

/* Everything after verification: the manifest, then staging_adopt. */
static MUST_CHECK error_code job_commit(intake_job *job, intake_result *result, error_info *err)
{
    error_code rc = write_manifest(job, err);
    if (rc == ERR_OK)
        rc = staging_adopt(job->cfg, job->s, job->tmp, job->version, err);
    if (rc == ERR_OK)
        fill_result(job, result);
    return rc;
}

error_code intake_stage(const config *cfg, state *s, const intake_candidate *candidate, intake_result *result,
                        error_info *err)
{
    memset(result, 0, sizeof *result);
    intake_job job = {.cfg = cfg, .s = s, .candidate = candidate};
    verify_report_init(&job.report);
    error_code rc = ERR_OK;
    if (candidate->version && (rc = set_version(&job, candidate->version, err)) != ERR_OK)
        return rc;
    job.root = staging_path(cfg, NULL);
    rc = job.root ? staging_work_dir(cfg, &job.tmp, err) : oom(err);
    if (rc == ERR_OK) {
        job.received = platform_path_join(job.tmp, ".received");
        rc = job.received ? ERR_OK : oom(err);
    }
    if (rc == ERR_OK)
        rc = make_private_copy(&job, err);
    if (rc == ERR_OK)
        rc = check_received(&job, err);
    if (rc == ERR_OK)
        rc = check_format(&job, err);
    if (rc == ERR_OK && !job.version[0])
        rc = error_set(err, ERR_USAGE,
                       "the version of %s is not known: pass --version V (only a bundle made by outpost bundle names "
                       "its own)",
                       candidate->path);
    if (rc == ERR_OK)
        rc = check_downgrade(&job, err);
    if (rc == ERR_OK)
        rc = staging_check_private(cfg, job.version, err);
    if (rc == ERR_OK && !candidate->force && staging_has_verified(cfg, job.version)) {
        rc = report_already_staged(&job, result, err);
        goto cleanup;
    }
    if (rc == ERR_OK)
        rc = verify_signature(&job.report, &cfg->installer.verify, job.installer,
                              job.copied.have_pe ? &job.copied.pe : candidate->pe_digest, err);
    if (rc == ERR_OK)
        rc = verify_version_binding(&job.report, &cfg->installer.verify, job.installer, job.version, err);
    if (rc == ERR_OK)
        rc = check_expected_signer(&job, err);
    if (rc == ERR_OK)
        rc = job_commit(&job, result, err);
cleanup:
    if (job.tmp && platform_path_stat(job.tmp, NULL) == PLATFORM_PATH_DIR)
        ERROR_IGNORE(platform_remove_tree(job.tmp, NULL));
    free(job.root);
    free(job.tmp);
    free(job.received);
    free(job.installer);
    return rc;
}
