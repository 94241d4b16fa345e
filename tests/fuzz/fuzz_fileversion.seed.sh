#!/bin/sh
# fuzz_fileversion.seed.sh CORPUS_DIR — seeds fuzz_fileversion with the
# signing fixtures' PE images and MSI packages ($OUTPOST_FUZZ_FIXTURES, made
# by scripts/fuzz), which carry version resources and ProductVersion
# properties. Idempotent; no seed is committed.
set -eu
corpus=$1
fx=${OUTPOST_FUZZ_FIXTURES:-}
[ -n "$fx" ] && [ -d "$fx" ] || exit 0
[ -f "$corpus/.seeded" ] && exit 0
for f in "$fx"/app*.exe "$fx"/app*.msi "$fx"/signed.exe "$fx"/signed.msi; do
    [ -f "$f" ] && cp "$f" "$corpus/seed-$(basename "$f")"
done
touch "$corpus/.seeded"
