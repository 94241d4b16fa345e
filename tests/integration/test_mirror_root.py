"""The mirror's offline root of trust (issue 26, PRODUCT.md 8.1), end to
end: roots made with `outpost root init|sign|next` (or, where a test needs
an expiry in the past, signed here with Python's `cryptography`), a mirror
directory read through file:// and over HTTP, and endpoints that pin only
`mirror.root_file`.

Conformance scenarios after TUF's: rotation 1 -> 2 -> 3 with changing
thresholds and a new manifest key, with no change on the endpoint; a root
N+1 that fails (nothing installed, 4, the last good root kept); an expired
intermediate root followed by a valid one; an expired final root (75,
ATTENTION); a fast-forward by a leaked key, then rotation: recovered; a
manifest signed by a dropped key; seq at 2^53; an error page, an empty and a
truncated manifest: 75.
"""
from __future__ import annotations

import base64
import http.server
import json
import os
import shutil
import threading
from datetime import datetime, timedelta, timezone

import pytest

from mirror_helper import (MAX_SEQ, ROOT_CONTEXT, V2, Keys, MirrorDir, ceremony_next, ceremony_root,
                           endpoint_config, kept_root_version, publisher_config, root_doc)
from outpost_run import OUTPOST, outpost, staged_versions
from sim import write_fake_installer

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN is not set (tests/CMakeLists.txt sets it)")

NOW = datetime.now(timezone.utc)


@pytest.fixture
def fleet(tmp_path):
    """Root keys r1..r4, manifest keys m1..m3; root 1 = root keys r1, r2 (threshold 1), manifest key m1."""
    keys = Keys(tmp_path / "keys")
    installer = tmp_path / "sensor.exe"
    write_fake_installer(str(installer), 1, 64 * 1024)
    mirror = MirrorDir(tmp_path / "mirror", keys, installer)
    (tmp_path / "ceremony").mkdir()
    root1 = ceremony_root(keys, tmp_path / "ceremony" / "1.root.json", root_keys=["r1", "r2"], root_threshold=1,
                          manifest_keys=["m1"], signers=["r1"])
    mirror.put_root(1, root1.read_text())
    pinned = tmp_path / "etc" / "root.json"
    pinned.parent.mkdir()
    shutil.copyfile(root1, pinned)
    return keys, mirror, pinned


# ---- rotation ------------------------------------------------------------------------------


def test_rotation_one_two_three_without_touching_the_endpoint(tmp_path, fleet):
    keys, mirror, pinned = fleet
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=pinned)
    mirror.manifest(5, ["m1"])
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 10, r.stderr  # an update is available: the manifest was trusted
    assert kept_root_version(state) is None  # no roots/2 yet: the configuration's root is the trusted one

    # Version 2: adds root key r3, root threshold 2, manifest key m2 replaces m1.
    c = tmp_path / "ceremony"
    ceremony_next(keys, c / "1.root.json", c / "2.root.json", signers=["r1", "r2", "r3"], add_root=["r3"],
                  root_threshold=2, add_manifest=["m2"], remove_manifest=["m1"])
    mirror.put_root(2, (c / "2.root.json").read_text())
    mirror.manifest(6, ["m2"])
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 10, r.stderr
    assert kept_root_version(state) == 2

    # Version 3: drops r1, adds r4, manifest keys m2 and m3 with threshold 2; signed by
    # 2 of version 2's {r1, r2, r3} and 2 of its own {r2, r3, r4}.
    ceremony_next(keys, c / "2.root.json", c / "3.root.json", signers=["r2", "r3"], add_root=["r4"],
                  remove_root=["r1"], add_manifest=["m3"], manifest_threshold=2)
    mirror.put_root(3, (c / "3.root.json").read_text())
    mirror.manifest(7, ["m2"])  # one manifest key of the two now needed
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 4, r.stderr
    assert "2" in r.stderr and "manifest keys" in r.stderr
    assert kept_root_version(state) == 3
    mirror.manifest(7, ["m2", "m3"])
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    r = outpost(None, "root", "verify", c / "1.root.json", c / "2.root.json", c / "3.root.json", key=None)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "would trust version 3" in r.stdout


@pytest.mark.parametrize("case", ["only_new_keys", "only_old_keys", "one_key_twice", "version_skipped",
                                  "version_repeated"])
