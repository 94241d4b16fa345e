"""The API client core (issue 3: agent/http.c, agent/api.c) against the
simulator over HTTPS, driven by tests/tools/api_probe (OUTPOST_API_PROBE).

Covers: token renewal across short lifetimes and after a server-side expiry,
403 and refused keys (exit 3), 429 with Retry-After, 5xx and connection
resets survived, a server that keeps failing (exit 75 within the retry
budget), pacing of a burst against a short rate window (no 429, never more
than 5 in flight per endpoint, read from the simulator's log), TLS refusals
(unknown CA, wrong pinned key: exit 1), plain http:// to a non-loopback host
(exit 2), malformed / mistyped / oversized JSON (clean errors naming the
endpoint and field), repeated page tokens, the installer route with a
redirect (no Authorization to the storage host) and the /public prefix.
No test asserts how long anything took (only lower bounds on deliberate
waits); the speed against the limit is scripts/bench-api's figure.
"""

import base64
import hashlib
import json
import os
import subprocess
import time

import pytest

PROBE = os.environ.get("OUTPOST_API_PROBE")
API_KEY = "sim-api-key"

pytestmark = pytest.mark.skipif(not PROBE, reason="OUTPOST_API_PROBE (tests/tools/api_probe) is not set")


def write_config(tmp_path, sim, base_url=None, http=None, tls=None, report=None):
    config = {"base_url": base_url or sim.url, "state_dir": str(tmp_path / "state"),
              "http": {"max_retry_wait": "20s", **(http or {})},
              "report": {"page_size": 50, **(report or {})}}
    if sim.ca_file:
        config["tls"] = {"ca_file": sim.ca_file, **(tls or {})}
    path = tmp_path / "outpost.json"
    path.write_text(json.dumps(config))
    return str(path)


def probe(config_path, *args, key=API_KEY, verbose=1, timeout=60):
    env = dict(os.environ, OUTPOST_API_KEY=key)
    env.pop("OUTPOST_CONFIG", None)
    started = time.monotonic()
    done = subprocess.run([PROBE, "--config", config_path, "--verbose", str(verbose), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)
    elapsed = time.monotonic() - started
    try:
        result = json.loads(done.stdout)
    except ValueError:
        pytest.fail(f"api_probe printed no JSON (exit {done.returncode}): {done.stdout!r} {done.stderr[-2000:]}")
    assert key not in done.stderr and key not in done.stdout, "the API key leaked into the output"
    return done.returncode, result, done.stderr, elapsed


def statuses(sim, route=None):
    return [e["status"] for e in sim.log()["requests"] if route is None or e["route"] == route]


# ---- tokens ---------------------------------------------------------------------------

@pytest.mark.sim_options(token_lifetime=2, rate_limit=6, rate_window=1)
def test_run_outliving_token_lifetime_renews_without_401(sim_tls, tmp_path):
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, elapsed = probe(cfg, "burst", "24", "--route", "mixed")
    assert rc == 0, err
    assert out["ok"] == 24
    assert elapsed >= 3, "the rate window should have stretched the run past the token lifetime"
    summary = sim_tls.log()["summary"]
    assert summary["tokens_issued"] >= 2
    assert 401 not in statuses(sim_tls)
    assert out["stats"]["token_exchanges"] == summary["tokens_issued"]


def test_expired_token_mid_run_is_renewed_once(sim_tls, tmp_path):
    sim_tls.fault("details", "expire_token", after=3)
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, "burst", "10", "--route", "details", verbose=2)
    assert rc == 0, err
    log = statuses(sim_tls)
    assert log.count(401) >= 1
    assert sim_tls.log()["summary"]["tokens_issued"] == 2
    assert out["stats"]["token_exchanges"] == 2
    assert "renewing it once" in err or "renewing the access token" in err


