/*
 * platform.h — the whole operating-system surface outpost uses.
 *
 * The portable core (agent/) calls only these functions for anything the C
 * standard library cannot do portably; platform/posix/ and platform/win32/
 * implement them, and CMake picks one (platform/common.c and cpu.c, built
 * beside either, hold what is the same on both). Each section below names
 * the file that implements it: the same name on both sides
 * (platform/posix/fs.c and platform/win32/fs.c for "Files"), in the order
 * of the sections; a section only Windows has says what its POSIX file
 * does instead. Strings are UTF-8 everywhere (the Win32 side converts to
 * UTF-16 underneath, win32/utf16.c).
 *
 * Conventions, the same on every implementation:
 *  - Functions that can fail return an error_code and fill *err (which may
 *    be NULL) with one line saying what failed and why; the raw errno or
 *    GetLastError() goes to err->os_error. Out-parameters are left untouched
 *    on failure unless the comment says otherwise.
 *  - OS errors become error_codes by one table (platform_os_error_code;
 *    GetLastError() values by its Win32 twin in win32/error.c): ERR_NOT_FOUND
 *    means "the path (or value) does not exist"; ERR_DISK_FULL means
 *    ENOSPC/EDQUOT or ERROR_DISK_FULL/ERROR_HANDLE_DISK_FULL, whatever
 *    the call; ERR_PERMISSION that the OS refused access; other file
 *    failures are ERR_IO.
 *  - File sizes and offsets are 64-bit (uint64_t) everywhere: `long`, which
 *    fseek and ftell take, is 32 bits on Windows, so the portable core
 *    never seeks with them (platform_file_size, platform_seek,
 *    platform_read_at).
 *  - Memory returned through an out-parameter is the caller's, freed with
 *    free() unless a *_free function is named.
 */
#ifndef OUTPOST_PLATFORM_H
#define OUTPOST_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

/* ---- OS errors (common.c) ------------------------------------------------ */

/* Each side's error.c turns its own failures into messages the same way;
 * GetLastError() values have their own table (win32/error.c,
 * platform/win32_error.h). */

/*
 * outpost's error_code for an errno value (the C library's, on Windows the
 * C runtime's): ENOSPC and EDQUOT ERR_DISK_FULL; ENOENT and ENOTDIR
 * ERR_NOT_FOUND; EACCES and EPERM ERR_PERMISSION; ENOMEM ERR_NOMEM; any
 * other (EROFS, EIO, 0...) ERR_IO. The one place errno is judged: agent/
 * never compares errno with a constant itself.
 */
MUST_CHECK error_code platform_os_error_code(int os_error);

/* The system's text for an errno value ("No space left on device") into
 * buf of size bytes; returns buf. Safe on any thread. */
const char *platform_os_error_text(int os_error, char *buf, size_t size);

/*
 * Fills err for a failed C library call that set errno to os_error: the
 * code from platform_os_error_code, os_error kept in err->os_error, and the
 * message fmt (what failed, printf-style) followed by ": " and the
 * system's text. Returns the code, so callers can write
 * `return platform_os_error(err, errno, "cannot create %s", path)`.
 */
error_code platform_os_error(error_info *err, int os_error, const char *fmt, ...) OUTPOST_PRINTF(3, 4);

/*
 * As platform_os_error with the errno that a C library call (fopen,
 * platform_fopen, fread, fwrite, fflush, fclose) that just failed left:
 * call it right after the failure, before anything else can change errno.
 * `if (!f) return platform_stdio_error(err, "cannot open %s", path);`
 */
error_code platform_stdio_error(error_info *err, const char *fmt, ...) OUTPOST_PRINTF(2, 3);

/* ---- Files (fs.c; the helpers written over it: common.c) ----------------- */

/* common.c: platform_path_dir, platform_temp_name, platform_copy_file, the
 * 64-bit offsets (platform_file_size, platform_seek, platform_read_at) and
 * platform_free_names, the same on both sides. */

/* Directory separator of this platform: '/' or '\\'. */
char platform_path_separator(void);

/*
 * Joins dir and name with the platform separator (no doubling when dir
 * already ends with one). Returns a malloc'd string, NULL on out of memory.
 */
char *platform_path_join(const char *dir, const char *name);

/*
 * The directory part of path, up to its last separator ('/' or the
 * platform's): "." when it has none, the root itself for a name in the root
 * ("/x" gives "/", "C:\\x" gives "C:\\"). malloc'd; NULL on out of memory.
 * (common.c: the one dirname of outpost.)
 */
char *platform_path_dir(const char *path);

/*
 * A fresh temporary name beside path, "<path>.<16 hex digits>.tmp", for a
 * file written whole and then renamed over path. The digits come from
 * platform_random_bytes, whose failure is reported (never replaced by a
 * fixed name another writer could share). *tmp is malloc'd.
 */
MUST_CHECK error_code platform_temp_name(const char *path, char **tmp, error_info *err);

/*
 * Copies the file from to the file to (created, or truncated), flushed to
 * disk before it returns; each block copied is shown to observe (user, data,
 * len) when observe is not NULL (hashing while copying: one pass). On
 * failure to is removed, and the message names the file and the operating
 * system's reason (errno kept in err).
 */
MUST_CHECK error_code platform_copy_file(const char *from, const char *to,
                                         void (*observe)(void *user, const void *data, size_t len), void *user,
                                         error_info *err);

/* fopen() with a UTF-8 path; mode as fopen. The stream is not inherited by
 * spawned processes. NULL on failure with errno set (EINVAL on bad UTF-8). */
FILE *platform_fopen(const char *path, const char *mode);

