/*
 * download.c — the streamed, hashed, resumable installer download (see
 * download.h for the files it keeps and the resume rules).
 *
 * Layout: the sidecar (resume metadata) first, then the pipeline that
 * overlaps receiving, hashing and writing (a ring of buffers, a hasher
 * thread, a writer thread), then the HTTP callbacks that decide, per
 * answer, whether to continue a partial, start over or ask again, and
 * finally download_run, which drives the attempts.
 */
#include "installer/download.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "authenticode/pe.h"
#include "core/jsonx.h"
#include "crypto/sha256.h"
#include "net/api.h"
#include "installer/disposition.h"
#include "installer/source_api.h"
#include "core/log.h"
#include "platform/platform.h"
#include "base/text.h"
#include "installer/version.h"

/* ---- Sidecar -------------------------------------------------------------------- */

typedef struct sidecar {
    char *version; /* NULL: no partial */
    char *url;
    char *etag;
    char *last_modified;
    char *file_name;
    int64_t total; /* -1 unknown */
    int64_t bytes; /* known good (flushed) */
    char *boot_id; /* boot the partial was written in (platform_boot_id) */
    char *sha256;  /* the offer's SHA-256 when it was known ahead (a mirror's), else NULL */
} sidecar;

static void sidecar_clear(sidecar *sc)
{
    free(sc->version);
    free(sc->url);
    free(sc->etag);
    free(sc->last_modified);
    free(sc->file_name);
    free(sc->boot_id);
    free(sc->sha256);
    memset(sc, 0, sizeof *sc);
    sc->total = -1;
}

static int64_t json_int(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9007199254740992.0 ? (int64_t)v->valuedouble
                                                                                           : -1;
}

/* Reads a sidecar; false (and *sc cleared) when it is missing or unusable. */
static bool sidecar_load(const char *path, sidecar *sc)
{
    sidecar_clear(sc);
    char *text = NULL;
    size_t len = 0;
    if (platform_read_file(path, DOWNLOAD_SIDECAR_MAX, &text, &len, NULL) != ERR_OK)
        return false;
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return false;
    }
    sc->version = text_dup(jsonx_string(NULL, doc, "version"));
    sc->url = text_dup(jsonx_string(NULL, doc, "url"));
    sc->etag = text_dup(jsonx_string(NULL, doc, "etag"));
    sc->last_modified = text_dup(jsonx_string(NULL, doc, "last_modified"));
    sc->file_name = text_dup(jsonx_string(NULL, doc, "file_name"));
    sc->total = json_int(doc, "total_length");
    sc->bytes = json_int(doc, "bytes");
    sc->boot_id = text_dup(jsonx_string(NULL, doc, "boot_id"));
    sc->sha256 = text_dup(jsonx_string(NULL, doc, "sha256"));
    cJSON_Delete(doc);
    bool ok = sc->version && version_is_valid(sc->version, NULL) && sc->bytes >= 0 &&
              (!sc->file_name || disposition_name_is_safe(sc->file_name, NULL));
    if (!ok)
        sidecar_clear(sc);
    return ok;
}

