"""Crash consistency (issue 7, PRODUCT.md section 3): `update` and `report`
killed with SIGKILL at random moments (fixed seeds), each kill followed by a
clean run on the same state directory.

After every kill, before anything repairs it, what a reader of the state
directory can see must be consistent: status.json, state.json and the
download sidecar parse; staging/ holds only version directories whose
installer matches its manifest (size and SHA-256) and `current` names one of
them; incidents.jsonl holds whole lines only, no id twice. After every clean
run: exit 0, the published version current, nothing left in downloads/.
At the end of the report loop, incidents.jsonl equals an uninterrupted run's
(same ids, no duplicates, same content per id).

test_report.py kills `report` 24 times and compares only at the end; here
each kill is checked and repaired: 60 trials of `update` and 60 of `report`
(120 in all, about 90 s under ASan) by default, 400 of each with
OUTPOST_LONG_TESTS=1.

Three deterministic tests at the end reproduce the staging commit windows
the random kills found (a version staged but never made current, versions
never pruned) and guard `rollback` against the repair.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sim import write_fake_installer
from simctl import Sim

OUTPOST = os.environ.get("OUTPOST_BIN")
pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")

API_KEY = "sim-api-key"
LONG = os.environ.get("OUTPOST_LONG_TESTS") == "1"
UPDATE_TRIALS = 400 if LONG else 60
REPORT_TRIALS = 400 if LONG else 60
MiB = 1024 * 1024


def env():
    e = {k: v for k, v in os.environ.items() if not k.startswith("OUTPOST_")}
    e["OUTPOST_API_KEY"] = API_KEY
    return e


def write_config(root: Path, sim: Sim, name="state", **extra) -> tuple[Path, Path]:
    state = root / name
    cfg = {"base_url": sim.url, "state_dir": str(state), "tls": {"ca_file": sim.ca_file},
           "http": {"max_attempts": 3, "max_retry_wait": "2s", "rate_limit_per_minute": 100000},
           "schedule": {"jitter": "0s"}, **extra}
    path = root / f"{name}-outpost.json"
    path.write_text(json.dumps(cfg))
    return path, state


def clean_run(cfg: Path, command: str) -> subprocess.CompletedProcess:
    return subprocess.run([OUTPOST, "-c", str(cfg), command], capture_output=True, text=True, timeout=60, env=env())


def killed_run(cfg: Path, command: str, delay: float) -> bool:
    """Starts command and SIGKILLs it after delay seconds; True if it was
    still running (a real kill), False if it had finished."""
    p = subprocess.Popen([OUTPOST, "-c", str(cfg), command], env=env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        p.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        return True


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MiB), b""):
            h.update(block)
    return h.hexdigest()


def check_documents(state: Path):
    for name in ("status.json", "state.json"):
        p = state / name
        if p.exists():
            json.loads(p.read_text(encoding="utf-8"))
    downloads = state / "downloads"
    if downloads.exists():
        for sidecar in downloads.glob("*.part.json"):
            json.loads(sidecar.read_text())


def check_staging(state: Path, killed: bool = False) -> list[str]:
    """The staged versions, each checked against its manifest. After a killed
    run, a half-written replacement of `current` (current.<random>.tmp) may
    be there; the next run removes it."""
    root = state / "staging"
    if not root.exists():
        return []
    versions = []
    for entry in sorted(root.iterdir()):
        if entry.name == "current" or entry.name.startswith("."):
            continue  # .tmp-*: the work area of a run, cleaned by the next one
        if entry.name.startswith("current.") and entry.name.endswith(".tmp"):
            assert killed, f"{entry.name} outlived the run after the kill"
            continue
        assert entry.is_dir(), f"{entry} is not a version directory"
        manifest = json.loads((entry / "manifest.json").read_text())
        assert manifest["version"] == entry.name
        installer = entry / manifest["staged_file"]
        assert installer.stat().st_size == manifest["size"], f"{installer}: size differs from its manifest"
        assert sha256_file(installer) == manifest["sha256"], f"{installer}: bytes differ from its manifest"
        extra = {p.name for p in entry.iterdir()} - {"manifest.json", manifest["staged_file"]}
        assert not extra, f"{entry} holds unverified files {extra}"
        versions.append(entry.name)
    if (root / "current").exists():
        assert (root / "current").read_text().strip() in versions, "staging/current names no verified version"
    return versions


def jsonl_items(state: Path) -> dict:
    """{id: item} over incidents.jsonl and its rotated files, asserting that
    every file holds whole lines only and that no id appears twice."""
    rotated = sorted(state.glob("incidents.jsonl.*"), key=lambda p: -int(p.suffix[1:]))
    out = {}
    for p in rotated + [state / "incidents.jsonl"]:
        if not p.exists():
            continue
        data = p.read_text(encoding="utf-8")
        assert data == "" or data.endswith("\n"), f"{p.name} ends in the middle of a line"
        for line in data.splitlines():
            item = json.loads(line)
            assert item["id"] not in out, f"{item['id']} appended twice"
            out[item["id"]] = item
    return out


def timed(cfg: Path, command: str) -> float:
    started = time.monotonic()
    r = clean_run(cfg, command)
    assert r.returncode == 0, r.stderr
    return time.monotonic() - started


# ---- update ---------------------------------------------------------------------------------


def test_update_killed_at_random_moments(tmp_path):
    installers = []
    for i in range(3):  # three versions in turn: every trial has something new to stage
        path = tmp_path / f"v{i}.exe"
        write_fake_installer(str(path), 20 + i, 2 * MiB + 4096 * i)
        installers.append((f"27.0.{i}", path, sha256_file(path)))
    with Sim.start(tls=True, rate_limit=0, installer=str(installers[0][1]),
                   installer_version=installers[0][0]) as sim:
        cfg, state = write_config(tmp_path, sim, installer={
            "installed_version": "1.0", "keep_versions": 2, "max_bytes_per_second": 16 * MiB,
            "verify": {"require_signature": False, "trusted_ca_file": None}})
        full = timed(cfg, "update")
        rng = random.Random(7)
        kills = 0
        started = time.monotonic()
        for trial in range(UPDATE_TRIALS):
            version, path, digest = installers[(trial + 1) % len(installers)]
            sim.config(installer=str(path), installer_version=version)
            kills += killed_run(cfg, "update", rng.uniform(0, full * 1.1))
            check_documents(state)
            check_staging(state, killed=True)

            r = clean_run(cfg, "update")
            assert r.returncode == 0, f"trial {trial}: {r.stderr}"
            check_documents(state)
            versions = check_staging(state)
            assert (state / "staging" / "current").read_text().strip() == version
            manifest = json.loads((state / "staging" / version / "manifest.json").read_text())
            assert manifest["sha256"] == digest, f"trial {trial}: staged bytes are not the published installer"
            assert len(versions) <= 2, f"trial {trial}: keep_versions 2 but {versions} staged"
            assert not list((state / "downloads").glob("*")), f"trial {trial}: downloads/ not emptied"
        elapsed = time.monotonic() - started
    print(f"\n[crash] update: {UPDATE_TRIALS} trials, {kills} killed mid-run, {elapsed:.1f} s "
          f"(one uninterrupted update: {full:.2f} s)")
    assert kills >= UPDATE_TRIALS // 2, f"only {kills} runs were killed: the test did not test much"


# ---- report ---------------------------------------------------------------------------------


def test_report_killed_at_random_moments(tmp_path):
    report = {"page_size": 5, "details_batch": 20, "jsonl_max_bytes": 65536, "jsonl_keep": 100}
    with Sim.start(tls=True, rate_limit=0, incidents=20, latency_ms=3, seed=11) as sim:
        cfg, state = write_config(tmp_path, sim, report=report)
        timed(cfg, "report")
        sim.add_incidents(2)
        full = timed(cfg, "report")  # what one trial's run has to do
        rng = random.Random(13)
        kills = 0
        started = time.monotonic()
        for trial in range(REPORT_TRIALS):
            if trial % 2 == 0:
                sim.add_incidents(rng.randint(1, 3))
            kills += killed_run(cfg, "report", rng.uniform(0, full * 1.1))
            check_documents(state)
            jsonl_items(state)

            r = clean_run(cfg, "report")
            assert r.returncode == 0, f"trial {trial}: {r.stderr}"
            check_documents(state)
            jsonl_items(state)
            status = json.loads((state / "status.json").read_text())
            assert status["last_run"]["result"] == "ok"
        elapsed = time.monotonic() - started
        assert kills >= REPORT_TRIALS // 2, f"only {kills} runs were killed: the test did not test much"

        reference_cfg, reference = write_config(tmp_path, sim, name="reference", report=report)
        assert clean_run(reference_cfg, "report").returncode == 0
        dataset = {r["incident"]["id"] for r in sim.dataset()["incidents"]}

    interrupted, uninterrupted = jsonl_items(state), jsonl_items(reference)
    assert set(interrupted) == set(uninterrupted) == dataset
    for incident_id, item in uninterrupted.items():
        assert interrupted[incident_id] == item, f"{incident_id} differs from the uninterrupted run's"
    print(f"\n[crash] report: {REPORT_TRIALS} trials, {kills} killed mid-run, {len(dataset)} incidents, "
          f"{elapsed:.1f} s (one uninterrupted incremental report: {full:.2f} s)")


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
        assert clean_run(cfg, "update").returncode == 0
        sim.config(installer=str(new), installer_version="27.2.0")
        assert clean_run(cfg, "update").returncode == 0
        # the state a kill right before `current` was replaced leaves behind
        (state / "staging" / "current").write_text("27.1.0\n")
        r = clean_run(cfg, "update")
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
        assert clean_run(cfg, "update").returncode == 0
        sim.config(installer=str(new), installer_version="27.2.0")
        assert clean_run(cfg, "update").returncode == 0
        r = clean_run(cfg, "rollback")
        assert r.returncode == 0, r.stderr
        assert (state / "staging" / "current").read_text().strip() == "27.1.0"
        r = clean_run(cfg, "update")
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
        assert clean_run(cfg, "update").returncode == 0
        sim.config(installer=str(files[1]), installer_version="27.0.1")
        assert clean_run(cfg, "update").returncode == 0
        saved = state / "saved-27.0.0"
        shutil.copytree(state / "staging" / "27.0.0", saved)
        sim.config(installer=str(files[2]), installer_version="27.0.2")
        assert clean_run(cfg, "update").returncode == 0
        # the state a kill right before pruning leaves behind: 27.0.0 still there
        shutil.copytree(saved, state / "staging" / "27.0.0")
        assert len(check_staging(state)) == 3
        r = clean_run(cfg, "update")
        assert r.returncode == 0, r.stderr
        assert check_staging(state) == ["27.0.1", "27.0.2"]
