"""One builder for the outpost.json files the integration tests write.

    from outpost_config import write_config, sim_config, UNSIGNED
    path, state = write_config(tmp_path, base_url=sim.url, ca_file=sim.ca_file,
                               installer={"installed_version": "1.0", "verify": UNSIGNED},
                               report={"page_size": 5})
    path, state = sim_config(tmp_path, sim, report={"metrics_file": "outpost.prom"})

Sections given as dicts are merged one level deep into the defaults passed
with `defaults` (so a test file keeps its own defaults and a test changes
one key of a section without restating the rest); any other value replaces.
`tls` is written only when a CA file is given (a plain-HTTP simulator has
none), `base_url` only when given (an endpoint on a mirror needs none).
sim_config() is write_config() for a run against the simulator. The
configurations of the fleet mirror (publisher, endpoint) are
mirror_helper's.
"""
from __future__ import annotations

import json
from pathlib import Path

# Verification for the unsigned fake installers (tests/sim write_fake_installer):
# no signature required and no CA (a configuration without a real CA sets
# trusted_ca_file null: a named file that is missing is a configuration error).
UNSIGNED = {"require_signature": False, "trusted_ca_file": None}


def merge(base: dict, changes: dict) -> dict:
    """base with changes applied: dict values merged one level deep."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def update_config(path: Path | str, **changes) -> None:
    """Rewrites the configuration file at path with changes merged in (as merge)."""
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(merge(config, changes), f)


def build_config(state: Path | str, base_url: str | None = None, ca_file: str | None = None,
                 defaults: dict | None = None, **sections) -> dict:
    """The configuration document (not written)."""
    doc = {"state_dir": str(state)}
    if base_url is not None:
        doc["base_url"] = base_url
    if ca_file:
        doc["tls"] = {"ca_file": ca_file}
    doc = merge(doc, defaults or {})
    return merge(doc, sections)


def write_config(directory: Path | str, base_url: str | None = None, ca_file: str | None = None, *,
                 state: Path | str | None = None, name: str = "outpost.json", defaults: dict | None = None,
                 **sections) -> tuple[Path, Path]:
    """Writes directory/name; returns (its path, the state directory:
    `state`, or directory/state)."""
    directory = Path(directory)
    state_dir = Path(state) if state is not None else directory / "state"
    doc = build_config(state_dir, base_url, ca_file, defaults, **sections)
    path = directory / name
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path, state_dir


def sim_config(directory: Path | str, sim, state_name: str = "state", name: str | None = None,
               **sections) -> tuple[Path, Path]:
    """A configuration for a run against the simulator `sim` (its URL and
    CA): state directory directory/state_name, written to directory/name
    (outpost-<state_name>.json unless given), no start jitter, the report's
    event details in batches of 50; sections merged in as write_config
    merges them. Returns (its path, the state directory)."""
    defaults = {"report": {"details_batch": 50}, "schedule": {"jitter": "0s"}}
    return write_config(directory, sim.url, sim.ca_file, state=Path(directory) / state_name,
                        name=name or f"outpost-{state_name}.json", defaults=defaults, **sections)
