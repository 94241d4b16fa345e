"""TLS session resumption across runs without weakened trust (issue 32,
PRODUCT.md section 2 `tls.session_resumption`, section 5 `tls-session`).

outpost keeps the last TLS session in state_dir/tls-session and offers it to
the next run's handshake (a resumed handshake skips the certificate checks,
so it must never outlive them). Against nginx on loopback, with a session
ticket lifetime of 30 days (`ssl_session_timeout 30d`) and certificates made
here with the lifetimes each case needs; nginx logs $ssl_session_reused, so
a test sees whether a run resumed. The runs' clocks are set with libfaketime
("@" instants computed from this process's clock, so the year-ahead pass of
scripts/test shifts everything together).

The cases: the issue's reproduction (a 30-day ticket and a certificate that
ends soon: after its end the kept session is not offered and the run fails
as a full handshake does); the 24 h cap; a pin added or a CA changed is
another trust (a full handshake); damaged, truncated, older-layout and
oversized files are replaced after a full handshake; a failed handshake the
session was offered to removes the file; `tls.session_resumption: false`
keeps nothing and removes what was kept; through a proxy (squid, CONNECT)
the session is the origin's, kept and resumed as without one.

Only builds whose libcurl runs on outpost's Mbed TLS keep sessions (the
release builds); elsewhere the module is skipped.
"""
from __future__ import annotations

import base64
import datetime
import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from nginx_helper import PLATFORM_ROUTES, start_nginx
from outpost_run import OUTPOST, outpost
from squid_helper import Squid
from servers import free_port, stop_process

FAKETIME_LIB = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))), "")
VERSION = "26.02.01.100-1a2b3c"
HOUR = 3600


def keeps_sessions() -> bool:
    if not OUTPOST:
        return False
    r = subprocess.run([OUTPOST, "version", "--verbose", "--json"], capture_output=True, text=True, timeout=60)
    return r.returncode == 0 and bool(json.loads(r.stdout).get("tls", {}).get("outpost_mbedtls"))


pytestmark = [
    pytest.mark.skipif(not keeps_sessions(), reason="this build's libcurl does not run on outpost's Mbed TLS"),
    pytest.mark.skipif(not FAKETIME_LIB, reason="libfaketime is not installed"),
]


# ---- certificates -------------------------------------------------------------------------------

def make_ca(directory: Path, name: str):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.fromtimestamp(time.time(), datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "outpost tests"),
                         x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=60))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(key, hashes.SHA256()))
    path = directory / f"{name}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert, key, path


def make_leaf(directory: Path, ca, lifetime_s: int, name: str = "leaf"):
    """A certificate for localhost valid from an hour ago until lifetime_s
    from now; returns (cert path, key path, pin)."""
    ca_cert, ca_key, _ = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.fromtimestamp(time.time(), datetime.timezone.utc).replace(microsecond=0)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(seconds=lifetime_s))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    digest = hashes.Hash(hashes.SHA256())
    digest.update(spki)
    return cert_path, key_path, "sha256//" + base64.b64encode(digest.finalize()).decode()


# ---- nginx with 30-day session tickets ----------------------------------------------------------

BODY = """
    log_format session escape=json '{{"path":"$request_uri","reused":"$ssl_session_reused","protocol":"$ssl_protocol"}}';
    access_log {dir}/access.log session;
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_tickets on;
        ssl_session_timeout 30d;
{routes}
    }}
}}
"""


class Server:
    def __init__(self, port: int, cert: Path, key: Path, installer: Path):
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="outpost-tls-session-nginx-")
        routes = PLATFORM_ROUTES.format(token="session-test-token", installer=installer, version=VERSION)
        body = BODY.format(dir=self.dir, port=port, cert=cert, key=key, routes=routes)
        self.process = start_nginx(self.dir, body, [("127.0.0.1", port)])

    def installer_requests(self) -> list:
        path = os.path.join(self.dir, "access.log")
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as f:
            entries = [json.loads(line) for line in f if line.strip()]
        return [e for e in entries if e["path"].startswith("/v2/installer/")]

    def stop(self) -> None:
        stop_process(self.process)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def site(tmp_path):
    """A CA, a place for leaves, an installer file, a free port; servers
    started by the test are stopped after it."""
    installer = tmp_path / "installer.exe"
    installer.write_bytes(b"MZ" + bytes(4094))
    started = []

    class Site:
        ca = make_ca(tmp_path, "ca")
        port = free_port()

        def serve(self, leaf) -> Server:
            server = Server(self.port, leaf[0], leaf[1], installer)
            started.append(server)
            return server

    yield Site()
    for server in started:
        server.stop()


