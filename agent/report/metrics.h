/*
 * metrics.h — the key figures of status.json in the Prometheus text format,
 * for the node_exporter / windows_exporter textfile collectors
 * (config report.metrics_file).
 *
 * The figures are read from the status document itself, so the metrics
 * never disagree with status.json; the one figure status.json does not
 * carry in a fixed place (429 answers seen) is passed in. The file is
 * replaced atomically: a collector never reads half of it.
 */
#ifndef OUTPOST_METRICS_H
#define OUTPOST_METRICS_H

#include <stdint.h>

#include "base/error.h"

struct cJSON;

/*
 * Renders the metrics of a status document (the whole status.json object).
 * responses_429: 429 answers seen by this run, or -1 to leave the metric
 * out. *text is malloc'd (free()), NUL-terminated.
 */
MUST_CHECK error_code metrics_render(const struct cJSON *status, int64_t responses_429, char **text, error_info *err);

/* Renders and writes path atomically (temporary file, then rename). */
MUST_CHECK error_code metrics_write(const char *path, const struct cJSON *status, int64_t responses_429,
                                    const char *readers_group, error_info *err);

#endif
