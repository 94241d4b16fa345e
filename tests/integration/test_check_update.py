"""`check` and `update` (issue 4, PRODUCT.md 4.1-4.2) against the simulator
over HTTPS and against nginx on loopback: exit codes, what is read, what is
written, resume after cuts and kills, redirects that must not see the
token, and every rejection (bad version, bad file name, HTML page, corrupt
body, downgrade, full disk) leaving staging/ as it was.
"""
from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from nginx_helper import Nginx
from outpost_config import UNSIGNED, write_config as write_outpost_config
from outpost_run import (OUTPOST, current_version, one_error, outpost, outpost_start, outpost_traced, sha256_file,
                         staged_versions)
from sim import write_fake_installer
from simctl import Sim

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN is not set (tests/CMakeLists.txt sets it)")

SIM_VERSION = "26.01.03.24329-0de7ab+"
MiB = 1024 * 1024


# ---- helpers ------------------------------------------------------------------------


def write_config(tmp_path: Path, base_url: str, ca_file=None, installed="26.01.03.24000", state_dir=None,
                 **verify) -> tuple[Path, Path]:
    return write_outpost_config(tmp_path, base_url, ca_file, state=state_dir,
                                installer={"installed_version": installed, "verify": {**UNSIGNED, **verify}})


current = current_version


def downloads(state: Path) -> list[str]:
    d = state / "downloads"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def staged_file(state: Path, version: str) -> Path:
    manifest = json.loads((state / "staging" / version / "manifest.json").read_text())
    return state / "staging" / version / manifest["staged_file"]


def installer_entries(sim: Sim) -> list[dict]:
    return [e for e in sim.log()["requests"] if e["route"] in ("installer", "storage")]


def tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def tcp_bytes_read(cfg: Path, *args, key="sim-api-key") -> tuple[subprocess.CompletedProcess, int]:
    """Runs outpost under strace and sums what it read from TCP sockets: what
    outpost really received, whatever the server pushed into the socket
    buffers (nginx sends megabytes there before noticing the client left)."""
    if shutil.which("strace") is None:
        pytest.skip("strace (Debian package strace) is needed to measure what outpost reads")
    r, trace = outpost_traced(cfg, *args, syscalls="read,recvfrom,recvmsg,readv", trace=cfg.parent / "strace.txt",
                              key=key, timeout=60)
    total = 0
    for line in trace:
        m = re.search(r"<TCP:.*= (\d+)$", line)
        if m:
            total += int(m.group(1))
    return r, total


@pytest.fixture
def big_installer(tmp_path) -> Path:
    path = tmp_path / "big.exe"
    write_fake_installer(str(path), 7, 8 * MiB)
    return path


# ---- check -----------------------------------------------------------------------------


def test_check_exit_codes_output_state_and_status(sim_tls, tmp_path):
    cfg, state = write_config(tmp_path, sim_tls.url, sim_tls.ca_file, installed="26.01.03.24000")
    r = outpost(cfg, "check")
    assert r.returncode == 10, r.stderr
    assert r.stdout.strip() == f"update available: 26.01.03.24000 -> {SIM_VERSION}"

    r = outpost(cfg, "check", "--json")
    assert r.returncode == 10, r.stderr
    doc = json.loads(r.stdout)
    assert doc["installed_version"] == "26.01.03.24000"
    assert doc["latest_version"] == SIM_VERSION
    assert doc["update_available"] is True
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["checked_at"])

    status = json.loads((state / "status.json").read_text())
    assert status["installer"]["latest_version"] == SIM_VERSION
    assert status["installer"]["update_available"] is True
    # An interactive check records its own outcome; last_run is the scheduled run's.
    assert "last_run" not in status
    last = status["installer"]["last_command"]
    assert last["command"] == "check" and last["exit_code"] == 10 and last["error"] is None
    st = json.loads((state / "state.json").read_text())
    assert st["installer"]["latest_version"] == SIM_VERSION

    # the installed version without its build suffix is the same release
    cfg, state = write_config(tmp_path, sim_tls.url, sim_tls.ca_file, installed="26.01.03.24329")
    r = outpost(cfg, "check")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "up to date: 26.01.03.24329"
    assert json.loads(outpost(cfg, "--json", "check").stdout)["update_available"] is False
    assert staged_versions(state) == [] and downloads(state) == []