def test_a_failing_root_installs_nothing_and_keeps_the_last_good(tmp_path, fleet, case):
    keys, mirror, pinned = fleet
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=pinned)
    # Version 2 would swap the root keys for r3, r4 (threshold 2) and the manifest key for m2.
    version = {"version_skipped": 3, "version_repeated": 1}.get(case, 2)
    doc = root_doc(keys, version, NOW + timedelta(days=90), ["r3", "r4"], 2, ["m2"])
    signers = {"only_new_keys": ["r3", "r4"], "only_old_keys": ["r1", "r2"],
               "one_key_twice": ["r1", "r3", "r3"]}.get(case, ["r1", "r3", "r4"])
    env = keys.sign(doc, ROOT_CONTEXT, signers)
    mirror.put_root(2, json.dumps(env))
    if case == "version_skipped":
        mirror.put_root(3, json.dumps(env))
    mirror.manifest(5, ["m2"])
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 4, r.stderr
    assert "mirror root" in r.stderr and "version 1 stays trusted" in r.stderr
    assert staged_versions(state) == []
    assert kept_root_version(state) is None
    # The chain judged offline says the same.
    (tmp_path / "2.root.json").write_text(json.dumps(env))
    r = outpost(None, "root", "verify", pinned, tmp_path / "2.root.json", key=None)
    assert r.returncode == 4, r.stdout


def test_a_forged_root_on_one_mirror_stops_the_run_though_the_next_is_good(tmp_path, fleet):
    # PRODUCT.md 8.1: a root that fails stops the run. A second, honest mirror must not turn
    # tampering seen on the first into a quiet install.
    keys, mirror, pinned = fleet
    installer = tmp_path / "sensor.exe"
    good = MirrorDir(tmp_path / "mirror-good", keys, installer)
    good.put_root(1, pinned.read_text())
    good.manifest(5, ["m1"])
    forged = root_doc(keys, 2, NOW + timedelta(days=90), ["r3", "r4"], 1, ["m2"])
    mirror.put_root(2, json.dumps(keys.sign(forged, ROOT_CONTEXT, ["r3"])))  # no key of root 1 signed it
    mirror.manifest(5, ["m2"])
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url, good.url], root_file=pinned)
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 4, r.stderr
    assert "version 1 stays trusted" in r.stderr
    assert staged_versions(state) == []
    assert kept_root_version(state) is None


def test_expired_intermediate_root_then_valid_one(tmp_path, fleet):
    keys, mirror, _ = fleet
    old = root_doc(keys, 1, NOW - timedelta(days=400), ["r1"], 1, ["m1"])
    pinned = tmp_path / "old-root.json"
    pinned.write_text(json.dumps(keys.sign(old, ROOT_CONTEXT, ["r1"])))
    mirror.put_root(2, json.dumps(keys.sign(root_doc(keys, 2, NOW - timedelta(days=30), ["r1"], 1, ["m1"]),
                                            ROOT_CONTEXT, ["r1"])))
    mirror.put_root(3, json.dumps(keys.sign(root_doc(keys, 3, NOW + timedelta(days=300), ["r2"], 1, ["m2"]),
                                            ROOT_CONTEXT, ["r1", "r2"])))
    mirror.manifest(5, ["m2"])
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=pinned)
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    assert kept_root_version(state) == 3


