"""Shared by the package tests: where scripts/package wrote the packages,
and the project's version (CMakeLists.txt), which names them.

A package that is not there skips its tests, unless
OUTPOST_PACKAGES_REQUIRED=1 (scripts/test sets it after building them),
which fails them instead: CI must not pass on a package it did not test."""

import os
import re
import shutil
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
PACKAGES = Path(os.environ.get("OUTPOST_PACKAGES_DIR") or TOP / "out" / "packages")
REQUIRED = os.environ.get("OUTPOST_PACKAGES_REQUIRED") == "1"


def project_version() -> str:
    text = (TOP / "CMakeLists.txt").read_text()
    m = re.search(r"^project\(outpost VERSION ([0-9.]+)", text, re.M)
    assert m, "no version in CMakeLists.txt"
    return m.group(1)


VERSION = project_version()


def package(name: str) -> Path:
    path = PACKAGES / name
    if not path.is_file():
        message = f"{path} is missing: scripts/package builds it"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    return path


def need_tool(*tools):
    for tool in tools:
        if not shutil.which(tool):
            message = f"{tool} is not installed (scripts/setup installs it)"
            if REQUIRED:
                pytest.fail(message)
            pytest.skip(message)
