"""Deterministic crash points (issue 17 item 8, PRODUCT.md section 3), as
SQLite tests its I/O: `update`, `report`, `publish` and `rollback` are each
stopped at every one of their crash points in turn, and after each stop the
state is checked before anything repairs it, then repaired by a clean run
that must converge on what an uninterrupted run leaves.

outpost-crashpoints (tests/CMakeLists.txt passes it as OUTPOST_CRASH_BIN) is
outpost with platform/crash_point.c: every atomic write (and the rename
inside it), rename, fsync, append, directory flush and removal is a numbered
point; OUTPOST_CRASH_AFTER=N ends the process with _Exit at point N before
that operation happens (no stdio buffer flushed, no cleanup: a kill), and
OUTPOST_CRASH_LOG lists the points reached. One uninterrupted run of each
command from a fixed starting state counts its points and is the reference;
then for every N from 1 to that count: the starting state is restored, the
command is stopped at N (exit 99 proves that point N was reached: the points
of a run are deterministic), the invariants below are checked, and the clean
rerun's result is compared with the reference.

After every stop, a reader of the state directory must see:
- state.json and status.json (when present) parse, and status.json matches
  tests/status.schema.json; a download sidecar parses;
- staging/ holds only version directories whose installer matches its
  manifest (size, SHA-256) and nothing unverified, and `current` names one;
- incidents.jsonl (and its rotated files) whole lines only, no id twice, and
  no id the cursor has passed that is missing; the OCSF and CEF feeds whole
  lines only, no id twice, none that incidents.jsonl lacks (a feed is written
  only after incidents.jsonl is synced), every OCSF line valid;
- the fleet mirror's manifest.json verifies with the publisher's key and
  names an installer that is there with the length and SHA-256 it says.

Each test prints its count of crash points. A dozen kills at random delays
did this before; their docstring admitted that the bugs they found were found
by chance, and on a loaded CI machine they often killed nothing.
"""
from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from mirror_helper import keygen, read_envelope, envelope_payload, verify_envelope
from outpost_config import UNSIGNED, write_config as write_outpost_config
from outpost_run import CRASH_BIN, OUTPOST, check_staging, current_version, jsonl_lines, outpost, sha256_file
from schema_check import check_status_file
import cef_check
import ocsf_check
from sim import write_fake_installer
from simctl import Sim

# The sweeps stop the crash-point build (outpost(crash_after=N)); what sets a
# state up and what recovers from a stop is the program that ships.
pytestmark = pytest.mark.skipif(not (CRASH_BIN and OUTPOST),
                                reason="OUTPOST_CRASH_BIN (outpost-crashpoints) or OUTPOST_BIN is not set")

CRASHED = 99          # platform/crash_point.h CRASH_POINT_EXIT
FEEDS = {"ocsf_file": "findings.ocsf.jsonl", "cef_file": "incidents.cef"}


# ---- a sweep ---------------------------------------------------------------------------------


def write_config(path: Path, state: Path, sim: Sim, **sections) -> Path:
    defaults = {"schedule": {"jitter": "0s"},
                "http": {"max_attempts": 2, "max_retry_wait": "1s", "rate_limit_per_minute": 100000}}
    return write_outpost_config(path.parent, sim.url, sim.ca_file, state=state, name=path.name, defaults=defaults,
                                **sections)[0]


def unsigned(**installer) -> dict:
    return {"installed_version": "1.0", "verify": UNSIGNED, **installer}