def test_without_tls_ca_file_the_system_store_is_trusted(sim_tls, tmp_path):
    """tls.ca_file null means the system's CA store: SSL_CERT_FILE when set, else the
    distribution's bundle. The release builds' libcurl has no bundle compiled in, and
    trusted nothing at all before outpost named one."""
    cfg, state = write_config(tmp_path, sim_tls.url, None, installed="26.01.03.24329")
    # The simulator's test CA is in no system store: refused.
    r = outpost(cfg, "check", env_extra={"SSL_CERT_FILE": None})
    assert r.returncode != 0
    assert "TLS" in one_error(r) and "tls.ca_file" in one_error(r), r.stderr

    # The same CA named as the system bundle is trusted.
    r = outpost(cfg, "check", env_extra={"SSL_CERT_FILE": str(sim_tls.ca_file)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "up to date: 26.01.03.24329"


def test_check_reads_at_most_64k_of_body(sim_factory, tmp_path, big_installer):
    sim = sim_factory(installer=str(big_installer))
    cfg, state = write_config(tmp_path, sim.url, installed="1.0")
    r, received = tcp_bytes_read(cfg, "check")
    assert r.returncode == 10, r.stderr
    # token exchange + installer headers + whatever body came with them
    assert 0 < received <= 64 * 1024
    entries = installer_entries(sim)
    assert len(entries) == 1 and entries[0]["method"] == "GET"
    assert downloads(state) == []


def test_check_missing_installed_version_means_update(sim, tmp_path):
    cfg, _ = write_config(tmp_path, sim.url, installed=None)
    r = outpost(cfg, "check")
    assert r.returncode == 10, r.stderr
    assert "(none installed)" in r.stdout


# ---- update: the usual paths -------------------------------------------------------------


def test_update_when_newer_then_already_staged(sim_tls, tmp_path):
    cfg, state = write_config(tmp_path, sim_tls.url, sim_tls.ca_file)
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"staged {SIM_VERSION}: ")
    assert r.stderr == ""  # not a terminal: no progress bar
    info = sim_tls.installer()
    assert staged_versions(state) == [SIM_VERSION] and current(state) == SIM_VERSION
    assert sha256_file(staged_file(state, SIM_VERSION)) == info["sha256"]
    assert staged_file(state, SIM_VERSION).name == "installer.exe"
    assert json.loads((state / "staging" / SIM_VERSION / "manifest.json").read_text())["file_name"] == \
        "SensorSetup.exe"
    assert downloads(state) == []
    status = json.loads((state / "status.json").read_text())
    assert status["installer"]["staged"]["sha256"] == info["sha256"]

    sim_tls.clear_log()
    r = outpost(cfg, "update", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["action"] == "already_staged"
    assert sum(e["bytes_sent"] for e in installer_entries(sim_tls)) <= info["size"]  # no second full download


def test_update_nothing_when_equal(sim, tmp_path):
    cfg, state = write_config(tmp_path, sim.url, installed="26.01.03.24329")
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "up to date: 26.01.03.24329"
    assert staged_versions(state) == [] and downloads(state) == []


def test_downgrade_refused_then_allowed(sim, tmp_path):
    cfg, state = write_config(tmp_path, sim.url, installed="27.0")
    r = outpost(cfg, "update")
    assert r.returncode == 4, r.stderr
    line = one_error(r)
    assert "downgrade" in line and "--allow-downgrade" in line
    assert staged_versions(state) == [] and downloads(state) == []
    r = outpost(cfg, "update", "--allow-downgrade")
    assert r.returncode == 0, r.stderr
    assert current(state) == SIM_VERSION


def test_redirect_storage_host_never_gets_the_token(sim_factory, tmp_path):
    sim = sim_factory(tls=True, redirect=True)
    cfg, state = write_config(tmp_path, sim.url, sim.ca_file)
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    entries = installer_entries(sim)
    api = [e for e in entries if e["listener"] == "api"]
    storage = [e for e in entries if e["listener"] == "storage"]
    assert api and storage
    assert all(e["authorization"] for e in api)
    assert not any(e["authorization"] for e in storage)
    assert sha256_file(staged_file(state, SIM_VERSION)) == sim.installer()["sha256"]


def test_redirect_from_https_to_http_is_refused(sim_factory, tmp_path):
    """PRODUCT.md section 9: a redirect never goes from https to http, not
    even to loopback (which a loopback http:// base_url may use)."""
    sim = sim_factory(tls=True, redirect=True)
    plain = sim_factory()
    sim.config(redirect_to=plain.storage_url)
    cfg, state = write_config(tmp_path, sim.url, sim.ca_file)
    for command, code in (("check", 1), ("update", 1)):
        r = outpost(cfg, command)
        assert r.returncode == code, r.stderr
        line = one_error(r)
        assert f"from https:// to {plain.storage_url}/installer/windows/SensorSetup.exe" in line, line
        assert "sig=" not in line
    assert plain.log()["summary"]["total"] == 0, "the http:// target was asked"
    assert staged_versions(state) == [] and downloads(state) == []


# ---- update: interruptions and resume ------------------------------------------------------


def test_resume_after_several_cuts(sim_factory, tmp_path, big_installer):
    sim = sim_factory(installer=str(big_installer))
    size = big_installer.stat().st_size
    # three cuts in a row: the run resumes in-process twice, then gives up (75)
    for i, cut in enumerate((1 * MiB, 2 * MiB, 1 * MiB)):
        sim.fault("installer", "truncate", bytes=cut, count=1, after=i)
    cfg, state = write_config(tmp_path, sim.url)
    r = outpost(cfg, "update")
    assert r.returncode == 75, r.stderr
    assert "resume" in one_error(r)
    assert staged_versions(state) == []
    assert downloads(state) == [f"{SIM_VERSION}.part", f"{SIM_VERSION}.part.json"]

    r = outpost(cfg, "update")  # the next run resumes and finishes
    assert r.returncode == 0, r.stderr
    assert sha256_file(staged_file(state, SIM_VERSION)) == sha256_file(big_installer)
    entries = installer_entries(sim)
    assert len(entries) == 4
    assert [e["range"] for e in entries] == [None, "bytes=1048576-", "bytes=3145728-", "bytes=4194304-"]
    assert all(e["if_range"] for e in entries[1:])
    fetched_twice = sum(e["bytes_sent"] for e in entries) - size
    assert fetched_twice <= size // 100
    assert downloads(state) == []


@pytest.mark.parametrize("validators", [True, False])
def test_reset_mid_body_resumes_in_the_same_run(sim_factory, tmp_path, big_installer, validators):
    sim = sim_factory(installer=str(big_installer), no_validators=not validators)
    sim.fault("installer", "reset", bytes=3 * MiB, count=1)
    cfg, state = write_config(tmp_path, sim.url)
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    assert sha256_file(staged_file(state, SIM_VERSION)) == sha256_file(big_installer)
    entries = installer_entries(sim)
    assert len(entries) == 2 and entries[1]["range"] and entries[1]["status"] == 206
    assert bool(entries[1]["if_range"]) == validators


def test_server_that_ignores_range_starts_over(sim_factory, tmp_path, big_installer):
    sim = sim_factory(installer=str(big_installer), no_range=True)
    sim.fault("installer", "truncate", bytes=2 * MiB, count=1)
    cfg, state = write_config(tmp_path, sim.url)
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    entries = installer_entries(sim)
    assert [e["status"] for e in entries] == [200, 200] and entries[1]["range"]
    assert sha256_file(staged_file(state, SIM_VERSION)) == sha256_file(big_installer)


def test_new_version_published_between_runs_discards_the_partial(sim_factory, tmp_path, big_installer):
    sim = sim_factory(installer=str(big_installer))
    for i in range(3):
        sim.fault("installer", "truncate", bytes=MiB, count=1, after=i)
    cfg, state = write_config(tmp_path, sim.url)
    assert outpost(cfg, "update").returncode == 75
    other = tmp_path / "other.exe"
    write_fake_installer(str(other), 9, 3 * MiB)
    sim.config(installer=str(other), installer_version="26.02.0.1")
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    assert current(state) == "26.02.0.1"
    assert sha256_file(staged_file(state, "26.02.0.1")) == sha256_file(other)
    assert downloads(state) == []


def test_wrong_length(sim_factory, tmp_path, big_installer):
    sim = sim_factory(installer=str(big_installer))
    sim.fault("installer", "wrong_length", extra=4096, count=-1)
    cfg, state = write_config(tmp_path, sim.url)
    r = outpost(cfg, "update")
    assert r.returncode == 75, r.stderr
    one_error(r)
    assert staged_versions(state) == []
    sim.clear_faults()
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    assert sha256_file(staged_file(state, SIM_VERSION)) == sha256_file(big_installer)


# ---- update: rejections ---------------------------------------------------------------------


def test_html_error_page_with_200_is_rejected(sim, tmp_path):
    sim.fault("installer", "html_200", count=-1)
    cfg, state = write_config(tmp_path, sim.url)
    r = outpost(cfg, "update")
    assert r.returncode == 4, r.stderr
    assert "X-Installer-Version" in one_error(r)
    assert staged_versions(state) == [] and downloads(state) == []


def test_corrupt_body_rejected_by_expected_sha256(sim, tmp_path):
    info = sim.installer()
    sim.fault("installer", "corrupt", count=1)
    cfg, state = write_config(tmp_path, sim.url, expected_sha256=info["sha256"])
    r = outpost(cfg, "update")
    assert r.returncode == 4, r.stderr
    one_error(r)
    assert staged_versions(state) == [] and downloads(state) == []
    r = outpost(cfg, "update")  # the rejected file is not resumed: a clean download passes
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("disposition", ['attachment; filename="../.."', 'attachment; filename="CON.msi"',
                                         'attachment; filename="CON .exe"', 'attachment; filename="CONIN$"',
                                         "attachment; filename*=UTF-8''..%2F..%2FCOM%C2%B9.exe",
                                         'attachment; filename="setup.exe:evil"'])
def test_unsafe_file_name_rejected(sim, tmp_path, disposition):
    sim.config(installer_disposition=disposition)
    cfg, state = write_config(tmp_path, sim.url)
    before = tree(tmp_path)
    r = outpost(cfg, "update")
    assert r.returncode == 4, r.stderr
    assert "Content-Disposition" in one_error(r)
    assert staged_versions(state) == [] and downloads(state) == []
    assert {p for p in tree(tmp_path) - before if not p.startswith("state")} == set()
    assert not (tmp_path / "x.exe").exists() and not (tmp_path.parent / "x.exe").exists()


@pytest.mark.parametrize("disposition, name", [
    ('attachment; filename="C:\\\\builds\\\\Sensor Setup.exe"', "Sensor Setup.exe"),
    ('attachment; filename="../../evil.exe"', "evil.exe"),  # RFC 6266 4.3: stripped, not rejected
    ('attachment; filename="a\\\\b.exe"', "b.exe"),
    ('attachment; filename="setup&x.exe"', "setup&x.exe"),
])
def test_file_name_reduced_to_base_name(sim, tmp_path, disposition, name):
    sim.config(installer_disposition=disposition)
    cfg, state = write_config(tmp_path, sim.url)
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    # The name is recorded; the file on disk gets outpost's own name, so no
    # server-chosen character reaches a command line or a device name.
    manifest = json.loads((state / "staging" / SIM_VERSION / "manifest.json").read_text())
    assert manifest["file_name"] == name
    assert staged_file(state, SIM_VERSION).name == "installer.exe"
    assert sorted(p.name for p in (state / "staging" / SIM_VERSION).iterdir()) == ["installer.exe", "manifest.json"]
    assert not list(tmp_path.rglob(name))
    status = json.loads((state / "status.json").read_text())
    assert status["installer"]["staged"]["file_name"] == name


@pytest.mark.parametrize("version", ["../../etc", "1" * 200])
def test_invalid_version_rejected(sim, tmp_path, version):
    sim.config(installer_version=version)
    cfg, state = write_config(tmp_path, sim.url)
    before = tree(tmp_path)
    for command in ("check", "update"):
        r = outpost(cfg, command)
        assert r.returncode == 4, r.stderr
        assert "X-Installer-Version" in one_error(r)
    assert staged_versions(state) == [] and downloads(state) == []
    assert {p for p in tree(tmp_path) - before if not p.startswith("state")} == set()
    assert not (tmp_path / "etc").exists()


def test_disk_full_keeps_the_previous_staged_version(sim, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True, text=True,
                       timeout=10)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()}); needs root and CAP_SYS_ADMIN")
    try:
        cfg, state = write_config(tmp_path, sim.url, state_dir=mnt / "state")
        assert outpost(cfg, "update").returncode == 0  # the 256 KiB default installer fits
        first = staged_file(state, SIM_VERSION)
        first_sha = sha256_file(first)
        big = tmp_path / "big.exe"
        write_fake_installer(str(big), 3, 12 * MiB)
        sim.config(installer=str(big), installer_version="26.02.0.1")
        r = outpost(cfg, "update")
        assert r.returncode == 1, r.stderr
        line = one_error(r)
        assert "space" in line and "MiB" in line
        assert current(state) == SIM_VERSION and sha256_file(first) == first_sha
        assert staged_versions(state) == [SIM_VERSION] and downloads(state) == []
        status = json.loads((state / "status.json").read_text())
        last = status["installer"]["last_command"]
        assert last["command"] == "update" and last["exit_code"] == 1 and "space" in last["error"]
    finally:
        subprocess.run(["umount", "-l", str(mnt)], timeout=10)


