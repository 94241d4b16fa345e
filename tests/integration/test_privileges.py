"""Privileges (PRODUCT.md section 9, issue 24) through the real binary as
root: no path, file or race by which a local unprivileged user steers what
root runs.

- The swap race: an unprivileged helper (uid 65534 through setpriv) swaps
  state_dir with a directory of its own (renameat2 RENAME_EXCHANGE), puts a
  symbolic link in its place and tries hard links, in a tight loop, while
  root runs `deploy` and `update` many times (bounded by count and time).
  The helper's installer writes a marker file; it must never appear. Once
  with a parent directory the user owns (every run refused, exit 1), once
  with state_dir in a root-owned sticky directory such as /tmp (every run
  succeeds; every move of the helper fails). Each twice: with the command
  `/bin/sh {installer}`, and with the command the installer itself
  (`{installer}`), which outpost runs from the descriptor it hashed.
- The last line of defence alone: the staged installer's name swapped (by
  rename, hard link and symbolic link) between the installer and another
  file in a tight loop, by an account that could (root: the path rules keep
  everyone else out), while root deploys with the command `{installer}`:
  the file hashed is the file that runs, so the other file never runs.
- Each file that decides what runs (the configuration, the API key file,
  trusted_ca_file, a mirror public key file): owned by another user,
  group-writable, world-writable, a link to a user's file: exit 2 naming it,
  before any request.

The helper's polyglot installers are PE files as far as `stage` can tell
(MZ header, PE signature) and shell scripts as far as /bin/sh can: the
lines holding the headers fail as unknown commands and the rest runs. The
kernel runs no PE file, so for the command `{installer}` the staged file is
then replaced, by root as an administrator could, with a `#!/bin/sh` script
and its manifest's sha256 and size made to match (the helper's copy too).
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from outpost_config import UNSIGNED
from outpost_run import OUTPOST, outpost

NOBODY = 65534
RUNS = 200          # root's runs of deploy and update in each race, at most
RACE_SECONDS = 60   # and at most this long (a loaded 2-core machine)
VERSION = "2.0.1"


def can_drop_to_nobody() -> bool:
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return False
    r = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "true"])
    return r.returncode == 0


pytestmark = [pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set"),
              pytest.mark.skipif(not can_drop_to_nobody(),
                                 reason="needs root and setpriv to run a helper as another user")]


def polyglot(script: str) -> bytes:
    """A minimal PE header that /bin/sh runs as a script."""
    b = bytearray(b"MZ\n" + b"#" * (0x3C - 4) + b"\n")
    b += struct.pack("<I", 0x80) + b"\n"
    b += b"#" * (0x80 - len(b) - 1) + b"\n"
    b += b"PE\0\0\n"
    b += script.encode() + b"\n"
    return bytes(b)


@pytest.fixture
def base():
    """A directory others may enter (pytest's tmp_path is 0700 all the way),
    owned by root, under the root-owned sticky /tmp."""
    path = Path(tempfile.mkdtemp(prefix="outpost-priv-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def chown_tree(path: Path, uid: int):
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, uid)
    os.lchown(path, uid, uid)


# ---- the swap race -------------------------------------------------------------------------

HELPER = r"""
import ctypes, os, random, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2

def exchange(a, b):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")

state, evil, evil_installer, stop = sys.argv[1:5]
away = state + ".away"
legit_installer = os.path.join(state, "staging", "%(version)s", "installer.exe")

def swap_exchange():
    exchange(state, evil)

def swap_link():
    os.rename(state, away)
    os.symlink(evil, state)

def undo_link():
    # Counts as a move only when there was one to undo.
    if not os.path.isdir(away):
        raise OSError("nothing to undo")
    if os.path.islink(state):
        os.unlink(state)
    os.rename(away, state)

def hard_link():
    os.link(evil_installer, legit_installer + ".new")
    os.rename(legit_installer + ".new", legit_installer)

# Pauses of random length between moves: a run that started in one world
# must meet the other somewhere between its checks and its exec, and a
# tight loop alone flips so fast that every check sees both.
tries = wins = 0
while not os.path.exists(stop):
    for op in (swap_exchange, swap_exchange, swap_link, undo_link, hard_link):
        tries += 1
        try:
            op()
            wins += 1
        except OSError:
            pass
        if random.random() < 0.5:
            time.sleep(random.random() * 0.004)
print(tries, wins)
""" % {"version": VERSION}


# deploy.command: the installer read by /bin/sh by name, or run itself (from its held descriptor).
COMMANDS = {"sh": ["/bin/sh", "{installer}"], "direct": ["{installer}"]}


def restage_as_script(version_dir: Path, script: str, mode: int) -> Path:
    """Replaces the staged installer in version_dir with a #!/bin/sh script
    the kernel can run, its manifest made to match (sha256, size)."""
    payload = f"#!/bin/sh\n{script}\n".encode()
    installer = version_dir / "installer.exe"
    installer.write_bytes(payload)
    os.chmod(installer, mode)
    manifest_path = version_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["sha256"] = hashlib.sha256(payload).hexdigest()
    manifest["size"] = len(payload)
    manifest_path.write_text(json.dumps(manifest))
    return installer


def build_world(top: Path, base: Path, sim_url: str, command: str = "sh"):
    """state_dir top/state staged (by root) with a good installer, and the
    helper's own copy top/evil whose installer writes base/marker. command:
    a key of COMMANDS."""
    marker = base / "marker"
    ver = base / "installed-version"
    ver.write_text("1.0\n")
    good = base / "good.exe"
    good.write_bytes(polyglot(f"echo {VERSION} > '{ver}'"))
    cfg = base / "outpost.json"
    doc = {"state_dir": str(top / "state"), "base_url": sim_url,
           "installer": {"installed_version_file": str(ver), "verify": UNSIGNED},
           "deploy": {"command": COMMANDS[command], "timeout_s": 30}}
    cfg.write_text(json.dumps(doc))
    r = outpost(cfg, "stage", str(good), "--version", VERSION, key=None, cwd="/")
    assert r.returncode == 0, r.stderr
    if command == "direct":
        restage_as_script(top / "state" / "staging" / VERSION, f"echo {VERSION} > '{ver}'", 0o700)
    # The helper's tree: the same layout, its installer, a manifest that matches it.
    evil = top / "evil"
    shutil.copytree(top / "state" / "staging", evil / "staging", ignore=shutil.ignore_patterns("*.lock"))
    payload = polyglot(f"touch '{marker}'; echo {VERSION} > '{ver}'")
    installer = evil / "staging" / VERSION / "installer.exe"
    installer.write_bytes(payload)
    manifest_path = evil / "staging" / VERSION / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["sha256"] = hashlib.sha256(payload).hexdigest()
    manifest["size"] = len(payload)
    manifest_path.write_text(json.dumps(manifest))
    if command == "direct":
        # Executable by anyone: were it ever run, it would run.
        restage_as_script(installer.parent, f"touch '{marker}'; echo {VERSION} > '{ver}'", 0o755)
    chown_tree(evil, NOBODY)
    return cfg, marker, evil, installer


def race(cfg: Path, top: Path, evil: Path, evil_installer: Path, base: Path):
    """Root runs deploy (and every tenth run update) while the helper
    swaps; returns (root's results, the helper's tries, its successful moves)."""
    stop = base / "stop"
    helper = subprocess.Popen(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-c", HELPER,
         str(top / "state"), str(evil), str(evil_installer), str(stop)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = []
    deadline = time.monotonic() + RACE_SECONDS
    try:
        for i in range(RUNS):
            if time.monotonic() > deadline:
                break
            command = "update" if i % 10 == 5 else "deploy"
            results.append((command, outpost(cfg, command, cwd="/")))
    finally:
        stop.write_text("")
        out, err = helper.communicate(timeout=60)
    assert helper.returncode == 0, err
    tries, wins = map(int, out.split())
    codes = sorted({r.returncode for _, r in results})
    print(f"{len(results)} runs of root's in {RACE_SECONDS - max(0.0, deadline - time.monotonic()):.1f} s "
          f"(exit codes {codes}); the helper tried {tries} moves, {wins} succeeded")
    return results, tries, wins


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_swap_race_under_a_users_directory_never_runs_their_file(base, command):
    """The issue's reproduction: /srv/u belongs to the user, state to root.
    No simulator: every run is refused before it would make a request."""
    top = base / "srv"
    top.mkdir(mode=0o755)
    cfg, marker, evil, evil_installer = build_world(top, base, "http://127.0.0.1:9", command)
    os.chown(top, NOBODY, NOBODY)  # now the user may rename what is in it
    results, tries, wins = race(cfg, top, evil, evil_installer, base)
    assert not marker.exists(), "root ran the user's installer"
    assert len(results) >= 20 and tries > 0
    assert wins > 0  # the user could move things: the defence is the refusal
    for command, r in results:
        assert r.returncode != 0, (command, r.stdout, r.stderr)
    refused = [r for _, r in results if r.returncode == 1 and f"{top}, a directory above" in r.stderr]
    assert refused, results[0][1].stderr
    assert f"is owned by uid {NOBODY}" in refused[0].stderr and f"chown root:root {top}" in refused[0].stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_swap_race_in_a_sticky_directory_changes_nothing(sim_factory, base, command):
    """state_dir directly in a root-owned sticky directory (as in /tmp): the
    user can create beside it but not move it; every run succeeds."""
    top = base / "shared"
    top.mkdir()
    os.chmod(top, 0o1777)
    good = base / "good.exe"
    good.write_bytes(polyglot("true"))  # rewritten by build_world; sim reads at start
    cfg, marker, evil, evil_installer = build_world(top, base, "http://127.0.0.1:9", command)
    staged = hashlib.sha256((top / "state" / "staging" / VERSION / "installer.exe").read_bytes()).hexdigest()
    sim = sim_factory(installer=str(good), installer_version=VERSION)
    doc = json.loads(cfg.read_text())
    doc["base_url"] = sim.url
    cfg.write_text(json.dumps(doc))
    results, tries, wins = race(cfg, top, evil, evil_installer, base)
    assert not marker.exists(), "root ran the user's installer"
    assert len(results) >= 20 and tries > 0
    assert wins == 0, "the user moved something in root's state_dir"
    for command, r in results:
        assert r.returncode == 0, (command, r.stdout, r.stderr)
    assert any(c == "update" for c, _ in results)
    manifest = json.loads((top / "state" / "staging" / VERSION / "manifest.json").read_text())
    assert manifest["sha256"] == staged


SWAPPER = r"""
import os, sys
installer, legit, other, stop = sys.argv[1:5]
tmp = installer + ".swap"
tries = wins = 0
while not os.path.exists(stop):
    for source, how in ((other, os.link), (legit, os.link), (other, os.symlink), (legit, os.link)):
        tries += 1
        try:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            how(source, tmp)
            os.rename(tmp, installer)
            wins += 1
        except OSError:
            pass
print(tries, wins)
"""


def test_installer_swapped_by_name_never_runs_when_run_from_its_descriptor(base):
    """The staged installer's name flips between it and another file (hard
    links renamed over it, a symbolic link) as fast as root can flip it,
    while root deploys with the command `{installer}` up to RUNS times:
    each run either runs the file it hashed or refuses (hash mismatch, a
    link), and the other file never runs. The swapper is root because
    nobody else may write there (the path rules); what is shown is that a
    name swapped after the hash cannot change what runs."""
    top = base / "root-only"
    top.mkdir(mode=0o755)
    cfg, marker, _, _ = build_world(top, base, "http://127.0.0.1:9", "direct")
    installer = top / "state" / "staging" / VERSION / "installer.exe"
    legit = top / "legit.exe"
    os.link(installer, legit)
    other = top / "other.exe"
    other.write_bytes(f"#!/bin/sh\ntouch '{marker}'\n".encode())
    os.chmod(other, 0o755)
    stop = base / "stop"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(installer), str(legit), str(other), str(stop)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = []
    deadline = time.monotonic() + RACE_SECONDS
    try:
        while len(results) < RUNS and time.monotonic() < deadline:
            results.append(outpost(cfg, "deploy", key=None, cwd="/"))
    finally:
        stop.write_text("")
        out, err = swapper.communicate(timeout=60)
    assert swapper.returncode == 0, err
    tries, wins = map(int, out.split())
    ran = [r for r in results if r.returncode == 0]
    refused = [r for r in results if r.returncode != 0]
    print(f"{len(results)} deploys: {len(ran)} ran the hashed installer, {len(refused)} refused; "
          f"the swapper tried {tries} swaps, {wins} succeeded")
    assert not marker.exists(), "a file swapped in after the hash ran as root"
    assert len(results) >= 20 and wins > 0
    assert ran, results[0].stderr
    for r in refused:
        assert ("no longer matches its manifest" in r.stderr or "symbolic link" in r.stderr
                or "does not match" in r.stderr or "size" in r.stderr), r.stderr


def test_a_link_below_state_dir_is_refused_not_followed(base):
    """state_dir/staging replaced by a symbolic link to another staging tree
    (one that passes the path rules: root's, private) whose installer writes
    the marker: outpost reaches everything below state_dir from the handle
    it opened, refuses the link, names the path and runs nothing."""
    top = base / "linked"
    top.mkdir(mode=0o755)
    cfg, marker, _, _ = build_world(top, base, "http://127.0.0.1:9", "direct")
    other = base / "private"
    other.mkdir(mode=0o700)
    shutil.copytree(top / "state" / "staging", other / "staging")
    restage_as_script(other / "staging" / VERSION, f"touch '{marker}'", 0o700)
    shutil.rmtree(top / "state" / "staging")
    (top / "state" / "staging").symlink_to(other / "staging")
    r = outpost(cfg, "deploy", key=None, cwd="/")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"{top / 'state' / 'staging'}" in r.stderr and "symbolic link" in r.stderr, r.stderr
    assert not marker.exists(), "root followed a link below state_dir and ran what it found"


@pytest.mark.parametrize("folder", ["logs", "downloads"])
def test_a_linked_state_folder_is_refused_at_the_start(base, folder):
    """state_dir/logs or downloads as a link to a private directory of root's:
    judged through the held state directory when the run starts, refused with
    exit 1 naming it, before anything runs and without a word (not even the
    log file's) written through the link."""
    top = base / f"linked-{folder}"
    top.mkdir(mode=0o755)
    cfg, marker, _, _ = build_world(top, base, "http://127.0.0.1:9", "direct")
    other = base / f"private-{folder}"
    other.mkdir(mode=0o700)
    shutil.rmtree(top / "state" / folder, ignore_errors=True)
    (top / "state" / folder).symlink_to(other)
    r = outpost(cfg, "deploy", key=None, cwd="/")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"{top / 'state' / folder}" in r.stderr and "symbolic link" in r.stderr, r.stderr
    assert list(other.iterdir()) == [], "outpost wrote through a link below state_dir"


def test_parent_directory_owned_by_a_user_is_refused(base):
    top = base / "home-user"
    top.mkdir(mode=0o755)
    os.chown(top, NOBODY, NOBODY)
    cfg = base / "outpost.json"
    cfg.write_text(json.dumps({"state_dir": str(top / "state"), "installer": {"verify": UNSIGNED}}))
    exe = base / "a.exe"
    exe.write_bytes(polyglot("true"))
    r = outpost(cfg, "stage", str(exe), "--version", "1.0", key=None, cwd="/")
    assert r.returncode == 1, r.stderr
    assert f"{top}, a directory above {top / 'state'}" in r.stderr
    assert f"owned by uid {NOBODY}" in r.stderr and f"chown root:root {top}" in r.stderr
    assert not (top / "state" / "staging").exists()


# ---- trusted inputs ------------------------------------------------------------------------

KINDS = ["configuration", "api_key_file", "trusted_ca_file", "mirror_public_key"]
FLAWS = ["owner", "group-writable", "world-writable", "link-to-users-file"]


def trusted_input_case(base: Path, sim, kind: str):
    """(config path, the file under test, its good content and mode, the
    command, extra environment) for one kind of trusted input."""
    state = base / "state"
    doc = {"state_dir": str(state), "base_url": sim.url, "installer": {"installed_version": "1.0",
                                                                     "verify": dict(UNSIGNED)}}
    env = {"OUTPOST_API_KEY": "sim-api-key"}
    cfg = base / "outpost.json"
    command = ["check"]
    if kind == "configuration":
        target, content, mode = cfg, None, 0o644
    elif kind == "api_key_file":
        target, content, mode = base / "api_key", "sim-api-key\n", 0o600
        doc["api_key_file"] = str(target)
        env = {}
    elif kind == "trusted_ca_file":
        target, content, mode = base / "publisher-ca.pem", "not needed to be valid here\n", 0o644
        doc["installer"]["verify"]["trusted_ca_file"] = str(target)
        command = ["update"]
    else:
        target, content, mode = base / "mirror.pub", "-----BEGIN PUBLIC KEY-----\n", 0o644
        doc.pop("base_url")
        doc["mirror"] = {"urls": [sim.url + "/mirror/"], "public_keys": [str(target)]}
        doc["report"] = {"enabled": False}
    cfg.write_text(json.dumps(doc))
    if content is not None:
        target.write_text(content)
    os.chmod(target, mode)
    return cfg, target, mode, command, env


@pytest.mark.parametrize("flaw", FLAWS)
@pytest.mark.parametrize("kind", KINDS)
def test_untrusted_input_file_is_refused_before_any_request(sim, base, kind, flaw):
    cfg, target, mode, command, env = trusted_input_case(base, sim, kind)
    named = target
    if flaw == "owner":
        os.chown(target, NOBODY, NOBODY)
    elif flaw == "group-writable":
        os.chmod(target, mode | 0o020)
    elif flaw == "world-writable":
        os.chmod(target, mode | 0o002)
    else:
        # The user's own file, reached through a link root made (or was given).
        users = base / "users-copy"
        shutil.copyfile(target, users)
        os.chown(users, NOBODY, NOBODY)
        os.chmod(users, mode)
        link = target.with_name(target.name + ".link")
        link.symlink_to(users)
        if kind == "configuration":
            cfg = link
        else:
            text = cfg.read_text().replace(str(target), str(link))
            cfg.write_text(text)
        named = link
    sim.clear_log()
    r = outpost(cfg, *command, env_extra=env, key=None, cwd="/")
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert any(str(named) in line for line in lines), r.stderr
    assert "chown" in r.stderr and "chmod" in r.stderr
    assert sim.log()["requests"] == [], "a request was made before the file was judged"


@pytest.mark.parametrize("kind", KINDS)
def test_trusted_input_files_as_an_administrator_keeps_them_pass(sim, base, kind):
    """The same files, root's and written by root alone, do not stop the run
    at the trust check (what happens next is other tests' business)."""
    cfg, target, mode, command, env = trusted_input_case(base, sim, kind)
    r = outpost(cfg, *command, env_extra=env, key=None, cwd="/")
    assert "refusing it" not in r.stderr, r.stderr


# ---- links judged where they live (issue 34, finding 2) ------------------------------------------


def users_folder(base: Path, name: str = "u") -> Path:
    """A folder the unprivileged user owns (0755), where they may put and re-point links."""
    folder = base / name
    folder.mkdir(mode=0o755)
    os.chown(folder, NOBODY, NOBODY)
    return folder


FLIPPER = r"""
import os, sys
link, first, second, stop = sys.argv[1:5]
tmp = link + ".new"
flips = 0
while not os.path.exists(stop):
    for target in (first, second):
        try:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(target, tmp)
            os.rename(tmp, link)
            flips += 1
        except OSError:
            pass
print(flips)
"""


def test_configuration_through_a_link_a_user_can_flip_is_refused_every_time(base):
    """The issue's reproduction of 2a: `-c` names a link in a folder the user
    owns, flipped in a tight loop between root's configuration and the
    user's (whose state_dir is another directory). Judging a link by its
    target and then reading by name loaded the user's configuration in 60
    of 300 runs; judged where it lives, every run is refused with exit 2
    naming the folder, and the user's configuration never takes effect."""
    folder = users_folder(base)
    good_state, evil_state = base / "state-good", base / "state-evil"
    good, evil = base / "root.json", folder / "theirs.json"
    good.write_text(json.dumps({"state_dir": str(good_state), "installer": {"verify": UNSIGNED}}))
    evil.write_text(json.dumps({"state_dir": str(evil_state), "installer": {"verify": UNSIGNED}}))
    os.chown(evil, NOBODY, NOBODY)
    link = folder / "outpost.json"
    link.symlink_to(good)
    os.lchown(link, NOBODY, NOBODY)
    stop = base / "stop"
    flipper = subprocess.Popen(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-c", FLIPPER,
         str(link), str(good), str(evil), str(stop)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = []
    deadline = time.monotonic() + RACE_SECONDS
    try:
        while len(results) < RUNS and time.monotonic() < deadline:
            results.append(outpost(link, "deploy", key=None, cwd="/"))
    finally:
        stop.write_text("")
        out, err = flipper.communicate(timeout=60)
    assert flipper.returncode == 0, err
    print(f"{len(results)} runs while the user flipped the link {out.strip()} times; exit codes "
          f"{sorted({r.returncode for r in results})}")
    assert len(results) >= 20 and int(out) > 0
    assert not evil_state.exists(), "a run loaded the user's configuration"
    assert not good_state.exists(), "a run trusted a configuration reached through the user's link"
    for r in results:
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert str(folder) in r.stderr and "configuration file" in r.stderr, r.stderr


def trust_file_case(base: Path, kind: str, sim_url: str = "http://127.0.0.1:9"):
    """(configuration document, the trusted file of this kind written by
    root, its mode, the command that reads it, its environment)."""
    state = base / "state"
    doc = {"state_dir": str(state), "base_url": sim_url,
           "installer": {"installed_version": "1.0", "verify": dict(UNSIGNED)}}
    env = {"OUTPOST_API_KEY": "sim-api-key"}
    command = ["check"]
    keys = base / "keys"
    if kind == "api_key_file":
        target, mode = base / "api_key", 0o600
        target.write_text("sim-api-key\n")
        env = {}
    elif kind == "trusted_ca_file":
        target, mode = base / "publisher-ca.pem", 0o644
        target.write_text("not needed to be valid here\n")
        command = ["update"]
    elif kind in ("mirror_public_key", "mirror_root_file"):
        from mirror_helper import Keys, ceremony_root
        k = Keys(keys)
        if kind == "mirror_public_key":
            target = k.pub("m1")
        else:
            target = ceremony_root(k, base / "root.json", root_keys=["r1"], root_threshold=1, manifest_keys=["m1"],
                                   signers=["r1"])
        mode = 0o644
        doc.pop("base_url")
        mirror = base / "mirror"
        mirror.mkdir(exist_ok=True)
        doc["mirror"] = {"urls": [mirror.as_uri() + "/"], "machine_id": "m"}
        doc["report"] = {"enabled": False}
    else:
        raise ValueError(kind)
    os.chmod(target, mode)
    return doc, target, mode, command, env


def point_config_at(doc: dict, kind: str, path: Path) -> dict:
    doc = json.loads(json.dumps(doc))
    if kind == "api_key_file":
        doc["api_key_file"] = str(path)
    elif kind == "trusted_ca_file":
        doc["installer"]["verify"]["trusted_ca_file"] = str(path)
    elif kind == "mirror_public_key":
        doc["mirror"]["public_keys"] = [str(path)]
    elif kind == "mirror_root_file":
        doc["mirror"]["root_file"] = str(path)
    return doc


LINKED_KINDS = ["configuration", "api_key_file", "trusted_ca_file", "mirror_public_key", "mirror_root_file"]


@pytest.mark.parametrize("kind", LINKED_KINDS)
def test_a_link_in_a_users_folder_to_roots_file_is_refused(sim, base, kind):
    """Judged by its target alone, a link the user may re-point at will to a
    file of root's passed (2a without a race); the folder holding the link
    is judged now: exit 2 naming it, before any request and with nothing
    written."""
    folder = users_folder(base)
    if kind == "configuration":
        doc, key, _, command, env = trust_file_case(base, "api_key_file", sim.url)
        good = base / "outpost.json"
        good.write_text(json.dumps(point_config_at(doc, "api_key_file", key)))
        link = folder / "outpost.json"
        link.symlink_to(good)
        cfg = link
    else:
        doc, target, _, command, env = trust_file_case(base, kind, sim.url)
        link = folder / target.name
        link.symlink_to(target)
        cfg = base / "outpost.json"
        cfg.write_text(json.dumps(point_config_at(doc, kind, link)))
    sim.clear_log()
    r = outpost(cfg, *command, env_extra=env, key=None, cwd="/")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert str(folder) in r.stderr and f"owned by uid {NOBODY}" in r.stderr, r.stderr
    assert sim.log()["requests"] == []
    assert not (base / "state").exists(), "something was written before the link was judged"


@pytest.mark.parametrize("kind", LINKED_KINDS)
def test_a_link_in_roots_folder_to_roots_file_passes(sim, base, kind):
    """The same link in a folder of root's: followed, its target judged, and the run goes on."""
    folder = base / "etc"
    folder.mkdir(mode=0o755)
    if kind == "configuration":
        doc, key, _, command, env = trust_file_case(base, "api_key_file", sim.url)
        good = base / "outpost.json"
        good.write_text(json.dumps(point_config_at(doc, "api_key_file", key)))
        cfg = folder / "outpost.json"
        cfg.symlink_to(good)
    else:
        doc, target, _, command, env = trust_file_case(base, kind, sim.url)
        link = folder / target.name
        link.symlink_to(target)
        cfg = base / "outpost.json"
        cfg.write_text(json.dumps(point_config_at(doc, kind, link)))
    r = outpost(cfg, *command, env_extra=env, key=None, cwd="/")
    # (What happens next is other tests' business: this CA file holds no certificate.)
    assert "refusing it" not in r.stderr and "owned by" not in r.stderr, (r.returncode, r.stderr)


def test_state_dir_through_a_link_in_a_users_folder_is_refused(base):
    """2b: state_dir names a link in the user's folder to a root-owned 0755
    folder (standing in for /etc): refused (exit 1) naming the link's folder,
    and the folder it points at is left exactly as it was."""
    folder = users_folder(base)
    etc = base / "etc-like"
    etc.mkdir(mode=0o755)
    (etc / "passwd-like").write_text("keep\n")
    (folder / "state").symlink_to(etc)
    cfg = base / "outpost.json"
    cfg.write_text(json.dumps({"state_dir": str(folder / "state"), "base_url": "http://127.0.0.1:9",
                               "installer": {"installed_version": "1.0", "verify": UNSIGNED}}))
    before = (os.stat(etc).st_mode, os.stat(etc).st_uid, os.stat(etc).st_gid, sorted(os.listdir(etc)))
    r = outpost(cfg, "check", cwd="/")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert str(folder) in r.stderr and f"owned by uid {NOBODY}" in r.stderr, r.stderr
    after = (os.stat(etc).st_mode, os.stat(etc).st_uid, os.stat(etc).st_gid, sorted(os.listdir(etc)))
    assert after == before, "outpost changed or wrote into the folder the user's link points at"


# ---- nothing written before everything is judged (findings 3 and 7) -------------------------------


def test_log_file_is_not_written_through_a_refused_state_dir(base):
    """3: a state_dir the user owns, its logs folder a link to a folder of
    root's, log.file in it: the state_dir is refused (exit 1) and no log
    line is written anywhere (until state_dir is held, messages go to
    stderr only)."""
    state = users_folder(base, "state")
    victim = base / "victim"
    victim.mkdir(mode=0o755)
    (state / "logs").symlink_to(victim)
    os.lchown(state / "logs", NOBODY, NOBODY)
    cfg = base / "outpost.json"
    cfg.write_text(json.dumps({"state_dir": str(state), "base_url": "http://127.0.0.1:9",
                               "installer": {"installed_version": "1.0", "verify": UNSIGNED},
                               "log": {"file": "logs/outpost.log"}}))
    r = outpost(cfg, "check", cwd="/")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"owned by uid {NOBODY}" in r.stderr, r.stderr
    assert list(victim.iterdir()) == [], "root wrote the log through the user's link"
    assert sorted(p.name for p in state.iterdir()) == ["logs"], "something was written in the refused state_dir"


@pytest.mark.parametrize("kind", ["mirror_root_file", "mirror_public_key"])
def test_a_loose_mirror_trust_file_writes_nothing(base, kind):
    """7: a world-writable mirror.root_file or public key file is a
    configuration error (exit 2) found before the state directory, the
    lock, state.json, status.json or the log exist."""
    doc, target, mode, command, env = trust_file_case(base, kind)
    doc = point_config_at(doc, kind, target)
    doc["log"] = {"file": "outpost.log"}
    cfg = base / "outpost.json"
    cfg.write_text(json.dumps(doc))
    os.chmod(target, 0o666)
    r = outpost(cfg, *command, env_extra=env, key=None, cwd="/")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert str(target) in r.stderr and "chmod" in r.stderr, r.stderr
    assert not (base / "state").exists(), "the state directory was created before the configuration was judged"


# ---- files outside state_dir (finding 4) -----------------------------------------------------------

OUTSIDE = {
    # key: (configuration section, its key, the command that writes it)
    "jsonl_file": ("report", "jsonl_file", "report"),
    "status_file": ("report", "status_file", "report"),
    "metrics_file": ("report", "metrics_file", "report"),
    "ocsf_file": ("report", "ocsf_file", "report"),
    "cef_file": ("report", "cef_file", "report"),
    "log.file": ("log", "file", "report"),
}


def outside_config(base: Path, sim, which: str, path: Path) -> Path:
    section, key, _ = OUTSIDE[which]
    doc = {"state_dir": str(base / "state"), "base_url": sim.url, "schedule": {"jitter": "0s"}}
    doc.setdefault(section, {})[key] = str(path)
    cfg = base / "outpost.json"
    cfg.write_text(json.dumps(doc))
    return cfg


@pytest.mark.parametrize("which", sorted(OUTSIDE))
@pytest.mark.sim_options(incidents=3)
def test_a_feed_in_a_users_folder_is_refused_and_writes_nothing_through_it(sim, base, which):
    """4: an absolute feed (or log) path in a folder the user owns, the file
    a link to a file of root's: refused (exit 1) naming the folder, and the
    file of root's does not grow."""
    folder = users_folder(base, "feeds")
    victim = base / "victim.conf"
    victim.write_text("root's\n")
    link = folder / "out"
    link.symlink_to(victim)
    os.lchown(link, NOBODY, NOBODY)
    cfg = outside_config(base, sim, which, link)
    r = outpost(cfg, OUTSIDE[which][2], cwd="/")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert str(folder) in r.stderr and f"owned by uid {NOBODY}" in r.stderr, r.stderr
    assert victim.read_text() == "root's\n", "root wrote through the user's link"


@pytest.mark.parametrize("which", sorted(OUTSIDE))
@pytest.mark.sim_options(incidents=3)
def test_a_feed_that_is_a_link_is_not_followed(sim, base, which):
    """In a folder of root's, a feed file that is a link (to another file of
    root's) is not followed either: refused, the other file unchanged."""
    folder = base / "feeds"
    folder.mkdir(mode=0o755)
    victim = base / "victim.conf"
    victim.write_text("root's\n")
    (folder / "out").symlink_to(victim)
    cfg = outside_config(base, sim, which, folder / "out")
    r = outpost(cfg, OUTSIDE[which][2], cwd="/")
    assert victim.read_text() == "root's\n", "root wrote through a link"
    assert "symbolic link" in r.stderr, r.stderr
    # A feed that cannot be written fails the run; the log file and the
    # metrics file are warnings (the log's lines go to stderr only; README,
    # LOG FILE; a metrics file is refreshed every run and never fails it).
    if which in ("log.file", "metrics_file"):
        assert "warning" in r.stderr, (r.returncode, r.stderr)
    else:
        assert r.returncode != 0, (r.returncode, r.stderr)


@pytest.mark.parametrize("which", sorted(OUTSIDE))
@pytest.mark.sim_options(incidents=3)
def test_a_feed_in_roots_folder_is_written_owner_only(sim, base, which):
    folder = base / "feeds"
    folder.mkdir(mode=0o755)
    cfg = outside_config(base, sim, which, folder / "out")
    r = outpost(cfg, OUTSIDE[which][2], cwd="/", umask=0o022)
    assert r.returncode == 0, r.stderr
    st = os.lstat(folder / "out")
    assert stat_is_regular(st) and st.st_mode & 0o777 == 0o600, oct(st.st_mode)


def stat_is_regular(st) -> bool:
    import stat as stat_module
    return stat_module.S_ISREG(st.st_mode)