def test_forbidden_key_exits_3(sim_tls, tmp_path):
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, "list-incidents", key="sim-forbidden-key")
    assert rc == 3
    assert out["error"]["code"] == "FORBIDDEN"
    assert "403" in out["error"]["message"] and "incidents/list" in out["error"]["message"]
    assert statuses(sim_tls, "incidents") == [403]


def test_unknown_key_exits_3_and_is_not_echoed(sim_tls, tmp_path):
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, "list-incidents", key="not-a-key-123")
    assert rc == 3
    assert out["error"]["code"] == "AUTH"
    assert "API key" in out["error"]["message"]
    assert "not-a-key-123" not in err + json.dumps(out)


# ---- retries ----------------------------------------------------------------------------

def test_429_with_retry_after_is_honoured(sim_tls, tmp_path):
    sim_tls.fault("details", "status", status=429, retry_after=2)
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, elapsed = probe(cfg, "details", "some-event")
    assert rc == 0, err
    assert elapsed >= 2
    assert out["stats"]["responses_429"] == 1 and out["stats"]["retries"] == 1
    times = [e["start"] for e in sim_tls.log()["requests"] if e["route"] == "details"]
    assert len(times) == 2 and times[1] - times[0] >= 1.9


def test_5xx_and_resets_are_survived(sim_tls, tmp_path):
    # Page 1: 503 then 502; page 2: connection reset; page 3: truncated body.
    sim_tls.fault("incidents", "status", status=503, count=1)
    sim_tls.fault("incidents", "status", status=502, after=1, count=1)
    sim_tls.fault("incidents", "reset", after=3, count=1)
    sim_tls.fault("incidents", "truncate", after=5, count=1)
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 0, err
    assert out["incidents"] == 200 and len(set(out["ids"])) == 200
    assert out["stats"]["retries"] == 4
    assert statuses(sim_tls, "incidents")[:3] == [503, 502, 200]


def test_server_that_keeps_failing_exits_75_after_max_attempts(sim_tls, tmp_path):
    # A wait budget the backoff cannot use up in 3 retries (ceilings 0.5, 1
    # and 2 s), so that max_attempts alone ends the run.
    sim_tls.fault("incidents", "status", status=503, count=-1)
    cfg = write_config(tmp_path, sim_tls, http={"max_attempts": 4, "max_retry_wait": "60s"})
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 75
    assert out["error"]["code"] == "TEMPORARY"
    assert "503" in out["error"]["message"] and "try again later" in out["error"]["message"]
    assert "gave up after 4 attempts" in out["error"]["message"]
    assert statuses(sim_tls, "incidents") == [503] * 4
    assert out["stats"]["retries"] == 3
    assert out["stats"]["retry_wait_longest_ms"] <= 2000, "a wait longer than the backoff's ceiling was planned"


def test_server_that_keeps_failing_exits_75_within_the_wait_budget(sim_tls, tmp_path):
    # Attempts to spare: http.max_retry_wait (1 s) is what ends the run.
    sim_tls.fault("incidents", "status", status=503, count=-1)
    cfg = write_config(tmp_path, sim_tls, http={"max_attempts": 10, "max_retry_wait": "1s"})
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 75
    assert "(http.max_retry_wait)" in out["error"]["message"]
    assert out["stats"]["retry_wait_most_ms"] <= 1000, "the client planned more waiting than http.max_retry_wait"
    attempts = len(statuses(sim_tls, "incidents"))
    assert 2 <= attempts < 10 and out["stats"]["retries"] == attempts - 1


def test_retry_after_longer_than_the_run_can_wait_is_reported(sim_tls, tmp_path):
    sim_tls.fault("incidents", "status", status=503, retry_after=7200)
    cfg = write_config(tmp_path, sim_tls, http={"max_retry_wait": "30s"})
    before = time.time()
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 75
    # Given up at once: one request, no retry, no wait planned.
    assert statuses(sim_tls, "incidents") == [503]
    assert out["stats"]["retries"] == 0 and out["stats"]["retry_wait_longest_ms"] == 0
    until = out["stats"]["retry_after_until_ms"] / 1000
    assert before + 7190 <= until <= time.time() + 7200
    assert "Retry-After" in out["error"]["message"]


