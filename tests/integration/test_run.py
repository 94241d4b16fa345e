"""`run` and `status` (issue 5): the composition of update (+ deploy) and
report, each part's failure captured without stopping the other, exit code
= the most serious outcome, Retry-After honoured by the next run, the
metrics file, and `status` with and without --json. Every status.json is
validated against tests/status.schema.json.
"""

import json
import os

import pytest

from outpost_config import sim_config, update_config as set_config
from outpost_run import OUTPOST, jsonl_lines, outpost
from schema_check import check_status_file

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")


def status(state_dir):
    return check_status_file(os.path.join(state_dir, "status.json"))


def test_status_without_a_status_file_says_so(tmp_path):
    config = tmp_path / "outpost.json"
    config.write_text(json.dumps({"state_dir": str(tmp_path / "state")}))
    result = outpost(str(config), "status")
    # 75, as README, help and man page say: "not yet", not "failed".
    assert result.returncode == 75, result.stderr
    assert result.stdout.startswith("ATTENTION: no scheduled run has finished yet (outpost run)\n")
    # --json: a status document all the same, whose verdict says so.
    raw = outpost(str(config), "status", "--json")
    assert raw.returncode == 75
    doc = json.loads(raw.stdout)
    assert doc["schema_version"] == 1 and "last_run" not in doc
    assert doc["verdict"] == {"attention": True, "exit_code": 75,
                              "text": "ATTENTION: no scheduled run has finished yet (outpost run)"}
    # A read-only command writes nothing: no state directory appears.
    assert not (tmp_path / "state").exists()


@pytest.mark.sim_options(incidents=20, rate_limit=0)
def test_run_reports_and_records_each_part(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim, report={"metrics_file": "outpost.prom"})
    # No CA file on this machine: say so (a named, missing one stops update before it downloads).
    set_config(config, installer={"verify": {"trusted_ca_file": None}})
    result = outpost(config, "run")
    doc = status(state_dir)
    last = doc["last_run"]
    assert last["exit_code"] == result.returncode
    stages = [e["stage"] for e in last["errors"]]
    assert "report" not in stages, result.stderr
    assert last["result"] == ("ok" if not stages else "partial")
    # Each failed part is one line on stderr, nothing else.
    assert len(result.stderr.strip().splitlines()) == len(stages), result.stderr
    assert doc["incidents"]["new"] == 20 and len(jsonl_lines(state_dir)) == 20
    assert "installer" in doc
    assert "installer" in sim.log()["summary"]["by_route"], "update was not attempted"

    metrics = open(os.path.join(state_dir, "outpost.prom"), encoding="utf-8").read()
    assert "outpost_report_incidents_new 20\n" in metrics
    assert f"outpost_last_run_exit_code {result.returncode}\n" in metrics
    assert "# TYPE outpost_last_run_result gauge" in metrics

    human = outpost(config, "status")
    assert human.returncode == result.returncode  # status exits with the last run's code
    assert human.stdout.startswith("OK: " if result.returncode == 0 else "ATTENTION: the last run failed")
    assert "20 new" in human.stdout and "Top hosts:" in human.stdout
    raw = outpost(config, "status", "--json")
    assert raw.returncode == result.returncode
    printed = json.loads(raw.stdout)
    verdict = printed.pop("verdict")  # the file as it is, plus the verdict
    assert verdict["exit_code"] == result.returncode and verdict["text"] == human.stdout.splitlines()[0]
    with open(os.path.join(state_dir, "status.json"), encoding="utf-8") as f:
        assert printed == json.load(f)
    assert outpost(config, "--json", "status").stdout == raw.stdout


@pytest.mark.sim_options(incidents=10, rate_limit=0)
def test_a_failing_report_does_not_stop_the_update(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim)
    set_config(config, installer={"verify": {"trusted_ca_file": None}})
    sim.fault("incidents", "forbidden", count=-1)
    result = outpost(config, "run")
    assert result.returncode == 3, result.stderr
    last = status(state_dir)["last_run"]
    assert "report" in [e["stage"] for e in last["errors"]]
    assert last["exit_code"] == 3 and last["result"] in ("partial", "failed")
    assert "installer" in sim.log()["summary"]["by_route"], "update did not run"
    assert not jsonl_lines(state_dir)


