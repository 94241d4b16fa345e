/*
 * installed.c — which sensor version this endpoint runs (see installed.h).
 *
 * The sources are tried in a fixed order; the first that knows a version
 * wins. Only the version file is an administrator's explicit statement that
 * can be wrong in a way worth stopping for (ERR_CONFIG); the OS inventory and
 * the state are best effort: an unusable answer there is logged and skipped.
 * A version file the configuration names but that does not exist is
 * ERR_CONFIG too, never a fall-through to the next source (PRODUCT.md
 * section 2): leave the key null until something writes the file.
 */
#include "installer/installed.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "installer/installer_state.h"
#include "platform/platform.h"
#include "base/text.h"
#include "installer/version.h"

/* A version file holds one short line; anything bigger is not one. */
#define INSTALLED_FILE_MAX 4096

/* The first line of text, without surrounding white space (and a UTF-8 BOM,
 * which Notepad writes). Modifies text in place. */
static char *first_line_trimmed(char *text)
{
    text += text_utf8_bom_length(text, strlen(text));
    while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n')
        text++;
    size_t len = strcspn(text, "\r\n");
    while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
        len--;
    text[len] = '\0';
    return text;
}

static MUST_CHECK error_code from_file(const char *path, char **version, error_info *err)
{
    char *data = NULL;
    size_t len = 0;
    error_info why;
    error_clear(&why);
    error_code rc = config_check_file("installer.installed_version_file", path, err);
    if (rc != ERR_OK)
        return rc;
    rc = platform_read_file(path, INSTALLED_FILE_MAX, &data, &len, &why);
    if (rc != ERR_OK)
        return error_set(err, ERR_CONFIG,
                         "installer.installed_version_file %s cannot be read (%s); fix the file or remove the key",
                         path, why.message);
    if (text_looks_utf16(data, len)) {
        free(data);
        return error_set(err, ERR_CONFIG,
                         "installer.installed_version_file %s is UTF-16 text; save it as UTF-8 (PowerShell: "
                         "Set-Content -Encoding UTF8)",
                         path);
    }
    char *line = first_line_trimmed(data);
    if (!version_is_valid(line, &why)) {
        rc = error_set(err, ERR_CONFIG, "installer.installed_version_file %s does not hold a valid version: %s", path,
                       why.message);
        free(data);
        return rc;
    }
    *version = text_dup(line);
    free(data);
    return *version ? ERR_OK : error_set(err, ERR_NOMEM, "out of memory");
}

static char *from_inventory(const char *product_name)
{
    if (!product_name || !product_name[0])
        return NULL;
    char *found = NULL;
    error_info why;
    error_clear(&why);
    if (platform_installed_version(product_name, &found, &why) != ERR_OK) {
        if (why.code != ERR_NOT_FOUND)
            log_warn("cannot read the installed version of \"%s\" from the system: %s", product_name, why.message);
        return NULL;
    }
    if (!version_is_valid(found, &why)) {
        log_warn("ignoring the installed version the system reports for \"%s\": %s", product_name, why.message);
        free(found);
        return NULL;
    }
    return found;
}

static char *from_state(state *s)
{
    if (!s)
        return NULL;
    const char *v = installer_state_deployed_version(s);
    if (!v || !version_is_valid(v, NULL))
        return NULL;
    return text_dup(v);
}

error_code installed_version_get(const config *cfg, state *s, char **version, const char **source, error_info *err)
{
    *version = NULL;
    if (source)
        *source = NULL;

    const char *fixed = cfg->installer.installed_version;
    if (fixed && fixed[0]) {
        error_info why;
        error_clear(&why);
        if (!version_is_valid(fixed, &why))
            return error_set(err, ERR_CONFIG, "installer.installed_version: %s", why.message);
        *version = text_dup(fixed);
        if (!*version)
            return error_set(err, ERR_NOMEM, "out of memory");
        if (source)
            *source = "config";
        return ERR_OK;
    }
    if (cfg->installer.installed_version_file && cfg->installer.installed_version_file[0]) {
        error_code rc = from_file(cfg->installer.installed_version_file, version, err);
        if (rc == ERR_OK && source)
            *source = "file";
        return rc;
    }
    *version = from_inventory(cfg->installer.product_name);
    if (*version) {
        if (source)
            *source = "registry";
        return ERR_OK;
    }
    *version = from_state(s);
    if (*version && source)
        *source = "state";
    return ERR_OK;
}
