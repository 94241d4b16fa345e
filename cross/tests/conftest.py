"""pytest set-up for the cross-target integration tests (cross/tests/): the
simulator fixtures of tests/conftest.py, and helpers that run the target's
outpost binary through the emulator wrapper that scripts/cross puts in
OUTPOST_BIN (wine for Windows, qemu-aarch64 for arm64).

Environment: OUTPOST_BIN (required), OUTPOST_CROSS_EXE (the binary itself,
for what is read off the file), OUTPOST_CROSS_TARGET ("windows" or
"arm64"; decides how host paths are spelled for the program).
"""
import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[2] / "tests"
_spec = importlib.util.spec_from_file_location("outpost_tests_conftest", TESTS_DIR / "conftest.py")
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)

# Re-exported: pytest finds fixtures and hooks by name in this module.
pytest_configure = _shared.pytest_configure
sim = _shared.sim
sim_tls = _shared.sim_tls
sim_factory = _shared.sim_factory

TARGET = os.environ.get("OUTPOST_CROSS_TARGET", "native")
# One outpost run under wine takes about 0.3 s warm, several seconds while
# the wine server starts; qemu adds little.
RUN_TIMEOUT = 90


def target_path(path) -> str:
    """How the target program spells a host path: Z:\\... under wine (its
    mapping of the Unix root), unchanged elsewhere."""
    path = str(path)
    if TARGET == "windows":
        return "Z:" + path.replace("/", "\\")
    return path


class Outpost:
    """Runs the target binary; every run bounded in time."""

    def __init__(self, binary: str):
        self.binary = binary

    def run(self, *args, env=None, timeout=RUN_TIMEOUT):
        full_env = dict(os.environ)
        full_env.pop("OUTPOST_API_KEY", None)
        full_env.pop("OUTPOST_CONFIG", None)
        if env:
            full_env.update(env)
        return subprocess.run([self.binary, *map(str, args)], capture_output=True, text=True,
                              encoding="utf-8", errors="replace", env=full_env, timeout=timeout)


@pytest.fixture(scope="session")
def outpost():
    binary = os.environ.get("OUTPOST_BIN")
    if not binary:
        pytest.skip("OUTPOST_BIN is not set (scripts/cross sets it)")
    return Outpost(binary)
