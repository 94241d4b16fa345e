"""The Debian packages scripts/package writes (issue 16): their fields and
contents, lintian, the systemd units (systemd-analyze verify, and what they
say), the maintainer scripts' calls (stubbed deb-systemd-helper,
deb-systemd-invoke and systemctl), and a whole install, removal and purge
into a scratch root with dpkg --root, whose packaged binary then runs
against the simulator."""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pkgutil import TOP, VERSION, need_tool, package

sys.path.insert(0, str(TOP / "tests" / "integration"))
from outpost_run import outpost  # noqa: E402

API_KEY = "sim-api-key"
HOST_ARCH = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
ARCHES = ["amd64", "arm64"]


def deb(arch):
    return package(f"outpost_{VERSION}_{arch}.deb")


def run(argv, **kwargs):
    kwargs.setdefault("timeout", 300)
    return subprocess.run(argv, capture_output=True, text=True, **kwargs)


def field(path, name):
    return run(["dpkg-deb", "--field", str(path), name]).stdout.strip()


def contents(path):
    """{path: (mode string, owner/group)} of the data archive."""
    r = run(["dpkg-deb", "--contents", str(path)])
    assert r.returncode == 0, r.stderr
    listing = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        name = parts[5].lstrip(".")
        listing[name.rstrip("/") or "/"] = (parts[0], parts[1])
    return listing


def extract(path, root):
    r = run(["dpkg-deb", "-x", str(path), str(root)])
    assert r.returncode == 0, r.stderr
    return root