def config(tmp_path: Path, port: int, ca: Path, proxy: str | None = None, **tls) -> tuple[Path, Path]:
    state = tmp_path / "state"
    doc = {
        "base_url": f"https://localhost:{port}",
        **({"proxy": proxy} if proxy else {}),
        "state_dir": str(state),
        "tls": {"ca_file": str(ca), **tls},
        "installer": {"installed_version": "1.0", "verify": {"require_signature": False}},
        "report": {"enabled": False},
        "schedule": {"jitter": "0s"},
    }
    path = tmp_path / f"outpost-{len(list(tmp_path.glob('outpost-*.json')))}.json"
    path.write_text(json.dumps(doc))
    return path, state


def at(offset_s: int) -> dict:
    """The environment that shows outpost this process's now + offset_s."""
    asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "verify_asan_link_order=0"]))
    return {"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": f"@{int(time.time()) + offset_s}", "FAKETIME_FMT": "%s",
            "FAKETIME_DONT_RESET": "1", "FAKETIME_SHARED": None, "ASAN_OPTIONS": asan}


def check(cfg: Path, offset_s: int = 0):
    return outpost(cfg, "-v", "check", env_extra=at(offset_s))


def reused(server: Server, before: int, count: int = 1) -> list:
    """$ssl_session_reused of the installer requests logged after the first
    `before`, once `count` of them are there: nginx logs a request when it
    ends, and `check` closes after the headers, so the line can come a
    little after the run (bounded wait, never a timing assertion)."""
    deadline = time.monotonic() + 15
    while len(server.installer_requests()) < before + count and time.monotonic() < deadline:
        time.sleep(0.05)
    return [e["reused"] for e in server.installer_requests()[before:]]


def kept(state: Path) -> bytes | None:
    path = state / "tls-session"
    return path.read_bytes() if path.exists() else None


# ---- the cases ------------------------------------------------------------------------------------

def test_a_kept_session_never_outlives_the_certificate(site, tmp_path):
    """The issue's reproduction: the ticket lives 30 days, the certificate
    one more hour. Before its end the kept session resumes; after it, the
    run fails as a full handshake does, and the kept file is gone."""
    server = site.serve(make_leaf(tmp_path, site.ca, HOUR))
    cfg, state = config(tmp_path, site.port, site.ca[2])
    r = check(cfg)
    assert r.returncode == 10, r.stderr
    assert kept(state) is not None and kept(state).startswith(b"outpost-tls-session 2\n")
    n = len(server.installer_requests())
    r = check(cfg, 60)
    assert r.returncode == 10, r.stderr
    assert reused(server, n) == ["r"], "the kept session must resume while the certificate is valid"

    (tmp_path / "fresh").mkdir()
    fresh_cfg, _ = config(tmp_path / "fresh", site.port, site.ca[2])
    full = check(fresh_cfg, 2 * HOUR)
    assert full.returncode != 10, "a full handshake after the certificate's end must fail"
    n = len(server.installer_requests())
    r = check(cfg, 2 * HOUR)
    assert r.returncode == full.returncode, r.stderr
    assert "r" not in reused(server, n)
    assert kept(state) is None


def test_a_kept_session_is_not_offered_after_24_hours(site, tmp_path):
    server = site.serve(make_leaf(tmp_path, site.ca, 10 * 24 * HOUR))
    cfg, state = config(tmp_path, site.port, site.ca[2])
    assert check(cfg).returncode == 10
    first = kept(state)
    n = len(server.installer_requests())
    r = check(cfg, 23 * HOUR)
    assert r.returncode == 10, r.stderr
    assert reused(server, n) == ["r"]
    # a session made by resuming keeps the first one's end: 25 h after the
    # full handshake nothing is offered, however recently it was resumed
    n = len(server.installer_requests())
    r = check(cfg, 25 * HOUR)
    assert r.returncode == 10, r.stderr
    assert reused(server, n) == ["."]
    assert kept(state) not in (None, first)


