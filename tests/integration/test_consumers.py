"""The feeds read by the programs that read them (issue 25; PRODUCT.md
sections 2 and 5): Debian's prometheus-node-exporter scrapes the metrics
file through its textfile collector, promtool accepts it, and rsyslog's
imfile ships incidents.jsonl across rotations, each as a user that is not
root and reads through report.readers_group only.

The packages come from scripts/setup (prometheus-node-exporter, prometheus,
rsyslog); without them, or without root (to act as the reader), the tests
are skipped, saying so.
"""

import grp
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest

from outpost_config import sim_config, update_config as set_config
from outpost_run import OUTPOST, as_user, jsonl_lines, outpost
from servers import free_port

NODE_EXPORTER = shutil.which("prometheus-node-exporter")
PROMTOOL = shutil.which("promtool")
RSYSLOGD = shutil.which("rsyslogd") or ("/usr/sbin/rsyslogd" if os.path.exists("/usr/sbin/rsyslogd") else None)
NOBODY = 65534

pytestmark = [
    pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the readers as another user"),
]


@pytest.fixture
def readers(tmp_path, sim):
    """A collector whose state directory sits where nobody:nogroup can reach
    it: (config, state_dir, work dir, gid)."""
    gid = grp.getgrnam("nogroup").gr_gid
    top = tempfile.mkdtemp(prefix="outpost-consumers-", dir="/tmp")
    os.chmod(top, 0o755)
    state_dir = os.path.join(top, "state")
    config, _ = sim_config(tmp_path, sim, report={"metrics_file": "outpost.prom"})
    set_config(config, state_dir=state_dir, installer={"enabled": False},
               report={"readers_group": "nogroup"})
    try:
        yield config, state_dir, top, gid
    finally:
        shutil.rmtree(top, ignore_errors=True)


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.read().decode()


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return line.rsplit(" ", 1)[1]
    return None


@pytest.mark.skipif(not NODE_EXPORTER, reason="prometheus-node-exporter is not installed (scripts/setup)")
@pytest.mark.sim_options(incidents=5, rate_limit=0)
def test_node_exporter_scrapes_the_metrics_while_outpost_runs(sim, readers):
    config, state_dir, top, gid = readers
    first = outpost(config, "run")
    assert first.returncode == 0, first.stderr
    port = free_port()
    exporter = subprocess.Popen(
        [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
         "--collector.textfile", f"--collector.textfile.directory={state_dir}"],
        preexec_fn=as_user(NOBODY, gid), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        up = time.monotonic() + 60
        while True:
            try:
                scrape(url)
                break
            except OSError:
                assert exporter.poll() is None, exporter.stderr.read()
                assert time.monotonic() < up, "node_exporter did not answer within 60 s"
                time.sleep(0.05)
        # Scrape continuously while runs replace the file. A scrape that fails
        # on a loaded machine (a timeout, a reset) is retried; what it would
        # have shown is what the scrapes around it show.
        scrapes, done = [], threading.Event()

        def scraper():
            while not done.is_set():
                try:
                    scrapes.append(scrape(url))
                except OSError:
                    time.sleep(0.05)
        thread = threading.Thread(target=scraper)
        thread.start()
        try:
            for _ in range(4):
                sim.add_incidents(3)
                result = outpost(config, "run")
                assert result.returncode == 0, result.stderr
        finally:
            done.set()
            thread.join(timeout=30)
        scrapes.append(scrape(url))
        assert len(scrapes) >= 5
        for text in scrapes:
            assert metric(text, "node_textfile_scrape_error") == "0", text[-2000:]
            assert metric(text, "outpost_last_run_exit_code") == "0", text[-2000:]
        assert metric(scrapes[-1], "outpost_report_incidents_new") == "3"
    finally:
        exporter.terminate()
        exporter.wait(timeout=10)


@pytest.mark.skipif(not PROMTOOL, reason="promtool (Debian prometheus) is not installed (scripts/setup)")
@pytest.mark.sim_options(incidents=5, rate_limit=0)
def test_promtool_accepts_the_metrics_file(sim, readers):
    config, state_dir, _, _ = readers
    sim.fault("incidents", "status", status=503, count=1)  # a failed run's figures too
    set_config(config, http={"max_attempts": 1, "max_retry_wait": "0s"})
    for _ in range(2):
        outpost(config, "run")
        with open(os.path.join(state_dir, "outpost.prom"), encoding="utf-8") as f:
            text = f.read()
        lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True,
                              timeout=60)
        assert lint.returncode == 0, lint.stdout + lint.stderr