/*
 * Opens an existing file for reading only if it is a regular file, without
 * ever waiting on it (a file:// mirror's files; PRODUCT.md section 9):
 * POSIX opens with O_NONBLOCK and O_NOFOLLOW (a FIFO or device cannot make
 * the open wait, a final symbolic link is not followed), judges the handle
 * (fstat: a regular file, or refused), then reads block again; Windows opens
 * with FILE_FLAG_OPEN_REPARSE_POINT and requires GetFileType ==
 * FILE_TYPE_DISK, no directory and no reparse point. *f is the stream
 * (fclose), *size the size read from the handle. ERR_NOT_FOUND when path
 * does not exist; ERR_IO "... is not a regular file" for anything else
 * found there (a link, FIFO, device, directory).
 */
MUST_CHECK error_code platform_open_regular(const char *path, FILE **f, uint64_t *size, error_info *err);

/*
 * As platform_fopen, but a file it creates is readable and writable by its
 * owner alone (POSIX 0600 whatever the umask; Windows: the private access
 * list it inherits inside state_dir): partial downloads (PRODUCT.md
 * section 9). An existing file keeps its permissions.
 */
FILE *platform_fopen_private(const char *path, const char *mode);

/*
 * Size in bytes of the file under the stream f, as far as stdio sees it
 * (writes still in f's buffer count), from a 64-bit seek to its end; f's
 * position is left where it was. ERR_IO for a stream that cannot seek (a
 * pipe).
 */
MUST_CHECK error_code platform_file_size(FILE *f, uint64_t *size, error_info *err);

/* Moves f to offset bytes from the start of its file (64-bit: fseeko,
 * _fseeki64); reads and writes through f continue from there. ERR_IO when
 * f cannot seek. Past the end is allowed: a write there leaves a hole. */
MUST_CHECK error_code platform_seek(FILE *f, uint64_t offset, error_info *err);

/*
 * Reads exactly len bytes at offset of the file under f into buf, through
 * f (platform_seek, then fread, so what f buffered or wrote is seen and
 * stream reads may follow): afterwards f stands at offset + len. ERR_IO
 * when the file ends first (the message says where) or cannot be read
 * (with the OS's reason). The message names the offset, not the file:
 * callers prefix what they read.
 */
MUST_CHECK error_code platform_read_at(FILE *f, uint64_t offset, void *buf, size_t len, error_info *err);

/* Flushes stdio buffers and the OS cache of f to stable storage
 * (fflush + fsync / FlushFileBuffers). */
MUST_CHECK error_code platform_fsync_file(FILE *f, error_info *err);

/*
 * Asks the OS to start writing f's bytes in [offset, offset + length) to
 * disk now, without waiting for them (Linux: fflush + sync_file_range
 * SYNC_FILE_RANGE_WRITE; elsewhere only the fflush): a long write's later
 * platform_fsync_file then has little left to wait for, the disk having
 * worked while the writer hashed and copied. A hint: it reports nothing and
 * makes nothing durable; only platform_fsync_file does.
 */
void platform_start_writeback(FILE *f, uint64_t offset, uint64_t length);

/*
 * Appends exactly len bytes to f, a stream opened for appending ("ab"),
 * retrying short writes: how outpost adds to a file that is never replaced
 * (incidents.jsonl). Open f unbuffered (setvbuf _IONBF) and one call is one
 * write to the OS, so a killed process leaves whole appends only. The
 * message is the OS's reason alone: the caller prefixes what it appended to.
 */
MUST_CHECK error_code platform_append(FILE *f, const void *data, size_t len, error_info *err);

/*
 * Makes the creation of the file at path durable: flushes the directory that
 * holds it, so after a crash the file's name is still there (POSIX: fsync of
 * the directory; Windows: FlushFileBuffers on a directory handle). A file
 * system or OS that cannot flush a directory counts as done; a directory
 * that does not exist is ERR_NOT_FOUND.
 */
MUST_CHECK error_code platform_sync_parent_dir(const char *path, error_info *err);

/*
 * Replaces path with exactly len bytes of data, atomically: writes a
 * temporary file in the same directory, flushes it to disk, renames it over
 * path and flushes the directory. A crash at any moment leaves either the
 * old content or the new one, never a mixture; a stray temporary file may
 * remain and is harmless (its name starts with path and ends in ".tmp").
 */
MUST_CHECK error_code platform_write_atomic(const char *path, const void *data, size_t len, error_info *err);

/*
 * platform_write_atomic in pieces, for a file too large to hold whole in
 * memory first (status.json's items): platform_atomic_open creates the
 * temporary file beside path, platform_atomic_write appends to it (raw
 * writes: the caller buffers), and platform_atomic_commit flushes it to
 * disk, renames it over path and flushes the directory, exactly as
 * platform_write_atomic does (same crash points). The new file keeps the
 * permissions of the one it replaces (new files: owner only), or with
 * owner_only is readable by its owner alone (POSIX 0600; Windows the
 * protected list platform_write_new_file gives). Commit with readers_group
 * (not NULL) shares the temporary file with that group
 * (platform_share_with_group) before it takes the name, so a reader never
 * meets the file private. A failed write is sticky: later writes fail
 * alike and commit reports it. Commit and abort free f whatever happens;
 * abort removes the temporary file, and the old file stays as it was.
 */
typedef struct platform_atomic_file platform_atomic_file;
MUST_CHECK error_code platform_atomic_open(const char *path, bool owner_only, platform_atomic_file **out,
                                           error_info *err);
MUST_CHECK error_code platform_atomic_write(platform_atomic_file *f, const void *data, size_t len, error_info *err);
MUST_CHECK error_code platform_atomic_commit(platform_atomic_file *f, const char *readers_group, error_info *err);
void platform_atomic_abort(platform_atomic_file *f);

