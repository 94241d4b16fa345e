"""Version binding (PRODUCT.md 4.3): the version inside a signed installer
(PE version resource, MSI ProductVersion) must agree with the
X-Installer-Version it is offered under, so a storage host or mirror cannot
replay an old, genuinely signed installer under a new version number.

`update` against the simulator serving the fixtures of
tests/fixtures/make_signing_fixtures.sh: signed.exe / signed.msi state
26.01.03.24329 (the simulator's default version), replay-old.exe / .msi
state 26.01.02.100, signed-noversion.exe states nothing. Archives are
checked on the installer inside them (`stage`, offline).
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from outpost_config import write_config as write_outpost_config
from outpost_run import OUTPOST, one_error, outpost, staged_versions

# The signed fixtures come from the `fx` fixture (conftest.py), skipped without their tools.
pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN is not set (tests/CMakeLists.txt sets it)")

SIM_VERSION = "26.01.03.24329-0de7ab+"  # the simulator's default X-Installer-Version


def write_config(tmp_path: Path, base_url: str, fx: Path, **verify) -> tuple[Path, Path]:
    return write_outpost_config(tmp_path, base_url, installer={
        "installed_version": "26.01.02.1",
        "verify": {"require_signature": True, "trusted_ca_file": str(fx / "root.pem"), **verify}})


def binding(state: Path, version: str) -> dict:
    manifest = json.loads((state / "staging" / version / "manifest.json").read_text())
    return manifest["verification"]["version_binding"]


@pytest.mark.parametrize("name,version,source,file_version", [
    ("signed.exe", SIM_VERSION, "ProductVersion", "26.01.03.24329-0de7ab"),
    ("signed32.exe", "26.1.3.24329", "ProductVersion", "26.01.03.24329-0de7ab"),
    ("signed.msi", "26.1.3.24329", "msi ProductVersion", "26.1.3.24329"),
])
def test_matching_version_is_bound(sim_factory, tmp_path, fx, name, version, source, file_version):
    sim = sim_factory(installer=str(fx / name), installer_version=version, installer_name=f"Sensor{name[-4:]}")
    cfg, state = write_config(tmp_path, sim.url, fx)
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [version]
    assert binding(state, version) == {"status": "bound", "file_version": file_version, "source": source}
    status = json.loads((state / "status.json").read_text())
    assert status["installer"]["staged"]["version_binding"] == "bound"


@pytest.mark.parametrize("name,offered,states", [
    ("replay-old.exe", SIM_VERSION, "26.01.02.100"),
    ("replay-old.msi", "26.1.3.24329", "26.1.2.100"),
])
def test_replayed_old_installer_rejected(sim_factory, tmp_path, fx, name, offered, states):
    """A genuinely signed old installer served under the new version number:
    the signature is valid, the version inside is not the one offered."""
    sim = sim_factory(installer=str(fx / name), installer_version=offered, installer_name=f"Sensor{name[-4:]}")
    cfg, state = write_config(tmp_path, sim.url, fx)
    r = outpost(cfg, "update")
    assert r.returncode == 4, r.stderr
    line = one_error(r)
    assert states in line and offered in line, line
    assert "replaying an old installer" in line, line
    assert staged_versions(state) == []
    assert not (state / "staging" / "current").exists()


def test_no_version_resource_unbound_unless_required(sim_factory, tmp_path, fx):
    sim = sim_factory(installer=str(fx / "signed-noversion.exe"), installer_version=SIM_VERSION)
    (tmp_path / "a").mkdir()
    cfg, state = write_config(tmp_path / "a", sim.url, fx)
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    b = binding(state, SIM_VERSION)
    assert b["status"] == "unbound" and b["file_version"] is None and b["source"] is None
    assert "no version resource" in b["reason"]

    (tmp_path / "b").mkdir()
    cfg, state = write_config(tmp_path / "b", sim.url, fx, require_version_match=True)
    r = outpost(cfg, "update")
    assert r.returncode == 4, r.stderr
    line = one_error(r)
    assert "require_version_match" in line and "no version resource" in line, line
    assert staged_versions(state) == []


def test_installer_inside_an_archive_is_bound(tmp_path, fx):
    cfg, state = write_config(tmp_path, "https://unused.example.com", fx)
    good, old = tmp_path / "good.zip", tmp_path / "old.zip"
    for archive, name in ((good, "signed.exe"), (old, "replay-old.exe")):
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("README.txt", "read me")
            zf.write(fx / name, "bin/SensorSetup.exe")
    r = outpost(cfg, "stage", str(old), "--version", SIM_VERSION)
    assert r.returncode == 4, r.stderr
    assert "26.01.02.100" in one_error(r)
    assert staged_versions(state) == []
    r = outpost(cfg, "stage", str(good), "--version", SIM_VERSION)
    assert r.returncode == 0, r.stderr
    assert binding(state, SIM_VERSION)["status"] == "bound"
