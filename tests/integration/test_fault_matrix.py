"""The fault matrix (issue 7): every fault the simulator can inject, against
`check`, `update`, `report` and `run`, through the real binary.

Each case runs the command once with the fault in place and checks what a
user (or the scheduler) sees: the documented exit code (PRODUCT.md section 1:
75 for 429/5xx/network failures after the retries, 3 for 403 or a 401 that
survives one renewal, 1 for malformed JSON, wrong types, an HTML page where
JSON was due, 4 for an installer that verification rejects, 0 (10 for a
`check` that finds an update) when the retries absorb a transient fault),
at most one `outpost:` line on stderr per failed part, naming what failed,
and no secret anywhere. Then the fault is cleared and the same command runs
again on the same state directory: it must succeed and leave the state as an
uninterrupted run would (every incident of the data set appended exactly
once, same content; staging/ holding only installers whose bytes match
their manifests; status.json and state.json parse).

The matrix is printed as a table (pytest -s) and written to
$OUTPOST_FAULT_MATRIX_OUT or <this file's build tree>/fault-matrix.txt when
the test binary lives in a build tree.

Fast by construction: one simulator per module (faults and log cleared
between cases), 12 incidents, http.max_attempts 2 and http.max_retry_wait 1s,
stalls of one second.

The proxy rows (issue 13) run the network faults again through a real squid
on loopback with Basic proxy authentication (squid_helper.py; outpost
tunnels to the HTTPS simulator with CONNECT): through a proxy every command
must behave as without one, same exit code, same clean rerun, and the
proxy password never shows. They are listed as "<command> via proxy".
"""
from __future__ import annotations

import calendar
import json
import os
import time
from pathlib import Path

import pytest

from outpost_config import UNSIGNED, write_config as write_outpost_config
from outpost_run import OUTPOST, check_staging, error_lines, jsonl_lines, outpost
from simctl import Sim
from squid_helper import Squid, require_squid

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")

API_KEY = "sim-api-key"
SIM_VERSION = "26.01.03.24329-0de7ab+"
INSTALLED = "26.01.03.24000"
INCIDENTS = 12

# What success looks like per command (check finds an update: 10).
CLEAN_EXIT = {"check": 10, "update": 0, "report": 0, "run": 0}
ROUTES = {"check": ("token", "installer"), "update": ("token", "installer"),
          "report": ("token", "incidents", "lineage", "details"),
          "run": ("token", "installer", "incidents", "lineage", "details")}

RESULTS: list[tuple] = []
PROXY_AUTH = ("matrix-proxy-user", "Matrix-proxy-pw-51c9")


# ---- the cases --------------------------------------------------------------------------

def case(command, route, kind, expected, count=1, after=0, note="", sha=False, **params):
    ident = f"{command}-{route}-{kind}" + "".join(f"-{k}{v}" for k, v in params.items()) + \
            ("" if count == 1 else f"-x{'all' if count < 0 else count}") + (f"-after{after}" if after else "")
    return pytest.param(command, [dict(route=route, kind=kind, count=count, after=after, **params)], expected,
                        sha, note, id=ident)


def retryable(command, route, ok, statuses=(429, 503), persistent=True):
    """The retryable faults: absorbed once; exit 75 when they never stop."""
    out = []
    for status in statuses:
        extra = {"retry_after": 1} if status == 429 else {}
        out.append(case(command, route, "status", ok, status=status, **extra))
        if persistent:
            out.append(case(command, route, "status", 75, count=-1, status=status, **extra))
    out.append(case(command, route, "reset", ok, bytes=-1, note="before any answer"))
    if persistent:
        out.append(case(command, route, "reset", 75, count=-1, bytes=-1))
    return out


CASES = []
for cmd in ("check", "update"):
    ok = CLEAN_EXIT[cmd]
    CASES += retryable(cmd, "installer", ok)
    CASES += [
        case(cmd, "installer", "reset", ok, bytes=0, note="cut right after the headers"),
        case(cmd, "installer", "html_200", 4, count=-1, note="no X-Installer-Version"),
        case(cmd, "installer", "expire_token", ok, note="one renewal"),
        case(cmd, "installer", "expire_token", 3, count=-1, note="401 after one renewal"),
        case(cmd, "installer", "forbidden", 3),
        case(cmd, "installer", "status", 1, status=404),
        case(cmd, "token", "status", 75, count=-1, status=503),
        case(cmd, "token", "forbidden", 3),
        case(cmd, "token", "malformed_json", 1),
    ]