static MUST_CHECK error_code sidecar_save(const char *path, const sidecar *sc, error_info *err)
{
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return error_set(err, ERR_NOMEM, "out of memory");
    cJSON_AddStringToObject(doc, "version", sc->version);
    jsonx_add_string_or_null(doc, "url", sc->url);
    jsonx_add_string_or_null(doc, "etag", sc->etag);
    jsonx_add_string_or_null(doc, "last_modified", sc->last_modified);
    jsonx_add_string_or_null(doc, "file_name", sc->file_name);
    cJSON_AddNumberToObject(doc, "total_length", (double)sc->total);
    cJSON_AddNumberToObject(doc, "bytes", (double)sc->bytes);
    char boot[128];
    platform_boot_id(boot, sizeof boot);
    jsonx_add_string_or_null(doc, "boot_id", boot[0] ? boot : NULL);
    if (sc->sha256)
        cJSON_AddStringToObject(doc, "sha256", sc->sha256);
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (!text)
        return error_set(err, ERR_NOMEM, "out of memory");
    error_code rc = platform_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

/* ---- Job ---------------------------------------------------------------------------- */

typedef struct pipeline pipeline;

typedef struct download_job {
    const download_request *request;
    download_result *result;
    char *dir;       /* state_dir/downloads */
    char *part_path; /* downloads/<partial.version>.part, when partial.version */
    char *sidecar_path;
    sidecar partial;        /* what is on disk (bytes: known good) */
    FILE *out;              /* the part file while a pipeline runs */
    sha256_ctx md;          /* SHA-256 of the part file's first `hashed` bytes */
    pe_stream *pe;          /* the same bytes' Authenticode digest, if a signed PE */
    int64_t hashed;         /* bytes covered by md */
    int64_t written;        /* bytes in the part file */
    int64_t total;          /* announced length of the whole file, -1 unknown */
    char *accepted_version; /* version the accept hook already agreed to */
    char *shown_url;        /* a known offer's URL as messages show it (no user:password@) */
    /* per attempt */
    int64_t range_start; /* Range sent (0: none) */
    bool restart;        /* answer unusable: ask again without Range */
    bool skip;           /* accept hook said no */
    bool headers_seen;   /* on_headers ran for this request */
    bool discard;        /* the failure condemns the partial (a known offer's bytes were wrong) */
    bool resumed;        /* some of the file was kept from an earlier attempt or run */
    error_code failure;  /* decided in a callback; ERR_OK if none */
    error_info failure_info;
    pipeline *pipe;        /* running pipeline, or NULL */
    int64_t attempt_bytes; /* body bytes received in this attempt */
    /* progress bar */
    int64_t progress_last_ms;
    int64_t progress_start_ms;
    int64_t progress_start_bytes;
    bool progress_drawn;
} download_job;

static char *downloads_path(const download_job *job, const char *version, const char *suffix)
{
    char name[VERSION_MAX_LENGTH + 16];
    snprintf(name, sizeof name, "%s%s", version, suffix);
    return platform_path_join(job->dir, name);
}

/* Points part_path / sidecar_path at version's files. */
static MUST_CHECK error_code job_set_paths(download_job *job, const char *version, error_info *err)
{
    free(job->part_path);
    free(job->sidecar_path);
    job->part_path = downloads_path(job, version, ".part");
    job->sidecar_path = downloads_path(job, version, ".part.json");
    if (!job->part_path || !job->sidecar_path)
        return error_set(err, ERR_NOMEM, "out of memory");
    return ERR_OK;
}

/* Removes the current partial's files and forgets it. */
static void job_discard_partial(download_job *job)
{
    if (job->part_path)
        ERROR_IGNORE(platform_remove_file(job->part_path, NULL));
    if (job->sidecar_path)
        ERROR_IGNORE(platform_remove_file(job->sidecar_path, NULL));
    sidecar_clear(&job->partial);
    job->written = 0;
    job->hashed = 0;
    sha256_init(&job->md);
    pe_stream_free(job->pe);
    job->pe = pe_stream_new(PE_SIZE_UNKNOWN); /* NULL (no memory): verify reads the file */
}

/* ---- Pipeline: receive, hash and write in parallel ---------------------------------- */

struct pipeline {
    download_job *job;
    platform_mutex *mutex;
    platform_cond *cond; /* any change below; broadcast when sleepers > 0 */
    int sleepers;        /* threads waiting on cond */
    unsigned char *slots[DOWNLOAD_RING_SLOTS];
    size_t lengths[DOWNLOAD_RING_SLOTS];
    uint64_t filled;    /* slots published by the receiver */
    uint64_t hashed;    /* slots consumed by the hasher */
    uint64_t written;   /* slots consumed by the writer */
    size_t fill;        /* bytes in the slot being filled */
    bool done;          /* no more slots will be published */
    bool failed;        /* the writer failed; stop receiving */
    error_info failure; /* why */
    int64_t hash_from;  /* catch-up: re-read [hash_from, hash_to) */
    int64_t hash_to;
    int64_t base;           /* file offset of the first slot */
    int64_t last_sync;      /* file length at the last flush */
    int64_t last_writeback; /* file length at the last writeback hint */
    platform_thread *hasher;
    platform_thread *writer;
};

/* Waits on the pipeline's condition; called with the mutex held. */
static void pipeline_wait(pipeline *p)
{
    p->sleepers++;
    platform_cond_wait(p->cond, p->mutex);
    p->sleepers--;
}

/* Wakes the waiters, if any; called with the mutex held. A broadcast per
 * slot whether or not anyone slept cost a wake-up of each thread per
 * slot (perf showed futex wake-ups as stage's largest kernel cost, the
 * same ring shape). */
static void pipeline_wake(pipeline *p)
{
    if (p->sleepers > 0)
        platform_cond_broadcast(p->cond);
}

/* Re-reads the part file's kept prefix into the hash (resume from an earlier
 * run: the SHA-256 state was not kept, the bytes were). */
static void hash_catch_up(pipeline *p)
{
    download_job *job = p->job;
    if (p->hash_from >= p->hash_to)
        return;
    FILE *in = platform_fopen(job->part_path, "rb");
    if (!in)
        goto fail;
    if (platform_seek(in, (uint64_t)p->hash_from, NULL) != ERR_OK)
        goto fail;
    unsigned char *buf = malloc(DOWNLOAD_SLOT_BYTES);
    if (!buf)
        goto fail;
    int64_t left = p->hash_to - p->hash_from;
    while (left > 0) {
        size_t want = left < DOWNLOAD_SLOT_BYTES ? (size_t)left : DOWNLOAD_SLOT_BYTES;
        size_t got = fread(buf, 1, want, in);
        if (got == 0)
            break;
        sha256_update(&job->md, buf, got);
        pe_stream_update(job->pe, buf, got);
        left -= (int64_t)got;
    }
    free(buf);
    fclose(in);
    if (left == 0)
        return;
    in = NULL;
fail:
    if (in)
        fclose(in);
    platform_mutex_lock(p->mutex);
    if (!p->failed) {
        p->failed = true;
        error_set(&p->failure, ERR_IO, "cannot re-read the partial download %s to resume it", job->part_path);
    }
    pipeline_wake(p);
    platform_mutex_unlock(p->mutex);
}

static void hasher_main(void *arg)
{
    pipeline *p = arg;
    hash_catch_up(p);
    platform_mutex_lock(p->mutex);
    for (;;) {
        while (p->hashed == p->filled && !p->done)
            pipeline_wait(p);
        if (p->hashed == p->filled)
            break;
        size_t slot = (size_t)(p->hashed % DOWNLOAD_RING_SLOTS);
        platform_mutex_unlock(p->mutex);
        sha256_update(&p->job->md, p->slots[slot], p->lengths[slot]);
        pe_stream_update(p->job->pe, p->slots[slot], p->lengths[slot]);
        platform_mutex_lock(p->mutex);
        p->job->hashed += (int64_t)p->lengths[slot];
        p->hashed++;
        pipeline_wake(p);
    }
    platform_mutex_unlock(p->mutex);
}

/* Flushes the part file and records the new known-good length, so that a
 * run killed later resumes from here. Called on the writer thread. */
static MUST_CHECK error_code writer_sync(pipeline *p, error_info *err)
{
    download_job *job = p->job;
    error_code rc = platform_fsync_file(job->out, err);
    if (rc != ERR_OK)
        return rc;
    job->partial.bytes = job->written;
    p->last_sync = job->written;
    return sidecar_save(job->sidecar_path, &job->partial, err);
}

static void writer_main(void *arg)
{
    pipeline *p = arg;
    download_job *job = p->job;
    platform_mutex_lock(p->mutex);
    for (;;) {
        while (p->written == p->filled && !p->done)
            pipeline_wait(p);
        if (p->written == p->filled)
            break;
        size_t slot = (size_t)(p->written % DOWNLOAD_RING_SLOTS);
        bool skip = p->failed;
        platform_mutex_unlock(p->mutex);
        error_info werr;
        error_clear(&werr);
        if (!skip) {
            if (fwrite(p->slots[slot], 1, p->lengths[slot], job->out) != p->lengths[slot]) {
                platform_stdio_error(&werr, "cannot write %s", job->part_path);
            } else {
                job->written += (int64_t)p->lengths[slot];
                if (job->written - p->last_sync >= DOWNLOAD_SYNC_BYTES) {
                    ERROR_IGNORE(writer_sync(p, &werr)); /* werr carries it */
                    p->last_writeback = job->written;
                } else if (job->written - p->last_writeback >= DOWNLOAD_WRITEBACK_BYTES) {
                    platform_start_writeback(job->out, (uint64_t)p->last_writeback,
                                             (uint64_t)(job->written - p->last_writeback));
                    p->last_writeback = job->written;
                }
            }
        }
        platform_mutex_lock(p->mutex);
        if (werr.code != ERR_OK && !p->failed) {
            p->failed = true;
            p->failure = werr;
        }
        p->written++;
        pipeline_wake(p);
    }
    platform_mutex_unlock(p->mutex);
}

static void pipeline_free(pipeline *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < DOWNLOAD_RING_SLOTS; i++)
        free(p->slots[i]);
    platform_cond_free(p->cond);
    platform_mutex_free(p->mutex);
    free(p);
}