class Sweep:
    """One command run from the same starting state again and again.

    template/ holds the starting state (built by the test); work/ is where
    each run happens, restored from template/ before it. Configurations
    name paths under work/."""

    def __init__(self, tmp_path: Path):
        self.template = tmp_path / "template"
        self.work = tmp_path / "work"
        self.log = tmp_path / "points.log"
        self.template.mkdir()

    def restore(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.copytree(self.template, self.work, symlinks=True)

    def save_template(self) -> None:
        """What work/ holds now becomes the starting state."""
        shutil.rmtree(self.template)
        shutil.copytree(self.work, self.template, symlinks=True)

    def points(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def sweep(self, name: str, cfg: Path, command: str, check_crashed, recover, paths_vary: bool = False) -> int:
        """Counts the points of `outpost -c cfg command` from the starting
        state, then stops it at each. check_crashed(point) checks the
        invariants right after the stop; recover(reference) reruns cleanly
        and compares with reference, a copy of work/ after the uninterrupted
        run. Returns the number of points. Only with paths_vary may a run
        take fewer points than the counted one (see below)."""
        self.restore()
        self.log.unlink(missing_ok=True)
        r = outpost(cfg, command, crash_log=self.log)
        assert r.returncode == 0, f"the uninterrupted {name} failed: {r.stderr}"
        points = self.points()
        assert points, f"{name} reached no crash point"
        reference = self.work.parent / "reference"
        shutil.rmtree(reference, ignore_errors=True)
        shutil.copytree(self.work, reference, symlinks=True)
        finished = []
        for n, point in enumerate(points, 1):
            where = f"{name} stopped at point {n} of {len(points)} ({point})"
            # The report writes an interim status.json and state.json after a
            # page only when some of its incidents are traced by then, which
            # depends on when the concurrent detail requests complete: a run
            # can take fewer points than the counted one. Such a run is tried
            # again; one that still ends first must have ended well.
            for _ in range(3 if paths_vary else 1):
                self.restore()
                self.log.unlink(missing_ok=True)
                r = outpost(cfg, command, crash_after=n, crash_log=self.log)
                if r.returncode == CRASHED:
                    break
                reached = self.points()
                assert paths_vary and r.returncode == 0 and len(reached) < n, \
                    f"{where}: exit {r.returncode} instead of a stop after {len(reached)} points " \
                    f"(reached: {reached[-3:]}): {r.stderr}"
            try:
                if r.returncode == CRASHED:
                    assert self.points()[-1].endswith(" crash")
                    check_crashed(point)
                else:
                    finished.append(n)
                recover(reference)
            except AssertionError as e:
                raise AssertionError(f"{where}: {e}") from e
        # Only the points past the run's shortest path can be missed.
        assert len(finished) <= len(points) // 2, f"{name}: {len(finished)} of {len(points)} points never reached"
        shorter = f"; at {finished} the run took a shorter path and ended" if finished else ""
        print(f"\n[crash points] {name}: {len(points)} points, stopped at {len(points) - len(finished)} "
              f"and recovered{shorter}")
        return len(points)


# ---- invariants --------------------------------------------------------------------------------


def check_documents(state: Path) -> None:
    if (state / "state.json").exists():
        json.loads((state / "state.json").read_text(encoding="utf-8"))
    if (state / "status.json").exists():
        check_status_file(str(state / "status.json"))
    for sidecar in (state / "downloads").glob("*.part.json"):
        json.loads(sidecar.read_text())


def when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


current = current_version


def leftovers(directory: Path) -> list[str]:
    """Temporary files of atomic writes (<name>.<16 hex>.tmp) under directory."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*.tmp"))


def jsonl_items(state: Path) -> dict:
    """{id: item} over incidents.jsonl and its rotated files, asserting whole
    lines only and no id twice."""
    out = {}
    for line in jsonl_lines(state):
        item = json.loads(line)
        assert item["id"] not in out, f"{item['id']} appended twice"
        out[item["id"]] = item
    return out


def feed_lines(state: Path) -> tuple[dict, dict]:
    """({id: line} of the OCSF file, {id: line} of the CEF file), asserting
    whole lines only, no id twice, every OCSF line valid, every CEF line
    strictly parsed."""
    ocsf, cef = {}, {}
    for line in jsonl_lines(state, FEEDS["ocsf_file"]):
        uid = ocsf_check.check_line(line)["finding_info"]["uid"]
        assert uid not in ocsf, f"{uid} appended twice to the OCSF file"
        ocsf[uid] = line
    for line in jsonl_lines(state, FEEDS["cef_file"]):
        uid = cef_check.parse(line)[1]["externalId"]
        assert uid not in cef, f"{uid} appended twice to the CEF file"
        cef[uid] = line
    return ocsf, cef


def verified_manifest(mirror: Path, public_pem: str) -> dict:
    """The mirror's manifest checked as an endpoint would: the signature
    (with `cryptography`, not outpost), then the installer it names."""
    env = read_envelope(mirror)
    assert verify_envelope(env, public_pem), "manifest.json is not signed by the publisher's key"
    doc = envelope_payload(env)
    installer = mirror / doc["path"]
    assert installer.is_file(), f"manifest.json (seq {doc['seq']}) names {doc['path']}, which is not there"
    assert installer.stat().st_size == doc["length"] and sha256_file(installer) == doc["sha256"], \
        f"{doc['path']} does not hold what manifest.json says"
    return doc


def check_mirror_files(mirror: Path) -> None:
    """Every installers/<sha256>.<ext> holds the bytes its name says."""
    for p in (mirror / "installers").glob("*"):
        if p.name.endswith(".tmp"):
            continue
        assert sha256_file(p) == p.name.split(".")[0], f"installers/{p.name} does not hold what its name says"


# ---- update ------------------------------------------------------------------------------------


def update_invariants(cfg: Path, state: Path, version: str, digest: str, staged: list[str], source: str):
    """An update's checks, from either source: after a stop (crashed), and after the clean
    rerun compared with the uninterrupted run's state (recover)."""

    def crashed(point):
        check_documents(state)
        assert current(state) in check_staging(state)

    def recover(reference):
        r = outpost(cfg, "update")
        assert r.returncode == 0, f"the clean update after the stop failed: {r.stderr}"
        check_documents(state)
        ref = reference / "state"
        assert check_staging(state) == check_staging(ref) == staged
        assert current(state) == version
        manifest = json.loads((state / "staging" / version / "manifest.json").read_text())
        assert manifest["sha256"] == digest, "the staged bytes are not the published installer"
        assert not list((state / "downloads").iterdir()), "downloads/ not emptied"
        status = json.loads((state / "status.json").read_text())
        assert status["installer"]["source"] == source
        assert status["installer"]["staged"]["version"] == version
        history = json.loads((state / "state.json").read_text())["installer"]["staged_history"]
        assert history == json.loads((ref / "state.json").read_text())["installer"]["staged_history"]

    return crashed, recover


def three_versions(tmp_path: Path, name: str, seed: int, release: str) -> list[tuple[str, Path]]:
    """Three fake installers, (release.0, name0.exe) to (release.2, name2.exe), of growing sizes."""
    files = []
    for i in range(3):
        path = tmp_path / f"{name}{i}.exe"
        write_fake_installer(str(path), seed + i, 150000 + 4096 * i)
        files.append((f"{release}.{i}", path))
    return files


def test_update_stopped_at_every_crash_point(tmp_path):
    """From two staged versions (keep_versions 1 keeps the current and the
    previous one) to a third: download, sidecar, private copy, manifest,
    history, directory rename, `current`, prune, status."""
    files = three_versions(tmp_path, "v", 60, "27.0")
    sweep = Sweep(tmp_path)
    state = sweep.work / "state"
    with Sim.start(rate_limit=0, installer=str(files[0][1]), installer_version=files[0][0]) as sim:
        cfg = write_config(tmp_path / "outpost.json", state, sim, installer=unsigned(keep_versions=1),
                           report={"enabled": False})
        sweep.restore()
        for version, path in files[:2]:
            sim.config(installer=str(path), installer_version=version)
            r = outpost(cfg, "update")
            assert r.returncode == 0, r.stderr
        sweep.save_template()
        version, path = files[2]
        sim.config(installer=str(path), installer_version=version)
        digest = sha256_file(path)

        crashed, recover = update_invariants(cfg, state, version, digest, ["27.0.1", "27.0.2"], "api")
        sweep.sweep("update", cfg, "update", crashed, recover)


def test_mirror_update_stopped_at_every_crash_point(tmp_path):
    """The same sweep with the fleet mirror as the source (PRODUCT.md section 8): a
    file:// mirror publishes a third version; the endpoint's update downloads it through
    the one download path (sidecar, resume) and stages it. The same invariants hold."""
    files = three_versions(tmp_path, "m", 90, "28.0")
    sweep = Sweep(tmp_path)
    state = sweep.work / "state"
    mirror = tmp_path / "mirror"
    key_file = tmp_path / "mirror.key"
    public_pem, _ = keygen(key_file)
    with Sim.start(rate_limit=0, installer=str(files[0][1]), installer_version=files[0][0]) as sim:
        publisher = write_config(tmp_path / "publisher.json", tmp_path / "publisher-state", sim,
                                 installer=unsigned(), report={"enabled": False},
                                 publish={"dir": str(mirror), "signing_key_file": str(key_file)})
        cfg = write_config(tmp_path / "outpost.json", state, sim, installer=unsigned(keep_versions=1),
                           report={"enabled": False},
                           mirror={"urls": [mirror.as_uri()], "public_keys": [public_pem]})
        sweep.restore()
        for version, path in files[:2]:
            sim.config(installer=str(path), installer_version=version)
            r = outpost(publisher, "publish")
            assert r.returncode == 0, r.stderr
            r = outpost(cfg, "update")
            assert r.returncode == 0, r.stderr
        sweep.save_template()
        version, path = files[2]
        sim.config(installer=str(path), installer_version=version)
        r = outpost(publisher, "publish")
        assert r.returncode == 0, r.stderr
        digest = sha256_file(path)

        crashed, recover = update_invariants(cfg, state, version, digest, ["28.0.1", "28.0.2"], "mirror")
        sweep.sweep("mirror update", cfg, "update", crashed, recover)


def test_mirror_root_update_stopped_at_every_crash_point(tmp_path):
    """An endpoint that trusts root version 1 walks the mirror's roots/2 and
    roots/3 (a new manifest key), keeps each in state_dir/mirror-root.json
    and installs from the mirror. Stopped anywhere, it trusts version 1, 2
    or 3 exactly as the mirror serves it (never a partial or unverified
    root, never nothing), and the clean rerun converges on version 3."""
    from mirror_helper import V2, Keys, MirrorDir, ceremony_next, ceremony_root, endpoint_config, kept_root_version

    keys = Keys(tmp_path / "keys")
    installer = tmp_path / "sensor.exe"
    write_fake_installer(str(installer), 7, 64 * 1024)
    mirror = MirrorDir(tmp_path / "mirror", keys, installer)
    c = tmp_path / "ceremony"
    c.mkdir()
    ceremony_root(keys, c / "1.root.json", root_keys=["r1"], root_threshold=1, manifest_keys=["m1"], signers=["r1"])
    ceremony_next(keys, c / "1.root.json", c / "2.root.json", signers=["r1"], add_manifest=["m2"])
    ceremony_next(keys, c / "2.root.json", c / "3.root.json", signers=["r1"], remove_manifest=["m1"])
    for v in (1, 2, 3):
        mirror.put_root(v, (c / f"{v}.root.json").read_text())
    mirror.manifest(4, ["m2"])
    sweep = Sweep(tmp_path)
    sweep.work.mkdir()
    cfg, state = endpoint_config(sweep.work, "e1", [mirror.url], root_file=c / "1.root.json")
    cfg = cfg.rename(tmp_path / "endpoint.json")
    sweep.restore()
    sweep.save_template()
    served = {v: (c / f"{v}.root.json").read_bytes() for v in (2, 3)}

    def crashed(point):
        check_documents(state)
        kept = state / "mirror-root.json"
        if kept.exists():
            assert kept.read_bytes() in served.values(), "state_dir/mirror-root.json is not a root the mirror serves"
        check_staging(state)

    def recover(reference):
        r = outpost(cfg, "update")
        assert r.returncode == 0, f"the clean update after the stop failed: {r.stderr}"
        assert kept_root_version(state) == kept_root_version(reference / "endpoints" / "e1") == 3
        assert current(state) == V2

    sweep.sweep("update (mirror root)", cfg, "update", crashed, recover)


# ---- rollback ----------------------------------------------------------------------------------


def test_rollback_stopped_at_every_crash_point(tmp_path):
    """Rollback from 27.1.1 to 27.1.0. Stopped before `current` switched,
    rolling back again finishes it; stopped after, it is done. Either way the
    next scheduled update does not undo it."""
    old, new = tmp_path / "old.exe", tmp_path / "new.exe"
    write_fake_installer(str(old), 70, 120000)
    write_fake_installer(str(new), 71, 125000)
    sweep = Sweep(tmp_path)
    state = sweep.work / "state"
    with Sim.start(rate_limit=0, installer=str(old), installer_version="27.1.0") as sim:
        cfg = write_config(tmp_path / "outpost.json", state, sim, installer=unsigned(keep_versions=2),
                           report={"enabled": False})
        sweep.restore()
        assert outpost(cfg, "update").returncode == 0
        sim.config(installer=str(new), installer_version="27.1.1")
        assert outpost(cfg, "update").returncode == 0
        sweep.save_template()

        def crashed(point):
            check_documents(state)
            assert current(state) in ("27.1.0", "27.1.1")
            assert check_staging(state) == ["27.1.0", "27.1.1"]

        def recover(reference):
            if current(state) == "27.1.1":
                r = outpost(cfg, "rollback")
                assert r.returncode == 0, f"rollback after the stop failed: {r.stderr}"
            assert current(state) == current(reference / "state") == "27.1.0"
            r = outpost(cfg, "update")
            assert r.returncode == 0, r.stderr
            assert current(state) == "27.1.0", "the next update undid the rollback"
            status = json.loads((state / "status.json").read_text())
            assert status["installer"]["staged"]["version"] == "27.1.0"

        sweep.sweep("rollback", cfg, "rollback", crashed, recover)


# ---- report ------------------------------------------------------------------------------------


def test_report_stopped_at_every_crash_point(tmp_path):
    """An incremental report of 6 new incidents over 3 pages, with a file
    limit that makes incidents.jsonl and the OCSF file rotate on the way,
    both SIEM feeds on."""
    report = {"page_size": 3, "details_batch": 20, "jsonl_max_bytes": 40000, "jsonl_keep": 100, **FEEDS}
    sweep = Sweep(tmp_path)
    state = sweep.work / "state"
    with Sim.start(rate_limit=0, incidents=8, seed=17) as sim:
        cfg = write_config(tmp_path / "outpost.json", state, sim, report=report, installer={"enabled": False})
        sweep.restore()
        assert outpost(cfg, "report").returncode == 0
        sweep.save_template()
        before = feed_lines(state)
        sim.add_incidents(6)
        dataset = {r["incident"]["id"] for r in sim.dataset()["incidents"]}

        triggers = {r["incident"]["id"]: when(r["incident"]["trigger_time"]) for r in sim.dataset()["incidents"]}

        def crashed(point):
            check_documents(state)
            items = jsonl_items(state)
            ocsf, cef = feed_lines(state)
            assert set(ocsf) <= set(items) and set(cef) <= set(items), "a feed holds an incident incidents.jsonl lacks"
            saved = json.loads((state / "state.json").read_text()).get("report", {})
            # What the saved state says is done must be in the file: the ids
            # it remembers as seen, and every incident older than its cursor.
            seen = set(saved.get("seen", {}))
            assert seen <= set(items), f"state.json remembers {sorted(seen - set(items))[:3]}, never written"
            if saved.get("cursor"):
                passed = {i for i, t in triggers.items() if t < when(saved["cursor"])}
                assert passed <= set(items), f"the cursor passed {sorted(passed - set(items))[:3]}, never written"

        def recover(reference):
            r = outpost(cfg, "report")
            assert r.returncode == 0, f"the clean report after the stop failed: {r.stderr}"
            check_documents(state)
            items, expected = jsonl_items(state), jsonl_items(reference / "state")
            assert set(expected) == dataset
            assert items == expected, "incidents.jsonl differs from an uninterrupted run's"
            assert feed_lines(state) == feed_lines(reference / "state"), \
                "the OCSF or CEF file differs from an uninterrupted run's"
            status = json.loads((state / "status.json").read_text())
            ref_status = json.loads((reference / "state" / "status.json").read_text())
            assert status["incidents"]["items"] == ref_status["incidents"]["items"]
            assert status["incidents"]["hosts"] == ref_status["incidents"]["hosts"]
            assert status["last_run"]["result"] == "ok"

        n = sweep.sweep("report", cfg, "report", crashed, recover, paths_vary=True)
        assert any(" rename " in p and "incidents.jsonl" in p for p in sweep.points()), \
            "the report did not rotate incidents.jsonl: the sweep did not cover rotation"
        # Appends name no file in the point log; the reference run's feeds
        # hold the 6 new incidents, so their appends were among the points.
        assert all(len(f) == 8 for f in before) and all(len(f) == 14 for f in feed_lines(tmp_path / "reference" / "state"))
        assert any(" rename " in p and FEEDS["ocsf_file"] in p for p in sweep.points()), \
            "the report did not rotate the OCSF file: the sweep did not cover its rotation"
        assert n > 6


# ---- publish -----------------------------------------------------------------------------------


def test_publish_stopped_at_every_crash_point(tmp_path):
    """A mirror holding 26.02 (seq 1) gets 26.03, keep_installers 1: the new
    installer written, read back and renamed, the manifest replaced, the
    old installer pruned."""
    v2, v3 = tmp_path / "v2.exe", tmp_path / "v3.exe"
    write_fake_installer(str(v2), 80, 140000)
    write_fake_installer(str(v3), 81, 145000)
    sweep = Sweep(tmp_path)
    mirror = sweep.work / "mirror"
    key_file = tmp_path / "mirror.key"
    public_pem, _ = keygen(key_file)
    with Sim.start(rate_limit=0, installer=str(v2), installer_version="26.02.01.25000") as sim:
        cfg = write_config(tmp_path / "publisher.json", sweep.work / "state", sim, installer=unsigned(),
                           report={"enabled": False},
                           publish={"dir": str(mirror), "signing_key_file": str(key_file), "keep_installers": 1})
        sweep.restore()
        r = outpost(cfg, "publish")
        assert r.returncode == 0, r.stderr
        sweep.save_template()
        first = verified_manifest(mirror, public_pem)
        sim.config(installer=str(v3), installer_version="26.03.01.26000")
        digest = sha256_file(v3)

        def crashed(point):
            check_documents(sweep.work / "state")
            check_staging(sweep.work / "state")
            doc = verified_manifest(mirror, public_pem)
            assert doc["seq"] in (first["seq"], first["seq"] + 1)
            check_mirror_files(mirror)

        def recover(reference):
            r = outpost(cfg, "publish")
            assert r.returncode == 0, f"the clean publish after the stop failed: {r.stderr}"
            doc, ref = verified_manifest(mirror, public_pem), verified_manifest(reference / "mirror", public_pem)
            assert doc["version"] == ref["version"] == "26.03.01.26000"
            assert doc["sha256"] == ref["sha256"] == digest
            assert doc["seq"] > first["seq"]
            check_mirror_files(mirror)
            assert sorted(p.name for p in mirror.iterdir()) == ["installers", "manifest.json"]
            names = sorted(p.name for p in (mirror / "installers").iterdir())
            assert names == sorted(p.name for p in (reference / "mirror" / "installers").iterdir()), \
                "the mirror's installers differ from an uninterrupted publish's"

        sweep.sweep("publish", cfg, "publish", crashed, recover)