def test_a_pin_added_or_another_ca_is_another_trust(site, tmp_path):
    leaf = make_leaf(tmp_path, site.ca, 10 * 24 * HOUR)
    server = site.serve(leaf)
    cfg, state = config(tmp_path, site.port, site.ca[2])
    assert check(cfg).returncode == 10
    pinned, _ = config(tmp_path, site.port, site.ca[2], pinned_public_key=leaf[2])
    n = len(server.installer_requests())
    assert check(pinned, 60).returncode == 10
    assert reused(server, n) == ["."], "a session kept without the pin must not be offered with it"
    # the same CA's certificate in a bundle with another: other CA material
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(site.ca[2].read_bytes() + make_ca(tmp_path, "other")[2].read_bytes())
    other, _ = config(tmp_path, site.port, bundle, pinned_public_key=leaf[2])
    n = len(server.installer_requests())
    assert check(other, 120).returncode == 10
    assert reused(server, n) == ["."]


@pytest.mark.parametrize("content", [
    b"garbage",
    b"outpost-tls-session 2\nlocalhost",
    b"outpost-tls-session 1\nlocalhost:443 00\n\x01\x02\x03",
    b"outpost-tls-session 2\n" + b"x" * (64 * 1024),
], ids=["garbage", "truncated", "older-layout", "oversized"])
def test_a_damaged_file_is_replaced_after_a_full_handshake(site, tmp_path, content):
    server = site.serve(make_leaf(tmp_path, site.ca, 10 * 24 * HOUR))
    cfg, state = config(tmp_path, site.port, site.ca[2])
    state.mkdir(mode=0o700)
    (state / "tls-session").write_bytes(content)
    os.chmod(state / "tls-session", 0o600)
    r = check(cfg)
    assert r.returncode == 10, r.stderr
    assert reused(server, 0) == ["."]
    assert kept(state).startswith(b"outpost-tls-session 2\n") and kept(state) != content
    n = len(server.installer_requests())
    assert check(cfg, 60).returncode == 10
    assert reused(server, n) == ["r"]


def test_a_failed_handshake_the_session_was_offered_to_removes_it(site, tmp_path):
    """The server changed (another certificate from a CA outpost does not
    trust, new ticket keys): the offered session is refused, the full
    handshake fails, and the kept file goes with it."""
    server = site.serve(make_leaf(tmp_path, site.ca, 10 * 24 * HOUR))
    cfg, state = config(tmp_path, site.port, site.ca[2])
    assert check(cfg).returncode == 10
    assert kept(state) is not None
    server.stop()
    stranger = make_ca(tmp_path, "stranger")
    site.serve(make_leaf(tmp_path, stranger, 10 * 24 * HOUR, name="stranger-leaf"))
    r = check(cfg, 60)
    assert r.returncode not in (0, 10), r.stderr
    assert kept(state) is None


def test_session_resumption_false_keeps_nothing(site, tmp_path):
    server = site.serve(make_leaf(tmp_path, site.ca, 10 * 24 * HOUR))
    cfg, state = config(tmp_path, site.port, site.ca[2])
    assert check(cfg).returncode == 10
    assert kept(state) is not None
    off, _ = config(tmp_path, site.port, site.ca[2], session_resumption=False)
    n = len(server.installer_requests())
    assert check(off, 60).returncode == 10
    assert check(off, 120).returncode == 10
    assert reused(server, n, 2) == [".", "."]
    assert kept(state) is None


def test_through_a_proxy_the_session_is_the_origins(site, tmp_path):
    """Through squid (a CONNECT tunnel) the TLS handshake is the origin's:
    the kept session is keyed by the origin's host and port, resumes through
    the proxy and without it (same origin, same trust), and still ends with
    the 24 h cap."""
    server = site.serve(make_leaf(tmp_path, site.ca, 10 * 24 * HOUR))
    with Squid.start() as proxy:
        cfg, state = config(tmp_path, site.port, site.ca[2], proxy=proxy.url)
        r = check(cfg)
        assert r.returncode == 10, r.stderr
        assert any(e["method"] == "CONNECT" and e["url"] == f"localhost:{site.port}" for e in proxy.access_log())
        assert kept(state).split(b"\n")[1].startswith(f"localhost:{site.port} ".encode())
        n = len(server.installer_requests())
        assert check(cfg, 60).returncode == 10
        assert reused(server, n) == ["r"], "the session kept through the proxy must resume through it"
        direct, _ = config(tmp_path, site.port, site.ca[2], proxy="direct")
        n = len(server.installer_requests())
        assert check(direct, 120).returncode == 10
        assert reused(server, n) == ["r"], "the same origin and trust without the proxy is the same session"
        n = len(server.installer_requests())
        assert check(cfg, 25 * HOUR).returncode == 10
        assert reused(server, n) == ["."]
