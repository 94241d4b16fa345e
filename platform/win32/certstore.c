/*
 * certstore.c — the system's trusted root certificates (platform.h, "The
 * system's certificate store"): the ROOT store as one PEM bundle, for TLS
 * (libcurl over mbedTLS has no CA store of its own) and, only the
 * certificates valid for code signing, for trusted_ca_file "system".
 */
#include "platform/win32/win32_int.h"

#include <wincrypt.h>

#include <stdlib.h>
#include <string.h>

const char *platform_system_ca_file(void)
{
    return NULL; /* the ROOT store, through platform_system_ca_bundle */
}

/* Whether cert's enhanced key usage (its extension and the store's
 * properties) allows code signing: no usage restriction at all counts. */
static bool cert_allows_code_signing(PCCERT_CONTEXT cert)
{
    DWORD size = 0;
    if (!CertGetEnhancedKeyUsage(cert, 0, NULL, &size))
        return GetLastError() == (DWORD)CRYPT_E_NOT_FOUND;
    CERT_ENHKEY_USAGE *usage = malloc(size);
    if (!usage)
        return false;
    bool ok = false;
    if (CertGetEnhancedKeyUsage(cert, 0, usage, &size)) {
        if (usage->cUsageIdentifier == 0)
            ok = GetLastError() == (DWORD)CRYPT_E_NOT_FOUND; /* else: valid for no usage */
        for (DWORD i = 0; i < usage->cUsageIdentifier && !ok; i++)
            ok = strcmp(usage->rgpszUsageIdentifier[i], szOID_PKIX_KP_CODE_SIGNING) == 0;
    }
    free(usage);
    return ok;
}

/* The certificates of store (only those allowing code signing when
 * code_signing) as one PEM bundle; what names it in messages. */
static MUST_CHECK error_code store_to_pem(HCERTSTORE store, bool code_signing, const char *what, char **pem,
                                          size_t *len, error_info *err)
{
    char *bundle = NULL;
    size_t used = 0;
    error_code rc = ERR_OK;
    PCCERT_CONTEXT cert = NULL;
    while ((cert = CertEnumCertificatesInStore(store, cert)) != NULL) {
        if (cert->dwCertEncodingType != X509_ASN_ENCODING || (code_signing && !cert_allows_code_signing(cert)))
            continue;
        DWORD need = 0;
        if (!CryptBinaryToStringA(cert->pbCertEncoded, cert->cbCertEncoded, CRYPT_STRING_BASE64HEADER, NULL, &need))
            continue;
        char *grown = realloc(bundle, used + need + 1);
        if (!grown) {
            rc = error_set(err, ERR_NOMEM, "out of memory reading %s", what);
            CertFreeCertificateContext(cert);
            break;
        }
        bundle = grown;
        DWORD written = need;
        if (CryptBinaryToStringA(cert->pbCertEncoded, cert->cbCertEncoded, CRYPT_STRING_BASE64HEADER, bundle + used,
                                 &written))
            used += written; /* written excludes the NUL */
    }
    CertCloseStore(store, 0);
    if (rc == ERR_OK && used == 0)
        rc = error_set(err, ERR_NOT_FOUND, "%s is empty", what);
    if (rc != ERR_OK) {
        free(bundle);
        return rc;
    }
    bundle[used] = '\0';
    *pem = bundle;
    *len = used;
    return ERR_OK;
}

error_code platform_system_ca_bundle(char **pem, size_t *len, error_info *err)
{
    HCERTSTORE store = CertOpenSystemStoreW(0, L"ROOT");
    if (!store)
        return error_set_os(err, ERR_NOT_FOUND, (int)GetLastError(), "cannot open the Windows ROOT certificate store");
    return store_to_pem(store, false, "the Windows ROOT certificate store", pem, len, err);
}

error_code platform_system_code_signing_roots(char **pem, size_t *len, error_info *err)
{
    HCERTSTORE store = CertOpenStore(CERT_STORE_PROV_SYSTEM_W, 0, 0,
                                     CERT_SYSTEM_STORE_LOCAL_MACHINE | CERT_STORE_READONLY_FLAG, L"ROOT");
    if (!store)
        return error_set_os(err, ERR_NOT_FOUND, (int)GetLastError(),
                            "cannot open the machine's ROOT certificate store");
    return store_to_pem(store, true, "the machine's ROOT certificate store (code signing)", pem, len, err);
}
