"""Tests of the platform simulator itself (sim.py, simctl.py), with real
clients: http.client, raw sockets, and ssl with the generated CA.

Read-only tests share one module-wide simulator (`shared`, rate limit and
concurrency limit off); tests that change settings, add faults or count
requests start their own through the `sim`, `sim_tls` and `sim_factory`
fixtures of tests/conftest.py.
"""

import hashlib
import json
import os
import re
import signal
import socket
import ssl
import struct
import threading
import time

import pytest

from simctl import Sim

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
INCIDENTS = "/v2/incidents/list"
DETAILS = "/v2/event-details"
LINEAGE = "/v2/event-lineage"
TOKEN = "/v2/auth/token/access"
INSTALLER = "/v2/installer/windows/latest"


@pytest.fixture(autouse=True)
def time_limit():
    """No test may run longer than 30 s."""
    def expired(signum, frame):
        raise TimeoutError("test exceeded its 30 s budget")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def shared():
    with Sim.start(seed=7, incidents=120, rate_limit=0, max_concurrency=0) as instance:
        yield instance


@pytest.fixture(scope="module")
def shared_dataset(shared):
    return shared.dataset()


# ---------------------------------------------------------------------------
# helpers


def list_page(sim, body=None, token=True, **page):
    body = dict(body or {})
    if page:
        body["page_request"] = dict(body.get("page_request", {}), **page)
    return sim.request("POST", INCIDENTS, body, token=token)


def list_all(sim, body=None, size=50, on_page=None):
    """Every incident id through paging, plus the totals seen."""
    ids, totals, page_id = [], [], None
    for page_number in range(1000):
        page = {"size": size}
        if page_id:
            page["id"] = page_id
        reply = list_page(sim, dict(body or {}, page_request=dict(
            (body or {}).get("page_request", {}), **page)))
        assert reply.status == 200, reply
        document = reply.json()
        ids += [incident["id"] for incident in document["resources"]]
        totals.append(document["page_response"]["total"])
        if on_page:
            on_page(page_number)
        page_id = document["page_response"].get("next_id")
        if not page_id:
            return ids, totals
    raise AssertionError("paging did not end")


def expected_ids(dataset, keep=lambda record: True, descending=False):
    records = [r for r in dataset["incidents"] if keep(r)]
    records.sort(key=lambda r: (r["incident"]["trigger_time"], r["incident"]["id"]),
                 reverse=descending)
    return [r["incident"]["id"] for r in records]


def traceable(dataset):
    return [r for r in dataset["incidents"] if r["hidden"]["traceable"]]


def assert_envelope(document, errors=False):
    assert set(document) >= {"type", "size", "resources", "errors"}
    assert isinstance(document["type"], str) and document["type"]
    assert isinstance(document["resources"], list)
    assert document["size"] == len(document["resources"])
    assert isinstance(document["errors"], list)
    if errors:
        assert document["errors"], document
        for error in document["errors"]:
            assert set(error) == {"code", "message", "details"}
    else:
        assert document["errors"] == []


class RawReply:
    def __init__(self, status, headers, body, ending, elapsed):
        self.status, self.headers, self.body = status, headers, body
        self.ending, self.elapsed = ending, elapsed


def raw_request(sim, method, path, body=None, token=None, headers=None, storage=False,
                timeout=5.0):
    """One request over a plain socket, reporting how the answer ended:
    "complete", "eof" (closed early), "reset" or "timeout"."""
    port = sim.storage_port if storage else sim.port
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    payload = b""
    if body is not None:
        payload = json.dumps(body).encode()
        lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
        status, fields, data, ending = _read_raw(sock, method == "HEAD")
    return RawReply(status, fields, data, ending, time.monotonic() - started)


def _read_raw(sock, head_only):
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return None, {}, b"", "eof"
            data += chunk
    except ConnectionResetError:
        return None, {}, b"", "reset"
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    fields = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    length = 0 if head_only else int(fields.get("content-length", 0))
    try:
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return status, fields, body, "eof"
            body += chunk
    except ConnectionResetError:
        return status, fields, body, "reset"
    except socket.timeout:
        return status, fields, body, "timeout"
    return status, fields, body, "complete"


def installer_bytes(sim):
    with open(sim.installer()["path"], "rb") as handle:
        return handle.read()


# ---------------------------------------------------------------------------
# start-up, routes, envelope


def test_ready_line_plain(sim):
    assert set(sim.info) == {"port", "url", "ca_file", "storage_port", "storage_url"}
    assert sim.url == f"http://127.0.0.1:{sim.port}"
    assert sim.ca_file is None
    assert sim.storage_url == f"http://127.0.0.1:{sim.storage_port}"
    assert sim.storage_port != sim.port


def test_both_path_prefixes(shared, shared_dataset):
    record = traceable(shared_dataset)[0]
    chain = record["hidden"]["chain"]
    for prefix in ("", "/public"):
        token = shared.request("POST", prefix + TOKEN, {"refresh_token": "sim-api-key"},
                               token=False).json()["access_token"]
        assert list_page(shared, token=token, size=1).status == 200
        reply = shared.request("POST", prefix + LINEAGE, {"start_event_id": chain[0],
                                                         "end_event_id": chain[-1]}, token=token)
        assert reply.json()["resources"] == chain
        assert shared.request("POST", prefix + DETAILS, {"ids": chain[:1]}, token=token).status == 200
        assert shared.request("GET", f"{prefix}{DETAILS}?ids={chain[0]}", token=token).status == 200
        assert shared.request("GET", prefix + INSTALLER, token=token).status == 200


def test_unknown_routes_and_methods(shared):
    for path in ("/v2/nothing", "//v2/incidents/list", "/v2/incidents/list/",
                 "/public/public/v2/event-lineage", "/v1/incidents/list"):
        reply = shared.request("POST", path, {})
        assert reply.status == 404, path
        assert_envelope(reply.json(), errors=True)
    reply = shared.request("GET", INCIDENTS)
    assert reply.status == 405 and reply.headers["Allow"] == "POST"
    assert_envelope(reply.json(), errors=True)
    assert shared.request("DELETE", DETAILS).headers["Allow"] == "POST, GET"
    for platform in ("linux", "macos"):
        reply = shared.request("GET", f"/v2/installer/{platform}/latest")
        assert reply.status == 404
        assert_envelope(reply.json(), errors=True)


def test_protocol_errors_are_envelopes(shared):
    with socket.create_connection(("127.0.0.1", shared.port), timeout=5) as sock:
        sock.sendall(b"GET / NONSENSE/1.1\r\n\r\n")
        status, fields, body, _ = _read_raw(sock, False)
    assert status == 400
    assert_envelope(json.loads(body), errors=True)


