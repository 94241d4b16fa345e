"""The fleet mirror's keys, signatures and layouts for the tests (PRODUCT.md
sections 8 and 8.1), made and checked here independently of outpost with
Python's `cryptography` (OpenSSL underneath); keys themselves come from
`outpost keygen`.

    from mirror_helper import V1, V2, Keys, sign_envelope, verify_envelope, endpoint_config
    public_pem, key_id = keygen(tmp_path / "mirror.key")
    env = sign_envelope(payload_doc, [key_file])               # a manifest, signed by us
    assert verify_envelope(read_envelope(mirror), public_pem)  # outpost's, checked by us
    keys = Keys(tmp_path / "keys"); root = root_doc(keys, 2, expires, ["r1"], 1, ["m1"])
    cfg, state = endpoint_config(tmp_path, "a", [url], [public_pem])

An envelope is {"payload": base64, "signatures": [{"keyid", "sig"}]}; each
signature is ECDSA P-256 with SHA-256 over a context line and the payload
bytes (MANIFEST_CONTEXT for manifests, ROOT_CONTEXT for roots); a keyid is
the lowercase hex SHA-256 of the public key's DER (SubjectPublicKeyInfo).
The `published` fixture (conftest.py) is publish_mirror() against the
simulator.
"""
from __future__ import annotations

import base64
import hashlib
import json
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from outpost_config import UNSIGNED, write_config
from outpost_run import outpost
from sim import write_fake_installer

MANIFEST_CONTEXT = b"outpost-manifest-v1\n"
ROOT_CONTEXT = b"outpost-root-v1\n"
MAX_SEQ = 2**53 - 1
V1 = "26.01.03.24329"  # what the endpoints have installed
V2 = "26.02.01.25000"  # what the mirror offers


def iso(t: datetime) -> str:
    """A UTC time as the manifest and root write it."""
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- keys -------------------------------------------------------------------------------------


def keygen(path: Path) -> tuple[str, str]:
    """`outpost keygen -o path`: (public key PEM, key id)."""
    r = outpost(None, "--json", "keygen", "-o", path, key=None)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    return doc["public_key"], doc["key_id"]


def key_id(public_key) -> str:
    """The key id of a public key (a `cryptography` key or a PEM string)."""
    if isinstance(public_key, str):
        public_key = serialization.load_pem_public_key(public_key.encode())
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def private_key(path: Path):
    return serialization.load_pem_private_key(Path(path).read_bytes(), password=None)


class Keys:
    """Signing keys made with `outpost keygen`, by name (made on first use)."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)

    def file(self, name: str) -> Path:
        path = self.dir / f"{name}.key"
        if not path.exists():
            public_pem, _ = keygen(path)
            (self.dir / f"{name}.pub").write_text(public_pem)
        return path

    def pub(self, name: str) -> Path:
        self.file(name)
        return self.dir / f"{name}.pub"

    def entry(self, name: str) -> dict:
        """{"keyid", "public_key"}, as a root lists its keys."""
        public_pem = self.pub(name).read_text()
        return {"keyid": key_id(public_pem), "public_key": public_pem}

    def sign(self, doc: dict | bytes, context: bytes, signers: list[str]) -> dict:
        return sign_envelope(doc, [self.file(name) for name in signers], context)


# ---- envelopes --------------------------------------------------------------------------------


def sign_envelope(doc: dict | bytes, key_files: list[Path], context: bytes = MANIFEST_CONTEXT) -> dict:
    """An envelope made by `cryptography`, not by outpost: doc (compact JSON,
    or the payload bytes as given) signed by each key file in turn."""
    raw = doc if isinstance(doc, bytes) else json.dumps(doc, separators=(",", ":")).encode()
    signatures = []
    for path in key_files:
        key = private_key(path)
        sig = key.sign(context + raw, ec.ECDSA(hashes.SHA256()))
        signatures.append({"keyid": key_id(key.public_key()), "sig": base64.b64encode(sig).decode()})
    return {"payload": base64.b64encode(raw).decode(), "signatures": signatures}


def verify_envelope(env: dict, public_pem: str, context: bytes = MANIFEST_CONTEXT) -> bool:
    """Whether the signature by public_pem's key id verifies (checked with
    `cryptography`)."""
    key = serialization.load_pem_public_key(public_pem.encode())
    wanted = key_id(key)
    data = context + base64.b64decode(env["payload"])
    for sig in env["signatures"]:
        if sig["keyid"] != wanted:
            continue
        try:
            key.verify(base64.b64decode(sig["sig"]), data, ec.ECDSA(hashes.SHA256()))
            return True
        except Exception:  # noqa: BLE001 - InvalidSignature
            return False
    return False


def envelope_payload(env: dict) -> dict:
    return json.loads(base64.b64decode(env["payload"]))


def read_envelope(path: Path) -> dict:
    """The envelope in a file, or a mirror directory's manifest.json."""
    path = Path(path)
    return json.loads((path / "manifest.json" if path.is_dir() else path).read_text())


