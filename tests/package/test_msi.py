"""The Windows installer scripts/package writes (issue 16): its tables as
msiinfo reads them (files, directories, components, the custom actions that
run `outpost.exe service install|uninstall` and when), and an install, a
reinstall over an edited configuration and an uninstall under wine, in a
wine prefix of the test's own. Wine's Task Scheduler keeps a registered
task's settings but not its trigger, principal or command (README "What only
a real Windows machine can confirm"); the full definition is
tests/unit/test_schedtask.c's."""

import os
import subprocess
from pathlib import Path

import pytest

from pkgutil import VERSION, need_tool, package

MSI_NAME = f"outpost-{VERSION}-x64.msi"


def msi():
    return package(MSI_NAME)


def run(argv, **kwargs):
    kwargs.setdefault("timeout", 600)
    return subprocess.run(argv, capture_output=True, text=True, **kwargs)


def table(name):
    """Rows of an MSI table as dicts, from msiinfo export's IDT text."""
    need_tool("msiinfo")
    r = run(["msiinfo", "export", str(msi()), name])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    columns = lines[0].split("\t")
    return [dict(zip(columns, line.split("\t"))) for line in lines[3:]]


def by(rows, key):
    return {row[key]: row for row in rows}


# ---- The tables -----------------------------------------------------------------------------

def test_files_and_directories():
    files = by(table("File"), "File")
    assert files["outpost.exe"]["FileName"] == "outpost.exe"
    assert files["outpost.exe"]["Component_"] == "Program"
    # The .exe's SBOM beside it (CycloneDX JSON, scripts/sbom).
    assert files["outpost.exe.cdx.json"]["Component_"] == "Program"
    assert files["outpost.exe.cdx.json"]["FileName"].endswith("outpost.exe.cdx.json")
    assert files["outpost.json"]["Component_"] == "Config"
    directories = by(table("Directory"), "Directory")
    assert directories["INSTALLDIR"]["Directory_Parent"] == "ProgramFiles64Folder"
    assert directories["INSTALLDIR"]["DefaultDir"] == "outpost"
    assert directories["DATADIR"]["Directory_Parent"] == "CommonAppDataFolder"
    assert directories["DATADIR"]["DefaultDir"] == "outpost"
    components = by(table("Component"), "Component")
    assert components["Program"]["Directory_"] == "INSTALLDIR"
    assert components["Config"]["Directory_"] == "DATADIR"
    # 256 64-bit; the configuration also 16 Permanent + 128 NeverOverwrite:
    # an uninstall leaves it, an upgrade does not replace it.
    assert int(components["Program"]["Attributes"]) == 256
    assert int(components["Config"]["Attributes"]) == 256 | 16 | 128


def test_event_source_is_registered_with_the_message_table():
    # Root 2 is HKLM; "#" marks a REG_DWORD (wixl writes the key with a trailing backslash).
    values = {row["Name"]: row for row in table("Registry")}
    key = r"SYSTEM\CurrentControlSet\Services\EventLog\Application\outpost"
    for name in ("EventMessageFile", "TypesSupported"):
        assert values[name]["Key"].rstrip("\\") == key and values[name]["Root"] == "2", values[name]
        assert values[name]["Component_"] == "Program"
    assert values["EventMessageFile"]["Value"] == "[INSTALLDIR]outpost.exe"
    assert values["TypesSupported"]["Value"] == "#7"


def test_product():
    properties = by(table("Property"), "Property")
    assert properties["ProductVersion"]["Value"] == VERSION
    assert properties["ProductName"]["Value"] == "outpost"
    assert properties["UpgradeCode"]["Value"]


