"""The fleet policy (issue 35, PRODUCT.md section 11) with the real binary:
the version pin (installer.target_version_prefix) against the API
simulator and a signed mirror, and maintenance windows (deploy.windows)
judged by `run` under libfaketime with an explicit TZ: inside, outside,
across midnight, and both clock changes of a European and an American
zone. Every status.json is checked against tests/status.schema.json.

The faked clock is absolute (FAKETIME "@<Unix seconds>", FAKETIME_FMT %s),
so nothing here depends on today's date, and it replaces the clock a year
ahead of scripts/test's second pass for the one process it is given to.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
from pathlib import Path

import pytest

from outpost_config import UNSIGNED, sim_config, write_config
from outpost_run import OUTPOST, current_version, outpost, staged_versions
from schema_check import check_status_file
from sim import write_fake_installer

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN is not set (tests/CMakeLists.txt sets it)")

SIM_VERSION = "26.01.03.24329-0de7ab+"  # what the simulator offers
BIG = 16 * 1024 * 1024
# Debian's faketime package, whatever the architecture's library directory.
FAKETIME_LIB = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))), "")


def status(state: Path) -> dict:
    return check_status_file(state / "status.json")


def installer_bytes(sim) -> int:
    return sum(e["bytes_sent"] for e in sim.log()["requests"] if e["route"] in ("installer", "storage"))


def downloads(state: Path) -> list[str]:
    d = state / "downloads"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


# ---- The pin: the API ------------------------------------------------------------------------


def pinned_config(tmp_path, sim, prefix, installed="26.01.03.24000"):
    return write_config(tmp_path, sim.url, installer={"installed_version": installed, "verify": UNSIGNED,
                                                      "target_version_prefix": prefix},
                        report={"enabled": False}, schedule={"jitter": "0s"})


def test_an_offer_outside_the_pin_is_not_taken_and_not_downloaded(sim_factory, tmp_path):
    big = tmp_path / "big.exe"
    write_fake_installer(str(big), 7, BIG)
    sim = sim_factory(installer=str(big))
    cfg, state = pinned_config(tmp_path, sim, "26.02.")
    reason = f"not taken: {SIM_VERSION} is outside target_version_prefix 26.02."
    r = outpost(cfg, "check")
    assert r.returncode == 0, r.stderr  # not 10: nothing this machine will take
    assert r.stdout.startswith(reason), r.stdout
    sim.clear_log()
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == reason
    # The offer's headers decide: the body is not read (what the server
    # pushed into the socket before outpost hung up is far less than it).
    assert installer_bytes(sim) < BIG // 2
    assert staged_versions(state) == [] and downloads(state) == []
    doc = status(state)
    assert doc["deploy"]["not_taken"]["version"] == SIM_VERSION
    assert doc["deploy"]["not_taken"]["reason"] == reason
    assert doc["deploy"]["target_version_prefix"] == "26.02."
    r = outpost(cfg, "run")
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == []
    human = outpost(cfg, "status")
    assert human.returncode == 0, human.stdout
    assert "target_version_prefix 26.02." in human.stdout and reason in human.stdout


def test_an_offer_inside_the_pin_is_taken(sim, tmp_path):
    cfg, state = pinned_config(tmp_path, sim, "26.01.")
    assert outpost(cfg, "check").returncode == 10
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    assert current_version(state) == SIM_VERSION
    assert status(state)["deploy"]["not_taken"] is None


def test_a_pin_below_the_installed_version_downgrades_only_when_allowed(sim, tmp_path):
    cfg, state = pinned_config(tmp_path, sim, "26.", installed="27.0")
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr  # not the unpinned exit 4: the administrator asked for 26.
    assert r.stdout.startswith(f"not taken: {SIM_VERSION} (target_version_prefix 26.) is older than the installed 27.0")
    assert staged_versions(state) == [] and downloads(state) == []
    r = outpost(cfg, "update", "--allow-downgrade")
    assert r.returncode == 0, r.stderr
    assert current_version(state) == SIM_VERSION
    assert status(state)["deploy"]["not_taken"] is None


# ---- The pin: a mirror -------------------------------------------------------------------------


def mirror_endpoint(tmp_path, published, name, prefix, installed=None):
    from mirror_helper import V1, endpoint_config

    return endpoint_config(tmp_path, name, [published.dir.as_uri()], [published.public_pem],
                           installed=installed or V1, installer={"target_version_prefix": prefix})


def test_a_mirror_offer_outside_the_pin_is_not_taken(tmp_path, sim, published):
    from mirror_helper import V2

    cfg, state = mirror_endpoint(tmp_path, published, "outside", "26.01.")
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"not taken: {V2} is outside target_version_prefix 26.01."
    assert staged_versions(state) == [] and downloads(state) == []
    assert status(state)["deploy"]["not_taken"]["version"] == V2
    cfg, state = mirror_endpoint(tmp_path, published, "inside", "26.02.")
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]


def test_a_mirror_downgrade_under_the_pin_needs_the_manifests_allow_downgrade(tmp_path, sim, published):
    from mirror_helper import V2, resign_manifest

    cfg, state = mirror_endpoint(tmp_path, published, "down", "26.02.", installed="27.0")
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert "is older than the installed 27.0" in r.stdout and staged_versions(state) == []
    resign_manifest(published.dir, published.key_file, seq=2, allow_downgrade=True)
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]


# ---- Maintenance windows under a shifted clock ----------------------------------------------------


def utc(text: str) -> int:
    from datetime import datetime, timezone

    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())


def at_time(tz: str, when: str) -> dict:
    """The environment that shows the process the instant `when` (UTC) in zone tz."""
    # An ASan build's runtime wants to come first; libfaketime is ahead of it here.
    asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "verify_asan_link_order=0"]))
    # FAKETIME_SHARED would tie the start of this clock to an enclosing
    # faketime's (scripts/test runs the suite a year ahead): the instant would
    # drift by however long that run has lasted.
    return {"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": f"@{utc(when)}", "FAKETIME_FMT": "%s",
            "FAKETIME_DONT_RESET": "1", "FAKETIME_SHARED": None, "TZ": tz, "ASAN_OPTIONS": asan}


WINDOW_CASES = [
    # (zone, windows, now UTC, deploys, the next window's start UTC when it does not)
    ("Europe/Berlin", ["Mon-Fri 22:00-05:00"], "2026-01-09T21:30:00Z", True, None),   # Friday 22:30 CET
    ("Europe/Berlin", ["Mon-Fri 22:00-05:00"], "2026-01-10T03:50:00Z", True, None),   # Friday's, Saturday 04:50
    ("Europe/Berlin", ["Mon-Fri 22:00-05:00"], "2026-01-10T04:10:00Z", False, "2026-01-12T21:00:00Z"),
    ("Europe/Berlin", ["Sun 22:00-05:00"], "2026-01-11T23:10:00Z", True, None),       # past midnight into Monday
    # Spring: 02:00 CET is 03:00 CEST at 01:00 UTC; the window begins at the jump.
    ("Europe/Berlin", ["daily 02:00-04:00"], "2026-03-29T00:50:00Z", False, "2026-03-29T01:00:00Z"),
    ("Europe/Berlin", ["daily 02:00-04:00"], "2026-03-29T01:10:00Z", True, None),
    ("Europe/Berlin", ["Sun 02:00-03:00"], "2026-03-28T23:00:00Z", False, "2026-04-05T00:00:00Z"),
    # Autumn: 02:00-03:00 happens twice; both are inside.
    ("Europe/Berlin", ["Sun 02:00-03:00"], "2026-10-25T00:10:00Z", True, None),
    ("Europe/Berlin", ["Sun 02:00-03:00"], "2026-10-25T01:10:00Z", True, None),
    ("Europe/Berlin", ["Sun 02:00-03:00"], "2026-10-25T02:10:00Z", False, "2026-11-01T01:00:00Z"),
    # New York: spring 2026-03-08 07:00 UTC, autumn 2026-11-01 06:00 UTC.
    ("America/New_York", ["Sun 02:00-03:00"], "2026-03-08T06:30:00Z", False, "2026-03-15T06:00:00Z"),
    ("America/New_York", ["Sat 23:00-03:30"], "2026-03-08T07:10:00Z", True, None),    # 03:10 EDT
    ("America/New_York", ["daily 01:30-02:30"], "2026-11-01T06:10:00Z", False, "2026-11-01T06:30:00Z"),
    ("America/New_York", ["daily 01:30-02:30"], "2026-11-01T06:40:00Z", True, None),  # 01:40 EST, the second time
]


@pytest.mark.skipif(not os.path.exists(FAKETIME_LIB), reason="libfaketime (Debian package faketime) is not installed")
@pytest.mark.skipif(not os.path.exists("/usr/share/zoneinfo/America/New_York"), reason="tzdata is not installed")
@pytest.mark.parametrize("zone,windows,now,deploys,until", WINDOW_CASES)
def test_run_deploys_only_inside_a_window(sim, tmp_path, zone, windows, now, deploys, until):
    marker, version_file = tmp_path / "deployed", tmp_path / "installed-version"
    version_file.write_text("1.0\n")
    script = f"echo \"$1\" > '{marker}'; echo '{SIM_VERSION}' > '{version_file}'"
    cfg, state = sim_config(tmp_path, sim,
                            installer={"verify": UNSIGNED, "installed_version_file": str(version_file)},
                            report={"enabled": False},
                            deploy={"enabled": True, "command": ["/bin/sh", "-c", script, "sh", "{installer}"],
                                    "windows": windows})
    # Staged beforehand, at the real time: the run under the shifted clock only decides.
    r = outpost(cfg, "update")
    assert r.returncode == 0, r.stderr
    clock = at_time(zone, now)
    r = outpost(cfg, "run", env_extra=clock)
    assert r.returncode == 0, r.stderr
    doc = status(state)
    human = outpost(cfg, "status", env_extra=clock)
    assert human.returncode == 0, human.stdout
    if deploys:
        assert marker.exists(), r.stderr
        assert doc["deploy"]["last_deploy"]["version"] == SIM_VERSION
        assert doc["installer"]["deploy_waiting_until"] is None and doc["deploy"]["waiting_until"] is None
        return
    assert not marker.exists(), "deployed outside every window"
    assert "waits for a maintenance window (deploy.windows): the next begins " + until in r.stderr, r.stderr
    assert doc["installer"]["deploy_waiting_until"] == until
    assert doc["deploy"]["state"] == "waiting_for_window" and doc["deploy"]["waiting_until"] == until
    assert doc["deploy"]["since"].startswith(now[:16])
    assert f"waiting_for_window since {doc['deploy']['since']}, the next maintenance window begins {until}" \
        in human.stdout, human.stdout
    assert doc["last_run"]["exit_code"] == 0 and doc["last_run"]["errors"] == []
    # The next run, once the window has begun, deploys what waited.
    r = outpost(cfg, "run", env_extra=at_time(zone, until))
    assert r.returncode == 0, r.stderr
    assert marker.exists(), r.stderr
    doc = status(state)
    assert doc["installer"]["deploy_waiting_until"] is None and doc["deploy"]["state"] != "waiting_for_window"


# ---- Deferral: a metered connection (NetworkManager over D-Bus) and battery power ----------------


class FakeNetworkManager:
    """python3-dbusmock's NetworkManager on a private system bus, with the
    manager's Metered property (NMMetered: 1 yes, 2 no, 3 guessed yes, 4
    guessed no) set by the test."""

    def __init__(self, address: str, manager):
        self.address = address
        self._manager = manager

    def set_metered(self, value: int) -> None:
        import dbus

        self._manager.SetProperty("/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager", "Metered",
                                  dbus.UInt32(value), dbus_interface="org.freedesktop.DBus.Mock")


@pytest.fixture
def network_manager():
    dbusmock = pytest.importorskip("dbusmock", reason="python3-dbusmock (Debian) is not installed")
    import dbus
    import dbus.bus

    saved = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS")
    case = dbusmock.DBusTestCase
    case.start_system_bus()
    server = None
    try:
        server, _ = case.spawn_server_template("networkmanager", {}, stdout=subprocess.DEVNULL, system_bus=True)
        manager = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"]).get_object(
            "org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager")
        manager.AddProperty("org.freedesktop.NetworkManager", "Metered", dbus.UInt32(2),
                            dbus_interface="org.freedesktop.DBus.Mock")
        yield FakeNetworkManager(os.environ["DBUS_SYSTEM_BUS_ADDRESS"], manager)
    finally:
        if server:
            server.terminate()
            server.wait()
        case.stop_dbus(case.system_bus_pid)
        if saved is None:
            os.environ.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
        else:
            os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = saved


def deferring_config(tmp_path, sim, defer_on, name="state", **sections):
    return sim_config(tmp_path, sim, state_name=name,
                      installer={"installed_version": "26.01.03.24000", "verify": UNSIGNED, "defer_on": defer_on},
                      report={"enabled": False}, **sections)


def test_run_defers_the_download_on_a_metered_connection(sim_factory, tmp_path, network_manager):
    big = tmp_path / "big.exe"
    write_fake_installer(str(big), 7, BIG)
    sim = sim_factory(installer=str(big))
    cfg, state = deferring_config(tmp_path, sim, ["metered"])
    bus = {"DBUS_SYSTEM_BUS_ADDRESS": network_manager.address}
    for metered, said in ((1, "metered"), (3, "metered (guessed)")):
        network_manager.set_metered(metered)
        sim.clear_log()
        r = outpost(cfg, "run", env_extra=bus)
        assert r.returncode == 0, r.stderr
        assert (f"deferred: metered connection (installer.defer_on; NetworkManager: {said}): {SIM_VERSION} "
                "is not downloaded while it lasts") in r.stderr, r.stderr
        assert installer_bytes(sim) < BIG // 2  # checked, not downloaded
        assert staged_versions(state) == [] and downloads(state) == []
        doc = status(state)
        assert doc["last_run"]["exit_code"] == 0 and doc["last_run"]["errors"] == []
        assert doc["deploy"]["deferred"]["reason"] == "metered"
        assert doc["deploy"]["deferred"]["detail"] == f"NetworkManager: {said}"
    first_since = doc["deploy"]["deferred"]["since"]
    assert doc["deploy"]["state"] == "disabled"  # deploy.enabled is off: the deferral is the download's
    human = outpost(cfg, "status", env_extra=bus)
    assert "deferred: metered connection (NetworkManager: metered (guessed))" in human.stdout, human.stdout
    assert first_since <= doc["generated_at"]
    # An interactive update is a person's decision: not deferred.
    other, other_state = deferring_config(tmp_path, sim, ["metered"], name="interactive")
    r = outpost(other, "update", env_extra=bus)
    assert r.returncode == 0, r.stderr
    assert staged_versions(other_state) == [SIM_VERSION]
    # Guessed not metered: the next run downloads.
    network_manager.set_metered(4)
    r = outpost(cfg, "run", env_extra=bus)
    assert r.returncode == 0, r.stderr
    assert "deferred" not in r.stderr and staged_versions(state) == [SIM_VERSION]
    assert status(state)["deploy"]["deferred"] is None


def test_without_a_system_bus_the_connection_is_not_metered(sim, tmp_path):
    cfg, state = deferring_config(tmp_path, sim, ["metered"])
    r = outpost(cfg, "run", env_extra={"DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={tmp_path}/no-such-bus"})
    assert r.returncode == 0, r.stderr
    assert "deferred" not in r.stderr and staged_versions(state) == [SIM_VERSION]


def fake_laptop(root: Path, ac_online: bool) -> Path:
    """A power_supply tree: an AC adapter, the system battery, and a
    mouse's battery (scope Device), which never counts."""
    for name, files in {"AC": {"type": "Mains", "online": "1" if ac_online else "0"},
                        "BAT0": {"type": "Battery", "status": "Charging" if ac_online else "Discharging"},
                        "hidpp_battery_0": {"type": "Battery", "scope": "Device", "status": "Discharging"}}.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        for attribute, value in files.items():
            (root / name / attribute).write_text(value + "\n")
    root.chmod(0o755)
    return root


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="the power_supply override is honoured for root only")
def test_run_defers_the_deploy_on_battery(sim, tmp_path):
    marker, version_file = tmp_path / "deployed", tmp_path / "installed-version"
    version_file.write_text("1.0\n")
    script = f"echo \"$1\" > '{marker}'; echo '{SIM_VERSION}' > '{version_file}'"
    cfg, state = sim_config(tmp_path, sim,
                            installer={"verify": UNSIGNED, "installed_version_file": str(version_file),
                                       "defer_on": ["battery"]},
                            report={"enabled": False},
                            deploy={"enabled": True, "command": ["/bin/sh", "-c", script, "sh", "{installer}"]})
    power = fake_laptop(tmp_path / "power_supply", ac_online=False)
    on_battery = {"OUTPOST_POWER_SUPPLY_DIR": str(power)}
    r = outpost(cfg, "update", env_extra=on_battery)  # interactive: not deferred
    assert r.returncode == 0, r.stderr
    r = outpost(cfg, "run", env_extra=on_battery)
    assert r.returncode == 0, r.stderr
    assert not marker.exists(), "deployed on battery"
    assert (f"deferred: battery power (installer.defer_on; BAT0 discharging, no power supply online): {SIM_VERSION} "
            "is not deployed") in r.stderr, r.stderr
    doc = status(state)
    assert doc["deploy"]["state"] == "deferred" and doc["deploy"]["deferred"]["reason"] == "battery"
    assert doc["deploy"]["since"] == doc["deploy"]["deferred"]["since"]
    fake_laptop(power, ac_online=True)
    r = outpost(cfg, "run", env_extra=on_battery)
    assert r.returncode == 0, r.stderr
    assert marker.exists(), r.stderr
    doc = status(state)
    assert doc["deploy"]["deferred"] is None and doc["deploy"]["last_deploy"]["version"] == SIM_VERSION


