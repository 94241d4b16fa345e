"""The one way for the integration tests to run outpost, and to judge what
it left under the state directory.

    from outpost_run import OUTPOST, outpost, outpost_start, error_lines, one_error, check_staging
    r = outpost(cfg, "--json", "update")                   # the API key "sim-api-key"
    r = outpost(cfg, "run", key=None, env_extra={"TZ": "UTC"})
    r.seconds                                               # how long the run took
    r = outpost(cfg, "update", crash_after=3, crash_log=log)  # the crash-point build, stopped at point 3
    p = outpost_start(cfg, "update")                        # in the background: a Popen to signal or kill
    r, trace = outpost_traced(cfg, "check", syscalls="read,recvfrom")  # under strace
    versions = check_staging(state)                         # every staged version verified

The binary is $OUTPOST_BIN (tests/CMakeLists.txt sets it), or `binary`
(the packaged one, say); with crash_after or crash_log it is
$OUTPOST_CRASH_BIN, the crash-point build (platform/crash_point.h). The
environment is the test process's without any OUTPOST_* variable and
without the proxy variables a developer's shell may hold, so a run sees
only what its test sets: the API key (key=None for none), env_extra on
top (a value of None removes that variable), or the whole of `env`.
Nothing here sleeps or measures on the test's behalf: `seconds` is there
to print, or to bound a run that must end (see tests/README.md).

check_staging() is PRODUCT.md section 3's promise about staging/: whatever
happened, every version directory holds exactly a verified installer and
its manifest, and `current` names one of them.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

OUTPOST = os.environ.get("OUTPOST_BIN")
CRASH_BIN = os.environ.get("OUTPOST_CRASH_BIN")
API_KEY = "sim-api-key"
# What libcurl (and so outpost's proxy "system" setting off Windows) reads.
PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                   "no_proxy", "NO_PROXY")


def clean_env(key: str | None = API_KEY, extra: dict | None = None) -> dict:
    """os.environ without OUTPOST_* and the proxy variables;
    OUTPOST_API_KEY=key unless key is None; then extra applied (a value of
    None removes that variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTPOST_") and k not in PROXY_VARIABLES}
    if key is not None:
        env["OUTPOST_API_KEY"] = key
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def as_user(uid: int, gid: int):
    """A preexec function: the child runs as uid with gid as its only group
    (a SIEM shipper, a compliance script: tests that need root)."""
    def drop():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    return drop


def _launch(cfg, args, *, key, env_extra, env, binary, crash_after, crash_log, umask, user, prefix):
    """(argv, environment, preexec function) of one run."""
    if crash_after is not None or crash_log is not None:
        binary = binary or CRASH_BIN
        env_extra = {**(env_extra or {}),
                     "OUTPOST_CRASH_AFTER": None if crash_after is None else str(crash_after),
                     "OUTPOST_CRASH_LOG": None if crash_log is None else str(crash_log)}
    argv = [*prefix, binary or OUTPOST] + (["-c", str(cfg)] if cfg is not None else []) + [str(a) for a in args]
    steps = ([lambda: os.umask(umask)] if umask is not None else []) + ([as_user(*user)] if user else [])
    pre = (lambda: [step() for step in steps]) if steps else None
    return argv, (env if env is not None else clean_env(key, env_extra)), pre


def outpost(cfg: Path | str | None, *args, key: str | None = API_KEY, env_extra: dict | None = None,
            env: dict | None = None, timeout: float = 120, cwd: Path | str | None = None,
            binary: str | None = None, umask: int | None = None, user: tuple[int, int] | None = None,
            input: str | None = None, prefix: list[str] | tuple = (), crash_after: int | None = None,
            crash_log: Path | str | None = None) -> subprocess.CompletedProcess:
    """Runs `outpost [-c cfg] args...` and returns what it did (text
    output), with `seconds`, the run's wall time, added. env, when given, is
    the whole environment (key and env_extra are then not applied); umask
    and user ((uid, gid)), when given, are the child's; input goes to its
    stdin; prefix runs it under another program (strace, /usr/bin/time)."""
    argv, environment, pre = _launch(cfg, args, key=key, env_extra=env_extra, env=env, binary=binary,
                                     crash_after=crash_after, crash_log=crash_log, umask=umask, user=user,
                                     prefix=prefix)
    started = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, preexec_fn=pre,
                       env=environment, input=input)
    r.seconds = time.monotonic() - started
    return r


def outpost_start(cfg: Path | str | None, *args, key: str | None = API_KEY, env_extra: dict | None = None,
                  env: dict | None = None, cwd: Path | str | None = None, binary: str | None = None,
                  text: bool = True, stdout=subprocess.PIPE, stderr=subprocess.PIPE) -> subprocess.Popen:
    """outpost() in the background, for a test that signals, kills or
    watches the run: the Popen (the caller waits for it). stdout and stderr
    are pipes unless given (DEVNULL, a terminal's descriptor)."""
    argv, environment, _ = _launch(cfg, args, key=key, env_extra=env_extra, env=env, binary=binary,
                                   crash_after=None, crash_log=None, umask=None, user=None, prefix=())
    return subprocess.Popen(argv, env=environment, cwd=cwd, stdout=stdout, stderr=stderr, text=text)


def outpost_traced(cfg: Path | str | None, *args, syscalls: str, trace: Path | str,
                   env_extra: dict | None = None, **kwargs) -> tuple[subprocess.CompletedProcess, list[str]]:
    """outpost() under `strace -f -qq -yy -e trace=syscalls` (descriptors
    shown with their paths and sockets): the result and the trace's lines.
    LeakSanitizer cannot run under ptrace, so the ASan build's is off."""
    prefix = ["strace", "-f", "-qq", "-yy", "-e", f"trace={syscalls}", "-o", str(trace)]
    r = outpost(cfg, *args, prefix=prefix, env_extra={**(env_extra or {}), "ASAN_OPTIONS": "detect_leaks=0"},
                **kwargs)
    path = Path(trace)
    return r, path.read_text(errors="replace").splitlines() if path.exists() else []


def error_lines(r: subprocess.CompletedProcess) -> list[str]:
    """The "outpost: ..." lines of stderr."""
    return [line for line in r.stderr.splitlines() if line.startswith("outpost:")]


def one_error(r: subprocess.CompletedProcess) -> str:
    """The one "outpost: ..." line of stderr (asserts there is exactly one)."""
    lines = error_lines(r)
    assert len(lines) == 1, r.stderr
    return lines[0]


def only_line(r: subprocess.CompletedProcess) -> str:
    """stderr, which must be one line and nothing else."""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


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


def staged_versions(state: Path) -> list[str]:
    """The version directories under staging/ (sorted; work areas left out)."""
    root = Path(state) / "staging"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def staged_manifest(state: Path, version: str) -> dict:
    """staging/<version>/manifest.json."""
    return json.loads((Path(state) / "staging" / version / "manifest.json").read_text())


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


def jsonl_lines(state: Path, name: str = "incidents.jsonl") -> list[str]:
    """Every line of state/name and its rotated files (name.1, name.2, ...),
    oldest first; asserts that each file ends with a whole line."""
    state = Path(state)
    rotated = sorted((int(p.name.rsplit(".", 1)[1]) for p in state.glob(name + ".*")
                      if p.name.rsplit(".", 1)[1].isdigit()), reverse=True)
    lines = []
    for path in [state / f"{name}.{n}" for n in rotated] + [state / name]:
        if path.exists():
            data = path.read_text(encoding="utf-8")
            assert data == "" or data.endswith("\n"), f"{path} ends in the middle of a line"
            lines += data.splitlines()
    return lines
