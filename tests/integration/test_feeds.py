"""The SIEM-native feeds (issue 36, PRODUCT.md section 5): report.ocsf_file
(OCSF Data Security Finding, every line validated by ocsf_check against the
schema derived from the OCSF repository at the pinned tag) and
report.cef_file (every line parsed by the strict cef_check), one line per
incident line of incidents.jsonl, the same incidents exactly once across
runs and rotation. Crashes at every point are test_crash_points.py.
"""

import copy
import json
from datetime import datetime, timezone

import pytest

import cef_check
import ocsf_check
from outpost_config import sim_config
from outpost_run import OUTPOST, jsonl_lines, outpost

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")

FEEDS = {"ocsf_file": "findings.ocsf.jsonl", "cef_file": "incidents.cef"}


def ms(iso):
    return int(datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp() * 1000)


def feeds(state_dir):
    """({id: item}, {id: finding}, {id: (header, extension)}), each file
    asserted to hold every incident exactly once."""
    items = [json.loads(line) for line in jsonl_lines(state_dir)]
    findings = ocsf_check.check_file(state_dir, FEEDS["ocsf_file"])
    cef = [cef_check.parse(line) for line in jsonl_lines(state_dir, FEEDS["cef_file"])]
    for name, ids in (("incidents.jsonl", [i["id"] for i in items]),
                      ("OCSF", [f["finding_info"]["uid"] for f in findings]),
                      ("CEF", [e["externalId"] for _, e in cef])):
        assert len(ids) == len(set(ids)), f"an incident twice in the {name} file"
    by_id = {i["id"]: i for i in items}
    ocsf = {f["finding_info"]["uid"]: f for f in findings}
    cefs = {e["externalId"]: (h, e) for h, e in cef}
    assert set(ocsf) == set(by_id) == set(cefs)
    return by_id, ocsf, cefs


def first(events, *path):
    for e in events:
        v = e
        for p in path:
            v = v.get(p) if isinstance(v, dict) else None
        if v:
            return v
    return None


def assert_maps(item, finding, cef):
    lineage = item["lineage"]
    events = lineage["events"]
    # OCSF
    assert finding["class_uid"] == 2006 and finding["metadata"]["version"] == ocsf_check.VERSION
    assert finding["time"] == ms(item["trigger_time"])
    assert finding["status_detail"] == lineage["status"]
    blocked = item["blocked"]
    assert (finding["action_id"], finding["disposition_id"]) == ((2, 2) if blocked else (1, 1))
    assert finding["data_security"]["policy"]["name"] == item["policy"]
    assert finding["data_security"]["detection_pattern"] == item["dataset"]
    user = item["user"] or first(events, "user")
    assert finding.get("actor", {}).get("user", {}).get("name") == user
    risk = item["risk_score"]
    if risk is not None:
        assert finding["risk_score"] == round(risk) or abs(finding["risk_score"] - risk) <= 0.5
        if risk != int(risk):
            assert finding["unmapped"]["risk_score"] == risk, "a fractional risk score was rounded away"
    assert finding["unmapped"]["lineage"] == lineage, "the lineage is not whole in unmapped"
    related = finding["finding_info"].get("related_events", [])
    assert [r["uid"] for r in related] == [e["id"] for e in events], "related events not in lineage order"
    if events:
        assert finding["start_time"] == ms(events[0]["timestamp"]) and finding["end_time"] == ms(events[-1]["timestamp"])
    # CEF
    header, ext = cef
    assert header[:4] == ["outpost", "outpost", header[2], "dlp-incident"]
    assert header[4] == f"DLP incident: {item['policy']}"
    assert ext["rt"] == str(ms(item["trigger_time"]))
    assert ext["act"] == ("blocked" if blocked else "detected")
    assert ext.get("suser") == user
    assert ext.get("shost") == first(events, "hostname")
    assert ext.get("fname") == first(events, "source", "file")
    labels = {ext[k + "Label"]: ext[k] for k in ("cs1", "cs2", "cs3", "cs4", "cs5", "cs6") if k in ext}
    assert labels["policy"] == item["policy"] and labels["dataset"] == item["dataset"]
    assert labels["lineageStatus"] == lineage["status"]
    if risk is not None:
        assert float(labels["riskScore"]) == risk
    if events:
        assert labels["eventIds"] == ",".join(e["id"] for e in events)


@pytest.mark.sim_options(incidents=45, rate_limit=0, type_variant=True, missing_fraction=0.05)
def test_every_incident_is_one_valid_finding_and_one_cef_line(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim, report={**FEEDS, "page_size": 7})
    result = outpost(config, "report")
    assert result.returncode == 0, result.stderr
    items, findings, cefs = feeds(state_dir)
    assert len(items) == 45
    statuses = {i["lineage"]["status"] for i in items.values()}
    assert {"traced", "untraceable"} <= statuses
    assert any(i["risk_score"] != int(i["risk_score"]) for i in items.values() if i["risk_score"] is not None)
    for incident_id, item in items.items():
        assert_maps(item, findings[incident_id], cefs[incident_id])


