/* test_gcmaccel.c — AES-GCM (agent/crypto/gcmaccel.c) on every implementation
 * this CPU can run (the portable code, and AES-NI + PCLMULQDQ on x86-64):
 * NIST CAVP gcmEncryptExtIV/gcmDecrypt vectors, 96-bit-IV vectors of
 * lengths no multiple of 16 and vectors for every IV length from 1 to 128
 * bytes (gcm_vectors.inc, from gcm_vectors.py; OpenSSL made their
 * ciphertexts and tags), whole and split into update calls of odd sizes, forged tags refused with the output wiped;
 * long messages (the eight-block path) against the portable code, in
 * place; the choice of implementation (OUTPOST_GCM_PORTABLE). In the
 * release builds (OUTPOST_GCM_ALT) also through mbedTLS: its GCM
 * self-test and the vectors through mbedtls_gcm_* and mbedtls_cipher (what
 * the TLS record layer calls), which then run on this module. */
#define MBEDTLS_ALLOW_PRIVATE_ACCESS /* the key schedule, to look for it */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/gcm.h>

#include "crypto/gcmaccel.h"
#include "platform/platform.h"
#include "support.h"

#ifdef OUTPOST_GCM_ALT
#include <mbedtls/cipher.h>
#endif

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct gcm_vector {
    unsigned key_bits;
    const char *key;
    size_t iv_len;
    const char *iv;
    size_t aad_len;
    const char *aad;
    size_t text_len;
    const char *plain; /* "" for a FAIL vector */
    const char *cipher;
    size_t tag_len;
    const char *tag;
    int valid;
};

#include "gcm_vectors.inc"

static const gcmaccel_impl ALL[] = {GCMACCEL_PORTABLE, GCMACCEL_X86_AESNI, GCMACCEL_ARMV8};

static const unsigned char *u(const char *s)
{
    return (const unsigned char *)s;
}

/* One vector on impl: decryption (accepted or refused), and for a valid
 * one encryption, a forged tag, and the text split into update calls of
 * `chunk` bytes (any length: Mbed TLS 3.6's contract), the additional data
 * likewise. */
static void check_vector(gcmaccel_impl impl, const struct gcm_vector *v, size_t chunk)
{
    gcmaccel_context ctx;
    unsigned char out[512], tag[16];
    assert_true(v->text_len <= sizeof out);
    gcmaccel_init(&ctx, impl);
    assert_int_equal(gcmaccel_setkey(&ctx, u(v->key), v->key_bits), 0);

    memset(out, 0xa5, sizeof out);
    int ret = gcmaccel_auth_decrypt(&ctx, v->text_len, u(v->iv), v->iv_len, u(v->aad), v->aad_len, u(v->tag),
                                    v->tag_len, u(v->cipher), out);
    if (!v->valid) {
        assert_int_equal(ret, MBEDTLS_ERR_GCM_AUTH_FAILED);
        for (size_t i = 0; i < v->text_len; i++)
            assert_int_equal(out[i], 0);
        gcmaccel_free(&ctx);
        return;
    }
    assert_int_equal(ret, 0);
    assert_memory_equal(out, v->plain, v->text_len);

    assert_int_equal(gcmaccel_crypt_and_tag(&ctx, MBEDTLS_GCM_ENCRYPT, v->text_len, u(v->iv), v->iv_len, u(v->aad),
                                            v->aad_len, u(v->plain), out, v->tag_len, tag),
                     0);
    assert_memory_equal(out, v->cipher, v->text_len);
    assert_memory_equal(tag, v->tag, v->tag_len);

    unsigned char forged[16];
    memcpy(forged, v->tag, v->tag_len);
    forged[v->tag_len - 1] ^= 0x01;
    memset(out, 0xa5, sizeof out);
    assert_int_equal(gcmaccel_auth_decrypt(&ctx, v->text_len, u(v->iv), v->iv_len, u(v->aad), v->aad_len, forged,
                                           v->tag_len, u(v->cipher), out),
                     MBEDTLS_ERR_GCM_AUTH_FAILED);
    for (size_t i = 0; i < v->text_len; i++)
        assert_int_equal(out[i], 0);

    /* Streaming, as mbedtls_cipher_update and PSA's multipart AEAD do. */
    for (int mode = 0; mode < 2; mode++) {
        const unsigned char *in = u(mode == MBEDTLS_GCM_ENCRYPT ? v->plain : v->cipher);
        const char *want = mode == MBEDTLS_GCM_ENCRYPT ? v->cipher : v->plain;
        size_t olen = 0;
        assert_int_equal(gcmaccel_starts(&ctx, mode, u(v->iv), v->iv_len), 0);
        for (size_t at = 0; at < v->aad_len; at += chunk) {
            size_t n = v->aad_len - at < chunk ? v->aad_len - at : chunk;
            assert_int_equal(gcmaccel_update_ad(&ctx, u(v->aad) + at, n), 0);
        }
        for (size_t at = 0; at < v->text_len; at += chunk) {
            size_t n = v->text_len - at < chunk ? v->text_len - at : chunk;
            assert_int_equal(gcmaccel_update(&ctx, in + at, n, out + at, n, &olen), 0);
            assert_int_equal(olen, n);
        }
        assert_int_equal(gcmaccel_finish(&ctx, NULL, 0, &olen, tag, v->tag_len), 0);
        assert_int_equal(olen, 0);
        assert_memory_equal(out, want, v->text_len);
        assert_memory_equal(tag, v->tag, v->tag_len);
    }
    gcmaccel_free(&ctx);
}