/* Starts the threads. The part file is open at job->written; the hash
 * covers job->hashed bytes and catches up from the file first. */
static MUST_CHECK error_code pipeline_start(download_job *job, error_info *err)
{
    if (job->pipe) /* its threads would never be joined */
        return error_set(err, ERR_INTERNAL, "download: a second pipeline was asked for while one runs");
    pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(err, ERR_NOMEM, "out of memory");
    p->job = job;
    p->mutex = platform_mutex_new();
    p->cond = platform_cond_new();
    bool ok = p->mutex && p->cond;
    for (size_t i = 0; ok && i < DOWNLOAD_RING_SLOTS; i++)
        ok = (p->slots[i] = malloc(DOWNLOAD_SLOT_BYTES)) != NULL;
    if (!ok) {
        pipeline_free(p);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    p->hash_from = job->hashed;
    p->hash_to = job->written;
    p->base = job->written;
    p->last_sync = job->written;
    p->last_writeback = job->written;
    error_code rc = platform_thread_start(&p->hasher, hasher_main, p, err);
    if (rc == ERR_OK) {
        rc = platform_thread_start(&p->writer, writer_main, p, err);
        if (rc != ERR_OK) {
            platform_mutex_lock(p->mutex);
            p->done = true;
            pipeline_wake(p);
            platform_mutex_unlock(p->mutex);
            platform_thread_join(p->hasher);
        }
    }
    if (rc != ERR_OK) {
        pipeline_free(p);
        return rc;
    }
    job->pipe = p;
    return ERR_OK;
}

/* Publishes the slot being filled (receiver side; mutex held). */
static void pipeline_publish(pipeline *p)
{
    p->lengths[p->filled % DOWNLOAD_RING_SLOTS] = p->fill;
    p->filled++;
    p->fill = 0;
    pipeline_wake(p);
}

/* Copies a received chunk into the ring, waiting while it is full. False
 * when the pipeline failed (the transfer should stop). */
static bool pipeline_push(pipeline *p, const unsigned char *data, size_t len)
{
    platform_mutex_lock(p->mutex);
    while (len > 0 && !p->failed) {
        /* the slot being filled must be free of both consumers */
        uint64_t slowest = p->hashed < p->written ? p->hashed : p->written;
        if (p->filled - slowest >= DOWNLOAD_RING_SLOTS) {
            pipeline_wait(p);
            continue;
        }
        size_t slot = (size_t)(p->filled % DOWNLOAD_RING_SLOTS);
        size_t room = DOWNLOAD_SLOT_BYTES - p->fill;
        size_t n = len < room ? len : room;
        platform_mutex_unlock(p->mutex);
        memcpy(p->slots[slot] + p->fill, data, n);
        platform_mutex_lock(p->mutex);
        p->fill += n;
        data += n;
        len -= n;
        if (p->fill == DOWNLOAD_SLOT_BYTES)
            pipeline_publish(p);
    }
    bool ok = !p->failed;
    platform_mutex_unlock(p->mutex);
    return ok;
}

/*
 * Drains the ring, stops the threads, flushes the file and records the
 * known-good length in the sidecar. Returns the first failure (the writer's,
 * or the final flush's). job->pipe is NULL afterwards.
 */
static MUST_CHECK error_code pipeline_finish(download_job *job, error_info *err)
{
    pipeline *p = job->pipe;
    if (!p)
        return ERR_OK;
    platform_mutex_lock(p->mutex);
    if (p->fill > 0)
        pipeline_publish(p);
    p->done = true;
    pipeline_wake(p);
    platform_mutex_unlock(p->mutex);
    platform_thread_join(p->hasher);
    platform_thread_join(p->writer);
    job->pipe = NULL;

    error_code rc = ERR_OK;
    if (p->failed) {
        if (err)
            *err = p->failure;
        rc = p->failure.code;
    }
    pipeline_free(p);
    if (rc == ERR_OK)
        rc = writer_sync(&(pipeline){.job = job}, err);
    return rc;
}

/* ---- Progress ------------------------------------------------------------------------ */

static void progress_draw(download_job *job, bool final)
{
    if (!job->request->progress)
        return;
    int64_t now = platform_monotonic_ms();
    if (!final && now - job->progress_last_ms < 200)
        return;
    job->progress_last_ms = now;
    double mib = 1024.0 * 1024.0;
    int64_t have = job->range_start + job->attempt_bytes;
    double seconds = (double)(now - job->progress_start_ms) / 1000.0;
    double rate = seconds > 0 ? (double)(have - job->progress_start_bytes) / mib / seconds : 0;
    if (job->total > 0)
        fprintf(stderr, "\rdownloading %s: %3d%% (%.1f of %.1f MiB, %.1f MiB/s)   ", job->partial.version,
                (int)(have * 100 / job->total), (double)have / mib, (double)job->total / mib, rate);
    else
        fprintf(stderr, "\rdownloading %s: %.1f MiB (%.1f MiB/s)   ", job->partial.version, (double)have / mib, rate);
    job->progress_drawn = true;
    if (final)
        fputc('\n', stderr);
    fflush(stderr);
}

/* ---- HTTP callbacks ------------------------------------------------------------------- */

static http_stream_action fail_with(download_job *job, error_code code, const error_info *why)
{
    job->failure = code;
    job->failure_info = *why;
    return HTTP_STREAM_STOP;
}

/* Whether a 206 answer continues the partial we asked to resume. */
static bool partial_matches(const download_job *job, const http_stream_headers *h, const char *version)
{
    if (h->range_start != job->range_start || !job->partial.version)
        return false;
    if (strcmp(version, job->partial.version) != 0)
        return false;
    return h->range_total >= 0 && h->range_total == job->partial.total;
}

static MUST_CHECK error_code check_space(download_job *job, int64_t still_to_come, error_info *err)
{
    if (still_to_come < 0)
        return ERR_OK;
    uint64_t free_bytes = 0;
    error_info why;
    error_clear(&why);
    if (platform_free_space(job->dir, &free_bytes, &why) != ERR_OK) {
        log_warn("cannot tell the free space in %s: %s", job->dir, why.message);
        return ERR_OK;
    }
    uint64_t need = (uint64_t)still_to_come + DOWNLOAD_SPACE_MARGIN;
    if (free_bytes >= need)
        return ERR_OK;
    return error_set(err, ERR_DISK_FULL,
                     "not enough free space in %s for the installer: %" PRIu64 " MiB needed, %" PRIu64
                     " MiB free; free some space and run again",
                     job->dir, (need + 1048575) / 1048576, free_bytes / 1048576);
}

/* Opens the part file for this answer: fresh, or at the kept length. */
static MUST_CHECK error_code open_part(download_job *job, const http_stream_headers *h, const char *version,
                                       const char *file_name, bool resuming, error_info *err)
{
    if (!resuming) {
        job_discard_partial(job);
        error_code rc = job_set_paths(job, version, err);
        if (rc != ERR_OK)
            return rc;
        job->partial.version = text_dup(version);
        job->partial.url = text_dup(h->url);
        job->partial.etag = text_dup(h->etag);
        job->partial.last_modified = text_dup(h->last_modified);
        job->partial.file_name = text_dup(file_name);
        job->partial.sha256 = job->request->offer ? text_dup(job->request->offer->sha256) : NULL;
        job->partial.total = job->total;
        job->partial.bytes = 0;
        if (!job->partial.version)
            return error_set(err, ERR_NOMEM, "out of memory");
        rc = sidecar_save(job->sidecar_path, &job->partial, err);
        if (rc != ERR_OK)
            return rc;
        job->out = platform_fopen_private(job->part_path, "wb");
    } else {
        job->out = platform_fopen(job->part_path, "r+b");
    }
    if (!job->out)
        return platform_stdio_error(err, "cannot open %s for writing", job->part_path);
    /* Past 2 GiB too: platform_seek is 64-bit where fseek is not. */
    error_code rc = resuming ? platform_seek(job->out, (uint64_t)job->written, err) : ERR_OK;
    if (rc != ERR_OK) {
        fclose(job->out);
        job->out = NULL;
        error_prefix(err, "cannot resume writing %s", job->part_path);
        return rc;
    }
    return ERR_OK;
}

static http_stream_action on_headers(void *user, const http_stream_headers *h)
{
    download_job *job = user;
    error_info why;
    error_clear(&why);
    if (job->headers_seen) {
        /* One request, one answer: a second one (a proxy's own answer
         * taken for the platform's, say) must not start a second part file
         * and pipeline over the first, whose threads would then never be
         * joined. The running pipeline is finished by attempt(). */
        error_set(&why, ERR_PROTOCOL,
                  "installer: a second set of response headers arrived for one request; the download was stopped "
                  "(the partial file is kept); check any proxy or gateway between outpost and the platform");
        return fail_with(job, ERR_PROTOCOL, &why);
    }
    job->headers_seen = true;
    job->result->requests++;
    if (h->status == 416 || (h->status == 206 && job->range_start == 0)) {
        if (job->range_start == 0) {
            error_set(&why, ERR_PROTOCOL, "installer: the platform answered %ld to a request without Range", h->status);
            return fail_with(job, ERR_PROTOCOL, &why);
        }
        log_info("the platform cannot resume the partial download (HTTP 416); starting over");
        job->restart = true;
        return HTTP_STREAM_STOP;
    }
    const download_offer *known = job->request->offer;
    download_offer offer;
    char *file_name = NULL;
    int64_t announced = h->status == 206 ? h->range_total : h->content_length;
    if (known) {
        /* The offer is the signed manifest's: the answer must agree with it. */
        offer = *known;
        file_name = known->file_name ? text_dup(known->file_name) : NULL;
        if (announced > known->total_length)
            error_set(&why, ERR_REJECTED,
                      "installer %s is longer than the %" PRId64 " bytes its manifest says (%" PRId64
                      " announced); it was not kept: the copy is not the one published, ask the publisher to "
                      "publish again",
                      job->shown_url, known->total_length, announced);
        else if (announced >= 0 && announced < known->total_length)
            error_set(&why, ERR_REJECTED,
                      "installer %s has %" PRId64 " bytes, its manifest says %" PRId64
                      "; it was not kept: the copy is truncated or not the one published, copy installers/ again",
                      job->shown_url, announced, known->total_length);
        if (announced >= 0 && announced != known->total_length) {
            free(file_name);
            job->discard = true;
            return fail_with(job, ERR_REJECTED, &why);
        }
    } else if (source_api_offer(h, announced, &offer, &file_name, &why) != ERR_OK) {
        return fail_with(job, why.code, &why);
    }
    const char *version = offer.version;
    free(job->result->file_name);
    job->result->file_name = file_name;

    bool resuming = false;
    if (h->status == 206) {
        if (!partial_matches(job, h, version)) {
            log_info("the platform's answer does not continue the partial download of %s; starting over",
                     job->partial.version);
            job->restart = true;
            return HTTP_STREAM_STOP;
        }
        resuming = true;
        job->resumed = true;
        job->total = h->range_total;
    } else {
        if (job->range_start > 0)
            log_info("the server sent the whole installer instead of the rest; starting over");
        job->total = known ? known->total_length : h->content_length;
    }
    free(job->result->version);
    job->result->version = text_dup(version);
    free(job->result->url);
    job->result->url = text_dup(h->url);

    if (job->request->accept && (!job->accepted_version || strcmp(job->accepted_version, version) != 0)) {
        offer.total_length = job->total;
        offer.url = h->url;
        bool skip = false;
        error_code rc = job->request->accept(job->request->accept_user, &offer, &skip, &why);
        if (rc != ERR_OK)
            return fail_with(job, rc, &why);
        if (skip) {
            job->skip = true;
            return HTTP_STREAM_STOP;
        }
        free(job->accepted_version);
        job->accepted_version = text_dup(version);
    }
    int64_t kept = resuming ? job->written : 0;
    if (check_space(job, job->total < 0 ? -1 : job->total - kept, &why) != ERR_OK)
        return fail_with(job, why.code, &why);
    if (open_part(job, h, version, file_name, resuming, &why) != ERR_OK || pipeline_start(job, &why) != ERR_OK)
        return fail_with(job, why.code, &why);
    job->progress_start_ms = platform_monotonic_ms();
    job->progress_start_bytes = kept;
    job->range_start = kept;
    return HTTP_STREAM_CONTINUE;
}

static http_stream_action on_data(void *user, const void *data, size_t len)
{
    download_job *job = user;
    if (!job->pipe)
        return HTTP_STREAM_STOP;
    const download_offer *known = job->request->offer;
    if (known && job->range_start + job->attempt_bytes + (int64_t)len > known->total_length) {
        /* No byte past the offered length is read: an endless body ends here. */
        error_info why;
        error_set(&why, ERR_REJECTED,
                  "installer %s is longer than the %" PRId64
                  " bytes its manifest says; it was not kept: the copy is not the one published, ask the publisher to "
                  "publish again",
                  job->shown_url, known->total_length);
        job->discard = true;
        return fail_with(job, ERR_REJECTED, &why);
    }
    job->attempt_bytes += (int64_t)len;
    job->result->bytes_received += (int64_t)len;
    if (!pipeline_push(job->pipe, data, len))
        return HTTP_STREAM_STOP;
    progress_draw(job, false);
    return HTTP_STREAM_CONTINUE;
}

/* ---- Driving the attempts ----------------------------------------------------------- */

/* Whether the partial on disk may belong to this download: for an offer
 * known ahead, the same version and SHA-256 (another mirror offer's bytes
 * must not be continued); for the API's, one that was not a known offer's
 * (the answer's version and length decide the rest). */
static bool partial_is_offered(const download_job *job)
{
    const download_offer *known = job->request->offer;
    const sidecar *sc = &job->partial;
    if (!known || !known->sha256)
        return !sc->sha256;
    return sc->sha256 && strcmp(sc->sha256, known->sha256) == 0 && strcmp(sc->version, known->version) == 0 &&
           sc->total == known->total_length;
}

/* Picks up the partial an earlier run left, and removes any other. */
static void load_partial(download_job *job)
{
    char **names = NULL;
    size_t count = 0;
    if (platform_list_dir(job->dir, &names, &count, NULL) != ERR_OK)
        return;
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(names[i]);
        if (len <= 10 || strcmp(names[i] + len - 10, ".part.json") != 0 || job->partial.version)
            continue;
        char *path = platform_path_join(job->dir, names[i]);
        if (path && sidecar_load(path, &job->partial)) {
            uint64_t size = 0;
            char expected[VERSION_MAX_LENGTH + 16];
            snprintf(expected, sizeof expected, "%s.part.json", job->partial.version);
            bool usable = strcmp(expected, names[i]) == 0 && job_set_paths(job, job->partial.version, NULL) == ERR_OK &&
                          platform_path_stat(job->part_path, &size) == PLATFORM_PATH_FILE &&
                          size >= (uint64_t)job->partial.bytes &&
                          (job->partial.total < 0 || (int64_t)size <= job->partial.total) && partial_is_offered(job);
            if (!usable)
                sidecar_clear(&job->partial);
        }
        free(path);
    }
    /* Everything else in downloads/ is a leftover: remove it. */
    for (size_t i = 0; i < count; i++) {
        char *path = platform_path_join(job->dir, names[i]);
        bool mine =
            path && job->partial.version && (strcmp(path, job->part_path) == 0 || strcmp(path, job->sidecar_path) == 0);
        if (path && !mine && platform_path_stat(path, NULL) == PLATFORM_PATH_FILE)
            ERROR_IGNORE(platform_remove_file(path, NULL));
        free(path);
    }
    platform_free_names(names, count);
    if (job->partial.version) {
        job->written = job->partial.bytes;
        /* Killed, not rebooted: what the last run wrote past its last flush
         * is still in the OS cache, so the whole part file is good. */
        char boot[128];
        platform_boot_id(boot, sizeof boot);
        uint64_t size = 0;
        if (boot[0] && job->partial.boot_id && strcmp(boot, job->partial.boot_id) == 0 &&
            platform_path_stat(job->part_path, &size) == PLATFORM_PATH_FILE && (int64_t)size > job->written &&
            (job->partial.total < 0 || (int64_t)size <= job->partial.total))
            job->written = (int64_t)size;
        log_info("resuming the download of %s from %" PRId64 " bytes", job->partial.version, job->written);
    }
}