RSYSLOG_CONF = """\
global(workDirectory="{work}" maxMessageSize="256k")
module(load="imfile" mode="inotify")
template(name="line" type="string" string="%msg%\\n")
ruleset(name="incidents") {{
  action(type="omfile" file="{out}" template="line")
}}
input(type="imfile" file="{jsonl}" tag="outpost:" ruleset="incidents" freshStartTail="off")
"""


@pytest.mark.skipif(not RSYSLOGD, reason="rsyslog is not installed (scripts/setup)")
@pytest.mark.sim_options(incidents=4, rate_limit=0)
def test_rsyslog_ships_every_incident_once_across_rotations(sim, readers):
    config, state_dir, top, gid = readers
    # Files small enough that the runs below rotate incidents.jsonl several
    # times, yet larger than what one run appends (8 incidents on long chains,
    # about 100 KB): each file is the live one between two runs, as with the
    # default 64 MiB. A file born and renamed away within one run's
    # milliseconds is one that a shipper following the name may never see
    # (imfile missed such a 1-line file under faketime, in CI and here);
    # the README says to keep the limit above a run's output.
    set_config(config, report={"jsonl_max_bytes": 131072, "jsonl_keep": 100})
    work = os.path.join(top, "rsyslog")
    os.mkdir(work)
    os.chown(work, NOBODY, gid)
    out = os.path.join(work, "shipped.jsonl")
    conf = os.path.join(work, "rsyslog.conf")
    with open(conf, "w", encoding="utf-8") as f:
        f.write(RSYSLOG_CONF.format(work=work, out=out, jsonl=os.path.join(state_dir, "incidents.jsonl")))
    first = outpost(config, "run")
    assert first.returncode == 0, first.stderr
    shipper = subprocess.Popen([RSYSLOGD, "-n", "-f", conf, "-i", os.path.join(work, "rsyslogd.pid")],
                               preexec_fn=as_user(NOBODY, gid), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    try:
        def lines_in(path):
            if not os.path.exists(path):
                return 0
            with open(path, encoding="utf-8") as f:
                return len(f.read().splitlines())

        appended = 4
        for _ in range(6):
            sim.add_incidents(8)
            result = outpost(config, "run")
            assert result.returncode == 0, result.stderr
            appended += 8
            # outpost runs hourly, not back to back: the shipper has caught up
            # with one run (whose appends may rotate the file, possibly more
            # than once) before the next one starts. On a loaded machine that
            # can take a while; a shipper that lost a line never catches up
            # and the assertions below say so.
            caught_up = time.monotonic() + 30
            while lines_in(out) < appended and time.monotonic() < caught_up:
                time.sleep(0.1)
        written = jsonl_lines(state_dir)
        rotated = [n for n in os.listdir(state_dir) if n.startswith("incidents.jsonl.")]
        assert rotated, "the runs did not rotate incidents.jsonl; make the incidents more or the limit smaller"
        ids = [json.loads(line)["id"] for line in written]
        deadline = time.monotonic() + 60
        shipped = []
        while time.monotonic() < deadline:
            if os.path.exists(out):
                with open(out, encoding="utf-8") as f:
                    shipped = f.read().splitlines()
                if len(shipped) >= len(ids):
                    break
            time.sleep(0.2)
        parsed = [json.loads(line) for line in shipped]  # none cut: each line is whole JSON
        assert sorted(p["id"] for p in parsed) == sorted(ids), (len(parsed), len(ids))
        assert len({p["id"] for p in parsed}) == len(parsed), "an incident arrived twice"
        assert len(ids) == 4 + 6 * 8
    finally:
        shipper.terminate()
        try:
            shipper.wait(timeout=10)
        except subprocess.TimeoutExpired:
            shipper.kill()
            shipper.wait()


RSYSLOG_CEF_CONF = """\
global(workDirectory="{work}" maxMessageSize="256k")
module(load="imfile" mode="inotify")
input(type="imfile" file="{cef}" tag="outpost" ruleset="outpost-cef" freshStartTail="off")
ruleset(name="outpost-cef") {{
  action(type="omfwd" target="127.0.0.1" port="{port}" protocol="tcp" template="RSYSLOG_SyslogProtocol23Format")
}}
"""

# Strings a SIEM parser trips over, in every field CEF carries.
HOSTILE = {"policy": {"name": "Exfil | pipe = equals \\ back\tslash \"quoted\" – ünïcødé 顧客"},
           "dataset": {"name": "a=b\\c|d"},
           "user": {"local_username": "o'brien \"x\" =|\\"}}


@pytest.mark.skipif(not RSYSLOGD, reason="rsyslog is not installed (scripts/setup)")
@pytest.mark.sim_options(incidents=6, rate_limit=0)
def test_rsyslog_forwards_the_cef_file_field_for_field(sim, readers):
    """rsyslog's imfile reads report.cef_file as a reader of the group and
    forwards each line over TCP syslog (RFC 5424) to a listener here; every
    received message's CEF text parses strictly and equals, field for field,
    the incident outpost wrote to incidents.jsonl, hostile strings included."""
    import socket

    import cef_check

    config, state_dir, top, gid = readers
    set_config(config, report={"cef_file": "incidents.cef", "ocsf_file": "findings.ocsf.jsonl",
                               "jsonl_max_bytes": 16384, "jsonl_keep": 100})
    sim.add_incidents(3, fields=HOSTILE)
    work = os.path.join(top, "rsyslog")
    os.mkdir(work)
    os.chown(work, NOBODY, gid)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    received = []

    def collect():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
                    *whole, data = data.split(b"\n")
                    received.extend(whole)

    threading.Thread(target=collect, daemon=True).start()
    conf = os.path.join(work, "rsyslog.conf")
    with open(conf, "w", encoding="utf-8") as f:
        f.write(RSYSLOG_CEF_CONF.format(work=work, cef=os.path.join(state_dir, "incidents.cef"),
                                        port=listener.getsockname()[1]))
    # The shipper starts once the state directory exists, as it does on a
    # machine where outpost is installed: imfile cannot watch a file whose
    # folder is not there yet.
    result = outpost(config, "run")
    assert result.returncode == 0, result.stderr
    shipper = subprocess.Popen([RSYSLOGD, "-n", "-f", conf, "-i", os.path.join(work, "rsyslogd.pid")],
                               preexec_fn=as_user(NOBODY, gid), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)

    def wait_for_all():
        items = {json.loads(line)["id"]: json.loads(line) for line in jsonl_lines(state_dir)}
        deadline = time.monotonic() + 60
        while len(received) < len(items) and time.monotonic() < deadline:
            time.sleep(0.2)
        return items

    try:
        items = wait_for_all()
        for _ in range(2):
            # Runs are an hour apart, not back to back (as in the test above).
            sim.add_incidents(5)
            result = outpost(config, "run")
            assert result.returncode == 0, result.stderr
            items = wait_for_all()
    finally:
        shipper.terminate()
        shipper.wait(timeout=10)
        listener.close()
    messages = []
    for raw in received:
        text = raw.decode("utf-8")
        # RFC 5424: <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID SD MSG
        parts = text.split(" ", 7)
        assert parts[0].endswith(">1") and parts[3] == "outpost" and len(parts) == 8, text[:200]
        messages.append(cef_check.parse(parts[7]))
    by_id = {ext["externalId"]: (header, ext) for header, ext in messages}
    assert len(by_id) == len(messages) == len(items), (len(messages), len(items), shipper.stderr.read()[-2000:])
    assert set(by_id) == set(items)
    # Both SIEM feeds, rotated ones included, readable by the readers group only.
    feed_files = [n for n in os.listdir(state_dir) if n.startswith(("incidents.cef", "findings.ocsf.jsonl"))]
    assert any(n.startswith("findings.ocsf.jsonl.") for n in feed_files), "the OCSF file did not rotate"
    for name in feed_files:
        st = os.stat(os.path.join(state_dir, name))
        assert (st.st_mode & 0o777, st.st_gid) == (0o640, gid), name
    hostile = [i for i in items.values() if i["policy"] == HOSTILE["policy"]["name"]]
    assert len(hostile) == 3
    for incident_id, item in items.items():
        header, ext = by_id[incident_id]
        assert header[4] == f"DLP incident: {item['policy']}"
        labels = {ext[k + "Label"]: ext[k] for k in ("cs1", "cs2", "cs3", "cs4", "cs5", "cs6") if k in ext}
        assert labels["policy"] == item["policy"] and labels["dataset"] == item["dataset"]
        assert ext.get("suser") == (item["user"] or next((e["user"] for e in item["lineage"]["events"]
                                                           if e.get("user")), None))
        assert ext["act"] == ("blocked" if item["blocked"] else "detected")