def test_expired_final_root_installs_nothing_and_says_attention(tmp_path, fleet):
    keys, mirror, _ = fleet
    pinned = tmp_path / "root.json"
    pinned.write_text(json.dumps(keys.sign(root_doc(keys, 1, NOW + timedelta(days=300), ["r1"], 1, ["m1"]),
                                           ROOT_CONTEXT, ["r1"])))
    mirror.put_root(2, json.dumps(keys.sign(root_doc(keys, 2, NOW - timedelta(days=1), ["r1"], 1, ["m1"]),
                                            ROOT_CONTEXT, ["r1"])))
    mirror.manifest(5, ["m1"])
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=pinned)
    r = outpost(cfg, "run", key=None)
    assert r.returncode == 75, r.stderr
    assert "mirror root expired at" in r.stderr
    assert staged_versions(state) == []
    r = outpost(cfg, "status", key=None)
    assert r.stdout.startswith("ATTENTION"), r.stdout
    assert "mirror root expired at" in r.stdout.splitlines()[0]

    # Published again, valid for 10 days: installs, and status warns ahead of the cliff.
    mirror.put_root(3, json.dumps(keys.sign(root_doc(keys, 3, NOW + timedelta(days=10), ["r1"], 1, ["m1"]),
                                            ROOT_CONTEXT, ["r1"])))
    r = outpost(cfg, "run", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    r = outpost(cfg, "status", key=None)
    first = r.stdout.splitlines()[0]
    assert first.startswith("ATTENTION") and "mirror root expires at" in first, r.stdout


def test_a_new_root_file_starts_a_new_lineage(tmp_path, fleet):
    """Re-rooting (all root keys replaced in the configuration): the root the endpoint kept
    from the old lineage, though of a higher version, gives way to the new root_file."""
    keys, mirror, pinned = fleet
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=pinned)
    c = tmp_path / "ceremony"
    ceremony_next(keys, c / "1.root.json", c / "2.root.json", signers=["r1"])
    mirror.put_root(2, (c / "2.root.json").read_text())
    mirror.manifest(5, ["m1"])
    assert outpost(cfg, "check", key=None).returncode == 10
    assert kept_root_version(state) == 2
    # The new lineage, version 1: root key r9, manifest key m9; the mirror is rebuilt with it.
    shutil.rmtree(mirror.dir / "roots")
    (mirror.dir / "roots").mkdir()
    ceremony_root(keys, tmp_path / "new-root.json", root_keys=["r9"], root_threshold=1, manifest_keys=["m9"],
                  signers=["r9"])
    mirror.put_root(1, (tmp_path / "new-root.json").read_text())
    mirror.manifest(1, ["m9"])
    shutil.copyfile(tmp_path / "new-root.json", pinned)
    r = outpost(cfg, "update", key=None, env_extra={})
    assert r.returncode == 0, r.stderr
    assert "new lineage" in r.stderr, r.stderr  # loudly: on stderr (and in the log)
    assert staged_versions(state) == [V2]
    assert kept_root_version(state) is None  # the old lineage's root is gone, not merely set aside
    # Still trusted under the new lineage (V2 is staged, not deployed).
    assert outpost(cfg, "check", key=None).returncode == 10
    assert kept_root_version(state) is None


def walked_to_three(tmp_path, fleet):
    """The endpoint walks 1 -> 2 -> 3 (root 2 adds manifest key m2, root 3
    revokes m1) and accepts seq 50 signed by m2. Returns (cfg, state, the
    ceremony folder)."""
    keys, mirror, pinned = fleet
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=pinned)
    c = tmp_path / "ceremony"
    ceremony_next(keys, c / "1.root.json", c / "2.root.json", signers=["r1"], add_manifest=["m2"])
    ceremony_next(keys, c / "2.root.json", c / "3.root.json", signers=["r1"], remove_manifest=["m1"])
    mirror.put_root(2, (c / "2.root.json").read_text())
    mirror.put_root(3, (c / "3.root.json").read_text())
    mirror.manifest(50, ["m2"])
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 10, r.stderr
    assert kept_root_version(state) == 3
    return cfg, state, c


def withhold_roots_and_serve_the_revoked_key(fleet):
    """The attack of issue 34 (finding 1): the mirror withholds roots/ and
    serves seq 3 signed by the revoked manifest key m1."""
    keys, mirror, _ = fleet
    shutil.rmtree(mirror.dir / "roots")
    (mirror.dir / "roots").mkdir()
    (mirror.dir / "root.json").unlink()
    mirror.manifest(3, ["m1"])


def highest_seq(state) -> str:
    return json.loads((state / "state.json").read_text())["mirror"]["highest_seq"]


