#!/usr/bin/env python3
"""Derives, from the OCSF schema repository at one tag, the compact
description of one event class that tests/integration/ocsf_check.py
validates report.ocsf_file against (issue 36, PRODUCT.md section 5).

    tests/tools/ocsf_derive.py --schema /path/to/ocsf-schema [--tag v1.3.0] \
        [--class data_security_finding] -o tests/ocsf/data_security_finding-1.3.0.json

--schema is a checkout of github.com/ocsf/ocsf-schema, or a git directory
(then --tag names the tag to read with `git show`). The output is written
once and committed; the tests never need the schema repository.

It follows what the OCSF schema compiler (github.com/ocsf/ocsf-schema-compiler)
does to produce the class a validator sees:
- `$include` of a profile or an include file: the included attributes, each
  tagged with the profile's name ("profiles") and the file's annotations,
  with the item's own attribute details merged on top (the tag survives,
  so an attribute a profile brings in stays that profile's);
- `extends`: the item merged on top of a copy of its parent, recursively;
  two profile tags merge into their union;
- every attribute's details merged on top of the dictionary's, enumerations
  included (an enumeration is the union of both);
- the class's `class_uid`, `category_uid` and `type_uid` enumerations from
  its uid and category;
- the datetime profile's `<name>_dt` sibling of every timestamp attribute.
Objects reachable from the class's attributes are described the same way.

What a validator needs is kept; captions of attributes and every
description are not.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys

NOTICE = (
    "Derived from the Open Cybersecurity Schema Framework (https://github.com/ocsf/ocsf-schema), "
    "tag {tag}, by tests/tools/ocsf_derive.py. The OCSF schema is licensed under the Apache "
    "License, Version 2.0 (http://www.apache.org/licenses/LICENSE-2.0); see tests/ocsf/NOTICE. "
    "Distributed on an \"AS IS\" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND."
)
PRIMITIVES = {"string_t", "integer_t", "long_t", "float_t", "boolean_t", "json_t", "object_t"}


class Schema:
    """Reads files of the schema at one tag (git) or from a checkout."""

    def __init__(self, path: str, tag: str | None):
        self.path, self.tag = path, tag

    def read(self, name: str):
        if self.tag:
            out = subprocess.run(["git", "-C", self.path, "show", f"{self.tag}:{name}"],
                                 capture_output=True, check=True)
            return json.loads(out.stdout)
        with open(os.path.join(self.path, name), encoding="utf-8") as f:
            return json.load(f)

    def listing(self, folder: str) -> list[str]:
        if self.tag:
            out = subprocess.run(["git", "-C", self.path, "ls-tree", "-r", "--name-only", self.tag, folder],
                                 capture_output=True, check=True, text=True)
            return [n for n in out.stdout.splitlines() if n.endswith(".json")]
        names = []
        for root, _, files in os.walk(os.path.join(self.path, folder)):
            names += [os.path.relpath(os.path.join(root, f), self.path) for f in files if f.endswith(".json")]
        return sorted(names)


def deep_merge(dest: dict, source: dict) -> None:
    for key, value in source.items():
        if isinstance(value, dict) and isinstance(dest.get(key), dict):
            deep_merge(dest[key], value)
        else:
            dest[key] = copy.deepcopy(value)


def merge_attribute(dest: dict, source: dict) -> None:
    """The compiler's _merge_attribute_detail: source on top of dest."""
    for key, value in source.items():
        if key not in dest:
            dest[key] = copy.deepcopy(value)
        elif key == "profiles":
            dest["profiles"] = None if value is None else sorted(set(dest["profiles"] or []) | set(value))
        elif isinstance(dest[key], dict) and isinstance(value, dict):
            deep_merge(dest[key], value)
        else:
            dest[key] = copy.deepcopy(value)


def merge_attributes(dest: dict, source: dict) -> None:
    for name, attribute in source.items():
        if name in dest:
            merge_attribute(dest[name], attribute)
        else:
            dest[name] = copy.deepcopy(attribute)


def upgrade_profile(attributes: dict) -> None:
    """A few attributes name their profile directly ("profile": "cloud")."""
    for attribute in attributes.values():
        if isinstance(attribute, dict) and "profile" in attribute:
            profile = attribute.pop("profile")
            attribute["profiles"] = None if profile is None else [profile]


def resolve_includes(schema: Schema, item: dict) -> None:
    attributes = item.setdefault("attributes", {})
    upgrade_profile(attributes)
    includes = attributes.pop("$include", [])
    for name in [includes] if isinstance(includes, str) else includes:
        included = schema.read(name)
        merged = copy.deepcopy(included.get("attributes", {}))
        upgrade_profile(merged)
        for attribute in merged.values():
            if included.get("meta") == "profile":
                attribute["profiles"] = [included["name"]]
            for key, value in included.get("annotations", {}).items():
                attribute.setdefault(key, value)
        merge_attributes(merged, item["attributes"])
        item["attributes"] = merged
    for attribute in item["attributes"].values():
        if isinstance(attribute, dict) and "$include" in attribute:
            base = schema.read(attribute.pop("$include"))
            deep_merge(base, attribute)
            attribute.clear()
            attribute.update(base)


