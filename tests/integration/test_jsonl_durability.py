"""incidents.jsonl's creation is durable (issue 13, PRODUCT.md section 3):
the file's name must survive a crash before the cursor moves past the
incidents it holds, so creating it flushes its directory.

Observed with strace (Debian package strace): `report` against the
simulator with report.jsonl_file in a directory of its own, where nothing
else outpost writes would flush it by chance (status.json and state.json
are replaced atomically in state_dir, which flushes state_dir only).
"""
import json
import re
import shutil

import pytest

from outpost_run import OUTPOST, outpost_traced

pytestmark = [
    pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set"),
    pytest.mark.skipif(shutil.which("strace") is None, reason="strace (Debian package strace) is needed"),
]


def traced_report(tmp_path, sim, jsonl):
    cfg = tmp_path / "outpost.json"
    cfg.write_text(json.dumps({"base_url": sim.url, "state_dir": str(tmp_path / "state"),
                               "report": {"jsonl_file": str(jsonl)}, "schedule": {"jitter": "0s"}}))
    r, trace = outpost_traced(cfg, "report", syscalls="openat,fsync,fdatasync,rename,renameat,renameat2",
                              trace=tmp_path / "strace.txt")
    assert r.returncode == 0, r.stderr
    return trace


def first_index(lines, pattern, start=0):
    for i in range(start, len(lines)):
        if re.search(pattern, lines[i]):
            return i
    return None


@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_creating_incidents_jsonl_flushes_its_directory(tmp_path, sim):
    out = tmp_path / "shipper"
    out.mkdir()
    jsonl = out / "incidents.jsonl"
    lines = traced_report(tmp_path, sim, jsonl)
    assert len(jsonl.read_text().splitlines()) == 3

    # By its full name, or relative to the folder outpost holds open for a feed outside state_dir (issue 34).
    created = first_index(lines, r'openat\((.*"' + re.escape(str(jsonl)) + r'"|\d+<' + re.escape(str(out))
                          + r'>, "incidents\.jsonl"), [^)]*O_CREAT')
    assert created is not None, "incidents.jsonl was not opened for creation"
    dir_synced = first_index(lines, r'f(data)?sync\(\d+<' + re.escape(str(out)) + r'>\) = 0', created)
    assert dir_synced is not None, f"{out} was never flushed after incidents.jsonl was created"
    # ... and before the cursor moved on (state.json replaced by a rename).
    # By its full name, or relative to the state directory outpost holds open (renameat, shown by -y).
    state = tmp_path / "state"
    state_saved = first_index(lines, r'rename.*("' + re.escape(str(state / "state.json")) + r'"|<' + re.escape(str(state))
                              + r'>, "state\.json")', created)
    assert state_saved is not None
    assert dir_synced < state_saved


@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_appending_to_an_existing_file_does_not_flush_the_directory(tmp_path, sim):
    """Only a creation changes the directory; appends are flushed with the file."""
    out = tmp_path / "shipper"
    out.mkdir()
    jsonl = out / "incidents.jsonl"
    jsonl.write_text("")
    lines = traced_report(tmp_path, sim, jsonl)
    assert len(jsonl.read_text().splitlines()) == 3
    assert first_index(lines, r'f(data)?sync\(\d+<' + re.escape(str(out)) + r'>\)') is None