# ---- pacing -------------------------------------------------------------------------------

@pytest.mark.sim_options(rate_limit=20, rate_window=2, latency_ms=50)
def test_burst_paced_no_429_and_at_most_5_in_flight(sim_tls, tmp_path):
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, elapsed = probe(cfg, "burst", "100", "--route", "details")
    assert rc == 0, err
    summary = sim_tls.log()["summary"]
    assert summary["count_429"] == 0
    assert summary["max_concurrency"]["details"] <= 5
    assert summary["max_admitted"]["details"] == 5, "concurrency should be used to reach the rate"
    assert out["ok"] == 100 and out["stats"]["responses_429"] == 0
    # The simulator counts each key's requests in fixed windows and answers
    # 429 past the limit: no 429 means no window got more than 20. Each
    # request was sent once, in order, none retried.
    details = [e for e in sim_tls.log()["requests"] if e["route"] == "details"]
    assert [e["status"] for e in details] == [200] * 100
    assert out["stats"]["retries"] == 0
    assert out["stats"]["api_calls"] == 100 + out["stats"]["token_exchanges"]
    connections = {e["connection"] for e in sim_tls.log()["requests"]}
    assert len(connections) <= 7, "connections should be kept alive and reused"
    # 100 requests at 20 per 2 s take at least five windows, four of them
    # waited for (a lower bound: a slow machine only adds to it). How close
    # to that the run comes is scripts/bench-api's figure, not a test's.
    assert elapsed >= 8


@pytest.mark.sim_options(rate_limit=30, rate_window=2, latency_ms=50)
def test_mixed_endpoints_paced(sim_tls, tmp_path):
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, "burst", "90", "--route", "mixed")
    assert rc == 0, err
    summary = sim_tls.log()["summary"]
    assert summary["count_429"] == 0
    assert max(summary["max_concurrency"].values()) <= 5


@pytest.mark.sim_options(rate_limit=10, rate_window=2, no_rate_headers=True)
def test_contract_pacing_without_headers(sim_tls, tmp_path):
    # No rate headers: the configured contract (here 10 per 2 s, as 300 per
    # minute would burst too much) is all outpost knows.
    cfg = write_config(tmp_path, sim_tls, http={"rate_limit_per_minute": 300})
    rc, out, err, _ = probe(cfg, "burst", "12", "--route", "details")
    # 300/min allows 12 at once in a fresh minute: the server's 10 per 2 s
    # says 429 to two, which are retried after Retry-After.
    assert rc == 0, err
    assert out["ok"] == 12


# ---- TLS and URLs ----------------------------------------------------------------------------

def test_unknown_ca_refused(sim_tls, tmp_path):
    other_ca = "/etc/ssl/certs/ca-certificates.crt"
    if not os.path.exists(other_ca):
        pytest.skip("no system CA bundle")
    cfg = write_config(tmp_path, sim_tls, tls={"ca_file": other_ca})
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 1
    assert out["error"]["code"] == "TLS"
    assert out["stats"]["api_calls"] == 1, "a TLS failure is not retried"
    assert all(status == 0 for status in statuses(sim_tls)), "no request got through"
    assert "certificate" in out["error"]["message"]


def spki_pin(pem_path):
    der = subprocess.run(["openssl", "x509", "-in", pem_path, "-pubkey", "-noout"], capture_output=True,
                         check=True).stdout
    spki = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=der, capture_output=True,
                          check=True).stdout
    return "sha256//" + base64.b64encode(hashlib.sha256(spki).digest()).decode()