/*
 * Creates path holding exactly len bytes of data, refusing an existing path
 * (ERR_IO saying it exists; a symbolic link is never followed): keygen's
 * private key must never replace another file. owner_only: readable by the
 * owner alone (POSIX 0600; Windows a protected DACL granting the owner,
 * SYSTEM and Administrators); otherwise readable by all (0644; inherited
 * DACL), as files a web server or file share serves must be. Flushed to
 * disk before it returns; a partly written file is removed on failure.
 */
MUST_CHECK error_code platform_write_new_file(const char *path, const void *data, size_t len, bool owner_only,
                                              error_info *err);

/*
 * Renames from over to, replacing to if it exists, atomically, and makes the
 * rename durable (directory flushed). Both must be on the same volume.
 */
MUST_CHECK error_code platform_rename(const char *from, const char *to, error_info *err);

/*
 * Reads a whole file of at most max_size bytes into a malloc'd buffer that
 * is NUL-terminated (the NUL is not counted in *len). A larger file fails
 * with ERR_IO and a message naming the cap; a missing one with ERR_NOT_FOUND.
 */
MUST_CHECK error_code platform_read_file(const char *path, size_t max_size, char **data, size_t *len, error_info *err);

/* Removes a file; a file that does not exist is success. */
MUST_CHECK error_code platform_remove_file(const char *path, error_info *err);

/* Removes a directory and everything under it, not following symbolic
 * links; a missing directory is success. */
MUST_CHECK error_code platform_remove_tree(const char *path, error_info *err);

/* Creates path and any missing parents (mode 0700 on POSIX for new
 * directories; on Windows they inherit their parent's access list, which
 * below state_dir is the private one platform_mkdirs_private gave it); an
 * existing directory is success. */
MUST_CHECK error_code platform_mkdirs(const char *path, error_info *err);

/*
 * Creates the state directory path, and any missing parents, private to
 * outpost (PRODUCT.md section 9): POSIX mode 0700; Windows a protected DACL,
 * not inherited from the parent (whose default under %ProgramData% lets
 * every user create files in subfolders), granting full control to SYSTEM,
 * Administrators and the user running outpost, inherited by everything
 * created below. An existing directory is success and is left as it is:
 * platform_check_private_dir judges it.
 */
MUST_CHECK error_code platform_mkdirs_private(const char *path, error_info *err);

typedef enum {
    PLATFORM_PATH_NONE = 0, /* does not exist */
    PLATFORM_PATH_FILE,
    PLATFORM_PATH_DIR,
    PLATFORM_PATH_OTHER /* link, device, fifo, socket... */
} platform_path_kind;

/* What path is, without following a final symbolic link (lstat). Never fails:
 * any error reads as PLATFORM_PATH_NONE. *size (may be NULL) is set for files. */
platform_path_kind platform_path_stat(const char *path, uint64_t *size);

/*
 * Lists the names in directory path (not "." or ".."), sorted bytewise.
 * *names is a malloc'd array of *count malloc'd strings; free it with
 * platform_free_names.
 */
MUST_CHECK error_code platform_list_dir(const char *path, char ***names, size_t *count, error_info *err);
void platform_free_names(char **names, size_t count);

/* Free bytes available to this user on the volume holding path. */
MUST_CHECK error_code platform_free_space(const char *path, uint64_t *bytes, error_info *err);

/* ---- The state directory held open (stateroot.c) ------------------------- */

/*
 * Opens the state directory path once and holds it (PRODUCT.md section 9:
 * outpost works from handles, not names); call it after
 * platform_check_private_dir has judged path. From then on every file
 * function of this header given a path that starts with path (as given,
 * then a separator) reaches it from the held directory, not by looking
 * path up again: POSIX walks the rest component by component from the held
 * descriptor with O_NOFOLLOW and calls openat, renameat, unlinkat, mkdirat,
 * fstatat relative to the directory reached, so a symbolic link anywhere
 * below the state directory is refused (the message says it is a link),
 * ".." is refused, and renaming the state directory away or putting
 * another directory in its place cannot redirect a later call: it lands in
 * the directory opened here, or fails. Windows: the directory is held
 * open without FILE_SHARE_DELETE, so it cannot be renamed or replaced while
 * outpost runs; the calls still use names there. Other paths are
 * unaffected. ERR_PERMISSION when what was opened is not trusted (its
 * owner and mode are judged again on the handle) or was replaced while it
 * was being opened (a swap before that is for whoever may write its parents,
 * which platform_check_private_dir judged); ERR_NOT_FOUND when
 * it does not exist. Opening again replaces the held directory. Call it
 * before any thread starts: the handle is read without a lock.
 */
MUST_CHECK error_code platform_state_root_open(const char *path, error_info *err);

/*
 * For a file outpost writes outside state_dir (an absolute log.file or
 * feed: status_file, jsonl_file, metrics_file, ...; PRODUCT.md section 9):
 * judges the folder holding path as state_dir is judged
 * (platform_check_private_dir: owned by root or the running user, nobody
 * else may write it or a folder above it) and, POSIX, holds it as
 * platform_state_root_open holds state_dir, for the names directly in it:
 * from then on the file functions given such a path (the file, its
 * rotated copies, its temporary files) reach it from the held descriptor
 * and never follow a link at the file itself. Windows judges the folder
 * and opens the files by name, refusing a reparse point at the file. A
 * path under the held state directory, or in a folder held already:
 * nothing to do. A refusal is ERR_PERMISSION (exit 1) naming the folder,
 * what is wrong and the fix; ERR_NOT_FOUND when the folder does not exist.
 * Released by platform_state_root_close. Call it before any thread starts.
 */
MUST_CHECK error_code platform_hold_dir_of(const char *path, error_info *err);

/* Closes the held state directory (platform_state_root_open) and the
 * folders held by platform_hold_dir_of; later paths are looked up by name
 * again. Nothing held: nothing to do. */
