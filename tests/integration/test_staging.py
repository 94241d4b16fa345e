"""The staging side of the installer pipeline, through the real binary:
`stage` (PE, MSI, archives holding one, HTML error pages, hostile archives,
signatures, downgrades), `deploy` (dry run, success, failure, timeout,
nothing staged), `rollback` and `bundle` (reproducible, stages again in a
fresh state directory). All offline: no simulator, no API key.

Signed test files come from tests/fixtures/make_signing_fixtures.sh (openssl,
osslsigncode, mingw-w64, wixl); tests that need them are skipped when those
tools are missing. Exit codes 3010/1641 cannot be produced by a POSIX
process (exit statuses are 8 bits), so the reboot codes are covered by the
unit tests (tests/unit/test_deploy.c), not here.
"""
import io
import json
import os
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from authenticode_fixtures import tiny_pe
from outpost_run import OUTPOST, outpost

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")


class Agent:
    """One state directory and configuration; runs outpost against them."""

    def __init__(self, root: Path, **settings):
        self.root = root
        self.state = root / "state"
        self.cfg = root / "outpost.json"
        self.settings = settings
        self.write_config()

    def write_config(self):
        s = self.settings
        verify = {"require_signature": s.get("require_signature", False),
                  "trusted_ca_file": s.get("ca"), "expected_sha256": s.get("expected_sha256")}
        installer = {"verify": verify, "keep_versions": s.get("keep_versions", 2)}
        for key in ("installed_version", "installed_version_file"):
            if s.get(key):
                installer[key] = s[key]
        doc = {"state_dir": str(self.state), "installer": installer,
               "deploy": {"command": s.get("command", ["/bin/true", "{installer}"]),
                          "timeout_s": s.get("timeout_s", 30)}}
        self.cfg.write_text(json.dumps(doc))

    def run(self, *args, timeout=60, cwd=None, umask=None):
        return outpost(self.cfg, *args, key=None, timeout=timeout, cwd=cwd or self.root, umask=umask)

    def staging(self):
        d = self.state / "staging"
        return sorted(p.name for p in d.iterdir()) if d.exists() else []

    def current(self):
        p = self.state / "staging" / "current"
        return p.read_text().strip() if p.exists() else None

    def manifest(self, version):
        return json.loads((self.state / "staging" / version / "manifest.json").read_text())

    def status(self):
        return json.loads((self.state / "status.json").read_text())


def stage_ok(agent, path, version, *extra):
    r = agent.run("stage", str(path), "--version", version, *extra)
    assert r.returncode == 0, r.stderr
    return r


def one_line_error(r, needle):
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert needle in lines[0], lines[0]


