"""`report` against the simulator (issue 5): the test computes the expected
report independently from /_sim/dataset and compares it with what outpost
wrote — incidents.jsonl line by line, status.json item by item and host by
host — and checks the request count against the lower bound of PRODUCT.md
section 7, exactly-once appends across incremental runs and rotation. Runs
stopped at every crash point are test_crash_points.py. Every status.json
written is validated against tests/status.schema.json.
"""

import json
import math
import os

import pytest

from outpost_config import sim_config
from outpost_run import OUTPOST, jsonl_lines, outpost
from schema_check import check_status_file

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")


# ---- What outpost wrote ------------------------------------------------------------


def status(state_dir):
    return check_status_file(os.path.join(state_dir, "status.json"))


# ---- The expected report, computed from the data set ---------------------------------

def unspecified(value):
    return value is None or (isinstance(value, str) and value.lower().endswith("unspecified"))


def nested(obj, *names):
    for name in names:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(name)
    return obj


def expected_event(e):
    out = {"id": e["id"], "timestamp": e.get("timestamp"),
           "kind": None if unspecified(nested(e, "action", "kind")) else nested(e, "action", "kind"),
           "hostname": nested(e, "action", "hostname"),
           "sensor_kind": None if unspecified(nested(e, "action", "sensor_kind")) else nested(e, "action", "sensor_kind"),
           "user": nested(e, "user", "local_username"),
           "blocked": bool(nested(e, "action", "blocked") or False),
           "data_size": int(nested(e, "action", "data_size") or 0)}
    src = e.get("source")
    if isinstance(src, dict):
        out["source"] = {k: v for k, v in (("file", nested(src, "file", "name")),
                                            ("path", nested(src, "local_file", "path")),
                                            ("tags", nested(src, "content", "tags"))) if v is not None}
    dst = e.get("destination")
    if isinstance(dst, dict):
        out["destination"] = {k: v for k, v in (("file", nested(dst, "file", "name")),
                                                 ("path", nested(dst, "local_file", "path")),
                                                 ("domain", nested(dst, "web", "domain")),
                                                 ("url", nested(dst, "web", "url")),
                                                 ("email_to", nested(dst, "email", "to")),
                                                 ("email_subject", nested(dst, "email", "subject")))
                              if v is not None}
    return out


def expected_items(dataset):
    """{incident id: expected item} for every incident of the data set."""
    events = {e["id"]: e for e in dataset["events"]}
    missing_ids = set(dataset["missing_event_ids"])
    items = {}
    for record in dataset["incidents"]:
        inc, hidden = record["incident"], record["hidden"]
        lineage_ids = inc.get("event_lineage_id") if isinstance(inc.get("event_lineage_id"), dict) else {}
        start, end = lineage_ids.get("start_event_id") or None, lineage_ids.get("end_event_id") or None
        traced = bool(start and end)
        chain = hidden["chain"] if traced else []
        item = {"id": inc["id"], "trigger_time": inc.get("trigger_time"),
                "policy": nested(inc, "policy", "name"), "dataset": nested(inc, "dataset", "name"),
                "user": nested(inc, "user", "local_username"), "risk_score": inc.get("risk_score"),
                "ai_severity": None if unspecified(inc.get("ai_severity")) else inc["ai_severity"],
                "blocked": bool(inc.get("blocked") or False),
                "created_by": None if unspecified(inc.get("created_by")) else inc["created_by"],
                "lineage": {"status": "traced" if traced else "untraceable",
                            "start_event_id": start, "end_event_id": end,
                            "events": [expected_event(events[i]) for i in chain
                                       if i in events and i not in missing_ids],
                            "missing_event_ids": [i for i in chain if i not in events or i in missing_ids]}}
        items[inc["id"]] = item
    return items


def newest_first(items):
    return sorted(items, key=lambda i: (i["id"],))[::1] and sorted(
        sorted(items, key=lambda i: i["id"]), key=lambda i: i["trigger_time"] or "", reverse=True)


def expected_hosts(items):
    hosts = {}
    for item in items:
        for name in {e["hostname"] for e in item["lineage"]["events"] if e.get("hostname")}:
            h = hosts.setdefault(name, {"hostname": name, "incidents": 0, "last_incident_at": None,
                                        "max_risk_score": None})
            h["incidents"] += 1
            if item["trigger_time"] and (h["last_incident_at"] is None or item["trigger_time"] > h["last_incident_at"]):
                h["last_incident_at"] = item["trigger_time"]
            r = item["risk_score"]
            if r is not None and (h["max_risk_score"] is None or r > h["max_risk_score"]):
                h["max_risk_score"] = r
    return sorted(hosts.values(), key=lambda h: h["hostname"])


