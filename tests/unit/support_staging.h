/*
 * support_staging.h — the staging fixture test_intake, test_staging,
 * test_deploy and test_bundle share (implemented in support.c): a state
 * directory, a configuration that verifies without a trust anchor, minimal
 * PE installers staged through intake_stage. Failures end the test through
 * cmocka.
 */
#ifndef OUTPOST_TEST_SUPPORT_STAGING_H
#define OUTPOST_TEST_SUPPORT_STAGING_H

#include <stdbool.h>
#include <stddef.h>

#include "core/config.h"
#include "core/state.h"
#include "installer/intake.h"

/* ---- A staging fixture ------------------------------------------------------------ */

/* What test_intake, test_staging, test_deploy and test_bundle stage into. */
typedef struct support_staging {
    char *dir;  /* scratch (support_tempdir); state_dir is dir/state, created */
    config cfg; /* defaults, with no trusted_ca_file and signatures not required */
    state *s;   /* state_dir's state, loaded */
} support_staging;

/* A new fixture in support_tempdir(tag), logging off; free it with
 * support_staging_free. */
support_staging *support_staging_new(const char *tag);
void support_staging_free(support_staging *f);

/* cmocka group or test setup/teardown: *ctx is a support_staging ("staging"). */
int support_staging_setup(void **ctx);
int support_staging_teardown(void **ctx);

/* A cmocka test run in a fresh staging fixture. */
#define SUPPORT_STAGING_TEST(fn) cmocka_unit_test_setup_teardown(fn, support_staging_setup, support_staging_teardown)

/*
 * Writes a minimal PE (MZ, e_lfanew 0x80, PE\0\0) of size bytes (at least
 * 512) at dir/name; the bytes from 0x100 on follow seed, so two seeds make
 * two files. Returns the path (malloc'd).
 */
char *support_write_pe(const char *dir, const char *name, size_t size, unsigned char seed);

/*
 * Stages the installer at path as version through intake_stage, under its
 * base name, from source_url path, its length not checked; returns what
 * intake_stage returns (the caller frees r->path on ERR_OK).
 */
error_code support_stage_as(support_staging *f, const char *path, const char *version, bool allow_downgrade, bool force,
                            intake_result *r, error_info *err);

/* support_stage_as without downgrade or force; fails the test when staging fails. */
void support_stage(support_staging *f, const char *path, const char *version);

/* The current staged version (malloc'd), NULL when none. */
char *support_staged_current(support_staging *f);

/* Whether state_dir/staging/<version> is a directory. */
bool support_staged_dir_exists(support_staging *f, const char *version);

/* How many entries state_dir/staging holds (0 when it does not exist). */
size_t support_staging_entries(support_staging *f);

#endif
