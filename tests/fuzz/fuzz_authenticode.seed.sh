#!/bin/sh
# fuzz_authenticode.seed.sh CORPUS_DIR — seeds fuzz_authenticode from the
# signing fixtures ($OUTPOST_FUZZ_FIXTURES, made by scripts/fuzz): each
# PE/MSI file prefixed with 0x00 (whole-file mode) and each PKCS#7 blob
# prefixed with 0x01 (blob mode). Idempotent; no seed is committed.
set -eu
corpus=$1
fx=${OUTPOST_FUZZ_FIXTURES:-}
[ -n "$fx" ] && [ -d "$fx" ] || exit 0
[ -f "$corpus/.seeded" ] && exit 0
for f in "$fx"/*.exe "$fx"/*.msi; do
    [ -f "$f" ] || continue
    n=$(basename "$f")
    { printf '\000'; cat "$f"; } > "$corpus/seed-file-$n"
    if osslsigncode extract-signature -in "$f" -out "$corpus/.sig" >/dev/null 2>&1; then
        { printf '\001'; cat "$corpus/.sig"; } > "$corpus/seed-blob-$n"
        { printf '\007'; cat "$corpus/.sig"; } > "$corpus/seed-blob-policy-$n"
    fi
done
rm -f "$corpus/.sig"
touch "$corpus/.seeded"