def test_custom_actions_run_the_service_command():
    actions = by(table("CustomAction"), "Action")
    # 18: an EXE installed by this package (Source names its File);
    # 1024 deferred, 2048 without impersonation (as SYSTEM); 64 ignores
    # the exit code (uninstall must not fail on a task already gone).
    assert actions["ServiceInstall"] == {"Action": "ServiceInstall", "Type": str(18 | 1024 | 2048),
                                         "Source": "outpost.exe", "Target": "service install",
                                         "ExtendedType": ""}
    assert actions["ServiceUninstall"]["Type"] == str(18 | 1024 | 2048 | 64)
    assert actions["ServiceUninstall"]["Target"] == "service uninstall"
    sequence = by(table("InstallExecuteSequence"), "Action")
    at = {name: int(row["Sequence"]) for name, row in sequence.items()}
    assert at["InstallInitialize"] < at["ServiceUninstall"] < at["RemoveFiles"]
    assert at["InstallFiles"] < at["ServiceInstall"] < at["InstallFinalize"]
    assert sequence["ServiceInstall"]["Condition"] == 'NOT REMOVE~="ALL"'
    # An upgrade removes the older product after installing the new one,
    # which has registered the task already: that removal keeps it.
    assert sequence["ServiceUninstall"]["Condition"] == 'REMOVE~="ALL" AND NOT UPGRADINGPRODUCTCODE'


# ---- Under wine ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wine(tmp_path_factory):
    need_tool("wine", "wineserver", "wineboot")
    prefix = tmp_path_factory.mktemp("wine")
    env = dict(os.environ, WINEPREFIX=str(prefix), WINEDEBUG="-all")
    r = run(["wineboot", "-i"], env=env, timeout=900)
    assert r.returncode == 0, r.stderr
    run(["wineserver", "-w"], env=env, timeout=900)
    yield prefix, env
    run(["wineserver", "-k"], env=env, timeout=120)


def drive_c(prefix):
    return Path(prefix) / "drive_c"


def stored_task(prefix):
    return drive_c(prefix) / "windows/system32/tasks/outpost/run"


def msiexec(env, *args):
    r = run(["wine", "msiexec", *args, "/qn"], env=env, timeout=900)
    run(["wineserver", "-w"], env=env, timeout=900)
    return r


def test_install_reinstall_uninstall_under_wine(wine):
    prefix, env = wine
    package_path = str(msi())
    exe = drive_c(prefix) / "Program Files/outpost/outpost.exe"
    data = drive_c(prefix) / "ProgramData/outpost"
    config = data / "outpost.json"

    r = msiexec(env, "/i", package_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert exe.is_file()
    assert config.is_file() and '"report": { "enabled": false }' in config.read_text()
    assert (data / "state").is_dir()  # service install made it
    assert "registered the scheduled task \\outpost\\run" in r.stdout
    # The event source, pointing at the installed exe (its message table).
    source = r"HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application\outpost"
    r = run(["wine", "reg", "query", source, "/v", "EventMessageFile"], env=env, timeout=300)
    run(["wineserver", "-w"], env=env, timeout=900)  # as after msiexec: the next wine start must not race its exit
    assert r.returncode == 0 and "outpost\\outpost.exe" in r.stdout, r.stdout + r.stderr

    # The task as wine stored it: the definition's settings survive.
    task = stored_task(prefix).read_text(encoding="utf-8-sig")
    for element in ("<URI>\\outpost\\run</URI>",
                    "<MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>",
                    "<StartWhenAvailable>true</StartWhenAvailable>",
                    "<DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>",
                    "<ExecutionTimeLimit>PT2H</ExecutionTimeLimit>"):
        assert element in task, task

    # The packaged program runs and reads the packaged configuration (the
    # default path): valid (an error in it would be exit 2), and no run
    # has written a status file yet.
    r = run(["wine", str(exe), "--version"], env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == f"outpost {VERSION}", r
    assert '"log": { "file": "outpost.log" }' in config.read_text()
    r = run(["wine", str(exe), "status"], env=env, timeout=300)
    # No run yet: 75 ("try again later", PRODUCT.md section 1), the verdict on stdout.
    assert r.returncode == 75 and "no status file yet" in r.stdout, r

    # An administrator's configuration survives a reinstall and the uninstall.
    config.write_text('{"base_url": "https://edited.example.com"}')
    (data / "state" / "status.json").write_text("{}")
    r = msiexec(env, "/i", package_path, "REINSTALL=ALL", "REINSTALLMODE=vomus")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "edited.example.com" in config.read_text()

    r = msiexec(env, "/x", package_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "removed the scheduled task \\outpost\\run" in r.stdout
    assert not exe.exists()
    assert not stored_task(prefix).exists()
    assert "edited.example.com" in config.read_text()
    assert (data / "state" / "status.json").read_text() == "{}"
