"""Issue 18, the administrator's day: roles (installer.enabled, report.enabled)
with the README's three configurations run end to end against the simulator;
last_run belongs to `run`; `status` answers "is this machine OK?" (verdict
line, exit code, --max-age); deploy that fits Windows (default command by
format, CommandLineToArgvW quoting, the installer's log under
state_dir/logs/); text files the way Windows writes them (BOM, CRLF,
UTF-16, single backslashes); and the smaller items (--state-dir without a
configuration file, -vv, --json everywhere, stage --force, the 429 metric).
Every time is computed relative to now.
"""

import datetime
import json
import os
import re
from pathlib import Path

import pytest

from authenticode_fixtures import tiny_pe
from outpost_config import sim_config
from outpost_run import API_KEY, OUTPOST, jsonl_lines, only_line, outpost, outpost_start
from schema_check import check_status_file

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")

README = Path(__file__).resolve().parents[2] / "README.md"


# ---- Helpers ----------------------------------------------------------------------------

def merge(base, changes):
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def write_config(tmp_path, doc, name="outpost.json"):
    path = Path(tmp_path) / name
    path.write_text(json.dumps(doc))
    return path


def routes(sim):
    return sim.log()["summary"]["by_route"]


def status_doc(state):
    return check_status_file(str(Path(state) / "status.json"))


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def readme_config(role):
    """The JSON block that follows `<!-- role: NAME -->` in the README."""
    text = README.read_text(encoding="utf-8")
    m = re.search(r"<!-- role: " + role + r" -->\s*```json\n(.*?)```", text, re.S)
    assert m, f"the README has no {role} configuration"
    return json.loads(m.group(1))


def from_readme(tmp_path, sim, role, **changes):
    """The README's configuration for role, pointed at the simulator and tmp_path."""
    doc = readme_config(role)
    state = Path(tmp_path) / "state"
    key = Path(tmp_path) / "api_key"
    # Written the way PowerShell 5.1's Set-Content -Encoding UTF8 writes it.
    key.write_bytes(b"\xef\xbb\xbf" + API_KEY.encode() + b"\r\n")
    key.chmod(0o600)
    if "base_url" in doc:
        doc["base_url"] = sim.url
    if "api_key_file" in doc:
        doc["api_key_file"] = str(key)
    doc["state_dir"] = str(state)
    return write_config(tmp_path, merge(doc, changes)), state


# ---- 1. Roles ------------------------------------------------------------------------------

@pytest.mark.sim_options(incidents=8, rate_limit=0)
def test_collector_role_never_touches_the_installer(sim, tmp_path):
    # The README's collector: installer.enabled false, the default CA path
    # (/etc/outpost/publisher-ca.pem) absent on this machine.
    assert not Path("/etc/outpost/publisher-ca.pem").exists()
    config, state = from_readme(tmp_path, sim, "collector")
    r = outpost(config, "run", key=None)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert "installer" not in routes(sim), "a collector downloaded the installer"
    assert not (state / "staging").exists() and not (state / "downloads").exists()
    doc = status_doc(state)
    assert doc["last_run"]["result"] == "ok" and doc["last_run"]["errors"] == []
    assert doc["incidents"]["new"] == 8 and len(jsonl_lines(state)) == 8
    s = outpost(config, "status", key=None)
    assert s.returncode == 0 and s.stdout.startswith("OK: "), s.stdout


@pytest.mark.sim_options(incidents=8, rate_limit=0)
def test_endpoint_role_never_reports(sim, tmp_path):
    # The README's endpoint (until mirror.urls arrives with the fleet mirror):
    # report.enabled false; the simulator's installer is unsigned.
    config, state = from_readme(tmp_path, sim, "endpoint",
                                installer={"verify": {"require_signature": False, "trusted_ca_file": None}},
                                deploy={"command": ["/bin/sh", "-c", "exit 0"]}, schedule={"jitter": "0s"})
    r = outpost(config, "run", key=None)
    assert r.returncode == 0, r.stderr
    by_route = routes(sim)
    assert "installer" in by_route and "incidents" not in by_route, by_route
    assert not (state / "incidents.jsonl").exists()
    doc = status_doc(state)
    assert doc["last_run"]["result"] == "ok"
    assert doc["installer"]["staged"]["version"] == sim.installer()["version"]
    assert "incidents" not in doc


