#!/bin/sh
# fuzz_unpack.seed.sh CORPUS_DIR — small zip and tar.gz seeds (a file in a
# directory, a symbolic link, a ".." name) for fuzz_unpack, made with
# Python's standard library so no binary seeds live in the repository.
set -eu
[ -f "$1/seed-ok.zip" ] && exit 0
/usr/bin/python3 - "$1" <<'PY'
import io, sys, tarfile, zipfile
out = sys.argv[1]
with zipfile.ZipFile(f"{out}/seed-ok.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("dir/", b"")
    z.writestr("dir/setup.exe", b"MZ" + b"\0" * 62)
with zipfile.ZipFile(f"{out}/seed-slip.zip", "w") as z:
    z.writestr("../evil.exe", b"MZ")
for name, mode in (("seed-ok.tar.gz", "w:gz"), ("seed-link.tar", "w")):
    with tarfile.open(f"{out}/{name}", mode) as t:
        data = b"MZ" + b"\0" * 100
        info = tarfile.TarInfo("setup.exe"); info.size = len(data)
        t.addfile(info, io.BytesIO(data))
        if "link" in name:
            link = tarfile.TarInfo("l"); link.type = tarfile.SYMTYPE; link.linkname = "/etc/passwd"
            t.addfile(link)
PY
