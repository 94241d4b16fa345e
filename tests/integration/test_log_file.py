"""log.file (issue 16, PRODUCT.md section 2): every line outpost writes to
stderr also lands in the log file, time-stamped in UTC with the command and
pid; it is created owner-only, rotated by rename past log.max_bytes keeping
log.keep files; a process killed while writing leaves at worst a partial
last line that the next run ends; no secret (API key, access token,
Authorization) ever reaches it; a log file that cannot be opened is said
once and changes nothing else.
"""

import json
import os
import re
import signal
import stat
import subprocess
import time

import pytest

from outpost_config import sim_config
from outpost_run import OUTPOST, outpost, outpost_start

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")

KEY = "op-test-key-5b1e9d27c4"
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (?P<command>[a-z]+)\[(?P<pid>\d+)\]: (?P<text>.*)$")


def configure(tmp_path, sim, **log):
    return sim_config(tmp_path, sim, installer={"verify": {"trusted_ca_file": None}},
                      log={"file": "outpost.log", **log})


def log_files(state_dir):
    return sorted(os.path.join(state_dir, f) for f in os.listdir(state_dir) if f.startswith("outpost.log"))


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


@pytest.mark.sim_options(incidents=5, rate_limit=0, api_key=KEY)
def test_every_stderr_line_is_logged_with_time_command_and_pid(sim, tmp_path):
    config, state_dir = configure(tmp_path, sim)
    sim.fault("incidents", "forbidden", count=-1)  # report fails: an error line
    result = outpost(config, "-v", "run", key=KEY)
    assert result.returncode != 0
    stderr = [l[len("outpost: "):] for l in result.stderr.splitlines() if l.startswith("outpost: ")]
    assert stderr, result.stderr
    path = os.path.join(state_dir, "outpost.log")
    lines = read(path).splitlines()
    parsed = [LINE.match(l) for l in lines]
    assert all(parsed), lines
    assert {m["command"] for m in parsed} == {"run"}
    assert len({m["pid"] for m in parsed}) == 1
    # Every stderr line, then the run's own line (start, outcome, exit
    # code, duration), which only the file gets.
    assert [m["text"] for m in parsed][:-1] == stderr
    assert re.fullmatch(r"started \S+Z, finished with a failure, exit code %d, \d+\.\d s" % result.returncode,
                        parsed[-1]["text"]), parsed[-1]["text"]
    assert any(t.startswith("run: report: ") for t in stderr)
    # Created owner-only (the state directory is private too).
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

    # A second command appends; its lines carry its own name and pid.
    outpost(config, "-v", "report", key=KEY)
    more = [LINE.match(l) for l in read(path).splitlines()[len(lines):]]
    assert more and all(more) and {m["command"] for m in more} == {"report"}
    assert more[0]["pid"] != parsed[0]["pid"]


@pytest.mark.sim_options(incidents=5, rate_limit=0, api_key=KEY)
def test_no_secret_reaches_the_log(sim, tmp_path):
    config, state_dir = configure(tmp_path, sim)
    for args in (("-vv", "run"), ("-vv", "report"), ("-vv", "check"), ("-vv", "update", "--force")):
        outpost(config, *args, key=KEY)
    # A refused key is an error line too, which must not quote the key.
    refused = outpost(config, "-vv", "report", key="op-wrong-key-0c9d2e")
    assert refused.returncode == 3
    # Tokens the simulator issued this test: "sim_" and 43 URL-safe characters.
    text = "".join(read(p) for p in log_files(state_dir))
    assert "http: POST /v2/auth/token/access" in text  # the -vv traces were logged
    assert KEY not in text and "op-wrong-key-0c9d2e" not in text
    assert not re.search(r"sim_[A-Za-z0-9_-]{20,}", text)
    assert "Bearer" not in text and "Authorization:" not in text