void platform_state_root_close(void);

/* ---- Trust: the state directory and what decides what runs (trust.c) ----- */

/*
 * Checks that the existing directory path can be trusted with what outpost
 * runs as root or SYSTEM: no less privileged principal owns it or may write
 * to it, nor any directory above it, which could rename it away (rules:
 * platform/private_dir.h). The path is walked from the root of the file
 * system down, each directory judged through its own handle by the rule
 * for parents (a root-owned sticky directory such as /tmp passes); a
 * symbolic link is followed only when the directory holding it passed
 * (in a sticky directory, only a link of root's or the running user's),
 * and its target's path is walked and judged the same way, so a link in a
 * folder a user owns is refused where it lives whatever it points at.
 * Windows: no reparse point (junction, symbolic link) in path or above
 * it. A refusal is ERR_PERMISSION (exit 1)
 * with one line naming the directory, what is wrong and the command that
 * fixes it; ERR_NOT_FOUND when path does not exist; ERR_IO when it is not a
 * directory or its owner and permissions cannot be read. A path below the
 * state directory held by platform_state_root_open is judged through that
 * handle instead: no link is resolved on the way (one is refused), and
 * the directories above are the held one's.
 */
MUST_CHECK error_code platform_check_private_dir(const char *path, error_info *err);

/*
 * Reads a file that decides what outpost runs (the configuration, a trust
 * anchor, a key; PRODUCT.md section 9) through one handle: its path walked
 * and judged as platform_check_private_dir walks its parents (links
 * followed only where they live in a judged directory), the file opened
 * in the last directory reached without following a link and without
 * blocking, and judged through that handle: a regular file (a FIFO or
 * device is refused, not waited for) owned by root or the running user
 * (Windows: SYSTEM, Administrators, TrustedInstaller or the running user)
 * that nobody else may write, and when secret (the API key, a signing key)
 * that nobody else may read either; then read from that same handle, at
 * most max_size bytes, into *data (malloc'd, NUL-terminated, *len bytes
 * without the NUL; a secret's caller wipes it). what names the file in
 * every message ("configuration file", "signing key file"). A refusal is
 * ERR_CONFIG (exit 2): one line naming what, the path, what is wrong and
 * the command that fixes it; a missing file (or directory on the way) is
 * ERR_NOT_FOUND; a larger file or a read error ERR_CONFIG.
 */
MUST_CHECK error_code platform_read_trusted_file(const char *what, const char *path, bool secret, size_t max_size,
                                                 char **data, size_t *len, error_info *err);

/*
 * As platform_read_trusted_file without the read: the file judged through
 * its handle and closed. For the preflight, which judges every trusted
 * input before anything is written (PRODUCT.md section 1); the reader
 * judges again when it reads.
 */
MUST_CHECK error_code platform_check_trusted_file(const char *what, const char *path, bool secret, error_info *err);

/*
 * Checks that a file holding a secret (the API key, a signing key) is
 * readable by its owner only: platform_check_trusted_file(what, path, true),
 * a missing file ERR_CONFIG too. what names the file in every message
 * ("API key file", "signing key file").
 */
MUST_CHECK error_code platform_check_secret_file(const char *what, const char *path, error_info *err);

/* ---- Access lists: who may read what outpost creates (acl.c) ------------- */

/* POSIX: the owner, group and mode bits; Windows: the access list (DACL). */

/*
 * Makes the existing directory path private to outpost, as
 * platform_mkdirs_private creates a new one (PRODUCT.md section 9): POSIX
 * mode 0700; Windows the same protected DACL (SYSTEM, Administrators, the
 * running user; inherited by what is below, which gets it too). The MSI
 * creates %ProgramData%\outpost with the inherited DACL that lets every user
 * create files there; `service install` fixes it with this. Windows also
 * takes ownership (Administrators) of the directory and everything below
 * it, and resets what is below to inherit the protected list alone
 * (explicit entries dropped), so a file a user planted there stops being
 * theirs; without the privilege to take ownership only the access lists
 * are reset, and platform_check_private_dir judges the owners afterwards.
 */
MUST_CHECK error_code platform_make_private_dir(const char *path, error_info *err);

/*
 * Lets the group named group read path (report.readers_group, PRODUCT.md
 * section 2): POSIX: the file's group becomes it (getgrnam) and the mode
 * 0640 (a directory 0750; the owner is unchanged); Windows: group is a
 * group name or an "S-1-..." SID, granted read access (a directory: list
 * and traverse) by one entry added to the file's access list. ERR_CONFIG
 * when there is no such group; other failures name the path.
 */
MUST_CHECK error_code platform_share_with_group(const char *path, const char *group, error_info *err);

/* Whether report.readers_group names a group of this machine (a POSIX group
 * name; Windows: a group name or an "S-1-..." SID): ERR_OK, else ERR_CONFIG
 * naming it. Checked before anything is written (PRODUCT.md section 1). */
MUST_CHECK error_code platform_group_exists(const char *group, error_info *err);

/*
 * Makes path readable by everyone, whatever the umask: what a web server
 * or file share serves (the fleet mirror `publish` writes; it is signed and
 * public). POSIX: 0755 for a directory, 0644 for a file; Windows: nothing
 * to do (the files inherit the mirror directory's access list, which the
 * administrator sets for the share or the web server).
 */
MUST_CHECK error_code platform_make_world_readable(const char *path, error_info *err);

/* ---- Single-instance lock (lock.c) --------------------------------------- */

typedef struct platform_lock platform_lock;

/*
 * Takes an exclusive, non-blocking lock on the file at path (created if
 * missing). The lock is an OS lock that dies with the process (flock /
 * LockFileEx), so a killed run never blocks the next. Returns ERR_LOCKED
 * when another process holds it. *lock is set on success only.
 */