static void test_vectors_every_available_implementation(void **state)
{
    (void)state;
    size_t ran = 0;
    for (size_t i = 0; i < COUNT(ALL); i++) {
        if (!gcmaccel_available(ALL[i])) {
            print_message("%s: not on this CPU, skipped\n", gcmaccel_name(ALL[i]));
            continue;
        }
        for (size_t k = 0; k < COUNT(NIST_VECTORS); k++)
            check_vector(ALL[i], &NIST_VECTORS[k], k % 2 ? 16 * (1 + k % 9) : 1 + k % 23);
        for (size_t k = 0; k < COUNT(LENGTH_VECTORS); k++)
            check_vector(ALL[i], &LENGTH_VECTORS[k], k % 2 ? 16 * (1 + k % 9) : 1 + k % 23);
        /* Every IV length from 1 to 128 bytes, each cut at a different place. */
        for (size_t k = 0; k < COUNT(IV_VECTORS); k++)
            check_vector(ALL[i], &IV_VECTORS[k], 1 + k % 37);
        ran++;
        print_message("%s: %u NIST, %u length and %u IV-length vectors\n", gcmaccel_name(ALL[i]),
                      (unsigned)COUNT(NIST_VECTORS), (unsigned)COUNT(LENGTH_VECTORS), (unsigned)COUNT(IV_VECTORS));
    }
    assert_true(ran >= 1);
}

