/*
 * feeds.h — the line feeds the report appends each incident to, once:
 * incidents.jsonl, and the OCSF and CEF files (PRODUCT.md section 5).
 */
#ifndef OUTPOST_FEEDS_H
#define OUTPOST_FEEDS_H

#include <stdbool.h>
#include <stddef.h>

/* The id of a JSON line written by the report, or false (malloc'd *id). */
bool report_line_id(const char *line, size_t len, char **id);

#endif
