"""The fleet simulation (issue 35, PRODUCT.md section 11) for scripts/bench --only fleet.

One simulated day (24 hourly runs, from a Tuesday 00:00 UTC) of FLEET machine
ids against one mirror that offers a new version to 10 % of the fleet
(publish.rollout_percent 10), the machines spread over five time zones, each
group with its own maintenance window (deploy.windows, GROUPS below).

Two halves, the same decisions:
- All FLEET ids: tests/tools/fleet_sim (C), which links the agent's
  mirror/rollout.c and installer/policy.c and makes, per id, the rollout
  judgement and, per run, the maintenance-window judgement `run` makes
  (policy_in_window, policy_next_window), with the packaged schedule: the
  Debian timer's fixed RandomizedDelaySec=10min for even ids, the Windows
  task's RandomDelay PT10M drawn again each run for odd ids, plus
  schedule.jitter (packaged default 0s; a second figure with "30m"). From its answers: manifest requests
  per minute (the busiest minute's share of the day's requests), installer
  downloads (eligible ids only) and deploy instants, each deploy checked
  against its window by this file's own reading of the window text and
  Python's zoneinfo (not policy.c).
- A sample of SAMPLE ids (eligible that deploy that day, eligible that wait,
  ineligible; from every group): the real binary, `outpost run` once for
  each of the day's 24 runs at the instant fleet_sim gave that run (libfaketime,
  an absolute FAKETIME, TZ of the group; schedule.jitter 0s in the
  configuration, the draw is in the instant), against nginx serving the
  published mirror. Per run, from nginx's log: manifest requests and
  installer bytes; from the deploy command (it leaves a file):
  which run deployed; from status.json: the deploy's time (checked against
  the window as above) and installer.deploy_waiting_until after the first
  run. Agreement: every sampled run matched fleet_sim's
  prediction (download run, deploy run, waiting_until) and nginx sent
  installer bytes only to eligible ids.

The day is the first Tuesday at least a day after the benchmark starts (the
manifest's issued_at must be before the faked clock, and it expires in 14
days): zone offsets (daylight saving time) follow that date.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from mirror_bench import BODY, INSTALLED, OFFERED, publish_mirror
from nginx_helper import start_nginx
from servers import free_port, stop_process
from sim import write_fake_installer

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROLLOUT_PERCENT = 10
INSTALLER_BYTES = 1024 * 1024
JITTER_S = 0  # schedule.jitter's packaged default (packaging/*/outpost.json set none)
JITTERED_S = 1800  # a second figure: schedule.jitter "30m"
HOURS = 24
# (time zone, deploy.windows entry): machine i is in group i mod 5.
GROUPS = [
    ("Europe/Berlin", "Mon-Fri 22:00-05:00"),
    ("America/New_York", "daily 02:00-04:00"),
    ("Asia/Tokyo", "Tue 12:00-14:00"),
    ("UTC", "Sat 01:00-06:00"),                   # no window that day: every deploy waits
    ("America/Los_Angeles", "Tue,Thu 09:30-10:00"),  # after every run of the hour: never inside
]
DAYS = {"Sun": 6, "Mon": 0, "Tue": 1, "Wed": 2, "Thu": 3, "Fri": 4, "Sat": 5}  # Python's weekday()


def faketime_lib() -> str:
    import glob

    return next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))), "")


def simulated_day(now: float) -> int:
    """00:00 UTC of the first Tuesday at least a day after now."""
    d = datetime.fromtimestamp(now, timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    d += timedelta(days=2)
    while d.weekday() != 1:
        d += timedelta(days=1)
    return int(d.timestamp())


def window_days(text: str) -> tuple[set, int, int]:
    """The weekdays (Python's numbering) a deploy.windows entry starts on and its
    start and end minutes: read here, independently of config.c."""
    days_text, span = text.rsplit(" ", 1)
    if days_text == "daily":
        days = set(range(7))
    else:
        days = set()
        for part in days_text.split(","):
            a, _, b = part.partition("-")
            lo, hi = DAYS[a], DAYS[b or a]
            days |= {d % 7 for d in range(lo, hi + (7 if hi < lo else 0) + 1)}
    start, end = (int(x[:2]) * 60 + int(x[3:]) for x in span.split("-"))
    return days, start, end


def inside_window(text: str, zone: str, utc_s: int) -> bool:
    """Whether the local wall clock at utc_s is inside the window (zoneinfo;
    no instant in this day is near a clock change)."""
    days, start, end = window_days(text)
    local = datetime.fromtimestamp(utc_s, ZoneInfo(zone))
    minute = local.hour * 60 + local.minute
    if start < end:
        return local.weekday() in days and start <= minute < end
    return (local.weekday() in days and minute >= start) or ((local.weekday() - 1) % 7 in days and minute < end)


def run_fleet_sim(tool: str, fleet: int, start: int, salt: str, jitter_s: int = JITTER_S) -> list[dict]:
    argv = [tool, "--machines", str(fleet), "--start", str(start), "--hours", str(HOURS), "--salt", salt,
            "--percent", str(ROLLOUT_PERCENT), "--jitter", str(jitter_s)]
    for zone, window in GROUPS:
        argv += ["--group", f"{zone}|{window}"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True)
    return [json.loads(line) for line in r.stdout.splitlines()]


def fleet_figures(machines: list[dict]) -> dict:
    per_minute: dict = {}
    per_hour_minute: dict = {}
    for m in machines:
        for t in m["runs"]:
            per_minute[t // 60] = per_minute.get(t // 60, 0) + 1
    total = sum(per_minute.values())
    busiest_minute, busiest = max(per_minute.items(), key=lambda kv: kv[1])
    for minute, n in per_minute.items():
        per_hour_minute[minute // 60] = max(per_hour_minute.get(minute // 60, 0), n)
    eligible = [m for m in machines if m["eligible"]]
    deploys = [m for m in eligible if m["deploy_run"] >= 0]
    outside = [m["id"] for m in deploys if not inside_window(m["window"], m["zone"], m["runs"][m["deploy_run"]])]
    return {
        "machines": len(machines), "manifest_requests": total, "busiest_minute_requests": busiest,
        "busiest_minute_utc": datetime.fromtimestamp(busiest_minute * 60, timezone.utc).strftime("%H:%M"),
        "busiest_minute_share_percent": round(100 * busiest / total, 3),
        # Within one hour's runs (each machine asks once an hour): the spread the delay gives.
        "busiest_minute_share_of_its_hour_percent": round(100 * busiest / len(machines), 2),
        "minutes_with_requests": len(per_minute),
        "eligible": len(eligible), "downloads": len(eligible),
        "installer_bytes_to_eligible": len(eligible) * INSTALLER_BYTES, "installer_bytes_to_ineligible": 0,
        "deploys": len(deploys), "deploys_outside_window": len(outside), "deploys_outside_window_ids": outside[:10],
        "deploys_waiting": len(eligible) - len(deploys),
        "deploys_by_group": {f"{z} {w}": sum(1 for m in deploys if m["zone"] == z) for z, w in GROUPS},
    }


def pick_sample(machines: list[dict], size: int) -> list[dict]:
    """About size ids: from every group, eligible ones that deploy that day,
    eligible ones that wait, and ineligible ones, the lowest ids first."""
    kinds = [lambda m: m["eligible"] and m["deploy_run"] >= 0,
             lambda m: m["eligible"] and m["deploy_run"] < 0,
             lambda m: not m["eligible"]]
    chosen: list = []
    while len(chosen) < size:
        before = len(chosen)
        for zone, _ in GROUPS:
            for kind in kinds:
                pick = next((m for m in machines if m["zone"] == zone and kind(m) and m not in chosen), None)
                if pick and len(chosen) < size:
                    chosen.append(pick)
        if len(chosen) == before:
            break
    return chosen


def utc_seconds(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())


def run_sample(outpost: str, work: str, url: str, public_pem: str, access: str, sample: list[dict],
               log) -> dict:
    lib = faketime_lib()
    if not lib:
        raise RuntimeError("libfaketime (Debian package faketime) is not installed")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("OUTPOST_")}
    mismatches: list = []
    runs = 0
    bytes_eligible = bytes_ineligible = manifest_requests = 0
    for m in sample:
        home = os.path.join(work, "sample", m["id"])
        os.makedirs(home)
        version_file, deployed = os.path.join(home, "installed-version"), os.path.join(home, "deployed")
        with open(version_file, "w") as f:
            f.write(INSTALLED + "\n")
        script = f"echo \"$1\" >> '{deployed}'; echo '{OFFERED}' > '{version_file}'"
        cfg = os.path.join(home, "outpost.json")
        with open(cfg, "w") as f:
            json.dump({"state_dir": os.path.join(home, "state"), "schedule": {"jitter": "0s"},
                       "installer": {"installed_version_file": version_file, "platform": "windows",
                                     "verify": {"require_signature": False, "trusted_ca_file": None}},
                       "deploy": {"enabled": True, "windows": [m["window"]],
                                  "command": ["/bin/sh", "-c", script, "sh", "{installer}"]},
                       "report": {"enabled": False},
                       "mirror": {"urls": [url], "public_keys": [public_pem], "machine_id": m["id"]}}, f)
        got = {"download_runs": [], "deploy_run": -1, "waiting_until": 0}
        for h, t in enumerate(m["runs"]):
            offset = os.path.getsize(access)
            env = dict(base_env, LD_PRELOAD=lib, FAKETIME=f"@{t}", FAKETIME_FMT="%s", FAKETIME_DONT_RESET="1",
                       TZ=m["zone"])
            r = subprocess.run([outpost, "-c", cfg, "run"], capture_output=True, text=True, timeout=120, env=env)
            runs += 1
            if r.returncode != 0:
                raise RuntimeError(f"{m['id']} run {h}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
            time.sleep(0.05)  # nginx writes its log line after the response
            with open(access) as f:
                f.seek(offset)
                entries = [json.loads(line) for line in f if line.strip()]
            manifest_requests += sum(1 for e in entries if e["path"].endswith("/manifest.json"))
            body = sum(e["bytes"] for e in entries if "/installers/" in e["path"])
            if body:
                got["download_runs"].append(h)
                if m["eligible"]:
                    bytes_eligible += body
                else:
                    bytes_ineligible += body
            if got["deploy_run"] < 0 and os.path.exists(deployed):
                got["deploy_run"] = h
                with open(os.path.join(home, "state", "status.json")) as f:
                    at = utc_seconds(json.load(f)["deploy"]["last_deploy"]["at"])
                if not inside_window(m["window"], m["zone"], at):
                    mismatches.append(f"{m['id']}: deployed at {at}, outside {m['window']} ({m['zone']})")
            if h == 0:
                with open(os.path.join(home, "state", "status.json")) as f:
                    until = json.load(f)["installer"]["deploy_waiting_until"]
                got["waiting_until"] = utc_seconds(until) if until else 0
        want = {"download_runs": [m["download_run"]] if m["download_run"] >= 0 else [],
                "deploy_run": m["deploy_run"], "waiting_until": m["waiting_until"] if m["deploy_run"] != 0 else 0}
        if got != want:
            mismatches.append(f"{m['id']}: real binary {got}, fleet_sim {want}")
        log(f"fleet sample {m['id']} ({m['zone']}, {'eligible' if m['eligible'] else 'not eligible'}): "
            f"{'agrees' if got == want else 'DIFFERS'}")
    return {"ids": len(sample), "runs": runs, "manifest_requests": manifest_requests,
            "agree": len(sample) - len({x.split(':')[0] for x in mismatches}), "mismatches": mismatches,
            "installer_bytes_to_eligible": bytes_eligible, "installer_bytes_to_ineligible": bytes_ineligible,
            "eligible_ids": sum(1 for m in sample if m["eligible"]),
            "deploying_ids": sum(1 for m in sample if m["deploy_run"] >= 0)}


def bench_fleet(outpost: str, tool: str, work: str, fleet: int, sample_size: int, log=print) -> dict:
    """Runs the benchmark; returns the measurements (see the module docstring)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    installer = os.path.join(work, "installer.exe")
    write_fake_installer(installer, 7, INSTALLER_BYTES)
    mirror, public_pem = publish_mirror(outpost, work, installer, rollout_percent=ROLLOUT_PERCENT)
    with open(os.path.join(mirror, "manifest.json")) as f:
        payload = json.loads(base64.b64decode(json.load(f)["payload"]))
    salt = payload["rollout"]["salt"] if isinstance(payload.get("rollout"), dict) else payload["rollout_salt"]
    start = simulated_day(time.time())
    started = time.monotonic()
    machines = run_fleet_sim(tool, fleet, start, salt)
    figures = fleet_figures(machines)
    figures["fleet_sim_s"] = round(time.monotonic() - started, 2)
    # The same fleet with schedule.jitter "30m" on top of the packaged delay (fleet_sim only).
    jittered = fleet_figures(run_fleet_sim(tool, fleet, start, salt, JITTERED_S))
    log(f"fleet: {fleet} ids, busiest minute {figures['busiest_minute_share_percent']} % of "
        f"{figures['manifest_requests']} manifest requests, {figures['deploys']} deploys, "
        f"{figures['deploys_outside_window']} outside their window")

    ndir = os.path.join(work, "nginx")
    port = free_port()
    server = start_nginx(ndir, BODY.format(dir=ndir, port=port, root=mirror), [("127.0.0.1", port)])
    try:
        started = time.monotonic()
        sample = run_sample(outpost, work, f"http://127.0.0.1:{port}/fleet/", public_pem,
                            os.path.join(ndir, "access.log"), pick_sample(machines, sample_size), log)
        sample["wall_s"] = round(time.monotonic() - started, 1)
    finally:
        stop_process(server)
    return {"day_utc": datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%d"), "hours": HOURS,
            "rollout_percent": ROLLOUT_PERCENT, "jitter_s": JITTER_S, "installer_bytes": INSTALLER_BYTES,
            "groups": [f"{z} {w}" for z, w in GROUPS], "fleet": figures, "sample": sample,
            "fleet_with_jitter": dict(jittered, jitter_s=JITTERED_S)}


if __name__ == "__main__":
    import argparse
    import sys
    import tempfile

    parser = argparse.ArgumentParser(description="the fleet simulation alone")
    parser.add_argument("--outpost", required=True)
    parser.add_argument("--fleet-sim", help="tests/tools/fleet_sim (default: beside --outpost's build)")
    parser.add_argument("--fleet", type=int, default=10000)
    parser.add_argument("--sample", type=int, default=20)
    a = parser.parse_args()
    out = os.path.abspath(a.outpost)
    tool = a.fleet_sim or os.path.join(os.path.dirname(out), "tests", "tools", "fleet_sim")
    print(json.dumps(bench_fleet(out, tool, tempfile.mkdtemp(prefix="outpost-fleet-bench-"), a.fleet, a.sample,
                                 log=lambda s: print(s, file=sys.stderr)), indent=1))
