"""docs/examples (issue 35): the SCCM hardware-inventory class
(Configuration.mof) and the Intune detection script read the values outpost
writes under HKLM\\SOFTWARE\\outpost, and nothing else. The values and their
types come from agent/report/inventory.c, so an example cannot drift from
the code. The MOF is parsed by a small parser of this file's own (no MOF
compiler here: mofcomp is Windows'); the script goes through PowerShell's
own parser where a `pwsh` exists (not on this Debian machine: then a check
of its own: brackets, strings and comments balanced, every value it reads
one outpost writes). What a real ConfigMgr or Intune agent makes of them,
only a real Windows machine shows.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


def inventory_values() -> dict[str, str]:
    """{value name: "string" | "uint32"} as agent/report/inventory.c writes them."""
    source = (ROOT / "agent" / "report" / "inventory.c").read_text()
    values = {}
    for literal in re.findall(r"\(platform_inventory_value\)\{(.*?)\}", source, re.S):
        named = re.search(r'\.name = "(\w+)"', literal)
        if not named:
            continue  # number_value's own literal
        values[named.group(1)] = "uint32" if ".is_number" in literal else "string"
    for name in re.findall(r'number_value\("(\w+)"', source):
        values[name] = "uint32"
    assert len(values) >= 17, values
    return values


# ---- MOF: a tokenizer and a parser for what Configuration.mof extensions use ----------------------

TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|(?P<string>"(?:[^"\\\n]|\\.)*")|(?P<pragma>#pragma)|'
                   r'(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>[{}\[\]();,=])|(?P<bad>.)', re.S)
ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n", "\\t": "\t"}


def tokens(text: str) -> list[tuple[str, str]]:
    out = []
    for m in TOKEN.finditer(text):
        kind = m.lastgroup
        if kind is None:
            continue
        assert kind != "bad", f"unexpected character {m.group()!r} at {m.start()}"
        value = m.group()
        if kind == "string":
            body = value[1:-1]
            for escape in re.findall(r"\\.", body):
                assert escape in ESCAPES, f"unknown escape {escape} in {value}"
            value = re.sub(r"\\.", lambda e: ESCAPES[e.group()], body)
        out.append((kind, value))
    return out


class Mof:
    def __init__(self, text: str):
        self.t = tokens(text)
        self.i = 0
        self.pragmas: list[tuple[str, list[str]]] = []
        self.classes: dict[str, dict] = {}
        self.instances: list[dict] = []
        while self.i < len(self.t):
            self.statement()

    def peek(self) -> tuple[str, str]:
        return self.t[self.i] if self.i < len(self.t) else ("eof", "")

    def take(self, kind: str, value: str | None = None) -> str:
        k, v = self.peek()
        assert k == kind and (value is None or v == value), f"expected {value or kind}, got {v!r} (token {self.i})"
        self.i += 1
        return v

    def qualifiers(self) -> list[tuple[str, list[str]]]:
        """[Name, Name("arg"), ...] before a class, instance or property."""
        found = []
        while self.peek() == ("punct", "["):
            self.take("punct", "[")
            while True:
                name = self.take("word")
                args = []
                if self.peek() == ("punct", "("):
                    self.take("punct", "(")
                    args.append(self.take("string"))
                    self.take("punct", ")")
                found.append((name, args))
                if self.peek() == ("punct", "]"):
                    break
                self.take("punct", ",")
            self.take("punct", "]")
        return found

    def statement(self) -> None:
        if self.peek()[0] == "pragma":
            self.take("pragma")
            name = self.take("word")
            self.take("punct", "(")
            args = [self.take("string")]
            while self.peek() == ("punct", ","):
                self.take("punct", ",")
                args.append(self.take("word"))
            self.take("punct", ")")
            self.pragmas.append((name, args))
            return
        quals = self.qualifiers()
        word = self.take("word")
        if word.lower() == "class":
            name = self.take("word")
            self.take("punct", "{")
            props = {}
            while self.peek() != ("punct", "}"):
                pq = self.qualifiers()
                ptype = self.take("word")
                pname = self.take("word")
                self.take("punct", ";")
                assert pname not in props, f"property {pname} declared twice"
                props[pname] = {"type": ptype, "qualifiers": [q for q, _ in pq]}
            self.take("punct", "}")
            self.take("punct", ";")
            self.classes[name] = {"qualifiers": quals, "properties": props}
        else:
            assert word.lower() == "instance", word
            self.take("word", "of")
            name = self.take("word")
            self.take("punct", "{")
            members = {}
            while self.peek() != ("punct", "}"):
                pq = self.qualifiers()
                pname = self.take("word")
                if self.peek() == ("punct", "="):
                    self.take("punct", "=")
                    members[pname] = {"value": self.take("string"), "qualifiers": pq}
                else:
                    members[pname] = {"value": None, "qualifiers": pq}
                self.take("punct", ";")
            self.take("punct", "}")
            self.take("punct", ";")
            self.instances.append({"class": name, "qualifiers": quals, "members": members})


def test_the_mof_parser_refuses_what_mofcomp_would():
    for broken in ('class A { string B; };\ninstance of A { B = "x; };',  # an unterminated string
                   "class A { string B };",                              # a missing semicolon
                   '#pragma namespace ("\\q")',                            # an unknown escape
                   "class A { string B; string B; };"):
        with pytest.raises(AssertionError):
            Mof(broken)


def test_configuration_mof_reads_every_inventory_value_with_its_type():
    mof = Mof((EXAMPLES / "Configuration.mof").read_text(encoding="utf-8"))
    values = inventory_values()
    assert ("namespace", ["\\\\.\\root\\cimv2"]) in mof.pragmas
    assert ("deleteclass", ["Outpost", "NOFAIL"]) in mof.pragmas
    cls = mof.classes["Outpost"]
    assert ("DYNPROPS", []) in cls["qualifiers"]
    props = cls["properties"]
    assert props.pop("KeyName") == {"type": "string", "qualifiers": ["key"]}
    assert {name: p["type"] for name, p in props.items()} == values
    [instance] = mof.instances
    assert instance["class"] == "Outpost" and ("DYNPROPS", []) in instance["qualifiers"]
    members = instance["members"]
    assert members.pop("KeyName")["value"] == "outpost"
    assert set(members) == set(values)
    for name, member in members.items():
        quals = dict((q, a) for q, a in member["qualifiers"])
        assert member["value"] is None and "Dynamic" in quals
        assert quals["Provider"] == ["RegPropProv"]
        assert quals["PropertyContext"] == [f"Local|HKEY_LOCAL_MACHINE\\SOFTWARE\\outpost|{name}"], name


# ---- The Intune detection script ---------------------------------------------------------------------


def powershell_shape(text: str) -> list[str]:
    """What the script reads with Get-Value, after checking that its
    brackets, strings and comments are balanced (PowerShell's rules:
    backtick escapes in double quotes, '' in single quotes, <# #> blocks)."""
    stack, i, read = [], 0, []
    pairs = {")": "(", "}": "{", "]": "["}
    while i < len(text):
        c = text[i]
        if text.startswith("<#", i):
            end = text.find("#>", i + 2)
            assert end > 0, "unterminated <# block comment"
            i = end + 2
        elif c == "#":
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
        elif c in "\"'":
            j = i + 1
            while True:
                assert j < len(text), f"unterminated string at {i}"
                if c == '"' and text[j] == "`":
                    j += 2
                    continue
                if text[j] == c:
                    if j + 1 < len(text) and text[j + 1] == c:  # '' or "" inside
                        j += 2
                        continue
                    break
                j += 1
            i = j + 1
        else:
            if c in "({[":
                stack.append(c)
            elif c in ")}]":
                assert stack and stack[-1] == pairs[c], f"unbalanced {c} at {i}"
                stack.pop()
            i += 1
    assert not stack, f"unclosed {stack}"
    read += re.findall(r'Get-Value\s+"(\w+)"', text) + re.findall(r"Get-Value\s+'(\w+)'", text)
    return read


def test_the_shape_check_refuses_a_broken_script():
    for broken in ('if ($a) { Write-Output "x" ', 'Write-Output "x', "$a = (1 + 2]", "<# never closed"):
        with pytest.raises(AssertionError):
            powershell_shape(broken)


def test_intune_detection_script_reads_only_inventory_values():
    script = EXAMPLES / "intune-detect-outpost.ps1"
    text = script.read_text(encoding="utf-8")
    read = powershell_shape(text)
    values = inventory_values()
    assert set(read) <= set(values), set(read) - set(values)
    assert {"InstalledVersion", "DeployState", "TargetVersionPrefix"} <= set(read)
    assert "HKLM:\\SOFTWARE\\outpost" in text


def test_intune_detection_script_parses_in_powershell():
    script = EXAMPLES / "intune-detect-outpost.ps1"
    pwsh = shutil.which("pwsh") or shutil.which("powershell")
    if not pwsh:
        pytest.skip("no PowerShell on this machine: the script was checked by this test's own shape check only")
    parse = ("$e = $null; [void][System.Management.Automation.Language.Parser]::ParseFile("
             f"'{script}', [ref]$null, [ref]$e); if ($e.Count) {{ $e | ForEach-Object {{ $_.ToString() }}; exit 1 }}")
    r = subprocess.run([pwsh, "-NoProfile", "-NonInteractive", "-Command", parse], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
