"""Hostile input (issue 7), through the real binary.

Already proven elsewhere, not repeated here:
  - path traversal through X-Installer-Version: test_check_update.py
    test_invalid_version_rejected ("../../etc", 200 characters);
  - Content-Disposition traversal, device names, ADS, filename*:
    test_check_update.py test_unsafe_file_name_rejected (and
    tests/fuzz/fuzz_disposition.c);
  - archive entries with "..", absolute paths, symbolic and hard links,
    expansion bombs, 10,000+ entries: test_staging.py
    test_hostile_archives_rejected (and tests/fuzz/fuzz_unpack.c);
  - the installer route redirected to another host does not get the bearer
    token: test_check_update.py test_redirect_storage_host_never_gets_the_token
    and test_nginx_redirect_to_another_host_without_token;
  - a JSON body over http.max_response_bytes, unknown CA, wrong pinned key,
    http:// to a non-loopback host at the client layer: test_api_client.py
    (through api_probe).

Here: the same limits seen from `outpost` itself (oversized body, unknown CA,
wrong pin, http:// to a non-loopback host), and what was missing: a 1 MiB
header line, 100,000 nested arrays in an envelope, non-UTF-8 bytes in
incident fields, a certificate for another host name, an expired
certificate, a group-readable key file, a configuration number beyond
int64 (undefined behaviour before the config fix), and the secrets (API key
and access token) searched for in every output, file and process argument
list and environment, outpost's and a deployed child's.
"""
from __future__ import annotations

import json
import re
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest

from outpost_config import UNSIGNED, write_config as write_outpost_config
from outpost_run import API_KEY, OUTPOST, one_error, outpost, outpost_start

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")

TOKEN = "hostile-access-token-7f3a9c"   # what the hostile server hands out
SIM_TOKEN = re.compile(r"sim_[A-Za-z0-9_-]{20,}")


def write_config(tmp_path: Path, base_url: str, ca_file=None, **extra) -> tuple[Path, Path]:
    defaults = {"http": {"max_attempts": 2, "max_retry_wait": "1s", "rate_limit_per_minute": 100000},
                "installer": {"installed_version": "1.0", "verify": UNSIGNED},
                "schedule": {"jitter": "0s"}}
    return write_outpost_config(tmp_path, base_url, ca_file, defaults=defaults, **extra)


# ---- a hostile server: raw HTTP on loopback, answers decided by the test ------------------


class HostileServer:
    """Plain HTTP on 127.0.0.1 (or TLS with a given context). The token route
    answers a valid token; every other route answers `answer(path)`, raw bytes
    of a whole HTTP response."""

    def __init__(self, answer, context: ssl.SSLContext | None = None):
        self.answer = answer
        self.context = context
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = f"{'https' if context else 'http'}://127.0.0.1:{self.port}"
        self.requests: list[str] = []
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        try:
            conn.settimeout(10)
            if self.context:
                conn = self.context.wrap_socket(conn, server_side=True)
            while True:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    head += chunk
                header, _, rest = head.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", header).group(1)) if \
                    re.search(rb"(?i)content-length:", header) else 0
                while len(rest) < length:
                    rest += conn.recv(65536)
                path = header.split(b" ")[1].decode()
                self.requests.append(path)
                if path.endswith("/v2/auth/token/access"):
                    body = json.dumps({"access_token": TOKEN, "expires_in": 900}).encode()
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                 str(len(body)).encode() + b"\r\n\r\n" + body)
                else:
                    conn.sendall(self.answer(path))
                    conn.close()
                    return
        except (OSError, ssl.SSLError, AttributeError):
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def close(self):
        self.running = False
        self.sock.close()


def json_response(body: bytes, extra: bytes = b"") -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra + b"Content-Length: " +
            str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


@pytest.fixture
def hostile():
    servers = []

    def start(answer, context=None):
        s = HostileServer(answer, context)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


# ---- sizes and depth ---------------------------------------------------------------------------


