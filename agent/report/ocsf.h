/*
 * ocsf.h — one incident as one OCSF Data Security Finding (class_uid 2006)
 * of the pinned OCSF version, for report.ocsf_file (PRODUCT.md section 5;
 * the mapping is README's table). Pure mapping: no I/O.
 */
#ifndef OUTPOST_OCSF_H
#define OUTPOST_OCSF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct cJSON;

/* The OCSF version every line names in metadata.version. */
#define OCSF_VERSION "1.3.0"

/* The finding for item (the incidents.jsonl shape) as one JSON line;
 * *line is malloc'd, the caller frees it. */
MUST_CHECK error_code ocsf_format(const struct cJSON *item, char **line, error_info *err);

/* The incident id (finding_info.uid) of a line ocsf_format wrote, malloc'd;
 * false when the line is not one. */
bool ocsf_line_id(const char *line, size_t len, char **id);

#endif