@pytest.mark.sim_options(incidents=5, rate_limit=0, api_key=KEY)
def test_rotation_by_rename_keeps_log_keep_files(sim, tmp_path):
    config, state_dir = configure(tmp_path, sim, max_bytes=4096, keep=2)
    rotated_twice = os.path.join(state_dir, "outpost.log.2")
    for _ in range(200):
        outpost(config, "-vv", "report", key=KEY)
        if os.path.exists(rotated_twice):
            break
    for _ in range(10):  # more rotations: the oldest is dropped, never a .3
        outpost(config, "-vv", "report", key=KEY)
    files = log_files(state_dir)
    names = [os.path.basename(p) for p in files]
    assert names == ["outpost.log", "outpost.log.1", "outpost.log.2"], names
    for p in files:
        data = read(p)
        assert 0 < len(data.encode()) <= 4096
        assert data.endswith("\n")
        assert all(LINE.match(l) for l in data.splitlines())
    # The newest lines are in outpost.log, older ones in .1, .2.
    assert os.stat(files[2]).st_mtime <= os.stat(files[1]).st_mtime
    assert os.stat(files[1]).st_mtime <= os.stat(files[0]).st_mtime


@pytest.mark.sim_options(incidents=40, rate_limit=0, api_key=KEY, latency_ms=20)
def test_a_kill_while_writing_leaves_at_worst_one_partial_line(sim, tmp_path):
    config, state_dir = configure(tmp_path, sim)
    path = os.path.join(state_dir, "outpost.log")
    proc = outpost_start(config, "-vv", "report", key=KEY, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Kill it once it has logged something (or let it finish: the checks hold either way).
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            break
        time.sleep(0.01)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    # What a kill inside a write (or a power loss) can leave: a partial last line.
    with open(path, "a", encoding="utf-8") as f:
        f.write("2026-01-01T00:00:00Z report[1]: cut off in the mid")
    before = read(path)
    result = outpost(config, "-v", "report", key=KEY)
    after = read(path)
    assert after.startswith(before)  # nothing before was touched
    new = after[len(before):]
    assert new.startswith("\n"), "the partial line was not ended"
    lines = new[1:].splitlines()
    assert lines and all(LINE.match(l) for l in lines), lines
    complete = before.splitlines()[:-1]
    assert all(LINE.match(l) for l in complete)
    assert result.returncode in (0, 75)


@pytest.mark.sim_options(incidents=2, rate_limit=0, api_key=KEY)
def test_a_log_file_that_cannot_be_opened_is_said_once(sim, tmp_path):
    config, state_dir = configure(tmp_path, sim)
    with open(config, encoding="utf-8") as f:
        c = json.load(f)
    c["log"] = {"file": str(tmp_path / "no-such-dir" / "outpost.log")}
    with open(config, "w", encoding="utf-8") as f:
        json.dump(c, f)
    result = outpost(config, "-q", "-vv", "report", key=KEY)
    assert result.returncode == 0, result.stderr
    warnings = [l for l in result.stderr.splitlines() if "cannot open the log file" in l]
    assert len(warnings) == 1, result.stderr
    assert "log.file" in warnings[0] and "no-such-dir" in warnings[0]
    assert os.path.exists(os.path.join(state_dir, "status.json"))


@pytest.mark.parametrize("log,message", [
    ({"max_bytes": 100}, "`log.max_bytes` must be a whole number from 4096 to 1073741824"),
    ({"keep": 0}, "`log.keep` must be a whole number from 1 to 100"),
    ({"file": ""}, "`log.file` must be a file name"),
    ({"rotate": True}, "unknown key `log.rotate`"),
])
def test_log_keys_are_validated(tmp_path, log, message):
    config = tmp_path / "outpost.json"
    config.write_text(json.dumps({"state_dir": str(tmp_path / "state"), "log": log}))
    result = outpost(config, "status", timeout=60)
    assert result.returncode == 2
    assert message in result.stderr
