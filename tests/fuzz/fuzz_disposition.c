/*
 * fuzz_disposition.c — libFuzzer target for the installer's file name from
 * Content-Disposition (disposition.h). The input is the header value. A
 * name that comes out must be one disposition_name_is_safe accepts: no
 * separators, no "..", no control characters, at most
 * DISPOSITION_NAME_MAX bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "installer/disposition.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *header = malloc(size + 1);
    if (!header)
        return 0;
    memcpy(header, data, size);
    header[size] = '\0';
    char *name = NULL;
    error_info err;
    error_code rc = disposition_file_name(header, &name, &err);
    if (rc == ERR_OK && name) {
        size_t len = strlen(name);
        if (len == 0 || len > DISPOSITION_NAME_MAX || strpbrk(name, "/\\:") || strcmp(name, "..") == 0 ||
            strcmp(name, ".") == 0)
            abort();
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
                abort();
        if (!disposition_name_is_safe(name, NULL))
            abort();
    } else if (rc != ERR_OK) {
        if (name || err.message[0] == '\0')
            abort();
    }
    free(name);
    free(header);
    return 0;
}
