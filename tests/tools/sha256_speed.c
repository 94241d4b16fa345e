/* sha256_speed.c — SHA-256 throughput of each implementation this CPU can
 * run (agent/crypto/sha256accel.c) and of mbedTLS as this build links it (in
 * the release builds: through the same module, on the active
 * implementation), and of crypto/sha256's streaming hash that the bulk file
 * hashes use. For the README's figures, not a test:
 *
 *   sha256_speed [MiB]      default 256; prints MB/s (10^6 bytes per second)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/sha256.h>

#include "crypto/sha256.h"
#include "crypto/sha256accel.h"
#include "platform/platform.h"

/* The platform layer's clock: mingw's C runtime has no timespec_get. */
static double seconds(void)
{
    return (double)platform_monotonic_ms() / 1000.0;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 256;
    size_t chunk = 1024 * 1024;
    unsigned char *buf = malloc(chunk);
    if (!buf || mib == 0)
        return 2;
    for (size_t i = 0; i < chunk; i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    static const sha256accel_impl impls[] = {SHA256ACCEL_PORTABLE, SHA256ACCEL_X86_SHA, SHA256ACCEL_ARMV8};
    for (size_t k = 0; k < sizeof impls / sizeof impls[0]; k++) {
        if (!sha256accel_available(impls[k]))
            continue;
        uint32_t h[8] = {0};
        double t0 = seconds();
        for (size_t i = 0; i < mib; i++)
            sha256accel_blocks(impls[k], h, buf, chunk / 64);
        double dt = seconds() - t0;
        printf("%-12s %8.0f MB/s\n", sha256accel_name(impls[k]), mib * chunk / dt / 1e6);
    }
    /* crypto/sha256's streaming hash, as the bulk file hashes run it */
    sha256_ctx stream;
    unsigned char md[32];
    double s0 = seconds();
    sha256_init(&stream);
    for (size_t i = 0; i < mib; i++)
        sha256_update(&stream, buf, chunk);
    sha256_finish(&stream, md);
    double sdt = seconds() - s0;
    printf("sha256 (%s) %8.0f MB/s\n", sha256accel_name(stream.impl), mib * chunk / sdt / 1e6);
    mbedtls_sha256_context ctx;
    mbedtls_sha256_init(&ctx);
    double t0 = seconds();
    mbedtls_sha256_starts(&ctx, 0);
    for (size_t i = 0; i < mib; i++)
        mbedtls_sha256_update(&ctx, buf, chunk);
    mbedtls_sha256_finish(&ctx, md);
    double dt = seconds() - t0;
#ifdef OUTPOST_SHA256_ALT
    printf("mbedtls (%s) %8.0f MB/s\n", sha256accel_name(sha256accel_active()), mib * chunk / dt / 1e6);
#else
    printf("mbedtls (own) %7.0f MB/s\n", mib * chunk / dt / 1e6);
#endif
    mbedtls_sha256_free(&ctx);
    free(buf);
    return 0;
}
