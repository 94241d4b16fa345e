"""Crash consistency (issue 7, PRODUCT.md section 3): the staging commit
windows that kills once found, reproduced deterministically by putting the
state directory into what a kill at that instant leaves, and `rollback`
guarded against the repair.

The sweep over every crash point of `update`, `report`, `publish` and
`rollback` is test_crash_points.py (outpost-crashpoints stops the process at
each write, rename, fsync, append and removal in turn); it replaced the
kills at random delays that were here. A kill in the middle of a download,
between two writes, is test_check_update.py::test_nginx_kill_then_resume.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sim import write_fake_installer
from simctl import Sim
from outpost_config import write_config as write_outpost_config
from outpost_run import OUTPOST, check_staging, outpost

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")


def write_config(root: Path, sim: Sim, name="state", **extra) -> tuple[Path, Path]:
    defaults = {"http": {"max_attempts": 3, "max_retry_wait": "2s", "rate_limit_per_minute": 100000},
                "schedule": {"jitter": "0s"}}
    return write_outpost_config(root, sim.url, sim.ca_file, state=root / name, name=f"{name}-outpost.json",
                                defaults=defaults, **extra)


# ---- the commit window, made deterministic -------------------------------------------------


def test_update_finishes_a_commit_killed_before_current_switched(tmp_path):
    """staging commits a version in steps: directory renamed into place,
    history saved, `current` replaced, older versions pruned. A kill between
    the history and `current` left the new version staged but not current,
    and every later `update` said "already staged" without switching: the
    endpoint kept deploying the old installer. Reproduced here by restoring
    the old `current` after a normal update."""
    old, new = tmp_path / "old.exe", tmp_path / "new.exe"
    write_fake_installer(str(old), 31, 300000)
    write_fake_installer(str(new), 32, 310000)
    with Sim.start(tls=True, rate_limit=0, installer=str(old), installer_version="27.1.0") as sim:
        cfg, state = write_config(tmp_path, sim, installer={
            "installed_version": "1.0", "keep_versions": 1, "verify": {"require_signature": False, "trusted_ca_file": None}})
        assert outpost(cfg, "update").returncode == 0
        sim.config(installer=str(new), installer_version="27.2.0")
        assert outpost(cfg, "update").returncode == 0
        # the state a kill right before `current` was replaced leaves behind
        (state / "staging" / "current").write_text("27.1.0\n")
        r = outpost(cfg, "update")
        assert r.returncode == 0, r.stderr
        assert (state / "staging" / "current").read_text().strip() == "27.2.0"
        status = json.loads((state / "status.json").read_text())
        assert status["installer"]["staged"]["version"] == "27.2.0"


def test_rollback_survives_the_next_update(tmp_path):
    """The other side of the test above: an administrator's rollback is not
    undone by the next scheduled update of the same (already staged) version."""
    old, new = tmp_path / "old.exe", tmp_path / "new.exe"
    write_fake_installer(str(old), 33, 300000)
    write_fake_installer(str(new), 34, 310000)
    with Sim.start(tls=True, rate_limit=0, installer=str(old), installer_version="27.1.0") as sim:
        cfg, state = write_config(tmp_path, sim, installer={
            "installed_version": "1.0", "keep_versions": 2, "verify": {"require_signature": False, "trusted_ca_file": None}})
        assert outpost(cfg, "update").returncode == 0
        sim.config(installer=str(new), installer_version="27.2.0")
        assert outpost(cfg, "update").returncode == 0
        r = outpost(cfg, "rollback")
        assert r.returncode == 0, r.stderr
        assert (state / "staging" / "current").read_text().strip() == "27.1.0"
        r = outpost(cfg, "update")
        assert r.returncode == 0, r.stderr
        assert (state / "staging" / "current").read_text().strip() == "27.1.0"


def test_update_prunes_after_a_kill_before_pruning(tmp_path):
    """A kill after `current` was switched but before older versions were
    pruned left keep_versions + 1 versions for good: the next update found
    the version already staged and stopped there."""
    files = []
    for i in range(3):
        path = tmp_path / f"v{i}.exe"
        write_fake_installer(str(path), 40 + i, 200000 + i)
        files.append(path)
    with Sim.start(tls=True, rate_limit=0, installer=str(files[0]), installer_version="27.0.0") as sim:
        cfg, state = write_config(tmp_path, sim, installer={
            "installed_version": "1.0", "keep_versions": 2, "verify": {"require_signature": False, "trusted_ca_file": None}})
        assert outpost(cfg, "update").returncode == 0
        sim.config(installer=str(files[1]), installer_version="27.0.1")
        assert outpost(cfg, "update").returncode == 0
        saved = state / "saved-27.0.0"
        shutil.copytree(state / "staging" / "27.0.0", saved)
        sim.config(installer=str(files[2]), installer_version="27.0.2")
        assert outpost(cfg, "update").returncode == 0
        # the state a kill right before pruning leaves behind: 27.0.0 still there
        shutil.copytree(saved, state / "staging" / "27.0.0")
        assert len(check_staging(state, killed=False)) == 3
        r = outpost(cfg, "update")
        assert r.returncode == 0, r.stderr
        assert check_staging(state, killed=False) == ["27.0.1", "27.0.2"]
