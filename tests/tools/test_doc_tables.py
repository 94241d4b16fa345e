"""scripts/doc-tables: the tree as committed is in step (README tables, man
pages, the code, groff without a warning), and each kind of drift planted in
a copy is found, naming what differs; --fix rewrites the README's tables."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
SCRIPT = TOP / "scripts" / "doc-tables"
FILES = ("README.md", "man/outpost.1.scd", "man/outpost.json.5.scd", "agent/cli/cli.c", "agent/cli/commands.h",
         "agent/core/config.c", "agent/core/log.h", "agent/base/error.h", "cross/windows/outpost-events.mc")


def run(root, *args):
    return subprocess.run([sys.executable, str(SCRIPT), *args, str(root)], capture_output=True, text=True, timeout=60)


@pytest.fixture
def tree(tmp_path):
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(TOP / name, tmp_path / name)
    return tmp_path


def edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_tree_as_committed_is_in_step_and_renders_cleanly():
    r = run(TOP, "--render")
    assert r.returncode == 0, r.stderr


def test_a_copy_passes(tree):
    r = run(tree)
    assert r.returncode == 0, r.stderr


def test_readme_table_edited_by_hand_is_found_and_fixed(tree):
    edit(tree / "README.md", "| `rollback [--deploy]` | make the previously staged",
         "| `rollback [--deploy]` | make the formerly staged")
    r = run(tree)
    assert r.returncode == 1
    assert "table 'commands' differs" in r.stderr
    assert run(tree, "--fix").returncode == 0
    assert "| `rollback [--deploy]` | make the previously staged" in (tree / "README.md").read_text()


def test_a_new_key_in_the_code_must_be_documented(tree):
    edit(tree / "agent/core/config.c", '{"keep", FIELD_INT, AT(log.keep), 1, 100, NULL},',
         '{"keep", FIELD_INT, AT(log.keep), 1, 100, NULL},\n    {"syslog", FIELD_BOOL, AT(log.keep), 0, 0, NULL},')
    r = run(tree)
    assert r.returncode == 1
    assert "key log.syslog (agent/core/config.c) is not documented" in r.stderr


def test_a_documented_key_the_code_does_not_accept(tree):
    edit(tree / "agent/core/config.c", '    {"keep", FIELD_INT, AT(log.keep), 1, 100, NULL},\n', "")
    r = run(tree)
    assert "key log.keep is not one agent/core/config.c accepts" in r.stderr


@pytest.mark.parametrize("old,new,message", [
    ("*log.keep* (integer, 1 to 100; default 3)", "*log.keep* (integer, 1 to 10; default 3)",
     "log.keep is documented as (integer, 1 to 10), config.c says (integer, 1 to 100)"),
    ("*log.max_bytes* (integer, 4096 to 1073741824; default 1048576)",
     "*log.max_bytes* (integer, 4096 to 1073741824; default 65536)",
     "the default of log.max_bytes is 65536, config_init_defaults() gives 1048576"),
    ('*report.initial_lookback* (duration; default "24h")', '*report.initial_lookback* (duration; default "12h")',
     "the default of report.initial_lookback"),
    ('*mirror.channel* (string; default "stable")', '*mirror.channel* (string; default "beta")',
     "the default of mirror.channel"),
])
def test_a_wrong_type_range_or_default_is_found(tree, old, new, message):
    edit(tree / "man/outpost.json.5.scd", old, new)
    run(tree, "--fix")  # the README follows the man page; the code does not
    r = run(tree)
    assert r.returncode == 1
    assert message in r.stderr


def test_a_command_usage_changed_in_the_cli(tree):
    edit(tree / "agent/cli/cli.c", '"deploy [--dry-run]"', '"deploy [--dry-run] [--wait]"')
    r = run(tree)
    assert "no entry for `deploy [--dry-run] [--wait]`" in r.stderr
    assert "`deploy [--dry-run]` is not a usage line" in r.stderr


def test_an_undocumented_option(tree):
    edit(tree / "agent/cli/cli.c", '{"--rollout", 0, true, CLI_PUBLISH},',
         '{"--rollout", 0, true, CLI_PUBLISH},\n    {"--canary", 0, false, CLI_PUBLISH},')
    assert "option --canary (agent/cli/cli.c) is not described" in run(tree).stderr


def test_exit_codes_and_event_ids_follow_the_code(tree):
    edit(tree / "agent/base/error.h", 'X(LOCKED, 5,', 'X(LOCKED, 6,')
    edit(tree / "agent/core/log.h", "LOG_EVENT_RUN_LOCKED = 1003", "LOG_EVENT_RUN_LOCKED = 1004")
    r = run(tree)
    assert "exit code 6 (agent/base/error.h, cli/commands.h) is not documented" in r.stderr
    assert "exit code 5 is not one the code uses" in r.stderr
    assert "EVENT LOG: ids [1000, 1001, 1002, 1003] differ from agent/core/log.h's [1000, 1001, 1002, 1004]" in r.stderr
    assert "outpost-events.mc" in r.stderr


def test_the_readme_example_must_hold_every_key(tree):
    edit(tree / "README.md", '  "log": { "file": null, "max_bytes": 1048576, "keep": 3 }\n', "")
    edit(tree / "README.md", '"keep_installers": 3 },', '"keep_installers": 3 }')
    r = run(tree)
    assert "configuration example: key log.file is missing" in r.stderr