def flatten(items: dict, name: str) -> dict:
    """The item with its `extends` chain merged in (the compiler's _resolve_item_extends)."""
    item = items[name]
    parent = item.get("extends")
    if not parent:
        return copy.deepcopy(item)
    merged = flatten(items, parent)
    for key, value in item.items():
        if key == "attributes":
            merge_attributes(merged.setdefault("attributes", {}), value)
        elif key == "profiles":
            merged["profiles"] = sorted(set(merged.get("profiles") or []) | set(value or []))
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def enum_order(entry):
    key = entry[0]
    return (0, int(key), "") if key.lstrip("-").isdigit() else (1, 0, key)


def compact_attribute(name: str, attribute: dict, dictionary: dict, types: dict) -> dict:
    detail = copy.deepcopy(dictionary[name])
    deep_merge(detail, attribute)
    kind = detail.get("type", "string_t")
    out = {}
    if kind in PRIMITIVES or kind in types:
        out["type"] = kind
    else:
        out["type"], out["object"] = "object_t", kind
    if detail.get("is_array"):
        out["array"] = True
    out["requirement"] = detail.get("requirement") or "optional"
    if "enum" in detail:
        out["enum"] = {k: v.get("caption", "") for k, v in sorted(detail["enum"].items(), key=enum_order)}
        deprecated = sorted(k for k, v in detail["enum"].items() if "@deprecated" in v)
        if deprecated:
            out["deprecated_values"] = deprecated
    if "sibling" in detail:
        out["sibling"] = detail["sibling"]
    if detail.get("profiles"):
        out["profiles"] = detail["profiles"]
    if "@deprecated" in detail:
        out["deprecated"] = True
    return out


def with_datetime(attributes: dict) -> dict:
    """The datetime profile's `<name>_dt` beside every timestamp_t attribute."""
    extra = {}
    for name, attribute in attributes.items():
        if attribute["type"] == "timestamp_t":
            dt = dict(attribute, type="datetime_t", requirement="optional", profiles=["datetime"])
            dt.pop("enum", None)
            extra[name + "_dt"] = dt
    return {**attributes, **extra}


def derive(schema: Schema, class_name: str, tag: str) -> dict:
    version = schema.read("version.json")["version"]
    dictionary = schema.read("dictionary.json")
    types = {}
    for name, t in dictionary["types"]["attributes"].items():
        entry = {"base": t.get("type", name)}
        for key in ("regex", "max_len", "range", "values"):
            if key in t:
                entry[key] = t[key]
        types[name] = entry
    attributes = dictionary["attributes"]
    categories = schema.read("categories.json")["attributes"]
    profiles = sorted(schema.read(n)["name"] for n in schema.listing("profiles"))

    objects = {}
    for path in schema.listing("objects"):
        obj = schema.read(path)
        resolve_includes(schema, obj)
        objects[obj["name"]] = obj
    classes = {}
    for path in schema.listing("events"):
        cls = schema.read(path)
        resolve_includes(schema, cls)
        classes[cls["name"]] = cls

    cls = flatten(classes, class_name)
    category = categories[cls["category"]]
    class_uid = category["uid"] * 1000 + cls["uid"]
    out_attributes = {n: compact_attribute(n, a, attributes, types) for n, a in cls["attributes"].items()}
    out_attributes["class_uid"]["enum"] = {str(class_uid): cls["caption"]}
    out_attributes["category_uid"]["enum"] = {str(category["uid"]): category["caption"]}
    activities = out_attributes["activity_id"]["enum"]
    out_attributes["type_uid"]["enum"] = {
        str(class_uid * 100 + int(k)): f"{cls['caption']}: {v}" for k, v in activities.items()}
    out_attributes["type_uid"]["enum"].setdefault(str(class_uid * 100), f"{cls['caption']}: Unknown")

    reachable, todo = {}, [a["object"] for a in out_attributes.values() if "object" in a]
    while todo:
        name = todo.pop()
        if name in reachable:
            continue
        obj = flatten(objects, name)
        compact = {n: compact_attribute(n, a, attributes, types) for n, a in obj["attributes"].items()}
        reachable[name] = {"caption": obj.get("caption", name),
                           "attributes": with_datetime(compact),
                           "constraints": obj.get("constraints") or {}}
        if "@deprecated" in obj:
            reachable[name]["deprecated"] = True
        todo += [a["object"] for a in compact.values() if "object" in a]

    return {
        "_notice": NOTICE.format(tag=tag),
        "version": version,
        "class": {"name": class_name, "caption": cls["caption"], "uid": class_uid,
                  "category_uid": category["uid"], "category_name": category["caption"],
                  "attributes": with_datetime(out_attributes), "constraints": cls.get("constraints") or {}},
        "objects": dict(sorted(reachable.items())),
        "types": types,
        "profiles": profiles,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schema", required=True, help="ocsf-schema checkout or git directory")
    parser.add_argument("--tag", help="tag to read with git (a git directory)")
    parser.add_argument("--class", dest="class_name", default="data_security_finding")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    doc = derive(Schema(args.schema, args.tag), args.class_name, args.tag or "(checkout)")
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False, sort_keys=False)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
