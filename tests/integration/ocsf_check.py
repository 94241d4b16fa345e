"""A validator for report.ocsf_file (issue 36, PRODUCT.md section 5): each
line one OCSF event of the class and version that
tests/ocsf/data_security_finding-<version>.json describes (derived from the
OCSF schema repository by tests/tools/ocsf_derive.py).

    from ocsf_check import validate, check_file
    problems = validate(event)          # [] when the event is valid
    findings = check_file(state_dir)    # every line of ocsf.jsonl and its
                                        # rotated files, asserted valid

What it checks, as the OCSF server's validator does (and stricter where a
consumer would stumble):
- class_uid, category_uid, type_uid (= class_uid * 100 + activity_id) and
  metadata.version;
- every required attribute present and not null, in the event and in each
  object, after the event's profiles are applied: an attribute that a
  profile brings in exists only when that profile is named in
  metadata.profiles (metadata.profiles must name known profiles);
- no attribute the class or object does not define (`unmapped` and
  attributes of the generic `object` type hold anything);
- types: strings, integers (integer_t within 32 bits, as Security Lake's
  Parquet schema stores them; long_t within 64), floats, booleans, arrays,
  objects; a type's regular expression, maximum length and range;
- enumerations: the value is one of the schema's, and a sibling (severity
  beside severity_id) is that value's caption (99 "Other" excepted); no
  deprecated attribute or value;
- object constraints (at_least_one, just_one).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from outpost_run import jsonl_lines

HERE = Path(__file__).resolve().parent
VERSION = "1.3.0"
SCHEMA_FILE = HERE.parent / "ocsf" / f"data_security_finding-{VERSION}.json"

INT32 = (-2**31, 2**31 - 1)
INT64 = (-2**63, 2**63 - 1)


def load_schema(path: Path = SCHEMA_FILE) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


SCHEMA = load_schema()


class Validator:
    def __init__(self, schema: dict, profiles: set[str]):
        self.schema = schema
        self.profiles = profiles
        self.problems: list[str] = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append(f"{path or '<event>'}: {message}")

    def applies(self, attribute: dict) -> bool:
        wanted = attribute.get("profiles")
        return not wanted or bool(self.profiles & set(wanted))

    def base_type(self, name: str) -> tuple[str, list[dict]]:
        """(primitive type, the chain of type definitions down to it)."""
        chain = []
        types = self.schema["types"]
        while name in types and types[name]["base"] != name:
            chain.append(types[name])
            name = types[name]["base"]
        if name in types:
            chain.append(types[name])
        return name, chain

    def check_scalar(self, path: str, kind: str, value) -> None:
        base, chain = self.base_type(kind)
        if base == "string_t":
            if not isinstance(value, str):
                return self.fail(path, f"expected a string ({kind}), got {json.dumps(value)[:80]}")
            for t in chain:
                if "max_len" in t and len(value.encode("utf-8")) > t["max_len"]:
                    self.fail(path, f"longer than {t['max_len']} bytes ({kind})")
                if "regex" in t and ("\n" in value or not re.search(t["regex"], value)):
                    self.fail(path, f"{value!r} is not a valid {kind}")
        elif base in ("integer_t", "long_t"):
            low, high = INT32 if base == "integer_t" else INT64
            if not isinstance(value, int) or isinstance(value, bool):
                return self.fail(path, f"expected an integer ({kind}), got {json.dumps(value)[:80]}")
            if not low <= value <= high:
                self.fail(path, f"{value} is outside the range of {base}")
            for t in chain:
                if "range" in t and not t["range"][0] <= value <= t["range"][1]:
                    self.fail(path, f"{value} is outside {t['range']} ({kind})")
        elif base == "float_t":
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                self.fail(path, f"expected a number ({kind}), got {json.dumps(value)[:80]}")
        elif base == "boolean_t":
            if not isinstance(value, bool):
                self.fail(path, f"expected a boolean, got {json.dumps(value)[:80]}")
        elif base == "json_t":
            pass
        else:
            self.fail(path, f"unknown type {kind} in the derived schema")

    def check_value(self, path: str, attribute: dict, value) -> None:
        if attribute.get("type") == "object_t":
            if not isinstance(value, dict):
                return self.fail(path, f"expected an object ({attribute['object']}), got {json.dumps(value)[:80]}")
            return self.check_object(path, attribute["object"], value)
        self.check_scalar(path, attribute["type"], value)
        if "enum" in attribute:
            key = str(value) if not isinstance(value, bool) else None
            if key not in attribute["enum"]:
                self.fail(path, f"{value!r} is not one of {sorted(attribute['enum'], key=len)}")
            elif key in attribute.get("deprecated_values", []):
                self.fail(path, f"{value!r} is deprecated")

    def check_attributes(self, path: str, definitions: dict, item: dict, constraints: dict) -> None:
        defined = {n: a for n, a in definitions.items() if self.applies(a)}
        for name, value in item.items():
            where = f"{path}.{name}" if path else name
            if name not in defined:
                profiles = definitions.get(name, {}).get("profiles")
                if profiles:
                    self.fail(where, f"belongs to the profile {'/'.join(profiles)}, which metadata.profiles "
                                     f"does not name")
                else:
                    self.fail(where, "is not an attribute of this class or object")
                continue
            attribute = defined[name]
            if attribute.get("deprecated"):
                self.fail(where, "is deprecated")
            if value is None:
                continue
            if attribute.get("array"):
                if not isinstance(value, list):
                    self.fail(where, f"expected an array, got {json.dumps(value)[:80]}")
                    continue
                for i, element in enumerate(value):
                    self.check_value(f"{where}[{i}]", attribute, element)
            else:
                self.check_value(where, attribute, value)
        for name, attribute in defined.items():
            if attribute["requirement"] == "required" and item.get(name) is None:
                self.fail(f"{path}.{name}" if path else name, "is required")
        for name, attribute in defined.items():
            sibling = attribute.get("sibling")
            if sibling and "enum" in attribute and sibling in item and item.get(name) is not None:
                caption = attribute["enum"].get(str(item[name]))
                if str(item[name]) != "99" and caption is not None and item[sibling] != caption:
                    self.fail(f"{path}.{sibling}" if path else sibling,
                              f"{item[sibling]!r} is not the caption of {name} {item[name]} ({caption!r})")
        for kind, names in constraints.items():
            present = [n for n in names if item.get(n) is not None]
            if kind == "at_least_one" and not present:
                self.fail(path, f"needs at least one of {names}")
            elif kind == "just_one" and len(present) != 1:
                self.fail(path, f"needs exactly one of {names}, has {present}")

    def check_object(self, path: str, name: str, value: dict) -> None:
        if name == "object":
            return  # the generic object (unmapped, xattributes): anything
        obj = self.schema["objects"][name]
        if obj.get("deprecated"):
            self.fail(path, f"object {name} is deprecated")
        self.check_attributes(path, obj["attributes"], value, obj["constraints"])


def validate(event, schema: dict = SCHEMA) -> list[str]:
    """The problems of one event (a parsed line); [] when it is valid."""
    if not isinstance(event, dict):
        return ["<event>: not a JSON object"]
    metadata = event.get("metadata") if isinstance(event.get("metadata"), dict) else {}
    profiles = metadata.get("profiles") or []
    v = Validator(schema, set(p for p in profiles if isinstance(p, str)))
    for p in profiles:
        if p not in schema["profiles"]:
            v.fail("metadata.profiles", f"{p!r} is not an OCSF {schema['version']} profile")
    cls = schema["class"]
    v.check_attributes("", cls["attributes"], event, cls["constraints"])
    if metadata.get("version") != schema["version"]:
        v.fail("metadata.version", f"{metadata.get('version')!r}, expected {schema['version']!r}")
    if isinstance(event.get("class_uid"), int) and isinstance(event.get("activity_id"), int):
        if event.get("type_uid") != event["class_uid"] * 100 + event["activity_id"]:
            v.fail("type_uid", f"{event.get('type_uid')} is not class_uid * 100 + activity_id")
    return v.problems


def check_line(line: str) -> dict:
    """One line of the OCSF file, parsed and asserted valid."""
    event = json.loads(line)
    problems = validate(event)
    assert not problems, "invalid OCSF:\n  " + "\n  ".join(problems) + f"\nline: {line[:2000]}"
    return event


def check_file(state_dir, name: str = "ocsf.jsonl") -> list[dict]:
    """Every finding of state_dir/name and its rotated files (oldest first),
    each asserted valid; no incident twice."""
    findings = [check_line(line) for line in jsonl_lines(Path(state_dir), name)]
    ids = [f["finding_info"]["uid"] for f in findings]
    assert len(ids) == len(set(ids)), "an incident was written twice to " + os.path.join(str(state_dir), name)
    return findings