def test_pinned_public_key(sim_tls, tmp_path):
    wrong = "sha256//" + base64.b64encode(b"\0" * 32).decode()
    cfg = write_config(tmp_path, sim_tls, tls={"pinned_public_key": wrong})
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 1 and out["error"]["code"] == "TLS"
    assert out["stats"]["api_calls"] == 1
    server_pem = os.path.join(os.path.dirname(sim_tls.ca_file), "server.pem")
    if not os.path.exists(server_pem):
        pytest.skip("simulator keeps no server.pem")
    cfg = write_config(tmp_path, sim_tls, tls={"pinned_public_key": spki_pin(server_pem)})
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 0, err


def test_pinned_public_key_file(sim_tls, tmp_path):
    """A key file is read once, through the handle it is judged by, and pinned by its SHA-256: PEM and DER
    alike; another key's file is a TLS failure, a key file others may write is refused before any call."""
    server_pem = os.path.join(os.path.dirname(sim_tls.ca_file), "server.pem")
    if not os.path.exists(server_pem):
        pytest.skip("simulator keeps no server.pem")
    pem = subprocess.run(["openssl", "x509", "-in", server_pem, "-pubkey", "-noout"], capture_output=True,
                         check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=pem, capture_output=True,
                         check=True).stdout
    (tmp_path / "server.pub.pem").write_bytes(pem)
    (tmp_path / "server.pub.der").write_bytes(der)
    other = subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
                           capture_output=True, check=True).stdout
    other_pub = subprocess.run(["openssl", "pkey", "-pubout"], input=other, capture_output=True, check=True).stdout
    (tmp_path / "other.pub.pem").write_bytes(other_pub)
    for name in ("server.pub.pem", "server.pub.der"):
        cfg = write_config(tmp_path, sim_tls, tls={"pinned_public_key": str(tmp_path / name)})
        rc, out, err, _ = probe(cfg, "list-incidents")
        assert rc == 0, (name, err)
    cfg = write_config(tmp_path, sim_tls, tls={"pinned_public_key": str(tmp_path / "other.pub.pem")})
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 1 and out["error"]["code"] == "TLS"
    loose = tmp_path / "server.pub.pem"
    loose.chmod(0o666)
    cfg = write_config(tmp_path, sim_tls, tls={"pinned_public_key": str(loose)})
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 2 and out["error"]["code"] == "CONFIG"
    assert "tls.pinned_public_key" in out["error"]["message"]
    assert out["stats"]["api_calls"] == 0


def test_plain_http_to_non_loopback_refused(sim_tls, tmp_path):
    cfg = write_config(tmp_path, sim_tls)
    # --base-url bypasses the configuration loader's own check: the client refuses too.
    rc, out, err, _ = probe(cfg, "--base-url", "http://tenant.example.com", "list-incidents")
    assert rc == 2
    assert out["error"]["code"] == "CONFIG"
    assert "http://" in out["error"]["message"]
    assert out["stats"]["api_calls"] == 0


def test_public_prefix_and_trailing_slash(sim_tls, tmp_path):
    cfg = write_config(tmp_path, sim_tls, base_url=sim_tls.url + "/public/")
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 0, err
    paths = [e["path"] for e in sim_tls.log()["requests"]]
    assert paths and all(p.startswith("/public/v2/") for p in paths)


# ---- malformed answers --------------------------------------------------------------------------

