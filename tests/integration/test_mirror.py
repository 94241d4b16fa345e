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
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mirror_helper import (V1, V2, endpoint_config, fake_installer, iso, keygen, manifest_payload, publisher_config,
                           read_envelope, resign_manifest, sign_envelope, verify_envelope)
from nginx_helper import start_nginx
from outpost_run import OUTPOST, error_lines, outpost, staged_versions
from servers import free_port, stop_process
from sim import make_certificates

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN is not set (tests/CMakeLists.txt sets it)")

V3 = "26.03.01.26000"


# ---- keygen -------------------------------------------------------------------------------


def test_keygen_writes_an_owner_only_key_and_never_overwrites(tmp_path):
    key_file = tmp_path / "mirror.key"
    r = outpost(None, "keygen", "-o", str(key_file), key=None)
    assert r.returncode == 0, r.stderr
    assert "-----BEGIN PUBLIC KEY-----" in r.stdout
    key_id = r.stdout.strip().splitlines()[-1].removeprefix("key id: ")
    assert (key_file.stat().st_mode & 0o777) == 0o600
    private = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    assert isinstance(private.curve, ec.SECP256R1)
    der = private.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert key_id == hashlib.sha256(der).hexdigest()

    before = key_file.read_bytes()
    r = outpost(None, "keygen", "-o", str(key_file), key=None)
    assert r.returncode != 0
    assert "already exists" in error_lines(r)[0]
    assert key_file.read_bytes() == before

    r = outpost(None, "--json", "keygen", "-o", str(tmp_path / "second.key"), key=None)
    doc = json.loads(r.stdout)
    assert set(doc) == {"key_file", "key_id", "public_key"} and doc["key_id"] != key_id


# ---- publish ------------------------------------------------------------------------------


def test_publish_writes_a_signed_content_addressed_mirror(tmp_path, sim, published):
    mirror, cfg, public_pem = published.dir, published.config, published.public_pem
    env = read_envelope(mirror)
    assert verify_envelope(env, public_pem)
    doc = manifest_payload(mirror)
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
    r = outpost(cfg, "--json", "publish", "--rollout", "12.5")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["seq"] == 2 and out["new_installer"] is False
    again = manifest_payload(mirror)
    assert again["seq"] == 2 and again["sha256"] == doc["sha256"]
    assert again["rollout"] == {"percent": 12.5, "salt": doc["rollout"]["salt"]}
    assert verify_envelope(read_envelope(mirror), public_pem)


def test_publish_new_versions_fresh_salt_and_pruning(tmp_path, sim, published):
    mirror, cfg = published.dir, published.config
    first = manifest_payload(mirror)
    salts = {first["rollout"]["salt"]}
    names = [Path(first["path"]).name]
    for seed, version in ((2, V3), (3, "26.04.01.1"), (4, "26.05.01.1")):
        sim.config(installer=str(fake_installer(tmp_path, seed)), installer_version=version)
        r = outpost(cfg, "publish")
        assert r.returncode == 0, r.stderr
        doc = manifest_payload(mirror)
        assert doc["version"] == version
        salts.add(doc["rollout"]["salt"])
        names.append(Path(doc["path"]).name)
    assert len(salts) == 4                                 # a fresh salt per version
    assert manifest_payload(mirror)["seq"] == 4
    kept = sorted(p.name for p in (mirror / "installers").iterdir())
    assert kept == sorted(names[-3:])                      # keep_installers: 3


def test_publish_refuses_a_readable_signing_key(tmp_path, sim):
    key_file = tmp_path / "mirror.key"
    keygen(key_file)
    key_file.chmod(0o640)
    cfg = publisher_config(tmp_path, sim, key_file, tmp_path / "mirror")
    r = outpost(cfg, "publish")
    assert r.returncode == 2
    line = error_lines(r)[0]
    assert "signing key file" in line and "chmod 600" in line and "API key" not in line
    assert not (tmp_path / "mirror").exists()
    assert sim.log()["requests"] == []                     # refused before calling the API


def test_publish_without_key_or_dir_is_a_configuration_error(tmp_path, sim):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"base_url": sim.url, "state_dir": str(tmp_path / "s"),
                               "publish": {"dir": str(tmp_path / "m")}}))
    r = outpost(cfg, "publish")
    assert r.returncode == 2 and "publish.signing_key_file" in error_lines(r)[0]
    cfg.write_text(json.dumps({"base_url": sim.url, "state_dir": str(tmp_path / "s"),
                               "publish": {"signing_key_file": str(tmp_path / "none.key")}}))
    r = outpost(cfg, "publish")
    assert r.returncode == 2 and "publish.dir" in error_lines(r)[0]