def assert_report_matches(state_dir, dataset, *, keep=200):
    expected = expected_items(dataset)
    lines = jsonl_lines(state_dir)
    written = [json.loads(line) for line in lines]
    ids = [w["id"] for w in written]
    assert len(ids) == len(set(ids)), "an incident was appended twice"
    assert set(ids) == set(expected), f"missing: {set(expected) - set(ids)}; unexpected: {set(ids) - set(expected)}"
    for item in written:
        assert item == expected[item["id"]], f"incident {item['id']} differs from the data set"
        stamps = [e["timestamp"] for e in item["lineage"]["events"]]
        assert stamps == sorted(stamps), f"incident {item['id']}: events not in chronological order"
    doc = status(state_dir)
    newest = newest_first(expected.values())[:keep]
    assert doc["incidents"]["items"] == newest
    assert sorted(doc["incidents"]["hosts"], key=lambda h: h["hostname"]) == expected_hosts(newest)
    counts = [h["incidents"] for h in doc["incidents"]["hosts"]]
    assert counts == sorted(counts, reverse=True), "hosts are not ordered by incident count"
    return expected, doc


# ---- Tests ------------------------------------------------------------------------------

@pytest.mark.sim_options(incidents=60, rate_limit=0, missing_fraction=0.1)
def test_first_report_matches_data_set(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim)
    result = outpost(config, "report")
    assert result.returncode == 0, result.stderr
    dataset = sim.dataset()
    expected, doc = assert_report_matches(state_dir, dataset)
    statuses = [i["lineage"]["status"] for i in expected.values()]
    inc = doc["incidents"]
    assert (inc["new"], inc["traced"], inc["untraceable"]) == (
        len(expected), statuses.count("traced"), statuses.count("untraceable"))
    assert statuses.count("untraceable") > 0
    assert any(i["lineage"]["missing_event_ids"] for i in expected.values()), "the data set has no missing events"
    assert doc["last_run"]["result"] == "ok" and doc["last_run"]["errors"] == []
    # api_calls is every request the server saw (token exchange included).
    assert inc["api_calls"] == sim.log()["summary"]["total"]


@pytest.mark.sim_options(incidents=45, rate_limit=0, type_variant=True, next_id_style="empty")
def test_real_world_tolerance_and_non_ascii_paths(sim, tmp_path):
    """Vendor envelope types, "" as the last next_id, severity_unspecified,
    unknown fields, several pages, a state directory with non-ASCII names."""
    directory = tmp_path / "données 状态"
    directory.mkdir()
    config, state_dir = sim_config(directory, sim, state_name="état", report={"page_size": 7})
    result = outpost(config, "report")
    assert result.returncode == 0, result.stderr
    dataset = sim.dataset()
    assert any(r["incident"].get("ai_severity") == "severity_unspecified" for r in dataset["incidents"])
    expected, _ = assert_report_matches(state_dir, dataset)
    assert any(i["ai_severity"] is None for i in expected.values())
    assert sim.log()["summary"]["by_route"].get("incidents") == math.ceil(45 / 7)


@pytest.mark.sim_options(incidents=25, rate_limit=0)
def test_incremental_runs_append_new_incidents_exactly_once(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim)
    assert outpost(config, "report").returncode == 0
    first = status(state_dir)["incidents"]
    added = sim.add_incidents(6)
    result = outpost(config, "report")
    assert result.returncode == 0, result.stderr
    second = status(state_dir)["incidents"]
    assert second["new"] == 6
    assert {i["id"] for i in second["items"]} >= set(added)
    result = outpost(config, "report")
    assert result.returncode == 0, result.stderr
    third = status(state_dir)["incidents"]
    assert third["new"] == 0 and third["traced"] == 0
    assert third["cursor"] >= second["cursor"] >= first["cursor"]
    assert_report_matches(state_dir, sim.dataset())


@pytest.mark.sim_options(incidents=40, rate_limit=0)
def test_rotation_loses_and_duplicates_nothing(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim, report={"jsonl_max_bytes": 16384, "jsonl_keep": 100})
    assert outpost(config, "report").returncode == 0
    sim.add_incidents(10)
    assert outpost(config, "report").returncode == 0
    rotated = [f for f in os.listdir(state_dir) if f.startswith("incidents.jsonl.")]
    assert len(rotated) >= 3, "the test did not make outpost rotate"
    for name in rotated + ["incidents.jsonl"]:
        size = os.path.getsize(os.path.join(state_dir, name))
        with open(os.path.join(state_dir, name), encoding="utf-8") as f:
            lines = f.read().splitlines()
        # A file goes past the limit only when it holds a single line longer than it.
        assert size <= 16384 or len(lines) == 1, f"{name} is {size} bytes"
    assert_report_matches(state_dir, sim.dataset())