MUST_CHECK error_code platform_lock_acquire(const char *path, platform_lock **lock, error_info *err);

/* Releases and frees the lock; NULL is ignored. */
void platform_lock_release(platform_lock *lock);

/* ---- Time and randomness (time.c) ---------------------------------------- */

/* Wall clock, UTC, in milliseconds since 1970-01-01T00:00:00Z. */
int64_t platform_time_utc_ms(void);

/* Monotonic clock in milliseconds from an arbitrary origin; never goes back. */
int64_t platform_monotonic_ms(void);

/* Sleeps for at least ms milliseconds (0 yields). */
void platform_sleep_ms(int64_t ms);

/* Fills buf with len bytes from the OS's secure random source. */
MUST_CHECK error_code platform_random_bytes(void *buf, size_t len, error_info *err);

/*
 * The offset of the machine's local time from UTC at the instant utc_s
 * (Unix seconds), in seconds east of UTC (+3600 for CET, -14400 for EDT),
 * by the machine's own time zone rules for that instant, past and future
 * transitions included: POSIX localtime_r (TZ, else /etc/localtime; TZ is
 * read again on every call); Windows the dynamic time zone
 * (GetDynamicTimeZoneInformation and GetTimeZoneInformationForYear: the
 * year's own daylight-saving rules, for SystemTimeToTzSpecificLocalTime). The maintenance windows of
 * installer/policy.c are judged from this alone: the inverse, a local time
 * to its instants, is found there from it, the same on every platform,
 * since mktime and TzSpecificLocalTimeToSystemTime resolve a local time
 * that does not exist or exists twice each their own way. ERR_INTERNAL when
 * the instant cannot be converted (out of the system's range).
 */
MUST_CHECK error_code platform_local_offset(int64_t utc_s, int32_t *offset_s, error_info *err);

/* ---- Processes, held files and this process (process.c) ------------------ */

/* platform_spawn, platform_spawn_to_file and platform_spawn_env, shorthands
 * of platform_spawn_with, are written once, in common.c. */

typedef struct platform_spawn_result {
    int exit_code;  /* the child's exit status (0-255 on POSIX, a DWORD on Windows);
                       128+signal when killed by a signal on POSIX */
    bool timed_out; /* true when the child (and its children) were killed at the timeout */
} platform_spawn_result;

/*
 * Runs argv[0] with arguments argv (NULL-terminated; never through a shell;
 * argv[0] is looked up in PATH when it has no separator), waits at most
 * timeout_ms (<= 0: no limit), killing the whole process tree at the
 * timeout, and reports how it ended. stdin is the null device; stdout and
 * stderr are inherited. Fails (ERR_SPAWN) only when the program could not be
 * started; a non-zero exit or a timeout is reported through *result.
 */
MUST_CHECK error_code platform_spawn(const char *const argv[], int64_t timeout_ms, platform_spawn_result *result,
                                     error_info *err);

/*
 * As platform_spawn, but the child's stdout and stderr are both appended to
 * output_path (created owner-only when missing); NULL: inherited, as
 * platform_spawn. Fails (ERR_SPAWN) when that file cannot be opened.
 */
MUST_CHECK error_code platform_spawn_to_file(const char *const argv[], const char *output_path, int64_t timeout_ms,
                                             platform_spawn_result *result, error_info *err);

/*
 * As platform_spawn_to_file, with the child's environment exactly envp: a
 * NULL-terminated array of "NAME=value" UTF-8 strings (NULL: outpost's own
 * environment). Whatever the environment, the child inherits no descriptor
 * or handle besides its stdin, stdout and stderr (POSIX: every descriptor
 * above 2 is closed in the child; Windows: an explicit handle list, and no
 * spawn at all when the system cannot honour one). argv[0] is still looked
 * up in outpost's own PATH.
 */
MUST_CHECK error_code platform_spawn_env(const char *const argv[], const char *const envp[], const char *output_path,
                                         int64_t timeout_ms, platform_spawn_result *result, error_info *err);

/*
 * A file held open for reading, so that what is hashed is what runs
 * (PRODUCT.md section 9): opened without following a symbolic link at its
 * last component, a regular file only; on Windows shared for reading only,
 * so nobody can write, rename or delete it while it is held.
 */
typedef struct platform_held_file platform_held_file;

/* Opens and holds path. ERR_NOT_FOUND when it does not exist; ERR_IO for a
 * link or anything but a regular file. Close with platform_held_close. */
MUST_CHECK error_code platform_held_open(const char *path, platform_held_file **file, error_info *err);

/* A stream reading the held file from its start (owned by the held file:
 * do not fclose it). Valid until platform_held_close. */
FILE *platform_held_stream(platform_held_file *file);

/* Closes the held file; NULL is ignored. */
void platform_held_close(platform_held_file *file);

/* How platform_spawn_with starts its child; zeroed fields take the default. */
typedef struct platform_spawn_options {
    const char *const *envp;     /* exactly this environment (platform_spawn_env); NULL: outpost's own */
    const char *output_path;     /* stdout and stderr appended here; NULL: inherited */
    const char *cwd;             /* the child's working directory; NULL: outpost's */
    platform_held_file *program; /* not NULL: argv[0] names this held file, and the child runs the file held
                                    (POSIX: the open descriptor is executed, as fexecve does, so a name swapped
                                    since cannot run; Windows: the file cannot change while held, and
                                    argv[0] is run by its full path) */
} platform_spawn_options;

/*
 * platform_spawn_env with options: the same guarantees (no inherited
 * descriptor or handle besides stdin, stdout and stderr, and on POSIX the
 * held program's descriptor), plus a working directory and a held program.
 */
MUST_CHECK error_code platform_spawn_with(const char *const argv[], const platform_spawn_options *options,
                                          int64_t timeout_ms, platform_spawn_result *result, error_info *err);

