"""Through a real proxy (squid, tests/integration/squid_helper.py) every
command behaves as without one (PRODUCT.md sections 6 and 9, issue 13).

squid runs on loopback with its own configuration, without and with Basic
proxy authentication (credentials in the configuration's `proxy` URL, or in
HTTPS_PROXY / http_proxy). The simulator serves the platform over HTTPS
(outpost tunnels with CONNECT) or plain HTTP to loopback (squid forwards
the requests itself). Checked here:
  - check, update, report and run succeed through the proxy, and the proxy's
    log shows they went through it (as the authenticated user);
  - a connection reset in the middle of the installer body is resumed in the
    same run (a Range request continuing the partial), over CONNECT and over
    plain HTTP: the proxy's own answers (the CONNECT's "200 Connection
    established") are not taken for the platform's;
  - a redirect to a second origin (the storage host), also with a reset
    there, and a resume on the next run;
  - a wrong proxy password is one clear line naming the proxy;
  - the proxy password appears in no output, status or state file.
squid's processes are checked gone after each module (squid_helper).
"""
from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from outpost_run import API_KEY, OUTPOST, error_lines, outpost
from simctl import Sim
from squid_helper import Squid, require_squid

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")

PROXY_USER = "fleet-proxy"
PROXY_PASSWORD = "Pr0xy-s3cret-7d41"
SIM_VERSION = "26.01.03.24329-0de7ab+"
INSTALLER_SIZE = 3 * 1024 * 1024
INCIDENTS = 6
CLEAN_EXIT = {"check": 10, "update": 0, "report": 0, "run": 0}

# How outpost is told about the proxy: no authentication; Basic with the
# credentials in the config's `proxy` URL; the same in the environment.
MODES = ("open", "auth-config", "auth-env")


# ---- fixtures ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def squid_open():
    require_squid()
    with Squid.start() as proxy:
        yield proxy


@pytest.fixture(scope="module")
def squid_auth():
    require_squid()
    with Squid.start(auth=(PROXY_USER, PROXY_PASSWORD)) as proxy:
        yield proxy


def _sim(tls: bool):
    return Sim.start(tls=tls, incidents=INCIDENTS, rate_limit=0, seed=11, installer_size=INSTALLER_SIZE)


@pytest.fixture(scope="module")
def tls_sim():
    with _sim(True) as sim:
        yield sim


@pytest.fixture(scope="module")
def plain_sim():
    with _sim(False) as sim:
        yield sim


@pytest.fixture
def fresh(tls_sim, plain_sim, squid_open, squid_auth):
    """Every test starts with no faults, empty logs and no redirect."""
    for sim in (tls_sim, plain_sim):
        sim.clear_faults()
        sim.config(redirect=False)
        sim.clear_log()
    for proxy in (squid_open, squid_auth):
        proxy.clear_log()
    yield


def pick(request, mode: str) -> Squid:
    return request.getfixturevalue("squid_open" if mode == "open" else "squid_auth")


# ---- helpers -----------------------------------------------------------------------------

def write_config(tmp_path: Path, sim: Sim, proxy: Squid, mode: str, **extra) -> tuple[Path, Path, dict]:
    """Configuration and environment (what outpost_run.outpost adds to its
    own, which has no proxy variable) for one run through proxy in mode."""
    state = tmp_path / "state"
    cfg = {
        "base_url": sim.url,
        "state_dir": str(state),
        "tls": {"ca_file": sim.ca_file},
        "http": {"max_attempts": 2, "max_retry_wait": "1s", "low_speed_timeout": "5s"},
        "installer": {"installed_version": "26.01.03.24000", "verify": {"require_signature": False, "trusted_ca_file": None}},
        "report": {"initial_lookback": "24h", "details_batch": 50},
        "schedule": {"jitter": "0s"},
    }
    cfg.update(extra)
    env = {}
    if mode == "auth-env":
        env["HTTPS_PROXY" if sim.tls else "http_proxy"] = proxy.url_with_credentials
    else:
        cfg["proxy"] = proxy.url_with_credentials
    path = tmp_path / "outpost.json"
    path.write_text(json.dumps(cfg))
    return path, state, env