@pytest.mark.parametrize("change", ["trailing_newline", "crlf", "reindented", "older_root_walked_through"])
def test_a_rewritten_or_older_root_file_changes_nothing(tmp_path, fleet, change):
    """A root is its signed payload, not the file's bytes: root_file rewritten
    (a newline added, CRLF line ends, re-indented) or replaced by root 2,
    which the endpoint walked through, leaves root 3 trusted; the revoked
    key's manifest is refused (4), the stored seq stays 50."""
    keys, mirror, pinned = fleet
    cfg, state, c = walked_to_three(tmp_path, fleet)
    if change == "trailing_newline":
        pinned.write_bytes(pinned.read_bytes() + b"\n")
    elif change == "crlf":
        pinned.write_bytes(pinned.read_bytes().replace(b"\n", b"\r\n") + b"\r\n")
    elif change == "reindented":
        pinned.write_text(json.dumps(json.loads(pinned.read_text()), indent=4))
    else:
        shutil.copyfile(c / "2.root.json", pinned)
    withhold_roots_and_serve_the_revoked_key(fleet)
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 4, r.stderr
    assert "mirror root version 3" in r.stderr, r.stderr
    assert "new lineage" not in r.stderr, r.stderr
    assert kept_root_version(state) == 3
    assert highest_seq(state) == "50"


def test_an_older_root_file_not_walked_through_keeps_the_kept_root_and_says_how_to_reset(tmp_path, fleet):
    """root_file replaced by a root of a lower version than the kept one that
    the endpoint never saw (its lineage started above it): trust never moves
    down without `mirror trust reset`, which the warning names."""
    keys, mirror, pinned = fleet
    c = tmp_path / "ceremony"
    ceremony_next(keys, c / "1.root.json", c / "2.root.json", signers=["r1"], add_manifest=["m2"])
    ceremony_next(keys, c / "2.root.json", c / "3.root.json", signers=["r1"], remove_manifest=["m1"])
    shutil.copyfile(c / "2.root.json", pinned)  # the endpoint starts from root 2
    mirror.put_root(3, (c / "3.root.json").read_text())
    mirror.manifest(50, ["m2"])
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=pinned)
    assert outpost(cfg, "check", key=None).returncode == 10
    assert kept_root_version(state) == 3
    shutil.copyfile(c / "1.root.json", pinned)
    withhold_roots_and_serve_the_revoked_key(fleet)
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 4, r.stderr
    assert "mirror trust reset" in r.stderr, r.stderr
    assert kept_root_version(state) == 3
    assert highest_seq(state) == "50"


def test_mirror_trust_reset_starts_again_from_root_file_and_the_status_says_when(tmp_path, fleet):
    keys, mirror, pinned = fleet
    cfg, state, c = walked_to_three(tmp_path, fleet)
    withhold_roots_and_serve_the_revoked_key(fleet)
    assert outpost(cfg, "check", key=None).returncode == 4
    r = outpost(cfg, "--json", "mirror", "trust", "reset", key=None)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["forgotten_version"] == 3 and doc["root_file"] == str(pinned), doc
    assert kept_root_version(state) is None
    status = json.loads((state / "status.json").read_text())
    reset_at = status["installer"]["mirror"]["trust_reset_at"]
    assert reset_at == doc["reset_at"]
    # Trusted from root_file (version 1, m1) again, by the administrator's choice.
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 10, r.stderr
    status = json.loads((state / "status.json").read_text())
    assert status["installer"]["mirror"]["trust_reset_at"] == reset_at
    assert status["installer"]["mirror"]["root"]["version"] == 1
    r = outpost(cfg, "status", key=None)
    assert "mirror trust reset at " + reset_at in r.stdout, r.stdout
    # Nothing kept: reset says so and changes nothing else.
    r = outpost(cfg, "mirror", "trust", "reset", key=None)
    assert r.returncode == 0, r.stderr
    assert kept_root_version(state) is None


def test_mirror_trust_reset_takes_the_lock(tmp_path, fleet):
    import fcntl
    cfg, state, _ = walked_to_three(tmp_path, fleet)
    with open(state / "outpost.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = outpost(cfg, "mirror", "trust", "reset", key=None)
    assert r.returncode == 5, r.stderr
    assert kept_root_version(state) == 3


def test_mirror_trust_reset_without_root_file_is_a_configuration_error(tmp_path, fleet):
    keys, mirror, _ = fleet
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], [keys.pub("m1").read_text()])
    r = outpost(cfg, "mirror", "trust", "reset", key=None)
    assert r.returncode == 2, r.stderr
    assert "mirror.root_file" in r.stderr
    assert not state.exists()


# ---- seq, recovery -------------------------------------------------------------------------