/* The file is complete: fill the result. */
static MUST_CHECK error_code finish_result(download_job *job, error_info *err)
{
    uint64_t size = 0;
    if (platform_path_stat(job->part_path, &size) != PLATFORM_PATH_FILE || (int64_t)size != job->written) {
        job_discard_partial(job);
        return error_set(err, ERR_TEMPORARY, "the downloaded file %s has an unexpected length; run again",
                         job->part_path);
    }
    unsigned char digest[32];
    sha256_finish(&job->md, digest);
    text_hex(digest, sizeof digest, job->result->sha256);
    const download_offer *known = job->request->offer;
    if (known && known->sha256 && strcmp(job->result->sha256, known->sha256) != 0) {
        error_code rc = error_set(err, ERR_REJECTED,
                                  "installer %s has SHA-256 %s, its signed manifest says %s; it was not kept: the file "
                                  "was changed or swapped on the server, do not use it and ask the publisher",
                                  job->shown_url, job->result->sha256, known->sha256);
        job->result->sha256[0] = '\0';
        job_discard_partial(job);
        return rc;
    }
    job->result->have_pe_digest = pe_stream_finish(job->pe, &job->result->pe_digest);
    job->result->size = job->written;
    job->result->total_length = job->total;
    job->result->path = text_dup(job->part_path);
    job->result->etag = text_dup(job->partial.etag);
    if (!job->result->file_name && job->partial.file_name)
        job->result->file_name = text_dup(job->partial.file_name);
    if (!job->result->path)
        return error_set(err, ERR_NOMEM, "out of memory");
    return ERR_OK;
}

