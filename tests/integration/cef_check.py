"""A strict parser for report.cef_file lines (issue 36): the ArcSight
Common Event Format as its specification writes it, refusing what a
lenient SIEM parser would guess at.

    header, ext = parse(line)   # header: the 7 fields after "CEF:", unescaped
                                # ext: {key: value}, unescaped

Header: "CEF:0|" then vendor|product|version|signature id|name|severity|,
where only `\\|` and `\\\\` are escapes and no line break occurs; severity an
integer 0-10. Extension: space-separated key=value pairs, keys of letters
and digits; in values only `\\\\`, `\\=`, `\\n` and `\\r` are escapes, an
unescaped `=` only ever ends a key, and no raw line break occurs.
"""
from __future__ import annotations

import re

KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


class CefError(ValueError):
    pass


def parse(line: str) -> tuple[list[str], dict[str, str]]:
    if "\n" in line or "\r" in line:
        raise CefError("a raw line break")
    if not line.startswith("CEF:"):
        raise CefError("does not start with CEF:")
    fields, current, i = [], [], 4
    while len(fields) < 7:
        if i >= len(line):
            raise CefError(f"the header ends after {len(fields)} fields")
        c = line[i]
        if c == "\\":
            if i + 1 >= len(line) or line[i + 1] not in "|\\":
                raise CefError(f"header: a backslash escapes {line[i + 1:i + 2]!r}, only | and \\ may be")
            current.append(line[i + 1])
            i += 2
            continue
        if c == "|":
            fields.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    version, header = fields[0], fields[1:]
    if version != "0":
        raise CefError(f"CEF version {version!r}")
    if not re.fullmatch(r"\d{1,2}", header[5]) or not 0 <= int(header[5]) <= 10:
        raise CefError(f"severity {header[5]!r} is not 0-10")
    return header, parse_extension(line[i:])


def parse_extension(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(text):
        m = KEY.match(text, i)
        if not m or m.end() >= len(text) or text[m.end()] != "=":
            raise CefError(f"extension: no key= at {text[i:i + 30]!r}")
        key = m.group()
        if key in out:
            raise CefError(f"extension: {key} twice")
        i = m.end() + 1
        value = []
        while i < len(text):
            c = text[i]
            if c == "\\":
                nxt = text[i + 1:i + 2]
                if nxt not in ("\\", "=", "n", "r"):
                    raise CefError(f"extension {key}: a backslash escapes {nxt!r}")
                value.append({"n": "\n", "r": "\r"}.get(nxt, nxt))
                i += 2
                continue
            if c == "=":
                raise CefError(f"extension {key}: an unescaped '=' in its value")
            if c == " ":
                m = KEY.match(text, i + 1)
                if m and m.end() < len(text) and text[m.end()] == "=":
                    i += 1
                    break
            value.append(c)
            i += 1
        out[key] = "".join(value)
    return out