def tree(path: Path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


# ---- stage: formats and signatures ---------------------------------------------


def test_stage_signed_pe_and_msi(tmp_path, fx):
    # The fixtures state version 26.01.03.24329 (make_signing_fixtures.sh): the
    # version they are staged under must agree with it (version binding).
    agent = Agent(tmp_path, require_signature=True, ca=str(fx / "root.pem"))
    stage_ok(agent, fx / "signed.exe", "26.01.03.24329-0de7ab+")
    m = agent.manifest("26.01.03.24329-0de7ab+")
    assert m["file_name"] == "signed.exe" and m["version"] == "26.01.03.24329-0de7ab+"
    assert m["verification"]["format"] == "pe"
    assert m["verification"]["signature"]["result"] == "valid"
    assert "Example Code Signing" in m["verification"]["signature"]["signer"]
    assert m["size"] == (fx / "signed.exe").stat().st_size
    stage_ok(agent, fx / "signed.msi", "26.1.3.24329")
    assert agent.manifest("26.1.3.24329")["verification"]["format"] == "msi"
    assert agent.current() == "26.1.3.24329"
    staged = agent.status()["installer"]["staged"]
    assert staged["version"] == "26.1.3.24329" and staged["signature"] == "valid"
    assert (fx / "signed.msi").exists(), "stage FILE copies, it does not move"


def test_unsigned_rejected_only_when_required(tmp_path, fx):
    agent = Agent(tmp_path, require_signature=True, ca=str(fx / "root.pem"))
    r = agent.run("stage", str(fx / "unsigned.exe"), "--version", "1.0")
    assert r.returncode == 4
    one_line_error(r, "not signed")
    assert agent.current() is None and [n for n in agent.staging() if not n.startswith(".")] == []
    agent.settings["require_signature"] = False
    agent.write_config()
    stage_ok(agent, fx / "unsigned.msi", "26.1.3.24329")
    assert agent.manifest("26.1.3.24329")["verification"]["signature"]["result"] == "unsigned"


def test_broken_signature_rejected_even_when_not_required(tmp_path, fx):
    agent = Agent(tmp_path, require_signature=False, ca=str(fx / "root.pem"))
    tampered = tmp_path / "tampered.exe"
    data = bytearray((fx / "signed.exe").read_bytes())
    data[0x400] ^= 0xFF  # inside the image, covered by the digest
    tampered.write_bytes(bytes(data))
    for path, why in ((tampered, "digest-mismatch"), (fx / "other-ca.exe", "untrusted-chain")):
        r = agent.run("stage", str(path), "--version", "1.0")
        assert r.returncode == 4, r.stderr
        one_line_error(r, why)
    assert agent.current() is None


def test_html_error_page_rejected(tmp_path):
    agent = Agent(tmp_path)
    page = tmp_path / "SensorSetup.exe"
    page.write_text("<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>")
    r = agent.run("stage", str(page), "--version", "1.0")
    assert r.returncode == 4
    one_line_error(r, "not a Windows installer (PE or MSI)")
    assert [n for n in agent.staging() if n != "current"] == []
    last = agent.status()["installer"]["last_command"]
    assert last["command"] == "stage" and last["exit_code"] == 4 and "not a Windows installer" in last["error"]


def test_unsigned_tiny_pe_skipped_without_ca(tmp_path):
    agent = Agent(tmp_path)
    exe = tmp_path / "app.exe"
    exe.write_bytes(tiny_pe())
    r = agent.run("--json", "stage", str(exe), "--version", "26.01.03.24329-0de7ab+")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["version"] == "26.01.03.24329-0de7ab+" and out["signature"] == "skipped"
    assert agent.manifest("26.01.03.24329-0de7ab+")["verification"]["signature"]["result"] == "skipped"


def test_stage_without_version_is_usage_error(tmp_path):
    agent = Agent(tmp_path)
    exe = tmp_path / "app.exe"
    exe.write_bytes(tiny_pe())
    r = agent.run("stage", str(exe))
    assert r.returncode == 2
    one_line_error(r, "--version")


def test_bad_version_rejected(tmp_path):
    agent = Agent(tmp_path)
    exe = tmp_path / "app.exe"
    exe.write_bytes(tiny_pe())
    for bad in ("../1.0", "1.0/x", "a" * 65):
        r = agent.run("stage", str(exe), "--version", bad)
        assert r.returncode == 4, (bad, r.stderr)
    assert not (tmp_path / "1.0").exists()


# ---- stage: archives ------------------------------------------------------------------


def test_zip_and_tar_gz_holding_installer(tmp_path):
    pe = tiny_pe(1)
    z = tmp_path / "pkg.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("docs/README.txt", "read me")
        zf.writestr("bin/SensorSetup.exe", pe)
    import hashlib
    agent = Agent(tmp_path, expected_sha256=hashlib.sha256(z.read_bytes()).hexdigest())
    stage_ok(agent, z, "2.0")
    m = agent.manifest("2.0")
    assert m["file_name"] == "SensorSetup.exe"
    assert m["sha256"] == hashlib.sha256(pe).hexdigest()
    v = m["verification"]
    assert (v["format"], v["inner_format"], v["inner_name"], v["sha256"]) == ("zip", "pe", "bin/SensorSetup.exe",
                                                                           "matched")
    assert (agent.state / "staging" / "2.0" / "installer.exe").read_bytes() == pe

    t = tmp_path / "pkg.tar.gz"
    with tarfile.open(t, "w:gz") as tf:
        info = tarfile.TarInfo("Sensor.msi")
        msi = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1" + bytes(504)
        info.size = len(msi)
        tf.addfile(info, io.BytesIO(msi))
    agent.settings["expected_sha256"] = None
    agent.write_config()
    stage_ok(agent, t, "2.1")
    assert agent.manifest("2.1")["verification"]["format"] == "tar.gz"
    assert agent.manifest("2.1")["verification"]["inner_format"] == "msi"


def hostile_archives(tmp_path: Path):
    pe = tiny_pe(2)
    made = {}
    p = tmp_path / "slip.zip"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("SensorSetup.exe", pe)
        zf.writestr("../../evil.exe", pe)
    made["slip.zip"] = (p, '".."')
    p = tmp_path / "abs.tar.gz"
    with tarfile.open(p, "w:gz") as tf:
        info = tarfile.TarInfo("/tmp/evil.exe")
        info.size = len(pe)
        tf.addfile(info, io.BytesIO(pe))
    made["abs.tar.gz"] = (p, "absolute")
    p = tmp_path / "link.tar.gz"
    with tarfile.open(p, "w:gz") as tf:
        info = tarfile.TarInfo("SensorSetup.exe")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tf.addfile(info)
    made["link.tar.gz"] = (p, "symbolic link")
    p = tmp_path / "hard.tar"
    with tarfile.open(p, "w") as tf:
        info = tarfile.TarInfo("a.exe")
        info.size = len(pe)
        tf.addfile(info, io.BytesIO(pe))
        info = tarfile.TarInfo("b.exe")
        info.type = tarfile.LNKTYPE
        info.linkname = "a.exe"
        tf.addfile(info)
    made["hard.tar"] = (p, "hard link")
    p = tmp_path / "bomb.zip"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("SensorSetup.exe", "w", force_zip64=True) as w:
            w.write(pe)
            chunk = bytes(1 << 20)
            for _ in range(80):  # 80 MiB of zeros: ~80 KiB compressed
                w.write(chunk)
    made["bomb.zip"] = (p, "expansion bomb")
    p = tmp_path / "many.zip"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("SensorSetup.exe", pe)
        for i in range(10000):
            zf.writestr(f"f/{i}", b"")
    made["many.zip"] = (p, "more than 10000 entries")
    return made


def test_hostile_archives_rejected(tmp_path):
    start = time.time()  # a /tmp/evil.exe older than this test was not its doing
    work = tmp_path / "work"
    work.mkdir()
    archives = hostile_archives(tmp_path)
    agent = Agent(work)
    exe = tmp_path / "good.exe"
    exe.write_bytes(tiny_pe(9))
    stage_ok(agent, exe, "1.0")
    before_staging = agent.staging()
    before_tree = tree(tmp_path)
    for name, (path, why) in archives.items():
        r = agent.run("stage", str(path), "--version", "2.0")
        assert r.returncode == 4, (name, r.stderr)
        one_line_error(r, why)
        assert agent.staging() == before_staging, name
    # Nothing was written outside the state directory, nor left inside it.
    after = [p for p in tree(tmp_path) if not p.startswith("work/state/status.json") and
             not p.startswith("work/state/state.json")]
    assert after == [p for p in before_tree if not p.startswith("work/state/status.json") and
                     not p.startswith("work/state/state.json")]
    assert not Path("/tmp/evil.exe").exists() or Path("/tmp/evil.exe").stat().st_mtime < start - 60
    assert agent.current() == "1.0"


def test_crash_leftovers_cleaned(tmp_path):
    agent = Agent(tmp_path)
    leftover = agent.state / "staging" / ".tmp-0123456789abcdef"
    (leftover / "extracted").mkdir(parents=True)
    (leftover / ".received").write_bytes(b"half a file")
    exe = tmp_path / "app.exe"
    exe.write_bytes(tiny_pe())
    stage_ok(agent, exe, "1.0")
    assert agent.staging() == ["1.0", "current"]


# ---- downgrade, prune ------------------------------------------------------------------


def test_downgrade_refused_then_allowed(tmp_path):
    agent = Agent(tmp_path, installed_version="26.01.03.24329")
    exe = tmp_path / "app.exe"
    exe.write_bytes(tiny_pe())
    r = agent.run("stage", str(exe), "--version", "26.01.02")
    assert r.returncode == 4
    one_line_error(r, "--allow-downgrade")
    assert agent.current() is None
    stage_ok(agent, exe, "26.01.02", "--allow-downgrade")
    assert agent.current() == "26.01.02"
    # The same release with a build suffix is not a downgrade.
    stage_ok(agent, exe, "26.01.03.24329-0de7ab+")


def test_prune_keeps_current_and_previous(tmp_path):
    agent = Agent(tmp_path, keep_versions=1)
    for i, v in enumerate(["1.0", "2.0", "3.0"]):
        exe = tmp_path / f"app{i}.exe"
        exe.write_bytes(tiny_pe(i))
        stage_ok(agent, exe, v)
    assert agent.staging() == ["2.0", "3.0", "current"]


# ---- deploy -------------------------------------------------------------------------------


def deploy_agent(tmp_path, script, **kw):
    verfile = tmp_path / "installed-version"
    verfile.write_text("1.0\n")
    agent = Agent(tmp_path, installed_version_file=str(verfile),
                  command=["/bin/sh", "-c", script, "sh", "{installer}", str(verfile)], **kw)
    exe = tmp_path / "Sensor Setup.exe"
    exe.write_bytes(tiny_pe())
    stage_ok(agent, exe, "2.0.1", "--allow-downgrade")
    return agent


def test_deploy_dry_run_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    agent = deploy_agent(tmp_path, f"touch '{marker}'")
    r = agent.run("deploy", "--dry-run")
    assert r.returncode == 0, r.stderr
    staged = agent.status()["installer"]["staged"]["path"]
    # Quoted as CommandLineToArgvW reads it: the script holds spaces and quotes.
    line = r.stdout.split(": ", 1)[1].rstrip("\n")
    assert line.startswith(f"/bin/sh -c \"touch '{marker}'\" sh ")
    assert line.endswith(f"\"{staged}\" {agent.root / 'installed-version'}" if " " in staged
                         else f"{staged} {agent.root / 'installed-version'}")
    assert staged == str(agent.state / "staging" / "2.0.1" / "installer.exe")  # outpost's name, not "Sensor Setup.exe"
    assert not marker.exists()


def test_deploy_success_verified(tmp_path):
    agent = deploy_agent(tmp_path, 'test -f "$1" && echo 2.0.1 > "$2"')
    r = agent.run("deploy")
    assert r.returncode == 0, r.stderr
    assert "deployed 2.0.1" in r.stdout
    deployed = agent.status()["installer"]["deployed"]
    assert deployed["version"] == "2.0.1" and deployed["exit_code"] == 0
    assert deployed["reboot_required"] is False and deployed["verified"] == "yes"
    assert agent.status()["installer"]["installed_version"] == "2.0.1"


def test_deploy_failure_keeps_staging(tmp_path):
    agent = deploy_agent(tmp_path, "exit 3")
    before = agent.staging()
    r = agent.run("deploy")
    assert r.returncode == 1
    one_line_error(r, "exited with code 3")
    st = agent.status()
    assert st["installer"]["deployed"] is None
    assert st["installer"]["deploy_failure"]["exit_code"] == 3
    assert "last_run" not in st  # the scheduled run's verdict, never a manual command's
    assert st["installer"]["last_command"]["command"] == "deploy"
    assert st["installer"]["last_command"]["exit_code"] == 1
    assert agent.staging() == before and agent.current() == "2.0.1"


def test_deploy_exit_zero_but_version_unchanged(tmp_path):
    agent = deploy_agent(tmp_path, "exit 0")
    r = agent.run("deploy")
    assert r.returncode == 1
    one_line_error(r, "still 1.0")


def test_deploy_timeout(tmp_path):
    agent = deploy_agent(tmp_path, "sleep 60", timeout_s=1)
    # A run that waited for the installer's sleep 60 would exceed this
    # timeout (the hang guard); how soon it returned is not asserted.
    r = agent.run("deploy", timeout=30)
    assert r.returncode == 1
    one_line_error(r, "did not finish within deploy.timeout_s (1 s)")
    assert agent.status()["installer"]["deploy_failure"]["timed_out"] is True


def test_deploy_nothing_staged(tmp_path):
    agent = Agent(tmp_path)
    r = agent.run("deploy")
    assert r.returncode == 1
    one_line_error(r, "nothing is staged; run outpost update first")


# ---- rollback -----------------------------------------------------------------------------


def test_rollback(tmp_path):
    agent = Agent(tmp_path)
    r = agent.run("rollback")
    assert r.returncode == 1
    for i, v in enumerate(["1.0", "2.0"]):
        exe = tmp_path / f"app{i}.exe"
        exe.write_bytes(tiny_pe(i))
        stage_ok(agent, exe, v)
    r = agent.run("rollback")
    assert r.returncode == 0, r.stderr
    assert agent.current() == "1.0"
    assert agent.status()["installer"]["staged"]["version"] == "1.0"
    r = agent.run("rollback")
    assert r.returncode == 1
    one_line_error(r, "no earlier staged version")
    assert agent.current() == "1.0"


# ---- bundle -------------------------------------------------------------------------------


def test_bundle_reproducible_and_restaged(tmp_path):
    agent = Agent(tmp_path)
    exe = tmp_path / "SensorSetup.exe"
    exe.write_bytes(tiny_pe(5) * 64)
    stage_ok(agent, exe, "3.4.5-rc2")
    out = tmp_path / "out"
    out.mkdir()
    for fmt in ("zip", "tar.gz"):
        a, b = out / f"a.{fmt}", out / f"b.{fmt}"
        r = agent.run("bundle", "--format", fmt, "-o", str(a), umask=0o022)
        assert r.returncode == 0, r.stderr
        for p in (agent.state / "staging" / "3.4.5-rc2").iterdir():
            os.utime(p, (1_000_000_000, 1_000_000_000))
        time.sleep(1.1)
        r = agent.run("bundle", "--format", fmt, "-o", str(b), umask=0o077)
        assert r.returncode == 0, r.stderr
        assert a.read_bytes() == b.read_bytes(), fmt
    with zipfile.ZipFile(out / "a.zip") as zf:
        assert sorted(zf.namelist()) == ["SensorSetup.exe", "manifest.json"]
    r = agent.run("bundle", cwd=out)
    assert r.returncode == 0, r.stderr
    default = out / "outpost-3.4.5-rc2.zip"
    assert default.read_bytes() == (out / "a.zip").read_bytes()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]

    (tmp_path / "fresh").mkdir()
    fresh = Agent(tmp_path / "fresh")
    r = fresh.run("stage", str(default))
    assert r.returncode == 0, r.stderr
    assert fresh.current() == "3.4.5-rc2"
    assert fresh.manifest("3.4.5-rc2")["sha256"] == agent.manifest("3.4.5-rc2")["sha256"]
    r = fresh.run("stage", str(out / "a.tar.gz"), "--version", "9.9")
    assert r.returncode == 4
    one_line_error(r, "contradicts")