def test_fast_forward_by_a_leaked_key_is_recovered_by_rotation(tmp_path, fleet):
    keys, mirror, pinned = fleet
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=pinned)
    # The attacker holds m1 and signs the highest seq there is.
    mirror.manifest(MAX_SEQ, ["m1"])
    r = outpost(cfg, "--json", "check", key=None)
    assert r.returncode == 10, r.stderr
    assert json.loads(r.stdout)["mirror"]["seq"] == MAX_SEQ  # printed exactly, not rounded
    st = json.loads((state / "state.json").read_text())
    assert st["mirror"]["highest_seq"] == str(MAX_SEQ)  # exact, not a rounded double
    # The publisher's next genuine manifest is refused as old...
    mirror.manifest(11, ["m1"])
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 75 and "old copy" in r.stderr, r.stderr
    # ...until the root's holders rotate the manifest key: the seq is forgotten with m1.
    c = tmp_path / "ceremony"
    ceremony_next(keys, c / "1.root.json", c / "2.root.json", signers=["r1"], add_manifest=["m2"],
                  remove_manifest=["m1"])
    mirror.put_root(2, (c / "2.root.json").read_text())
    mirror.manifest(12, ["m2"])
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]
    st = json.loads((state / "state.json").read_text())
    assert st["mirror"]["highest_seq"] == "12"
    # The leaked key's manifests stay refused.
    mirror.manifest(MAX_SEQ, ["m1"])
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 4, r.stderr


@pytest.mark.parametrize("seq", ["9007199254740992", "9007199254740993", "18446744073709551616", "0", "1.5"])
def test_seq_out_of_range_is_malformed(tmp_path, fleet, seq):
    keys, mirror, pinned = fleet
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=pinned)
    mirror.manifest(1, ["m1"])
    doc = json.loads(base64.b64decode(json.loads((mirror.dir / "manifest.json").read_text())["payload"]))
    raw = json.dumps(doc, separators=(",", ":")).replace('"seq":1,', f'"seq":{seq},').encode()
    mirror.manifest(1, ["m1"], raw=raw)
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 4, r.stderr
    assert "seq" in r.stderr


@pytest.mark.parametrize("body", [b"<html><body>502 Bad Gateway</body></html>", b"", b'{"payload": "eyJzY2hl'])
def test_error_page_empty_or_truncated_manifest_is_temporary(tmp_path, fleet, body):
    keys, mirror, pinned = fleet
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=pinned)
    (mirror.dir / "manifest.json").write_bytes(body)
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 75, r.stderr
    assert "manifest.json" in r.stderr and "not a signed manifest" in r.stderr
    assert staged_versions(state) == []


def test_root_file_that_does_not_exist_is_a_configuration_error(tmp_path, fleet):
    keys, mirror, _ = fleet
    cfg, state = endpoint_config(tmp_path, "e1", [mirror.url], root_file=tmp_path / "nowhere" / "root.json")
    r = outpost(cfg, "check", key=None)
    assert r.returncode == 2, r.stderr
    assert "mirror.root_file" in r.stderr


def test_public_keys_alone_keep_working_and_root_governs_both(tmp_path, fleet):
    keys, mirror, pinned = fleet
    mirror.manifest(5, ["m1"])
    simple, _ = endpoint_config(tmp_path, "simple", [mirror.url], [keys.pub("m1").read_text()])
    assert outpost(simple, "check", key=None).returncode == 10
    # Both set: the root governs, so a manifest by a pinned key the root does not list is refused.
    mirror.manifest(6, ["m2"])
    both, _ = endpoint_config(tmp_path, "both", [mirror.url], [keys.pub("m2").read_text()], root_file=pinned)
    r = outpost(both, "check", key=None)
    assert r.returncode == 4, r.stderr
    assert "mirror root version 1" in r.stderr


# ---- the ceremony's commands ------------------------------------------------------------------


