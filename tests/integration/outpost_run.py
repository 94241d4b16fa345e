"""One way for the integration tests to run outpost and to judge what it
left under the state directory.

    from outpost_run import OUTPOST, outpost, error_lines, check_staging, current_version
    r = outpost(cfg, "--json", "update")                   # the API key "sim-api-key"
    r = outpost(cfg, "run", key=None, env_extra={"TZ": "UTC"})
    versions = check_staging(state)                         # every staged version verified

outpost() runs the binary in $OUTPOST_BIN (or `binary`, e.g. the
crash-point build) with an environment cleared of every OUTPOST_* variable
the developer's shell may hold, so a test sees only what it sets.
check_staging() is PRODUCT.md section 3's promise about staging/: whatever
happened, every version directory holds exactly a verified installer and
its manifest, and `current` names one of them.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

OUTPOST = os.environ.get("OUTPOST_BIN")
CRASH_BIN = os.environ.get("OUTPOST_CRASH_BIN")
API_KEY = "sim-api-key"


def clean_env(key: str | None = API_KEY, extra: dict | None = None) -> dict:
    """os.environ without OUTPOST_*; OUTPOST_API_KEY=key unless key is None;
    then extra applied (a value of None removes that variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTPOST_")}
    if key is not None:
        env["OUTPOST_API_KEY"] = key
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def outpost(cfg: Path | str | None, *args: str, key: str | None = API_KEY, env_extra: dict | None = None,
            env: dict | None = None, timeout: float = 120, cwd: Path | str | None = None,
            binary: str | None = None, umask: int | None = None) -> subprocess.CompletedProcess:
    """Runs `outpost [-c cfg] args...` and returns what it did (text output).
    env, when given, is the whole environment (key and env_extra are then
    not applied); umask, when given, is the child's."""
    argv = [binary or OUTPOST] + (["-c", str(cfg)] if cfg is not None else []) + [str(a) for a in args]
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, preexec_fn=pre,
                          env=env if env is not None else clean_env(key, env_extra))


def error_lines(r: subprocess.CompletedProcess) -> list[str]:
    """The "outpost: ..." lines of stderr."""
    return [line for line in r.stderr.splitlines() if line.startswith("outpost:")]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def current_version(state: Path) -> str | None:
    """What staging/current names, None when it does not exist."""
    path = Path(state) / "staging" / "current"
    return path.read_text().strip() if path.exists() else None


def check_staging(state: Path, killed: bool = True) -> list[str]:
    """The staged versions (sorted), each checked against its manifest:
    its installer has the manifest's size and SHA-256 and nothing else
    beside it; `current` names one of them. Work areas (.tmp-*, .old-*) are
    the next run's to remove; so is a half-written replacement of `current`
    (current.<random>.tmp) after a killed run, and only then (killed=False:
    the run finished, so it must be gone)."""
    root = Path(state) / "staging"
    if not root.exists():
        return []
    versions = []
    for entry in sorted(root.iterdir()):
        if entry.name == "current" or entry.name.startswith("."):
            continue
        if entry.name.startswith("current.") and entry.name.endswith(".tmp"):
            assert killed, f"{entry.name} outlived the run"
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
        assert current_version(state) in versions, "staging/current names no verified version"
    return versions