def unit(root, name):
    """{section: {key: value}} of a unit file; a key given twice (as
    SystemCallFilter is) keeps its values joined by " | "."""
    sections, current = {}, None
    for line in (root / "lib/systemd/system" / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current[key] = f"{current[key]} | {value}" if key in current else value
    return sections


# ---- Fields and contents ------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHES)
def test_fields(arch):
    path = deb(arch)
    assert field(path, "Package") == "outpost"
    assert field(path, "Version") == VERSION
    assert field(path, "Architecture") == arch
    assert field(path, "Section") == "admin"
    assert field(path, "Priority") == "optional"
    assert "<" in field(path, "Maintainer") and "@" in field(path, "Maintainer")
    description = field(path, "Description").splitlines()
    assert description[0] and len(description) > 2
    depends = field(path, "Depends")
    # Computed from the binary: the release binaries need the C library only.
    assert "libc6 (>= 2." in depends, depends
    assert not field(path, "Pre-Depends")


@pytest.mark.parametrize("arch", ARCHES)
def test_contents(arch):
    listing = contents(deb(arch))
    assert listing["/usr/bin/outpost"] == ("-rwxr-xr-x", "root/root")
    assert listing["/etc/outpost/outpost.json"] == ("-rw-r-----", "root/root")
    for name in ("outpost.service", "outpost.timer"):
        assert listing[f"/lib/systemd/system/{name}"] == ("-rw-r--r--", "root/root")
    assert listing["/usr/share/doc/outpost/copyright"][1] == "root/root"
    assert "/usr/share/doc/outpost/changelog.gz" in listing
    # The README the messages and outpost(1) send readers to, and the role
    # configurations it gives, ready to copy.
    assert "/usr/share/doc/outpost/README.md.gz" in listing
    # The binary's SBOM (CycloneDX JSON, scripts/sbom).
    assert listing["/usr/share/doc/outpost/outpost.cdx.json"] == ("-rw-r--r--", "root/root")
    for role in ("endpoint", "collector", "standalone", "mirror-endpoint"):
        assert f"/usr/share/doc/outpost/examples/{role}.json" in listing, sorted(listing)
    assert "/usr/share/lintian/overrides/outpost" in listing
    # The state directory is the maintainer scripts' (0700), not shipped.
    assert not any(name.startswith("/var") for name in listing)
    assert all(owner == "root/root" for _, owner in listing.values())
    # Man pages, when the tree has their sources (man/NAME.SECTION.scd), are
    # gzipped in their section.
    pages = [n for n, (mode, _) in listing.items() if n.startswith("/usr/share/man/") and mode[0] == "-"]
    assert all(n.endswith(".gz") for n in pages), pages
    sources = [p.name[:-len(".scd")] for p in (TOP / "man").glob("*.scd")] if (TOP / "man").is_dir() else []
    for page in sources:
        section = page.rsplit(".", 1)[1]
        assert f"/usr/share/man/man{section}/{page}.gz" in listing, (page, pages)


@pytest.mark.parametrize("arch", ARCHES)
def test_control_files(arch, tmp_path):
    r = run(["dpkg-deb", "--control", str(deb(arch)), str(tmp_path / "control")])
    assert r.returncode == 0, r.stderr
    control = tmp_path / "control"
    assert (control / "conffiles").read_text().split() == ["/etc/outpost/outpost.json"]
    assert "usr/bin/outpost" in (control / "md5sums").read_text()
    for script in ("postinst", "prerm", "postrm"):
        assert stat.S_IMODE((control / script).stat().st_mode) == 0o755
        assert run(["sh", "-n", str(control / script)]).returncode == 0


def test_default_configuration_is_the_endpoint_role(tmp_path):
    root = extract(deb(HOST_ARCH), tmp_path / "root")
    doc = json.loads((root / "etc/outpost/outpost.json").read_text())
    assert doc["state_dir"] == "/var/lib/outpost"
    assert doc["api_key_file"] == "/etc/outpost/api_key"
    assert doc["installer"]["enabled"] is True
    assert doc["installer"]["verify"]["trusted_ca_file"] == "/etc/outpost/publisher-ca.pem"
    assert doc["report"]["enabled"] is False
    assert doc["deploy"]["enabled"] is False  # a Windows installer does not run on Linux


# ---- lintian ------------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHES)
def test_nothing_shipped_cites_a_document_not_shipped(arch, tmp_path):
    """postinst, the lintian overrides and the man pages send readers only to
    what the package holds (the README, the man pages), never to the
    source tree's packaging/README.md, PRODUCT.md or docs/."""
    root = tmp_path / "root"
    extract(deb(arch), root)
    control = tmp_path / "control"
    run(["dpkg-deb", "-e", str(deb(arch)), str(control)])
    texts = [p for p in control.iterdir() if p.is_file()] + [root / "usr/share/lintian/overrides/outpost"]
    for path in texts:
        text = path.read_text(errors="replace")
        for cited in ("packaging/README", "PRODUCT.md", "ARCHITECTURE.md"):
            assert cited not in text, (path.name, cited)


@pytest.mark.parametrize("arch", ARCHES)
def test_lintian_finds_no_error(arch):
    need_tool("lintian")
    r = run(["lintian", "--tag-display-limit", "0", "--fail-on", "error", str(deb(arch))], timeout=600)
    errors = [line for line in r.stdout.splitlines() if line.startswith("E:")]
    assert r.returncode == 0 and not errors, r.stdout + r.stderr


# ---- The systemd units --------------------------------------------------------------------

def test_units_verify(tmp_path):
    """systemd-analyze verify on the packaged units, in a root holding the
    package and this machine's own units (the targets they name). No
    systemd runs here: --root and --man=no make it a static check."""
    need_tool("systemd-analyze")
    root = extract(deb(HOST_ARCH), tmp_path / "root")
    units = root / "lib/systemd/system"
    for source in (Path("/lib/systemd/system"), Path("/usr/lib/systemd/system")):
        if source.is_dir():
            for item in source.iterdir():
                if item.is_file() and not (units / item.name).exists():
                    shutil.copy(item, units / item.name)
    r = run(["systemd-analyze", "verify", "--man=no", f"--root={root}",
             "lib/systemd/system/outpost.service", "lib/systemd/system/outpost.timer"], cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "" and r.stderr.strip() == "", r.stdout + r.stderr


def test_service_unit(tmp_path):
    root = extract(deb(HOST_ARCH), tmp_path / "root")
    service = unit(root, "outpost.service")["Service"]
    assert service["Type"] == "oneshot"
    assert service["ExecStart"] == "/usr/bin/outpost -c /etc/outpost/outpost.json run"
    assert service["SuccessExitStatus"] == "75"  # README "Exit codes": try again later
    sandbox = {
        "ProtectSystem": "strict", "ReadWritePaths": "/var/lib/outpost", "StateDirectory": "outpost",
        "StateDirectoryMode": "0700", "PrivateTmp": "yes", "NoNewPrivileges": "yes", "ProtectHome": "yes",
        "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "SystemCallArchitectures": "native",
        "CapabilityBoundingSet": "CAP_CHOWN",  # report.readers_group gives the feeds to a group
    }
    for key, value in sandbox.items():
        assert service[key] == value, key
    filters = service["SystemCallFilter"].split(" | ")
    assert filters[0] == "@system-service"
    # @privileged includes @chown: allowed again after it, or readers_group fails every run (EPERM).
    assert filters.index("@chown") > filters.index("~@privileged @resources")


def test_timer_unit(tmp_path):
    root = extract(deb(HOST_ARCH), tmp_path / "root")
    timer = unit(root, "outpost.timer")
    assert timer["Timer"]["OnCalendar"] == "hourly"
    assert timer["Timer"]["RandomizedDelaySec"] == "10min"
    assert timer["Timer"]["Persistent"] == "true"
    assert timer["Install"]["WantedBy"] == "timers.target"


# ---- The maintainer scripts, with systemd's helpers stubbed ------------------------------

STUB = """#!/bin/sh
echo "$(basename "$0") $*" >> "$STUB_LOG"
if [ "$(basename "$0")" = deb-systemd-helper ] && [ "$1" = --quiet ] && [ "$2" = was-enabled ]; then
  exit "${STUB_WAS_ENABLED:-0}"
fi
exit 0
"""


class Scripts:
    """The package's maintainer scripts with their absolute paths moved into
    tmp_path: /run/systemd/system (present: "systemd is running"),
    /var/lib/outpost, /usr/bin/deb-systemd-helper (a stub); the helpers on
    PATH log each call."""

    def __init__(self, tmp_path, systemd_running=True):
        control = tmp_path / "control"
        r = run(["dpkg-deb", "--control", str(deb(HOST_ARCH)), str(control)])
        assert r.returncode == 0, r.stderr
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for name in ("deb-systemd-helper", "deb-systemd-invoke", "systemctl"):
            (self.bin / name).write_text(STUB)
            (self.bin / name).chmod(0o755)
        self.run_systemd = tmp_path / "run-systemd-system"
        if systemd_running:
            self.run_systemd.mkdir()
        self.state = tmp_path / "var/lib/outpost"
        self.log = tmp_path / "calls.log"
        self.dir = tmp_path / "scripts"
        self.dir.mkdir()
        for name in ("postinst", "prerm", "postrm"):
            text = (control / name).read_text()
            text = text.replace("/run/systemd/system", str(self.run_systemd))
            text = text.replace("/var/lib/outpost", str(self.state))
            text = text.replace("/usr/bin/deb-systemd-helper", str(self.bin / "deb-systemd-helper"))
            (self.dir / name).write_text(text)
            (self.dir / name).chmod(0o755)

    def __call__(self, script, *args, was_enabled=True):
        if self.log.exists():
            self.log.unlink()
        env = {k: v for k, v in os.environ.items() if k != "DPKG_ROOT"}
        env.update(PATH=f"{self.bin}:{os.environ['PATH']}", STUB_LOG=str(self.log),
                   STUB_WAS_ENABLED="0" if was_enabled else "1")
        r = run([str(self.dir / script), *args], env=env)
        assert r.returncode == 0, r.stderr
        return self.log.read_text().splitlines() if self.log.exists() else []


def test_postinst_fresh_install_enables_and_starts_the_timer(tmp_path):
    scripts = Scripts(tmp_path)
    calls = scripts("postinst", "configure", "")
    assert calls == [
        "deb-systemd-helper unmask outpost.timer",
        "deb-systemd-helper --quiet was-enabled outpost.timer",
        "deb-systemd-helper enable outpost.timer",
        "systemctl --system daemon-reload",
        "deb-systemd-invoke start outpost.timer",
    ]
    # The state directory: created private to root.
    assert stat.S_IMODE(scripts.state.stat().st_mode) == 0o700


def test_postinst_upgrade_restarts_the_timer_and_keeps_a_disabled_one_disabled(tmp_path):
    scripts = Scripts(tmp_path)
    scripts.state.mkdir(parents=True, mode=0o700)
    (scripts.state / "status.json").write_text("{}")
    calls = scripts("postinst", "configure", "0.0.9", was_enabled=False)
    assert calls == [
        "deb-systemd-helper unmask outpost.timer",
        "deb-systemd-helper --quiet was-enabled outpost.timer",
        "deb-systemd-helper update-state outpost.timer",
        "systemctl --system daemon-reload",
        "deb-systemd-invoke restart outpost.timer",
    ]
    assert (scripts.state / "status.json").read_text() == "{}"
    # Never the service itself: a run in progress is not interrupted.
    assert not any("outpost.service" in call for call in calls)


def test_postinst_without_systemd_enables_only(tmp_path):
    calls = Scripts(tmp_path, systemd_running=False)("postinst", "configure", "")
    assert calls == [
        "deb-systemd-helper unmask outpost.timer",
        "deb-systemd-helper --quiet was-enabled outpost.timer",
        "deb-systemd-helper enable outpost.timer",
    ]


def test_prerm_stops_timer_and_run_on_remove_only(tmp_path):
    scripts = Scripts(tmp_path)
    assert scripts("prerm", "remove") == ["deb-systemd-invoke stop outpost.timer outpost.service"]
    assert scripts("prerm", "upgrade", VERSION) == []


def test_postrm_remove_masks_and_keeps_state(tmp_path):
    scripts = Scripts(tmp_path)
    scripts.state.mkdir(parents=True, mode=0o700)
    (scripts.state / "state.json").write_text("{}")
    assert scripts("postrm", "remove") == [
        "deb-systemd-helper mask outpost.timer",
        "systemctl --system daemon-reload",
    ]
    assert (scripts.state / "state.json").exists()
    assert scripts("postrm", "upgrade", VERSION) == []
    assert (scripts.state / "state.json").exists()


def test_postrm_purge_forgets_the_timer_and_deletes_state(tmp_path):
    scripts = Scripts(tmp_path)
    (scripts.state / "staging").mkdir(parents=True)
    assert scripts("postrm", "purge") == [
        "deb-systemd-helper purge outpost.timer",
        "deb-systemd-helper unmask outpost.timer",
    ]
    assert not scripts.state.exists()


# ---- Install, run, remove, purge in a scratch root ---------------------------------------

class ScratchRoot:
    """An empty dpkg database under root; dpkg --root runs the maintainer
    scripts outside a chroot with DPKG_ROOT set (so deb-systemd-helper
    enables the timer inside root, and nothing talks to a running systemd)."""

    def __init__(self, root):
        self.root = root
        for sub in ("info", "updates", "triggers"):
            (root / "var/lib/dpkg" / sub).mkdir(parents=True)
        (root / "var/lib/dpkg/status").touch()
        (root / "var/lib/dpkg/available").touch()

    def dpkg(self, *args):
        argv = ["dpkg", f"--root={self.root}", "--force-script-chrootless", "--force-depends",
                "--log=/dev/null", *args]
        if os.geteuid() != 0:
            argv.insert(1, "--force-not-root")
        r = run(argv)
        assert r.returncode == 0, r.stdout + r.stderr
        return r

    def status(self):
        r = run(["dpkg-query", f"--root={self.root}", "-W", "-f=${Status}", "outpost"])
        return r.stdout.strip()

    def path(self, name):
        return self.root / name.lstrip("/")


def packaged_outpost(root, *args, key=None):
    """The packaged binary of the build machine's architecture, run as the
    integration tests run outpost (tests/integration/outpost_run.py)."""
    return outpost(None, *args, key=key, binary=str(root / "usr/bin/outpost"))


def test_scratch_root_install_run_remove_purge(tmp_path, sim):
    need_tool("deb-systemd-helper")
    path = deb(HOST_ARCH)
    scratch = ScratchRoot(tmp_path / "root")
    scratch.dpkg("-i", str(path))
    assert scratch.status() == "install ok installed"
    state = scratch.path("/var/lib/outpost")
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    wants = scratch.path("/etc/systemd/system/timers.target.wants/outpost.timer")
    assert wants.is_symlink() and os.readlink(wants).endswith("/outpost.timer")

    r = packaged_outpost(scratch.root, "--version")
    assert r.returncode == 0 and r.stdout.strip() == f"outpost {VERSION}", r

    # The configuration as packaged: the first run asks for base_url, whose
    # placeholder is refused before any connection (and the key file, once
    # base_url is set), writing nothing.
    config = scratch.path("/etc/outpost/outpost.json")
    r = packaged_outpost(scratch.root, "-c", str(config), "--state-dir", str(state), "run")
    assert r.returncode == 2, r
    assert "`base_url` is still the placeholder https://tenant.example.com" in r.stderr
    assert sorted(os.listdir(state)) == []

    # Configured (pointed at the simulator, whose installer is unsigned): the
    # packaged binary runs the endpoint role and status says OK.
    doc = json.loads(config.read_text())
    doc["base_url"] = sim.url
    doc["state_dir"] = str(state)
    doc["installer"]["verify"] = {"require_signature": False, "trusted_ca_file": None}
    config.write_text(json.dumps(doc))
    r = packaged_outpost(scratch.root, "-c", str(config), "run", key=API_KEY)
    assert r.returncode == 0, r.stderr
    r = packaged_outpost(scratch.root, "-c", str(config), "status", "--json", key=API_KEY)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["installer"]["staged"]["version"] == sim.installer()["version"]

    # Reinstalling (an upgrade to the same version) keeps the edited conffile.
    scratch.dpkg("-i", str(path))
    assert json.loads(config.read_text())["base_url"] == sim.url

    # Remove: the program goes, the configuration and the state stay, the
    # timer is masked.
    scratch.dpkg("-r", "outpost")
    assert not scratch.path("/usr/bin/outpost").exists()
    assert not scratch.path("/lib/systemd/system/outpost.timer").exists()
    assert config.exists() and (state / "status.json").exists()
    assert scratch.status() == "deinstall ok config-files"

    # Purge: the configuration (an API key the administrator added too) and
    # the state go; nothing of outpost's is left.
    scratch.path("/etc/outpost/api_key").write_text("op-added-by-the-administrator\n")
    scratch.dpkg("-P", "outpost")
    assert not config.exists() and not state.exists()
    assert not scratch.path("/etc/outpost").exists()
    assert not scratch.path("/usr/share/doc/outpost").exists()
    assert not wants.exists() and not wants.is_symlink()
    assert scratch.status() == ""


def test_arm64_binary_runs_under_qemu(tmp_path):
    need_tool("qemu-aarch64")
    if not Path("/usr/aarch64-linux-gnu").is_dir():
        need_tool("aarch64-linux-gnu-gcc")
    root = extract(deb("arm64"), tmp_path / "root")
    r = run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", str(root / "usr/bin/outpost"), "--version"])
    assert r.returncode == 0 and r.stdout.strip() == f"outpost {VERSION}", r
