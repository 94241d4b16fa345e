/*
 * private_dir.h — the decisions behind platform_check_private_dir
 * (platform.h), as pure functions over facts the caller gathered, so that
 * their own tests can feed them built inputs: tests/unit/test_platform.c
 * the POSIX one, cross/tests/test_platform_win32.c (under wine) the Windows
 * one over security descriptors made from SDDL. Each is implemented by one
 * platform file only; agent/ never includes this header.
 *
 * A directory is trusted when no principal less privileged than the one
 * running outpost owns it or may write to it (PRODUCT.md section 9): outpost
 * runs the installer it stages there as root or SYSTEM.
 */
#ifndef OUTPOST_PRIVATE_DIR_H
#define OUTPOST_PRIVATE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/*
 * POSIX (posix/private_dir.c): a directory owned by owner_uid with permission bits mode
 * is trusted by a process whose effective user is euid when the owner is
 * euid or root and neither group nor others may write (mode & 022 == 0;
 * the sticky bit does not help: others could still create files). On
 * false, why (size bytes) says what is wrong: "owned by uid 1000",
 * "writable by group and others (mode 1777)".
 */
bool platform_posix_dir_trusted(unsigned long owner_uid, unsigned long mode, unsigned long euid, char *why,
                                size_t size);

/*
 * POSIX: a directory above state_dir (or above a trusted file), as OpenSSH's
 * secure_path and sudo judge it: as platform_posix_dir_trusted, except that
 * a root-owned sticky directory (/tmp, mode 1777) passes, since others can
 * neither rename nor remove what root keeps in it.
 */
bool platform_posix_parent_trusted(unsigned long owner_uid, unsigned long mode, unsigned long euid, char *why,
                                   size_t size);

/*
 * POSIX: a file that decides what runs (platform_check_trusted_file) owned
 * by owner_uid with mode: owner root or euid, not writable by group or
 * others, and when secret no permission for them at all. why as above
 * ("owned by uid 1000", "writable by others (mode 0666)", "readable by
 * group or others (mode 0640)").
 */
bool platform_posix_file_trusted(unsigned long owner_uid, unsigned long mode, unsigned long euid, bool secret,
                                 char *why, size_t size);

/*
 * Windows (win32/trust.c): sd is a SECURITY_DESCRIPTOR (absolute or
 * self-relative) holding at least the owner and the DACL; user is the SID
 * of the user running outpost. Trusted when the owner is SYSTEM,
 * Administrators, TrustedInstaller or user, and no allow ACE (effective or
 * inheritable) grants write, append, delete, WRITE_DAC or WRITE_OWNER (or
 * GENERIC_WRITE/ALL) to anyone else than those, the owner, CREATOR OWNER
 * and OWNER RIGHTS. Deny ACEs are not credited (a refusal errs on the safe
 * side). A missing (NULL) DACL lets everyone write. On false, why says
 * what is wrong: "owned by S-1-5-21-...", "Users (S-1-5-32-545) may write".
 */
bool platform_win32_dir_trusted(const void *sd, const void *user, char *why, size_t size);

/*
 * Windows: a folder above state_dir or above a trusted file (every
 * component from below the drive's root to the last folder), what
 * platform_win32_dir_trusted is to state_dir itself but for a folder others
 * may use: the owner as above, and no allow ACE that applies to the folder
 * itself (inherit-only ones do not) grants anyone else FILE_DELETE_CHILD
 * (delete or rename what it holds, whatever their ACLs say), DELETE,
 * WRITE_DAC or WRITE_OWNER (or GENERIC_ALL); when plant (the next
 * component does not exist yet, so whoever adds it first owns it), nor
 * FILE_ADD_FILE, FILE_ADD_SUBDIRECTORY or GENERIC_WRITE. Adding files next
 * to an existing component is harmless: that component is judged in turn
 * (a planted one is owned by its planter). A deny ACE for the same SID (or
 * Everyone) before the allow ACE takes those rights away, as Windows
 * evaluates a DACL in order; one after it does not. On false, why names
 * the principal and the right: "Users (S-1-5-32-545) may delete or rename
 * what it holds (FILE_DELETE_CHILD)".
 */
bool platform_win32_parent_trusted(const void *sd, const void *user, bool plant, char *why, size_t size);

/*
 * Windows: a file that decides what runs (platform_check_trusted_file):
 * the owner as above, and no allow ACE grants anyone else write, append,
 * delete, WRITE_DAC or WRITE_OWNER (or GENERIC_WRITE/ALL); when secret, nor
 * read (FILE_READ_DATA, GENERIC_READ). why: "writable by Users
 * (S-1-5-32-545)", "readable by Users (S-1-5-32-545)".
 */
bool platform_win32_file_trusted(const void *sd, const void *user, bool secret, char *why, size_t size);

#endif