# ---- the endpoint side: nginx serving the mirror ----------------------------------------------

# The http block's body (nginx_helper.HEAD opens it).
MIRROR_NGINX = """
    log_format mirror escape=json '{{"path":"$uri","status":$status,"bytes":$body_bytes_sent,'
                                  '"inm":"$http_if_none_match","ims":"$http_if_modified_since",'
                                  '"curve":"$ssl_curve","cipher":"$ssl_cipher","reused":"$ssl_session_reused",'
                                  '"protocol":"$ssl_protocol"}}';
    access_log {dir}/access.log mirror;
    types {{ application/json json; application/octet-stream exe msi; }}
    server {{
        listen 127.0.0.1:{port}{ssl};
        {certs}
        root {root};
        location = /fleet/manifest.json {{
            alias {root}/manifest.json;
            add_header Cache-Control "no-cache";
        }}
        location /fleet/installers/ {{
            alias {root}/installers/;
            add_header Cache-Control "public, max-age=31536000, immutable";
        }}
        location = /html/manifest.json {{
            default_type text/html;
            return 200 '<html><body>Welcome to nginx!</body></html>';
        }}
    }}
}}
"""


def cpu_flags() -> set:
    """The CPU's feature flags as Linux lists them (x86: "aes", "pclmulqdq"); empty elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


class MirrorServer:
    """nginx on loopback serving a mirror directory under /fleet/ (the README's example)."""

    def __init__(self, root: Path, work: Path, tls: bool = False):
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.ca_file = None
        ssl, certs = "", ""
        if tls:
            paths = make_certificates(str(work / "certs"))
            self.ca_file = paths["ca.pem"]
            ssl = " ssl"
            certs = f"ssl_certificate {paths['server.pem']}; ssl_certificate_key {paths['server.key']}; ssl_protocols TLSv1.2 TLSv1.3;"
        self.process = start_nginx(str(work), MIRROR_NGINX.format(dir=work, port=self.port, root=root, ssl=ssl,
                                                                  certs=certs),
                                   [("127.0.0.1", self.port)])
        self.url = f"{'https://localhost' if tls else 'http://127.0.0.1'}:{self.port}/fleet/"

    def log(self) -> list[dict]:
        path = self.work / "access.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def clear_log(self) -> None:
        (self.work / "access.log").write_text("")
        self.process.send_signal(1)  # SIGHUP: reopen the log
        time.sleep(0.2)

    def stop(self) -> None:
        stop_process(self.process)


def test_tls_session_is_resumed_by_the_next_run_under_the_same_trust(tmp_path, sim, published):
    """A `check` over HTTPS spends most of its CPU on the full handshake's public-key work; the
    release builds (libcurl over outpost's mbedTLS) keep the TLS session in the state directory,
    owner-only, and the next run resumes it (nginx's $ssl_session_reused). Only under the same
    trust: another CA file (here the same CA with one more byte) gets a full, verified handshake.
    The Debian build (libcurl over OpenSSL) keeps nothing."""
    mirror, public_pem = published.dir, published.public_pem
    sim.stop()
    server = MirrorServer(mirror, tmp_path / "nginx-tls", tls=True)
    try:
        cfg, state = endpoint_config(tmp_path, "resume", [server.url], [public_pem], tls={"ca_file": server.ca_file})
        assert outpost(cfg, "check", key=None).returncode == 10  # an update is available
        kept = state / "tls-session"
        if b"mbedTLS/" not in Path(OUTPOST).read_bytes():  # libcurl (shared) over another TLS library
            assert not kept.exists()
            assert outpost(cfg, "check", key=None).returncode == 10  # an update is available
            assert {e["reused"] for e in server.log()} == {"."}
            return
        assert kept.stat().st_mode & 0o077 == 0
        # Not clear_log: nginx's reload on SIGHUP makes new ticket keys.
        seen = len(server.log())
        r = outpost(cfg, "check", key=None)
        assert r.returncode == 10, r.stderr
        assert [e["reused"] for e in server.log()[seen:]] == ["r"]

        other_ca = tmp_path / "same-ca-other-bytes.pem"
        other_ca.write_bytes(Path(server.ca_file).read_bytes() + b"\n")
        data = json.loads(cfg.read_text())
        data["tls"]["ca_file"] = str(other_ca)
        cfg.write_text(json.dumps(data))
        seen = len(server.log())
        assert outpost(cfg, "check", key=None).returncode == 10
        assert [e["reused"] for e in server.log()[seen:]] == ["."]
        seen = len(server.log())
        assert outpost(cfg, "check", key=None).returncode == 10  # kept under the new trust
        assert [e["reused"] for e in server.log()[seen:]] == ["r"]
    finally:
        server.stop()


@pytest.fixture
def fleet(tmp_path, sim, published):
    """The published mirror served by nginx, with the API simulator stopped:
    (server, mirror dir, signing key file, public PEM)."""
    sim.stop()
    server = MirrorServer(published.dir, tmp_path / "nginx")
    yield server, published.dir, published.key_file, published.public_pem
    server.stop()


def test_endpoint_checks_and_updates_from_nginx_without_the_api(tmp_path, sim, fleet):
    server, mirror, key_file, public_pem = fleet
    cfg, state = endpoint_config(tmp_path, "a", [server.url], [public_pem])
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 10, r.stderr
    assert r.stdout.strip() == f"update available: {V1} -> {V2}"
    first = server.log()
    assert [e["path"] for e in first] == ["/fleet/manifest.json"] and first[0]["status"] == 200

    # The second check asks conditionally and gets a 304.
    server.clear_log()
    r = outpost(cfg, "--json", "check", key=None)
    assert r.returncode == 10, r.stderr
    doc = json.loads(r.stdout)
    assert doc["source"] == "mirror" and doc["mirror"]["not_modified"] is True and doc["mirror"]["seq"] == 1
    second = server.log()
    assert [(e["path"], e["status"]) for e in second] == [("/fleet/manifest.json", 304)]
    assert second[0]["inm"] or second[0]["ims"]

    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    pay = manifest_payload(mirror)
    manifest = json.loads((state / "staging" / V2 / "manifest.json").read_text())
    assert manifest["sha256"] == pay["sha256"] and manifest["size"] == pay["length"]
    assert manifest["source_url"] == server.url + pay["path"]
    status = json.loads((state / "status.json").read_text())
    inst = status["installer"]
    assert inst["source"] == "mirror"
    assert inst["mirror"]["url"] == server.url + "manifest.json"
    assert inst["mirror"]["seq"] == 1 and inst["mirror"]["eligible"] is True
    assert inst["mirror"]["rollout_percent"] == 100 and inst["mirror"]["expires_at"] == pay["expires_at"]
    assert not any(e["path"].startswith("/v2/") for e in server.log())


def test_file_url_mirror_and_fallback_to_the_next_url(tmp_path, sim, fleet):
    server, mirror, key_file, public_pem = fleet
    dead = f"http://127.0.0.1:{free_port()}/fleet/"
    cfg, state = endpoint_config(tmp_path, "b", [dead, mirror.as_uri()], [public_pem])
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    assert "trying the next mirror" in r.stderr

    # No mirror readable: down is a temporary failure, exit 75 ...
    cfg, state = endpoint_config(tmp_path, "c", [dead], [public_pem])
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 75, r.stderr
    line = [l for l in error_lines(r) if "warning:" not in l][0]
    assert "no mirror in `mirror.urls` could be read: try again later" in line, line
    # ... a missing share (as a 404) is a URL to fix, exit 1 naming the key (PRODUCT.md section 1).
    cfg, state = endpoint_config(tmp_path, "d", [dead, (tmp_path / "no-such-share").as_uri()], [public_pem])
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 1, r.stderr
    line = [l for l in error_lines(r) if "warning:" not in l][0]
    assert "no-such-share" in line and "check the URLs in `mirror.urls`" in line, line


def test_rollout_follows_the_hash_of_salt_and_machine_id(tmp_path, sim, fleet):
    server, mirror, key_file, public_pem = fleet
    salt = manifest_payload(mirror)["rollout"]["salt"]
    # Re-sign with 30% (an unchanged installer keeps its salt), then pick machines on either side.
    doc = manifest_payload(mirror)
    doc["rollout"]["percent"] = 30
    doc["seq"] = 2
    (mirror / "manifest.json").write_text(json.dumps(sign_envelope(doc, [key_file])))

    def bucket(machine: str) -> float:
        h = hashlib.sha256(bytes.fromhex(salt) + machine.strip().encode()).digest()
        return int.from_bytes(h[:4], "big") / 2**32

    machines = [f"host-{i}" for i in range(40)]
    inside = next(m for m in machines if bucket(m) < 0.30)
    outside = next(m for m in machines if bucket(m) >= 0.30)
    cfg_in, state_in = endpoint_config(tmp_path, "in", [server.url], [public_pem],
                                        mirror={"machine_id": f"  {inside}\n"})
    cfg_out, state_out = endpoint_config(tmp_path, "out", [server.url], [public_pem],
                                          mirror={"machine_id": outside})
    r = outpost(cfg_in, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state_in) == [V2]
    r = outpost(cfg_out, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert "not in its rollout" in r.stdout
    assert staged_versions(state_out) == []
    status = json.loads((state_out / "status.json").read_text())
    assert status["installer"]["mirror"]["eligible"] is False
    assert status["installer"]["mirror"]["rollout_percent"] == 30
    r = outpost(cfg_out, "check", key=None)
    # Nothing to do on this machine yet: 0 (a publish at --rollout 0 made
    # every endpoint's check exit 10 for a version none of them stages).
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"not in this rollout: {V2} is offered to 30% of machines"), r.stdout


# ---- attacks: nothing staged, the exit code of section 8, one line naming the mirror --------------


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def attack_expired(ctx):
    resign_manifest(ctx["mirror"], ctx["key_file"], seq=2, issued_at=iso(_now() - timedelta(days=15)),
            expires_at=iso(_now() - timedelta(hours=1)))
    return 75, "re-run publish on the publishing host"


def attack_future(ctx):
    resign_manifest(ctx["mirror"], ctx["key_file"], seq=2, issued_at=iso(_now() + timedelta(hours=1)),
            expires_at=iso(_now() + timedelta(days=14)))
    return 75, "in the future"


def attack_older_seq_replayed(ctx):
    original = (ctx["mirror"] / "manifest.json").read_text()
    resign_manifest(ctx["mirror"], ctx["key_file"], seq=5)
    r = outpost(ctx["cfg"], "check", key=None)         # the endpoint sees seq 5 ...
    assert r.returncode == 10, r.stderr
    (ctx["mirror"] / "manifest.json").write_text(original)  # ... then the mirror serves seq 1 again
    return 75, "mirror serving an old copy"


def attack_same_seq_other_bytes(ctx):
    r = outpost(ctx["cfg"], "check", key=None)         # seq 1 seen
    assert r.returncode == 10, r.stderr
    resign_manifest(ctx["mirror"], ctx["key_file"], allow_downgrade=True)  # another seq 1
    return 4, "seen before with other contents"


def attack_payload_edited(ctx):
    env = read_envelope(ctx["mirror"])
    doc = manifest_payload(ctx["mirror"])
    doc["length"] += 1
    env["payload"] = base64.b64encode(json.dumps(doc, separators=(",", ":")).encode()).decode()
    (ctx["mirror"] / "manifest.json").write_text(json.dumps(env))
    return 4, "signature does not verify"


def attack_unknown_key(ctx):
    stranger = ctx["tmp_path"] / "stranger.key"
    keygen(stranger)
    resign_manifest(ctx["mirror"], stranger, seq=2)
    return 4, "not signed by any key in `mirror.public_keys`"


def attack_wrong_channel(ctx):
    resign_manifest(ctx["mirror"], ctx["key_file"], seq=2, channel="beta")
    return 4, "channel \"beta\""


def _installer(ctx) -> Path:
    return ctx["mirror"] / manifest_payload(ctx["mirror"])["path"]


def attack_installer_swapped(ctx):
    path = _installer(ctx)
    size = path.stat().st_size
    other = fake_installer(ctx["tmp_path"], 99, size)
    shutil.copyfile(other, path)
    return 4, "SHA-256"


def attack_oversized(ctx):
    with open(_installer(ctx), "ab") as f:
        f.write(b"\0" * 4096)
    return 4, "longer than"


def attack_truncated(ctx):
    path = _installer(ctx)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return 4, "truncated"


def attack_html_with_200(ctx):
    html = ctx["server"].url.replace("/fleet/", "/html/")
    cfg, state = endpoint_config(ctx["tmp_path"], "html", [html], [ctx["public_pem"]])
    ctx["cfg"], ctx["state"] = cfg, state
    # An error page is a transport failure, not tampering (issue 26): 75, naming what came back.
    return 75, "not a signed manifest"


def attack_older_genuine_installer_under_the_new_name(ctx):
    # A genuine earlier installer (what V1's publish wrote), renamed to the new hash.
    older = fake_installer(ctx["tmp_path"], 0, 180 * 1024)
    shutil.copyfile(older, _installer(ctx))
    return 4, "its manifest says"


def attack_rotated_key(ctx):
    new_key = ctx["tmp_path"] / "new.key"
    new_pem, _ = keygen(new_key)
    resign_manifest(ctx["mirror"], new_key, seq=2)         # the publisher rotated; this endpoint pins the old key only
    ctx["new_pem"] = new_pem
    return 4, "if the publisher rotated its key, add the new public key"


ATTACKS = [attack_expired, attack_future, attack_older_seq_replayed, attack_same_seq_other_bytes,
           attack_payload_edited, attack_unknown_key, attack_wrong_channel, attack_installer_swapped,
           attack_oversized, attack_truncated, attack_html_with_200,
           attack_older_genuine_installer_under_the_new_name, attack_rotated_key]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda f: f.__name__.removeprefix("attack_"))