# ---- rollback --deploy -------------------------------------------------------------------------------


def rollback_agent(tmp_path):
    """Two versions staged from local files, 26.1.0 then 26.2.0, and 26.2.0
    deployed; the deploy command records which installer ran and writes
    its version (the staged folder's name) as the installed one."""
    from authenticode_fixtures import tiny_pe

    tmp_path.mkdir(parents=True, exist_ok=True)
    ran, version_file = tmp_path / "ran.txt", tmp_path / "installed-version"
    version_file.write_text("1.0\n")
    script = (f"echo \"$1\" >> '{ran}'; basename \"$(dirname \"$1\")\" > '{version_file}'")
    cfg, state = write_config(tmp_path, installer={"verify": UNSIGNED, "installed_version_file": str(version_file)},
                              deploy={"enabled": True, "command": ["/bin/sh", "-c", script, "sh", "{installer}"]},
                              report={"enabled": False})
    for i, version in enumerate(["26.1.0", "26.2.0"]):
        exe = tmp_path / f"sensor{i}.exe"
        exe.write_bytes(tiny_pe(i))
        r = outpost(cfg, "stage", str(exe), "--version", version, key=None)
        assert r.returncode == 0, r.stderr
    r = outpost(cfg, "deploy", key=None)
    assert r.returncode == 0, r.stderr
    return cfg, state, ran, version_file


