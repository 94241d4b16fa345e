/*
 * cef.h — one incident as one ArcSight Common Event Format line, for
 * report.cef_file (PRODUCT.md section 5), escaped as the CEF specification
 * says: `\` and `|` in the header, `\`, `=` and line breaks (as \r, \n) in
 * extension values. Pure mapping: no I/O.
 */
#ifndef OUTPOST_CEF_H
#define OUTPOST_CEF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct cJSON;

/* The CEF line for item (the incidents.jsonl shape), without newline;
 * *line is malloc'd, the caller frees it. */
MUST_CHECK error_code cef_format(const struct cJSON *item, char **line, error_info *err);

/* The incident id (externalId) of a line cef_format wrote, malloc'd; false
 * when the line is not one. */
bool cef_line_id(const char *line, size_t len, char **id);

#endif
