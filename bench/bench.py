#!/usr/bin/env python3
"""outpost's benchmarks (PRODUCT.md section 7), side by side with what an
administrator would run instead. scripts/bench builds outpost and calls this.

    bench.py --outpost BIN [--release BIN] [--quick] [--json FILE] [--record] [--workdir DIR] [--windows-exe FILE]

Two outpost binaries: the Debian build (--outpost: Release, Debian's shared
libraries) and the release build (--release: scripts/release linux-x86_64,
static, SHA-256 on the CPU's SHA instructions). Each row names the binary it
measured ("binary" column): update, check and the no-op run measure both;
resume and the rate-limited report (behaviour, not speed) the release build.

Benchmarks (everything on 127.0.0.1, every process under a timeout):
  update   64 MiB and 512 MiB installers from nginx over HTTP and HTTPS:
           `outpost update` (require_signature false, a PE-looking file, fsync
           included) against `curl -o f URL` + `sha256sum f` and against a
           Python requests + hashlib streaming download (peer_download.py):
           wall time, CPU time (user + system), peak RSS (GNU time %M).
  signed   a signed installer (512 MiB; 32 MiB with --quick): the tests'
           signing fixtures (tests/fixtures/make_signing_fixtures.sh: a test
           CA, a code-signing leaf, a small mingw PE with a version resource)
           grown with an overlay of random bytes and signed with osslsigncode
           (SHA-256, no timestamp). `outpost update` over HTTP with
           trusted_ca_file set and the default verify policy, against `curl -o`
           + `sha256sum` + `osslsigncode verify` one after the other; `outpost
           stage FILE` against `osslsigncode verify` + `cp` of the same file
           into a fresh folder (what stage does: judge it, keep a copy).
           Wall, CPU, peak RSS.
  check    `outpost check` when up to date against the 512 MiB installer:
           TCP bytes read (strace, as the integration tests count them), wall,
           CPU, RSS; against a naive full GET (curl -o /dev/null).
  resume   (a) nginx, kill -9 when the partial reaches half, run again; the
           same for `curl -o f` then `curl -C - -o f`; (b) the simulator cuts
           the connection (reset fault) after half of the body, outpost
           resumes within the run. Bytes fetched twice = installer body bytes
           the server sent in all requests minus the file size.
  report   1,000 incidents (simulator seed 1: chains of 1..40 events, mean
           about 20, shared between incidents of a storyline) with a raised
           rate limit and 50 ms latency: requests against the lower bound
           (pages + lineage calls + ceil(distinct events / 50)), 429s, wall
           time against requests / allowed rate, RSS; against peer_report.py.
           Then memory as the backlog grows: peak RSS at 1,000 and at 20,000
           incidents on long chains (1..120 events, mean about 60, shared the
           same way: simulator --chain-max 120; no added latency, no rate
           limit: the figure is memory);
           --report-100k adds 100,000 (about 8 minutes a binary, most of it
           the simulator).
  footprint binary sizes (Debian build stripped, static release builds,
           Windows exe), and RSS/CPU of a no-op `run` (installer up to date,
           report finds no new incident).
  mirror   the fleet mirror (mirror_bench.py): 1,000 endpoints check a
           published mirror on nginx with the API stopped, then revalidate
           (304s); beside what the same fleet costs through the API.
  fleet    the fleet policy over a simulated day (fleet_bench.py): 10,000
           machine ids (2,000 with --quick) with the packaged timer/task delay,
           schedule.jitter, maintenance windows in five zones and a 10 %
           rollout, decided by tests/tools/fleet_sim (rollout.c and policy.c
           linked; --fleet-sim, default beside --outpost in its build tree),
           and a sample of 20 ids (6 with --quick) run through the day by the
           Debian build under libfaketime (the static release binary takes no
           LD_PRELOAD) against nginx serving the published mirror, compared with fleet_sim's answers for the same ids.

Runs alternate the tools (the order rotates every repetition); the table
shows medians. Results go to stdout (a Markdown table) and to --json
(build-bench/results.json unless given, a folder git ignores, so running
the benchmarks leaves the checkout clean). The tracked bench/results.json
holds the full run docs/benchmarks.md shows: only --record replaces it, and
only with the results of a whole run (not --quick, --only or --reps).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
RESULTS = os.path.join(TOP, "build-bench", "results.json")  # where a run's results go (ignored by git)
RECORDED = os.path.join(HERE, "results.json")               # the full run docs/benchmarks.md shows (tracked)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "sim"))
sys.path.insert(0, os.path.join(TOP, "tests", "integration"))  # nginx_helper, servers
from fleet_bench import bench_fleet  # noqa: E402
from mirror_bench import bench_mirror  # noqa: E402
from nginx_bench import Nginx  # noqa: E402
from sim import make_certificates, write_fake_installer  # noqa: E402
from simctl import Sim  # noqa: E402

MiB = 1024 * 1024
VERSION = "24.3.1"
# The signing fixtures' PE states this ProductVersion (its version resource):
# the signed benchmark offers it under that number, or the version binding
# (PRODUCT.md 4.3) would rightly refuse it.
SIGNED_VERSION = "26.01.03.24329"
SIGNING_FIXTURES = os.path.join(TOP, "tests", "fixtures", "make_signing_fixtures.sh")
GNU_TIME = "/usr/bin/time"
API_KEY = "sim-api-key"          # the simulator's default key; nginx ignores it


# ---- running and measuring one process ---------------------------------------------


def bench_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTPOST_")}
    env["OUTPOST_API_KEY"] = API_KEY
    return env


def measure(argv: list, timeout: float = 300, env: dict | None = None, check: bool = True) -> dict:
    """Runs argv under GNU time: wall (s, monotonic), cpu (user + system of
    GNU time and argv, from wait4(), microsecond resolution: GNU time's own
    output rounds to 10 ms; its own share is about a millisecond), rss (peak
    resident set of argv and its children, KiB, GNU time's %M: measured
    through a small parent because a child forked from this Python process
    inherits its high-water mark), rc, stdout, stderr."""
    fd, rss_file = tempfile.mkstemp(prefix="bench-rss-")
    os.close(fd)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen([GNU_TIME, "-f", "%M", "-o", rss_file, *argv], stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=err, env=env or bench_env())
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        wall = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    with open(rss_file) as f:
        words = f.read().split()
    os.unlink(rss_file)
    rss = int(words[-1]) if words and words[-1].isdigit() else usage.ru_maxrss
    if check and process.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} exited {process.returncode}: {stderr.strip()[-400:]}")
    cpu = max(0.0, usage.ru_utime + usage.ru_stime - TIME_OVERHEAD["cpu"])
    return {"wall": wall, "cpu": cpu, "rss": rss,
            "rc": process.returncode, "stdout": stdout, "stderr": stderr}


TIME_OVERHEAD = {"cpu": 0.0}

# The benchmarks, in the order a full run makes them: each is Bench.bench_<name>
# (a new one: add its name here and the method).
BENCHES = ["update", "signed", "check", "resume", "report", "footprint", "mirror", "fleet"]


def calibrate() -> float:
    """GNU time's own CPU (fork, exec, wait: about 2 ms), measured on `true`
    and subtracted from every CPU figure."""
    TIME_OVERHEAD["cpu"] = 0.0
    TIME_OVERHEAD["cpu"] = statistics.median(measure(["true"])["cpu"] for _ in range(9))
    return TIME_OVERHEAD["cpu"]


def combine(*runs: dict) -> dict:
    """Commands run one after the other: times add up, the peak is the largest."""
    return {"wall": sum(r["wall"] for r in runs), "cpu": sum(r["cpu"] for r in runs),
            "rss": max(r["rss"] for r in runs), "parts": [{k: r[k] for k in ("wall", "cpu", "rss")} for r in runs]}


def median(runs: list, key: str) -> float:
    return statistics.median(r[key] for r in runs)


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(4 * MiB), b""):
            h.update(block)
    return h.hexdigest()


def rotated(items: list, rep: int) -> list:
    k = rep % len(items)
    return items[k:] + items[:k]


# ---- outpost configurations ----------------------------------------------------------


def write_config(path: str, base_url: str, state_dir: str, ca_file: str | None = None,
                 installed: str = "1.0", **extra) -> str:
    cfg = {
        "base_url": base_url,
        "state_dir": state_dir,
        "tls": {"ca_file": ca_file, "pinned_public_key": None},
        "installer": {"installed_version": installed, "verify": {"require_signature": False, "trusted_ca_file": None}},
        "schedule": {"jitter": "0s"},
    }
    for section, values in extra.items():
        cfg.setdefault(section, {}).update(values)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


class Bench:
    def __init__(self, args):
        self.args = args
        self.outpost = os.path.abspath(args.outpost)
        # (label, path) of each outpost measured; the first is the one the
        # behaviour benchmarks (resume, rate-limited report) use.
        self.binaries = []
        if args.release and os.path.exists(args.release):
            self.binaries.append(("release", os.path.abspath(args.release)))
        self.binaries.append(("debian", self.outpost))
        self.primary = self.binaries[0][1]
        self.work = args.workdir
        self.quick = args.quick
        self.results: dict = {"mode": "quick" if args.quick else "full", "rows": [], "raw": {}}
        self.certs = make_certificates(os.path.join(self.work, "certs"))
        self.installers: dict = {}

    # -- shared fixtures --

    def installer(self, size_mib: int) -> tuple[str, str]:
        if not 1 <= size_mib <= 1024:  # a unit slip here once filled a disk
            raise ValueError(f"installer size {size_mib} MiB is out of range")
        if size_mib not in self.installers:
            path = os.path.join(self.work, f"installer-{size_mib}M.exe")
            if not os.path.exists(path) or os.path.getsize(path) != size_mib * MiB:
                write_fake_installer(path, size_mib, size_mib * MiB)
            self.installers[size_mib] = (path, sha256_file(path))
        return self.installers[size_mib]

    def nginx(self, size_mib: int) -> Nginx:
        path, _ = self.installer(size_mib)
        return Nginx(path, VERSION, self.certs["server.pem"], self.certs["server.key"])

    def fresh(self, name: str) -> str:
        path = os.path.join(self.work, name)
        shutil.rmtree(path, ignore_errors=True)
        return path

    def row(self, bench: str, metric: str, unit: str, outpost, peers: dict, target: str = "",
            met=None, binary: str | None = None) -> None:
        """One table row; binary: which outpost ("release", "debian"; default
        the primary one, "—" for rows that measure no outpost run)."""
        self.results["rows"].append({"bench": bench, "metric": metric, "unit": unit, "outpost": outpost,
                                     "peers": peers, "target": target, "met": met,
                                     "binary": binary or self.binaries[0][0]})

    def log(self, text: str) -> None:
        print(f"bench: {text}", file=sys.stderr, flush=True)

    # -- 1. update ------------------------------------------------------------------

    def run_outpost_update(self, binary: str, url: str, ca: str | None, sha: str) -> dict:
        state = self.fresh("state-update")
        cfg = write_config(os.path.join(self.work, "update.json"), url, state, ca)
        r = measure([binary, "-c", cfg, "update"], timeout=600)
        version_dir = os.path.join(state, "staging", VERSION)
        manifest = json.load(open(os.path.join(version_dir, "manifest.json")))
        if manifest["sha256"] != sha:
            raise RuntimeError("outpost staged a file with the wrong SHA-256")
        shutil.rmtree(state, ignore_errors=True)
        return r

    def run_curl_sha(self, url: str, ca: str | None, sha: str) -> dict:
        out = os.path.join(self.work, "curl.out")
        tls = ["--cacert", ca] if ca else []
        get = measure(["curl", "-sS", "--fail", *tls, "-o", out, f"{url}/v2/installer/windows/latest"],
                      timeout=600)
        digest = measure(["sha256sum", out], timeout=600)
        os.unlink(out)
        if digest["stdout"].split()[0] != sha:
            raise RuntimeError("curl downloaded a file with the wrong SHA-256")
        result = combine(get, digest)
        result["curl_rss"] = get["rss"]
        return result

    def run_python_download(self, url: str, ca: str | None, sha: str) -> dict:
        out = os.path.join(self.work, "python.out")
        r = measure(["/usr/bin/python3", os.path.join(HERE, "peer_download.py"), url, out, *([ca] if ca else [])],
                    timeout=600)
        os.unlink(out)
        if r["stdout"].split()[0] != sha:
            raise RuntimeError("the Python peer downloaded a file with the wrong SHA-256")
        return r

    def bench_update(self) -> None:
        reps = self.args.reps or (3 if self.quick else 5)
        sizes = [64, 512]
        for size in sizes:
            path, sha = self.installer(size)
            ng = self.nginx(size)
            try:
                for tls in (False, True):
                    url, ca = ng.url(tls), (self.certs["ca.pem"] if tls else None)
                    proto = "HTTPS" if tls else "HTTP"
                    self.log(f"update {size} MiB over {proto}: {reps} repetitions")
                    tools = {f"outpost {label}": (lambda u, c, h, b=path: self.run_outpost_update(b, u, c, h))
                             for label, path in self.binaries}
                    tools.update({"curl": self.run_curl_sha, "python": self.run_python_download})
                    runs = {name: [] for name in tools}
                    ciphers = {name: set() for name in tools}
                    for rep in range(reps):
                        for name in rotated(list(tools), rep):
                            logged = len(ng.access_log())
                            runs[name].append(tools[name](url, ca, sha))
                            ciphers[name].update(ng.installer_ciphers(logged))
                    self.results["raw"][f"update_{size}_{proto}"] = runs
                    if tls:  # issue 27: each HTTPS row says which suite each side negotiated
                        self.results.setdefault("ciphers", {})[f"update {size} MiB {proto}"] = {
                            name: "/".join(sorted(found)) for name, found in ciphers.items()}
                    self.update_rows(size, proto, runs)
            finally:
                ng.stop()

    def update_rows(self, size: int, proto: str, runs: dict) -> None:
        """PRODUCT.md section 7: wall ≤ 0.8 × the faster peer; peak RSS ≤ 0.8 ×
        curl's own peak."""
        c, p = runs["curl"], runs["python"]
        name = f"update {size} MiB {proto}"
        faster = min(median(c, "wall"), median(p, "wall"))
        curl_rss = statistics.median(r["curl_rss"] for r in c)
        for label, _ in self.binaries:
            o = runs[f"outpost {label}"]
            wall = median(o, "wall")
            self.row(name, "wall time", "s", wall,
                     {"curl + sha256sum": median(c, "wall"), "python requests": median(p, "wall")},
                     "≤ 0.8 × faster peer", wall <= 0.8 * faster, binary=label)
            self.row(name, "CPU time", "s", median(o, "cpu"),
                     {"curl + sha256sum": median(c, "cpu"), "python requests": median(p, "cpu")}, binary=label)
            rss = median(o, "rss")
            self.row(name, "peak RSS", "KiB", rss, {"curl alone": curl_rss, "python requests": median(p, "rss")},
                     "≤ 0.8 × curl's", rss <= 0.8 * curl_rss, binary=label)

    # -- 1b. signed update and stage ----------------------------------------------------

    def signed_installer(self, size_mib: int) -> tuple[str, str, str]:
        """(path, SHA-256, CA file) of a signed PE of size_mib MiB plus its
        signature: the signing fixtures' app64.exe (a real mingw PE with a
        version resource) with an overlay of seeded random bytes, signed by
        the fixtures' code-signing leaf (SHA-256, no timestamp, so it is
        judged at the current time: the leaf is valid for ten years)."""
        if not 1 <= size_mib <= 1024:
            raise ValueError(f"installer size {size_mib} MiB is out of range")
        fixtures = os.path.join(self.work, "signing")
        if not os.path.exists(os.path.join(fixtures, ".done")):
            self.log("making the signing fixtures (test CA, leaf, PE)")
            subprocess.run(["sh", SIGNING_FIXTURES, fixtures], check=True, timeout=900,
                           stdout=subprocess.DEVNULL)
        path = os.path.join(self.work, f"signed-{size_mib}M.exe")
        if not os.path.exists(path):
            unsigned = path + ".unsigned"
            with open(os.path.join(fixtures, "app64.exe"), "rb") as f:
                app = f.read()
            rng = random.Random(f"signed:{size_mib}")
            with open(unsigned, "wb") as out:
                out.write(app)
                left = size_mib * MiB - len(app)
                while left > 0:
                    block = rng.randbytes(min(left, MiB))
                    out.write(block)
                    left -= len(block)
            subprocess.run(["osslsigncode", "sign", "-certs", os.path.join(fixtures, "leaf-chain.pem"),
                            "-key", os.path.join(fixtures, "leaf.key"), "-h", "sha256", "-n", "Outpost Bench",
                            "-in", unsigned, "-out", path], check=True, timeout=600, stdout=subprocess.DEVNULL)
            os.unlink(unsigned)
        return path, sha256_file(path), os.path.join(fixtures, "root.pem")

    def osslsigncode_verify(self, path: str, ca: str) -> dict:
        # -ignore-crl: offline, as outpost verifies (no CDP or OCSP calls).
        return measure(["osslsigncode", "verify", "-ignore-crl", "-CAfile", ca, "-in", path], timeout=600)

    def osslsigncode_verify_cp(self, path: str, ca: str) -> dict:
        """The peer of `stage` (issue 32): verify the file, then copy it into a
        fresh folder, one after the other; the two measurements summed."""
        v = self.osslsigncode_verify(path, ca)
        folder = self.fresh("cp-stage")
        os.makedirs(folder)
        c = measure(["cp", path, os.path.join(folder, os.path.basename(path))], timeout=600)
        shutil.rmtree(folder, ignore_errors=True)
        return {"wall": v["wall"] + c["wall"], "cpu": v["cpu"] + c["cpu"], "rss": max(v["rss"], c["rss"])}

    def check_signed_manifest(self, state: str, version: str, sha: str) -> None:
        manifest = json.load(open(os.path.join(state, "staging", version, "manifest.json")))
        if manifest["sha256"] != sha:
            raise RuntimeError("outpost staged a file with the wrong SHA-256")
        if manifest["verification"]["signature"]["result"] != "valid":
            raise RuntimeError(f"outpost did not judge the signature valid: {manifest['verification']}")

    def run_outpost_signed_update(self, binary: str, url: str, ca: str, sha: str) -> dict:
        state = self.fresh("state-signed")
        cfg = write_config(os.path.join(self.work, "signed-update.json"), url, state,
                           installer={"installed_version": "1.0", "verify": {"trusted_ca_file": ca}})
        r = measure([binary, "-c", cfg, "update"], timeout=600)
        self.check_signed_manifest(state, SIGNED_VERSION, sha)
        shutil.rmtree(state, ignore_errors=True)
        return r

    def run_curl_sha_ossl(self, url: str, ca: str, sha: str) -> dict:
        out = os.path.join(self.work, "curl.out")
        get = measure(["curl", "-sS", "--fail", "-o", out, f"{url}/v2/installer/windows/latest"], timeout=600)
        digest = measure(["sha256sum", out], timeout=600)
        verify = self.osslsigncode_verify(out, ca)
        os.unlink(out)
        if digest["stdout"].split()[0] != sha:
            raise RuntimeError("curl downloaded a file with the wrong SHA-256")
        result = combine(get, digest, verify)
        result["curl_rss"] = get["rss"]
        return result

    def run_outpost_stage(self, binary: str, path: str, ca: str, sha: str) -> dict:
        state = self.fresh("state-stage")
        cfg = write_config(os.path.join(self.work, "signed-stage.json"), "http://127.0.0.1:9", state,
                           installer={"installed_version": "1.0", "verify": {"trusted_ca_file": ca}})
        r = measure([binary, "-c", cfg, "stage", path, "--version", SIGNED_VERSION], timeout=600)
        self.check_signed_manifest(state, SIGNED_VERSION, sha)
        shutil.rmtree(state, ignore_errors=True)
        return r

    def bench_signed(self) -> None:
        """Issue 23's benchmark: a signed update and a stage against
        osslsigncode (PRODUCT.md section 7: wall ≤ 0.8 × the peer)."""
        reps = self.args.reps or (3 if self.quick else 5)
        size = 32 if self.quick else 512
        path, sha, ca = self.signed_installer(size)
        ng = Nginx(path, SIGNED_VERSION, self.certs["server.pem"], self.certs["server.key"])
        try:
            url = ng.url(False)
            self.log(f"signed update {size} MiB over HTTP: {reps} repetitions")
            tools = {f"outpost {label}": (lambda b=binary: self.run_outpost_signed_update(b, url, ca, sha))
                     for label, binary in self.binaries}
            tools["peer"] = lambda: self.run_curl_sha_ossl(url, ca, sha)
            runs = {name: [] for name in tools}
            for rep in range(reps):
                for name in rotated(list(tools), rep):
                    runs[name].append(tools[name]())
        finally:
            ng.stop()
        self.results["raw"][f"signed_update_{size}"] = runs
        self.signed_rows(f"signed update {size} MiB HTTP (verify: trusted_ca_file)",
                         "curl + sha256sum + osslsigncode verify", runs)
        self.log(f"stage of the signed {size} MiB file: {reps} repetitions")
        tools = {f"outpost {label}": (lambda b=binary: self.run_outpost_stage(b, path, ca, sha))
                 for label, binary in self.binaries}
        tools["peer"] = lambda: self.osslsigncode_verify_cp(path, ca)
        runs = {name: [] for name in tools}
        for rep in range(reps):
            for name in rotated(list(tools), rep):
                runs[name].append(tools[name]())
        self.results["raw"][f"signed_stage_{size}"] = runs
        self.signed_rows(f"stage FILE, signed {size} MiB (verify: trusted_ca_file)", "osslsigncode verify + cp",
                         runs)

    def signed_rows(self, name: str, peer: str, runs: dict) -> None:
        p = runs["peer"]
        for label, _ in self.binaries:
            o = runs[f"outpost {label}"]
            wall = median(o, "wall")
            self.row(name, "wall time", "s", wall, {peer: median(p, "wall")}, "≤ 0.8 × peer",
                     wall <= 0.8 * median(p, "wall"), binary=label)
            self.row(name, "CPU time", "s", median(o, "cpu"), {peer: median(p, "cpu")}, binary=label)
            self.row(name, "peak RSS", "KiB", median(o, "rss"), {peer: median(p, "rss")}, binary=label)

    # -- 2. check ---------------------------------------------------------------------

    def tcp_bytes_read(self, argv: list) -> tuple[int, int]:
        trace = os.path.join(self.work, "strace.txt")
        done = subprocess.run(["strace", "-f", "-qq", "-yy", "-e", "trace=read,recvfrom,recvmsg,readv",
                               "-o", trace, *argv], capture_output=True, text=True, timeout=300,
                              env=bench_env())
        total = 0
        with open(trace) as f:
            for line in f:
                m = re.search(r"<TCP:.*= (\d+)$", line.rstrip("\n"))
                if m:
                    total += int(m.group(1))
        os.unlink(trace)
        return done.returncode, total

    def bench_check(self) -> None:
        reps = self.args.reps or (5 if self.quick else 10)
        size = 512
        path, _ = self.installer(size)
        ng = self.nginx(size)
        try:
            for tls in (False, True):
                url, ca = ng.url(tls), (self.certs["ca.pem"] if tls else None)
                proto = "HTTPS" if tls else "HTTP"
                self.log(f"check (up to date, {size} MiB installer) over {proto}: {reps} repetitions")
                tls_opt = ["--cacert", ca] if ca else []
                curl = ["curl", "-sS", "--fail", *tls_opt, "-o", "/dev/null", "-w", "%{size_download}",
                        f"{url}/v2/installer/windows/latest"]
                binaries = dict(self.binaries)
                runs = {label: [] for label in binaries}
                # Over HTTPS the release build resumes the TLS session its previous run kept
                # (state_dir/tls-session, one state directory per binary); "cold" runs remove
                # it first: a full handshake.
                cold = {f"{label} cold": label for label in binaries} if tls else {}
                runs.update({name: [] for name in cold})
                runs["curl"] = []
                own = {}
                for label in binaries:
                    own_state = self.fresh(f"state-check-{label}")
                    own[label] = (own_state, write_config(os.path.join(self.work, f"check-{label}.json"), url,
                                                          own_state, ca, installed=VERSION))
                for rep in range(reps):
                    for name in rotated(list(runs), rep):
                        if name in binaries or name in cold:
                            label = cold.get(name, name)
                            kept = os.path.join(own[label][0], "tls-session")
                            if name in cold and os.path.exists(kept):
                                os.unlink(kept)
                            runs[name].append(measure([binaries[label], "-c", own[label][1], "check"], timeout=60))
                        else:
                            runs[name].append(measure(curl, timeout=300))
                rc, curl_bytes = self.tcp_bytes_read(curl)
                raw = {**runs, "curl_tcp_bytes": curl_bytes}
                name = f"check, up to date ({size} MiB installer) {proto}"
                for label, binary in self.binaries:
                    rc, outpost_bytes = self.tcp_bytes_read([binary, "-c", own[label][1], "check"])
                    if rc != 0:
                        raise RuntimeError(f"outpost ({label}) check under strace exited {rc}")
                    raw[f"{label}_tcp_bytes"] = outpost_bytes
                    o = runs[label]
                    self.row(name, "TCP bytes read", "bytes", outpost_bytes, {"curl full GET": curl_bytes},
                             "≤ 64 KiB", outpost_bytes <= 64 * 1024, binary=label)
                    self.row(name, "wall time", "s", median(o, "wall"),
                             {"curl full GET": median(runs["curl"], "wall")}, binary=label)
                    cpu = median(o, "cpu")
                    self.row(name, "CPU time", "s", cpu, {"curl full GET": median(runs["curl"], "cpu")},
                             "≤ 5 ms", cpu <= 0.005, binary=label)
                    if f"{label} cold" in runs:
                        self.row(name, "CPU time, full handshake (no kept TLS session)", "s",
                                 median(runs[f"{label} cold"], "cpu"), {"curl full GET": median(runs["curl"], "cpu")},
                                 binary=label)
                    self.row(name, "peak RSS", "KiB", median(o, "rss"),
                             {"curl full GET": median(runs["curl"], "rss")}, binary=label)
                self.results["raw"][f"check_{proto}"] = raw
                for own_state, _ in own.values():
                    shutil.rmtree(own_state, ignore_errors=True)
        finally:
            ng.stop()

    # -- 3. resume --------------------------------------------------------------------

    def kill_at_half(self, argv: list, watched: str, size: int) -> int:
        """Starts argv, SIGKILLs it once `watched` holds half of size bytes;
        returns the file's size at the kill."""
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, env=bench_env())
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline and process.poll() is None:
                if os.path.exists(watched) and os.path.getsize(watched) >= size // 2:
                    break
                time.sleep(0.002)
            if process.poll() is not None:
                raise RuntimeError(f"{argv[0]} finished before it was killed at half way")
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
            return os.path.getsize(watched)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)

    @staticmethod
    def range_start(entry: dict) -> int:
        m = re.match(r"bytes=(\d+)-", entry.get("range") or "")
        return int(m.group(1)) if m else 0

    def resume_outpost_nginx(self, ng: Nginx, size: int, sha: str) -> dict:
        ng.clear_log()
        state = self.fresh("state-resume")
        cfg = write_config(os.path.join(self.work, "resume.json"), ng.url(False), state)
        part = os.path.join(state, "downloads", f"{VERSION}.part")
        at_kill = self.kill_at_half([self.primary, "-c", cfg, "update"], part, size)
        r = measure([self.primary, "-c", cfg, "update"], timeout=600)
        manifest = json.load(open(os.path.join(state, "staging", VERSION, "manifest.json")))
        if manifest["sha256"] != sha:
            raise RuntimeError("outpost resumed into a file with the wrong SHA-256")
        entries = ng.installer_bytes()
        shutil.rmtree(state, ignore_errors=True)
        return self.resume_figures(entries, size, at_kill, r)

    def resume_curl_nginx(self, ng: Nginx, size: int, sha: str) -> dict:
        ng.clear_log()
        out = os.path.join(self.work, "curl-resume.out")
        if os.path.exists(out):
            os.unlink(out)
        url = f"{ng.url(False)}/v2/installer/windows/latest"
        at_kill = self.kill_at_half(["curl", "-sS", "--fail", "-o", out, url], out, size)
        r = measure(["curl", "-sS", "--fail", "-C", "-", "-o", out, url], timeout=600)
        if sha256_file(out) != sha:
            raise RuntimeError("curl -C - resumed into a file with the wrong SHA-256")
        os.unlink(out)
        entries = ng.installer_bytes()
        return self.resume_figures(entries, size, at_kill, r)

    def resume_figures(self, entries: list, size: int, at_kill: int, run: dict) -> dict:
        sent = sum(e["bytes"] for e in entries)
        resumed_at = self.range_start(entries[-1]) if entries else 0
        return {"requests": len(entries), "sent": sent, "twice": sent - size, "at_kill": at_kill,
                "resumed_at": resumed_at, "discarded": max(0, at_kill - resumed_at),
                "wall_second_run": run["wall"]}

    def resume_outpost_sim(self, size: int, sha: str) -> dict:
        path, _ = self.installer(size // MiB)
        with Sim.start(installer=path, installer_version=VERSION, rate_limit=0, incidents=1) as sim:
            sim.fault("installer", "reset", bytes=size // 2, count=1)
            state = self.fresh("state-resume-sim")
            cfg = write_config(os.path.join(self.work, "resume-sim.json"), sim.url, state)
            r = measure([self.primary, "-c", cfg, "update"], timeout=600)
            manifest = json.load(open(os.path.join(state, "staging", VERSION, "manifest.json")))
            if manifest["sha256"] != sha:
                raise RuntimeError("outpost resumed into a file with the wrong SHA-256 (sim)")
            entries = [e for e in sim.log()["requests"] if e["route"] in ("installer", "storage")]
            shutil.rmtree(state, ignore_errors=True)
        sent = sum(e["bytes_sent"] for e in entries)
        return {"requests": len(entries), "sent": sent, "twice": sent - size, "wall": r["wall"],
                "ranges": [e["range"] for e in entries]}

    def bench_resume(self) -> None:
        reps = self.args.reps or (2 if self.quick else 3)
        size_mib = 512
        size = size_mib * MiB
        path, sha = self.installer(size_mib)
        ng = self.nginx(size_mib)
        runs = {"outpost": [], "curl": []}
        try:
            self.log(f"resume after kill -9 at half of {size_mib} MiB (nginx): {reps} repetitions")
            for rep in range(reps):
                for name in rotated(["outpost", "curl"], rep):
                    fn = self.resume_outpost_nginx if name == "outpost" else self.resume_curl_nginx
                    runs[name].append(fn(ng, size, sha))
        finally:
            ng.stop()
        self.results["raw"]["resume_kill"] = runs
        pct = lambda runs_, key: statistics.median(r[key] for r in runs_) / size * 100  # noqa: E731
        name = f"resume after kill -9 at 50% ({size_mib} MiB, nginx)"
        twice = pct(runs["outpost"], "twice")
        self.row(name, "fetched twice (server sent − size)", "%", twice, {"curl -C -": pct(runs["curl"], "twice")},
                 "≤ 1%", twice <= 1.0)
        self.row(name, "kept bytes discarded by the client", "%", pct(runs["outpost"], "discarded"),
                 {"curl -C -": pct(runs["curl"], "discarded")})
        self.log(f"resume after a connection reset at half of {size_mib} MiB (simulator)")
        sim_runs = [self.resume_outpost_sim(size, sha) for _ in range(1 if self.quick else 2)]
        self.results["raw"]["resume_reset"] = sim_runs
        twice = statistics.median(r["twice"] for r in sim_runs) / size * 100
        self.row(f"resume after a connection reset at 50% ({size_mib} MiB, simulator)",
                 "fetched twice (server sent − size)", "%", twice, {}, "≤ 1%", twice <= 1.0)

    # -- 4. report --------------------------------------------------------------------

    def report_bound(self, sim: Sim, page_size: int, batch: int) -> dict:
        dataset = sim.dataset()
        incidents = dataset["incidents"]
        traced = [r for r in incidents
                  if isinstance(r["incident"].get("event_lineage_id"), dict)
                  and r["incident"]["event_lineage_id"].get("start_event_id")
                  and r["incident"]["event_lineage_id"].get("end_event_id")]
        distinct = {e for r in traced for e in r["hidden"]["chain"]}
        chain_events = sum(len(r["hidden"]["chain"]) for r in traced)
        pages = max(1, math.ceil(len(incidents) / page_size))
        return {"incidents": len(incidents), "traced": len(traced), "distinct_events": len(distinct),
                "chain_events": chain_events, "pages": pages,
                "lower_bound": pages + len(traced) + math.ceil(len(distinct) / batch)}

    def report_run(self, tool: str, sim_options: dict, binary: str | None = None) -> dict:
        with Sim.start(**sim_options) as sim:
            bound = self.report_bound(sim, 1000, 50)
            if tool == "outpost":
                state = self.fresh("state-report")
                # Every feed on (issue 36): incidents.jsonl, OCSF and CEF.
                cfg = write_config(os.path.join(self.work, "report.json"), sim.url, state,
                                   report={"ocsf_file": "findings.ocsf.jsonl", "cef_file": "incidents.cef"})
                r = measure([binary or self.primary, "-c", cfg, "report"], timeout=1800)
                shutil.rmtree(state, ignore_errors=True)
            else:
                out = os.path.join(self.work, "peer-report.jsonl")
                r = measure(["/usr/bin/python3", os.path.join(HERE, "peer_report.py"), sim.url, out],
                            timeout=900)
                r["peer"] = json.loads(r["stdout"].strip().splitlines()[-1])
                os.unlink(out)
            summary = sim.log()["summary"]
        by_route = summary["by_route"]
        requests = summary["total"] - by_route.get("token", 0)
        return {"wall": r["wall"], "cpu": r["cpu"], "rss": r["rss"], "requests": requests,
                "tokens": by_route.get("token", 0), "count_429": summary["count_429"],
                "by_route": by_route, **bound}

    def bench_report(self) -> None:
        incidents = self.args.report_incidents or (250 if self.quick else 1000)
        reps = self.args.report_reps or (1 if self.quick else 3)
        window = 5.0
        limit = int(self.args.report_rate * window / 60)
        rate_per_s = limit / window
        sim_options = dict(incidents=incidents, seed=1, rate_limit=limit, rate_window=window, latency_ms=50)
        self.log(f"report of {incidents} incidents, {limit} requests per {window:g} s, 50 ms latency: "
                 f"{reps} repetitions")
        runs = {"outpost": [], "python": []}
        for rep in range(reps):
            for name in rotated(["outpost", "python"], rep):
                runs[name].append(self.report_run(name, sim_options))
        self.results["raw"]["report"] = {"sim": sim_options, **runs}
        o, p = runs["outpost"], runs["python"]
        name = (f"report of {incidents} incidents ({self.args.report_rate}/min in {window:g} s windows, "
                f"50 ms latency)")
        bound = o[0]["lower_bound"]
        reqs = median(o, "requests")
        self.row(name, f"requests (lower bound {bound})", "count", reqs, {"python worked example": median(p, "requests")},
                 f"= {bound}", reqs == bound)
        n429 = max(r["count_429"] for r in o)
        self.row(name, "429 answers (worst run)", "count", n429, {"python worked example": max(r["count_429"] for r in p)},
                 "0", n429 == 0)
        ideal = reqs / rate_per_s
        wall = median(o, "wall")
        self.row(name, f"wall time (requests ÷ rate = {ideal:.1f} s)", "s", wall,
                 {"python worked example": median(p, "wall")}, f"≤ {ideal * 1.05:.1f} s", wall <= ideal * 1.05)
        self.row(name, "CPU time", "s", median(o, "cpu"), {"python worked example": median(p, "cpu")})
        self.row(name, "peak RSS", "KiB", median(o, "rss"), {"python worked example": median(p, "rss")})
        self.report_memory()

    def report_memory(self) -> None:
        """Peak RSS as the backlog grows (PRODUCT.md section 7: at 20,000
        incidents at most 1.2 × that at 1,000, and under 24 MiB for the
        release build). No latency, and a rate limit announced but huge
        (X-RateLimit headers for 1,000,000 requests a minute): what is measured
        is memory. Without the headers (rate_limit=0) outpost paces at the
        contract's 60/min and 1,000 incidents take 16 minutes."""
        small, large = (250, 5000) if self.quick else (1000, 20000)
        huge = 100000 if self.args.report_100k else None
        # Long chains (issue 32): the kept newest items, with their events,
        # were the weight; chains up to 120 events, shared between incidents.
        chain = 120
        name = f"report memory, {small} → {large} incidents, chains of 1..{chain} events (huge announced rate limit)"
        raw = {}
        for label, binary in self.binaries:
            self.log(f"report memory ({label}): {small}, {large}" + (f" and {huge}" if huge else "") + " incidents")
            runs = {}
            for n in (small, large, huge) if huge else (small, large):
                runs[n] = self.report_run("outpost", dict(incidents=n, seed=1, rate_limit=1000000, rate_window=60,
                                                          latency_ms=0, chain_max=chain), binary)
                if runs[n]["count_429"]:
                    raise RuntimeError("429 answers under a rate limit of 1,000,000 a minute")
            raw[label] = runs
            a, b = runs[small]["rss"], runs[large]["rss"]
            met = b <= 1.2 * a and (label != "release" or max(a, b) < 24 * 1024)
            self.row(name, f"peak RSS at {large} (peer: at {small})", "KiB", b, {f"outpost at {small}": a},
                     "≤ 1.2 × at 1000" + (", both < 24 MiB" if label == "release" else ""), met, binary=label)
            self.row(name, f"wall time at {large} (peer: at {small})", "s", runs[large]["wall"],
                     {f"outpost at {small}": runs[small]["wall"]}, binary=label)
            self.row(name, f"CPU time at {large} (peer: at {small})", "s", runs[large]["cpu"],
                     {f"outpost at {small}": runs[small]["cpu"]}, binary=label)
            if huge:
                self.row(name, f"peak RSS at {huge} (peer: at {small})", "KiB", runs[huge]["rss"],
                         {f"outpost at {small}": runs[small]["rss"]}, binary=label)
                self.row(name, f"CPU time at {huge} (peer: at {small})", "s", runs[huge]["cpu"],
                         {f"outpost at {small}": runs[small]["cpu"]}, binary=label)
        self.results["raw"]["report_memory"] = raw

    # -- 5. footprint -------------------------------------------------------------------

    def bench_mirror(self) -> None:
        """1,000 endpoints (200 with --quick) check a published mirror served by nginx, with
        the API stopped; see mirror_bench.py. The peer is the same fleet through the API."""
        fleet = 200 if self.quick else 1000
        label, binary = self.binaries[0]
        m = bench_mirror(binary, os.path.join(self.work, "mirror"), fleet, log=self.log)
        self.results["raw"]["mirror"] = m
        through_api_s = m["api_minutes_through_api"] * 60
        self.row(f"fleet mirror: {fleet} endpoint checks", "wall time, 8 at a time", "s",
                 m["passes"]["check"]["wall_s"], {"the same checks through the API (60 requests/min)": through_api_s},
                 binary=label)
        self.row(f"fleet mirror: {fleet} endpoint checks", "wall time, second pass (304s)", "s",
                 m["passes"]["revalidate"]["wall_s"], {}, binary=label)
        self.row(f"fleet mirror: {fleet} endpoint checks", "requests to nginx / to the API", "",
                 f"{m['passes']['check']['requests']} / {m['api_requests_mirror']}",
                 {"through the API": m["api_requests_through_api"]}, "API requests = 0",
                 m["api_requests_mirror"] == 0, binary=label)

    def bench_fleet(self) -> None:
        """The fleet policy over a simulated day; see fleet_bench.py."""
        fleet, sample = (2000, 6) if self.quick else (10000, 20)
        # The Debian build: libfaketime's LD_PRELOAD cannot reach into the static release binary.
        label, binary = "debian", self.outpost
        tool = self.args.fleet_sim or os.path.join(os.path.dirname(self.outpost), "tests", "tools", "fleet_sim")
        f = bench_fleet(binary, tool, os.path.join(self.work, "fleet"), fleet, sample, log=self.log)
        self.results["raw"]["fleet"] = f
        n, s = f["fleet"], f["sample"]
        name = f"fleet policy: {fleet} ids, one day, {f['rollout_percent']} % rollout (fleet_sim)"
        self.row(name, "busiest minute's share of the day's manifest requests", "%",
                 n["busiest_minute_share_percent"], {}, "≤ 1.5 %", n["busiest_minute_share_percent"] <= 1.5,
                 binary="—")
        j = f["fleet_with_jitter"]
        self.row(name, "the same with schedule.jitter 30m", "%", j["busiest_minute_share_percent"], {},
                 "≤ 1.5 %", j["busiest_minute_share_percent"] <= 1.5, binary="—")
        self.row(name, "deploys outside their window (of deploys; zoneinfo check)", "",
                 f"{n['deploys_outside_window']} of {n['deploys']}", {}, "0", n["deploys_outside_window"] == 0,
                 binary="—")
        self.row(name, "machines downloading the installer / eligible", "",
                 f"{n['downloads']} / {n['eligible']}", {}, "", None, binary="—")
        name = f"fleet policy: sample of {s['ids']} ids × {f['hours']} runs, real binary, libfaketime, nginx"
        self.row(name, "ids whose runs agree with fleet_sim", "", f"{s['agree']} of {s['ids']} ({s['runs']} runs)",
                 {}, "all", s["agree"] == s["ids"], binary=label)
        self.row(name, "installer bytes nginx sent to ineligible / eligible ids", "",
                 f"{s['installer_bytes_to_ineligible']} B / {s['installer_bytes_to_eligible'] / MiB:.1f} MiB", {},
                 "0 to ineligible", s["installer_bytes_to_ineligible"] == 0, binary=label)

    def bench_footprint(self) -> None:
        stripped = os.path.join(self.work, "outpost.stripped")
        subprocess.run(["strip", "-o", stripped, self.outpost], check=True, timeout=60)
        size = os.path.getsize(stripped)
        curl_size = os.path.getsize(shutil.which("curl"))
        self.row("footprint", "stripped Linux binary (dynamic)", "KiB", size / 1024,
                 {"curl (dynamic, for scale)": curl_size / 1024}, "< 400 KiB", size < 400 * 1024, binary="debian")
        release_dir = os.path.join(TOP, "out", "release")
        for arch in ("x86_64", "arm64"):
            path = self.args.release if arch == "x86_64" and self.args.release else \
                os.path.join(release_dir, f"linux-{arch}", "outpost")
            metric = f"static Linux binary, {arch} (glibc dynamic)"
            if os.path.exists(path):
                n = os.path.getsize(path)
                self.row("footprint", metric, "KiB", n / 1024, {}, "< 2 MiB", n < 2 * MiB, binary="release")
            else:
                self.row("footprint", metric, "KiB", "not built", {}, "< 2 MiB", None, binary="release")
        exe = self.args.windows_exe
        if exe and os.path.exists(exe):
            exe_size = os.path.getsize(exe)
            self.row("footprint", "static Windows exe", "KiB", exe_size / 1024, {}, "< 4 MiB", exe_size < 4 * MiB,
                     binary="release" if "release" in exe else "cross")
        else:
            self.row("footprint", "static Windows exe", "KiB", "not built", {}, "< 4 MiB", None, binary="release")
        # A no-op run: installer up to date, report finds no new incident
        # (the state was primed by one run first), against the simulator.
        reps = self.args.reps or (5 if self.quick else 10)
        self.log(f"no-op run: {reps} repetitions")
        raw = {}
        for label, binary in self.binaries:
            with Sim.start(incidents=20, rate_limit=0, installer_version=VERSION) as sim:
                state = self.fresh("state-noop")
                cfg = write_config(os.path.join(self.work, "noop.json"), sim.url, state, installed=VERSION)
                measure([binary, "-c", cfg, "run"], timeout=120)
                runs = [measure([binary, "-c", cfg, "run"], timeout=60) for _ in range(reps)]
                status = json.load(open(os.path.join(state, "status.json")))
                if status["incidents"]["new"] != 0:
                    raise RuntimeError("the no-op run found new incidents")
                shutil.rmtree(state, ignore_errors=True)
            raw[label] = runs
            name = "footprint: no-op `run` (up to date, 0 new incidents)"
            self.row(name, "CPU time", "s", median(runs, "cpu"), {}, binary=label)
            self.row(name, "peak RSS", "KiB", median(runs, "rss"), {}, binary=label)
            self.row(name, "wall time", "s", median(runs, "wall"), {}, binary=label)
        self.results["raw"]["noop_run"] = raw


# ---- machine and output -----------------------------------------------------------------


def machine() -> dict:
    def first(path: str, key: str) -> str:
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(key):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return "unknown"

    def version(argv: list) -> str:
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.splitlines()[0]
        except Exception:
            return "unknown"

    try:
        debian = open("/etc/debian_version").read().strip()
    except OSError:
        debian = "unknown"
    mem_kib = int(first("/proc/meminfo", "MemTotal").split()[0]) if first("/proc/meminfo", "MemTotal") != "unknown" else 0
    try:
        import requests
        requests_version = requests.__version__
    except ImportError:
        requests_version = "missing"
    return {"nproc": os.cpu_count(), "cpu": first("/proc/cpuinfo", "model name"),
            "memory_gib": round(mem_kib / 1024 / 1024, 1), "kernel": platform.release(),
            "debian": debian, "curl": version(["curl", "--version"]),
            "nginx": version(["sh", "-c", "nginx -v 2>&1"]), "python": platform.python_version(),
            "requests": requests_version}


def fmt(value, unit: str) -> str:
    if isinstance(value, str):
        return value
    if unit == "KiB":
        return f"{value / 1024:.1f} MiB" if value >= 4096 else f"{value:.0f} KiB"
    if unit == "s":
        return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"
    if unit == "%":
        return f"{value:.2f} %"
    if unit == "bytes":
        return f"{value / MiB:.1f} MiB" if value >= MiB else f"{value / 1024:.1f} KiB"
    return f"{value:g}"


def table(rows: list) -> str:
    out = ["| benchmark | metric | binary | outpost | peer | ratio (outpost ÷ peer) | second peer | ratio | target | met |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [r["bench"], r["metric"], r.get("binary", "—"), fmt(r["outpost"], r["unit"])]
        peers = list(r["peers"].items())
        for i in range(2):
            if i < len(peers):
                name, value = peers[i]
                ratio = ("—" if isinstance(r["outpost"], str) or not value
                         else f"{r['outpost'] / value:.2f}")
                cells += [f"{name}: {fmt(value, r['unit'])}", ratio]
            else:
                cells += ["—", "—"]
        cells += [r["target"] or "—", {True: "yes", False: "**no**", None: "—"}[r["met"]]]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description="outpost benchmarks (see the module docstring)")
    parser.add_argument("--outpost", required=True, help="the Debian build's outpost (Release, shared libraries)")
    parser.add_argument("--release", help="the release build's outpost (scripts/release linux-x86_64)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, 250 incidents: a few minutes")
    parser.add_argument("--json", default=RESULTS,
                        help="where the results go (default build-bench/results.json, which git ignores)")
    parser.add_argument("--record", action="store_true",
                        help="also replace the tracked bench/results.json with this run's results (a whole run: "
                             "not with --quick, --only or --reps)")
    parser.add_argument("--workdir", help="scratch directory (default: a new one under /tmp)")
    parser.add_argument("--windows-exe", default=os.path.join(TOP, "out", "release", "windows-x86_64", "outpost.exe"))
    parser.add_argument("--only", action="append", choices=BENCHES)
    parser.add_argument("--fleet-sim", help="tests/tools/fleet_sim (default: tests/tools/fleet_sim beside --outpost)")
    parser.add_argument("--reps", type=int, help="repetitions of update/check/resume/no-op run")
    parser.add_argument("--report-reps", type=int)
    parser.add_argument("--report-incidents", type=int)
    parser.add_argument("--report-100k", action="store_true",
                        help="report memory at 100,000 incidents too (about 8 minutes a binary)")
    parser.add_argument("--report-rate", type=int, default=3000, help="allowed requests per minute (simulator)")
    args = parser.parse_args()
    if args.record and (args.quick or args.only or args.reps):
        parser.error("--record replaces the full run bench/results.json holds: run every benchmark, without "
                     "--quick, --only or --reps")
    own_workdir = args.workdir is None
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="outpost-bench-")
    os.makedirs(args.workdir, exist_ok=True)
    bench = Bench(args)
    bench.results["machine"] = machine()
    bench.results["gnu_time_cpu_subtracted_s"] = calibrate()
    bench.results["outpost_commit"] = subprocess.run(["git", "-C", TOP, "rev-parse", "--short", "HEAD"],
                                                     capture_output=True, text=True).stdout.strip()
    bench.results["started_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    # The machine may be shared: its load says how much the figures can move.
    bench.results["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    bench.results["binaries"] = {label: path for label, path in bench.binaries}
    started = time.monotonic()
    try:
        for name in args.only or BENCHES:
            getattr(bench, f"bench_{name}")()
    finally:
        bench.results["duration_s"] = round(time.monotonic() - started, 1)
        bench.results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(bench.results, f, indent=1)
        if own_workdir:
            shutil.rmtree(args.workdir, ignore_errors=True)
    if args.record and os.path.abspath(args.json) != RECORDED:
        shutil.copyfile(args.json, RECORDED)  # only after a run that finished: a failed one records nothing
    m = bench.results["machine"]
    print(f"outpost benchmarks ({bench.results['mode']}, {bench.results['duration_s']} s) on "
          f"{m['nproc']} × {m['cpu']}, {m['memory_gib']} GiB, Linux {m['kernel']}, Debian {m['debian']}; "
          f"load average {bench.results['load_average_at_start']} at the start, "
          f"{bench.results['load_average_at_end']} at the end")
    for label, path in bench.binaries:
        print(f"binary {label}: {path}")
    print()
    print(table(bench.results["rows"]))
    for row, by_tool in bench.results.get("ciphers", {}).items():
        print(f"\n{row}, protocol and cipher suite negotiated (nginx $ssl_protocol $ssl_cipher): "
              + "; ".join(f"{tool} {cipher}" for tool, cipher in by_tool.items()))
    print(f"\nJSON: {args.json}" + (f" (recorded in {os.path.relpath(RECORDED, TOP)})" if args.record else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