static void fill(unsigned char *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

/* Messages long enough for the eight-block passes (up to a TLS record and
 * more), every key size, both directions, in place, some across the 32-bit
 * counter's wrap (a non-96-bit IV can start it anywhere): the CPU's code
 * against the portable code, which the vectors above pin down. */
static void test_long_messages_match_portable(void **state)
{
    (void)state;
    static const size_t lengths[] = {128, 129, 255, 256, 1000, 4096, 16384, 16384 + 13, 20000};
    static const unsigned bits[] = {128, 192, 256};
    size_t compared = 0;
    for (size_t i = 1; i < COUNT(ALL); i++) {
        if (!gcmaccel_available(ALL[i]))
            continue;
        for (size_t b = 0; b < COUNT(bits); b++) {
            for (size_t l = 0; l < COUNT(lengths); l++) {
                size_t n = lengths[l];
                unsigned char key[32], iv[60], aad[13], tag_p[16], tag_a[16];
                unsigned char *text = malloc(n), *out_p = malloc(n), *out_a = malloc(n);
                assert_non_null(text);
                assert_non_null(out_p);
                assert_non_null(out_a);
                uint32_t seed = (uint32_t)(b * 100 + l);
                fill(key, sizeof key, seed);
                fill(iv, sizeof iv, seed + 1000);
                fill(aad, sizeof aad, seed + 2000);
                fill(text, n, seed + 3000);
                size_t iv_len = l % 3 == 0 ? sizeof iv : 12;
                for (int mode = 0; mode < 2; mode++) {
                    gcmaccel_context p, a;
                    gcmaccel_init(&p, GCMACCEL_PORTABLE);
                    gcmaccel_init(&a, ALL[i]);
                    assert_int_equal(gcmaccel_setkey(&p, key, bits[b]), 0);
                    assert_int_equal(gcmaccel_setkey(&a, key, bits[b]), 0);
                    assert_int_equal(
                        gcmaccel_crypt_and_tag(&p, mode, n, iv, iv_len, aad, sizeof aad, text, out_p, 16, tag_p), 0);
                    memcpy(out_a, text, n);
                    assert_int_equal(
                        gcmaccel_crypt_and_tag(&a, mode, n, iv, iv_len, aad, sizeof aad, out_a, out_a, 16, tag_a), 0);
                    assert_memory_equal(out_a, out_p, n);
                    assert_memory_equal(tag_a, tag_p, 16);
                    gcmaccel_free(&p);
                    gcmaccel_free(&a);
                    compared++;
                }
                free(text);
                free(out_p);
                free(out_a);
            }
        }
    }
    print_message("%u long messages compared with the portable code\n", (unsigned)compared);
}

/* The counter is 32 bits and wraps within the block (SP 800-38D's inc32):
 * an IV whose J0 ends in ff ff ff f8 crosses it in the first eight-block
 * pass. The portable code increments as mbedTLS's did. */
static void test_counter_wrap(void **state)
{
    (void)state;
    unsigned char key[16] = {1}, iv[12] = {2}, text[512], out_p[512], out_a[512], tag_p[16], tag_a[16];
    fill(text, sizeof text, 7);
    for (size_t i = 1; i < COUNT(ALL); i++) {
        if (!gcmaccel_available(ALL[i]))
            continue;
        gcmaccel_context p, a;
        gcmaccel_init(&p, GCMACCEL_PORTABLE);
        gcmaccel_init(&a, ALL[i]);
        assert_int_equal(gcmaccel_setkey(&p, key, 128), 0);
        assert_int_equal(gcmaccel_setkey(&a, key, 128), 0);
        /* starts, then move both counters next to the wrap. */
        size_t olen = 0;
        assert_int_equal(gcmaccel_starts(&p, MBEDTLS_GCM_ENCRYPT, iv, sizeof iv), 0);
        assert_int_equal(gcmaccel_starts(&a, MBEDTLS_GCM_ENCRYPT, iv, sizeof iv), 0);
        memset(p.y + 12, 0xff, 3);
        memset(a.y + 12, 0xff, 3);
        p.y[15] = a.y[15] = 0xf8;
        assert_int_equal(gcmaccel_update(&p, text, sizeof text, out_p, sizeof out_p, &olen), 0);
        assert_int_equal(gcmaccel_update(&a, text, sizeof text, out_a, sizeof out_a, &olen), 0);
        assert_int_equal(gcmaccel_finish(&p, NULL, 0, &olen, tag_p, 16), 0);
        assert_int_equal(gcmaccel_finish(&a, NULL, 0, &olen, tag_a, 16), 0);
        assert_memory_equal(out_a, out_p, sizeof text);
        assert_memory_equal(tag_a, tag_p, 16);
        gcmaccel_free(&p);
        gcmaccel_free(&a);
    }
}

#if defined(__SANITIZE_ADDRESS__)
#define STACK_PROBE 0 /* ASan moves locals off the stack: nothing to see there */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STACK_PROBE 0
#endif
#endif
#ifndef STACK_PROBE
#define STACK_PROBE 1
#endif

#if STACK_PROBE
/* How many of the `count` 16-byte secrets lie in the stack below the
 * caller's frame: an uninitialised array there holds what the calls made
 * before it left behind. (Reading it is reading stale memory on purpose,
 * through volatile so that the compiler keeps every read.) */
__attribute__((noinline)) static size_t stack_residue(const unsigned char (*secrets)[16], size_t count)
{
    unsigned char stale[32768];
    /* Tells the compiler the array may have been written (it was, by the
     * calls before), so it neither warns nor assumes anything of it. */
    __asm__ volatile("" : : "r"(stale) : "memory");
    const volatile unsigned char *probe = stale;
    size_t found = 0;
    for (size_t off = 0; off + 16 <= sizeof stale; off++)
        for (size_t k = 0; k < count; k++) {
            size_t i = 0;
            while (i < 16 && probe[off + i] == secrets[k][i])
                i++;
            if (i == 16 && getenv("GCM_PROBE_DEBUG")) /* which secret, where: for a failing run */
                fprintf(stderr, "secret %zu at offset %zu\n", k, off);
            found += i == 16;
        }
    return found;
}

/* One message through every implementation the CPU has, and then none of
 * the round keys after the first, nor H or its powers, may be left in the
 * stack the calls used (finding 32: they were; the first round key is the
 * key itself, which the caller holds anyway). */
static void test_no_key_material_left_on_the_stack(void **state)
{
    (void)state;
    static const unsigned char key[16] = {0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
                                          0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c};
    static const unsigned char iv[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    for (size_t i = 0; i < COUNT(ALL); i++) {
        if (!gcmaccel_available(ALL[i]))
            continue;
        gcmaccel_context *ctx = malloc(sizeof *ctx);
        unsigned char(*secrets)[16] = malloc(20 * sizeof *secrets);
        unsigned char *text = calloc(1, 4096), tag[16];
        assert_non_null(ctx);
        assert_non_null(secrets);
        assert_non_null(text);
        gcmaccel_init(ctx, ALL[i]);
        assert_int_equal(gcmaccel_setkey(ctx, key, 128), 0);
        const unsigned char *rk =
            (const unsigned char *)(ctx->aes.MBEDTLS_PRIVATE(buf) + ctx->aes.MBEDTLS_PRIVATE(rk_offset));
        size_t count = 0;
        for (int r = 1; r <= 10; r++)
            memcpy(secrets[count++], rk + 16 * r, 16);
        if (ALL[i] != GCMACCEL_PORTABLE) /* the CPU paths keep H^1..H^8 in hpow */
            for (int p = 0; p < 8; p++)
                memcpy(secrets[count++], ctx->hpow[p], 16);
        assert_int_equal(gcmaccel_crypt_and_tag(ctx, MBEDTLS_GCM_ENCRYPT, 4096 - 3, iv, sizeof iv, iv, 5, text, text,
                                                sizeof tag, tag),
                         0);
        size_t left = stack_residue((const unsigned char(*)[16])secrets, count);
        print_message("%s: %u copies of its %u round keys and powers of H left on the stack\n", gcmaccel_name(ALL[i]),
                      (unsigned)left, (unsigned)count);
        gcmaccel_free(ctx);
        free(ctx);
        free(secrets);
        free(text);
        assert_int_equal(left, 0);
    }
}
#else
static void test_no_key_material_left_on_the_stack(void **state)
{
    (void)state;
    print_message("a sanitizer build keeps locals off the stack: nothing to probe\n");
}
#endif

static void test_bad_input(void **state)
{
    (void)state;
    gcmaccel_context ctx;
    unsigned char key[32] = {0}, iv[12] = {0}, buf[32] = {0}, tag[16];
    size_t olen = 0;
    gcmaccel_init(&ctx, gcmaccel_active());
    /* a context never keyed: every call is an error (2.28's hook read a NULL
     * key schedule in update) */
    assert_int_equal(gcmaccel_update_ad(&ctx, buf, 1), MBEDTLS_ERR_GCM_BAD_INPUT);
    assert_int_equal(gcmaccel_update(&ctx, buf, 16, buf + 16, 16, &olen), MBEDTLS_ERR_GCM_BAD_INPUT);
    assert_int_equal(gcmaccel_finish(&ctx, NULL, 0, &olen, tag, 16), MBEDTLS_ERR_GCM_BAD_INPUT);
    assert_int_equal(gcmaccel_crypt_and_tag(&ctx, MBEDTLS_GCM_ENCRYPT, 16, iv, 12, NULL, 0, buf, buf + 16, 16, tag),
                     MBEDTLS_ERR_GCM_BAD_INPUT);
    assert_int_equal(gcmaccel_setkey(&ctx, key, 100), MBEDTLS_ERR_GCM_BAD_INPUT);
    assert_int_equal(gcmaccel_starts(&ctx, MBEDTLS_GCM_ENCRYPT, iv, 12), MBEDTLS_ERR_GCM_BAD_INPUT);
    assert_int_equal(gcmaccel_setkey(&ctx, key, 256), 0);
    assert_int_equal(gcmaccel_starts(&ctx, MBEDTLS_GCM_ENCRYPT, iv, 0), MBEDTLS_ERR_GCM_BAD_INPUT);
    assert_int_equal(gcmaccel_starts(&ctx, MBEDTLS_GCM_ENCRYPT, iv, 12), 0);
    /* output after input within the length would overwrite input not yet read */
    assert_int_equal(gcmaccel_update(&ctx, buf, 16, buf + 1, 16, &olen), MBEDTLS_ERR_GCM_BAD_INPUT);
    /* an output too small for the text: Mbed TLS 3.6's own error */
    assert_int_equal(gcmaccel_update(&ctx, buf, 16, buf + 16, 15, &olen), MBEDTLS_ERR_GCM_BUFFER_TOO_SMALL);
    assert_int_equal(gcmaccel_update(&ctx, buf, 5, buf + 16, 16, &olen), 0);
    /* additional data after the text has begun */
    assert_int_equal(gcmaccel_update_ad(&ctx, buf, 1), MBEDTLS_ERR_GCM_BAD_INPUT);
    assert_int_equal(gcmaccel_finish(&ctx, NULL, 0, &olen, tag, 3), MBEDTLS_ERR_GCM_BAD_INPUT);
    assert_int_equal(gcmaccel_finish(&ctx, NULL, 0, &olen, tag, 17), MBEDTLS_ERR_GCM_BAD_INPUT);
    gcmaccel_free(&ctx);
    gcmaccel_free(NULL);
}

static int choose(bool cpu_has, const char *forced)
{
    return (int)gcmaccel_choose(cpu_has, forced);
}

static void test_choose(void **state)
{
    (void)state;
    gcmaccel_impl cpu = GCMACCEL_PORTABLE;
    for (size_t i = 1; i < COUNT(ALL); i++)
        if (gcmaccel_available(ALL[i]))
            cpu = ALL[i];
    /* active() reads the variable too, and platform_getenv's pointer lasts
     * only until the next read of the same variable: ask in this order. */
    gcmaccel_impl active = gcmaccel_active();
    const char *forced = platform_getenv("OUTPOST_GCM_PORTABLE");
    print_message("active: %s (OUTPOST_GCM_PORTABLE=%s, CPU AES + carry-less multiply: %s)\n", gcmaccel_name(active),
                  forced ? forced : "unset", platform_cpu_has_aes_clmul() ? "yes" : "no");
    support_check_accel_choice(choose, GCMACCEL_PORTABLE, (int)cpu, (int)active, forced);
}

#ifdef OUTPOST_GCM_ALT
static mbedtls_cipher_type_t cipher_type(unsigned bits)
{
    return bits == 128   ? MBEDTLS_CIPHER_AES_128_GCM
           : bits == 192 ? MBEDTLS_CIPHER_AES_192_GCM
                         : MBEDTLS_CIPHER_AES_256_GCM;
}

/* A vector through mbedtls_gcm_* and through mbedtls_cipher's AEAD calls,
 * the record layer's (which take the tag after the ciphertext). */
static void check_through_mbedtls(const struct gcm_vector *v)
{
    unsigned char out[512 + 16], in[512 + 16], tag[16];
    mbedtls_gcm_context g;
    mbedtls_gcm_init(&g);
    assert_int_equal(mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, u(v->key), v->key_bits), 0);
    int ret = mbedtls_gcm_auth_decrypt(&g, v->text_len, u(v->iv), v->iv_len, u(v->aad), v->aad_len, u(v->tag),
                                       v->tag_len, u(v->cipher), out);
    assert_int_equal(ret, v->valid ? 0 : MBEDTLS_ERR_GCM_AUTH_FAILED);
    if (v->valid) {
        assert_memory_equal(out, v->plain, v->text_len);
        assert_int_equal(mbedtls_gcm_crypt_and_tag(&g, MBEDTLS_GCM_ENCRYPT, v->text_len, u(v->iv), v->iv_len, u(v->aad),
                                                   v->aad_len, u(v->plain), out, v->tag_len, tag),
                         0);
        assert_memory_equal(out, v->cipher, v->text_len);
        assert_memory_equal(tag, v->tag, v->tag_len);
    }
    mbedtls_gcm_free(&g);

    mbedtls_cipher_context_t c;
    mbedtls_cipher_init(&c);
    assert_int_equal(mbedtls_cipher_setup(&c, mbedtls_cipher_info_from_type(cipher_type(v->key_bits))), 0);
    assert_int_equal(mbedtls_cipher_setkey(&c, u(v->key), (int)v->key_bits, MBEDTLS_DECRYPT), 0);
    memcpy(in, v->cipher, v->text_len);
    memcpy(in + v->text_len, v->tag, v->tag_len);
    size_t olen = 0;
    ret = mbedtls_cipher_auth_decrypt_ext(&c, u(v->iv), v->iv_len, u(v->aad), v->aad_len, in, v->text_len + v->tag_len,
                                          out, sizeof out, &olen, v->tag_len);
    assert_int_equal(ret, v->valid ? 0 : MBEDTLS_ERR_CIPHER_AUTH_FAILED);
    if (v->valid) {
        assert_int_equal(olen, v->text_len);
        assert_memory_equal(out, v->plain, v->text_len);
        in[0] ^= 0x80; /* a flipped bit of ciphertext, or of the tag when there is none */
        assert_int_equal(mbedtls_cipher_auth_decrypt_ext(&c, u(v->iv), v->iv_len, u(v->aad), v->aad_len, in,
                                                         v->text_len + v->tag_len, out, sizeof out, &olen, v->tag_len),
                         MBEDTLS_ERR_CIPHER_AUTH_FAILED);
    }
    mbedtls_cipher_free(&c);
}

static void test_through_mbedtls(void **state)
{
    (void)state;
    print_message("mbedTLS's GCM runs on gcmaccel (%s)\n", gcmaccel_name(gcmaccel_active()));
    assert_int_equal(mbedtls_gcm_self_test(0), 0);
    for (size_t k = 0; k < COUNT(NIST_VECTORS); k++)
        check_through_mbedtls(&NIST_VECTORS[k]);
    for (size_t k = 0; k < COUNT(LENGTH_VECTORS); k++)
        check_through_mbedtls(&LENGTH_VECTORS[k]);
    for (size_t k = 0; k < COUNT(IV_VECTORS); k++)
        check_through_mbedtls(&IV_VECTORS[k]);
}
#else
static void test_through_mbedtls(void **state)
{
    (void)state;
    print_message("mbedTLS has its own GCM in this build (no OUTPOST_GCM_ALT): nothing to check through it\n");
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choose),
        cmocka_unit_test(test_vectors_every_available_implementation),
        cmocka_unit_test(test_long_messages_match_portable),
        cmocka_unit_test(test_counter_wrap),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_no_key_material_left_on_the_stack),
        cmocka_unit_test(test_through_mbedtls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