def test_keep_alive_reuses_connections(shared):
    conn = shared.connection()
    try:
        for _ in range(3):
            assert shared.request("POST", INCIDENTS, {"page_request": {"size": 1}},
                                  connection=conn).status == 200
        port = conn.sock.getsockname()[1]
    finally:
        conn.close()
    assert port
    entries = [e for e in shared.log()["requests"] if e["route"] == "incidents"]
    by_connection = {}
    for entry in entries:
        by_connection.setdefault(entry["connection"], []).append(entry["connection_request"])
    assert any(sorted(v)[-3:] == [1, 2, 3] for v in by_connection.values())


def test_chunked_request_body(shared):
    conn = shared.connection()
    try:
        body = iter([b'{"page_request":', b'{"size": 2}}'])
        conn.request("POST", INCIDENTS, body=body, encode_chunked=True,
                     headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked",
                              "Authorization": f"Bearer {shared.access_token()}"})
        response = conn.getresponse()
        assert response.status == 200
        assert json.loads(response.read())["size"] == 2
    finally:
        conn.close()


# ---------------------------------------------------------------------------
# authentication


@pytest.mark.sim_options(token_lifetime=1)
def test_token_exchange_and_expiry(sim):
    reply = sim.request("POST", TOKEN, {"refresh_token": "sim-api-key"}, token=False)
    assert reply.status == 200
    document = reply.json()
    assert_envelope(document)
    assert document["access_token"] == document["resources"][0]["access_token"]
    assert document["expires_in"] == 1 and document["token_type"] == "Bearer"
    assert reply.headers["Cache-Control"] == "no-store"
    token = document["access_token"]
    assert list_page(sim, token=token, size=1).status == 200
    time.sleep(1.2)
    expired = list_page(sim, token=token, size=1)
    assert expired.status == 401 and "expired" in expired.json()["errors"][0]["message"]
    assert expired.headers["WWW-Authenticate"].startswith("Bearer")
    fresh = sim.access_token(fresh=True)
    assert list_page(sim, token=fresh, size=1).status == 200


def test_token_exchange_errors_and_shapes(sim):
    assert sim.request("POST", TOKEN, {"refresh_token": "wrong"}, token=False).status == 401
    for body in ({}, {"refresh_token": 5}, {"refresh_token": ""}, [1], b"not json", b""):
        reply = sim.request("POST", TOKEN, body, token=False,
                            headers={"Content-Type": "application/json"})
        assert reply.status == 400, body
        assert_envelope(reply.json(), errors=True)
    reply = sim.request("POST", TOKEN, b'{"refresh_token":"sim-api-key"}', token=False,
                        headers={"Content-Type": "text/plain"})
    assert reply.status == 400
    sim.config(token_shape="flat")
    flat = sim.request("POST", TOKEN, {"refresh_token": "sim-api-key"}, token=False).json()
    assert set(flat) == {"access_token", "token_type", "expires_in"}
    sim.config(token_shape="envelope")
    wrapped = sim.request("POST", TOKEN, {"refresh_token": "sim-api-key"}, token=False).json()
    assert "access_token" not in wrapped and wrapped["resources"][0]["access_token"]


def test_missing_or_bad_bearer_is_401(shared):
    cases = [{}, {"Authorization": "Basic c2ltOnNpbQ=="}, {"Authorization": "Bearer"},
             {"Authorization": "Bearer not-a-token"}]
    for headers in cases:
        for method, path, body in (("POST", INCIDENTS, {}), ("POST", LINEAGE, {}),
                                   ("POST", DETAILS, {"ids": []}), ("GET", DETAILS + "?ids=x", None),
                                   ("GET", INSTALLER, None)):
            reply = shared.request(method, path, body, headers=headers, token=False)
            assert reply.status == 401, (headers, path)
            assert_envelope(reply.json(), errors=True)
            assert "X-RateLimit-Remaining" not in reply.headers


def test_expire_all_tokens(sim):
    token = sim.access_token()
    assert sim.expire_tokens() == 1
    assert list_page(sim, size=1, token=token).status == 401


def test_forbidden_key_gets_403_everywhere(shared):
    token = shared.access_token("sim-forbidden-key")
    for method, path, body in (("POST", INCIDENTS, {}), ("POST", LINEAGE, {}),
                               ("POST", DETAILS, {"ids": []}), ("GET", DETAILS + "?ids=x", None),
                               ("GET", INSTALLER, None), ("POST", "/public" + INCIDENTS, {})):
        reply = shared.request(method, path, body, token=token)
        assert reply.status == 403, path
        assert_envelope(reply.json(), errors=True)


# ---------------------------------------------------------------------------
# rate and concurrency limits


@pytest.mark.sim_options(rate_limit=3, rate_window=2)
def test_rate_limit_headers_and_429(sim):
    before = time.time()
    for _ in range(2):       # token exchanges are not counted, but carry the headers
        reply = sim.request("POST", TOKEN, {"refresh_token": "sim-api-key"}, token=False)
        assert reply.headers["X-RateLimit-Remaining"] == "3"
    token = reply.json()["access_token"]
    remaining = []
    for _ in range(3):
        reply = list_page(sim, size=1, token=token)
        assert reply.status == 200
        remaining.append(reply.headers["X-RateLimit-Remaining"])
        reset = int(reply.headers["X-RateLimit-Reset"])
        assert before + 1 <= reset <= time.time() + 3
    assert remaining == ["2", "1", "0"]
    limited = list_page(sim, size=1, token=token)
    assert limited.status == 429
    assert_envelope(limited.json(), errors=True)
    assert limited.headers["X-RateLimit-Remaining"] == "0"
    retry = int(limited.headers["Retry-After"])
    assert 1 <= retry <= 2
    assert sim.request("GET", INSTALLER, token=token).status == 429   # per key, all routes
    time.sleep(max(0.0, reset - time.time()) + 0.05)
    again = list_page(sim, size=1, token=token)
    assert again.status == 200 and again.headers["X-RateLimit-Remaining"] == "2"
    summary = sim.log()["summary"]
    assert summary["count_429"] == 2 and summary["by_route"]["token"] == 2


@pytest.mark.sim_options(rate_limit=2, rate_window=30, api_key=["key-a", "key-b"])
def test_rate_limit_counts_per_key(sim):
    first, second = sim.access_token("key-a"), sim.access_token("key-b")
    for _ in range(2):
        assert list_page(sim, size=1, token=first).status == 200
    assert list_page(sim, size=1, token=first).status == 429
    assert list_page(sim, size=1, token=second).status == 200