@pytest.mark.sim_options(incidents=40, rate_limit=0)
def test_exactly_once_across_runs_and_rotation(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim, report={**FEEDS, "jsonl_max_bytes": 16384, "jsonl_keep": 100})
    assert outpost(config, "report").returncode == 0
    sim.add_incidents(10)
    assert outpost(config, "report").returncode == 0
    assert outpost(config, "report").returncode == 0
    for name in FEEDS.values():
        assert any(p.name.startswith(name + ".") for p in state_dir.iterdir()), f"{name} was not rotated"
    items, _, _ = feeds(state_dir)
    assert len(items) == 50


def test_broken_findings_are_caught():
    """The validator is not a rubber stamp: each way a line can be wrong
    is named."""
    item = {"id": "i-1", "trigger_time": "2026-11-21T10:00:00Z", "policy": "P", "dataset": "D", "user": "u",
            "risk_score": 12.5, "ai_severity": "high", "blocked": True, "created_by": "policy",
            "lineage": {"status": "untraceable", "start_event_id": None, "end_event_id": None, "events": [],
                        "missing_event_ids": []}}
    good = {"class_uid": 2006, "category_uid": 2, "type_uid": 200601, "activity_id": 1, "severity_id": 4,
            "severity": "High", "time": 1, "action_id": 2, "action": "Denied",
            "metadata": {"version": ocsf_check.VERSION, "product": {"name": "outpost", "vendor_name": "outpost"},
                         "profiles": ["host", "security_control"]},
            "finding_info": {"uid": "i-1", "title": "t"}, "unmapped": {"item": item}}
    assert ocsf_check.validate(good) == []
    broken = {
        "class_uid": lambda f: f.update(class_uid=2004),
        "type_uid": lambda f: f.update(type_uid=200602),
        "is required": lambda f: f["finding_info"].pop("title"),
        "not an attribute": lambda f: f.update(incident_id="i-1"),
        "belongs to the profile": lambda f: f["metadata"]["profiles"].remove("security_control"),
        "expected an integer": lambda f: f.update(risk_score=12.5),
        "is not one of": lambda f: f.update(severity_id=7),
        "is not the caption": lambda f: f.update(severity="Low"),
        "metadata.version": lambda f: f["metadata"].update(version="1.1.0"),
        "needs at least one": lambda f: f["metadata"]["product"].pop("name"),
        "expected a string": lambda f: f["finding_info"].update(uid=1),
    }
    for expected, breaker in broken.items():
        finding = copy.deepcopy(good)
        breaker(finding)
        problems = ocsf_check.validate(finding)
        assert any(expected in p for p in problems), f"{expected!r} not caught: {problems}"


def test_strict_cef_parser_refuses_what_the_spec_does_not_allow():
    ok = r"CEF:0|a\|b|p|1|sig|name \\ x|5|externalId=x rt=1 cs1=a\=b c|d\nnext cs1Label=policy"
    header, ext = cef_check.parse(ok)
    assert header[0] == "a|b" and header[4] == "name \\ x"
    assert ext == {"externalId": "x", "rt": "1", "cs1": "a=b c|d\nnext", "cs1Label": "policy"}
    for bad in (r"CEF:0|a|p|1|sig|n|11|externalId=x", r"CEF:0|a|p|1|sig|n|5|externalId=x=y",
                r"CEF:0|a\=|p|1|sig|n|5|externalId=x", "CEF:0|a|p|1|sig|n|5|externalId=x\nrt=1",
                r"CEF:0|a|p|1|sig|n|5|externalId=x\t", r"CEF:0|a|p|1|sig|n|5"):
        with pytest.raises(cef_check.CefError):
            cef_check.parse(bad)


@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_wrong_feed_keys_exit_2_naming_the_key(sim, tmp_path):
    for key, value in (("ocsf_file", 5), ("cef_file", ["x"]), ("cef_file", "bad\u0007name")):
        config, _ = sim_config(tmp_path, sim, report={key: value})
        result = outpost(config, "report")
        assert result.returncode == 2 and f"report.{key}" in result.stderr, (key, result.stderr)


@pytest.mark.sim_options(incidents=12, rate_limit=0)
def test_a_failed_incident_given_up_is_a_finding_and_a_cef_line(sim, tmp_path):
    """An incident whose lineage keeps failing reaches the feeds once it has
    failed for 24 h (the state's first_failed_at set back to say so), with
    lineage status `failed`, as valid OCSF and strict CEF."""
    config, state_dir = sim_config(tmp_path, sim, report=FEEDS)
    sim.fault("lineage", "status", status=400, count=1)
    assert outpost(config, "report").returncode == 1
    state_file = state_dir / "state.json"
    state = json.loads(state_file.read_text())
    [failed_id] = state["report"]["failed"]
    state["report"]["failed"][failed_id]["first_failed_at"] = "2000-01-01T00:00:00Z"
    state_file.write_text(json.dumps(state))
    sim.fault("lineage", "status", status=400, count=1)
    assert outpost(config, "report").returncode == 1
    items, findings, cefs = feeds(state_dir)
    assert items[failed_id]["lineage"]["status"] == "failed"
    assert findings[failed_id]["status_detail"] == "failed"
    for incident_id, item in items.items():
        assert_maps(item, findings[incident_id], cefs[incident_id])