def staged_sha(state: Path) -> str | None:
    current = state / "staging" / "current"
    if not current.exists():
        return None
    version = current.read_text().strip()
    manifest = json.loads((state / "staging" / version / "manifest.json").read_text())
    data = (state / "staging" / version / manifest["staged_file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == manifest["sha256"]
    return manifest["sha256"]


def installer_entries(sim: Sim) -> list[dict]:
    return [e for e in sim.log()["requests"] if e["route"] in ("installer", "storage")]


def targets(sim: Sim, storage: bool = False) -> tuple[str, ...]:
    """How the proxy's log names requests to sim's API (or storage) listener."""
    port = sim.storage_port if storage else sim.port
    if sim.tls:
        host = "storage.localhost" if storage else "localhost"
        return (f"{host}:{port}",)
    return (f"http://127.0.0.1:{port}/",)


def proxied(proxy: Squid, sim: Sim, storage: bool = False, expect_user: str | None = None) -> list[dict]:
    """The proxy's log entries for sim's listener (waiting for tunnels to
    close); asserts there is at least one and who was authenticated."""
    wanted = targets(sim, storage)
    log = proxy.wait_log(lambda l: any(e["url"].startswith(wanted) and e["status"] in (200, 206, 302)
                                       for e in l))
    entries = [e for e in log if e["url"].startswith(wanted)]
    assert entries, f"nothing went through the proxy to {wanted}: {log}"
    if expect_user:
        assert any(e["user"] == expect_user for e in entries), entries
    return entries


def assert_no_secret(r: subprocess.CompletedProcess, state: Path) -> None:
    """Neither the proxy password nor the API key is printed or written."""
    for secret in (PROXY_PASSWORD, API_KEY):
        assert secret not in r.stdout + r.stderr
        if state.exists():
            for path in state.rglob("*"):
                if path.is_file() and path.suffix != ".part":
                    assert secret.encode() not in path.read_bytes(), f"{secret!r} found in {path}"


# ---- every command through the proxy --------------------------------------------------------

@pytest.mark.parametrize("command", ["check", "update", "report", "run"])
@pytest.mark.parametrize("mode", MODES)
def test_every_command_through_the_proxy(request, fresh, tls_sim, tmp_path, mode, command):
    proxy = pick(request, mode)
    cfg, state, env = write_config(tmp_path, tls_sim, proxy, mode)
    r = outpost(cfg, "-v", command, env_extra=env)  # -v: the trace must not show the password either
    assert r.returncode == CLEAN_EXIT[command], r.stderr
    entries = proxied(proxy, tls_sim, expect_user=PROXY_USER if mode != "open" else None)
    assert all(e["method"] == "CONNECT" for e in entries)
    if command in ("update", "run"):
        assert staged_sha(state) == tls_sim.installer()["sha256"]
    if command in ("report", "run"):
        status = json.loads((state / "status.json").read_text())
        assert status["incidents"]["new"] == INCIDENTS
    assert_no_secret(r, state)


@pytest.mark.parametrize("mode", MODES)
def test_http_origin_through_the_proxy(request, fresh, plain_sim, tmp_path, mode):
    """A loopback http:// platform: squid forwards the requests itself (no
    CONNECT), so its own answers and authentication exchanges are plain
    HTTP responses on the same connection."""
    proxy = pick(request, mode)
    cfg, state, env = write_config(tmp_path, plain_sim, proxy, mode)
    r = outpost(cfg, "run", env_extra=env)
    assert r.returncode == 0, r.stderr
    entries = proxied(proxy, plain_sim, expect_user=PROXY_USER if mode != "open" else None)
    methods = {e["method"] for e in entries}
    assert {"GET", "POST"} <= methods, entries
    # every request the platform saw came through the proxy
    served = [e for e in proxy.access_log() if e["url"].startswith(targets(plain_sim)) and e["status"] != 407]
    assert len(served) == plain_sim.log()["summary"]["total"]
    assert staged_sha(state) == plain_sim.installer()["sha256"]
    assert_no_secret(r, state)


# ---- interruptions, redirects and resume through the proxy ---------------------------------------

@pytest.mark.parametrize("mode", ["open", "auth-config"])
@pytest.mark.parametrize("scheme", ["https", "http"])
def test_reset_mid_body_resumes_through_the_proxy(request, fresh, tls_sim, plain_sim, tmp_path, mode, scheme):
    """The reported defect: through squid, a reset in the middle of the
    installer body ended `update` with exit 4 (the CONNECT answer taken for
    the platform's, "carries no X-Installer-Version header"); directly it
    resumes and exits 0. Through the proxy it must do the same."""
    sim = tls_sim if scheme == "https" else plain_sim
    proxy = pick(request, mode)
    sim.fault("installer", "reset", bytes=INSTALLER_SIZE // 2, count=1)
    cfg, state, env = write_config(tmp_path, sim, proxy, mode)
    r = outpost(cfg, "update", env_extra=env)
    assert r.returncode == 0, r.stderr
    assert error_lines(r) == [], r.stderr
    assert staged_sha(state) == sim.installer()["sha256"]
    entries = installer_entries(sim)
    assert len(entries) == 2, entries
    assert entries[0]["aborted"] and entries[1]["status"] == 206 and entries[1]["range"]
    assert sum(e["bytes_sent"] for e in entries) < INSTALLER_SIZE * 1.6, "the resume started over"
    proxied(proxy, sim, expect_user=PROXY_USER if mode != "open" else None)
    assert_no_secret(r, state)


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_redirect_to_second_origin_through_the_proxy(request, fresh, tls_sim, plain_sim, tmp_path, scheme):
    """The installer route redirects to the storage host (another origin):
    the download follows it through the proxy, without the token, and a
    reset on the storage host is resumed (from the platform's route again)."""
    sim = tls_sim if scheme == "https" else plain_sim
    proxy = request.getfixturevalue("squid_auth")
    sim.config(redirect=True)
    sim.fault("storage", "reset", bytes=INSTALLER_SIZE // 3, count=1)
    cfg, state, env = write_config(tmp_path, sim, proxy, "auth-config")
    r = outpost(cfg, "update", env_extra=env)
    assert r.returncode == 0, r.stderr
    assert staged_sha(state) == sim.installer()["sha256"]
    entries = installer_entries(sim)
    storage = [e for e in entries if e["listener"] == "storage"]
    api = [e for e in entries if e["listener"] == "api"]
    assert len(storage) == 2 and len(api) == 2, entries
    assert not any(e["authorization"] for e in storage)
    assert storage[1]["status"] == 206 and storage[1]["range"]
    proxied(proxy, sim, storage=True, expect_user=PROXY_USER)
    assert_no_secret(r, state)


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_resume_on_the_next_run_through_the_proxy(request, fresh, tls_sim, plain_sim, tmp_path, scheme):
    sim = tls_sim if scheme == "https" else plain_sim
    proxy = request.getfixturevalue("squid_auth")
    sim.fault("installer", "truncate", bytes=INSTALLER_SIZE // 4, count=-1)
    cfg, state, env = write_config(tmp_path, sim, proxy, "auth-config")
    r = outpost(cfg, "update", env_extra=env)
    assert r.returncode == 75, r.stderr
    assert len(error_lines(r)) == 1 and "resume" in error_lines(r)[0], r.stderr
    assert (state / "downloads" / f"{SIM_VERSION}.part").exists()
    sim.clear_faults()
    sim.clear_log()
    r = outpost(cfg, "update", env_extra=env)
    assert r.returncode == 0, r.stderr
    entries = installer_entries(sim)
    assert len(entries) == 1 and entries[0]["status"] == 206 and entries[0]["range"], entries
    assert staged_sha(state) == sim.installer()["sha256"]
    assert_no_secret(r, state)


# ---- proxy authentication failures ------------------------------------------------------------

@pytest.mark.parametrize("scheme", ["https", "http"])
def test_wrong_proxy_password_is_one_clear_line(request, fresh, tls_sim, plain_sim, tmp_path, scheme):
    sim = tls_sim if scheme == "https" else plain_sim
    proxy = request.getfixturevalue("squid_auth")
    cfg, state, env = write_config(tmp_path, sim, proxy, "auth-config")
    doc = json.loads(cfg.read_text())
    doc["proxy"] = doc["proxy"].replace(PROXY_PASSWORD, "wrong-" + PROXY_PASSWORD)
    cfg.write_text(json.dumps(doc))
    r = outpost(cfg, "check", env_extra=env)
    assert r.returncode == 3, r.stderr
    assert "Proxy Authentication Required" in r.stderr
    lines = error_lines(r)
    assert len(lines) == 1 and "proxy" in lines[0] and "407" in lines[0], r.stderr
    assert sim.log()["summary"]["total"] == 0
    assert_no_secret(r, state)
    assert "wrong-" + PROXY_PASSWORD not in r.stderr