@pytest.mark.sim_options(incidents=5, rate_limit=0)
def test_standalone_role_updates_deploys_and_reports(sim, tmp_path):
    marker = tmp_path / "deployed"
    config, state = from_readme(tmp_path, sim, "standalone",
                                installer={"verify": {"require_signature": False, "trusted_ca_file": None}},
                                deploy={"enabled": True,
                                        "command": ["/bin/sh", "-c", f"echo installing; touch '{marker}'"]})
    r = outpost(config, "run", key=None)
    assert r.returncode == 0, r.stderr
    by_route = routes(sim)
    assert "installer" in by_route and "incidents" in by_route
    assert by_route.get("token") == 1, by_route
    assert marker.exists()
    doc = status_doc(state)
    assert doc["installer"]["deployed"]["version"] == sim.installer()["version"]
    assert doc["incidents"]["new"] == 5
    assert "installing" not in r.stdout + r.stderr, "the installer's output goes to its log"
    logs = list((state / "logs").glob("deploy-*.log"))
    assert len(logs) == 1 and "installing" in logs[0].read_text()


@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_both_parts_off_is_an_ok_run_that_calls_nobody(sim, tmp_path):
    config, state = sim_config(tmp_path, sim, installer={"enabled": False}, report={"enabled": False})
    r = outpost(config, "run")
    assert r.returncode == 0, r.stderr
    assert sim.log()["summary"]["total"] == 0
    assert status_doc(state)["last_run"]["result"] == "ok"


# ---- 1b. last_run belongs to run ----------------------------------------------------------

@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_a_manual_check_keeps_the_scheduled_runs_verdict(sim, tmp_path):
    config, state = sim_config(tmp_path, sim,
                               installer={"verify": {"require_signature": False, "trusted_ca_file": None}},
                               deploy={"enabled": True, "command": ["/bin/sh", "-c", "echo broken; exit 3"]})
    r = outpost(config, "run")
    assert r.returncode == 1, r.stderr
    check = outpost(config, "check")
    assert check.returncode == 10, check.stderr
    doc = status_doc(state)
    assert doc["last_run"]["exit_code"] == 1 and doc["last_run"]["result"] == "partial"
    assert doc["installer"]["last_command"]["command"] == "check"
    assert doc["installer"]["last_command"]["exit_code"] == 10
    s = outpost(config, "status")
    assert s.returncode == 1, s.stdout
    verdict = s.stdout.splitlines()[0]
    assert verdict.startswith("ATTENTION: the last run failed (exit code 1): deploy: "), verdict
    assert "the deploy of " + sim.installer()["version"] + " failed, see " in verdict
    assert "DEPLOY FAILED" in s.stdout and "exit code 3" in s.stdout
    assert "last command: check" in s.stdout


# ---- 2. status --------------------------------------------------------------------------

def craft_status(state, finished, **installer):
    state.mkdir(parents=True, exist_ok=True)
    doc = {"schema_version": 1, "generated_at": iso(finished),
           "agent": {"version": "0.1.0", "hostname": "h", "os": "linux", "arch": "x86_64"},
           "last_run": {"started_at": iso(finished - datetime.timedelta(seconds=30)), "finished_at": iso(finished),
                        "result": "ok", "exit_code": 0, "errors": []}}
    if installer:
        doc["installer"] = installer
    (state / "status.json").write_text(json.dumps(doc))