def test_attack_is_refused(tmp_path, sim, fleet, attack):
    server, mirror, key_file, public_pem = fleet
    cfg, state = endpoint_config(tmp_path, "victim", [server.url], [public_pem])
    ctx = {"tmp_path": tmp_path, "server": server, "mirror": mirror, "key_file": key_file,
           "public_pem": public_pem, "cfg": cfg, "state": state}
    code, says = attack(ctx)
    if attack not in (attack_older_seq_replayed, attack_same_seq_other_bytes):
        # `mirror verify` judges the mirror as the endpoint is about to (no seq seen: the replays
        # need one), exits with the same code, names the same reason, and stages nothing.
        url = json.loads(ctx["cfg"].read_text())["mirror"]["urls"][0]
        r = outpost(ctx["cfg"], "--json", "mirror", "verify", url, key=None)
        assert r.returncode == code, r.stdout + r.stderr
        doc = json.loads(r.stdout)
        assert doc["exit"] == code and not doc["judgements"][-1]["ok"], doc
        assert says in doc["judgements"][-1]["message"], doc
        assert staged_versions(ctx["state"]) == []
    r = outpost(ctx["cfg"], "update", key=None)
    assert r.returncode == code, r.stderr
    lines = error_lines(r)
    assert len(lines) == 1, r.stderr
    assert "mirror" in lines[0] and "127.0.0.1" in lines[0] and says in lines[0], lines[0]
    assert staged_versions(ctx["state"]) == []
    assert not list((ctx["state"] / "downloads").glob("*")) if (ctx["state"] / "downloads").is_dir() else True
    status = json.loads((ctx["state"] / "status.json").read_text())
    assert status["installer"]["source"] == "mirror"
    assert status["installer"]["mirror"]["refused"] or status["installer"]["mirror"].get("error")
    if attack is attack_expired:
        assert status["installer"]["mirror"]["stale_since"] == manifest_payload(mirror)["expires_at"]
    if attack is attack_rotated_key:
        # Pinning both keys (the rotation procedure) accepts the new signature.
        cfg2, state2 = endpoint_config(tmp_path, "rotated", [server.url], [public_pem, ctx["new_pem"]])
        r = outpost(cfg2, "update", key=None)
        assert r.returncode == 0, r.stderr
        assert staged_versions(state2) == [V2]