CASES += [
    case("update", "installer", "status", 0, status=500),
    case("update", "installer", "status", 0, status=502),
    case("update", "installer", "status", 75, count=-1, status=500),
    case("update", "installer", "status", 3, count=-1, status=401, note="401 after one renewal"),
    case("update", "token", "html_200", 1),
    case("update", "token", "wrong_types", 1, variant="access_token_number"),
    case("update", "token", "status", 0, status=502),
    case("update", "token", "reset", 0, bytes=-1),
    case("update", "installer", "truncate", 0, bytes=100000, note="resumed in the same run"),
    case("update", "installer", "truncate", 75, count=-1, bytes=20000, note="3 attempts, then the next run"),
    case("update", "installer", "reset", 75, count=2, bytes=0, note="no progress twice"),
    case("update", "installer", "reset", 0, bytes=150000, note="resumed in the same run"),
    case("update", "installer", "stall", 0, bytes=100000, seconds=1),
    case("update", "installer", "wrong_length", 0, extra=4096),
    case("update", "installer", "wrong_length", 75, count=-1, extra=4096),
    case("update", "installer", "corrupt", 4, sha=True, note="expected_sha256 catches it"),
    case("check", "installer", "corrupt", 10, sha=True, note="check reads no body"),
]
for route in ("incidents", "lineage", "details"):
    CASES += retryable("report", route, 0, statuses=(429, 503) if route == "incidents" else (503,))
    CASES += [
        case("report", route, "truncate", 0),
        case("report", route, "truncate", 75, count=-1),
        case("report", route, "wrong_length", 0, extra=64),
        case("report", route, "malformed_json", 1),
        case("report", route, "expire_token", 0, note="one renewal"),
        case("report", route, "forbidden", 3),
    ]
CASES += [
    case("report", "incidents", "stall", 0, seconds=1),
    case("report", "incidents", "html_200", 1),
    case("report", "details", "html_200", 1),
    case("report", "incidents", "expire_token", 3, count=-1),
    case("report", "details", "expire_token", 3, count=-1),
    case("report", "details", "status", 0, status=429, retry_after=1),
    case("report", "details", "status", 0, status=500),
    case("report", "lineage", "status", 0, status=502),
    case("report", "token", "status", 75, count=-1, status=503),
    case("report", "token", "forbidden", 3),
    case("report", "token", "malformed_json", 1),
    case("report", "token", "wrong_types", 1, variant="access_token_number"),
    case("report", "incidents", "repeat_next_id", 1, count=-1, note="paging that never ends"),
    case("report", "incidents", "status", 1, status=400),
    case("report", "lineage", "status", 1, status=404),
    case("report", "details", "status", 1, status=400),
]
# (every variant's message is checked through api_probe in test_api_client.py)
for variant in ("resources_object", "risk_score_string", "lineage_id_string", "next_id_number"):
    CASES.append(case("report", "incidents", "wrong_types", 1, variant=variant))
CASES.append(case("report", "lineage", "wrong_types", 1, variant="ids_numbers"))
CASES.append(case("report", "details", "wrong_types", 1, variant="event_fields"))


def run_case(ident, faults, expected, sha=False, note=""):
    return pytest.param("run", faults, expected, sha, note, id=ident)


# `run` meets several outcomes: the most serious wins, in the order 4, 3, 1, 75, 0.
CASES += [
    run_case("run-installer503-report-ok", [dict(route="installer", kind="status", status=503, count=-1)], 75),
    run_case("run-installer-ok-incidents503", [dict(route="incidents", kind="status", status=503, count=-1)], 75),
    run_case("run-corrupt-and-incidents503", [dict(route="installer", kind="corrupt", count=1),
                                              dict(route="incidents", kind="status", status=503, count=-1)], 4,
             True),
    run_case("run-corrupt-and-forbidden", [dict(route="installer", kind="corrupt", count=1),
                                           dict(route="incidents", kind="forbidden", count=1)], 4, True),
    run_case("run-forbidden-and-malformed", [dict(route="installer", kind="forbidden", count=1),
                                             dict(route="incidents", kind="malformed_json", count=1)], 3),
    run_case("run-installer503-and-malformed", [dict(route="installer", kind="status", status=503, count=-1),
                                                dict(route="details", kind="malformed_json", count=1)], 1),
    run_case("run-transients-absorbed", [dict(route="installer", kind="reset", bytes=120000, count=1),
                                         dict(route="incidents", kind="status", status=502, count=1),
                                         dict(route="lineage", kind="reset", bytes=-1, count=1),
                                         dict(route="details", kind="status", status=429, retry_after=1,
                                              count=1)], 0),
    run_case("run-token503", [dict(route="token", kind="status", status=503, count=-1)], 75),
]