def test_status_max_age_turns_a_stale_status_into_75(tmp_path):
    state = tmp_path / "state"
    config = write_config(tmp_path, {"state_dir": str(state)})
    now = datetime.datetime.now(datetime.timezone.utc)
    craft_status(state, now - datetime.timedelta(hours=2))
    fresh = outpost(config, "status", "--max-age", "3h")
    assert fresh.returncode == 0 and fresh.stdout.startswith("OK: the last run succeeded 2h"), fresh.stdout
    stale = outpost(config, "status", "--max-age", "1h")
    assert stale.returncode == 75, stale.stdout
    assert stale.stdout.splitlines()[0].startswith("ATTENTION: stale: the last successful run finished 2h")
    as_json = outpost(config, "status", "--json", "--max-age", "60m")
    assert as_json.returncode == 75
    assert json.loads(as_json.stdout)["last_run"]["exit_code"] == 0  # one JSON document, nothing else
    assert outpost(config, "status").returncode == 0  # without --max-age, status.max_age: 3h
    bad = outpost(config, "status", "--max-age", "soon")
    assert bad.returncode == 2 and "--max-age" in only_line(bad)


def test_status_names_a_pending_reboot_until_the_machine_restarts(tmp_path):
    boot = Path("/proc/sys/kernel/random/boot_id")
    if not boot.exists():
        pytest.skip("no boot id on this system")
    state = tmp_path / "state"
    config = write_config(tmp_path, {"state_dir": str(state)})
    now = datetime.datetime.now(datetime.timezone.utc)
    deployed = {"version": "2.0", "at": iso(now), "exit_code": 3010, "reboot_required": True,
                "verified": "unverified", "boot_id": boot.read_text().strip()}
    craft_status(state, now, installed_version="2.0", deployed=deployed)
    s = outpost(config, "status")
    assert s.returncode == 0
    assert s.stdout.splitlines()[0] == "ATTENTION: reboot required to finish the deploy of 2.0"
    assert "REBOOT REQUIRED" in s.stdout
    deployed["boot_id"] = "another-boot"
    craft_status(state, now, installed_version="2.0", deployed=deployed)
    s = outpost(config, "status")
    assert s.stdout.startswith("OK: ") and "rebooted since" in s.stdout, s.stdout


def test_status_without_any_run_is_attention_and_75(tmp_path):
    state = tmp_path / "state"
    config = write_config(tmp_path, {"state_dir": str(state)})
    state.mkdir()
    (state / "status.json").write_text(json.dumps({"schema_version": 1, "generated_at": "2026-01-01T00:00:00Z",
                                                   "agent": {"version": "0.1.0"}}))
    s = outpost(config, "status")
    assert s.returncode == 75
    assert s.stdout.splitlines()[0].startswith("ATTENTION: no scheduled run has finished yet")


# ---- 3. Deploy that fits Windows --------------------------------------------------------

def staged_agent(tmp_path, deploy=None, state_name="state"):
    state = tmp_path / state_name
    doc = {"state_dir": str(state), "installer": {"verify": {"require_signature": False, "trusted_ca_file": None}}}
    if deploy is not None:
        doc["deploy"] = deploy
    config = write_config(tmp_path, doc)
    exe = tmp_path / "Sensor Setup.exe"
    exe.write_bytes(tiny_pe())
    r = outpost(config, "stage", str(exe), "--version", "2.0.1", key=None)
    assert r.returncode == 0, r.stderr
    return config, state, status_doc(state)["installer"]["staged"]["path"]


def win_quote(arg):
    return f'"{arg}"' if " " in arg else arg


def test_default_deploy_of_a_pe_is_the_installer_with_pe_args(tmp_path):
    config, state, path = staged_agent(tmp_path, state_name="state dir")
    r = outpost(config, "deploy", "--dry-run", key=None)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split(": ", 1)[1] == f"{win_quote(path)} /quiet /norestart\n"
    j = outpost(config, "deploy", "--dry-run", "--json", key=None)
    doc = json.loads(j.stdout)  # the whole of stdout is one JSON document
    assert doc["argv"] == [path, "/quiet", "/norestart"] and doc["dry_run"] is True
    assert doc["log"].startswith(str(state / "logs" / "deploy-2.0.1-"))