@pytest.mark.parametrize("route,kind,params,args,expected", [
    ("incidents", "malformed_json", {}, ["list-incidents"], "incidents/list: the answer is not valid JSON"),
    ("incidents", "html_200", {}, ["list-incidents"], "incidents/list: the answer is not valid JSON"),
    ("incidents", "wrong_types", {"variant": "resources_object"}, ["list-incidents"],
     "incidents/list: field `resources` is not an array"),
    ("incidents", "wrong_types", {"variant": "size_string"}, ["list-incidents"],
     "incidents/list: field `size` is not an integer"),
    ("incidents", "wrong_types", {"variant": "next_id_number"}, ["list-incidents"],
     "incidents/list: field `page_response.next_id` is not a string"),
    ("incidents", "wrong_types", {"variant": "risk_score_string"}, ["list-incidents"],
     "incidents/list: resources[0].risk_score is not a number"),
    ("incidents", "wrong_types", {"variant": "lineage_id_string"}, ["list-incidents"],
     "incidents/list: resources[0].event_lineage_id is not an object"),
    ("details", "wrong_types", {"variant": "errors_object"}, ["details", "x"],
     "event-details: field `errors` is not an array"),
    ("token", "wrong_types", {"variant": "access_token_number"}, ["list-incidents"],
     "token exchange: field `access_token` is not a string"),
])
def test_malformed_answers_give_clean_errors(sim_tls, tmp_path, route, kind, params, args, expected):
    sim_tls.fault(route, kind, **params)
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, *args)
    assert rc == 1
    assert out["error"]["code"] == "PROTOCOL"
    assert expected in out["error"]["message"]
    assert out["stats"]["retries"] == 0


def test_mistyped_lineage_and_event_fields(sim_tls, tmp_path):
    data = sim_tls.dataset()
    chain = next(i["hidden"]["chain"] for i in data["incidents"] if i["hidden"]["traceable"])
    sim_tls.fault("lineage", "wrong_types", variant="ids_numbers")
    sim_tls.fault("details", "wrong_types", variant="event_fields")
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, "lineage", chain[0], chain[-1])
    assert rc == 1 and "event-lineage: resources[0] is not" in out["error"]["message"]
    rc, out, err, _ = probe(cfg, "details", chain[0])
    assert rc == 1 and "event-details: resources[0].action.blocked is not a boolean" in out["error"]["message"]


def test_oversized_answer_is_cut(sim_tls, tmp_path):
    cfg = write_config(tmp_path, sim_tls, http={"max_response_bytes": 2048})
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 1
    assert "incidents/list: response larger than 2048 bytes" in out["error"]["message"]


def test_repeated_page_token_stops(sim_tls, tmp_path):
    sim_tls.fault("incidents", "repeat_next_id", count=-1)
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, "list-incidents")
    assert rc == 1
    assert "repeated the page token" in out["error"]["message"]
    assert len(statuses(sim_tls, "incidents")) <= 3


def test_lineage_and_details_read_the_dataset(sim_tls, tmp_path):
    data = sim_tls.dataset()
    chain = next(i["hidden"]["chain"] for i in data["incidents"] if i["hidden"]["traceable"])
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, "lineage", chain[0], chain[-1])
    assert rc == 0, err
    assert out["ids"] == chain
    rc, out, err, _ = probe(cfg, "details", "--get", *chain)
    assert rc == 0, err
    missing = set(data["missing_event_ids"])
    assert [e["id"] for e in out["events"]] == [c for c in chain if c not in missing]


# ---- installer -------------------------------------------------------------------------------------

@pytest.mark.sim_options(redirect=True)
def test_installer_redirect_keeps_authorization_home(sim_tls, tmp_path):
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, "get-installer-headers")
    assert rc == 0, err
    assert out["headers"]["installer_version"] == "26.01.03.24329-0de7ab+"
    assert out["headers"]["redirects"] == 1
    assert "?" not in out["headers"]["url"]
    assert out["body_bytes"] == 0 and out["stopped"]
    rc, out, err, _ = probe(cfg, "get-installer")
    assert rc == 0, err
    assert out["body_bytes"] == sim_tls.installer()["size"]
    entries = sim_tls.log()["requests"]
    assert all(e["authorization"] for e in entries if e["listener"] == "api" and e["route"] == "installer")
    storage = [e for e in entries if e["listener"] == "storage"]
    assert storage and not any(e["authorization"] for e in storage)


