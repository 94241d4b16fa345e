"""The administrator's day, round 2 (issue 25; PRODUCT.md sections 1, 5, 10):
a broken machine is never reported OK, failures that last are failures,
every --json command prints one document, a configuration error writes
nothing, and a log file gets one line per command.

Times in the status files written here are fixed dates in the past (2020),
so no test depends on today's date: "long ago" is always long ago.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile

import pytest

from outpost_config import sim_config, update_config as set_config
from outpost_run import OUTPOST, as_user, outpost, outpost_start

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")


def report_only(config):
    """A collector: report only, failing fast (one attempt, no retry wait)."""
    set_config(config, installer={"enabled": False}, http={"max_attempts": 1, "max_retry_wait": "0s"})


def write_status(state_dir, last_run):
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    doc = {"schema_version": 1, "generated_at": "2020-01-02T00:00:00Z",
           "agent": {"version": "0", "hostname": "h", "os": "linux", "arch": "x86_64"}, "last_run": last_run}
    with open(os.path.join(state_dir, "status.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f)


def read_status(state_dir):
    with open(os.path.join(state_dir, "status.json"), encoding="utf-8") as f:
        return json.load(f)


# ---- status: a machine that stopped working is not OK ------------------------------------------

def test_a_success_long_ago_is_stale(tmp_path):
    state = tmp_path / "state"
    config = tmp_path / "outpost.json"
    config.write_text(json.dumps({"state_dir": str(state)}))
    write_status(str(state), {"started_at": "2020-01-01T00:00:00Z", "finished_at": "2020-01-01T00:00:05Z",
                              "result": "ok", "exit_code": 0, "errors": [],
                              "last_success_at": "2020-01-01T00:00:05Z", "failing_since": None})
    result = outpost(config, "status")
    # Without --max-age: status.max_age (3h by default) applies.
    assert result.returncode == 75, result.stdout + result.stderr
    assert result.stdout.startswith("ATTENTION: stale: the last successful run finished ")
    assert "longer than status.max_age 3h 0m" in result.stdout.splitlines()[0]
    doc = json.loads(outpost(config, "status", "--json").stdout)
    assert doc["verdict"]["attention"] is True and doc["verdict"]["exit_code"] == 75


@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_temporary_failures_past_max_failing_exit_1(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim)
    report_only(config)
    sim.fault("incidents", "status", status=503, count=-1)
    # A fresh failure stays temporary: 75, and failing_since starts.
    first = outpost(config, "run")
    assert first.returncode == 75, first.stderr
    last = read_status(state_dir)["last_run"]
    assert last["failing_since"] == last["started_at"] and last["last_success_at"] is None
    # The same failure when the runs have failed since 2020: 1, said on stderr.
    write_status(state_dir, {"started_at": "2020-01-01T00:00:00Z", "finished_at": "2020-01-01T00:00:05Z",
                             "result": "failed", "exit_code": 75, "errors": [{"stage": "report", "message": "503"}],
                             "last_success_at": "2019-12-31T23:00:05Z", "failing_since": "2020-01-01T00:00:00Z"})
    second = outpost(config, "run")
    assert second.returncode == 1, second.stderr
    assert "failing since 2020-01-01T00:00:00Z, longer than status.max_failing (24h 0m)" in second.stderr
    last = read_status(state_dir)["last_run"]
    assert last["exit_code"] == 1 and last["failing_since"] == "2020-01-01T00:00:00Z"
    assert last["last_success_at"] == "2019-12-31T23:00:05Z"
    shown = outpost(config, "status")
    assert shown.returncode == 1
    assert "failing since 2020-01-01T00:00:00Z" in shown.stdout.splitlines()[0]
    # A success ends it.
    sim.clear_faults()
    third = outpost(config, "run")
    assert third.returncode == 0, third.stderr
    last = read_status(state_dir)["last_run"]
    assert last["failing_since"] is None and last["last_success_at"] == last["finished_at"]
    assert outpost(config, "status").returncode == 0


@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_a_run_that_cannot_write_its_status_is_not_ok(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim)
    report_only(config)
    assert outpost(config, "run").returncode == 0
    assert outpost(config, "status").returncode == 0
    path = os.path.join(state_dir, "status.json")
    with open(path, encoding="utf-8") as f:
        good = f.read()
    # The status file cannot be replaced (a directory stands in its place),
    # the rest of the state directory can be written.
    os.rename(path, path + ".saved")
    os.mkdir(path)
    broken = outpost(config, "run")
    assert broken.returncode == 1, broken.stderr
    assert "cannot write the status file" in broken.stderr
    os.rmdir(path)
    os.rename(path + ".saved", path)
    # The file still says the earlier run succeeded; status knows better.
    with open(path, encoding="utf-8") as f:
        assert f.read() == good
    shown = outpost(config, "status")
    assert shown.returncode == 1, shown.stdout
    first = shown.stdout.splitlines()[0]
    assert first.startswith("ATTENTION: the run at ") and "could not record its outcome" in first, first
    # The next run that writes its status clears the note.
    assert outpost(config, "run").returncode == 0
    assert outpost(config, "status").returncode == 0


# ---- --json: one document, failures included --------------------------------------------------

@pytest.mark.parametrize("args, exit_code, code", [
    (["--json", "frobnicate"], 2, "USAGE"),
    (["status", "--json", "--max-age", "soon"], 2, "USAGE"),
    (["--json", "check"], 2, "CONFIG"),
])
def test_json_failures_print_one_error_document(tmp_path, args, exit_code, code):
    config = tmp_path / "outpost.json"
    config.write_text(json.dumps({"state_dir": str(tmp_path / "state")}))
    result = outpost(config, *args)
    assert result.returncode == exit_code, result.stderr
    doc = json.loads(result.stdout)
    assert doc["error"]["code"] == code and doc["error"]["exit"] == exit_code
    assert doc["error"]["message"] and doc["error"]["message"] in result.stderr


# ---- A configuration error writes nothing ------------------------------------------------------

@pytest.mark.parametrize("command", ["check", "update", "report", "run", "publish"])
def test_a_configuration_error_writes_nothing(tmp_path, command):
    state = tmp_path / "state"
    config = tmp_path / "outpost.json"
    config.write_text(json.dumps({"state_dir": str(state), "log": {"file": "outpost.log"}}))
    result = outpost(config, command, key="")
    assert result.returncode == 2, result.stderr
    assert "base_url" in result.stderr
    assert not state.exists(), sorted(os.listdir(state))


def test_a_missing_publisher_ca_writes_nothing(tmp_path):
    state = tmp_path / "state"
    config = tmp_path / "outpost.json"
    missing = tmp_path / "publisher-ca.pem"
    config.write_text(json.dumps({"state_dir": str(state), "installer": {"verify": {"trusted_ca_file": str(missing)}},
                                  "mirror": {"urls": [(tmp_path / "mirror").as_uri()],
                                             "public_keys": [str(tmp_path / "mirror.pub")]},
                                  "report": {"enabled": False}}))
    for command in ("update", "run"):
        result = outpost(config, command)
        assert result.returncode == 2, result.stderr
        assert f"installer.verify.trusted_ca_file: {missing} does not exist" in result.stderr
        assert not state.exists()


def test_a_readers_group_that_does_not_exist_writes_nothing(tmp_path):
    state = tmp_path / "state"
    config = tmp_path / "outpost.json"
    config.write_text(json.dumps({"state_dir": str(state), "log": {"file": "outpost.log"},
                                  "installer": {"enabled": False},
                                  "report": {"enabled": False, "readers_group": "no-such-group-outpost"}}))
    for command in ("run", "rollback"):
        result = outpost(config, command)
        assert result.returncode == 2, result.stderr
        assert "report.readers_group" in result.stderr and "no-such-group-outpost" in result.stderr
        assert not state.exists(), sorted(os.listdir(state))


def test_the_shipped_placeholder_is_a_configuration_error(tmp_path):
    state = tmp_path / "state"
    config = tmp_path / "outpost.json"
    config.write_text(json.dumps({"base_url": "https://tenant.example.com", "state_dir": str(state)}))
    for command in ("check", "run"):
        result = outpost(config, command)
        assert result.returncode == 2, result.stderr
        line = result.stderr.strip()
        assert "`base_url` is still the placeholder https://tenant.example.com" in line, line
        assert len(line.splitlines()) == 1
        assert not state.exists()


# ---- The log file: one line per command --------------------------------------------------------

@pytest.mark.sim_options(incidents=3, rate_limit=0)
def test_every_run_leaves_one_line_in_the_log(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim)
    report_only(config)
    set_config(config, log={"file": "outpost.log"})
    result = outpost(config, "run")
    assert result.returncode == 0, result.stderr
    with open(os.path.join(state_dir, "outpost.log"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert len(lines) == 1, lines
    assert " run[" in lines[0] and "finished ok, exit code 0" in lines[0] and " s" in lines[0]
    # status reads; it neither writes the log nor warns about it, even when
    # the log cannot be opened.
    set_config(config, log={"file": str(tmp_path / "no-such-dir" / "outpost.log")})
    shown = outpost(config, "status")
    assert shown.returncode == 0 and shown.stderr == ""


# ---- The smaller ones --------------------------------------------------------------------------

@pytest.mark.parametrize("section, says", [
    ({"state_dir": "C:\temp\new"}, "`state_dir` contains a control character (0x09 at position 3)"),
    ({"mirror": {"urls": ["/srv/outpost-mirror"]}}, "for a local directory write file:///srv/outpost-mirror"),
    ({"mirror": {"urls": ["file://tmp/mirror"]}}, "names the host \"tmp\"; a local directory takes three slashes: "
                                                  "file:///tmp/mirror"),
])
def test_configured_paths_that_cannot_be_meant(tmp_path, section, says):
    config = tmp_path / "outpost.json"
    doc = {"state_dir": str(tmp_path / "state"), **section}
    config.write_text(json.dumps(doc))
    result = outpost(config, "check")
    assert result.returncode == 2, result.stderr
    assert says in result.stderr, result.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.sim_options(rate_limit=0)
def test_ctrl_c_during_update_says_the_next_run_resumes(sim, tmp_path):
    config, state_dir = sim_config(tmp_path, sim)
    set_config(config, installer={"verify": {"require_signature": False, "trusted_ca_file": None}},
               report={"enabled": False})
    sim.fault("installer", "stall", seconds=60, then="continue")
    proc = outpost_start(config, "update")
    # Wait until the download has begun (the partial file exists), then Ctrl-C.
    downloads = os.path.join(state_dir, "downloads")
    for _ in range(400):
        if os.path.isdir(downloads) and os.listdir(downloads):
            break
        if proc.poll() is not None:
            break
        subprocess.run(["sleep", "0.05"])
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.rstrip().endswith("outpost: interrupted; the next run resumes where this one stopped"), err
    sim.clear_faults()
    again = outpost(config, "update")
    assert again.returncode == 0, again.stderr


def test_keygen_writes_the_public_key_file(tmp_path):
    key, pub = tmp_path / "signing.pem", tmp_path / "signing.pub"
    result = outpost(None, "keygen", "-o", str(key), "--public-out", str(pub))
    assert result.returncode == 0, result.stderr
    assert pub.read_text() == result.stdout.split("key id:")[0]
    assert oct(pub.stat().st_mode & 0o777) == "0o644" and oct(key.stat().st_mode & 0o777) == "0o600"
    # An existing public file: refused before the private key is written.
    again = outpost(None, "keygen", "-o", str(tmp_path / "other.pem"), "--public-out", str(pub))
    assert again.returncode == 2 and "already exists" in again.stderr
    assert not (tmp_path / "other.pem").exists()


def test_a_pem_on_one_line_is_explained(tmp_path):
    key, pub = tmp_path / "signing.pem", tmp_path / "signing.pub"
    assert outpost(None, "keygen", "-o", str(key), "--public-out", str(pub)).returncode == 0
    config = tmp_path / "outpost.json"
    config.write_text(json.dumps({"state_dir": str(tmp_path / "state"),
                                  "mirror": {"urls": [(tmp_path / "mirror").as_uri()],
                                             "public_keys": [pub.read_text().replace("\n", " ")]}}))
    result = outpost(config, "check")
    assert result.returncode == 2, result.stderr
    assert "is a PEM key on one line: a PEM needs its line breaks" in result.stderr
    assert "mbedtls" not in result.stderr


# ---- Readable feeds ----------------------------------------------------------------------------

@pytest.fixture
def request_cleanup():
    """Directories to remove after the test."""
    paths = []
    yield paths
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


NOBODY = 65534


def as_reader(gid, *argv):
    """argv as the user nobody with gid as its only group (a SIEM shipper)."""
    return subprocess.run(list(argv), preexec_fn=as_user(NOBODY, gid), capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to change groups and to act as another user")
@pytest.mark.sim_options(incidents=4, rate_limit=0)
def test_readers_group_reads_the_feeds_and_nothing_else(sim, tmp_path, request_cleanup):
    import grp
    group = grp.getgrnam("nogroup")
    config, _ = sim_config(tmp_path, sim, report={"metrics_file": "outpost.prom"})
    # A state directory the reader can reach (pytest's folders are 0700).
    top = tempfile.mkdtemp(prefix="outpost-readers-", dir="/tmp")
    request_cleanup.append(top)
    os.chmod(top, 0o755)
    state_dir = os.path.join(top, "state")
    set_config(config, state_dir=state_dir,
               installer={"verify": {"require_signature": False, "trusted_ca_file": None}},
               report={"readers_group": "nogroup"})
    result = outpost(config, "run")
    assert result.returncode == 0, result.stderr
    st = os.stat(state_dir)
    assert (st.st_mode & 0o777, st.st_gid) == (0o750, group.gr_gid)
    for name in ("status.json", "incidents.jsonl", "outpost.prom"):
        st = os.stat(os.path.join(state_dir, name))
        assert (st.st_mode & 0o777, st.st_gid) == (0o640, group.gr_gid), name
        reader = as_reader(group.gr_gid, "cat", os.path.join(state_dir, name))
        assert reader.returncode == 0 and reader.stdout, (name, reader.stderr)
    # Nothing else: the state, the staging area, the lock stay private.
    for name in ("state.json", "staging", "outpost.lock"):
        path = os.path.join(state_dir, name)
        assert os.stat(path).st_mode & 0o077 == 0, name
        assert as_reader(group.gr_gid, "cat", path).returncode != 0, name
    # A compliance script in the group runs status itself.
    readable = os.path.join(top, "outpost.json")
    shutil.copy(config, readable)
    os.chmod(readable, 0o644)
    shown = outpost(readable, "status", "--json", key=None, user=(NOBODY, group.gr_gid))
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["verdict"]["attention"] is False
    # A group that does not exist: a configuration error naming the key.
    set_config(config, report={"readers_group": "no-such-group-outpost"})
    bad = outpost(config, "run")
    assert bad.returncode == 2 and "report.readers_group" in bad.stderr, bad.stderr


@pytest.mark.sim_options(rate_limit=0)
def test_publish_writes_a_world_readable_mirror_and_rollout_0_is_not_an_update(tmp_path, sim):
    from mirror_helper import V2, endpoint_config, fake_installer, keygen, publisher_config
    key_file = tmp_path / "keys" / "mirror.key"
    key_file.parent.mkdir()
    public_pem, _ = keygen(key_file)
    sim.config(installer=str(fake_installer(tmp_path, 1)), installer_version=V2)
    mirror = tmp_path / "mirror"
    cfg = publisher_config(tmp_path, sim, key_file, mirror)
    # The umask of a hardened service (systemd UMask=0077) changes nothing.
    result = outpost(cfg, "publish", "--rollout", "0", umask=0o077)
    assert result.returncode == 0, result.stderr
    modes = {str(p.relative_to(mirror)): p.stat().st_mode & 0o777 for p in [mirror, *mirror.rglob("*")]}
    for name, mode in modes.items():
        wanted = 0o755 if (mirror / name).is_dir() else 0o644
        assert mode == wanted, (name, oct(mode), modes)
    # Nobody is in a 0 % rollout: check has nothing to do (0), and says why.
    endpoint, _ = endpoint_config(tmp_path, "endpoint", [mirror.as_uri()], [public_pem])
    check = outpost(endpoint, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.startswith(f"not in this rollout: {V2} is offered to 0% of machines"), check.stdout