# The network faults again, through squid (test_fault_through_proxy).
PROXY_CASES = [
    case("check", "installer", "reset", 10, bytes=0, note="cut right after the headers"),
    case("check", "installer", "status", 10, status=503),
    case("check", "installer", "html_200", 4, count=-1, note="no X-Installer-Version"),
    case("check", "token", "reset", 10, bytes=-1),
    case("update", "installer", "reset", 0, bytes=150000, note="resumed in the same run"),
    case("update", "installer", "reset", 0, bytes=-1, note="before any answer"),
    case("update", "installer", "reset", 75, count=-1, bytes=-1),
    case("update", "installer", "reset", 75, count=2, bytes=0, note="no progress twice"),
    case("update", "installer", "truncate", 0, bytes=100000, note="resumed in the same run"),
    case("update", "installer", "truncate", 75, count=-1, bytes=20000, note="3 attempts, then the next run"),
    case("update", "installer", "stall", 0, bytes=100000, seconds=1),
    case("update", "installer", "wrong_length", 0, extra=4096),
    case("update", "installer", "status", 0, status=502),
    case("update", "installer", "status", 0, status=429, retry_after=1),
    case("update", "installer", "expire_token", 0, note="one renewal"),
    case("update", "installer", "forbidden", 3),
    case("update", "installer", "corrupt", 4, sha=True, note="expected_sha256 catches it"),
    case("update", "token", "reset", 0, bytes=-1),
    case("report", "incidents", "truncate", 0),
    case("report", "incidents", "status", 75, count=-1, status=503),
    case("report", "lineage", "status", 0, status=503),
    case("report", "details", "reset", 0, bytes=-1),
    case("report", "details", "expire_token", 0, note="one renewal"),
    run_case("run-transients-absorbed", [dict(route="installer", kind="reset", bytes=120000, count=1),
                                         dict(route="incidents", kind="status", status=502, count=1),
                                         dict(route="lineage", kind="reset", bytes=-1, count=1),
                                         dict(route="details", kind="status", status=429, retry_after=1,
                                              count=1)], 0),
    run_case("run-installer503-report-ok", [dict(route="installer", kind="status", status=503, count=-1)], 75),
]


# ---- fixtures and helpers ---------------------------------------------------------------

@pytest.fixture(scope="module")
def matrix_sim():
    with Sim.start(tls=True, incidents=INCIDENTS, rate_limit=0, seed=7) as sim:
        yield sim
    write_table()


@pytest.fixture(scope="module")
def matrix_proxy():
    require_squid()
    with Squid.start(auth=PROXY_AUTH) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def dataset_ids(matrix_sim):
    return {r["incident"]["id"] for r in matrix_sim.dataset()["incidents"]}


def write_config(tmp_path: Path, sim: Sim, expected_sha=None, proxy: Squid | None = None) -> tuple[Path, Path]:
    state = tmp_path / "state"
    key_file = tmp_path / "api_key"
    key_file.write_text(API_KEY + "\n")
    key_file.chmod(0o600)
    sections = {
        "api_key_file": str(key_file),
        "http": {"max_attempts": 2, "max_retry_wait": "1s", "low_speed_timeout": "5s"},
        "installer": {"installed_version": INSTALLED, "verify": {**UNSIGNED, "expected_sha256": expected_sha}},
        "report": {"page_size": 5, "details_batch": 10, "initial_lookback": "24h"},
        "schedule": {"jitter": "0s"},
    }
    if proxy:
        sections["proxy"] = proxy.url_with_credentials
    return write_outpost_config(tmp_path, sim.url, sim.ca_file, state=state, **sections)


def assert_staging_verified(state: Path):
    """staging/ holds only complete version directories whose installer
    matches its manifest, and current names one of them."""
    check_staging(state, killed=False)


def assert_documents_parse(state: Path):
    for name in ("status.json", "state.json"):
        if (state / name).exists():
            json.loads((state / name).read_text(encoding="utf-8"))


def honour_retry_after(state: Path):
    """A Retry-After the run could not wait for is recorded and honoured by
    the next run (exit 75 before it); wait it out (the matrix uses 1 s)."""
    try:
        until = json.loads((state / "state.json").read_text())["run"]["retry_after_until"]
    except (OSError, KeyError, ValueError, TypeError):
        return
    wait = calendar.timegm(time.strptime(until, "%Y-%m-%dT%H:%M:%SZ")) - time.time()
    assert wait < 5, f"a Retry-After of 1 s was recorded as {until}"
    if wait > -1:
        time.sleep(wait + 1.05)


