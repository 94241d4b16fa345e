"""`outpost service install|uninstall` off Windows: the command exists for the
MSI (the Task Scheduler task lives in C, tests/unit/test_schedtask.c), and on
Linux it refuses, naming the systemd timer, before touching any directory."""

import os
import stat
import subprocess

import pytest

OUTPOST = os.environ.get("OUTPOST_BIN", "outpost")


def run(*args, **kwargs):
    return subprocess.run([OUTPOST, *args], capture_output=True, text=True, timeout=60, **kwargs)


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_refused_on_posix_without_side_effects(tmp_path, action):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)
    cfg = tmp_path / "outpost.json"
    cfg.write_text('{"state_dir": "%s"}' % state)
    r = run("-c", str(cfg), "service", action)
    assert r.returncode == 1, r
    assert r.stdout == ""
    assert "no Windows Task Scheduler here" in r.stderr
    assert "outpost.timer" in r.stderr
    # Nothing was created or made private.
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o755
    assert sorted(os.listdir(tmp_path)) == ["outpost.json", "state"]


@pytest.mark.parametrize("args,message", [
    (["service"], "service needs what to do"),
    (["service", "start"], 'service takes install or uninstall, not "start"'),
    (["service", "install", "uninstall"], 'unexpected argument "uninstall"'),
])
def test_usage(args, message):
    r = run(*args)
    assert r.returncode == 2
    assert message in r.stderr


def test_help_names_the_task():
    r = run("help", "service")
    assert r.returncode == 0
    assert "\\outpost\\run" in r.stdout
