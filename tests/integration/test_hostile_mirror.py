"""A hostile fleet mirror (issue 22, PRODUCT.md section 8): a small loopback
server written here answers the endpoint's GETs the way an attacker or a
broken mirror would: an endless 404 body, an endless 200 installer past the
manifest's length, one byte a second, a connection that stalls after the
headers, a body slower than its deadline, a redirect loop, a redirect from
https to http. Each ends within its deadline (set small in the
configuration) with the documented exit code (75: withheld or delayed, 4:
more bytes than `length`), the server counts what it could send (the
endpoint reads no more than its cap; what the kernel's socket buffers take
is counted too), and `run` still writes its report. Also: the installer
throttle from a mirror (http and file://), and a mirror URL with
credentials that no file, log line or `-vv` trace records.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mirror_helper import endpoint_config
from outpost_config import UNSIGNED, write_config
from outpost_run import OUTPOST, error_lines, outpost, outpost_start
from sim import make_certificates

KiB, MiB = 1024, 1024 * 1024
pytestmark = [pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN is not set (tests/CMakeLists.txt sets it)"),
              pytest.mark.mirror_installer(seed=5, size=3 * MiB)]  # the throttle takes seconds over it

V1 = "26.01.03.24329"
# Small deadlines, so that each case ends in seconds; the bound a test asserts is generous
# (machines are loaded): what matters is that the run ends, not how fast.
FAST = {"low_speed_timeout": "2s", "min_speed": 1024, "transfer_timeout": "4s", "connect_timeout": "5s"}
ENDS_WITHIN = 60  # seconds: "it ended", far above the configured deadlines
ENDLESS_CAP = 16 * MiB  # what an endless body may cost, socket buffers included


class Hostile:
    """A loopback server; the first path segment picks the behaviour, the rest names a file of
    the mirror directory. `sent` counts the bytes written to each request's socket."""

    def __init__(self, mirror: Path, tls: dict | None = None):
        self.mirror = mirror
        self.sent: dict[str, int] = {}
        self.requests: list[tuple[str, dict]] = []
        self.stop_event = threading.Event()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                outer.serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

            def get_request(self):
                conn, addr = super().get_request()
                if tls:
                    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                    ctx.load_cert_chain(tls["server.pem"], tls["server.key"])
                    conn = ctx.wrap_socket(conn, server_side=True)
                return conn, addr

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        # https by name: the release builds' Mbed TLS matches a certificate's DNS names, not
        # its IP addresses, so https://127.0.0.1 fails there with a name mismatch.
        host = "localhost" if tls else "127.0.0.1"
        self.base = f"{'https' if tls else 'http'}://{host}:{self.server.server_address[1]}"

    def url(self, mode: str) -> str:
        return f"{self.base}/{mode}/"

    def stop(self):
        self.stop_event.set()
        self.server.shutdown()
        self.server.server_close()

    # -- serving --

    def _send(self, conn, key: str, data: bytes) -> bool:
        try:
            conn.sendall(data)
        except OSError:
            return False
        self.sent[key] = self.sent.get(key, 0) + len(data)
        return True

    def _closed(self, conn, wait: float) -> bool:
        """Whether the client closed the connection within wait seconds."""
        try:
            readable, _, _ = select.select([conn], [], [], wait)
            return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError, ssl.SSLError):
            return True

    def serve(self, conn) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return
            data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        path = head[0].split(" ")[1]
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:])}
        self.requests.append((path, headers))
        mode, _, rest = path.lstrip("/").partition("/")
        key = f"{mode}/{rest}"
        installer = rest.startswith("installers/")

        def answer(status: str, body: bytes = b"", extra: str = "") -> None:
            self._send(conn, key, f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
                                  f"{extra}\r\n".encode() + body)

        if mode == "endless404":
            self._send(conn, key, b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n")
            page = b"<html>" + b"not here " * 8000
            while not self.stop_event.is_set() and self._send(conn, key, page):
                pass
            return
        if mode == "loop":
            answer("302 Found", extra=f"Location: /loop/again/{rest}\r\n")
            return
        if mode == "tohttp":
            answer("302 Found", extra=f"Location: {self.plain_base}/fleet/{rest}\r\n")
            return
        if mode in ("drip", "stall", "slow") and not installer:
            body = (self.mirror / "manifest.json").read_bytes()
            length = f"Content-Length: {len(body)}\r\n" if mode != "slow" else ""
            self._send(conn, key, f"HTTP/1.1 200 OK\r\n{length}Connection: close\r\n\r\n".encode())
            if mode == "stall":
                self._closed(conn, 120)  # never another byte; wait for the endpoint to give up
                return
            pace, size = (1.0, 1) if mode == "drip" else (0.25, 1024)  # 1 B/s, or 4 KiB/s with no end
            i = 0
            while not self.stop_event.is_set():
                piece = body[i:i + size] if i < len(body) else b" " * size
                i += size
                if not self._send(conn, key, piece) or self._closed(conn, pace):
                    return
            return
        target = self.mirror / rest
        if not target.is_file() or ".." in rest:
            answer("404 Not Found")
            return
        body = target.read_bytes()
        if mode == "endless200" and installer:
            # The right bytes first, then more and more: no Content-Length, no end.
            self._send(conn, key, b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
            if self._send(conn, key, body):
                while not self.stop_event.is_set() and self._send(conn, key, b"\0" * 65536):
                    pass
            return
        answer("200 OK", body)


@pytest.fixture
def hostile(published):
    server = Hostile(published.dir)
    yield server
    server.stop()


def endpoint(tmp_path: Path, name: str, urls: list[str], public_pem: str, **sections) -> tuple[Path, Path]:
    """An endpoint on urls with FAST deadlines (mirror_helper.endpoint_config)."""
    return endpoint_config(tmp_path, name, urls, [public_pem], http=FAST, **sections)


def last_error(r: subprocess.CompletedProcess) -> str:
    lines = error_lines(r)
    assert lines, r.stderr
    return lines[-1]


# ---- each hostile answer ends within its deadline, with its exit code --------------------------------

CASES = [
    # mode, command, exit code, what the message says
    ("endless404", "check", 1, "HTTP 404"),
    ("drip", "check", 75, "too slow"),
    ("stall", "check", 75, "too slow"),
    ("slow", "check", 75, "deadline"),
    ("loop", "check", 75, "redirects"),
    ("endless200", "update", 4, "longer than"),
]


@pytest.mark.parametrize("mode,command,code,says", CASES, ids=[c[0] for c in CASES])
def test_a_hostile_answer_ends_the_transfer_not_the_run(tmp_path, published, hostile, mode, command, code, says):
    cfg, state = endpoint(tmp_path, mode, [hostile.url(mode)], published.public_pem)
    r = outpost(cfg, command, key=None)
    seconds = r.seconds
    assert r.returncode == code, r.stderr
    message = last_error(r)
    assert says in message and "127.0.0.1" in message, message
    assert seconds < ENDS_WITHIN, f"{mode}: {seconds:.1f} s"
    sent = sum(hostile.sent.values())
    assert sent < ENDLESS_CAP, f"{mode}: the server could send {sent} bytes"
    if mode == "endless200":
        assert sent >= published.payload()["length"]
        assert not list((state / "downloads").glob("*")), "bytes past the manifest's length were kept"
    status = json.loads((state / "status.json").read_text())
    assert status["installer"]["source"] == "mirror"
    print(f"\n[hostile mirror] {mode}: exit {r.returncode} in {seconds:.1f} s, {sent / KiB:.0f} KiB sent by the "
          f"server (socket buffers included)")


@pytest.mark.parametrize("spelled", ["https://localhost", "HTTPS://localhost", "Https://LOCALHOST"])
def test_an_https_mirror_never_continues_on_http(tmp_path, published, hostile, spelled):
    """However the scheme and host are spelled (RFC 3986: without regard to
    case), a transfer that started on TLS is not followed to http://."""
    tls = make_certificates(str(tmp_path / "certs"))
    secure = Hostile(published.dir, tls=tls)
    secure.plain_base = hostile.base
    try:
        url = secure.url("tohttp").replace("https://localhost", spelled)
        cfg, state = endpoint(tmp_path, "tohttp", [url], published.public_pem, tls={"ca_file": tls["ca.pem"]})
        r = outpost(cfg, "check", key=None)
        assert r.returncode == 75, r.stderr
        assert "never continues without TLS" in last_error(r)
        assert hostile.requests == [], "the http:// target was asked"
        assert r.seconds < ENDS_WITHIN
    finally:
        secure.stop()


@pytest.mark.sim_options(incidents=5, rate_limit=0)
def test_run_still_writes_its_report_behind_a_hostile_mirror(tmp_path, sim, published, hostile):
    """`run` with both parts: the installer part fails (a stalled mirror, 75) and the report
    part still runs against the platform and writes its files."""
    cfg, state = write_config(tmp_path, sim.url, sim.ca_file, state=tmp_path / "run-state", name="run.json",
                              installer={"installed_version": V1, "verify": UNSIGNED},
                              mirror={"urls": [hostile.url("stall")], "public_keys": [published.public_pem]},
                              http={**FAST, "rate_limit_per_minute": 100000}, schedule={"jitter": "0s"})
    r = outpost(cfg, "run")
    assert r.returncode == 75, r.stderr
    assert r.seconds < ENDS_WITHIN
    status = json.loads((state / "status.json").read_text())
    stages = [e["stage"] for e in status["last_run"]["errors"]]
    assert "report" not in stages and stages, status["last_run"]
    assert "too slow" in r.stderr, r.stderr
    assert status["incidents"]["new"] == 5, "the report part did not run"


# ---- the installer throttle holds for a mirror too --------------------------------------------------


@pytest.mark.parametrize("transport", ["http", "file"])
def test_the_throttle_holds_for_a_mirror(tmp_path, published, hostile, transport):
    """installer.max_bytes_per_second from a mirror as from the API: 3 MiB at 1 MB/s take at
    least ~3 s (a lower bound only: a loaded machine is slower, never faster)."""
    doc = published.payload()
    url = hostile.url("fleet") if transport == "http" else published.dir.as_uri()
    cfg, state = endpoint(tmp_path, f"throttle-{transport}", [url], published.public_pem,
                          installer={"max_bytes_per_second": 1000000})
    r = outpost(cfg, "update", key=None)
    seconds = r.seconds
    assert r.returncode == 0, r.stderr
    assert seconds >= 0.75 * doc["length"] / 1000000, f"{doc['length']} bytes in {seconds:.2f} s"
    print(f"\n[throttle] {transport} mirror: {doc['length']} bytes at 1000000 B/s in {seconds:.2f} s")


# ---- credentials in a mirror URL are never recorded ---------------------------------------------------


def test_mirror_credentials_are_never_recorded(tmp_path, published, hostile):
    password = "s3cr3t-Pa55word"
    url = hostile.url("fleet").replace("http://", f"http://fleet-user:{password}@")
    cfg, state = endpoint(tmp_path, "creds", [url], published.public_pem, log={"file": "outpost.log"})
    r = outpost(cfg, "-vv", "update", key=None)
    assert r.returncode == 0, r.stderr
    assert password not in r.stderr and password not in r.stdout
    r = outpost(cfg, "-vv", "--json", "status", key=None)
    assert password not in r.stderr and password not in r.stdout
    # A failure's message too: the mirror now answers 404.
    cfg2, _ = endpoint(tmp_path, "creds", [url.replace("/fleet/", "/fleet/gone/")], published.public_pem,
                       log={"file": "outpost.log"})
    r = outpost(cfg2, "-vv", "check", key=None)
    assert r.returncode == 1, r.stderr
    assert password not in r.stderr
    assert (state / "outpost.log").is_file()
    for path in state.rglob("*"):
        if path.is_file():
            assert password.encode() not in path.read_bytes(), f"{path} records the password"
    # The credentials were sent (HTTP basic authentication), just never recorded.
    assert any("authorization" in headers for _, headers in hostile.requests)


# ---- a file:// mirror reads regular files only, never blocking (issue 34, finding 5) -----------------

SWAPPER = r"""
import os, sys
manifest, regular, fifo, stop = sys.argv[1:5]
tmp = manifest + ".swap"
flips = 0
while not os.path.exists(stop):
    for source in (fifo, regular):
        try:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.link(source, tmp)
            os.rename(tmp, manifest)
            flips += 1
        except OSError:
            pass
print(flips)
"""

FIFO_RUNS = 100


def test_a_fifo_swapped_into_a_file_mirror_fails_the_run_never_hangs_it(tmp_path, published):
    """manifest.json swapped between the real file and a FIFO nobody writes,
    as fast as a loop can: every run ends (no open or read waits for a
    writer that never comes), each with an exit code, and the lock is never
    held past its run (no run meets exit 5)."""
    mirror = tmp_path / "fifo-mirror"
    shutil.copytree(published.dir, mirror)
    regular = tmp_path / "manifest.regular"
    os.link(mirror / "manifest.json", regular)
    fifo = tmp_path / "manifest.fifo"
    os.mkfifo(fifo)
    cfg, state = endpoint(tmp_path, "fifo", [mirror.as_uri()], published.public_pem)
    stop = tmp_path / "stop"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(mirror / "manifest.json"), str(regular), str(fifo),
                        str(stop)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    codes = []
    try:
        for _ in range(FIFO_RUNS):
            p = outpost_start(cfg, "check", key=None)
            try:
                p.communicate(timeout=ENDS_WITHIN)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                pytest.fail("a run hung on the file:// mirror")
            codes.append(p.returncode)
    finally:
        stop.write_text("")
        out, err = swapper.communicate(timeout=60)
    assert swapper.returncode == 0, err
    print(f"\n[fifo] {len(codes)} runs, exit codes {sorted(set(codes))}, {out.strip()} swaps")
    assert int(out) > 0
    assert 5 not in codes, "a run met the lock of one before it"
    assert set(codes) <= {10, 1, 75}, codes


def test_a_fifo_in_a_file_mirror_is_refused_as_not_a_regular_file(tmp_path, published):
    mirror = tmp_path / "fifo-mirror"
    shutil.copytree(published.dir, mirror)
    (mirror / "manifest.json").unlink()
    os.mkfifo(mirror / "manifest.json")
    cfg, state = endpoint(tmp_path, "fifo", [mirror.as_uri()], published.public_pem)
    r = outpost(cfg, "check", key=None, timeout=ENDS_WITHIN)
    assert r.returncode == 1, r.stderr
    assert "not a regular file" in last_error(r), r.stderr