def manifest_payload(mirror: Path) -> dict:
    """The payload of the mirror directory's manifest.json (not verified)."""
    return envelope_payload(read_envelope(mirror))


def resign_manifest(mirror: Path, key_file: Path, **changes) -> None:
    """The mirror's manifest with changes, signed again by key_file (an attacker's or the publisher's)."""
    doc = manifest_payload(mirror)
    doc.update(changes)
    (Path(mirror) / "manifest.json").write_text(json.dumps(sign_envelope(doc, [key_file])))


# ---- roots (8.1) ------------------------------------------------------------------------------


def root_doc(keys: Keys, version: int, expires: datetime, root_keys: list[str], root_threshold: int,
             manifest_keys: list[str], manifest_threshold: int = 1) -> dict:
    """A root's payload (sign it with keys.sign(doc, ROOT_CONTEXT, signers))."""
    return {"schema": 1, "version": version, "expires_at": iso(expires),
            "root_keys": [keys.entry(k) for k in root_keys], "root_threshold": root_threshold,
            "manifest_keys": [keys.entry(k) for k in manifest_keys], "manifest_threshold": manifest_threshold}


def ceremony_root(keys: Keys, out: Path, *, root_keys, root_threshold, manifest_keys, signers, expires="365d"):
    """Root version 1 with the CLI (`root init`, `root sign`), as the README's ceremony makes it."""
    args = ["root", "init", "--root-threshold", root_threshold, "--expires", expires, "-o", out]
    for k in root_keys:
        args += ["--root-key", keys.pub(k)]
    for k in manifest_keys:
        args += ["--manifest-key", keys.pub(k)]
    return _ceremony(keys, args, out, signers)


def ceremony_next(keys: Keys, prev: Path, out: Path, *, signers, expires="365d", add_root=(), remove_root=(),
                  add_manifest=(), remove_manifest=(), root_threshold=None, manifest_threshold=None):
    """The next root version with the CLI (`root next`, `root sign`); keys removed by key id (or its prefix)."""
    args = ["root", "next", prev, "-o", out, "--expires", expires]
    args += sum((["--add-root-key", keys.pub(k)] for k in add_root), [])
    args += sum((["--remove-root-key", keys.entry(k)["keyid"]] for k in remove_root), [])
    args += sum((["--add-manifest-key", keys.pub(k)] for k in add_manifest), [])
    args += sum((["--remove-manifest-key", keys.entry(k)["keyid"][:16]] for k in remove_manifest), [])
    if root_threshold:
        args += ["--root-threshold", root_threshold]
    if manifest_threshold:
        args += ["--manifest-threshold", manifest_threshold]
    return _ceremony(keys, args, out, signers)


def _ceremony(keys: Keys, args: list, out: Path, signers) -> Path:
    """`outpost root init|next ...` writing out, then `root sign` by each signer in turn."""
    r = outpost(None, *args, key=None)
    assert r.returncode == 0, r.stderr
    for k in signers:
        r = outpost(None, "root", "sign", "-k", keys.file(k), out, key=None)
        assert r.returncode == 0, r.stderr
    return out


def kept_root_version(state: Path) -> int | None:
    """The version of the root the endpoint keeps in its state directory."""
    path = Path(state) / "mirror-root.json"
    if not path.exists():
        return None
    return envelope_payload(json.loads(path.read_text()))["version"]


