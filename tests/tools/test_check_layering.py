"""scripts/check-layering: passes on the tree as it is, and fails, naming the
file, line and rule, on each kind of wrong include planted in a copy."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
SCRIPT = TOP / "scripts" / "check-layering"


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=60)


@pytest.fixture
def tree(tmp_path):
    for part in ("agent", "platform"):
        shutil.copytree(TOP / part, tmp_path / part)
    return tmp_path


def plant(path, line):
    text = path.read_text(encoding="utf-8")
    first = text.index("#include")
    path.write_text(text[:first] + line + "\n" + text[first:], encoding="utf-8")


def test_the_tree_as_committed_passes():
    r = run(TOP)
    assert r.returncode == 0, r.stderr
    assert "every include runs downwards" in r.stdout


def test_a_copy_passes_before_anything_is_planted(tree):
    assert run(tree).returncode == 0


@pytest.mark.parametrize("victim, line, expected", [
    ("agent/core/config.c", '#include "cli/cli.h"', 'core/ may not include "cli/cli.h"'),
    ("agent/core/config.c", '#include "crypto/sha256.h"', 'core/ may not include "crypto/sha256.h"'),
    ("agent/crypto/sha256.c", '#include "core/log.h"', 'crypto/ may not include "core/log.h"'),
    ("agent/crypto/gcmaccel.c", '#include "net/http.h"', 'crypto/ may not include "net/http.h"'),
    ("agent/net/http.c", '#include "installer/download.h"', 'net/ may not include "installer/download.h"'),
    ("agent/installer/staging.c", '#include "report/status.h"', 'installer/ may not include "report/status.h"'),
    ("agent/report/report.c", '#include "installer/staging.h"', 'report/ may not include "installer/staging.h"'),
    ("agent/authenticode/pe.c", '#include "net/http.h"', 'authenticode/ may not include "net/http.h"'),
    ("platform/posix/fs.c", '#include "core/log.h"', 'platform/ may not include "core/log.h"'),
    ("platform/win32/fs.c", '#include "crypto/sha256.h"', 'platform/ may not include "crypto/sha256.h"'),
    ("platform/win32/fs.c", '#include "platform/posix/posix_int.h"', 'is internal to platform/posix/'),
    ("platform/common.c", '#include "platform/win32/win32_int.h"', 'is internal to platform/win32/'),
    ("agent/core/log.c", '#include "platform/posix/posix_int.h"', 'is internal to platform/posix/'),
    ("platform/posix/fs.c", '#include "platform/linux/fs.h"', 'does not name its folder'),
    ("agent/base/text.c", '#include "platform/platform.h"', 'base/ may not include "platform/platform.h"'),
    ("agent/core/state.c", '#include "log.h"', 'does not name its folder'),
    ("agent/installer/deploy.c", '#include <unistd.h>', 'operating-system header'),
    ("agent/cli/main.c", '#include <windows.h>', 'operating-system header'),
    ("agent/net/api.c", '#include "net/nonexistent.h"', 'does not exist'),
    ("agent/installer/verify.c", '#include "authenticode/authenticode_int.h"', 'is internal to authenticode/'),
    ("agent/cli/main.c", '#include "authenticode/authenticode_int.h"', 'is internal to authenticode/'),
])
def test_a_planted_wrong_include_fails(tree, victim, line, expected):
    plant(tree / victim, line)
    r = run(tree)
    assert r.returncode == 1
    assert victim + ":" in r.stderr
    assert expected in r.stderr


def test_an_internal_header_is_included_inside_its_folder(tree):
    """authenticode_int.h is for authenticode/'s own files: olecf.c may include it."""
    plant(tree / "agent/authenticode/olecf.c", '#include "authenticode/authenticode_int.h"')
    assert run(tree).returncode == 0


def test_a_side_includes_its_own_internal_header(tree):
    """platform/posix/'s files share posix_int.h; a new file there may include it."""
    (tree / "platform" / "posix" / "extra.c").write_text('#include "platform/posix/posix_int.h"\n#include <unistd.h>\n')
    assert run(tree).returncode == 0


def test_a_platform_file_outside_its_sides_fails(tree):
    (tree / "platform" / "linux").mkdir()
    (tree / "platform" / "linux" / "fs.c").write_text('#include "platform/platform.h"\n')
    r = run(tree)
    assert r.returncode == 1
    assert "platform/linux/fs.c: not in one of the folders" in r.stderr


def test_a_module_outside_the_folders_fails(tree):
    (tree / "agent" / "loose.c").write_text('#include "base/error.h"\n')
    r = run(tree)
    assert r.returncode == 1
    assert "agent/loose.c: not in one of the folders" in r.stderr