@pytest.mark.sim_options(rate_limit=0)
def test_rate_limit_disabled_sends_no_headers(sim):
    for _ in range(5):
        reply = list_page(sim, size=1)
        assert reply.status == 200 and "X-RateLimit-Remaining" not in reply.headers


@pytest.mark.sim_options(rate_limit=1000, max_concurrency=2, latency_ms=400)
def test_concurrency_limit_per_endpoint(sim):
    token = sim.access_token()
    barrier = threading.Barrier(6)
    replies = []

    def worker(path, body):
        barrier.wait()
        replies.append(sim.request("POST", path, body, token=token))

    threads = [threading.Thread(target=worker, args=(INCIDENTS, {"page_request": {"size": 1}}))
               for _ in range(5)]
    threads.append(threading.Thread(target=worker, args=(DETAILS, {"ids": []})))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    statuses = sorted(r.status for r in replies)
    assert statuses.count(200) == 3 and statuses.count(429) == 3   # 2 incidents + 1 details
    for reply in replies:
        if reply.status == 429:
            assert reply.headers["Retry-After"] == "1"
            assert reply.json()["errors"][0]["code"] == "too_many_concurrent_requests"
    summary = sim.log()["summary"]
    assert 3 <= summary["max_concurrency"]["incidents"] <= 5    # refused ones are brief
    assert summary["max_admitted"]["incidents"] == 2
    assert summary["max_admitted"]["details"] == 1
    assert summary["concurrency_rejected"]["incidents"] == 3
    sim.clear_log()
    assert sim.log()["summary"]["max_concurrency"] == {}


@pytest.mark.sim_options(latency_ms=250)
def test_latency_is_added(sim):
    sim.access_token()
    started = time.monotonic()
    assert list_page(sim, size=1).status == 200
    assert time.monotonic() - started >= 0.25


# ---------------------------------------------------------------------------
# incident list


def test_paging_returns_every_incident_once(shared, shared_dataset):
    ids, totals = list_all(shared, size=7)
    assert len(ids) == len(set(ids)) == 120
    assert ids == expected_ids(shared_dataset)
    assert set(totals) == {120}
    desc, _ = list_all(shared, {"page_request": {"sort_by": "trigger_time desc"}}, size=11)
    assert desc == expected_ids(shared_dataset, descending=True) == ids[::-1]
    asc, _ = list_all(shared, {"page_request": {"sort_by": "trigger_time asc"}}, size=1000)
    assert asc == ids


def test_page_size_rules(shared):
    assert len(list_page(shared).json()["resources"]) == 50
    assert len(list_page(shared, size=1000).json()["resources"]) == 120
    for size in (1001, 0, -1, "5", 2.5, True):
        reply = list_page(shared, size=size)
        assert reply.status == 400, size
        assert_envelope(reply.json(), errors=True)


def test_incident_list_bad_requests(shared):
    token_reply = list_page(shared, size=5).json()["page_response"]["next_id"]
    bodies = [b"{not json", b"[]", b"", b'"x"']
    for body in bodies:
        assert shared.request("POST", INCIDENTS, body,
                              headers={"Content-Type": "application/json"}).status == 400
    documents = [
        {"filter": []}, {"filter": {"start_time": "yesterday"}},
        {"filter": {"start_time": "2026-01-01T00:00:00"}},
        {"filter": {"policy_severities": "high"}}, {"filter": {"created_by": [1]}},
        {"page_request": []}, {"page_request": {"sort_by": "hostname asc"}},
        {"page_request": {"sort_by": "trigger_time sideways"}},
        {"page_request": {"id": "garbage"}}, {"page_request": {"id": 7}},
        {"page_request": {"id": token_reply[:-2] + ("AA" if token_reply[-2:] != "AA" else "BB")}},
        {"include_ai_summaries": "yes"},
    ]
    for document in documents:
        reply = shared.request("POST", INCIDENTS, document)
        assert reply.status == 400, document
        assert_envelope(reply.json(), errors=True)


def test_incident_fields_and_types(shared):
    for incident in list_page(shared, size=1000).json()["resources"]:
        assert isinstance(incident["id"], str)
        assert isinstance(incident["user"]["local_username"], str)
        assert isinstance(incident["policy"]["name"], str)
        assert isinstance(incident["dataset"]["name"], str)
        assert ISO.match(incident["trigger_time"])
        assert isinstance(incident["risk_score"], (int, float))
        assert isinstance(incident["blocked"], bool)
        assert isinstance(incident["ai_severity"], str)
        assert incident["created_by"] in ("policy", "ai")
        assert "ai_summary" not in incident