@pytest.mark.sim_options(incidents=30, rate_limit=0)
def test_failed_lineage_is_retried_and_appended_once(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim)
    sim.fault("lineage", "status", status=400, count=1)
    result = outpost(config, "report")
    assert result.returncode == 1, result.stderr
    assert "could not be traced" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    doc = status(state_dir)
    failed = [i for i in doc["incidents"]["items"] if i["lineage"]["status"] == "failed"]
    assert len(failed) == 1 and doc["incidents"]["failed"] == 1
    assert failed[0]["id"] not in {json.loads(line)["id"] for line in jsonl_lines(state_dir)}
    assert doc["incidents"]["cursor"] <= failed[0]["trigger_time"], "the cursor moved past a failed incident"
    assert doc["last_run"]["result"] == "partial"
    result = outpost(config, "report")
    assert result.returncode == 0, result.stderr
    assert status(state_dir)["incidents"]["new"] == 1
    assert_report_matches(state_dir, sim.dataset())


@pytest.mark.sim_options(incidents=30, rate_limit=20, rate_window=5, missing_fraction=0.05)
def test_request_count_is_the_lower_bound_without_429(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim, report={"page_size": 10})
    result = outpost(config, "report")
    assert result.returncode == 0, result.stderr
    dataset = sim.dataset()
    expected = expected_items(dataset)
    traced = [i for i in expected.values() if i["lineage"]["status"] == "traced"]
    distinct = {e for r in dataset["incidents"] if r["incident"]["id"] in {t["id"] for t in traced}
                for e in r["hidden"]["chain"]}
    summary = sim.log()["summary"]
    by_route = summary["by_route"]
    assert summary["count_429"] == 0
    assert by_route.get("incidents") == math.ceil(len(expected) / 10)
    assert by_route.get("lineage") == len(traced)
    assert by_route.get("details") == math.ceil(len(distinct) / 50)
    assert by_route.get("token") == 1
    assert status(state_dir)["incidents"]["api_calls"] == summary["total"]


def _peak_rss_kib(config_path):
    """Runs `outpost report` under GNU time (a small parent, so the figure is
    outpost's own high-water mark, not one inherited from this process)."""
    rss_file = f"{config_path}.rss"
    result = outpost(config_path, "report", prefix=["/usr/bin/time", "-f", "%M", "-o", rss_file], timeout=600)
    assert result.returncode == 0, result.stderr
    with open(rss_file, encoding="utf-8") as f:
        return int(f.read().split()[-1])


@pytest.mark.sim_options(incidents=3000, span_hours=12, rate_limit=1_000_000, rate_window=60)
@pytest.mark.skipif("ASAN_OPTIONS" in os.environ,
                    reason="under AddressSanitizer the resident set is its quarantine of freed memory, not "
                           "outpost's; the normal build measures it")
def test_memory_stays_flat_as_the_backlog_grows(sim, tmp_path):
    """PRODUCT.md section 7: the report works a page at a time, so a backlog
    ten times larger (the same data set, a lookback ten times longer, thirty
    pages instead of three) peaks at about the same resident set. Holding
    every incident until the end costs about 3.5 KiB each: 10 MiB more here."""
    small, small_dir = sim_config(tmp_path, sim, state_name="small",
                                  report={"page_size": 100, "initial_lookback": "72m"})
    large, large_dir = sim_config(tmp_path, sim, state_name="large",
                                  report={"page_size": 100, "initial_lookback": "24h"})
    rss_small = _peak_rss_kib(small)
    rss_large = _peak_rss_kib(large)
    listed_small = status(small_dir)["incidents"]["new"]
    listed_large = status(large_dir)["incidents"]["new"]
    assert listed_large == 3000 and listed_small <= 400, (listed_small, listed_large)
    assert_report_matches(large_dir, sim.dataset())
    # The seen ids of 3,000 incidents and the like are not free: 2 MiB of slack.
    assert rss_large <= 1.2 * rss_small + 2048, f"peak RSS {rss_small} KiB for {listed_small} incidents, " \
                                               f"{rss_large} KiB for {listed_large}"