def write_table():
    if not RESULTS:
        return
    header = ("command", "faults", "exit", "expected", "seconds", "clean rerun", "message")
    rows = [header] + [tuple(str(c) for c in r) for r in RESULTS]
    widths = [max(len(r[i]) for r in rows[:]) if i < 6 else 0 for i in range(len(header))]
    lines = []
    for r in rows:
        lines.append("  ".join(c.ljust(widths[i]) if i < 6 else c[:140] for i, c in enumerate(r)).rstrip())
    table = "\n".join(lines) + "\n"
    print("\n[fault matrix]\n" + table)
    target = os.environ.get("OUTPOST_FAULT_MATRIX_OUT")
    if not target:
        build = Path(OUTPOST).resolve().parent
        if (build / "CMakeCache.txt").exists():
            target = str(build / "fault-matrix.txt")
    if target:
        Path(target).write_text(table)


# ---- the test ---------------------------------------------------------------------------

@pytest.mark.parametrize("command,faults,expected,sha,note", CASES)
def test_fault(matrix_sim, dataset_ids, tmp_path, command, faults, expected, sha, note):
    check_case(matrix_sim, dataset_ids, tmp_path, command, faults, expected, sha)


@pytest.mark.parametrize("command,faults,expected,sha,note", PROXY_CASES)
def test_fault_through_proxy(matrix_sim, matrix_proxy, dataset_ids, tmp_path, command, faults, expected, sha, note):
    matrix_proxy.clear_log()
    check_case(matrix_sim, dataset_ids, tmp_path, command, faults, expected, sha, proxy=matrix_proxy)
    tunnels = matrix_proxy.wait_log(lambda log: any(e["method"] == "CONNECT" for e in log))
    assert any(e["method"] == "CONNECT" and e["url"] == f"localhost:{matrix_sim.port}" and
               e["user"] == PROXY_AUTH[0] for e in tunnels), f"outpost did not go through the proxy: {tunnels}"


def check_case(sim, dataset_ids, tmp_path, command, faults, expected, sha, proxy=None):
    sim.clear_faults()
    sim.clear_log()
    cfg, state = write_config(tmp_path, sim, expected_sha=sim.installer()["sha256"] if sha else None, proxy=proxy)
    for fault in faults:
        sim.fault(**fault)
    r = outpost(cfg, command, key=None, timeout=60)  # the key is in api_key_file
    lines = error_lines(r)
    described = "; ".join(f"{f['route']}:{f['kind']}" + "".join(
        f",{k}={v}" for k, v in f.items() if k not in ("route", "kind", "after")) for f in faults)

    plan = sim.faults()
    sim.clear_faults()
    honour_retry_after(state)
    clean = outpost(cfg, command, key=None, timeout=60)
    RESULTS.append((command + (" via proxy" if proxy else ""), described, r.returncode, expected,
                    f"{r.seconds:.1f}", clean.returncode, lines[0] if lines else ""))

    assert r.returncode == expected, f"exit {r.returncode}, expected {expected}: {r.stderr}"
    if expected in (0, 10):
        assert lines == [], r.stderr
    else:
        # one line per failed part (run: update and report may both fail)
        assert 1 <= len(lines) <= (2 if command == "run" else 1), r.stderr
        assert all(len(line) < 600 for line in lines), lines
    for secret in (API_KEY, PROXY_AUTH[1]):
        assert secret not in r.stderr + r.stdout + clean.stderr + clean.stdout
        for name in ("status.json", "state.json"):
            if (state / name).exists():
                assert secret not in (state / name).read_text(encoding="utf-8")
    unused = [f for f in plan if not f.get("applied")]
    assert not unused, f"a fault was never applied, the case tested nothing: {unused}"
    assert_documents_parse(state)
    assert_staging_verified(state)

    assert clean.returncode == CLEAN_EXIT[command], f"clean rerun: exit {clean.returncode}: {clean.stderr}"
    assert_documents_parse(state)
    assert_staging_verified(state)
    if command in ("update", "run"):
        assert (state / "staging" / "current").read_text().strip() == SIM_VERSION
        assert not any((state / "downloads").glob("*")) if (state / "downloads").exists() else True
    if command in ("report", "run"):
        ids = [json.loads(line)["id"] for line in jsonl_lines(state)]
        assert len(ids) == len(set(ids)), "an incident was appended twice"
        assert set(ids) == dataset_ids, f"missing {dataset_ids - set(ids)}"
        status = json.loads((state / "status.json").read_text())
        assert status["last_run"]["exit_code"] == 0 and status["last_run"]["result"] == "ok"
