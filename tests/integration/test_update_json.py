"""`check --json` and `update --json` print the same document whichever
source the installer came from (issue 22): the platform's API, or a fleet
mirror published from it. Before one builder (installer/update.c) made it,
the mirror's `update --json` lacked `signer` and `resumed_from`, and the
API's had no `source`.

One installer, published by `outpost publish` from the simulator into a
mirror directory read through file://, is updated once by an endpoint on the
API and once by an endpoint on the mirror.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirror_helper import endpoint_config, keygen, publisher_config
from outpost_config import UNSIGNED, write_config
from outpost_run import OUTPOST, check_staging, outpost
from schema_check import load_schema, validate
from sim import write_fake_installer

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")

INSTALLED = "26.01.03.24329"
OFFERED = "26.02.01.25000"


def mirror_endpoint(tmp_path: Path, sim) -> tuple[Path, Path]:
    """Publishes the simulator's installer into tmp_path/mirror and returns
    an endpoint configuration that reads it through file:// (no API key)."""
    key_file = tmp_path / "keys" / "mirror.key"
    key_file.parent.mkdir()
    public_pem, _ = keygen(key_file)
    mirror = tmp_path / "mirror"
    r = outpost(publisher_config(tmp_path / "publisher", sim, key_file, mirror), "publish")
    assert r.returncode == 0, r.stderr
    return endpoint_config(tmp_path / "on-mirror", "m-1", [mirror.as_uri()], [public_pem], installed=INSTALLED)


def json_run(cfg: Path, *args: str, key: str | None) -> dict:
    r = outpost(cfg, "--json", *args, key=key)
    assert r.returncode in (0, 10), r.stderr
    return json.loads(r.stdout)


def test_update_json_has_the_same_members_from_the_api_and_from_a_mirror(tmp_path, sim):
    installer = tmp_path / "SensorSetup.exe"
    write_fake_installer(str(installer), 5, 300 * 1024)
    sim.config(installer=str(installer), installer_version=OFFERED)
    (tmp_path / "publisher").mkdir()
    (tmp_path / "on-mirror").mkdir()
    (tmp_path / "on-api").mkdir()
    on_mirror, mirror_state = mirror_endpoint(tmp_path, sim)
    on_api, api_state = write_config(tmp_path / "on-api", sim.url,
                                     installer={"installed_version": INSTALLED, "verify": UNSIGNED},
                                     report={"enabled": False})

    checks = {"api": json_run(on_api, "check", key="sim-api-key"), "mirror": json_run(on_mirror, "check", key=None)}
    updates = {"api": json_run(on_api, "update", key="sim-api-key"), "mirror": json_run(on_mirror, "update", key=None)}
    again = {"api": json_run(on_api, "update", key="sim-api-key"), "mirror": json_run(on_mirror, "update", key=None)}

    for docs in (checks, updates, again):
        assert set(docs["api"]) == set(docs["mirror"]), docs
        assert docs["api"]["source"] == "api" and docs["api"]["mirror"] is None
        assert docs["mirror"]["source"] == "mirror" and docs["mirror"]["mirror"]["url"].startswith("file://")
        for name in ("installed_version", "latest_version", "update_available"):
            assert docs["api"][name] == docs["mirror"][name], name
    assert set(checks["api"]) == {"installed_version", "latest_version", "update_available", "checked_at", "source",
                                  "mirror"}
    assert checks["api"]["latest_version"] == OFFERED and checks["api"]["update_available"] is True

    # What was staged: the same object, with the same values but for where it lies.
    api, mirror = updates["api"], updates["mirror"]
    assert api["action"] == mirror["action"] == "staged"
    assert set(api["staged"]) == set(mirror["staged"]) == {
        "version", "path", "file_name", "sha256", "size", "staged_at", "signature", "version_binding", "signer",
        "verified_signature", "resumed_from"}
    for name in ("version", "file_name", "sha256", "size", "signature", "version_binding", "signer",
                 "verified_signature", "resumed_from"):
        assert api["staged"][name] == mirror["staged"][name], name
    assert api["staged"]["version"] == OFFERED and api["staged"]["resumed_from"] == 0
    schema = load_schema()
    for doc, state in ((api, api_state), (mirror, mirror_state)):
        errors = validate(doc["staged"], schema["$defs"]["staged"], schema)
        assert not errors, errors
        assert Path(doc["staged"]["path"]).parent == state / "staging" / OFFERED
        assert check_staging(state, killed=False) == [OFFERED]
        # The status file's staged object is the same object.
        status = json.loads((state / "status.json").read_text())
        assert status["installer"]["staged"] == {k: v for k, v in doc["staged"].items() if k != "resumed_from"}

    # A second update stages nothing: no staged object, from either source.
    assert again["api"]["action"] == again["mirror"]["action"] == "already_staged"
    assert again["api"]["staged"] is None and again["mirror"]["staged"] is None
