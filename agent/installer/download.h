/*
 * download.h — the installer download: streamed to disk with bounded
 * memory, hashed while it arrives, resumable (PRODUCT.md section 4.2).
 * The one download path for every source: the API's installer route
 * (whose answer makes the offer, source_api.h) and the fleet mirror (whose
 * signed manifest made it ahead, source_mirror.h) go through the same
 * resume, sidecar, throttle, progress, caps and hashing.
 *
 * Files, under state_dir/downloads/:
 *   <version>.part        the body received so far
 *   <version>.part.json   resume metadata: version, url, etag,
 *                         last_modified, total length, file_name, and the
 *                         number of bytes known good (flushed to disk
 *                         before this number is written)
 * Only one partial is kept: a partial of another version is removed when a
 * download starts.
 *
 * How a body travels: libcurl's write callback copies each chunk into a
 * bounded ring of buffers (DOWNLOAD_RING_SLOTS x DOWNLOAD_SLOT_BYTES) and
 * returns; a hasher thread (SHA-256, mbedTLS) and a writer thread consume the
 * ring in parallel, so receiving, hashing and writing overlap. When the ring
 * is full the callback waits (backpressure), so memory never grows with the
 * file. The writer flushes to disk every DOWNLOAD_SYNC_BYTES and then
 * records the new known-good length in the sidecar, so even a killed run
 * resumes close to where it stopped; the file is flushed once more at the
 * end, before anything verifies it.
 *
 * Resume: with a partial, the request carries Range: bytes=<known>- and,
 * when the first answer gave a validator, If-Range (ETag, else
 * Last-Modified). A 206 that starts at <known>, carries the same
 * X-Installer-Version and the same total length continues the partial (the
 * SHA-256 of the kept prefix is rebuilt by re-reading it, on the hasher
 * thread, while the rest arrives). A 200 starts over in the same response;
 * a 206 that does not match, and a 416, discard the partial and ask again
 * without Range. A failure mid-body keeps what arrived and resumes within
 * the same run, up to DOWNLOAD_MAX_ATTEMPTS attempts: the first
 * interruption always (even one before any body byte), later ones as long
 * as they make progress; after that it is ERR_TEMPORARY and the next run
 * resumes. A request shows its answer's headers once: a second set for the
 * same request is refused (ERR_PROTOCOL, the partial kept, the running
 * writer and hasher finished), never started over the first.
 */
#ifndef OUTPOST_DOWNLOAD_H
#define OUTPOST_DOWNLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "authenticode/authenticode.h"
#include "base/error.h"
#include "net/http.h"

/* The ring holds what a killed run received but had not written yet (the
 * kept file is resumed whole after a kill without a reboot), so it is small:
 * two slots, one filling while the hasher and the writer take the other.
 * Slots stay 256 KiB, libcurl's read size here: 64 KiB slots (8 of them)
 * lost as little but cost about 10 % more CPU on a 512 MiB download. */
#define DOWNLOAD_RING_SLOTS 2
#define DOWNLOAD_SLOT_BYTES (256 * 1024)
#define DOWNLOAD_SYNC_BYTES (16 * 1024 * 1024)
/* Between flushes the writer asks the OS to start writing every this many
 * bytes (platform_start_writeback), so a flush finds little left to wait
 * for: a writer stalled in fsync stalls the small ring and with it the
 * transfer. */
#define DOWNLOAD_WRITEBACK_BYTES (4 * 1024 * 1024)
#define DOWNLOAD_MAX_ATTEMPTS 3
/* Free space asked for beyond the bytes still to come: room for state,
 * status and manifest files, and for the rest of the system. */
#define DOWNLOAD_SPACE_MARGIN (4 * 1024 * 1024)
#define DOWNLOAD_SIDECAR_MAX (64 * 1024)

/* What a source offers: made by the API's answer (source_api_offer, shown
 * to the caller's accept hook before any body byte is kept) or known ahead
 * (a mirror's signed manifest, download_request.offer). Strings borrowed. */
typedef struct download_offer {
    const char *version;       /* validated version */
    const char *file_name;     /* safe base name, or NULL */
    int64_t total_length;      /* whole file's length, -1 when unknown */
    const char *url;           /* where it comes from (the API's: the final URL, after redirects) */
    const char *sha256;        /* lower-case hex SHA-256 the file must have, or NULL (unknown) */
    const char *signer_sha256; /* the expected signer certificate's SHA-256, or NULL */
} download_offer;

/*
 * The caller's policy (installed version, downgrade, already staged): return
 * ERR_OK and leave *skip false to download, set *skip to stop without
 * downloading (nothing is written; download_run returns ERR_OK with
 * result->skipped), or return an error (e.g. ERR_REJECTED for a refused
 * downgrade) to stop with it.
 */
typedef error_code (*download_accept_fn)(void *user, const download_offer *offer, bool *skip, error_info *err);

typedef struct download_request {
    const char *state_dir;        /* downloads/ is created under it */
    const download_offer *offer;  /* known ahead (the mirror): fetched from offer->url
                                     with http_url_get, read no further than
                                     total_length (more: ERR_REJECTED, nothing kept)
                                     and compared with sha256 (another: ERR_REJECTED);
                                     NULL: the API's installer route */
    const char *platform;         /* installer route's platform ("windows"), offer NULL */
    int64_t max_bytes_per_second; /* bandwidth cap; 0: none */
    bool progress;                /* draw a progress bar on stderr */
    download_accept_fn accept;    /* may be NULL: always download */
    void *accept_user;
} download_request;

typedef struct download_result {
    bool skipped;           /* the accept hook said no; nothing was downloaded */
    char *version;          /* X-Installer-Version (malloc'd), NULL if no answer */
    char *file_name;        /* safe name from Content-Disposition (malloc'd) or NULL */
    char *path;             /* malloc'd path of the complete downloads/<version>.part */
    char *url;              /* malloc'd final URL */
    char *etag;             /* malloc'd validator or NULL */
    char sha256[65];        /* lower-case hex of the whole file */
    int64_t size;           /* bytes in the file */
    int64_t total_length;   /* length the server announced, -1 when unknown */
    int64_t resumed_from;   /* bytes kept from an earlier run's partial */
    int64_t bytes_received; /* body bytes received in this run (all attempts) */
    int requests;           /* installer requests made */
    bool have_pe_digest;    /* pe_digest holds the Authenticode SHA-256 of a signed PE,
                               computed as the bytes arrived (PRODUCT.md 4.3, one pass) */
    authenticode_pe_digest pe_digest;
} download_result;

/*
 * Asks for the latest installer and, when the accept hook agrees, downloads
 * it to downloads/<version>.part as described above. Every answer's
 * X-Installer-Version is validated (version_is_valid) and its
 * Content-Disposition reduced (disposition_file_name) before anything is
 * written: an invalid one is ERR_REJECTED. Not enough free space for what
 * is still to come is ERR_DISK_FULL before the body is read (and the
 * partial is removed when the disk fills up mid-way). A transfer that keeps
 * failing mid-body is ERR_TEMPORARY with the partial kept.
 * On ERR_OK the file is complete and flushed (unless result->skipped);
 * free the result with download_result_free in every case.
 */
MUST_CHECK error_code download_run(http_client *http, const download_request *request, download_result *result,
                                   error_info *err);

void download_result_free(download_result *result);

/*
 * Removes the partial download of version and its sidecar (after the file
 * was rejected: it must not be resumed). Missing files are fine.
 */
void download_discard(const char *state_dir, const char *version);

#endif