/* One request: with Range when a partial exists. */
static MUST_CHECK error_code attempt(download_job *job, http_client *http, error_info *err)
{
    char range[64];
    job->range_start = job->partial.version ? job->written : 0;
    job->restart = false;
    job->skip = false;
    job->headers_seen = false;
    job->failure = ERR_OK;
    job->attempt_bytes = 0;
    job->discard = false;
    const char *if_range = NULL;
    if (job->range_start > 0) {
        snprintf(range, sizeof range, "bytes=%" PRId64 "-", job->range_start);
        if_range = job->partial.etag ? job->partial.etag : job->partial.last_modified;
    }
    http_stream_callbacks cb = {on_headers, on_data, job};
    http_stream_result res;
    memset(&res, 0, sizeof res);
    error_info net;
    error_clear(&net);
    error_code rc;
    const download_offer *known = job->request->offer;
    if (known) {
        http_url_request req = {.url = known->url,
                                .range = job->range_start > 0 ? range : NULL,
                                .if_range = if_range,
                                .max_bytes_per_second = job->request->max_bytes_per_second,
                                .expected_bytes = known->total_length - job->range_start};
        rc = http_url_get(http, &req, &cb, &res, &net);
    } else {
        api_installer_request req = {.platform = job->request->platform,
                                     .max_bytes_per_second = job->request->max_bytes_per_second,
                                     .range = job->range_start > 0 ? range : NULL,
                                     .if_range = if_range};
        rc = api_installer_get(http, &req, &cb, &res, &net);
    }
    error_info pipe_err;
    error_clear(&pipe_err);
    error_code prc = pipeline_finish(job, &pipe_err);
    if (job->out) {
        fclose(job->out);
        job->out = NULL;
    }
    if (job->progress_drawn) {
        progress_draw(job, true);
        job->progress_drawn = false;
    }
    if (job->failure != ERR_OK) {
        if (err)
            *err = job->failure_info;
        return job->failure;
    }
    if (prc != ERR_OK) {
        if (prc == ERR_DISK_FULL) {
            job_discard_partial(job);
            error_prefix(
                &pipe_err,
                "the disk filled up during the download (the partial file was removed); free some space and run again");
        }
        if (err)
            *err = pipe_err;
        return prc;
    }
    if (rc != ERR_OK) {
        if (err)
            *err = net;
        return rc;
    }
    return ERR_OK;
}