def test_root_sign_refuses_a_key_others_can_read_and_verify_names_what_fails(tmp_path):
    keys = Keys(tmp_path / "keys")
    out = tmp_path / "1.root.json"
    r = outpost(None, "root", "init", "--root-key", keys.pub("r1"), "--root-key", keys.file("r2"), "--root-threshold",
                2, "--manifest-key", keys.pub("m1"), "--expires", "30d", "-o", out, key=None)
    assert r.returncode == 0, r.stderr
    # Never over an existing file.
    assert outpost(None, "root", "init", "--root-key", keys.pub("r1"), "--root-threshold", 1, "--manifest-key",
                   keys.pub("m1"), "--expires", "30d", "-o", out, key=None).returncode != 0
    loose = tmp_path / "loose.key"
    shutil.copyfile(keys.file("r1"), loose)
    os.chmod(loose, 0o644)
    before = out.read_bytes()
    r = outpost(None, "root", "sign", "-k", loose, out, key=None)
    assert r.returncode == 2, r.stderr
    # The refusal names the file it judged (issue 34, finding 9), not the API key's label.
    assert f"signing key file {loose} is readable by group or others" in r.stderr, r.stderr
    assert "API key" not in r.stderr, r.stderr
    assert out.read_bytes() == before
    assert outpost(None, "root", "sign", "-k", keys.file("r1"), out, key=None).returncode == 0
    r = outpost(None, "--json", "root", "verify", out, key=None)
    doc = json.loads(r.stdout)
    assert r.returncode == 4 and doc["exit"] == 4 and not doc["roots"][0]["ok"], doc
    assert "signed by 1 of its own 2 root keys, 2 needed" in doc["roots"][0]["error"]
    assert outpost(None, "root", "sign", "-k", keys.file("r2"), out, key=None).returncode == 0
    r = outpost(None, "--json", "root", "verify", out, key=None)
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["roots"][0]["version"] == 1, doc
    assert sorted(doc["roots"][0]["root_keys"]) == sorted([keys.entry("r1")["keyid"], keys.entry("r2")["keyid"]])


# ---- mirror verify -------------------------------------------------------------------------


def test_mirror_verify_judges_a_layout_as_the_endpoint_would(tmp_path, fleet):
    keys, mirror, pinned = fleet
    c = tmp_path / "ceremony"
    ceremony_next(keys, c / "1.root.json", c / "2.root.json", signers=["r1"], add_manifest=["m2"],
                  remove_manifest=["m1"])
    mirror.put_root(2, (c / "2.root.json").read_text())
    mirror.manifest(3, ["m2"])
    cfg, state = endpoint_config(tmp_path, "admin", [mirror.url], root_file=pinned)
    r = outpost(cfg, "mirror", "verify", mirror.dir, key=None)  # a directory, as a publisher has it
    assert r.returncode == 0, r.stdout + r.stderr
    assert "trusted root version 2" in r.stdout
    assert "an endpoint would: install " + V2 in r.stdout
    assert not state.exists()  # nothing written where the endpoint keeps its state
    r = outpost(cfg, "--json", "mirror", "verify", mirror.url, "--machine-id", "someone-else", key=None)
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["action"] == "install" and doc["version"] == V2, doc
    assert [j["step"] for j in doc["judgements"]] == ["root", "manifest", "rollout", "installer", "verification"]
    # A manifest by the key the root dropped: what the endpoint would exit with, named.
    mirror.manifest(4, ["m1"])
    r = outpost(cfg, "mirror", "verify", mirror.dir, key=None)
    assert r.returncode == 4, r.stdout
    assert "FAIL manifest" in r.stdout and "not signed by any manifest key of mirror root version 2" in r.stdout


# ---- publish -------------------------------------------------------------------------------


