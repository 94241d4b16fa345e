"""The Authenticode test material: the signed PE and MSI files and the test
PKI tests/fixtures/make_signing_fixtures.sh makes (the `fx` fixture of
conftest.py holds them), the tools it needs, and the probe that judges a
file as outpost's authenticode module does (tests/fixtures/authenticode_probe.c,
OUTPOST_AUTHENTICODE_PROBE).

    from authenticode_fixtures import PROBE, needs_signing_tools, probe, tiny_pe
    pytestmark = needs_signing_tools              # a whole file
    path.write_bytes(tiny_pe(3))                  # an unsigned PE no tool had to make
    got = probe(fx / "signed.exe", fx / "root.pem", now=now)  # {"verdict": "valid", ...}

Signed files are judged at a fixed time (the probe's --now, the fixtures'
now.txt), never at the test's "now".
"""
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "make_signing_fixtures.sh"
TOOLS = ["openssl", "osslsigncode", "x86_64-w64-mingw32-gcc", "i686-w64-mingw32-gcc", "x86_64-w64-mingw32-windres",
         "i686-w64-mingw32-windres", "wixl"]
MISSING_TOOLS = [tool for tool in TOOLS if shutil.which(tool) is None]
PROBE = os.environ.get("OUTPOST_AUTHENTICODE_PROBE")

needs_signing_tools = pytest.mark.skipif(bool(MISSING_TOOLS),
                                         reason="signing fixture tools missing: " + ", ".join(MISSING_TOOLS))


def make_signing_fixtures(out: Path) -> Path:
    """Runs the script into out (it skips what is already there); returns out."""
    subprocess.run(["sh", str(SCRIPT), str(out)], check=True, timeout=300)
    return out


def probe(path: Path, ca: Path, *, ts_ca: Path | None = None, now: int | None = None, subject: str | None = None,
          allow_sha1: bool = False, pins=(), crls=(), exits=(0, 1)) -> dict:
    """The probe's judgement of the file at path (its JSON line) with ca as
    trusted_ca_file (and ts_ca as timestamp_ca_file), at the Unix time now
    (the probe's clock without it), with the other policy settings; asserts
    the probe exited with one of exits (1: the file was rejected)."""
    cmd = [PROBE, "--ca", str(ca)]
    if now is not None:
        cmd += ["--now", str(now)]
    for pin in pins:
        cmd += ["--pin", pin]
    for crl in crls:
        cmd += ["--crl", str(crl)]
    if ts_ca:
        cmd += ["--ts-ca", str(ts_ca)]
    if subject is not None:
        cmd += ["--subject", subject]
    if allow_sha1:
        cmd.append("--allow-sha1")
    r = subprocess.run(cmd + [str(path)], capture_output=True, encoding="utf-8", errors="replace", timeout=120)
    assert r.returncode in exits, r.stdout + r.stderr
    return json.loads(r.stdout)


def tiny_pe(tag: int = 0) -> bytes:
    """A minimal unsigned PE: MZ header, e_lfanew -> PE\\0\\0; tag, its last byte, makes it one of 256."""
    b = bytearray(1024)
    b[0:2] = b"MZ"
    struct.pack_into("<I", b, 0x3C, 0x80)
    b[0x80:0x84] = b"PE\0\0"
    b[-1] = tag
    return bytes(b)
