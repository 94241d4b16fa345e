/*
 * cmd_version.c — `outpost version [--verbose] [--json]`: outpost's version,
 * and with --verbose what this binary runs on (PRODUCT.md sections 1 and
 * 10): the libraries as linked, asked at run time (a shared libcurl may be
 * newer than the one outpost was compiled with), whether its TLS can
 * negotiate TLS 1.3, the CPU paths the crypto code took, and libcurl's
 * features (SSPI, GSS-API, NTLM, Kerberos/SPNEGO, HTTPS proxy, ...), which
 * decide what proxy authentication an administrator can configure.
 *
 * One description (a cJSON tree) serves both outputs, so the text and the
 * JSON never say different things.
 */
#include "cli/commands.h"

#include <archive.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <mbedtls/build_info.h>
#include <mbedtls/version.h>
#include <stdio.h>
#include <string.h>

#include "crypto/gcmaccel.h"
#include "crypto/sha256accel.h"
#include "net/tls.h"

/* Whether libcurl's TLS library negotiates TLS 1.3: known for our Mbed TLS
 * (its configuration says) and for OpenSSL from 1.1.1; otherwise NULL
 * (unknown), not a guess. */
static cJSON *tls13_of(const char *ssl_version)
{
    if (tls_uses_our_mbedtls()) {
#if defined(MBEDTLS_SSL_PROTO_TLS1_3)
        return cJSON_CreateTrue();
#else
        return cJSON_CreateFalse();
#endif
    }
    unsigned major = 0, minor = 0, patch = 0;
    if (ssl_version && sscanf(ssl_version, "OpenSSL/%u.%u.%u", &major, &minor, &patch) == 3)
        return cJSON_CreateBool(major > 1 || (major == 1 && (minor > 1 || (minor == 1 && patch >= 1))));
    return cJSON_CreateNull();
}

/* One accelerated path: the implementation this CPU uses, and whether Mbed
 * TLS's own operation runs through it (the _ALT hook compiled in) or only
 * outpost's own code does. */
static void add_path(cJSON *crypto, const char *name, const char *impl, bool in_mbedtls)
{
    cJSON *o = cJSON_AddObjectToObject(crypto, name);
    if (!o)
        return;
    cJSON_AddStringToObject(o, "implementation", impl);
    cJSON_AddBoolToObject(o, "mbedtls_uses_it", in_mbedtls);
}

static cJSON *describe(bool verbose)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "version", OUTPOST_VERSION);
    if (!verbose)
        return root;

    cJSON *libs = cJSON_AddObjectToObject(root, "libraries");
    const curl_version_info_data *curl = curl_version_info(CURLVERSION_NOW);
    cJSON *c = cJSON_AddObjectToObject(libs, "libcurl");
    cJSON_AddStringToObject(c, "version", curl->version);
    if (curl->ssl_version)
        cJSON_AddStringToObject(c, "tls", curl->ssl_version);
    if (curl->libz_version)
        cJSON_AddStringToObject(c, "zlib", curl->libz_version);
    cJSON *features = cJSON_AddArrayToObject(c, "features");
#if LIBCURL_VERSION_NUM >= 0x075700 /* 7.87.0: feature_names */
    if (curl->age >= CURLVERSION_ELEVENTH && curl->feature_names)
        for (const char *const *f = curl->feature_names; *f; f++)
            cJSON_AddItemToArray(features, cJSON_CreateString(*f));