/*
 * The full path of a program of the operating system itself (Windows: in
 * GetSystemDirectory, e.g. "msiexec.exe" → C:\Windows\System32\msiexec.exe),
 * so that it is never looked up in PATH or a working directory. POSIX:
 * NULL (there is no such directory to trust more than PATH). malloc'd.
 */
char *platform_system_program(const char *name);

/*
 * Hardens the process once, at start: no core dump (POSIX RLIMIT_CORE 0 and
 * PR_SET_DUMPABLE 0 on Linux; Windows no Windows Error Reporting dump where
 * the API allows, and the DLL search order without the current directory),
 * since the API key is in memory. Never fails: what the system does not
 * offer is skipped.
 */
void platform_harden_process(void);

/*
 * The process's environment as "NAME=value" UTF-8 strings, in the order the
 * system keeps them (on Windows this includes the "=C:=..." entries of
 * the per-drive current directories). Free with platform_free_names.
 */
MUST_CHECK error_code platform_environment(char ***vars, size_t *count, error_info *err);

/* This process's id, for log lines. */
long platform_process_id(void);

/*
 * From now on, Ctrl-C (SIGINT; Windows: CTRL_C_EVENT, CTRL_BREAK_EVENT)
 * writes message to stderr and ends the process at once with exit code 130,
 * which the next run resumes from (downloads resume, staging and the state
 * are crash-safe, the lock dies with the process). message must live for
 * the process's lifetime; it is written as is (end it with a newline).
 */
void platform_exit_on_interrupt(const char *message);

/*
 * The absolute path of the running program's executable file (Windows:
 * GetModuleFileNameW; Linux: /proc/self/exe), for the scheduled task to
 * run. *path is malloc'd.
 */
MUST_CHECK error_code platform_executable_path(char **path, error_info *err);

/* ---- Threads (thread.c: overlapping network, hashing and disk I/O) ------- */

typedef struct platform_thread platform_thread;
typedef struct platform_mutex platform_mutex;
typedef struct platform_cond platform_cond;

/* Starts fn(arg) on a new thread. *thread is set on success. */
MUST_CHECK error_code platform_thread_start(platform_thread **thread, void (*fn)(void *arg), void *arg,
                                            error_info *err);
/* Waits for the thread to finish and frees it. */
void platform_thread_join(platform_thread *thread);

/* Mutexes and condition variables; creation fails only on out of memory
 * (returns NULL). Each *_free accepts NULL. */
platform_mutex *platform_mutex_new(void);
void platform_mutex_free(platform_mutex *m);
void platform_mutex_lock(platform_mutex *m);
void platform_mutex_unlock(platform_mutex *m);
platform_cond *platform_cond_new(void);
void platform_cond_free(platform_cond *c);
void platform_cond_wait(platform_cond *c, platform_mutex *m);
void platform_cond_broadcast(platform_cond *c);

/* ---- Host (host.c) ------------------------------------------------------- */

/*
 * An identifier of the current boot of the operating system into buf ("" when
 * it cannot be known). Data a killed process wrote is still in the OS cache
 * until the machine goes down, so a file written in this same boot can be
 * trusted up to its length even past its last flush; after a reboot only
 * what was flushed can.
 */
void platform_boot_id(char *buf, size_t size);

/* Host name (UTF-8) into buf; "unknown" when it cannot be read. */
void platform_hostname(char *buf, size_t size);

/* "linux", "windows", "darwin", ... as status.json's agent.os. */
const char *platform_os_name(void);

/* "x86_64", "aarch64", ... as status.json's agent.arch. */
const char *platform_arch(void);

/* Environment variable as UTF-8, NULL when unset. The pointer is valid until
 * the next platform_getenv call on the same variable; do not free it. */
const char *platform_getenv(const char *name);

/* ---- The machine's proxy and Kerberos identity (proxy.c) ------------------ */

/* What the machine says about the proxy for one URL (`proxy: "system"`). */
typedef enum {
    PLATFORM_PROXY_NONE,    /* no proxy configured: direct */
    PLATFORM_PROXY_URL,     /* one proxy URL (an environment variable); bypass in curl's NO_PROXY form */
    PLATFORM_PROXY_WINHTTP, /* WinHTTP's static list ("host:port", "https=host:port;..."), bypass in its form */
    PLATFORM_PROXY_PAC      /* a PAC script's answer ("PROXY a:1; PROXY b:2; DIRECT"), bypass in WinHTTP's form */
} platform_proxy_kind;

typedef struct platform_proxy {
    platform_proxy_kind kind;
    char *proxies; /* malloc'd, may hold a password (URL kind); NULL for NONE */
    char *bypass;  /* malloc'd bypass list, or NULL */
    char *source;  /* malloc'd: what said so ("HTTPS_PROXY", "netsh winhttp", "PAC http://wpad/wpad.dat") */
} platform_proxy;

/*
 * The machine's proxy for url. POSIX: https_proxy / HTTPS_PROXY (https
 * URLs) or http_proxy (http URLs; not HTTP_PROXY, as libcurl), then
 * all_proxy / ALL_PROXY, with no_proxy / NO_PROXY. Windows: WinHTTP's
 * default configuration (`netsh winhttp set proxy`), else the PAC script
 * the machine's settings name (AutoConfigURL) or WPAD finds, evaluated by
 * WinHTTP for url. ERR_TEMPORARY (exit 75) naming the script when a named PAC script
 * cannot be fetched or run (WPAD finding nothing is NONE); ERR_NOMEM.
 * Clear *out with platform_proxy_clear.
 */
MUST_CHECK error_code platform_proxy_for_url(const char *url, platform_proxy *out, error_info *err);