error_code download_run(http_client *http, const download_request *request, download_result *result, error_info *err)
{
    memset(result, 0, sizeof *result);
    result->total_length = -1;
    download_job job;
    memset(&job, 0, sizeof job);
    job.request = request;
    job.result = result;
    job.total = -1;
    sidecar_clear(&job.partial);
    sha256_init(&job.md);
    job.pe = pe_stream_new(PE_SIZE_UNKNOWN);
    error_code rc = ERR_OK;
    job.dir = platform_path_join(request->state_dir, "downloads");
    job.shown_url = request->offer ? text_url_redact(request->offer->url) : NULL;
    if (!job.dir || (request->offer && !job.shown_url)) {
        rc = error_set(err, ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    rc = platform_mkdirs(job.dir, err);
    if (rc != ERR_OK)
        goto cleanup;
    load_partial(&job);
    result->resumed_from = job.written;

    int failures = 0, restarts = 0;
    for (;;) {
        rc = attempt(&job, http, err);
        if (job.skip) {
            result->skipped = true;
            rc = ERR_OK;
            break;
        }
        if (job.restart && rc == ERR_OK) {
            job_discard_partial(&job);
            if (restarts++ < 2)
                continue;
            rc = error_set(err, ERR_PROTOCOL,
                           "installer: the platform keeps refusing to resume or restart the download; run again later");
            break;
        }
        if (rc == ERR_OK && job.total >= 0 && job.written < job.total)
            rc =
                error_set(err, ERR_TEMPORARY, "the installer download ended early, at %" PRId64 " of %" PRId64 " bytes",
                          job.written, job.total);
        if (rc == ERR_OK && job.total >= 0 && job.written > job.total) {
            job_discard_partial(&job);
            rc = error_set(err, ERR_PROTOCOL,
                           "the platform sent more bytes than its Content-Length announced; run again");
        }
        /* The first interruption is always retried here, even one that cut the
         * connection before any body byte (a single reset must not cost a whole
         * scheduling interval); later ones only while they make progress. */
        if (rc == ERR_TEMPORARY && ++failures < DOWNLOAD_MAX_ATTEMPTS && (job.attempt_bytes > 0 || failures == 1)) {
            log_info("the download of %s was interrupted at %" PRId64 " bytes; resuming", job.partial.version,
                     job.written);
            continue;
        }
        if (rc == ERR_TEMPORARY && job.partial.version)
            error_prefix(err, "the download stopped at %" PRId64 " bytes and will resume on the next run", job.written);
        if (rc == ERR_REJECTED && job.discard)
            job_discard_partial(&job);
        if (rc == ERR_OK && job.partial.version) {
            rc = finish_result(&job, err);
            if (rc == ERR_REJECTED && job.resumed && restarts++ < 2) {
                /* The kept prefix did not belong (a power cut can leave
                 * zeros behind a file's length): once more, whole. */
                log_info("the resumed download does not match its offer; downloading it again whole");
                job.resumed = false;
                continue;
            }
        }
        break;
    }
cleanup:
    if (job.pipe)
        ERROR_IGNORE(pipeline_finish(&job, NULL)); /* rc already says what failed */
    if (job.out)
        fclose(job.out);
    pe_stream_free(job.pe);
    sidecar_clear(&job.partial);
    free(job.part_path);
    free(job.sidecar_path);
    free(job.accepted_version);
    free(job.shown_url);
    free(job.dir);
    return rc;
}

void download_result_free(download_result *result)
{
    if (!result)
        return;
    free(result->version);
    free(result->file_name);
    free(result->path);
    free(result->url);
    free(result->etag);
    memset(result, 0, sizeof *result);
}

void download_discard(const char *state_dir, const char *version)
{
    if (!version_is_valid(version, NULL))
        return;
    char name[VERSION_MAX_LENGTH + 16];
    const char *suffixes[] = {".part", ".part.json"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "downloads/%s%s", version, suffixes[i]);
        char *path = platform_path_join(state_dir, name);
        if (path)
            ERROR_IGNORE(platform_remove_file(path, NULL));
        free(path);
    }
}
