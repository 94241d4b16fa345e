/*
 * fuzz_fileversion.c — libFuzzer target for the version binding readers:
 * the PE version resource (pe_read_version) and the MSI ProductVersion
 * through the string pool (msi_read_product_version), on the same bytes.
 * Whatever the input, both must return, stay inside it and leave a
 * NUL-terminated printable text.
 */
#define _GNU_SOURCE /* fmemopen: this test program is Linux-only */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authenticode/msi.h"
#include "authenticode/pe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_printable(const char *text, size_t size)
{
    size_t n = strnlen(text, size);
    if (n == size)
        abort();
    for (size_t i = 0; i < n; i++)
        if (text[i] < 0x20 || text[i] > 0x7e)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return 0;
    pe_version v;
    if (pe_read_version(f, size, &v, NULL) == ERR_OK)
        check_printable(v.text, sizeof v.text);
    char text[MSI_VERSION_TEXT];
    if (msi_read_product_version(f, size, text, sizeof text, NULL) == ERR_OK)
        check_printable(text, sizeof text);
    fclose(f);
    return 0;
}