/* Frees what out holds (wiping proxies) and zeroes it. */
void platform_proxy_clear(platform_proxy *out);

/*
 * The identity the operating system's own authentication presents to a
 * proxy for this process, for -v: Windows, the account SSPI uses
 * (GetUserNameEx, NameSamCompatible: "CORP\HOST$" for SYSTEM on a domain
 * member, the computer account). POSIX: false (GSS-API's principal is the
 * keytab's or the credentials cache's, which -v names instead).
 */
bool platform_proxy_identity(char *buf, size_t size);

/*
 * Kerberos for the proxy (GSS-API): path (`proxy_keytab`) becomes this
 * process's client keytab, judged as a secret trusted input through the
 * handle that stays open and that the Kerberos library reads
 * (KRB5_CLIENT_KTNAME=FILE:/proc/self/fd/N), with a credentials cache in
 * memory (KRB5CCNAME=MEMORY:...) so no ticket is written to disk. Set in
 * this process's environment only: the deploy child never gets them
 * (deploy_env_is_passed). Windows: ERR_CONFIG (SSPI uses the account's own
 * identity). ERR_CONFIG naming the key for a loose or missing file.
 */
MUST_CHECK error_code platform_kerberos_use_keytab(const char *path, error_info *err);

/* Whether the stream is an interactive terminal (progress bars). */
bool platform_is_terminal(FILE *stream);

/* Default configuration file path: /etc/outpost/outpost.json or
 * %ProgramData%\outpost\outpost.json. Returns a malloc'd string. */
char *platform_default_config_path(void);

/* Default state directory: /var/lib/outpost or %ProgramData%\outpost\state.
 * Returns a malloc'd string. */
char *platform_default_state_dir(void);

/*
 * This machine's stable identifier as the OS keeps it (/etc/machine-id,
 * else /var/lib/dbus/machine-id; the registry's Cryptography\MachineGuid on
 * Windows), trimmed, into buf. ERR_NOT_FOUND when there is none.
 */
MUST_CHECK error_code platform_machine_id(char *buf, size_t size, error_info *err);

/* ---- Power (power.c) ----------------------------------------------------- */

/*
 * Whether the machine runs on battery now (installer.defer_on "battery",
 * PRODUCT.md section 11): Windows GetSystemPowerStatus (the AC line
 * offline on a machine with a system battery); Linux
 * /sys/class/power_supply: no mains, USB or UPS supply online and a system
 * battery (not a device's, scope "Device": a mouse's) discharging. Never
 * fails: what cannot be read (no such directory, another system) counts as
 * mains power. detail (size bytes; NULL with size 0) gets what was seen, for the
 * log ("BAT0 discharging, no AC adapter online").
 */
bool platform_on_battery(char *detail, size_t size);

/* powercost.c: GetSystemPowerStatus's ACLineStatus, BatteryFlag and
 * BatteryLifePercent judged as platform_on_battery does on Windows (a known
 * offline AC line on a machine with a system battery), on every system so
 * that it is tested everywhere. */
bool platform_power_status_on_battery(unsigned ac_line, unsigned battery_flag, unsigned percent, char *detail,
                                      size_t size);

/* ---- Network cost (netcost.c) --------------------------------------------- */

/*
 * Whether the machine's connection is metered now (installer.defer_on
 * "metered", PRODUCT.md section 11). Windows: the network list manager's
 * connection cost (INetworkCostManager::GetCost): fixed or variable cost,
 * roaming or over the data limit is metered; unrestricted or unknown is
 * not. Linux: NetworkManager's Metered property (that of the primary
 * connection's device) over the system D-Bus through sd-bus from
 * libsystemd, loaded at run time (dlopen "libsystemd.so.0": the static
 * release build cannot link it); NM_METERED_YES (1) and NM_METERED_GUESS_YES
 * (3) are metered, as GNOME and KDE treat them. The system bus is the one
 * DBUS_SYSTEM_BUS_ADDRESS names, else the standard socket. Never fails: no
 * libsystemd, no system bus, no NetworkManager on it, or another system is
 * "not metered". detail (size bytes; NULL with size 0) gets what was seen, for
 * the log ("NetworkManager: metered (guessed)").
 */
bool platform_network_metered(char *detail, size_t size);

/* powercost.c: the network list manager's NLM_CONNECTION_COST flags judged
 * as platform_network_metered does on Windows, on every system so that it
 * is tested everywhere. */
bool platform_cost_metered(uint32_t cost, char *detail, size_t size);

/* ---- The CPU (cpu.c, one file for both sides) ---------------------------- */

/* Whether the CPU has SHA-256 instructions the OS lets this process use:
 * x86 SHA extensions (SHA-NI, with SSSE3 and SSE4.1) from CPUID, or the
 * ARMv8 SHA2 crypto extension (Linux: getauxval(AT_HWCAP); Windows:
 * IsProcessorFeaturePresent). false on any other CPU. */
bool platform_cpu_has_sha256(void);

/* Whether the CPU has AES and carry-less multiply instructions the OS lets
 * this process use: x86 AES-NI and PCLMULQDQ (with SSSE3 and SSE4.1) from
 * CPUID, or the ARMv8 AES and PMULL crypto extensions (Linux:
 * getauxval(AT_HWCAP); Windows: IsProcessorFeaturePresent). false on any
 * other CPU. */
bool platform_cpu_has_aes_clmul(void);

/* ---- The system's certificate store (certstore.c) ------------------------ */

/*
 * The operating system's trusted root certificates as one PEM bundle, for a
 * TLS library that cannot read the OS store itself: the Windows builds use
 * libcurl over mbedTLS, which has no CA store of its own, so without this
 * they would trust nothing unless tls.ca_file is set. Returns ERR_NOT_FOUND
 * where libcurl's own default store applies (POSIX) or the store is empty.
 * *pem is malloc'd, NUL-terminated, *len bytes without the NUL.
 */
