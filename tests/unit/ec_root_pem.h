/* The self-signed EC (P-256) CA "CN=Outpost Fuzz Root" (valid 2026-11-21
 * to 2126-10-28; its key is nowhere) as a string literal, for the unit
 * tests' support.c and the Authenticode fuzz target, which both need a trust
 * anchor and must not each carry a copy. */
#ifndef OUTPOST_TESTS_EC_ROOT_PEM_H
#define OUTPOST_TESTS_EC_ROOT_PEM_H

#define EC_ROOT_PEM                                                                                                    \
    "-----BEGIN CERTIFICATE-----\n"                                                                                    \
    "MIIBjzCCATWgAwIBAgIUEOvN2e4wP4FowjdJ3PbAqXrKQ9EwCgYIKoZIzj0EAwIw\n"                                               \
    "HDEaMBgGA1UEAwwRT3V0cG9zdCBGdXp6IFJvb3QwIBcNMjYxMTIxMTkyMDA5WhgP\n"                                               \
    "MjEyNjEwMjgxOTIwMDlaMBwxGjAYBgNVBAMMEU91dHBvc3QgRnV6eiBSb290MFkw\n"                                               \
    "EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2PT871+5Zbds8fq4rfe1lkaKCn++blSY\n"                                               \
    "5LQrg2MLbyCl0vZMoN6fhTaHLaIf2vtvLIBGivIjsUEyMzzi5tMr86NTMFEwHQYD\n"                                               \
    "VR0OBBYEFJlRrm2B9SItGGZ+FOEpnJB0G0Y4MB8GA1UdIwQYMBaAFJlRrm2B9SIt\n"                                               \
    "GGZ+FOEpnJB0G0Y4MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIh\n"                                               \
    "AJqjPqfb7tNJEYd6jMrAU8HeUGAoCI3iXtpHJ9NcV2o1AiACD6oKU3fVr/Dsdz+z\n"                                               \
    "zkPDdthC+SzIRlXZENJ9cHGyew==\n"                                                                                   \
    "-----END CERTIFICATE-----\n"

#endif