def test_default_deploy_of_an_msi_is_msiexec_with_a_log(tmp_path, fx):
    state = tmp_path / "state"
    config = write_config(tmp_path, {"state_dir": str(state),
                                     "installer": {"verify": {"require_signature": False, "trusted_ca_file": None}}})
    r = outpost(config, "stage", str(fx / "unsigned.msi"), "--version", "26.1.3.24329", key=None)
    assert r.returncode == 0, r.stderr
    j = json.loads(outpost(config, "deploy", "--dry-run", "--json", key=None).stdout)
    path = status_doc(state)["installer"]["staged"]["path"]
    assert j["argv"][:5] == ["msiexec", "/i", path, "/qn", "/norestart"]
    assert j["argv"][5] == "/l*v" and j["argv"][6] == j["log"]
    assert j["log"].startswith(str(state / "logs" / "deploy-26.1.3.24329-")) and j["log"].endswith(".log")


def test_dry_run_quotes_by_commandlinetoargvw_rules(tmp_path):
    command = ["/bin/sh", "-c", 'echo "hi there"', "INSTALLDIR=C:\\Program Files\\", "", "{installer}"]
    config, state, path = staged_agent(tmp_path, deploy={"command": command})
    r = outpost(config, "deploy", "--dry-run", key=None)
    assert r.returncode == 0, r.stderr
    line = r.stdout.split(": ", 1)[1].rstrip("\n")
    assert line == ('/bin/sh -c "echo \\"hi there\\"" "INSTALLDIR=C:\\Program Files\\\\" "" ' + win_quote(path))


def test_the_installers_output_goes_to_its_log(tmp_path):
    script = "echo out-line; echo err-line >&2; exit 3"
    config, state, _ = staged_agent(tmp_path, deploy={"command": ["/bin/sh", "-c", script]})
    r = outpost(config, "deploy", key=None)
    assert r.returncode == 1
    line = only_line(r)
    m = re.search(r"see the installer's log (\S+\.log)$", line)
    assert m, line
    log = Path(m.group(1))
    assert log.parent == state / "logs" and log.exists()
    assert "out-line" in log.read_text() and "err-line" in log.read_text()
    assert "out-line" not in r.stdout and "err-line" not in r.stderr
    assert status_doc(state)["installer"]["deploy_failure"]["log"] == str(log)


# ---- 4. Text the way Windows writes it ---------------------------------------------------

@pytest.mark.sim_options(incidents=2, rate_limit=0)
def test_bom_and_crlf_config_and_key_file_work(sim, tmp_path):
    state = tmp_path / "state"
    key = tmp_path / "api_key"
    key.write_bytes(b"\xef\xbb\xbf" + API_KEY.encode() + b"\r\n")
    key.chmod(0o600)
    doc = {"base_url": sim.url, "api_key_file": str(key), "state_dir": str(state)}
    config = tmp_path / "outpost.json"
    config.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc, indent=2).replace("\n", "\r\n").encode())
    r = outpost(config, "report", key=None)
    assert r.returncode == 0, r.stderr
    assert status_doc(state)["incidents"]["new"] == 2


def test_utf16_files_are_refused_with_save_it_as_utf8(tmp_path):
    state = tmp_path / "state"
    for bom, encoding in ((True, "utf-16"), (False, "utf-16-le")):
        config = tmp_path / "outpost.json"
        config.write_bytes(json.dumps({"state_dir": str(state)}).encode(encoding))
        r = outpost(config, "status", key=None)
        assert r.returncode == 2, r.stderr
        line = only_line(r)
        assert "UTF-16" in line and "save it as UTF-8" in line, line
    key = tmp_path / "api_key"
    key.write_bytes(API_KEY.encode("utf-16"))
    key.chmod(0o600)
    config = write_config(tmp_path, {"base_url": "http://127.0.0.1:9", "api_key_file": str(key),
                                     "state_dir": str(state), "installer": {"enabled": False}})
    r = outpost(config, "report", key=None)
    assert r.returncode == 2 and "save it as UTF-8" in only_line(r)


