/*
 * fuzz_root.c — libFuzzer target for the mirror's roots (mirror/root.h,
 * mirror/envelope.h): the envelope reader, and the root payload parser
 * that an endpoint reaches only after a threshold of signatures (so the
 * fuzzer reaches it here through root_read_unverified, as `root sign` and
 * `root next` do). Besides memory errors, it checks what the rest of the
 * code relies on: a parsed root has 1..ROOT_MAX_KEYS keys in each list and
 * thresholds within them, and every refusal is ERR_REJECTED with a message.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mirror/envelope.h"
#include "mirror/root.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(error_code rc, const error_info *err)
{
    if (rc != ERR_REJECTED || err->message[0] == '\0')
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    error_info err;
    envelope env;
    if (envelope_open(data, size, &env, &err) == ERR_OK) {
        if (env.sig_count > ENVELOPE_MAX_SIGNATURES)
            abort();
        envelope_free(&env);
    }
    root r;
    error_code rc = root_read_unverified(data, size, "fuzz", &r, &err);
    if (rc == ERR_OK) {
        if (r.root_key_count < 1 || r.root_key_count > ROOT_MAX_KEYS || r.root_threshold < 1 ||
            r.root_threshold > r.root_key_count || r.manifest_key_count < 1 || r.manifest_key_count > ROOT_MAX_KEYS ||
            r.manifest_threshold < 1 || r.manifest_threshold > r.manifest_key_count || r.version < 1)
            abort();
        root_free(&r);
    } else {
        check_refusal(rc, &err);
    }
    rc = root_open_trusted(data, size, "fuzz", &r, &err);
    if (rc == ERR_OK)
        root_free(&r);
    else
        check_refusal(rc, &err);
    return 0;
}