def test_run_updates_from_the_mirror_without_a_key(tmp_path, sim, fleet):
    server, mirror, key_file, public_pem = fleet
    cfg, state = endpoint_config(tmp_path, "runner", [server.url], [public_pem])
    r = outpost(cfg, "run", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    status = json.loads((state / "status.json").read_text())
    assert status["installer"]["source"] == "mirror" and status["installer"]["mirror"]["seq"] == 1


def test_https_mirror_is_verified_against_tls_ca_file(tmp_path, sim, published):
    """The README's nginx example is an https server: the endpoint reads it through TLS, checked
    against tls.ca_file, and refuses it without (a TLS error is not fixed by retrying: exit 1
    after trying every URL, naming `mirror.urls`, PRODUCT.md section 1)."""
    mirror, public_pem = published.dir, published.public_pem
    sim.stop()
    server = MirrorServer(mirror, tmp_path / "nginx-tls", tls=True)
    try:
        assert server.url.startswith("https://localhost:")
        cfg, state = endpoint_config(tmp_path, "tls", [server.url], [public_pem], tls={"ca_file": server.ca_file})
        r = outpost(cfg, "update", key=None)
        assert r.returncode == 0, r.stderr
        assert staged_versions(state) == [V2]
        installer = "/fleet/" + manifest_payload(mirror)["path"]
        assert [e["path"] for e in server.log()] == ["/fleet/manifest.json", installer]
        # TLS 1.3: every build's TLS library has it (the release builds' Mbed TLS 3.6, the
        # Debian build's OpenSSL 3), and the server offers it (nginx 1.22 only when told).
        assert {e["protocol"] for e in server.log()} == {"TLSv1.3"}, server.log()
        # The key exchange is X25519, the fastest group both sides have (mbedTLS offers the
        # largest curve first unless told otherwise, and nginx takes the client's order).
        assert {e["curve"] for e in server.log()} == {"X25519"}
        # The record cipher is AES-GCM where the CPU has AES and carry-less multiply instructions:
        # several times faster there than ChaCha20 (the release builds' mbedTLS would offer
        # ChaCha20-Poly1305 first unless told otherwise; OpenSSL, the Debian build's, prefers GCM).
        flags = cpu_flags()
        if "aes" in flags and "pclmulqdq" in flags:
            assert all("GCM" in e["cipher"] for e in server.log()), server.log()

        # A CA that did not issue the server's certificate: nothing is read, nothing staged.
        other = make_certificates(str(tmp_path / "other-ca"))
        cfg, state = endpoint_config(tmp_path, "tls-wrong-ca", [server.url], [public_pem],
                                     tls={"ca_file": other["ca.pem"]})
        r = outpost(cfg, "update", key=None)
        assert r.returncode == 1, r.stderr
        assert "TLS" in error_lines(r)[-1] and server.url in error_lines(r)[-1], r.stderr
        assert "`mirror.urls`" in error_lines(r)[-1], r.stderr
        assert staged_versions(state) == []
    finally:
        server.stop()


# ---- resuming an interrupted installer download ----------------------------------------------------

class CuttingMirror:
    """A static server for a mirror directory that honours Range and breaks installer responses on
    purpose: `cuts` lists, for each installer response in turn, after how many body bytes the
    connection is closed (None: send it all); the announced length is always the full one.
    `ignore_range` answers every range request with the whole file (200), as some servers do."""

    def __init__(self, root: Path, cuts=(), ignore_range=False):
        import http.server
        import threading

        self.root, self.cuts, self.ignore_range = root, list(cuts), ignore_range
        self.requests: list[dict] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 - http.server's name
                outer.serve(self)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/fleet/"

    def serve(self, h) -> None:
        rel = h.path.split("?", 1)[0].removeprefix("/fleet/")
        path = self.root / rel
        entry = {"path": rel, "range": h.headers.get("Range"), "status": 404, "bytes": 0}
        self.requests.append(entry)
        if ".." in rel or not path.is_file():
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        data = path.read_bytes()
        start = 0
        rng = h.headers.get("Range")
        if rng and not self.ignore_range and rel.startswith("installers/"):
            start = int(rng.removeprefix("bytes=").split("-")[0])
            if start >= len(data):
                entry["status"] = 416
                h.send_response(416)
                h.send_header("Content-Range", f"bytes */{len(data)}")
                h.send_header("Content-Length", "0")
                h.end_headers()
                return
        body = data[start:]
        entry["status"] = 206 if start else 200
        h.send_response(entry["status"])
        if start:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        cut = self.cuts.pop(0) if rel.startswith("installers/") and self.cuts else None
        if cut is not None:
            body = body[:cut]
            h.close_connection = True
        h.wfile.write(body)
        h.wfile.flush()
        entry["bytes"] = len(body)

    def installer_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"].startswith("installers/")]

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def cutting(sim, published):
    servers = []

    def start(**kwargs):
        mirror, public_pem = published.dir, published.public_pem
        server = CuttingMirror(mirror, **kwargs)
        servers.append(server)
        return server, mirror, public_pem

    sim.stop()
    yield start
    for server in servers:
        server.stop()


def plant_partial(state: Path, pay: dict, data: bytes) -> Path:
    """A partial download of the offered installer as download.c leaves it: <version>.part and its
    sidecar (version, length, the manifest's SHA-256, the bytes known good)."""
    downloads = state / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    part = downloads / f"{pay['version']}.part"
    part.write_bytes(data)
    (downloads / f"{pay['version']}.part.json").write_text(json.dumps({
        "version": pay["version"], "url": None, "etag": None, "last_modified": None, "file_name": None,
        "total_length": pay["length"], "bytes": len(data), "sha256": pay["sha256"]}))
    return part


def test_a_broken_installer_transfer_resumes_in_the_same_run(tmp_path, cutting):
    server, mirror, public_pem = cutting(cuts=[70 * 1024])
    length = manifest_payload(mirror)["length"]
    cfg, state = endpoint_config(tmp_path, "resume", [server.url], [public_pem])
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    got = server.installer_requests()
    assert [(g["range"], g["status"]) for g in got] == [(None, 200), (f"bytes={70 * 1024}-", 206)]
    assert sum(g["bytes"] for g in got) == length, "bytes already received were downloaded again"
    assert not list((state / "downloads").glob("*"))


def test_a_partial_left_by_a_failed_run_is_resumed_by_the_next(tmp_path, cutting):
    # The first response breaks at 50 KiB; the retry within the run makes no progress, so the
    # run gives up (exit 75) instead of hammering the mirror.
    server, mirror, public_pem = cutting(cuts=[50 * 1024, 0])
    pay = manifest_payload(mirror)
    cfg, state = endpoint_config(tmp_path, "later", [server.url], [public_pem])
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 75, r.stderr
    assert staged_versions(state) == []
    part = state / "downloads" / f"{pay['version']}.part"
    assert part.stat().st_size == 50 * 1024, "the bytes that arrived were not kept"
    assert part.read_bytes() == (mirror / pay["path"]).read_bytes()[:50 * 1024]
    assert [g["range"] for g in server.installer_requests()] == [None, f"bytes={50 * 1024}-"]

    server.requests.clear()
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    got = server.installer_requests()
    assert [(g["range"], g["status"]) for g in got] == [(f"bytes={50 * 1024}-", 206)]
    assert got[0]["bytes"] == pay["length"] - 50 * 1024
    assert not part.exists()


@pytest.mark.parametrize("ignore_range", [False, True], ids=["server-honours-range", "server-ignores-range"])
def test_a_partial_that_does_not_belong_is_downloaded_again_whole(tmp_path, cutting, ignore_range):
    """A partial whose bytes are not the installer's (a power cut leaves zeros behind a file's length)
    costs one more download, never a refusal; a server that ignores Range restarts the file."""
    server, mirror, public_pem = cutting(ignore_range=ignore_range)
    pay = manifest_payload(mirror)
    cfg, state = endpoint_config(tmp_path, "zeros", [server.url], [public_pem])
    plant_partial(state, pay, b"\0" * (pay["length"] // 2))
    stale = state / "downloads" / "0.9.0.part"
    stale.write_bytes(b"an older installer's partial")
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    got = server.installer_requests()
    assert got[0]["range"] == f"bytes={pay['length'] // 2}-"
    if ignore_range:
        assert [g["status"] for g in got] == [200]
    else:
        assert [(g["range"], g["status"]) for g in got] == [(f"bytes={pay['length'] // 2}-", 206), (None, 200)]
    assert not stale.exists(), "only the offered installer's partial is kept"


def test_a_partial_is_resumed_from_a_file_share(tmp_path, sim, published):
    mirror, public_pem = published.dir, published.public_pem
    sim.stop()
    pay = manifest_payload(mirror)
    cfg, state = endpoint_config(tmp_path, "share", [mirror.as_uri()], [public_pem])
    plant_partial(state, pay, (mirror / pay["path"]).read_bytes()[:4096])
    r = outpost(cfg, "-v", "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    assert f"resuming the download of {pay['version']} from 4096 bytes" in r.stderr


# ---- a fleet in parallel ----------------------------------------------------------------------------

FLEET_SIZE = int(os.environ.get("OUTPOST_MIRROR_FLEET", "50"))


def test_fleet_checks_then_gets_304s_then_updates(tmp_path, sim, fleet):
    """FLEET_SIZE endpoint state directories (the issue's 1,000 with OUTPOST_MIRROR_FLEET=1000) against
    nginx with the API simulator stopped: one manifest request each, 304s on the second pass, then
    every endpoint updates (rollout 100%): installer bytes only to eligible endpoints."""
    from concurrent.futures import ThreadPoolExecutor

    server, mirror, key_file, public_pem = fleet
    assert sim.process.poll() is not None          # the API is not even running
    configs = [endpoint_config(tmp_path, f"e{i:04d}", [server.url], [public_pem]) for i in range(FLEET_SIZE)]

    def each(args):
        with ThreadPoolExecutor(max_workers=8) as pool:
            return list(pool.map(lambda c: outpost(c[0], *args, key=None), configs))

    timings = {}
    for label, args in (("check", ("check",)), ("check-again", ("check",)), ("update", ("update",))):
        server.clear_log()
        t0 = time.monotonic()
        results = each(args)
        timings[label] = time.monotonic() - t0
        for r in results:
            assert r.returncode == (0 if label == "update" else 10), r.stderr
        log = server.log()
        manifests = [e for e in log if e["path"] == "/fleet/manifest.json"]
        installers = [e for e in log if e["path"].startswith("/fleet/installers/")]
        assert len(manifests) == FLEET_SIZE, (label, len(manifests))
        assert len(log) == len(manifests) + len(installers)
        if label == "check":
            assert {e["status"] for e in manifests} == {200} and installers == []
        else:
            assert {e["status"] for e in manifests} == {304}
        if label == "update":
            assert len(installers) == FLEET_SIZE and {e["status"] for e in installers} == {200}
    for _, state in configs:
        assert staged_versions(state) == [V2]
    # What the same fleet would have cost through the API: token + installer request per endpoint.
    api_requests = 2 * FLEET_SIZE
    print(f"\nfleet of {FLEET_SIZE}: check {timings['check']:.2f}s, 304 pass {timings['check-again']:.2f}s, "
          f"update {timings['update']:.2f}s; API requests 0 (through the API: {api_requests}, "
          f"{api_requests / 60:.1f} min of the 60/min budget)")


# ---- Authenticode: the signer the publisher verified is the one the endpoint must find --------------

def test_signed_installer_signer_is_bound_by_the_manifest(tmp_path, sim, fx):
    from cryptography import x509

    key_file = tmp_path / "mirror.key"
    public_pem, _ = keygen(key_file)
    sim.config(installer=str(fx / "signed.exe"))   # says 26.01.03.24329, as the simulator offers
    mirror = tmp_path / "mirror"
    verify = {"require_signature": True, "trusted_ca_file": str(fx / "root.pem")}
    cfg = publisher_config(tmp_path, sim, key_file, mirror, installer={"verify": verify})
    r = outpost(cfg, "publish")
    assert r.returncode == 0, r.stderr
    pay = manifest_payload(mirror)
    leaf = x509.load_pem_x509_certificate((fx / "leaf.pem").read_bytes())
    leaf_der = leaf.public_bytes(serialization.Encoding.DER)
    assert pay["signer"]["cert_sha256"] == hashlib.sha256(leaf_der).hexdigest()
    assert "CN=" in pay["signer"]["subject"]
    sim.stop()

    def endpoint(name):
        return endpoint_config(tmp_path, name, [mirror.as_uri()], [public_pem], installed="26.01.02.1",
                               installer={"verify": verify})

    cfg_ok, state_ok = endpoint("good")
    r = outpost(cfg_ok, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state_ok) == [pay["version"]]

    # Another installer, validly signed under the same CA but by another certificate, put in place
    # with a manifest that the mirror key signed but whose signer is still the verified one.
    other = fx / "ecdsa.exe"
    data = other.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    shutil.copyfile(other, mirror / "installers" / f"{digest}.exe")
    resign_manifest(mirror, key_file, seq=pay["seq"] + 1, sha256=digest, length=len(data),
                    path=f"installers/{digest}.exe")
    cfg_bad, state_bad = endpoint("bad")
    r = outpost(cfg_bad, "update", key=None)
    assert r.returncode == 4, r.stderr
    line = error_lines(r)[0]
    assert "signer check failed" in line and "mirror installer" in line, line
    assert staged_versions(state_bad) == []
