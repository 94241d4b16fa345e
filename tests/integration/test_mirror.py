"""The fleet mirror (issue 14, PRODUCT.md section 8): `keygen`, `publish`
against the simulator, and endpoints that check and update from the mirror
served by nginx on loopback (or read through file://) with the API
simulator stopped; every attack of the issue refused, nothing staged, and
the exit code section 8 gives.

Signatures are checked here independently of outpost with Python's
`cryptography` (OpenSSL underneath), and rollout buckets with hashlib.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nginx_helper import NGINX, _wait_port, free_port  # noqa: E402
from sim import write_fake_installer  # noqa: E402

from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

OUTPOST = os.environ.get("OUTPOST_BIN")
pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN is not set (tests/CMakeLists.txt sets it)")

V1 = "26.01.03.24329"
V2 = "26.02.01.25000"
V3 = "26.03.01.26000"
CONTEXT = b"outpost-manifest-v1\n"


# ---- helpers ------------------------------------------------------------------------------


def run(cfg: Path | None, *args, key: str | None = "sim-api-key", timeout=120, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTPOST_")}
    if key:
        env["OUTPOST_API_KEY"] = key
    argv = [OUTPOST] + (["-c", str(cfg)] if cfg else []) + list(args)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def error_lines(r: subprocess.CompletedProcess) -> list[str]:
    return [line for line in r.stderr.splitlines() if line.startswith("outpost:")]


def keygen(path: Path) -> tuple[str, str]:
    r = run(None, "--json", "keygen", "-o", str(path), key=None)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    return doc["public_key"], doc["key_id"]


def publisher_config(tmp_path: Path, sim_url: str, key_file: Path, mirror_dir: Path, **publish) -> Path:
    cfg = {
        "base_url": sim_url,
        "state_dir": str(tmp_path / "publisher-state"),
        "installer": {"verify": {"require_signature": False, "trusted_ca_file": None}},
        "report": {"enabled": False},
        "publish": {"dir": str(mirror_dir), "signing_key_file": str(key_file), **publish},
    }
    path = tmp_path / "publisher.json"
    path.write_text(json.dumps(cfg))
    return path


def endpoint_config(tmp_path: Path, name: str, urls: list[str], public_keys: list[str], installed=V1,
                    channel="stable", machine_id=None, platform="windows") -> tuple[Path, Path]:
    state = tmp_path / "endpoints" / name
    cfg = {
        "state_dir": str(state),
        "installer": {"installed_version": installed, "platform": platform,
                      "verify": {"require_signature": False, "trusted_ca_file": None}},
        "report": {"enabled": False},
        "mirror": {"urls": urls, "public_keys": public_keys, "channel": channel,
                   "machine_id": machine_id or f"machine-{name}"},
    }
    path = tmp_path / f"endpoint-{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cfg))
    return path, state


def envelope(mirror: Path) -> dict:
    return json.loads((mirror / "manifest.json").read_text())


def payload(mirror: Path) -> dict:
    return json.loads(base64.b64decode(envelope(mirror)["payload"]))


def verify_independently(env: dict, public_pem: str) -> bool:
    """ECDSA P-256/SHA-256 over CONTEXT + payload, checked with `cryptography`."""
    key = serialization.load_pem_public_key(public_pem.encode())
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    keyid = hashlib.sha256(der).hexdigest()
    data = CONTEXT + base64.b64decode(env["payload"])
    for sig in env["signatures"]:
        if sig["keyid"] != keyid:
            continue
        try:
            key.verify(base64.b64decode(sig["sig"]), data, ec.ECDSA(hashes.SHA256()))
            return True
        except Exception:  # noqa: BLE001 - InvalidSignature
            return False
    return False


def sign_payload(doc: dict, private_key_file: Path) -> dict:
    """An envelope made by `cryptography`, not by outpost, for the attacks."""
    key = serialization.load_pem_private_key(private_key_file.read_bytes(), password=None)
    pub = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    raw = json.dumps(doc, separators=(",", ":")).encode()
    sig = key.sign(CONTEXT + raw, ec.ECDSA(hashes.SHA256()))
    return {"payload": base64.b64encode(raw).decode(),
            "signatures": [{"keyid": hashlib.sha256(pub).hexdigest(), "sig": base64.b64encode(sig).decode()}]}


def iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def staged(state: Path) -> list[str]:
    root = state / "staging"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def fake_installer(tmp_path: Path, seed: int, size: int = 200 * 1024) -> Path:
    path = tmp_path / f"installer-{seed}.exe"
    write_fake_installer(str(path), seed, size)
    return path


@pytest.fixture
def published(tmp_path, sim):
    """A mirror published from the simulator: (mirror dir, publisher config, key file, public PEM)."""
    key_file = tmp_path / "keys" / "mirror.key"
    key_file.parent.mkdir()
    public_pem, _ = keygen(key_file)
    sim.config(installer=str(fake_installer(tmp_path, 1)), installer_version=V2)
    mirror = tmp_path / "mirror"
    cfg = publisher_config(tmp_path, sim.url, key_file, mirror)
    r = run(cfg, "publish")
    assert r.returncode == 0, r.stderr
    return mirror, cfg, key_file, public_pem


# ---- keygen -------------------------------------------------------------------------------


def test_keygen_writes_an_owner_only_key_and_never_overwrites(tmp_path):
    key_file = tmp_path / "mirror.key"
    r = run(None, "keygen", "-o", str(key_file), key=None)
    assert r.returncode == 0, r.stderr
    assert "-----BEGIN PUBLIC KEY-----" in r.stdout
    key_id = r.stdout.strip().splitlines()[-1].removeprefix("key id: ")
    assert (key_file.stat().st_mode & 0o777) == 0o600
    private = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    assert isinstance(private.curve, ec.SECP256R1)
    der = private.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert key_id == hashlib.sha256(der).hexdigest()

    before = key_file.read_bytes()
    r = run(None, "keygen", "-o", str(key_file), key=None)
    assert r.returncode != 0
    assert "already exists" in error_lines(r)[0]
    assert key_file.read_bytes() == before

    r = run(None, "--json", "keygen", "-o", str(tmp_path / "second.key"), key=None)
    doc = json.loads(r.stdout)
    assert set(doc) == {"key_file", "key_id", "public_key"} and doc["key_id"] != key_id


# ---- publish ------------------------------------------------------------------------------


def test_publish_writes_a_signed_content_addressed_mirror(tmp_path, sim, published):
    mirror, cfg, key_file, public_pem = published
    env = envelope(mirror)
    assert verify_independently(env, public_pem)
    doc = payload(mirror)
    installer = mirror / doc["path"]
    data = installer.read_bytes()
    assert doc["schema"] == 1 and doc["seq"] == 1
    assert doc["version"] == V2 and doc["channel"] == "stable" and doc["platform"] == "windows"
    assert doc["length"] == len(data) and doc["sha256"] == hashlib.sha256(data).hexdigest()
    assert doc["path"] == f"installers/{doc['sha256']}.exe"
    assert doc["signer"] is None and doc["allow_downgrade"] is False
    assert doc["rollout"]["percent"] == 100 and len(doc["rollout"]["salt"]) == 32
    issued = datetime.fromisoformat(doc["issued_at"].replace("Z", "+00:00"))
    expires = datetime.fromisoformat(doc["expires_at"].replace("Z", "+00:00"))
    assert expires - issued == timedelta(days=14)
    assert abs((issued - datetime.now(timezone.utc)).total_seconds()) < 120
    assert (mirror / "manifest.json").stat().st_mode & 0o044 == 0o044  # a web server can read it
    assert sorted(p.name for p in mirror.iterdir()) == ["installers", "manifest.json"]

    # Nothing new: re-signed with the next seq, same installer, same salt, fresh expiry.
    r = run(cfg, "--json", "publish", "--rollout", "12.5")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["seq"] == 2 and out["new_installer"] is False
    again = payload(mirror)
    assert again["seq"] == 2 and again["sha256"] == doc["sha256"]
    assert again["rollout"] == {"percent": 12.5, "salt": doc["rollout"]["salt"]}
    assert verify_independently(envelope(mirror), public_pem)


def test_publish_new_versions_fresh_salt_and_pruning(tmp_path, sim, published):
    mirror, cfg, key_file, public_pem = published
    first = payload(mirror)
    salts = {first["rollout"]["salt"]}
    names = [Path(first["path"]).name]
    for seed, version in ((2, V3), (3, "26.04.01.1"), (4, "26.05.01.1")):
        sim.config(installer=str(fake_installer(tmp_path, seed)), installer_version=version)
        r = run(cfg, "publish")
        assert r.returncode == 0, r.stderr
        doc = payload(mirror)
        assert doc["version"] == version
        salts.add(doc["rollout"]["salt"])
        names.append(Path(doc["path"]).name)
    assert len(salts) == 4                                 # a fresh salt per version
    assert payload(mirror)["seq"] == 4
    kept = sorted(p.name for p in (mirror / "installers").iterdir())
    assert kept == sorted(names[-3:])                      # keep_installers: 3


def test_publish_refuses_a_readable_signing_key(tmp_path, sim):
    key_file = tmp_path / "mirror.key"
    keygen(key_file)
    key_file.chmod(0o640)
    cfg = publisher_config(tmp_path, sim.url, key_file, tmp_path / "mirror")
    r = run(cfg, "publish")
    assert r.returncode == 2
    line = error_lines(r)[0]
    assert "signing key file" in line and "chmod 600" in line and "API key" not in line
    assert not (tmp_path / "mirror").exists()
    assert sim.log()["requests"] == []                     # refused before calling the API


def test_publish_without_key_or_dir_is_a_configuration_error(tmp_path, sim):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"base_url": sim.url, "state_dir": str(tmp_path / "s"),
                               "publish": {"dir": str(tmp_path / "m")}}))
    r = run(cfg, "publish")
    assert r.returncode == 2 and "publish.signing_key_file" in error_lines(r)[0]
    cfg.write_text(json.dumps({"base_url": sim.url, "state_dir": str(tmp_path / "s"),
                               "publish": {"signing_key_file": str(tmp_path / "none.key")}}))
    r = run(cfg, "publish")
    assert r.returncode == 2 and "publish.dir" in error_lines(r)[0]