def test_rollback_deploy_runs_the_previous_version(tmp_path):
    cfg, state, ran, version_file = rollback_agent(tmp_path)
    r = outpost(cfg, "rollback", "--deploy", key=None)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("rolled back: 26.1.0 is current again (was 26.2.0); deploying it\ndeployed 26.1.0 ")
    assert "/staging/26.1.0/" in ran.read_text().splitlines()[-1]
    assert version_file.read_text().strip() == "26.1.0" and current_version(state) == "26.1.0"
    doc = status(state)
    assert doc["installer"]["deployed"]["version"] == "26.1.0"
    assert doc["deploy"]["last_deploy"]["version"] == "26.1.0" and doc["deploy"]["last_deploy"]["result"] == "ok"
    assert doc["installer"]["last_command"]["command"] == "rollback"
    # --json: one document, the deploy inside.
    cfg2, state2, _, _ = rollback_agent(tmp_path / "json")
    r = outpost(cfg2, "--json", "rollback", "--deploy", key=None)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["current"] == "26.1.0" and doc["previous"] == "26.2.0" and doc["deployed"]["version"] == "26.1.0"


def test_rollback_deploy_verifies_the_previous_installer_before_it_runs(tmp_path):
    cfg, state, ran, _ = rollback_agent(tmp_path)
    runs = len(ran.read_text().splitlines())
    manifest = json.loads((state / "staging" / "26.1.0" / "manifest.json").read_text())
    staged = state / "staging" / "26.1.0" / manifest["staged_file"]
    data = bytearray(staged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    staged.write_bytes(bytes(data))
    r = outpost(cfg, "rollback", "--deploy", key=None)
    assert r.returncode == 4, (r.returncode, r.stderr)
    assert len(ran.read_text().splitlines()) == runs, "a changed installer ran"
    assert "staged version 26.1.0 no longer matches its manifest; it was not made current" in r.stderr, r.stderr
    assert current_version(state) == "26.2.0"


# ---- A mirror holds its fleet back with Retry-After ---------------------------------------------------


class HoldingMirror:
    """The published mirror directory over HTTP on loopback, answering the
    manifest with `status` (200: the file) and a Retry-After of `retry_after`
    seconds when set; counts the manifest requests."""

    def __init__(self, directory: Path):
        import http.server
        import threading

        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                path = directory / self.path.split("?")[0].lstrip("/")
                if path.name == "manifest.json":
                    mirror.manifest_requests += 1
                status = mirror.status if path.name == "manifest.json" else 200
                body = path.read_bytes() if status == 200 and path.is_file() else b"busy\n"
                if status == 200 and not path.is_file():
                    status, body = 404, b"not found\n"
                self.send_response(status)
                if mirror.retry_after is not None and path.name == "manifest.json":
                    self.send_header("Retry-After", str(mirror.retry_after))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.status, self.retry_after, self.manifest_requests = 200, None, 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def holding_mirror(published):
    server = HoldingMirror(published.dir)
    yield server
    server.stop()


def held_until(stderr: str) -> int:
    import re
    from datetime import datetime, timezone

    m = re.search(r"asked not to be asked again before (\S+Z) \(Retry-After on mirror.urls\)", stderr)
    assert m, stderr
    return int(datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())


def test_a_mirror_503_with_retry_after_holds_the_next_runs_back(tmp_path, sim, published, holding_mirror):
    import time

    from mirror_helper import V2, endpoint_config

    mirror = holding_mirror
    cfg, state = endpoint_config(tmp_path, "held", [mirror.url], [published.public_pem])
    mirror.status, mirror.retry_after = 503, 3600
    r = outpost(cfg, "run", key=None)
    assert r.returncode == 75, r.stderr
    assert mirror.manifest_requests == 1
    before = time.time()
    r = outpost(cfg, "run", key=None)
    assert r.returncode == 75, r.stderr
    assert mirror.manifest_requests == 1, "the mirror was asked again before its Retry-After"
    assert before + 3500 <= held_until(r.stderr) <= time.time() + 3601
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 75 and mirror.manifest_requests == 1
    # An administrator decides to ask now.
    mirror.status, mirror.retry_after = 200, None
    r = outpost(cfg, "update", "--force", key=None)
    assert r.returncode == 0, r.stderr
    assert mirror.manifest_requests == 2 and staged_versions(state) == [V2]


def test_a_manifest_with_retry_after_is_used_and_the_wait_capped_at_a_day(tmp_path, sim, published, holding_mirror):
    import time

    from mirror_helper import V2, endpoint_config

    mirror = holding_mirror
    cfg, state = endpoint_config(tmp_path, "capped", [mirror.url], [published.public_pem])
    mirror.retry_after = 10 * 86400  # ten days: obeyed for one
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2] and mirror.manifest_requests == 1
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 75 and mirror.manifest_requests == 1
    assert held_until(r.stderr) <= time.time() + 86400 + 1
