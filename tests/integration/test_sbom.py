"""Issue 32, the SBOM: each release artefact gets `<artefact>.cdx.json`
(scripts/sbom, from what cross/build-deps recorded when it fetched the Debian
source packages), CycloneDX JSON that the CycloneDX project's own validator
(tests/tools/cyclonedx-validate: @cyclonedx/cyclonedx-library, pinned, in a
cache outside the tree) accepts; a broken one it refuses. The release
artefacts present in out/release/ are validated too."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SBOM = ROOT / "scripts" / "sbom"
VALIDATE = ROOT / "tests" / "tools" / "cyclonedx-validate"

CURL = """package curl
version 8.14.1-2+deb13u5
release trixie
file curl_8.14.1-2+deb13u5.dsc 3263 9a9a2c95cdc8b5d76892c70858f25eaf2dc0b0a475a1e43e0b4ad428414752df http://deb.debian.org/debian/pool/main/c/curl/curl_8.14.1-2%2bdeb13u5.dsc
file curl_8.14.1.orig.tar.gz 4250332 6766ada7101d292b42b8b15681120acd68effa4a9660935853cf6d61f0d984d4 http://deb.debian.org/debian/pool/main/c/curl/curl_8.14.1.orig.tar.gz
upstream 8.14.1
licence curl
"""
ZLIB = """package zlib
version 1:1.3.dfsg+really1.3.1-1
release trixie
file zlib_1.3.dfsg+really1.3.1-1.dsc 2768 1111111111111111111111111111111111111111111111111111111111111111 http://deb.debian.org/debian/pool/main/z/zlib/zlib_1.3.dfsg%2breally1.3.1-1.dsc
upstream 1.3.1
licence Zlib
"""
CMOCKA = """package cmocka
version 1.1.5-2.1
release bookworm
file cmocka_1.1.5-2.1.dsc 2000 2222222222222222222222222222222222222222222222222222222222222222 http://deb.debian.org/debian/pool/main/c/cmocka/cmocka_1.1.5-2.1.dsc
upstream 1.1.5
licence Apache-2.0
"""


def validate(*files):
    r = subprocess.run([str(VALIDATE)] + [str(f) for f in files], capture_output=True, text=True, timeout=1200)
    if r.returncode == 2:
        if os.environ.get("CI") == "true":
            pytest.fail("the CycloneDX validator could not be installed: " + r.stderr)
        pytest.skip("the CycloneDX validator could not be installed (npm, network): " + r.stderr.strip())
    return r


@pytest.fixture
def sbom(tmp_path):
    prefix = tmp_path / "prefix"
    sources = prefix / "share" / "outpost-sources"
    sources.mkdir(parents=True)
    for name, text in (("curl", CURL), ("zlib", ZLIB), ("cmocka", CMOCKA)):
        (sources / f"{name}.source").write_text(text)
    artefact = tmp_path / "outpost"
    artefact.write_bytes(b"\x7fELF not really")
    r = subprocess.run([str(SBOM), str(prefix), str(artefact), "1.2.3", "linux-x86_64"], capture_output=True,
                       text=True, timeout=60, check=True)
    return json.loads(r.stdout)


def test_the_sbom_names_what_is_compiled_in_and_where_it_came_from(sbom):
    meta = sbom["metadata"]["component"]
    assert (meta["name"], meta["version"]) == ("outpost", "1.2.3")
    assert meta["hashes"][0]["alg"] == "SHA-256" and len(meta["hashes"][0]["content"]) == 64
    by_name = {c["name"]: c for c in sbom["components"]}
    assert set(by_name) == {"curl", "zlib"}  # cmocka only builds the tests
    curl = by_name["curl"]
    assert curl["version"] == "8.14.1"
    assert curl["purl"] == "pkg:deb/debian/curl@8.14.1-2%2Bdeb13u5?arch=source&distro=debian-13"
    assert curl["hashes"] == [{"alg": "SHA-256",
                               "content": "9a9a2c95cdc8b5d76892c70858f25eaf2dc0b0a475a1e43e0b4ad428414752df"}]
    assert curl["licenses"] == [{"expression": "curl"}]
    assert {"name": "debian:version", "value": "8.14.1-2+deb13u5"} in curl["properties"]
    assert "epoch=1" in by_name["zlib"]["purl"]


def test_the_validator_accepts_it_and_refuses_a_broken_one(sbom, tmp_path):
    good = tmp_path / "good.cdx.json"
    good.write_text(json.dumps(sbom))
    r = validate(good)
    assert r.returncode == 0, r.stdout + r.stderr
    broken = json.loads(json.dumps(sbom))
    broken["components"][0]["hashes"][0]["content"] = "not a hash"
    del broken["components"][1]["name"]
    bad = tmp_path / "broken.cdx.json"
    bad.write_text(json.dumps(broken))
    r = validate(bad)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "INVALID" in r.stdout


def test_the_release_artefacts_sboms_are_valid():
    found = sorted((ROOT / "out" / "release").glob("*/*.cdx.json"))
    if not found:
        pytest.skip("no release artefact built (scripts/release)")
    r = validate(*found)
    assert r.returncode == 0, r.stdout + r.stderr