def test_deeply_nested_envelope_is_a_clean_error(hostile, tmp_path):
    # cJSON refuses nesting past CJSON_NESTING_LIMIT (1000): a parse error,
    # never a stack overflow, whatever the depth.
    depth = 100_000
    body = b'{"resources": ' + b"[" * depth + b"]" * depth + b', "errors": []}'
    server = hostile(lambda path: json_response(body))
    cfg, state = write_config(tmp_path, server.url, http={"max_response_bytes": 1 << 20})
    r = outpost(cfg, "report")
    assert r.returncode == 1, r.stderr
    line = one_error(r)
    assert "incidents/list" in line and "not valid JSON" in line


def test_body_over_max_response_bytes(hostile, tmp_path):
    body = json.dumps({"resources": [], "errors": [], "padding": "x" * 300_000}).encode()
    server = hostile(lambda path: json_response(body))
    cfg, state = write_config(tmp_path, server.url, http={"max_response_bytes": 65536})
    r = outpost(cfg, "report")
    assert r.returncode == 1, r.stderr
    assert "larger than 65536 bytes" in one_error(r)


@pytest.mark.parametrize("command", ["report", "check"])
def test_one_mebibyte_header_line(hostile, tmp_path, command):
    huge = b"X-Padding: " + b"a" * (1 << 20) + b"\r\n"
    server = hostile(lambda path: json_response(b'{"resources": [], "errors": []}', huge))
    cfg, state = write_config(tmp_path, server.url)
    r = outpost(cfg, command)
    # libcurl refuses a header line over its 100 KiB limit: a failed
    # transfer, not a crash.
    assert r.returncode in (1, 75), r.stderr
    line = one_error(r)
    assert len(line) < 1000


# ---- non-UTF-8 in incident fields --------------------------------------------------------------


def test_non_utf8_bytes_in_incident_fields(hostile, tmp_path):
    """Bytes that are not UTF-8 in strings the platform sends. What outpost
    writes (incidents.jsonl, status.json) must still be valid UTF-8 JSON
    that a SIEM shipper can parse."""
    # An hour ago, inside the 48 h lookback whatever today's date is.
    an_hour_ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600)).encode()
    incident = (b'{"id": "inc-\xff\xfe1", "policy": {"name": "PCI \xc3\x28 card \xed\xa0\x80 numbers"},'
                b' "dataset": {"name": "ok"}, "user": {"local_username": "z\xc3\xb6e \x80"},'
                b' "trigger_time": "' + an_hour_ago + b'", "risk_score": 5, "event_lineage_id": {}}')
    body = b'{"resources": [' + incident + b'], "errors": [], "page_response": {"next_id": ""}}'
    server = hostile(lambda path: json_response(body))
    cfg, state = write_config(tmp_path, server.url, report={"initial_lookback": "48h"})
    r = outpost(cfg, "report")
    produced = [state / "incidents.jsonl", state / "status.json"]
    for path in produced:
        if path.exists():
            text = path.read_bytes().decode("utf-8")  # raises on invalid UTF-8
            for line in text.splitlines() if path.suffix == ".jsonl" else [text]:
                json.loads(line)
    # outpost's choice: invalid bytes read as U+FFFD (what browsers and
    # Python's errors="replace" do); the incident is reported, not dropped.
    assert r.returncode == 0, r.stderr
    items = [json.loads(line) for line in (state / "incidents.jsonl").read_text().splitlines()]
    assert len(items) == 1
    assert items[0]["id"] == "inc-\ufffd\ufffd1"
    assert items[0]["policy"] == "PCI \ufffd( card \ufffd\ufffd\ufffd numbers", "one U+FFFD per invalid byte"
    assert items[0]["user"] == "zöe \ufffd", "valid UTF-8 is kept as it is"


# ---- control characters in what the platform says ----------------------------------------------


