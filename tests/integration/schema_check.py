"""A small JSON Schema validator for the subset tests/status.schema.json uses
(no PyPI jsonschema on Debian-only test machines): type (one or a list),
const, enum, properties, required, additionalProperties (false), items,
minimum, minLength, pattern, and local $ref to #/$defs/...

    from schema_check import check_status_file
    check_status_file(path)        # raises AssertionError naming the path
"""

import json
import os
import re

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "status.schema.json")

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}
_KNOWN = {"$schema", "$id", "$defs", "title", "description", "type", "const", "enum", "properties", "required",
          "additionalProperties", "items", "minimum", "minLength", "pattern", "$ref"}


def load_schema():
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        return json.load(f)


def validate(value, schema, root=None, where="$"):
    """Returns a list of error strings (empty when value is valid)."""
    root = root if root is not None else schema
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"schema keyword(s) this checker does not implement: {sorted(unknown)}")
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        return validate(value, root["$defs"][ref[len("#/$defs/"):]], root, where)
    errors = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            return [f"{where}: {value!r:.80} is not of type {types}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r:.80} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r:.80} is not one of {schema['enum']}")
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{where}: required member {name!r} missing")
        props = schema.get("properties", {})
        for name, member in value.items():
            if name in props:
                errors += validate(member, props[name], root, f"{where}.{name}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected member {name!r}")
    if isinstance(value, list) and "items" in schema:
        for i, element in enumerate(value):
            errors += validate(element, schema["items"], root, f"{where}[{i}]")
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        errors.append(f"{where}: {value} < {schema['minimum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: string shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: {value!r:.80} does not match {schema['pattern']}")
    return errors


def check_status_file(path):
    """Asserts that the status file at path is valid against the schema."""
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    errors = validate(document, load_schema())
    assert not errors, f"{path} does not match tests/status.schema.json:\n  " + "\n  ".join(errors[:20])
    return document
