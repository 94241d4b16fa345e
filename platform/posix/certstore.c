/*
 * certstore.c — the system's trusted root certificates (platform.h, "The
 * system's certificate store"): on POSIX a PEM bundle file, found among the
 * distributions' paths (SSL_CERT_FILE first), which libcurl reads for TLS
 * and which serves as the code-signing roots of trusted_ca_file "system".
 */
#include "platform/posix/posix_int.h"

#include <stdlib.h>
#include <unistd.h>

error_code platform_system_ca_bundle(char **pem, size_t *len, error_info *err)
{
    (void)pem;
    (void)len;
    /* The store is a file here: platform_system_ca_file. */
    return error_set(err, ERR_NOT_FOUND, "the system's CA store is a file on this platform");
}

const char *platform_system_ca_file(void)
{
    static const char *const known[] = {
        "/etc/ssl/certs/ca-certificates.crt",                /* Debian, Ubuntu, Arch, Gentoo */
        "/etc/pki/tls/certs/ca-bundle.crt",                  /* Fedora, RHEL, CentOS */
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* RHEL 7 and later */
        "/etc/ssl/ca-bundle.pem",                            /* openSUSE, SLES */
        "/etc/ssl/cert.pem",                                 /* Alpine */
    };
    const char *env = getenv("SSL_CERT_FILE");
    if (env && *env)
        return env;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (access(known[i], R_OK) == 0)
            return known[i];
    return NULL;
}

error_code platform_system_code_signing_roots(char **pem, size_t *len, error_info *err)
{
    const char *file = platform_system_ca_file();
    if (!file)
        return error_set(err, ERR_NOT_FOUND,
                         "no system CA bundle found (looked for the distributions' bundles; SSL_CERT_FILE names "
                         "another)");
    error_code rc = platform_read_file(file, 64u << 20, pem, len, err);
    if (rc != ERR_OK)
        return error_prefix(err, "the system CA bundle");
    return ERR_OK;
}