def test_bundle_nothing_staged(tmp_path):
    agent = Agent(tmp_path)
    r = agent.run("bundle", "-o", str(tmp_path / "x.zip"))
    assert r.returncode == 1
    assert not (tmp_path / "x.zip").exists()


# ---- privileges: state_dir and its folders (PRODUCT.md section 9) --------------------------------


def test_new_state_dir_is_owner_only_whatever_the_umask(tmp_path):
    agent = Agent(tmp_path)
    exe = tmp_path / "a.exe"
    exe.write_bytes(tiny_pe())
    r = agent.run("stage", str(exe), "--version", "1.0", umask=0)
    assert r.returncode == 0, r.stderr
    assert stat_mode(agent.state) == 0o700


def stat_mode(path):
    return os.stat(path).st_mode & 0o7777


@pytest.mark.parametrize("where", ["", "staging", "downloads", "staging/1.0"])
def test_state_dir_or_folder_others_may_write_is_refused(tmp_path, where):
    agent = Agent(tmp_path)
    exe = tmp_path / "a.exe"
    exe.write_bytes(tiny_pe())
    stage_ok(agent, exe, "1.0")
    target = agent.state / where if where else agent.state
    target.mkdir(exist_ok=True)
    os.chmod(target, 0o777)
    before = tree(agent.state)
    # staging/<version>/ is checked where it is staged or run from; the rest
    # when any command that writes under state_dir starts.
    commands = [["stage", str(exe), "--version", "1.0"], ["deploy"]] + ([] if "/" in where else [["rollback"]])
    for command in commands:
        r = agent.run(*command)
        assert r.returncode == 1, (command, r.stderr)
        one_line_error(r, f"{target} is writable by group and others (mode 0777)")
        assert f"chmod go-w {target}" in r.stderr
    assert tree(agent.state) == before
    os.chmod(target, 0o755)  # fixed as the message says: readable by others is fine
    r = agent.run("deploy")
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_state_dir_owned_by_another_user_is_refused(tmp_path):
    agent = Agent(tmp_path)
    agent.state.mkdir(mode=0o700)
    os.chown(agent.state, 65534, 65534)
    r = agent.run("deploy")
    assert r.returncode == 1
    one_line_error(r, f"{agent.state} is owned by uid 65534")
    assert f"chown root:root {agent.state}" in r.stderr
    assert not (agent.state / "outpost.lock").exists()  # refused before anything is written in it
