"""Integration tests of a cross-built outpost (scripts/cross TARGET test):
the real Windows or arm64 binary, run under wine or qemu, against the
simulator on loopback over HTTPS (https://localhost: the simulator's
certificate names DNS:localhost).

What is covered is what differs per target: the UTF-8/UTF-16 boundary
(non-ASCII paths in the configuration and on the command line), the
platform layer's files, atomic replacement, lock and key-file check, libcurl
with mbedTLS and no compiled-in CA path, and the exit codes users script
against. The full behaviour of each command is the native integration
suite's job (tests/integration/).
"""
import hashlib
import json
import os
import re
import stat

import pytest

from conftest import TARGET, target_path

UNICODE_DIR = "état-ünïcödé-日本"


def write_config(tmp_path, sim=None, state_dir=None, **overrides):
    """A configuration for the target in tmp_path/outpost.json; returns its
    host path."""
    doc = {
        "state_dir": target_path(state_dir or tmp_path / "state"),
        "installer": {"verify": {"require_signature": False, "trusted_ca_file": None}},
        "report": {"enabled": False},
    }
    if sim is not None:
        doc["base_url"] = sim.url
        doc["tls"] = {"ca_file": target_path(sim.ca_file) if sim.ca_file else None}
    doc.update(overrides)
    path = tmp_path / "outpost.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got: {stderr!r}"
    return lines[0]


def test_version(outpost):
    r = outpost.run("version")
    assert r.returncode == 0, r.stderr
    assert re.search(r"\b0\.\d+\.\d+\b", r.stdout), r.stdout
    assert r.stderr == ""