MUST_CHECK error_code platform_system_ca_bundle(char **pem, size_t *len, error_info *err);

/*
 * The system's CA bundle as a file, for when tls.ca_file is null: libcurl
 * reads it (CURLOPT_CAINFO). The release builds' libcurl has no default
 * bundle compiled in (it could not know every distribution's path), so
 * without this they would trust nothing. SSL_CERT_FILE when set (the
 * OpenSSL convention), else the first readable of the distributions'
 * bundles: Debian/Ubuntu/Arch, Fedora/RHEL, openSUSE, Alpine. NULL when
 * there is none, and on Windows (see platform_system_ca_bundle). The
 * string is static or the environment's: do not free it.
 */
const char *platform_system_ca_file(void);

/*
 * The operating system's trusted roots for code signing, as one PEM bundle
 * (installer.verify.trusted_ca_file "system"): on Windows the machine's ROOT
 * store (CERT_SYSTEM_STORE_LOCAL_MACHINE), only the certificates whose
 * enhanced key usage allows code signing; elsewhere the bundle TLS uses
 * (platform_system_ca_file). ERR_NOT_FOUND when there is none or it is
 * empty. *pem is malloc'd, NUL-terminated, *len bytes without the NUL.
 */
MUST_CHECK error_code platform_system_code_signing_roots(char **pem, size_t *len, error_info *err);

/* ---- The log file (log.c; log.file, PRODUCT.md section 10) --------------- */

typedef struct platform_append_file platform_append_file;

/*
 * Opens path for appending, creating it when missing with owner-only
 * permissions (POSIX 0600; Windows a protected DACL for the owner, SYSTEM
 * and Administrators); an existing file keeps its permissions. A symbolic
 * link (reparse point) at path is refused. Every platform_append_write is
 * one write at the end of the file (O_APPEND; Windows FILE_APPEND_DATA), so
 * concurrent writers never split a line and a killed process leaves at
 * worst its last line partial. The file may be renamed while open (log
 * rotation). *size (may be NULL) is its size once opened. The handle is
 * not inherited by spawned processes.
 */
MUST_CHECK error_code platform_append_open(const char *path, platform_append_file **file, uint64_t *size,
                                           error_info *err);

/* Appends len bytes in one write (retried only for what a short write left). */
MUST_CHECK error_code platform_append_write(platform_append_file *file, const void *data, size_t len, error_info *err);

/* Closes the file; NULL is ignored. */
void platform_append_close(platform_append_file *file);

/* ---- The registry (registry.c): Windows only ----------------------------- */

/* POSIX has no registry: posix/registry.c finds no installed version and
 * has no inventory values to write. */

/*
 * Installed version of the product whose display name starts with
 * display_name, as the OS's software inventory knows it (the registry's
 * Uninstall keys on Windows). Returns ERR_NOT_FOUND where the OS has no such
 * inventory (POSIX) or nothing matches. *version is malloc'd.
 */
MUST_CHECK error_code platform_installed_version(const char *display_name, char **version, error_info *err);

/* One value of the machine's inventory key (platform_inventory_write). */
typedef struct platform_inventory_value {
    const char *name; /* the value's name ("InstalledVersion") */
    const char *text; /* REG_SZ; NULL (and not is_number): the value is deleted */
    bool is_number;   /* REG_DWORD number instead of text */
    uint32_t number;
} platform_inventory_value;

/*
 * Windows: sets (or deletes) the values under HKLM\SOFTWARE\outpost (the
 * 64-bit view) that SCCM/Intune detection rules and hardware inventory
 * read, creating the key. Elsewhere nothing to do (ERR_OK): status.json is
 * the inventory there.
 */
MUST_CHECK error_code platform_inventory_write(const platform_inventory_value *values, size_t count, error_info *err);

/* ---- The event log (eventlog.c): Windows only ---------------------------- */

/* POSIX: posix/eventlog.c does nothing (journald and cron keep stderr). */

typedef enum { PLATFORM_EVENT_ERROR, PLATFORM_EVENT_WARNING, PLATFORM_EVENT_INFORMATION } platform_event_level;

/*
 * Writes one entry to the system log an administrator reads when stderr
 * went nowhere: on Windows the Application event log, source "outpost",
 * with event_id and text as its one insertion string (the message file
 * registered for the source shows it as "%1"). On POSIX this does nothing
 * and returns ERR_OK: journald and cron already keep stderr.
 */
MUST_CHECK error_code platform_event_log(platform_event_level level, unsigned event_id, const char *text,
                                         error_info *err);

/* ---- The scheduled task (schedtask.c): Windows only ---------------------- */

/* `outpost service install|uninstall`. POSIX has no Task Scheduler:
 * posix/schedtask.c refuses, naming the systemd timer. */

/*
 * Registers the Task Scheduler task name ("\outpost\run"), replacing one of
 * that name, from its XML definition (UTF-8 here, written for schtasks as
 * UTF-16 with a byte-order mark): %SystemRoot%\System32\schtasks.exe
 * /Create /TN name /XML file /F, run as the caller (registering a SYSTEM
 * task needs an elevated caller). ERR_SPAWN when schtasks cannot run or
 * fails (its own message is on stderr). POSIX has no Task Scheduler:
 * ERR_NOT_IMPLEMENTED, naming the systemd timer instead.
 */
MUST_CHECK error_code platform_task_register(const char *name, const char *xml, error_info *err);

/*
 * Removes the Task Scheduler task name (schtasks.exe /Delete /TN name /F).
 * A task that does not exist is success. POSIX: ERR_NOT_IMPLEMENTED.
 */
MUST_CHECK error_code platform_task_delete(const char *name, error_info *err);

#endif
