/*
 * rollout.h — which endpoints a staged rollout reaches (PRODUCT.md section 8).
 *
 * An endpoint is eligible when the first 4 bytes of SHA-256(salt bytes ‖
 * machine id), read big-endian and divided by 2^32, are below percent / 100.
 * The salt is the bytes its hex spells; the machine id is its UTF-8 text
 * with surrounding white space trimmed. A fresh salt per version means a
 * different slice of the fleet goes first each time, while one machine's
 * answer stays the same for one version however often it asks.
 */
#ifndef OUTPOST_ROLLOUT_H
#define OUTPOST_ROLLOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/*
 * The 32-bit bucket of machine_id for salt_hex (lower- or upper-case hex, an
 * even number of digits, at most 64 bytes once decoded). ERR_REJECTED for a
 * malformed salt (it came from a manifest), ERR_CONFIG for an empty machine
 * id (after trimming).
 */
MUST_CHECK error_code rollout_bucket(const char *salt_hex, const char *machine_id, uint32_t *bucket, error_info *err);

/* Whether bucket falls inside percent (0..100, decimals allowed). */
bool rollout_bucket_eligible(uint32_t bucket, double percent);

/* rollout_bucket + rollout_bucket_eligible; *bucket may be NULL. */
MUST_CHECK error_code rollout_eligible(const char *salt_hex, const char *machine_id, double percent, bool *eligible,
                                       uint32_t *bucket, error_info *err);

/* Whether s is an even-length, non-empty string of hex digits of at most
 * max_bytes bytes once decoded. */
bool rollout_hex_is_valid(const char *s, size_t max_bytes);

#endif
