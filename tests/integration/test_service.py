"""`outpost service install|uninstall` off Windows: the command exists for the
MSI (the Task Scheduler task lives in C, tests/unit/test_schedtask.c), and on
Linux it refuses, naming the systemd timer, before touching any directory."""

import os
import stat

import pytest

from outpost_run import OUTPOST, outpost

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_refused_on_posix_without_side_effects(tmp_path, action):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)
    cfg = tmp_path / "outpost.json"
    cfg.write_text('{"state_dir": "%s"}' % state)
    r = outpost(cfg, "service", action, timeout=60)
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
    r = outpost(None, *args, timeout=60)
    assert r.returncode == 2
    assert message in r.stderr


def test_help_names_the_task():
    r = outpost(None, "help", "service", timeout=60)
    assert r.returncode == 0
    assert "\\outpost\\run" in r.stdout