def test_version_file_with_bom_and_crlf_and_utf16(tmp_path):
    version_file = tmp_path / "version.txt"
    config, state, _ = staged_agent(tmp_path, deploy={"command": ["/bin/sh", "-c", "exit 0"]})
    doc = json.loads(config.read_text())
    doc["installer"]["installed_version_file"] = str(version_file)
    config.write_text(json.dumps(doc))
    version_file.write_bytes(b"\xef\xbb\xbf2.0.1\r\n")  # Notepad / Set-Content -Encoding UTF8
    r = outpost(config, "deploy", key=None)
    assert r.returncode == 0, r.stderr
    assert status_doc(state)["installer"]["installed_version"] == "2.0.1"
    version_file.write_bytes("2.0.1\r\n".encode("utf-16"))  # Out-File
    r = outpost(config, "deploy", key=None)
    assert r.returncode == 2, r.stderr
    assert "UTF-16" in only_line(r) and "save it as UTF-8" in only_line(r)


def test_single_backslashes_in_a_windows_path_get_the_hint(tmp_path):
    config = tmp_path / "outpost.json"
    config.write_text('{\n  "state_dir": "C:\\ProgramData\\outpost"\n}\n')
    r = outpost(config, "status", key=None)
    assert r.returncode == 2
    line = only_line(r)
    assert "line 2 has a single backslash" in line and "write `\\\\` or `/`" in line, line


# ---- 5. Smaller, each seen --------------------------------------------------------------

def test_state_dir_wins_without_a_configuration_file(tmp_path):
    assert not Path("/etc/outpost/outpost.json").exists()
    state = tmp_path / "elsewhere"
    r = outpost(None, "--state-dir", str(state), "status", key=None)
    assert r.returncode == 75
    assert f"no status file yet ({state / 'status.json'})" in r.stdout, r.stdout
    r = outpost(None, "--state-dir", str(state), "check", key=None)
    assert r.returncode == 2
    assert "/etc/outpost/outpost.json does not exist" in only_line(r)
    assert not Path("/var/lib/outpost/status.json").exists()


def test_vv_is_accepted(tmp_path):
    state = tmp_path / "state"
    config = write_config(tmp_path, {"state_dir": str(state)})
    craft_status(state, datetime.datetime.now(datetime.timezone.utc))
    r = outpost(config, "-vv", "status", key=None)
    assert r.returncode == 0, r.stderr
    assert outpost(config, "status", "-vvv", key=None).returncode == 0


def test_version_verbose_says_what_it_runs_on():
    """`version --verbose` (PRODUCT.md sections 1 and 10): the libraries as linked, TLS 1.3, the
    crypto paths, libcurl's features; the text and --json say the same. Every build runs Mbed TLS
    3.6 with outpost's hooks; the release builds' libcurl is 8.x over it, HTTP and HTTPS only,
    TLS 1.3 on, NTLM its own (the Debian build's libcurl is Debian's, over OpenSSL)."""
    r = outpost(None, "version", "--verbose", "--json", key=None)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    libs = doc["libraries"]
    assert libs["mbedtls"]["version"].startswith("3.6.")
    assert all(doc["crypto"][p]["mbedtls_uses_it"] for p in ("sha256", "aes_gcm"))
    assert "chacha20" not in doc["crypto"]  # Mbed TLS's own ChaCha20 (issue 32: no hook)
    curl = libs["libcurl"]
    if doc["tls"]["outpost_mbedtls"]:  # a release build
        assert curl["tls"] == "mbedTLS/" + libs["mbedtls"]["version"]
        assert int(curl["version"].split(".")[0]) >= 8
        assert doc["tls"]["tls13"] is True
        assert sorted(curl["protocols"]) == ["http", "https"]
        assert {"NTLM", "HTTPS-proxy", "SSL", "libz"} <= set(curl["features"])
    else:
        assert doc["tls"]["library"] == curl["tls"]
    text = outpost(None, "version", "-v", key=None).stdout
    assert f"libcurl {curl['version']} (TLS: {curl['tls']}" in text
    assert f"Mbed TLS {libs['mbedtls']['version']}\n" in text
    assert f"TLS 1.3: {'yes' if doc['tls']['tls13'] else 'no'}" in text or doc["tls"]["tls13"] is None
    assert "features: " + " ".join(curl["features"]) in text
    assert outpost(None, "version", key=None).stdout == f"outpost {doc['version']}\n"