@pytest.mark.sim_options(incidents=10, rate_limit=0)
def test_retry_after_beyond_the_run_is_honoured_by_the_next_run(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim)
    set_config(config, http={"max_retry_wait": "2s"}, installer={"verify": {"require_signature": False, "trusted_ca_file": None}})
    sim.fault("incidents", "status", status=429, retry_after=3600, count=-1)
    first = outpost(config, "run")
    assert first.returncode == 75, first.stderr
    sim.clear_faults()
    sim.clear_log()
    second = outpost(config, "run")
    assert second.returncode == 75, second.stderr
    assert sim.log()["summary"]["total"] == 0, "the platform was called before its Retry-After"
    last = status(state_dir)["last_run"]
    assert [e["stage"] for e in last["errors"]] == ["run"]
    assert "Retry-After" in last["errors"][0]["message"]


@pytest.mark.sim_options(incidents=12, rate_limit=0)
def test_run_with_both_parts_working_is_ok(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim)
    set_config(config, installer={"verify": {"require_signature": False, "trusted_ca_file": None}})
    result = outpost(config, "run")
    assert result.returncode == 0, result.stderr
    doc = status(state_dir)
    assert doc["last_run"]["result"] == "ok" and doc["last_run"]["errors"] == []
    assert doc["installer"]["latest_version"] == sim.installer()["version"]
    assert doc["incidents"]["new"] == 12
    # One access token per run: update and report share the run's client.
    assert sim.log()["summary"]["by_route"].get("token") == 1, sim.log()["summary"]["by_route"]
    # A second run has nothing new and still succeeds.
    assert outpost(config, "run").returncode == 0
    assert status(state_dir)["incidents"]["new"] == 0


@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_deploy_child_gets_a_clean_environment_and_no_descriptors(sim, tmp_path):
    """The reported symptom: `sh -c 'env; ls /proc/$$/fd'` as the deploy
    command under `run` showed OUTPOST_API_KEY and libcurl's sockets. The
    installer sees neither outpost's variables nor proxy URLs (they may
    carry credentials), keeps what installers need, and inherits only
    stdin, stdout and stderr."""
    config, state_dir = sim_config(tmp_path, sim)
    version_file = tmp_path / "installed-version"
    version_file.write_text("1.0\n")
    env_out, fd_out = tmp_path / "env.txt", tmp_path / "fd.txt"
    # exec >FILE: the shell keeps no saved copy of stdout aside; the listing
    # may show 3 as well, the directory ls is reading.
    script = (f"env > '{env_out}'; echo '{sim.installer()['version']}' > '{version_file}'; "
              f"exec > '{fd_out}'; ls /proc/$$/fd")
    set_config(config, installer={"verify": {"require_signature": False, "trusted_ca_file": None},
                                  "installed_version_file": str(version_file)},
               deploy={"enabled": True, "command": ["/bin/sh", "-c", script, "sh", "{installer}"]})
    result = outpost(config, "run", env_extra={
        "OUTPOST_TEST_MARKER": "x", "HTTPS_PROXY": "http://proxyuser:proxysecret@127.0.0.1:9",
        "http_proxy": "http://u:s@127.0.0.1:9", "ALL_PROXY": "socks5://u:s@127.0.0.1:9", "NO_PROXY": "*",
        "DEPLOY_KEEP_ME": "kept"})
    assert result.returncode == 0, result.stderr
    assert status(state_dir)["installer"]["deployed"]["version"] == sim.installer()["version"]

    seen = dict(line.split("=", 1) for line in env_out.read_text().splitlines() if "=" in line)
    assert not [k for k in seen if k.upper().startswith("OUTPOST_")], seen.keys()
    assert not [k for k in seen if k.upper().endswith("_PROXY")], seen.keys()
    assert "proxysecret" not in env_out.read_text() and "sim-api-key" not in env_out.read_text()
    assert seen.get("DEPLOY_KEEP_ME") == "kept" and seen.get("PATH") == os.environ["PATH"]
    if os.path.isdir("/proc/self/fd"):
        fds = sorted(int(n) for n in fd_out.read_text().split())
        assert [n for n in fds if n > 3] == [], f"the installer inherited descriptors {fds}"