def test_version_verbose_says_what_it_links(outpost):
    """The release binary runs libcurl 8 over Mbed TLS 3.6 with TLS 1.3; on Windows, libcurl has
    SSPI (Negotiate and NTLM with the machine's or user's identity, through secur32.dll)."""
    r = outpost.run("version", "--verbose", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    libs, curl = doc["libraries"], doc["libraries"]["libcurl"]
    assert libs["mbedtls"]["version"].startswith("3.6.")
    assert curl["tls"] == "mbedTLS/" + libs["mbedtls"]["version"]
    assert int(curl["version"].split(".")[0]) >= 8
    assert doc["tls"] == {"library": curl["tls"], "outpost_mbedtls": True, "tls13": True}
    features = set(curl["features"])
    assert {"NTLM", "HTTPS-proxy", "SSL"} <= features
    if TARGET.startswith("windows"):
        assert {"SSPI", "SPNEGO", "Kerberos"} <= features
    else:
        assert "SSPI" not in features
    text = outpost.run("version", "-v").stdout
    assert "TLS 1.3: yes" in text and ("SSPI" in text) == TARGET.startswith("windows")


@pytest.mark.skipif(not TARGET.startswith("windows"), reason="Windows imports")
def test_windows_exe_imports_winhttp_and_secur32():
    """The machine's proxy comes from WinHTTP (netsh winhttp, WPAD, PAC) and
    -v names the account SSPI presents (GetUserNameEx): both are imports of
    the exe itself; libcurl's SSPI loads secur32.dll at run time as well."""
    import shutil
    import subprocess
    objdump = shutil.which("x86_64-w64-mingw32-objdump")
    if objdump is None:
        pytest.skip("x86_64-w64-mingw32-objdump is not installed")
    exe = os.environ.get("OUTPOST_CROSS_EXE")  # the .exe itself (OUTPOST_BIN is the wine wrapper)
    assert exe, "OUTPOST_CROSS_EXE is not set (scripts/cross and scripts/release set it)"
    out = subprocess.run([objdump, "-p", exe], capture_output=True, text=True, check=True).stdout
    imported = {m.lower() for m in re.findall(r"DLL Name: (\S+)", out)}
    assert {"winhttp.dll", "secur32.dll"} <= imported, imported


def test_unknown_config_key_is_exit_2_naming_the_key(outpost, tmp_path):
    config = write_config(tmp_path, no_such_key=1)
    r = outpost.run("-c", target_path(config), "check")
    assert r.returncode == 2
    assert "no_such_key" in one_line(r.stderr)


def test_missing_config_file_is_exit_2(outpost, tmp_path):
    missing = tmp_path / "nowhere" / "outpost.json"
    r = outpost.run("-c", target_path(missing), "check")
    assert r.returncode == 2
    assert "outpost.json" in one_line(r.stderr)


def test_plain_http_to_a_remote_host_is_refused(outpost, tmp_path):
    config = write_config(tmp_path, base_url="http://tenant.example.com")
    r = outpost.run("-c", target_path(config), "check", env={"OUTPOST_API_KEY": "k"})
    assert r.returncode == 2
    assert "base_url" in one_line(r.stderr)


def test_usage_error_is_exit_2(outpost):
    r = outpost.run("no-such-command")
    assert r.returncode == 2
    assert r.stderr.strip()


def test_check_over_https_reports_the_update(outpost, sim_tls, tmp_path):
    config = write_config(tmp_path, sim_tls)
    r = outpost.run("-c", target_path(config), "check", env={"OUTPOST_API_KEY": "sim-api-key"})
    latest = sim_tls.installer()["version"]
    assert r.returncode == 10, r.stderr
    assert latest in r.stdout
    assert "sim-api-key" not in r.stdout + r.stderr
    # Nothing is written by check but the state: no staged installer.
    assert not (tmp_path / "state" / "staging" / "current").exists()


def test_check_with_an_untrusted_ca_is_a_tls_failure_not_temporary(outpost, sim_tls, tmp_path):
    config = write_config(tmp_path, sim_tls)
    doc = json.loads(config.read_text(encoding="utf-8"))
    doc["tls"]["ca_file"] = None  # no CA compiled in, none configured
    config.write_text(json.dumps(doc), encoding="utf-8")
    r = outpost.run("-c", target_path(config), "check", env={"OUTPOST_API_KEY": "sim-api-key"})
    assert r.returncode == 1, (r.returncode, r.stderr)
    one_line(r.stderr)


def test_wrong_api_key_is_exit_3(outpost, sim_tls, tmp_path):
    config = write_config(tmp_path, sim_tls)
    r = outpost.run("-c", target_path(config), "check", env={"OUTPOST_API_KEY": "wrong-key"})
    assert r.returncode == 3, r.stderr
    assert "wrong-key" not in r.stdout + r.stderr


def staged_files(state_dir):
    current = (state_dir / "staging" / "current").read_text(encoding="utf-8").strip()
    return current, state_dir / "staging" / current


def test_update_stages_a_verified_installer_under_a_unicode_state_dir(outpost, sim_tls, tmp_path):
    state_dir = tmp_path / UNICODE_DIR / "state"
    config = write_config(tmp_path, sim_tls, state_dir=state_dir)
    r = outpost.run("-c", target_path(config), "update", env={"OUTPOST_API_KEY": "sim-api-key"})
    assert r.returncode == 0, r.stderr
    info = sim_tls.installer()
    current, version_dir = staged_files(state_dir)
    assert current == info["version"]
    manifest = json.loads((version_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["sha256"] == info["sha256"]
    assert manifest["size"] == info["size"]
    installer = version_dir / manifest["staged_file"]  # outpost's name on disk
    assert hashlib.sha256(installer.read_bytes()).hexdigest() == info["sha256"]
    # Nothing half-written left behind by the atomic replacements.
    leftovers = [p.name for p in state_dir.rglob("*.tmp")]
    assert leftovers == []

    # A second update finds it staged and leaves the staged file alone.
    before = installer.stat().st_mtime_ns
    r = outpost.run("-c", target_path(config), "update", env={"OUTPOST_API_KEY": "sim-api-key"})
    assert r.returncode == 0, r.stderr
    assert "already staged" in r.stdout
    assert installer.stat().st_mtime_ns == before


def test_unicode_state_dir_on_the_command_line(outpost, sim_tls, tmp_path):
    state_dir = tmp_path / UNICODE_DIR / "cli"
    config = write_config(tmp_path, sim_tls)
    r = outpost.run("-c", target_path(config), "--state-dir", target_path(state_dir), "update",
                    env={"OUTPOST_API_KEY": "sim-api-key"})
    assert r.returncode == 0, r.stderr
    current, version_dir = staged_files(state_dir)
    assert current == sim_tls.installer()["version"]
    assert (version_dir / "manifest.json").is_file()
    assert not (tmp_path / "state").exists()


def test_api_key_file_readable_by_others_is_refused(outpost, sim_tls, tmp_path):
    key = tmp_path / "api_key"
    key.write_text("sim-api-key\n")
    os.chmod(key, 0o600)
    config = write_config(tmp_path, sim_tls, api_key_file=target_path(key))
    r = outpost.run("-c", target_path(config), "check")
    assert r.returncode == 10, r.stderr

    # Wine shows a Unix file's "other" permission bits as an access entry
    # for Everyone, as a Windows ACL would grant it.
    os.chmod(key, 0o644)
    r = outpost.run("-c", target_path(config), "check")
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "api_key" in line
    assert "sim-api-key" not in line
    if TARGET == "windows":
        assert "icacls" in line
    else:
        assert "chmod 600" in line


def test_a_folder_others_may_empty_above_the_configuration_is_refused(outpost, sim_tls, tmp_path):
    """Issue 34, finding 8: a folder on the way to a trusted file that lets others delete or rename what
    it holds (wine shows a Unix 0777 folder as Everyone: full control) is refused before anything is
    written, naming the folder, who and what right; the same files in a folder only its owner may change
    pass."""
    shared = tmp_path / "shared"
    shared.mkdir()
    config = write_config(shared, sim_tls, state_dir=tmp_path / "state")
    r = outpost.run("-c", target_path(config), "check", env={"OUTPOST_API_KEY": "sim-api-key"})
    assert r.returncode == 10, r.stderr
    os.chmod(shared, 0o777)
    r = outpost.run("-c", target_path(config), "check", env={"OUTPOST_API_KEY": "sim-api-key"})
    assert r.returncode == 2, r.stderr
    line = one_line(r.stderr)
    assert target_path(shared) in line
    if TARGET == "windows":
        assert "Everyone (S-1-1-0) may delete or rename what it holds (FILE_DELETE_CHILD)" in line
        assert "icacls" in line
    os.chmod(shared, 0o755)


def test_status_json_after_update(outpost, sim_tls, tmp_path):
    state_dir = tmp_path / "state"
    config = write_config(tmp_path, sim_tls, state_dir=state_dir)
    r = outpost.run("-c", target_path(config), "update", env={"OUTPOST_API_KEY": "sim-api-key"})
    assert r.returncode == 0, r.stderr
    r = outpost.run("-c", target_path(config), "status", "--json")
    # A manual update is not a scheduled run: status exits 75 until `run` has finished once.
    assert r.returncode == 75, r.stderr
    doc = json.loads(r.stdout)
    assert "last_run" not in doc and doc["installer"]["last_command"]["command"] == "update"
    expected_os = "windows" if TARGET == "windows" else "linux"
    assert doc["agent"]["os"] == expected_os
    assert doc["agent"]["arch"] == ("aarch64" if TARGET == "arm64" else "x86_64")
    assert doc["agent"]["hostname"] and doc["agent"]["hostname"] != "unknown"


def test_run_passes_the_reboot_code_and_writes_the_installers_log(outpost, sim_tls, tmp_path):
    """deploy.pass_reboot_code: an installer exiting 3010 ends `run` with 3010
    (SCCM/Intune: soft reboot); without it 0, and `status` names the reboot.
    The installer's output lands in state_dir/logs/."""
    if TARGET != "windows":
        pytest.skip("exit codes above 255 exist on Windows only")
    for passes, expected in ((True, 3010), (False, 0)):
        state_dir = tmp_path / f"state-{passes}"
        config = write_config(tmp_path, sim_tls, state_dir=state_dir,
                              deploy={"enabled": True, "pass_reboot_code": passes,
                                      "command": ["cmd.exe", "/c", "echo from-the-installer & exit 3010"]})
        r = outpost.run("-c", target_path(config), "run", env={"OUTPOST_API_KEY": "sim-api-key"})
        # wine hands the Linux parent the low 8 bits of a Windows exit code (3010 -> 194);
        # the status file keeps the whole code.
        assert r.returncode == expected & 0xFF, r.stderr
        status = json.loads((state_dir / "status.json").read_text(encoding="utf-8"))
        assert status["installer"]["deployed"]["reboot_required"] is True
        assert status["last_run"]["exit_code"] == expected
        logs = list((state_dir / "logs").glob("deploy-*.log"))
        assert len(logs) == 1 and "from-the-installer" in logs[0].read_text(errors="replace")
        s = outpost.run("-c", target_path(config), "status")
        assert s.returncode == expected & 0xFF, s.stdout
        assert s.stdout.splitlines()[0].startswith("ATTENTION: reboot required"), s.stdout


# ---- The Application event log (issue 16) ----------------------------------------
# wine's advapi32 ReportEventW is a stub: it records nothing, but prints its
# arguments on the advapi debug channel and the text on the eventlog channel
# (err for an error entry, warn for a warning), and returns success. That is
# enough to check that a failed scheduled run makes the call with the right
# id, type and text, and that the call does not fail the run; that the entry
# reaches a real Application log is for a real Windows (README).
EVENT_DEBUG = {"WINEDEBUG": "-all,fixme+advapi,err+eventlog,warn+eventlog"}
REPORT_EVENT = re.compile(r"fixme:advapi:ReportEventW \([0-9A-Fa-f]+,0x(?P<type>[0-9a-f]{4}),0x0000,"
                          r"0x(?P<id>[0-9a-f]{8}),")


def events(stderr):
    return [(int(m["type"], 16), int(m["id"], 16)) for m in REPORT_EVENT.finditer(stderr)]


def outpost_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("outpost: ")]


@pytest.mark.skipif(TARGET != "windows", reason="the event log is Windows only")
def test_a_failed_run_writes_an_event_log_entry(outpost, tmp_path):
    # No API key: a configuration error (exit 2), found before anything is written.
    config = write_config(tmp_path, base_url="https://localhost:1", log={"file": "outpost.log"})
    r = outpost.run("-c", target_path(config), "run", env=EVENT_DEBUG)
    assert r.returncode == 2, r.stderr
    assert events(r.stderr) == [(0x0001, 1000)], r.stderr  # EVENTLOG_ERROR_TYPE, "run failed"
    text = re.search(r'err:eventlog:ReportEventW L"(.*)"', r.stderr).group(1)
    assert text.startswith("run: no API key") and text.endswith("\\r\\noutpost run: exit code 2"), text
    assert len(outpost_lines(r.stderr)) == 1  # the call added nothing to outpost's own output
    # The event log is the system's: a configuration error writes nothing of outpost's own
    # (PRODUCT.md section 1), no state directory and so no log file.
    assert not (tmp_path / "state").exists()


@pytest.mark.skipif(TARGET != "windows", reason="the event log is Windows only")
def test_a_temporary_failure_is_a_warning_and_other_commands_write_none(outpost, tmp_path):
    config = write_config(tmp_path, base_url="https://localhost:1", http={"max_attempts": 1})
    r = outpost.run("-c", target_path(config), "run", env={**EVENT_DEBUG, "OUTPOST_API_KEY": "k"})
    assert r.returncode == 75, r.stderr
    assert events(r.stderr) == [(0x0002, 1002)], r.stderr  # EVENTLOG_WARNING_TYPE, "temporary"
    r = outpost.run("-c", target_path(config), "check", env={**EVENT_DEBUG, "OUTPOST_API_KEY": "k"})
    assert r.returncode == 75
    assert events(r.stderr) == [], r.stderr  # only `run` reports to the event log