def test_retry_after_is_recorded_and_honoured(sim, tmp_path):
    sim.fault("installer", "status", status=503, retry_after=3600, count=-1)
    cfg, state = write_config(tmp_path, sim.url)
    r = outpost(cfg, "check", timeout=60)
    assert r.returncode == 75, r.stderr
    st = json.loads((state / "state.json").read_text())
    assert "retry_after_until" in st["run"]
    sim.clear_faults()
    sim.clear_log()
    r = outpost(cfg, "check")
    assert r.returncode == 75 and "Retry-After" in one_error(r)
    assert installer_entries(sim) == []
    r = outpost(cfg, "update", "--force")  # an administrator's --force calls anyway
    assert r.returncode == 0, r.stderr


# ---- nginx: a plain static server, large files, kills -------------------------------------


@pytest.fixture(scope="module")
def large_installer(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("nginx") / "large.exe"
    write_fake_installer(str(path), 11, 48 * MiB)
    return path


@pytest.mark.parametrize("validators,ranges,rebooted",
                         [(True, True, False), (False, True, False), (False, False, False), (True, True, True)])
def test_nginx_kill_then_resume(tmp_path, large_installer, validators, ranges, rebooted):
    """A killed download resumes from the part file's length (the OS cache
    still holds what was written); after a reboot (another boot id in the
    sidecar) only from what was flushed."""
    size = large_installer.stat().st_size
    with Nginx.start(str(large_installer), "24.3.1", validators=validators, ranges=ranges) as ng:
        cfg, state = write_config(tmp_path, ng.url, installed="24.3.0")
        conf = json.loads(cfg.read_text())
        conf["installer"]["max_bytes_per_second"] = 12 * MiB
        cfg.write_text(json.dumps(conf))
        p = outpost_start(cfg, "update", key="any-key", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        part = state / "downloads" / "24.3.1.part.json"
        while time.monotonic() < deadline:  # wait for the first flushed 16 MiB
            if part.exists() and json.loads(part.read_text() or "{}").get("bytes", 0) > 0:
                break
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        sidecar = json.loads(part.read_text())
        flushed = sidecar["bytes"]
        assert flushed >= 16 * MiB
        written = (state / "downloads" / "24.3.1.part").stat().st_size
        assert written >= flushed
        if rebooted:
            sidecar["boot_id"] = "another-boot"
            part.write_text(json.dumps(sidecar))
        kept = flushed if rebooted else written

        conf["installer"]["max_bytes_per_second"] = 0
        cfg.write_text(json.dumps(conf))
        r = outpost(cfg, "update", key="any-key")
        assert r.returncode == 0, r.stderr
        assert sha256_file(staged_file(state, "24.3.1")) == sha256_file(large_installer)
        time.sleep(0.2)
        files = [e for e in ng.access_log() if e["path"].startswith("/v2/installer")]
        last = files[-1]
        assert last["range"] == f"bytes={kept}-"
        if ranges:
            assert last["status"] == 206 and last["bytes"] == size - kept
            assert bool(last["if_range"]) == validators
        else:
            assert last["status"] == 200 and last["bytes"] == size


def test_nginx_redirect_to_another_host_without_token(tmp_path, large_installer):
    with Nginx.start(str(large_installer), "24.3.1", redirect=True) as ng:
        cfg, state = write_config(tmp_path, ng.url, installed="24.3.0")
        r = outpost(cfg, "update", key="any-key")
        assert r.returncode == 0, r.stderr
        time.sleep(0.2)
        log = ng.access_log()
        storage = [e for e in log if e["listener"] == "storage"]
        api_installer = [e for e in log if e["listener"] == "api" and e["path"].startswith("/v2/installer")]
        assert storage and api_installer
        assert all(e["auth"] == "present" for e in api_installer)
        assert all(e["auth"] == "absent" for e in storage)
        assert sha256_file(staged_file(state, "24.3.1")) == sha256_file(large_installer)


def test_nginx_check_reads_little(tmp_path, large_installer):
    with Nginx.start(str(large_installer), "24.3.1") as ng:
        cfg, state = write_config(tmp_path, ng.url, installed="24.3.0")
        r, received = tcp_bytes_read(cfg, "check", key="any-key")
        assert r.returncode == 10, r.stderr
        assert 0 < received <= 64 * 1024
        time.sleep(0.2)
        sent = [e["bytes"] for e in ng.access_log() if e["path"].startswith("/v2/installer")]
        assert len(sent) == 1  # nginx may have pushed far more into the socket than outpost read
        r = outpost(cfg, "check", "-v", "-v", key="any-key")
        assert "any-key" not in r.stderr and "nginx-test-token" not in r.stderr