def test_publish_copies_the_roots_and_refuses_a_key_the_root_does_not_list(tmp_path, sim):
    keys = Keys(tmp_path / "keys")
    installer = tmp_path / "sensor.exe"
    write_fake_installer(str(installer), 2, 64 * 1024)
    sim.config(installer=str(installer), installer_version=V2)
    roots = tmp_path / "roots"
    roots.mkdir()
    ceremony_root(keys, roots / "1.root.json", root_keys=["r1"], root_threshold=1, manifest_keys=["m1"],
                  signers=["r1"], expires="20d")
    mirror_dir = tmp_path / "www"
    cfg = publisher_config(tmp_path, sim, keys.file("m1"), mirror_dir, publish={"roots_dir": str(roots)})
    r = outpost(cfg, "publish")
    assert r.returncode == 0, r.stderr
    assert "expires at" in r.stderr and "root next" in r.stderr  # within 30 days: warned
    assert (mirror_dir / "roots" / "1.root.json").read_bytes() == (roots / "1.root.json").read_bytes()
    assert (mirror_dir / "root.json").read_bytes() == (roots / "1.root.json").read_bytes()
    # Served like the rest of the mirror: a web server running as another user reads roots/
    # (a 403 there would end an endpoint's walk on the old root).
    assert (mirror_dir / "roots").stat().st_mode & 0o777 == 0o755
    assert (mirror_dir / "roots" / "1.root.json").stat().st_mode & 0o777 == 0o644
    # An endpoint pinning root 1 accepts the published mirror; `mirror verify` says so.
    ecfg, state = endpoint_config(tmp_path, "e1", [mirror_dir.as_uri()], root_file=roots / "1.root.json")
    r = outpost(ecfg, "mirror", "verify", mirror_dir, key=None)
    assert r.returncode == 0, r.stdout + r.stderr

    # Rotation: version 2 lists m2 instead of m1; publishing with m1 is refused, nothing replaced.
    ceremony_next(keys, roots / "1.root.json", roots / "2.root.json", signers=["r1"], add_manifest=["m2"],
                  remove_manifest=["m1"])
    manifest_before = (mirror_dir / "manifest.json").read_bytes()
    r = outpost(cfg, "publish")
    assert r.returncode == 2, r.stderr
    assert "not a manifest key of root version 2" in r.stderr
    assert (mirror_dir / "manifest.json").read_bytes() == manifest_before
    cfg = publisher_config(tmp_path, sim, keys.file("m2"), mirror_dir, publish={"roots_dir": str(roots)})
    r = outpost(cfg, "publish")
    assert r.returncode == 0, r.stderr
    assert (mirror_dir / "roots" / "2.root.json").exists()
    r = outpost(ecfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert staged_versions(state) == [V2]

    # A published root is never rewritten.
    (mirror_dir / "roots" / "1.root.json").write_text((roots / "2.root.json").read_text())
    r = outpost(cfg, "publish")
    assert r.returncode == 2 and "never rewritten" in r.stderr, r.stderr


# ---- over HTTP -----------------------------------------------------------------------------


class _Mirror(http.server.SimpleHTTPRequestHandler):
    missing = 404  # what a missing file is answered with (S3 without ListBucket says 403)
    roots_fail = False

    def log_message(self, *args):  # noqa: D401 - silence
        pass

    def send_error(self, code, message=None, explain=None):
        super().send_error(self.missing if code == 404 else code, message, explain)

    def do_GET(self):
        if self.roots_fail and "/roots/" in self.path:
            self.send_error(503)
            return
        super().do_GET()


@pytest.fixture
def http_mirror(fleet):
    keys, mirror, pinned = fleet
    handler = type("Handler", (_Mirror,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             lambda *a, **kw: handler(*a, directory=str(mirror.dir), **kw))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield keys, mirror, pinned, f"http://127.0.0.1:{server.server_address[1]}/", handler
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("missing", [404, 403])
def test_rotation_over_http_where_a_missing_root_ends_the_walk(tmp_path, http_mirror, missing):
    keys, mirror, pinned, url, handler = http_mirror
    handler.missing = missing
    c = tmp_path / "ceremony"
    ceremony_next(keys, c / "1.root.json", c / "2.root.json", signers=["r1"], add_manifest=["m2"],
                  remove_manifest=["m1"])
    mirror.put_root(2, (c / "2.root.json").read_text())
    mirror.manifest(3, ["m2"])
    cfg, state = endpoint_config(tmp_path, "e1", [url], root_file=pinned)
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 0, r.stderr
    assert kept_root_version(state) == 2 and staged_versions(state) == [V2]


def test_a_server_error_on_the_roots_is_temporary(tmp_path, http_mirror):
    keys, mirror, pinned, url, handler = http_mirror
    handler.roots_fail = True
    mirror.manifest(3, ["m1"])
    cfg, state = endpoint_config(tmp_path, "e1", [url], root_file=pinned)
    r = outpost(cfg, "update", key=None)
    assert r.returncode == 75, r.stderr
    assert "roots/2.root.json" in r.stderr
    assert staged_versions(state) == []