class MirrorDir:
    """A mirror directory written by the test, not by `publish`:
    installers/, manifest.json, roots/."""

    def __init__(self, directory: Path, keys: Keys, installer: Path):
        self.dir = directory
        self.keys = keys
        (directory / "installers").mkdir(parents=True)
        (directory / "roots").mkdir()
        data = installer.read_bytes()
        self.sha256 = hashlib.sha256(data).hexdigest()
        self.length = len(data)
        shutil.copyfile(installer, directory / "installers" / f"{self.sha256}.exe")

    @property
    def url(self) -> str:
        return self.dir.as_uri() + "/"

    def manifest(self, seq, signers: list[str], version=V2, raw: bytes | None = None):
        """manifest.json offering the installer at seq, signed by the named keys (raw: these payload bytes)."""
        now = datetime.now(timezone.utc)
        doc = {"schema": 1, "seq": seq, "issued_at": iso(now - timedelta(minutes=1)),
               "expires_at": iso(now + timedelta(days=14)), "channel": "stable", "platform": "windows",
               "version": version, "file_name": "sensor.exe", "length": self.length, "sha256": self.sha256,
               "path": f"installers/{self.sha256}.exe", "signer": None,
               "rollout": {"percent": 100, "salt": "ab" * 32}, "allow_downgrade": False}
        body = raw if raw is not None else json.dumps(doc, separators=(",", ":")).encode()  # ints exact
        (self.dir / "manifest.json").write_text(json.dumps(self.keys.sign(body, MANIFEST_CONTEXT, signers)))

    def put_root(self, version: int, text: str):
        (self.dir / "roots" / f"{version}.root.json").write_text(text)
        (self.dir / "root.json").write_text(text)


# ---- configurations ---------------------------------------------------------------------------


def publisher_config(directory: Path, sim, key_file: Path, mirror_dir: Path, **sections) -> Path:
    """directory/publisher.json: `publish` from the simulator (unsigned
    installers) into mirror_dir, signed with key_file, state in
    directory/publisher-state; sections merged in (publish={...} adds to
    the publish section)."""
    defaults = {"installer": {"verify": UNSIGNED}, "report": {"enabled": False},
                "publish": {"dir": str(mirror_dir), "signing_key_file": str(key_file)}}
    return write_config(directory, sim.url, sim.ca_file, state=Path(directory) / "publisher-state",
                        name="publisher.json", defaults=defaults, **sections)[0]


def endpoint_config(directory: Path, name: str, urls: list[str], public_keys=(), *, root_file: Path | None = None,
                    installed: str = V1, **sections) -> tuple[Path, Path]:
    """directory/endpoint-<name>.json: an endpoint on the mirror(s) urls
    (no API, no report) with V1 installed, pinning public_keys and/or
    root_file, machine id machine-<name>; sections merged in (mirror={...}
    adds to the mirror section). Returns (its path, its state directory
    directory/endpoints/<name>)."""
    defaults = {"installer": {"installed_version": installed, "platform": "windows", "verify": UNSIGNED},
                "report": {"enabled": False},
                "mirror": {"urls": list(urls), "public_keys": list(public_keys), "machine_id": f"machine-{name}",
                           "root_file": str(root_file) if root_file else None}}
    return write_config(directory, None, None, state=Path(directory) / "endpoints" / name,
                        name=f"endpoint-{name}.json", defaults=defaults, **sections)


def fake_installer(directory: Path, seed: int, size: int = 200 * 1024) -> Path:
    """directory/installer-<seed>.exe: the simulator's deterministic unsigned PE-looking file."""
    path = Path(directory) / f"installer-{seed}.exe"
    write_fake_installer(str(path), seed, size)
    return path


# ---- a published mirror -----------------------------------------------------------------------


@dataclass
class Published:
    """A mirror directory `outpost publish` wrote from the simulator."""
    dir: Path          # the mirror directory (manifest.json, installers/)
    config: Path       # the publisher's configuration
    key_file: Path     # the mirror signing key (private)
    public_pem: str    # its public key
    key_id: str

    def envelope(self) -> dict:
        return read_envelope(self.dir)

    def payload(self) -> dict:
        """The manifest's payload as it is now (tests re-sign it)."""
        return manifest_payload(self.dir)


def publish_mirror(directory: Path, sim, *, seed: int = 1, size: int = 200 * 1024, version: str = V2) -> Published:
    """A fresh signing key (directory/keys/mirror.key), the simulator
    offering a fake installer (seed, size) as version, and `publish` into
    directory/mirror."""
    key_file = Path(directory) / "keys" / "mirror.key"
    key_file.parent.mkdir(parents=True, exist_ok=True)
    public_pem, kid = keygen(key_file)
    sim.config(installer=str(fake_installer(directory, seed, size)), installer_version=version)
    mirror = Path(directory) / "mirror"
    cfg = publisher_config(directory, sim, key_file, mirror)
    r = outpost(cfg, "publish")
    assert r.returncode == 0, r.stderr
    return Published(mirror, cfg, key_file, public_pem, kid)
