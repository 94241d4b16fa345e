"""The Windows build's `proxy: "system"` under wine (issue 33): the machine's
WinHTTP proxy setting (the registry value `netsh winhttp set proxy`
writes) and a PAC script the Internet settings name (DefaultConnectionSettings, what
AutoConfigURL sets), served
on loopback, each read by outpost.exe through WinHTTP, as far as wine
implements it; squid on loopback is the proxy, the simulator behind it.

Each test runs in a wine prefix of its module's own (WINEPREFIX in a
temporary directory, created once, about 20 s): the machine-wide setting
must not reach the shared prefix other test runs use at the same time.
"""
import http.server
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import TARGET, target_path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "integration"))
from squid_helper import Squid, require_squid  # noqa: E402

pytestmark = pytest.mark.skipif(TARGET != "windows", reason="WinHTTP is Windows only")

WINE_RUN = str(Path(__file__).resolve().parents[1] / "wine-run")
CONNECTIONS = r"HKLM\Software\Microsoft\Windows\CurrentVersion\Internet Settings\Connections"
USER_CONNECTIONS = r"HKCU\Software\Microsoft\Windows\CurrentVersion\Internet Settings\Connections"


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    p = tmp_path_factory.mktemp("wineprefix")
    env = {**os.environ, "WINEPREFIX": str(p), "WINEDEBUG": "-all"}
    subprocess.run([WINE_RUN, "cmd", "/c", "exit"], env=env, capture_output=True, timeout=300)
    return str(p)