def test_filters(shared, shared_dataset):
    trigger_times = sorted(r["incident"]["trigger_time"] for r in shared_dataset["incidents"])
    middle = trigger_times[len(trigger_times) // 2]
    cases = [
        ({"start_time": middle}, lambda r: r["incident"]["trigger_time"] >= middle),
        ({"policy_severities": ["high", "critical"]},
         lambda r: r["hidden"]["policy_severity"] in ("high", "critical")),
        ({"resolution_statuses": ["open"]}, lambda r: r["hidden"]["resolution_status"] == "open"),
        ({"created_by": ["policy"]}, lambda r: r["incident"]["created_by"] == "policy"),
        ({"dataset_sensitivities": ["critical"]},
         lambda r: r["hidden"]["dataset_sensitivity"] == "critical"),
        ({"created_by": ["ai"], "resolution_statuses": ["open"], "start_time": middle},
         lambda r: r["incident"]["created_by"] == "ai" and r["hidden"]["resolution_status"] == "open"
         and r["incident"]["trigger_time"] >= middle),
        ({"policy_severities": []}, lambda r: True),
        ({"policy_severities": ["bogus"]}, lambda r: False),
        ({"unknown_field": ["x"]}, lambda r: True),
    ]
    for incident_filter, keep in cases:
        wanted = expected_ids(shared_dataset, keep)
        ids, totals = list_all(shared, {"filter": incident_filter}, size=13)
        assert ids == wanted, incident_filter
        assert set(totals) <= {len(wanted)}
        assert 0 < len(wanted) < 120 or incident_filter in ({"policy_severities": []},
                                                           {"unknown_field": ["x"]},
                                                           {"policy_severities": ["bogus"]})


def test_page_token_carries_filter_and_sort(shared, shared_dataset):
    body = {"filter": {"created_by": ["policy"]}, "page_request": {"size": 5,
                                                                    "sort_by": "trigger_time desc"}}
    first = shared.request("POST", INCIDENTS, body).json()
    next_id = first["page_response"]["next_id"]
    bare = list_page(shared, id=next_id, size=5).json()      # no filter, no sort: the token's
    wanted = expected_ids(shared_dataset, lambda r: r["incident"]["created_by"] == "policy",
                          descending=True)
    assert [i["id"] for i in first["resources"] + bare["resources"]] == wanted[:10]
    other_filter = {"filter": {"created_by": ["ai"]}, "page_request": {"id": next_id}}
    assert shared.request("POST", INCIDENTS, other_filter).status == 400
    other_sort = {"page_request": {"id": next_id, "sort_by": "trigger_time asc"}}
    assert shared.request("POST", INCIDENTS, other_sort).status == 400
    same = dict(body, page_request={"id": next_id, "size": 5, "sort_by": "trigger_time desc"})
    assert shared.request("POST", INCIDENTS, same).json() == bare


@pytest.mark.sim_options(incidents=30)
def test_paging_is_stable_while_incidents_are_added(sim):
    before = sim.dataset()
    for descending in (False, True):
        body = {"page_request": {"sort_by": "trigger_time desc"}} if descending else {}
        ids, totals = list_all(sim, body, size=7, on_page=lambda n: sim.add_incidents(2))
        assert ids == expected_ids(before, descending=descending)
        assert set(totals) == {len(before["incidents"])}
        before = sim.dataset()
    added = sim.add_incidents(3)
    ids, totals = list_all(sim, size=100)
    assert set(totals) == {len(before["incidents"]) + 3} == {len(set(ids))}
    assert set(added) <= set(ids)


@pytest.mark.sim_options(incidents=12)
def test_last_page_next_id_styles(sim):
    def last_page_response():
        return list_page(sim, size=100).json()["page_response"]
    assert last_page_response() == {"total": 12, "next_id": ""}
    sim.config(next_id_style="null")
    assert last_page_response() == {"total": 12, "next_id": None}
    sim.config(next_id_style="absent")
    assert last_page_response() == {"total": 12}
    first = list_page(sim, size=5).json()["page_response"]
    assert isinstance(first["next_id"], str) and first["next_id"]


def test_include_ai_summaries(shared):
    for incident in list_page(shared, {"include_ai_summaries": True}, size=20).json()["resources"]:
        assert isinstance(incident["ai_summary"], str) and incident["ai_summary"]


def test_add_incidents_trigger_now(sim):
    total = len(sim.dataset()["incidents"])
    now = time.time()
    added = sim.add_incidents(3)
    dataset = sim.dataset()
    assert len(dataset["incidents"]) == total + 3
    new = {r["incident"]["id"]: r for r in dataset["incidents"][-3:]}
    assert set(new) == set(added)
    for record in new.values():
        moment = time.mktime(time.strptime(record["incident"]["trigger_time"], "%Y-%m-%dT%H:%M:%SZ"))
        moment -= time.timezone     # mktime is local time
        assert abs(moment - now) < 5
    ids, _ = list_all(sim, {"filter": {"start_time": new[added[0]]["incident"]["trigger_time"]}})
    assert set(added) <= set(ids)
    at = sim.add_incidents(1, trigger_time="2026-01-02T03:04:05Z")
    assert sim.dataset()["incidents"][-1]["incident"]["trigger_time"] == "2026-01-02T03:04:05Z"
    assert at


# ---------------------------------------------------------------------------
# data set


def test_dataset_has_the_documented_variety(shared_dataset):
    incidents = shared_dataset["incidents"]
    events = {e["id"]: e for e in shared_dataset["events"]}
    kinds = {r["hidden"]["lineage_kind"] for r in incidents}
    assert {"full", "single", "absent", "start_only", "end_only", "empty_start", "empty_end",
            "null", "empty_object"} <= kinds
    lineage_values = [r["incident"].get("event_lineage_id", "ABSENT") for r in incidents]
    assert "ABSENT" in lineage_values and None in lineage_values and {} in lineage_values
    assert any(isinstance(v, dict) and len(v) == 1 for v in lineage_values)
    assert any(isinstance(v, dict) and "" in v.values() for v in lineage_values)
    assert any(r["incident"]["ai_severity"] == "severity_unspecified" for r in incidents)
    documented = {"id", "user", "policy", "dataset", "trigger_time", "risk_score", "blocked",
                  "ai_severity", "created_by", "event_lineage_id"}
    assert any(set(r["incident"]) - documented for r in incidents)
    assert any(isinstance(r["incident"]["risk_score"], float) for r in incidents)
    assert any(isinstance(r["incident"]["risk_score"], int) for r in incidents)
    # chains: varied length, sharing events, all known
    chains = [r["hidden"]["chain"] for r in traceable(shared_dataset)]
    lengths = [len(c) for c in chains if len(c) > 1]
    assert min(len(c) for c in chains) == 1 and max(lengths) <= 40
    assert 14 <= sum(lengths) / len(lengths) <= 26
    references = [e for c in chains for e in c]
    assert len(set(references)) < 0.6 * len(references)
    assert all(e in events for e in references)
    # events: optional members, non-ASCII names, large sizes, hosts, extras
    actions = [e["action"] for e in events.values()]
    assert any("blocked" not in a for a in actions) and any("data_size" not in a for a in actions)
    assert any(a.get("data_size", 0) > 2**32 for a in actions)
    assert 8 <= len({a["hostname"] for a in actions}) <= 10
    assert any("source" not in e for e in events.values())
    assert any("destination" not in e for e in events.values())
    text = json.dumps(shared_dataset["events"], ensure_ascii=False)
    assert "Résumé – 2026.docx" in text and "C:\\\\Users\\\\zoë\\\\文档\\\\" in text
    assert any("email" in e.get("destination", {}) for e in events.values())
    assert any("web" in e.get("destination", {}) for e in events.values())
    assert any(set(e) - {"id", "timestamp", "action", "user", "source", "destination"}
               for e in events.values())
    assert all(ISO.match(e["timestamp"]) for e in events.values())
    # missing events: in traced chains, about 1 %
    missing = set(shared_dataset["missing_event_ids"])
    assert missing and missing <= set(references)
    assert len(missing) <= max(1, 0.02 * len(set(references)))


def test_trigger_times_within_span(shared_dataset):
    reference = time.mktime(time.strptime(shared_dataset["reference_time"], "%Y-%m-%dT%H:%M:%SZ"))
    for record in shared_dataset["incidents"]:
        moment = time.mktime(time.strptime(record["incident"]["trigger_time"], "%Y-%m-%dT%H:%M:%SZ"))
        assert reference - 12 * 3600 <= moment <= reference
        assert ISO.match(record["incident"]["trigger_time"])


def test_same_seed_same_dataset(sim_factory):
    options = dict(incidents=40, reference_time="2026-11-21T10:00:00Z")
    first, second = sim_factory(seed=5, **options), sim_factory(seed=5, **options)
    third = sim_factory(seed=6, **options)
    assert first.dataset() == second.dataset()
    assert first.dataset() != third.dataset()
    assert first.installer()["sha256"] == second.installer()["sha256"]
    assert first.add_incidents(2) == second.add_incidents(2)
    assert first.dataset()["incidents"][-2:] == second.dataset()["incidents"][-2:]


# ---------------------------------------------------------------------------
# lineage and details


def test_lineage_returns_each_chain(shared, shared_dataset):
    for record in traceable(shared_dataset)[:40]:
        chain = record["hidden"]["chain"]
        lineage = record["incident"]["event_lineage_id"]
        reply = shared.request("POST", LINEAGE, lineage)
        assert reply.status == 200
        document = reply.json()
        assert_envelope(document)
        assert document["resources"] == chain


def test_lineage_errors(shared, shared_dataset):
    records = traceable(shared_dataset)
    long_ones = [r for r in records if len(r["hidden"]["chain"]) > 3]
    chain = long_ones[0]["hidden"]["chain"]
    known = {(r["hidden"]["chain"][0], r["hidden"]["chain"][-1]) for r in shared_dataset["incidents"]
             if r["hidden"]["chain"]}
    assert (chain[1], chain[-2]) not in known
    cases = [({"start_event_id": "nope", "end_event_id": chain[-1]}, 404),
             ({"start_event_id": chain[0], "end_event_id": "nope"}, 404),
             ({"start_event_id": chain[1], "end_event_id": chain[-2]}, 404),
             ({"start_event_id": chain[-1], "end_event_id": chain[0]}, 404),
             ({"start_event_id": chain[0]}, 400), ({"start_event_id": "", "end_event_id": chain[0]}, 400),
             ({"start_event_id": 1, "end_event_id": 2}, 400)]
    for body, status in cases:
        reply = shared.request("POST", LINEAGE, body)
        assert reply.status == status, body
        assert_envelope(reply.json(), errors=True)


def test_details_omit_missing_and_unknown_ids(shared, shared_dataset):
    missing = set(shared_dataset["missing_event_ids"])
    events = {e["id"]: e for e in shared_dataset["events"]}
    chains = [r["hidden"]["chain"] for r in traceable(shared_dataset)]
    with_missing = next(c for c in chains if missing & set(c))
    ids = with_missing + ["unknown-event-id"] + with_missing[:2]
    post = shared.request("POST", DETAILS, {"ids": ids}).json()
    get = shared.request("GET", DETAILS + "?ids=" + ",".join(ids)).json()
    assert_envelope(post)
    assert post == get
    returned = [e["id"] for e in post["resources"]]
    assert returned == [e for e in with_missing if e not in missing]
    assert post["resources"] == [events[e] for e in returned]
    explicit_false = shared.request("GET", DETAILS + "?include_content=false&ids=" + ",".join(ids))
    assert explicit_false.json() == post


def test_details_include_content(shared, shared_dataset):
    with_content = [e["id"] for e in shared_dataset["events"] if "content" in e.get("source", {})][:5]
    for reply in (shared.request("GET", DETAILS + "?include_content=true&ids=" + ",".join(with_content)),
                  shared.request("POST", DETAILS, {"ids": with_content, "include_content": True})):
        assert all("excerpt" in e["source"]["content"] for e in reply.json()["resources"])
    assert shared.request("GET", DETAILS + "?include_content=maybe&ids=x").status == 400


def test_details_bad_requests_and_id_cap(shared, shared_dataset):
    assert shared.request("GET", DETAILS).status == 400
    for body in ({}, {"ids": "a,b"}, {"ids": [1, 2]}):
        assert shared.request("POST", DETAILS, body).status == 400
    ids = [e["id"] for e in shared_dataset["events"]][:500]
    ids += [f"unknown-{n}" for n in range(1000 - len(ids))]
    assert shared.request("POST", DETAILS, {"ids": ids}).status == 200
    reply = shared.request("POST", DETAILS, {"ids": ids + ["one-more"]})
    assert reply.status == 400
    assert_envelope(reply.json(), errors=True)
    assert shared.request("POST", DETAILS, {"ids": []}).json()["size"] == 0


@pytest.mark.sim_options(max_detail_ids=5, incidents=20)
def test_details_cap_and_missing_are_configurable(sim):
    dataset = sim.dataset()
    ids = [e["id"] for e in dataset["events"]][:6]
    assert sim.request("GET", DETAILS + "?ids=" + ",".join(ids)).status == 400
    assert sim.request("GET", DETAILS + "?ids=" + ",".join(ids[:5])).json()["size"] == \
        len([i for i in ids[:5] if i not in dataset["missing_event_ids"]])
    sim.config(missing_events=ids[:2])
    assert [e["id"] for e in sim.request("POST", DETAILS, {"ids": ids[:5]}).json()["resources"]] == ids[2:5]
    assert sim.dataset()["missing_event_ids"] == sorted(ids[:2])
    sim.config(missing_fraction=0)
    assert sim.dataset()["missing_event_ids"] == []


# ---------------------------------------------------------------------------
# installer


def test_installer_download_headers(shared):
    reply = shared.request("GET", INSTALLER)
    info = shared.installer()
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/octet-stream"
    assert reply.headers["Content-Disposition"] == 'attachment; filename="SensorSetup.exe"'
    assert reply.headers["X-Installer-Version"] == "26.01.03.24329-0de7ab+"
    assert reply.headers["Accept-Ranges"] == "bytes"
    assert reply.headers["ETag"] == info["etag"]
    assert reply.headers["Last-Modified"] == info["last_modified"]
    assert int(reply.headers["Content-Length"]) == len(reply.body) == info["size"] == 256 * 1024
    assert hashlib.sha256(reply.body).hexdigest() == info["sha256"]
    assert reply.body[:2] == b"MZ"
    pe_offset = struct.unpack_from("<I", reply.body, 0x3C)[0]
    assert reply.body[pe_offset:pe_offset + 4] == b"PE\0\0"


def test_installer_ranges(shared):
    whole = installer_bytes(shared)
    size = len(whole)
    info = shared.installer()
    cases = [("bytes=0-99", 0, 99), ("bytes=1000-", 1000, size - 1), ("bytes=-500", size - 500, size - 1),
             ("bytes=10-999999999", 10, size - 1)]
    for value, first, last in cases:
        reply = shared.request("GET", INSTALLER, headers={"Range": value})
        assert reply.status == 206, value
        assert reply.headers["Content-Range"] == f"bytes {first}-{last}/{size}"
        assert reply.body == whole[first:last + 1]
        assert reply.headers["X-Installer-Version"]
    for value in (f"bytes={size}-", "bytes=-0"):
        reply = shared.request("GET", INSTALLER, headers={"Range": value})
        assert reply.status == 416 and reply.headers["Content-Range"] == f"bytes */{size}"
    for value in ("bytes=0-1,5-6", "pages=1-2", "bytes=9-3"):
        assert shared.request("GET", INSTALLER, headers={"Range": value}).status == 200
    matching = [info["etag"], info["last_modified"]]
    for validator in matching:
        reply = shared.request("GET", INSTALLER, headers={"Range": "bytes=100-", "If-Range": validator})
        assert reply.status == 206 and reply.body == whole[100:]
    for validator in ('"stale-etag"', "Mon, 01 Jan 2024 00:00:00 GMT", "W/" + info["etag"]):
        reply = shared.request("GET", INSTALLER, headers={"Range": "bytes=100-", "If-Range": validator})
        assert reply.status == 200 and reply.body == whole
    assert shared.request("GET", INSTALLER, headers={"If-None-Match": info["etag"]}).status == 304
    assert shared.request("GET", INSTALLER, headers={"If-None-Match": '"other"'}).status == 200


def test_installer_head_keeps_the_connection(shared):
    conn = shared.connection()
    try:
        head = shared.request("HEAD", INSTALLER, connection=conn)
        assert head.status == 200 and head.body == b""
        assert int(head.headers["Content-Length"]) == 256 * 1024
        assert head.headers["X-Installer-Version"] and head.headers["ETag"]
        assert shared.request("GET", INSTALLER, connection=conn, headers={"Range": "bytes=0-1"}).body == b"MZ"
    finally:
        conn.close()


@pytest.mark.sim_options(no_head=True, no_range=True)
def test_no_head_and_no_range(sim):
    head = sim.request("HEAD", INSTALLER)
    assert head.status == 405 and head.headers["Allow"] == "GET"
    reply = sim.request("GET", INSTALLER, headers={"Range": "bytes=0-9"})
    assert reply.status == 200 and len(reply.body) == 256 * 1024
    assert "Accept-Ranges" not in reply.headers and "Content-Range" not in reply.headers


@pytest.mark.sim_options(no_validators=True)
def test_no_validators(sim):
    reply = sim.request("GET", INSTALLER, headers={"Range": "bytes=0-9"})
    assert reply.status == 206 and len(reply.body) == 10
    assert "ETag" not in reply.headers and "Last-Modified" not in reply.headers
    conditional = sim.request("GET", INSTALLER, headers={"Range": "bytes=0-9", "If-Range": '"x"'})
    assert conditional.status == 200 and len(conditional.body) == 256 * 1024
    sim.config(validators=True)
    assert "ETag" in sim.request("HEAD", INSTALLER).headers


def test_installer_file_version_and_name(sim, tmp_path):
    path = tmp_path / "custom.msi"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(range(256)) * 40)
    sim.config(installer=str(path), installer_version="27.1.0-rc1", installer_name="Sensör Setup.msi")
    reply = sim.request("GET", INSTALLER)
    assert reply.body == path.read_bytes()
    assert reply.headers["X-Installer-Version"] == "27.1.0-rc1"
    assert reply.headers["Content-Disposition"] == \
        "attachment; filename=\"Sens_r Setup.msi\"; filename*=UTF-8''Sens%C3%B6r%20Setup.msi"
    sim.config(installer_disposition='attachment; filename="../../evil.exe"')
    assert sim.request("HEAD", INSTALLER).headers["Content-Disposition"].endswith('"../../evil.exe"')
    assert sim.installer()["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    reply = sim.request("POST", "/_sim/config", {"installer": str(tmp_path / "absent")}, token=False)
    assert reply.status == 400


@pytest.mark.sim_options(installer_size=3 * 1024 * 1024 + 17)
def test_large_installer_is_streamed_in_pieces(sim):
    reply = sim.request("GET", INSTALLER)
    assert len(reply.body) == 3 * 1024 * 1024 + 17
    assert hashlib.sha256(reply.body).hexdigest() == sim.installer()["sha256"]


@pytest.mark.sim_options(redirect=True)
def test_redirect_to_storage_without_authorization(sim):
    reply = sim.request("GET", INSTALLER)
    assert reply.status == 302 and reply.body == b""
    location = reply.headers["Location"]
    assert location.startswith(sim.storage_url + "/installer/windows/SensorSetup.exe?")
    assert reply.headers["X-Installer-Version"] == "26.01.03.24329-0de7ab+"
    path = location[len(sim.storage_url):]
    stored = sim.request("GET", path, storage=True, token=False)
    assert stored.status == 200 and stored.body == installer_bytes(sim)
    assert stored.headers["X-Installer-Version"] and stored.headers["ETag"]
    partial = sim.request("GET", path, storage=True, token=False, headers={"Range": "bytes=5-9"})
    assert partial.status == 206 and partial.body == installer_bytes(sim)[5:10]
    sim.request("GET", path, storage=True)        # a careless client sends the token along
    storage = [e for e in sim.log()["requests"] if e["listener"] == "storage"]
    assert [e["authorization"] for e in storage] == [False, False, True]
    assert sim.request("GET", "/elsewhere", storage=True).status == 404
    assert sim.request("GET", INSTALLER, token=False).status == 401     # route still needs a token
    sim.config(redirect_version_header="storage")
    assert "X-Installer-Version" not in sim.request("GET", INSTALLER).headers
    assert sim.request("GET", path, storage=True, token=False).headers["X-Installer-Version"]
    sim.config(redirect_version_header="redirect")
    assert "X-Installer-Version" not in sim.request("GET", path, storage=True, token=False).headers


# ---------------------------------------------------------------------------
# TLS


@pytest.mark.sim_options(redirect=True)
def test_tls_with_generated_ca(sim_tls):
    assert sim_tls.url == f"https://localhost:{sim_tls.port}"
    assert sim_tls.storage_url == f"https://storage.localhost:{sim_tls.storage_port}"
    assert os.path.isfile(sim_tls.ca_file)
    reply = sim_tls.request("GET", INSTALLER)
    assert reply.status == 302
    path = reply.headers["Location"][len(sim_tls.storage_url):]
    assert sim_tls.request("GET", path, storage=True, token=False).status == 200
    for name in ("127.0.0.1", "localhost"):
        conn = sim_tls.connection(server_name=name)
        conn.request("GET", "/_sim/config")
        assert conn.getresponse().status == 200
        conn.close()
    # the certificate is for serverAuth and signed by the CA only
    with pytest.raises(ssl.SSLCertVerificationError):
        conn = sim_tls.connection(server_name="wrong.example")
        conn.request("GET", "/_sim/config")
    untrusting = ssl.create_default_context()
    with socket.create_connection(("127.0.0.1", sim_tls.port), timeout=5) as sock:
        with pytest.raises(ssl.SSLCertVerificationError):
            untrusting.wrap_socket(sock, server_hostname="localhost")
    deadline = time.monotonic() + 3
    while sim_tls.log()["summary"]["tls_handshake_failures"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sim_tls.log()["summary"]["tls_handshake_failures"] >= 2


def test_cert_dir_is_reused(sim_factory, tmp_path):
    first = sim_factory(tls=True, cert_dir=str(tmp_path))
    second = sim_factory(tls=True, cert_dir=str(tmp_path))
    assert first.ca_file == second.ca_file == str(tmp_path / "ca.pem")
    assert second.request("GET", INSTALLER).status == 200


# ---------------------------------------------------------------------------
# faults


def test_status_fault_count_after_and_retry_after(sim):
    sim.access_token()
    sim.fault("incidents", "status", status=503, retry_after=2, count=2, after=1)
    statuses = []
    for _ in range(4):
        reply = list_page(sim, size=1)
        statuses.append((reply.status, reply.headers.get("Retry-After")))
        if reply.status == 503:
            assert_envelope(reply.json(), errors=True)
            assert "X-RateLimit-Remaining" not in reply.headers
    assert statuses == [(200, None), (503, "2"), (503, "2"), (200, None)]
    assert sim.faults()[0]["seen"] == 4 and sim.faults()[0]["applied"] == 2
    for status in (429, 500, 502):
        sim.fault("lineage", "status", status=status)
        reply = sim.request("POST", LINEAGE, {})
        assert reply.status == status and "Retry-After" not in reply.headers
    sim.fault("token", "status", status=502, count=-1)
    for _ in range(3):
        assert sim.request("POST", TOKEN, {"refresh_token": "sim-api-key"}, token=False).status == 502
    sim.clear_faults()
    assert sim.faults() == []
    assert sim.request("POST", TOKEN, {"refresh_token": "sim-api-key"}, token=False).status == 200
    assert sim.log()["summary"]["by_status"]["503"] == 2


def test_fault_specs_are_validated(sim):
    bad = [{"route": "nowhere", "kind": "status"}, {"route": "incidents", "kind": "explode"},
           {"route": "incidents", "kind": "status", "count": 0},
           {"route": "incidents", "kind": "status", "colour": "red"},
           {"route": "incidents", "kind": "status", "status": 200},
           {"route": "incidents", "kind": "wrong_types", "variant": "nope"},
           {"route": "incidents", "kind": "stall", "then": "explode"}]
    for spec in bad:
        assert sim.request("POST", "/_sim/faults", spec, token=False).status == 400, spec
    several = {"faults": [{"route": "details", "kind": "forbidden"},
                          {"route": "details", "kind": "html_200"}]}
    assert len(sim.request("POST", "/_sim/faults", several, token=False).json()["added"]) == 2


def test_reset_fault(sim):
    token = sim.access_token()
    sim.fault("incidents", "reset", bytes=100)
    reply = raw_request(sim, "POST", INCIDENTS, {"page_request": {"size": 50}}, token=token)
    assert reply.status == 200 and reply.ending == "reset"
    assert len(reply.body) <= 100 < int(reply.headers["content-length"])
    sim.fault("installer", "reset", bytes=-1)
    reply = raw_request(sim, "GET", INSTALLER, token=token)
    assert reply.status is None and reply.ending in ("reset", "eof")
    entries = sim.log()["requests"]
    assert entries[-1]["aborted"] and entries[-1]["status"] == 0 and entries[-1]["fault"] == "reset"
    assert list_page(sim, size=1).status == 200


def test_truncate_and_wrong_length_faults(sim):
    token = sim.access_token()
    sim.fault("installer", "truncate")
    reply = raw_request(sim, "GET", INSTALLER, token=token)
    assert reply.status == 200 and reply.ending == "eof"
    assert int(reply.headers["content-length"]) == 256 * 1024
    assert reply.body == installer_bytes(sim)[:128 * 1024]
    sim.fault("details", "wrong_length", extra=10)
    reply = raw_request(sim, "POST", DETAILS, {"ids": []}, token=token)
    assert reply.ending == "eof"
    assert int(reply.headers["content-length"]) == len(reply.body) + 10
    assert json.loads(reply.body)["size"] == 0
    assert sim.log()["requests"][-1]["bytes_sent"] == len(reply.body)


def test_stall_fault(sim):
    token = sim.access_token()
    sim.fault("incidents", "stall", seconds=0.6, bytes=20)
    reply = raw_request(sim, "POST", INCIDENTS, {}, token=token)
    assert reply.ending == "eof" and len(reply.body) == 20 and reply.elapsed >= 0.6
    sim.fault("incidents", "stall", seconds=0.6, then="continue")
    reply = raw_request(sim, "POST", INCIDENTS, {}, token=token)
    assert reply.ending == "complete" and reply.elapsed >= 0.6
    assert json.loads(reply.body)["size"] == 50
    sim.fault("installer", "stall", seconds=5)        # a client timeout sees the stall
    with pytest.raises(TimeoutError):
        sim.request("GET", INSTALLER, timeout=0.5)


def test_corrupt_fault(sim):
    whole = installer_bytes(sim)
    sim.fault("installer", "corrupt", offset=1000)
    body = sim.request("GET", INSTALLER).body
    assert len(body) == len(whole)
    differing = [i for i in range(len(whole)) if body[i] != whole[i]]
    assert differing == [1000] and body[1000] == whole[1000] ^ 0xFF
    sim.fault("installer", "corrupt", offset=1000)      # a range that does not hold it
    assert sim.request("GET", INSTALLER, headers={"Range": "bytes=2000-2999"}).body == whole[2000:3000]
    sim.fault("installer", "corrupt", offset=1000, mask=1)
    assert sim.request("GET", INSTALLER, headers={"Range": "bytes=990-1009"}).body[10] == whole[1000] ^ 1
    clean = sim.request("POST", DETAILS, {"ids": []}).body
    sim.fault("details", "corrupt")
    dirty = sim.request("POST", DETAILS, {"ids": []}).body
    assert len(dirty) == len(clean) and dirty != clean
    assert dirty[len(clean) // 2] == clean[len(clean) // 2] ^ 0xFF


def test_malformed_json_and_html_faults(sim):
    sim.fault("incidents", "malformed_json")
    reply = list_page(sim, size=3)
    assert reply.status == 200 and reply.headers["Content-Type"] == "application/json"
    with pytest.raises(ValueError):
        json.loads(reply.body)
    sim.fault("token", "html_200")
    reply = sim.request("POST", TOKEN, {"refresh_token": "sim-api-key"}, token=False)
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/html")
    assert reply.body.startswith(b"<!DOCTYPE html>")
    sim.fault("installer", "html_200")
    assert sim.request("GET", INSTALLER).headers["Content-Type"].startswith("text/html")


def test_wrong_types_fault(sim, sim_factory):
    dataset = sim.dataset()
    chain = traceable(dataset)[0]["hidden"]["chain"]
    cases = [("incidents", "resources_object", lambda: list_page(sim, size=2),
              lambda d: isinstance(d["resources"], dict)),
             ("incidents", "risk_score_string", lambda: list_page(sim, size=2),
              lambda d: all(isinstance(i["risk_score"], str) for i in d["resources"])),
             ("incidents", "next_id_number", lambda: list_page(sim, size=2),
              lambda d: d["page_response"]["next_id"] == 12345),
             ("incidents", "size_string", lambda: list_page(sim, size=2), lambda d: d["size"] == "2"),
             ("lineage", "ids_numbers",
              lambda: sim.request("POST", LINEAGE, {"start_event_id": chain[0], "end_event_id": chain[-1]}),
              lambda d: all(isinstance(i, int) for i in d["resources"])),
             ("details", "event_fields", lambda: sim.request("POST", DETAILS, {"ids": chain[:3]}),
              lambda d: all(isinstance(e["action"]["data_size"], str) for e in d["resources"])),
             ("token", "access_token_number",
              lambda: sim.request("POST", TOKEN, {"refresh_token": "sim-api-key"}, token=False),
              lambda d: d["access_token"] == 12345 and d["expires_in"] == "900")]
    for route, variant, call, check in cases:
        sim.fault(route, "wrong_types", variant=variant)
        reply = call()
        assert reply.status == 200
        assert check(reply.json()), variant
        assert_envelope(call().json())         # the next answer is right again


def test_repeat_next_id_fault(sim):
    sim.fault("incidents", "repeat_next_id", count=-1)
    first = list_page(sim, size=10).json()["page_response"]["next_id"]
    second = list_page(sim, size=10, id=first).json()
    third = list_page(sim, size=10, id=first).json()
    assert second["page_response"]["next_id"] == first == third["page_response"]["next_id"]
    assert second["resources"] == third["resources"]


def test_expire_token_and_forbidden_faults(sim):
    token = sim.access_token()
    sim.fault("details", "expire_token")
    assert sim.request("POST", DETAILS, {"ids": []}, token=token).status == 401
    assert list_page(sim, size=1, token=token).status == 401      # expired for good
    fresh = sim.access_token(fresh=True)
    assert list_page(sim, size=1, token=fresh).status == 200
    sim.fault("installer", "forbidden")
    assert sim.request("GET", INSTALLER, token=fresh).status == 403
    assert sim.request("GET", INSTALLER, token=fresh).status == 200


@pytest.mark.sim_options(redirect=True)
def test_storage_faults(sim):
    path = sim.request("GET", INSTALLER).headers["Location"][len(sim.storage_url):]
    sim.fault("storage", "status", status=503, retry_after="5")
    reply = sim.request("GET", path, storage=True, token=False)
    assert reply.status == 503 and reply.headers["Retry-After"] == "5"
    sim.fault("storage", "truncate", bytes=1000)
    reply = raw_request(sim, "GET", path, storage=True)
    assert reply.ending == "eof" and len(reply.body) == 1000
    assert sim.request("GET", path, storage=True, token=False).status == 200


# ---------------------------------------------------------------------------
# log, variants, life cycle


def test_log_records_requests_without_secrets(sim):
    token = sim.access_token()
    list_page(sim, size=1)
    sim.request("GET", INSTALLER, headers={"Range": "bytes=0-9", "If-Range": '"x"'})
    sim.request("GET", INSTALLER, token=False)
    log = sim.log()
    assert token not in json.dumps(log) and "sim-api-key" not in json.dumps(log["requests"])
    entries = log["requests"]
    assert [e["route"] for e in entries] == ["token", "incidents", "installer", "installer"]
    assert [e["status"] for e in entries] == [200, 200, 200, 401]
    assert [e["authorization"] for e in entries] == [False, True, True, False]
    assert entries[2]["range"] == "bytes=0-9" and entries[2]["if_range"] == '"x"'
    assert entries[2]["bytes_sent"] == 256 * 1024
    for entry in entries:
        assert entry["listener"] == "api" and entry["start"] <= entry["end"]
    summary = log["summary"]
    assert summary["by_route"] == {"token": 1, "incidents": 1, "installer": 2}
    assert summary["by_status"] == {"200": 3, "401": 1} and summary["tokens_issued"] == 1
    sim.clear_log()
    assert sim.log()["requests"] == []


@pytest.mark.sim_options(type_variant=True, incidents=10)
def test_type_variant(sim):
    assert list_page(sim).json()["type"] == "com.vendor.incident.v2"
    assert sim.request("POST", DETAILS, {"ids": []}).json()["type"] == "com.vendor.event.v2"
    sim.config(type_variant=False)
    assert list_page(sim).json()["type"] == "incident"


def test_config_is_validated(sim):
    for change in ({"rate_limit": "many"}, {"no_such_setting": 1}, {"next_id_style": "weird"},
                   {"validators": 1}, {"missing_events": "x"}):
        assert sim.request("POST", "/_sim/config", change, token=False).status == 400, change
    assert sim.config()["rate_limit"] == 60
    assert sim.request("GET", "/_sim/nothing", token=False).status == 404


def test_stop_is_clean(sim_factory):
    # 0: it left on SIGTERM; stop() kills it (a negative status) when it does not.
    instance = sim_factory(incidents=5)
    assert instance.stop() == 0


def test_exits_when_stdin_closes(sim_factory):
    instance = sim_factory(incidents=5)
    instance.process.stdin.close()
    assert instance.process.wait(5) == 0


def test_sigint_is_clean(sim_factory):
    instance = sim_factory(incidents=5)
    instance.process.send_signal(signal.SIGINT)
    assert instance.process.wait(5) == 0


def test_bad_command_line_fails_fast(tmp_path):
    with pytest.raises(RuntimeError):
        Sim.start(timeout=10, installer=str(tmp_path / "absent.exe"))
