/*
 * installed.h — which version of the sensor this endpoint runs.
 *
 * Sources, first that answers wins: installer.installed_version in the
 * configuration; the first line of installer.installed_version_file; the
 * operating system's software inventory (platform_installed_version with
 * installer.product_name: the registry's Uninstall keys on Windows); the
 * version outpost last deployed successfully (state section "installer",
 * member "deployed_version"). None: no installed version is known, and any
 * valid version counts as an update.
 */
#ifndef OUTPOST_INSTALLED_H
#define OUTPOST_INSTALLED_H

#include "core/config.h"
#include "base/error.h"
#include "core/state.h"

/*
 * Sets *version to a malloc'd copy of the installed version, or to NULL when
 * no source knows one (that is ERR_OK). *source (may be NULL) names where it
 * came from ("config", "file", "registry", "state") or is NULL. A version
 * file that does not exist, cannot be read, or holds an invalid version, is
 * ERR_CONFIG naming the file. s may be NULL (state not consulted).
 */
MUST_CHECK error_code installed_version_get(const config *cfg, state *s, char **version, const char **source,
                                            error_info *err);

#endif