@pytest.mark.sim_options(incidents=4, rate_limit=0)
def test_json_is_one_document_on_stdout_for_every_command(sim, tmp_path):
    config, state = sim_config(tmp_path, sim, installer={"verify": {"require_signature": False,
                                                                     "trusted_ca_file": None}})
    assert json.loads(outpost(config, "version", "--json").stdout)["version"]
    report = outpost(config, "report", "--json")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["new"] == 4
    text = outpost(config, "report")
    assert re.fullmatch(r"report: 0 new incidents \(0 traced, 0 untraceable, 0 failed\) of \d+ listed, \d+ API calls\n",
                        text.stdout), text.stdout
    exe = tmp_path / "a.exe"
    for version, tag in (("1.0", 1), ("2.0", 2)):
        exe.write_bytes(tiny_pe(tag))
        staged = outpost(config, "--json", "stage", str(exe), "--version", version)
        assert json.loads(staged.stdout)["signer"] is None
    bundle = outpost(config, "bundle", "--json", "-o", str(tmp_path / "b.zip"))
    assert json.loads(bundle.stdout) == {"path": str(tmp_path / "b.zip"), "format": "zip"}
    rollback = outpost(config, "rollback", "--json")
    assert json.loads(rollback.stdout) == {"current": "1.0", "previous": "2.0"}
    dry = outpost(config, "deploy", "--dry-run", "--json")
    assert json.loads(dry.stdout)["version"] == "1.0"
    updated = outpost(config, "update", "--json")
    assert updated.returncode == 0, updated.stderr
    assert json.loads(updated.stdout)["staged"]["signer"] is None
    # run: its parts print nothing of their own; one document, its last_run.
    ran = outpost(config, "run", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == status_doc(state)["last_run"]


def test_stage_force_replaces_a_staged_version(tmp_path):
    config, state, path = staged_agent(tmp_path)
    other = tmp_path / "other.exe"
    other.write_bytes(tiny_pe(7))
    kept = outpost(config, "stage", str(other), "--version", "2.0.1", key=None)
    assert kept.returncode == 0 and "use --force to replace it" in kept.stderr
    forced = outpost(config, "stage", str(other), "--version", "2.0.1", "--force", key=None)
    assert forced.returncode == 0, forced.stderr
    assert status_doc(state)["installer"]["staged"]["sha256"] == __import__("hashlib").sha256(tiny_pe(7)).hexdigest()


@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_run_metrics_count_429s(sim, tmp_path):
    config, state = sim_config(tmp_path, sim, installer={"verify": {"require_signature": False,
                                                                     "trusted_ca_file": None}},
                               report={"metrics_file": "outpost.prom"}, http={"max_retry_wait": "5s"})
    sim.fault("incidents", "status", status=429, retry_after=1, count=1)
    r = outpost(config, "run")
    assert r.returncode == 0, r.stderr
    metrics = (state / "outpost.prom").read_text()
    assert "outpost_report_responses_429 1\n" in metrics, metrics


def on_a_terminal(config, *args):
    """Runs outpost with stderr on a pseudo-terminal; returns (exit code, stdout, what the terminal showed)."""
    import pty
    main_fd, tty_fd = pty.openpty()
    p = outpost_start(config, *args, stderr=tty_fd)
    os.close(tty_fd)
    shown = b""
    while True:
        try:
            chunk = os.read(main_fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    out, _ = p.communicate(timeout=60)
    os.close(main_fd)
    return p.returncode, out, shown.decode(errors="replace")


@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_progress_and_the_jitter_wait_show_on_a_terminal_only(sim, tmp_path):
    config, state = sim_config(tmp_path, sim, installer={"enabled": False}, schedule={"jitter": "1s"})
    code, out, shown = on_a_terminal(config, "run")
    assert code == 0, shown
    assert "of start jitter (schedule.jitter 1 s)" in shown
    code, out, shown = on_a_terminal(config, "report")
    assert code == 0, shown
    assert "incidents listed" in shown and out.startswith("report: ")
    # Not a terminal (a scheduled task): nothing on stderr.
    quiet = outpost(config, "run")
    assert quiet.returncode == 0 and quiet.stderr == ""
