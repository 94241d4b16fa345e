/*
 * disposition.h — the installer's file name from a Content-Disposition
 * header (RFC 6266), reduced to a base name that is safe on every file
 * system outpost runs on (PRODUCT.md section 4.3, last layer).
 *
 * Both forms are read: filename="setup.exe" (quoted or a bare token) and
 * filename*=UTF-8''setup%20x.exe (RFC 5987: percent-decoded; UTF-8 or
 * ISO-8859-1). When both are present filename* wins, as RFC 6266 says.
 *
 * What is reduced (the name is still the server's intent, only its
 * directory part is dropped, as RFC 6266 section 4.3 asks):
 *   - leading directories, with '/' or '\' separators, ".." among them,
 *     and a drive prefix: "C:\x\setup.exe", "/tmp/setup.exe",
 *     "dl/setup.exe", "../../setup.exe", "a\..\setup.exe" → "setup.exe";
 *   - white space around the name, and trailing dots and spaces (Windows
 *     drops them itself: "setup.exe. " → "setup.exe").
 * What is rejected (ERR_REJECTED, exit 4: a server that sends these is
 * broken or hostile, and guessing a name would hide it):
 *   - control characters (including NUL, CR, LF, from %00 and the like),
 *     characters Windows forbids in names (< > " | ? *), and ':' (a drive
 *     letter not at the start, or an NTFS alternate data stream
 *     "setup.exe:hidden");
 *   - Windows reserved device names (disposition_is_device_name);
 *   - a name that is "." or empty once its directories are dropped
 *     ("dir/", "...", "a/.."), malformed UTF-8, or longer than DISPOSITION_NAME_MAX
 *     bytes (truncating would lose the extension that says MSI or EXE);
 *   - a header longer than DISPOSITION_HEADER_MAX bytes.
 * A header without a usable file name parameter (absent header, no
 * filename, filename="") is not an error: the caller names the file from
 * the version (staging does: installer-<version>.exe).
 * The name is only recorded (manifest, status): the staged file on disk is
 * always installer.exe / installer.msi (staging.h).
 */
#ifndef OUTPOST_DISPOSITION_H
#define OUTPOST_DISPOSITION_H

#include <stdbool.h>

#include "base/error.h"

/* Longest safe name, in bytes. Windows paths are limited to 260 characters;
 * state_dir + staging/<version 64>/ leaves about this much. */
#define DISPOSITION_NAME_MAX 128
/* Longest Content-Disposition header value parsed. */
#define DISPOSITION_HEADER_MAX 4096

/*
 * Reads the file name from a Content-Disposition header value (header may be
 * NULL). On ERR_OK *name is a malloc'd safe base name, or NULL when the
 * header names no file; the caller frees it. On ERR_REJECTED *name is NULL
 * and err says which rule the name broke. ERR_NOMEM on out of memory.
 */
MUST_CHECK error_code disposition_file_name(const char *header, char **name, error_info *err);

/*
 * Whether name is already a safe base name by the rules above (nothing to
 * reduce). On false, err (may be NULL) says why, as ERR_REJECTED.
 */
bool disposition_name_is_safe(const char *name, error_info *err);

/*
 * Whether Windows takes name for a device, whatever follows: the part
 * before the first dot, trailing spaces dropped, is CON, PRN, AUX, NUL,
 * CONIN$, CONOUT$, COM0-9, LPT0-9 or COM/LPT with a superscript ¹ ² ³, in
 * any case ("CON.msi", "con .exe", "CONIN$", "Com1.exe", "LPT².txt").
 * Creating or opening such a name opens the device, not a file.
 */
bool disposition_is_device_name(const char *name);

#endif
