"""The fleet-mirror benchmark (issue 14, PRODUCT.md section 8) for scripts/bench.

A mirror is published once from the simulator (`keygen`, `publish`), the
simulator is stopped, and nginx on loopback serves the mirror directory as the
README's example does. Then FLEET endpoint state directories, each with its own
configuration (no base_url, no key), run `outpost check` eight at a time: the
first pass reads the manifest (200), the second revalidates it (304). Counted:
wall time of each pass, requests nginx logged, API requests (0: the API is
not even running).

The peer is the same fleet through the API: what one endpoint's `check` costs
there is measured (the simulator's request log for one check), multiplied by
FLEET, and turned into minutes of the tenant's budget (60 requests a minute per
key, API document section 2): a lower bound, because the key's budget is also
what the report uses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from nginx_helper import start_nginx
from servers import free_port, stop_process
from sim import write_fake_installer
from simctl import Sim

API_BUDGET_PER_MINUTE = 60
INSTALLED = "26.01.03.24329"
OFFERED = "26.02.01.25000"

# The rest of the http block after nginx_helper.HEAD.
BODY = """
    log_format mirror escape=json '{{"path":"$uri","status":$status,"bytes":$body_bytes_sent}}';
    access_log {dir}/access.log mirror;
    server {{
        listen 127.0.0.1:{port};
        location = /fleet/manifest.json {{
            alias {root}/manifest.json;
            default_type application/json;
            add_header Cache-Control "no-cache";
        }}
        location /fleet/installers/ {{
            alias {root}/installers/;
            add_header Cache-Control "public, max-age=31536000, immutable";
        }}
    }}
}}
"""


def _outpost(outpost: str, cfg: str, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTPOST_")}
    return subprocess.run([outpost, "-c", cfg, *args], capture_output=True, text=True, timeout=timeout, env=env)


def _write(path: str, doc: dict) -> str:
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def _api_check_cost(outpost: str, work: str, installer: str) -> int:
    """Requests one endpoint's `check` makes through the API (token exchange included)."""
    with Sim.start(installer=installer, installer_version=OFFERED, rate_limit=0, incidents=1) as sim:
        cfg = _write(os.path.join(work, "api-check.json"), {
            "base_url": sim.url, "state_dir": os.path.join(work, "api-state"),
            "installer": {"installed_version": INSTALLED, "verify": {"require_signature": False,
                                                                    "trusted_ca_file": None}},
            "report": {"enabled": False}})
        env_key = dict(os.environ, OUTPOST_API_KEY="sim-api-key")
        r = subprocess.run([outpost, "-c", cfg, "check"], capture_output=True, text=True, timeout=120, env=env_key)
        if r.returncode != 10:
            raise RuntimeError(f"check through the API: exit {r.returncode}: {r.stderr.strip()}")
        return int(sim.log()["summary"]["total"])


def publish_mirror(outpost: str, work: str, installer: str, version: str = OFFERED,
                   rollout_percent: float | None = None) -> tuple[str, str]:
    """Publishes installer as version into work/mirror from the simulator
    (`keygen`, `publish`; publish.rollout_percent when given) and stops the
    simulator; returns the mirror directory and the public key (PEM)."""
    key_file = os.path.join(work, "mirror.key")
    mirror = os.path.join(work, "mirror")
    r = subprocess.run([outpost, "--json", "keygen", "-o", key_file], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"keygen: {r.stderr.strip()}")
    public_pem = json.loads(r.stdout)["public_key"]
    publish = {"dir": mirror, "signing_key_file": key_file}
    if rollout_percent is not None:
        publish["rollout_percent"] = rollout_percent
    with Sim.start(installer=installer, installer_version=version, rate_limit=0, incidents=1) as sim:
        cfg = _write(os.path.join(work, "publisher.json"), {
            "base_url": sim.url, "state_dir": os.path.join(work, "publisher-state"),
            "installer": {"verify": {"require_signature": False, "trusted_ca_file": None}},
            "report": {"enabled": False}, "publish": publish})
        r = subprocess.run([outpost, "-c", cfg, "publish"], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, OUTPOST_API_KEY="sim-api-key"))
        if r.returncode != 0:
            raise RuntimeError(f"publish: {r.stderr.strip()}")
    return mirror, public_pem


def bench_mirror(outpost: str, work: str, fleet: int, log=print) -> dict:
    """Runs the benchmark; returns the measurements (see the module docstring)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    installer = os.path.join(work, "installer.exe")
    write_fake_installer(installer, 7, 256 * 1024)
    mirror, public_pem = publish_mirror(outpost, work, installer)
    per_check = _api_check_cost(outpost, work, installer)

    ndir = os.path.join(work, "nginx")
    port = free_port()
    server = start_nginx(ndir, BODY.format(dir=ndir, port=port, root=mirror), [("127.0.0.1", port)])
    try:
        url = f"http://127.0.0.1:{port}/fleet/"
        configs = []
        for i in range(fleet):
            configs.append(_write(os.path.join(work, f"endpoint-{i:04d}.json"), {
                "state_dir": os.path.join(work, "endpoints", f"e{i:04d}"),
                "installer": {"installed_version": INSTALLED, "platform": "windows",
                              "verify": {"require_signature": False, "trusted_ca_file": None}},
                "report": {"enabled": False},
                "mirror": {"urls": [url], "public_keys": [public_pem], "machine_id": f"bench-{i}"}}))
        access = os.path.join(ndir, "access.log")
        passes = {}
        for label in ("check", "revalidate"):
            open(access, "w").close()
            server.send_signal(1)  # reopen the log
            time.sleep(0.3)
            started = time.monotonic()
            with ThreadPoolExecutor(max_workers=8) as pool:
                results = list(pool.map(lambda c: _outpost(outpost, c, "check"), configs))
            wall = time.monotonic() - started
            bad = [r for r in results if r.returncode != 10]
            if bad:
                raise RuntimeError(f"{len(bad)} endpoint checks failed: {bad[0].stderr.strip()}")
            time.sleep(0.3)
            with open(access) as f:
                entries = [json.loads(line) for line in f if line.strip()]
            passes[label] = {"wall_s": round(wall, 2), "requests": len(entries),
                             "statuses": sorted({e["status"] for e in entries})}
            log(f"mirror {label}: {fleet} endpoints in {wall:.2f} s, {len(entries)} nginx requests")
    finally:
        stop_process(server)
    api_requests = per_check * fleet
    return {"fleet": fleet, "passes": passes, "api_requests_mirror": 0, "api_requests_per_check": per_check,
            "api_requests_through_api": api_requests,
            "api_minutes_through_api": round(api_requests / API_BUDGET_PER_MINUTE, 1)}


if __name__ == "__main__":
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="the fleet-mirror benchmark alone")
    parser.add_argument("--outpost", required=True)
    parser.add_argument("--fleet", type=int, default=1000)
    a = parser.parse_args()
    print(json.dumps(bench_mirror(os.path.abspath(a.outpost), tempfile.mkdtemp(prefix="outpost-mirror-bench-"),
                                  a.fleet), indent=1))