def test_control_characters_from_the_server_are_escaped_on_stderr(hostile, tmp_path):
    """An error message the platform sends is quoted on stderr; its escape
    sequences must not reach the administrator's terminal, nor may a line
    break in it forge a second "outpost:" line."""
    message = "\u001b[2J\u001b]0;owned\u0007bad filter\r\noutpost: run: report: all good \u00c2\u009b"
    body = ('{"resources": [], "errors": [{"code": 400, "message": "%s"}]}' % message).encode()
    answer = (b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " +
              str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    server = hostile(lambda path: answer)
    cfg, state = write_config(tmp_path, server.url)
    r = outpost(cfg, "report")
    assert r.returncode == 1, r.stderr
    line = one_error(r)  # one line: the forged one stays inside it
    assert not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f for c in r.stderr.replace("\n", "")), repr(r.stderr)
    assert "\\x1b[2J" in line and "\\x07bad filter\\x0d\\x0aoutpost: run" in line, line


# ---- TLS ------------------------------------------------------------------------------------------


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a certificate for another host name, and an expired certificate
    for 127.0.0.1, all made here with openssl."""
    d = tmp_path_factory.mktemp("pki")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-subj", "/CN=Hostile Test CA", "-days", "2", cwd=d)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "leaf.key",
            "-out", "leaf.csr", "-subj", "/CN=leaf", cwd=d)
    (d / "other.ext").write_text("subjectAltName=DNS:other.example\n")
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "2",
            "-days", "2", "-extfile", "other.ext", "-out", "other.pem", cwd=d)
    # expired: `openssl ca` takes explicit dates
    (d / "db").mkdir()
    (d / "db" / "index.txt").write_text("")
    (d / "db" / "serial").write_text("03\n")
    (d / "ca.cnf").write_text(f"""[ca]