def test_installer_range_and_headers(sim_tls, tmp_path):
    info = sim_tls.installer()
    cfg = write_config(tmp_path, sim_tls)
    rc, out, err, _ = probe(cfg, "get-installer", "--range", "bytes=1000-", "--if-range", info["etag"])
    assert rc == 0, err
    h = out["headers"]
    assert h["status"] == 206 and h["etag"] == info["etag"]
    assert h["content_range"] == f"bytes 1000-{info['size'] - 1}/{info['size']}"
    assert out["body_bytes"] == info["size"] - 1000
    assert "SensorSetup.exe" in h["content_disposition"]


# ---- benchmark figure -------------------------------------------------------------------------------

@pytest.mark.sim_options(incidents=150, rate_limit=40, rate_window=4, latency_ms=100)
def test_report_pattern_paced_without_429(sim_tls, tmp_path):
    # The benchmark's request pattern (list, lineage, details) under a rate
    # window: every request sent once, none refused. Its speed against the
    # limit is scripts/bench-api's figure.
    cfg = write_config(tmp_path, sim_tls, report={"page_size": 100, "details_batch": 50})
    rc, out, err, _ = probe(cfg, "bench-report", verbose=0, timeout=80)
    assert rc == 0, err
    summary = sim_tls.log()["summary"]
    served = summary["total"] - summary["by_route"].get("token", 0)
    assert summary["count_429"] == 0
    assert served == out["expected_requests"]
    assert out["stats"]["retries"] == 0
    assert max(summary["max_concurrency"].values()) <= 5


# ---- proxy ---------------------------------------------------------------------------------------

class ConnectProxy:
    """A minimal HTTPS (CONNECT) proxy on loopback that demands Basic proxy
    authentication and records the targets it tunnelled to."""

    def __init__(self, user="proxyuser", password="proxypass"):
        import socket
        import threading
        self.expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.targets, self.challenged = [], 0
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        self.threading = threading
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        try:
            self._handle(client)
        except OSError:
            pass  # a peer hung up: nothing to report

    def _handle(self, client):
        import socket
        with client:
            while True:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = client.recv(4096)
                    if not chunk:
                        return
                    head += chunk
                lines = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in lines[1:] if ":" in h)}
                if method != "CONNECT":
                    client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                    return
                if headers.get("proxy-authorization") != self.expected:
                    self.challenged += 1
                    client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                                   b"Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n")
                    continue
                self.targets.append(target)
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection(("127.0.0.1", int(port)))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self._pipe(client, upstream)
                return

    def _pipe(self, a, b):
        import select
        with b:
            while True:
                ready, _, _ = select.select([a, b], [], [], 30)
                if not ready:
                    return
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)

    def close(self):
        self.server.close()


def test_proxy_from_config_with_authentication(sim_tls, tmp_path):
    proxy = ConnectProxy()
    try:
        cfg = write_config(tmp_path, sim_tls)
        doc = json.loads(open(cfg).read())
        doc["proxy"] = f"http://proxyuser:proxypass@127.0.0.1:{proxy.port}"
        open(cfg, "w").write(json.dumps(doc))
        rc, out, err, _ = probe(cfg, "list-incidents")
        assert rc == 0, err
        assert proxy.targets and all(t.endswith(f":{sim_tls.port}") for t in proxy.targets)
        assert proxy.challenged >= 1, "the proxy's 407 challenge should have been answered"
        assert "proxypass" not in err
    finally:
        proxy.close()


def test_proxy_from_environment(sim_tls, tmp_path, monkeypatch):
    proxy = ConnectProxy()
    try:
        cfg = write_config(tmp_path, sim_tls)
        monkeypatch.setenv("HTTPS_PROXY", f"http://proxyuser:proxypass@127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        rc, out, err, _ = probe(cfg, "list-incidents")
        assert rc == 0, err
        assert proxy.targets
        count = len(proxy.targets)
        monkeypatch.setenv("NO_PROXY", "localhost")
        rc, out, err, _ = probe(cfg, "list-incidents")
        assert rc == 0, err
        assert len(proxy.targets) == count, "NO_PROXY should bypass the proxy"
    finally:
        proxy.close()
