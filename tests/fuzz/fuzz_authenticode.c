/*
 * fuzz_authenticode.c — libFuzzer target for the Authenticode module: the
 * PE parser, the OLE compound file / MSI reader and the PKCS#7 parser.
 *
 * The first input byte picks the entry point, the rest is the input:
 *   even: a whole file (PE or MSI) through authenticode_verify_stream
 *   odd:  a PKCS#7 blob through authenticode_check_blob, which skips the
 *         image digest so the signer, attribute, timestamp and chain code
 *         is reached (an attacker can always make the digest match)
 * The trusted CA is $OUTPOST_FUZZ_CA (scripts/fuzz points it at the fixture
 * root so seeded signatures chain), else a built-in throwaway root.
 */
#define _GNU_SOURCE /* fmemopen, mkstemp: this test program is Linux-only */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authenticode/authenticode.h"
#include "authenticode/authenticode_int.h"
#include "../unit/ec_root_pem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static const char builtin_root[] = EC_ROOT_PEM;

static char ca_path[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *env = getenv("OUTPOST_FUZZ_CA");
    if (env && strlen(env) < sizeof ca_path) {
        strcpy(ca_path, env);
        return 0;
    }
    strcpy(ca_path, "/tmp/outpost-fuzz-ca-XXXXXX");
    int fd = mkstemp(ca_path);
    if (fd < 0 || write(fd, builtin_root, sizeof builtin_root - 1) != (ssize_t)(sizeof builtin_root - 1))
        abort();
    close(fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    authenticode_policy policy = {
        .trusted_ca_file = ca_path,
        .timestamp_ca_file = NULL,
        .signer_subject = (data[0] & 2) ? "Example Code Signing" : NULL,
        .allow_sha1 = (data[0] & 4) != 0,
        .now = 1800000000,
    };
    authenticode_result result;
    error_info err;
    if (data[0] & 1) {
        (void)authenticode_check_blob(data + 1, size - 1, &policy, &result, &err);
    } else if (size > 1) {
        FILE *f = fmemopen((void *)(data + 1), size - 1, "rb");
        if (!f)
            return 0;
        (void)authenticode_verify_stream(f, &policy, &result, &err);
        fclose(f);
    }
    /* The verdict name must always be printable. */
    if (!authenticode_verdict_name(result.verdict)[0])
        abort();
    return 0;
}