#endif
    cJSON *protocols = cJSON_AddArrayToObject(c, "protocols");
    for (const char *const *p = curl->protocols; p && *p; p++)
        cJSON_AddItemToArray(protocols, cJSON_CreateString(*p));

    char mbedtls[18] = "";
    mbedtls_version_get_string(mbedtls);
    cJSON *m = cJSON_AddObjectToObject(libs, "mbedtls");
    cJSON_AddStringToObject(m, "version", mbedtls);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(libs, "cjson"), "version", cJSON_Version());
    cJSON *a = cJSON_AddObjectToObject(libs, "libarchive");
    cJSON_AddStringToObject(a, "version", archive_version_string());
    cJSON_AddStringToObject(a, "details", archive_version_details());

    cJSON *tls = cJSON_AddObjectToObject(root, "tls");
    cJSON_AddStringToObject(tls, "library", curl->ssl_version ? curl->ssl_version : "none");
    cJSON_AddBoolToObject(tls, "outpost_mbedtls", tls_uses_our_mbedtls());
    cJSON_AddItemToObject(tls, "tls13", tls13_of(curl->ssl_version));

    cJSON *crypto = cJSON_AddObjectToObject(root, "crypto");
    bool sha_alt = false, gcm_alt = false;
#ifdef OUTPOST_SHA256_ALT
    sha_alt = true;
#endif
#ifdef OUTPOST_GCM_ALT
    gcm_alt = true;
#endif
    add_path(crypto, "sha256", sha256accel_name(sha256accel_active()), sha_alt);
    add_path(crypto, "aes_gcm", gcmaccel_name(gcmaccel_active()), gcm_alt);
    return root;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "?";
}

static void print_list(FILE *out, const char *label, const cJSON *list)
{
    fprintf(out, "  %s:", label);
    const cJSON *item;
    cJSON_ArrayForEach(item, list) fprintf(out, " %s", item->valuestring);
    fputc('\n', out);
}

static void print_text(FILE *out, const cJSON *d)
{
    fprintf(out, "outpost %s\n", str(d, "version"));
    const cJSON *libs = cJSON_GetObjectItemCaseSensitive(d, "libraries");
    if (!libs)
        return;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(libs, "libcurl");
    fprintf(out, "libcurl %s (TLS: %s, zlib %s)\n", str(c, "version"), str(c, "tls"), str(c, "zlib"));
    print_list(out, "features", cJSON_GetObjectItemCaseSensitive(c, "features"));
    print_list(out, "protocols", cJSON_GetObjectItemCaseSensitive(c, "protocols"));
    fprintf(out, "Mbed TLS %s\n", str(cJSON_GetObjectItemCaseSensitive(libs, "mbedtls"), "version"));
    fprintf(out, "cJSON %s\n", str(cJSON_GetObjectItemCaseSensitive(libs, "cjson"), "version"));
    fprintf(out, "%s\n", str(cJSON_GetObjectItemCaseSensitive(libs, "libarchive"), "details"));

    const cJSON *tls = cJSON_GetObjectItemCaseSensitive(d, "tls");
    const cJSON *t13 = cJSON_GetObjectItemCaseSensitive(tls, "tls13");
    fprintf(out, "TLS: %s%s, TLS 1.3: %s\n", str(tls, "library"),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tls, "outpost_mbedtls")) ? " (outpost's Mbed TLS)" : "",
            cJSON_IsTrue(t13)    ? "yes"
            : cJSON_IsFalse(t13) ? "no"
                                 : "unknown");

    static const struct {
        const char *key, *label;
    } paths[] = {{"sha256", "SHA-256"}, {"aes_gcm", "AES-GCM"}};
    const cJSON *crypto = cJSON_GetObjectItemCaseSensitive(d, "crypto");
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(crypto, paths[i].key);
        fprintf(out, "%s: %s (%s)\n", paths[i].label, str(p, "implementation"),
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "mbedtls_uses_it")) ? "Mbed TLS uses it"
                                                                                     : "Mbed TLS uses its own code");
    }
}

error_code command_version(bool verbose, bool json, error_info *err)
{
    cJSON *d = describe(verbose);
    char *text = d && json ? cJSON_Print(d) : NULL;
    if (!d || (json && !text)) {
        cJSON_Delete(d);
        return error_set(err, ERR_NOMEM, "out of memory");
    }
    if (json)
        printf("%s\n", text);
    else
        print_text(stdout, d);
    cJSON_free(text);
    cJSON_Delete(d);
    return ERR_OK;
}