default_ca = hostile
[hostile]
dir = {d}/db
database = $dir/index.txt
serial = $dir/serial
new_certs_dir = $dir
default_md = sha256
policy = any
copy_extensions = none
x509_extensions = leaf
[any]
commonName = supplied
[leaf]
subjectAltName = IP:127.0.0.1,DNS:localhost
""")
    openssl("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key", "-in", "leaf.csr",
            "-startdate", "20200101000000Z", "-enddate", "20200201000000Z", "-out", "expired.pem", cwd=d)
    return d


def tls_context(pki: Path, cert: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(pki / cert), str(pki / "leaf.key"))
    return context


@pytest.mark.parametrize("cert,why", [("other.pem", "host name"), ("expired.pem", "expired")])
def test_tls_certificate_refused(hostile, tmp_path, pki, cert, why):
    server = hostile(lambda path: json_response(b'{"resources": [], "errors": []}'), tls_context(pki, cert))
    cfg, state = write_config(tmp_path, server.url, ca_file=str(pki / "ca.pem"))
    r = outpost(cfg, "report")
    assert r.returncode == 1, f"a TLS failure is exit 1, not 75 ({why}): {r.stderr}"
    line = one_error(r)
    assert "TLS" in line or "certificate" in line, line
    assert server.requests == [], "no request may be sent over a refused connection"


def test_tls_unknown_ca_and_wrong_pin(sim_tls, tmp_path, pki):
    cfg, _ = write_config(tmp_path, sim_tls.url, ca_file=str(pki / "ca.pem"))
    r = outpost(cfg, "check")
    assert r.returncode == 1, r.stderr
    one_error(r)
    cfg, _ = write_config(tmp_path, sim_tls.url, ca_file=sim_tls.ca_file,
                          tls={"ca_file": sim_tls.ca_file, "pinned_public_key": "sha256//" + "A" * 43 + "="})
    r = outpost(cfg, "check")
    assert r.returncode == 1, r.stderr
    one_error(r)
    requests = [e for e in sim_tls.log()["requests"] if e["method"]]  # handshake failures are logged without one
    assert requests == [], f"nothing may be sent to a server that failed verification: {requests}"


def test_plain_http_to_a_non_loopback_host_is_a_config_error(tmp_path):
    cfg, _ = write_config(tmp_path, "http://tenant.example.com")
    r = outpost(cfg, "check")
    assert r.returncode == 2, r.stderr
    assert "base_url" in one_error(r)


# ---- configuration and key file ---------------------------------------------------------------


def test_group_readable_key_file_refused(sim, tmp_path):
    key = tmp_path / "api_key"
    key.write_text(API_KEY + "\n")
    key.chmod(0o640)
    cfg, _ = write_config(tmp_path, sim.url, api_key_file=str(key))
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 2, r.stderr
    line = one_error(r)
    assert str(key) in line and API_KEY not in r.stderr
    key.chmod(0o600)
    assert outpost(cfg, "check", key=None).returncode == 10


def test_number_beyond_int64_in_configuration(tmp_path):
    # Undefined behaviour (UBSan abort in the sanitizer build) before the
    # range check came first in config.c; found by fuzz_config.
    cfg = tmp_path / "outpost.json"
    cfg.write_text('{"state_dir": "%s", "installer": {"keep_versions": 1e300}}' % (tmp_path / "state"))
    r = outpost(cfg, "status")
    assert r.returncode == 2, r.stderr
    assert "keep_versions" in one_error(r)


# ---- secrets --------------------------------------------------------------------------------------


DUMP_SCRIPT = """#!/bin/sh
# a deploy command that records what it was given
{ printf 'ARGV:'; for a in "$@"; do printf ' %s' "$a"; done; printf '\\n'; env; } > "$DUMP"
cat /proc/$$/cmdline /proc/$PPID/cmdline /proc/$PPID/environ >> "$DUMP" 2>/dev/null
exit 0
"""


@pytest.mark.sim_options(incidents=10, rate_limit=0)
def test_secrets_appear_nowhere(sim_tls, tmp_path):
    """`run` with -vv, deploy enabled, the key in a file: neither the API key
    nor any access token the simulator issued may appear in stdout, stderr,
    any file under the state directory (status, state, incidents, manifest,
    download sidecar), outpost's /proc/<pid>/cmdline and environ sampled
    while it runs, nor the deployed child's argv, environment or parent."""
    key = tmp_path / "api_key"
    key.write_text("  " + API_KEY + "\n")
    key.chmod(0o600)
    dump = tmp_path / "child.txt"
    script = tmp_path / "deploy.sh"
    script.write_text(DUMP_SCRIPT)
    script.chmod(0o755)
    installed = tmp_path / "installed.txt"
    installed.write_text("1.0\n")
    cfg, state = write_config(
        tmp_path, sim_tls.url, ca_file=sim_tls.ca_file, api_key_file=str(key),
        installer={"installed_version_file": str(installed), "installed_version": None,
                   "verify": {"require_signature": False, "trusted_ca_file": None}},
        deploy={"enabled": True, "command": [str(script), "{installer}"], "timeout_s": 30},
        report={"initial_lookback": "24h"})
    # a partial download sidecar too: cut the installer once, in the same run
    sim_tls.fault("installer", "reset", bytes=100000, count=1)
    p = outpost_start(cfg, "-v", "-v", "run", key=None, env_extra={"DUMP": str(dump)}, text=False)
    sampled = b""
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        for name in ("cmdline", "environ"):
            try:
                sampled += Path(f"/proc/{p.pid}/{name}").read_bytes() + b"\n"
            except OSError:
                pass
        time.sleep(0.01)
    out, err = p.communicate(timeout=60)
    # deploy exits 0 but the installed version does not change: a failed deploy (1)
    assert p.returncode in (0, 1), err.decode(errors="replace")
    assert sampled, "could not sample /proc of the running outpost"
    assert dump.exists(), "the deploy command did not run"
    assert sim_tls.log()["summary"]["tokens_issued"] >= 1
    haystacks = {"stdout": out, "stderr": err, "/proc samples": sampled, "deployed child": dump.read_bytes()}
    for path in state.rglob("*"):
        if path.is_file() and path.stat().st_size < 16 << 20:
            haystacks[str(path.relative_to(state))] = path.read_bytes()
    assert any("manifest.json" in name for name in haystacks), "nothing was staged: the test saw too little"
    assert b"outpost: " in err and len(err.splitlines()) > 10, "-vv logged nothing"
    for name, data in haystacks.items():
        assert API_KEY.encode() not in data, f"the API key leaked into {name}"
        assert not SIM_TOKEN.search(data.decode(errors="replace")), f"an access token leaked into {name}"