def reg(prefix, *args):
    env = {**os.environ, "WINEPREFIX": prefix, "WINEDEBUG": "-all"}
    r = subprocess.run([WINE_RUN, "reg", *args], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def winhttp_settings(proxy: str, bypass: str) -> str:
    """The WinHttpSettings value as `netsh winhttp set proxy` writes it
    (wine's reading of it): a header, then the proxy and the bypass list as
    counted strings."""
    blob = struct.pack("<III", 0x18, 0, 2)
    for text in (proxy, bypass):
        blob += struct.pack("<I", len(text)) + text.encode()
    return blob.hex()


def connection_settings(pac_url: str) -> str:
    """The Internet settings' DefaultConnectionSettings value naming a PAC
    script ("Use automatic configuration script", as Group Policy's
    AutoConfigURL sets it), in the form wine's WinHTTP reads: a header
    whose flags say "PAC script, else direct", then the proxy, bypass and
    script URL as counted strings."""
    blob = struct.pack("<III", 0x46, 0, 0x4 | 0x1)
    for text in ("", "", pac_url):
        blob += struct.pack("<I", len(text)) + text.encode()
    return blob.hex()


@pytest.fixture(scope="module")
def squid():
    require_squid()
    # squid runs as its own user (as root: proxy), which cannot reach the
    # private TMPDIR of these tests (cross/tests-tmp).
    with Squid.start(parent="/tmp") as proxy:
        yield proxy


@pytest.fixture
def pac_server():
    """An HTTP server on loopback serving /proxy.pac (set .script first)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        script = ""

        def do_GET(self):
            body = Handler.script.encode()
            self.send_response(200 if self.path == "/proxy.pac" else 404)
            self.send_header("Content-Type", "application/x-ns-proxy-autoconfig")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.handler = Handler
    server.url = f"http://127.0.0.1:{server.server_address[1]}/proxy.pac"
    yield server
    server.shutdown()
    server.server_close()


def write_config(tmp_path, sim, **extra):
    doc = {
        "base_url": sim.url,
        "state_dir": target_path(tmp_path / "state"),
        "tls": {"ca_file": target_path(sim.ca_file)},
        "http": {"max_attempts": 3, "max_retry_wait": "1s"},
        "installer": {"verify": {"require_signature": False, "trusted_ca_file": None}},
        "report": {"enabled": False},
    }
    doc.update(extra)
    path = tmp_path / "outpost.json"
    import json
    path.write_text(json.dumps(doc))
    return path


def run(outpost, prefix, config, *args):
    env = {"WINEPREFIX": prefix, "OUTPOST_API_KEY": "sim-api-key", "http_proxy": "", "HTTPS_PROXY": "",
           "https_proxy": "", "NO_PROXY": "", "no_proxy": ""}
    return outpost.run("-c", target_path(config), *args, env=env)


def test_netsh_winhttp_setting_and_its_bypass(outpost, prefix, squid, sim_tls, tmp_path):
    config = write_config(tmp_path, sim_tls)
    reg(prefix, "add", CONNECTIONS, "/v", "WinHttpSettings", "/t", "REG_BINARY", "/d",
        winhttp_settings(f"127.0.0.1:{squid.port}", "*.example.net;10.*"), "/f")
    try:
        squid.clear_log()
        r = run(outpost, prefix, config, "-v", "check")
        assert r.returncode == 10, r.stderr
        host = f"https://localhost:{sim_tls.port}"
        assert f"proxy for {host}: http://127.0.0.1:{squid.port} (the system's setting: netsh winhttp)" \
            in r.stderr, r.stderr
        assert any(e["url"] == f"localhost:{sim_tls.port}" for e in squid.wait_log(lambda l: l)), squid.access_log()

        # "localhost" has no dot: <local> sends it direct
        reg(prefix, "add", CONNECTIONS, "/v", "WinHttpSettings", "/t", "REG_BINARY", "/d",
            winhttp_settings(f"127.0.0.1:{squid.port}", "<local>"), "/f")
        squid.clear_log()
        r = run(outpost, prefix, config, "-v", "check")
        assert r.returncode == 10, r.stderr
        assert f"proxy for {host}: direct (the setting's bypass list names the host: netsh winhttp)" in r.stderr
        assert squid.access_log() == []
    finally:
        reg(prefix, "delete", CONNECTIONS, "/v", "WinHttpSettings", "/f")


def test_pac_script_answer_and_a_broken_script(outpost, prefix, squid, sim_tls, tmp_path, pac_server):
    """The PAC script's answer for each host. Wine's WinHttpGetProxyForUrl
    keeps only the first PROXY of an answer ("PROXY a; PROXY b; DIRECT"
    comes back as "a"), so the order of a longer list is the portable
    code's unit test (tests/unit/test_proxy.c, also run under wine) and
    real Windows' to confirm."""
    config = write_config(tmp_path, sim_tls)
    pac_server.handler.script = (
        'function FindProxyForURL(url, host) {'
        f' if (dnsDomainIs(host, ".example.net")) return "DIRECT"; return "PROXY 127.0.0.1:{squid.port}"; }}')
    reg(prefix, "add", USER_CONNECTIONS, "/v", "DefaultConnectionSettings", "/t", "REG_BINARY", "/d",
        connection_settings(pac_server.url), "/f")
    try:
        squid.clear_log()
        r = run(outpost, prefix, config, "-v", "check")
        host = f"https://localhost:{sim_tls.port}"
        assert r.returncode == 10, r.stderr
        assert f"proxy for {host}: http://127.0.0.1:{squid.port} (the PAC script's answer: PAC {pac_server.url})" \
            in r.stderr, r.stderr
        assert any(e["url"] == f"localhost:{sim_tls.port}" for e in squid.wait_log(lambda l: l))

        # a script that does not run: exit 75 naming it, nothing sent
        pac_server.handler.script = "function FindProxyForURL(url, host) { return ; syntax error here"
        squid.clear_log()
        sim_tls.clear_log()
        r = run(outpost, prefix, config, "check")
        assert r.returncode == 75, r.stderr
        assert f"the proxy script {pac_server.url} could not be used" in r.stderr, r.stderr
        assert sim_tls.log()["summary"]["total"] == 0
    finally:
        reg(prefix, "delete", USER_CONNECTIONS, "/v", "DefaultConnectionSettings", "/f")
