"""The machine's own proxy and identity (issue 33, PRODUCT.md section 2
`proxy`, `proxy_auth`, `proxy_keytab`): squid in front of the simulator,
authenticating with

  - Negotiate against a real MIT Kerberos realm (krb5_helper: a KDC on a
    loopback port, the service key HTTP/localhost for squid's
    negotiate_kerberos_auth, a client key for outpost): `check`, `update`
    and a resume on the next run with only `proxy_keytab` configured (the
    proxy from HTTPS_PROXY, `proxy` left "system"); a keytab of an older
    key version is exit 3 naming the proxy; no ticket or key reaches a
    file (the credentials cache is in memory, a KRB5CCNAME file the
    environment names stays unwritten);
  - NTLM through ntlm_fake_auth (a real NTLM handshake) with the proxy
    URL's credentials, and without credentials on a build without SSPI;
  - Basic with the URL's credentials under proxy_auth "basic", and a
    restriction the proxy does not offer;
and `proxy` "system" with HTTPS_PROXY / NO_PROXY, "direct" with HTTPS_PROXY
pointing at nothing. -v names, per host, the proxy and why, and the scheme
that authenticated; no password is ever printed. Everything is started
once per module on free loopback ports.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from krb5_helper import Realm, require_krb5
from outpost_run import API_KEY, OUTPOST, error_lines, outpost
from simctl import Sim
from squid_helper import Squid, require_squid

pytestmark = pytest.mark.skipif(not OUTPOST, reason="OUTPOST_BIN (the built outpost binary) is not set")


def libcurl_features() -> set:
    """What `outpost version --verbose --json` says the binary's libcurl has."""
    if not OUTPOST:
        return set()
    r = subprocess.run([OUTPOST, "version", "--verbose", "--json"], capture_output=True, text=True, timeout=60)
    return set(json.loads(r.stdout)["libraries"]["libcurl"]["features"]) if r.returncode == 0 else set()


# Negotiate off Windows needs libcurl's GSS-API: the build against Debian's
# libcurl has it, the static release binaries do not (README, "Behind a
# corporate proxy"); there proxy_keytab is exit 2 naming it and the fix.
GSS = "GSS-API" in libcurl_features()


def assert_keytab_needs_gssapi(r, state: Path) -> None:
    assert r.returncode == 2, r.stderr
    lines = error_lines(r)
    assert len(lines) == 1 and "proxy_keytab" in lines[0] and "GSS-API" in lines[0], r.stderr
    assert not (state / "downloads").exists()

CLIENT = "host/endpoint.test"
SERVICE = "HTTP/localhost"
INSTALLER_SIZE = 2 * 1024 * 1024
SIM_VERSION = "26.01.03.24329-0de7ab+"
NTLM_USER = "CORP\\endpoint"
NTLM_PASSWORD = "Ntlm-pa55-9c1e"
BASIC_USER = "fleet-proxy"
BASIC_PASSWORD = "Ba51c-s3cret-41"


# ---- the realm, the proxies, the platform: once per module ------------------------------------

@pytest.fixture(scope="module")
def realm():
    require_krb5()
    with Realm.start() as r:
        yield r


@pytest.fixture(scope="module")
def keytabs(realm, tmp_path_factory):
    """(current, old): outpost's client keytab, and one written before the
    last key change (its key version one below the KDC's)."""
    d = tmp_path_factory.mktemp("keytabs")
    os.chmod(d, 0o700)
    realm.add_principal(SERVICE)
    realm.write_keytab(SERVICE, str(d / "squid.keytab"))
    realm.add_principal(CLIENT)
    realm.write_keytab(CLIENT, str(d / "old.keytab"))
    realm.write_keytab(CLIENT, str(d / "client.keytab"))
    for name in ("old.keytab", "client.keytab"):
        os.chmod(d / name, 0o600)
    return d / "client.keytab", d / "old.keytab", d / "squid.keytab"


@pytest.fixture(scope="module")
def squid_krb(realm, keytabs):
    require_squid()
    with Squid.start(scheme="negotiate", kerberos=(realm, str(keytabs[2]))) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def squid_ntlm():
    require_squid()
    with Squid.start(scheme="ntlm") as proxy:
        yield proxy


@pytest.fixture(scope="module")
def squid_basic():
    require_squid()
    with Squid.start(auth=(BASIC_USER, BASIC_PASSWORD)) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def sim():
    with Sim.start(tls=True, incidents=2, rate_limit=0, seed=5, installer_size=INSTALLER_SIZE) as s:
        yield s


@pytest.fixture
def fresh(sim):
    sim.clear_faults()
    sim.config(redirect=False)
    sim.clear_log()
    yield


# ---- helpers -------------------------------------------------------------------------------------

def write_config(tmp_path: Path, sim: Sim, **extra) -> tuple[Path, Path]:
    state = tmp_path / "state"
    cfg = {
        "base_url": sim.url,
        "state_dir": str(state),
        "tls": {"ca_file": sim.ca_file},
        "http": {"max_attempts": 2, "max_retry_wait": "1s", "low_speed_timeout": "5s"},
        "installer": {"installed_version": "26.01.03.24000",
                      "verify": {"require_signature": False, "trusted_ca_file": None}},
        "schedule": {"jitter": "0s"},
    }
    cfg.update(extra)
    path = tmp_path / "outpost.json"
    path.write_text(json.dumps(cfg))
    return path, state


def kerberos_env(realm: Realm, proxy: Squid, tmp_path: Path) -> dict:
    """HTTPS_PROXY naming the proxy, the realm's krb5.conf, and a
    KRB5CCNAME file that outpost must leave unwritten (its cache is in memory)."""
    return {**realm.env(), "HTTPS_PROXY": proxy.url_named, "KRB5CCNAME": f"FILE:{tmp_path / 'ccache'}"}


def through(proxy: Squid, sim: Sim, user: str | None = None) -> list[dict]:
    host = f"localhost:{sim.port}"
    log = proxy.wait_log(lambda l: any(e["url"] == host and e["status"] == 200 for e in l))
    entries = [e for e in log if e["url"] == host and e["status"] == 200]
    assert entries, f"nothing went through the proxy to {host}: {log}"
    if user:
        assert all(e["user"] == user for e in entries), entries
    return entries


def staged_sha(state: Path) -> str | None:
    current = state / "staging" / "current"
    if not current.exists():
        return None
    version = current.read_text().strip()
    return json.loads((state / "staging" / version / "manifest.json").read_text())["sha256"]


def assert_nothing_secret_written(r, state: Path, secrets: list[bytes]) -> None:
    """No secret in the output or in any file under state_dir (logs,
    status, state; the partial download is the installer's bytes)."""
    for secret in secrets:
        assert secret.decode(errors="replace") not in r.stdout + r.stderr
        if state.exists():
            for path in state.rglob("*"):
                if path.is_file() and path.suffix != ".part":
                    assert secret not in path.read_bytes(), f"secret found in {path}"


def key_material(keytab: Path) -> list[bytes]:
    """Pieces of the keytab's key bytes to look for elsewhere: 16-byte
    windows from its second half (where the keys are)."""
    data = keytab.read_bytes()
    return [data[i:i + 16] for i in range(len(data) // 2, len(data) - 16, 16)]


# ---- Kerberos (Negotiate) with the client keytab -------------------------------------------------

def test_kerberos_check_update_and_resume_with_only_the_keytab(fresh, realm, keytabs, squid_krb, sim, tmp_path):
    client, _, _ = keytabs
    cfg, state = write_config(tmp_path, sim, proxy_keytab=str(client))
    env = kerberos_env(realm, squid_krb, tmp_path)
    squid_krb.clear_log()

    r = outpost(cfg, "-v", "check", env_extra=env)
    if not GSS:
        assert_keytab_needs_gssapi(r, state)
        assert sim.log()["summary"]["total"] == 0
        return
    assert r.returncode == 10, r.stderr
    host = f"https://localhost:{sim.port}"
    assert f"proxy for {host}: {squid_krb.url_named} (the system's setting: HTTPS_PROXY)" in r.stderr, r.stderr
    assert f"proxy {squid_krb.url_named} for {host}: authenticated with Negotiate with the process's own " \
           "identity" in r.stderr, r.stderr
    through(squid_krb, sim, user=f"{CLIENT}@{realm.realm}")

    # update, cut mid-body: resumed on the next run, through the proxy again
    sim.fault("installer", "truncate", bytes=INSTALLER_SIZE // 3, count=-1)
    r = outpost(cfg, "update", env_extra=env)
    assert r.returncode == 75, r.stderr
    assert (state / "downloads" / f"{SIM_VERSION}.part").exists()
    sim.clear_faults()
    sim.clear_log()
    r = outpost(cfg, "update", env_extra=env)
    assert r.returncode == 0, r.stderr
    entries = [e for e in sim.log()["requests"] if e["route"] in ("installer", "storage")]
    assert len(entries) == 1 and entries[0]["status"] == 206 and entries[0]["range"], entries
    assert staged_sha(state) == sim.installer()["sha256"]

    # the tickets stayed in memory: the cache file the environment names was never written
    assert not (tmp_path / "ccache").exists()
    assert_nothing_secret_written(r, state, key_material(client) + [API_KEY.encode()])


def test_kerberos_keytab_of_an_old_key_version_is_exit_3(fresh, realm, keytabs, squid_krb, sim, tmp_path):
    _, old, _ = keytabs
    cfg, state = write_config(tmp_path, sim, proxy_keytab=str(old))
    r = outpost(cfg, "check", env_extra=kerberos_env(realm, squid_krb, tmp_path))
    if not GSS:
        assert_keytab_needs_gssapi(r, state)
        return
    assert r.returncode == 3, r.stderr
    lines = error_lines(r)
    assert len(lines) == 1, r.stderr
    assert squid_krb.url_named in lines[0] and "407" in lines[0] and "proxy_keytab" in lines[0], lines[0]
    assert sim.log()["summary"]["total"] == 0


def test_keytab_is_a_trusted_input(fresh, realm, keytabs, squid_krb, sim, tmp_path):
    """Readable by others: refused before anything is written (exit 2, naming it)."""
    client, _, _ = keytabs
    loose = tmp_path / "loose.keytab"
    shutil.copyfile(client, loose)
    os.chmod(loose, 0o644)
    cfg, state = write_config(tmp_path, sim, proxy_keytab=str(loose))
    r = outpost(cfg, "check", env_extra=kerberos_env(realm, squid_krb, tmp_path))
    assert r.returncode == 2, r.stderr
    # without GSS-API the key is refused for that before it is read
    assert "proxy_keytab" in r.stderr and (str(loose) in r.stderr or not GSS), r.stderr
    assert not state.exists()


# ---- NTLM (ntlm_fake_auth) ---------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["auto", "ntlm"])
def test_ntlm_handshake_with_the_urls_credentials(fresh, squid_ntlm, sim, tmp_path, mode):
    user = NTLM_USER.replace("\\", "%5C")
    proxy_url = f"http://{user}:{NTLM_PASSWORD}@127.0.0.1:{squid_ntlm.port}"
    cfg, state = write_config(tmp_path, sim, proxy=proxy_url, proxy_auth=mode)
    squid_ntlm.clear_log()
    r = outpost(cfg, "-v", "check")
    assert r.returncode == 10, r.stderr
    assert "authenticated with NTLM with the proxy URL's credentials" in r.stderr, r.stderr
    assert "(the configuration's `proxy`: `proxy`)" in r.stderr
    entries = [e for e in squid_ntlm.wait_log(lambda l: any(e["status"] == 200 for e in l)) if e["status"] == 200]
    assert entries and all("endpoint" in e["user"] for e in entries), entries
    assert_nothing_secret_written(r, state, [NTLM_PASSWORD.encode()])


def test_ntlm_without_credentials_or_sspi_is_exit_3(fresh, squid_ntlm, sim, tmp_path):
    """Off Windows NTLM has no identity of its own: a proxy offering only
    NTLM to a URL without credentials is refused, exit 3 naming it."""
    cfg, state = write_config(tmp_path, sim, proxy=squid_ntlm.url)
    r = outpost(cfg, "check")
    assert r.returncode == 3, r.stderr
    lines = error_lines(r)
    assert len(lines) == 1 and squid_ntlm.url in lines[0] and "407" in lines[0], r.stderr


# ---- Basic with the URL's credentials --------------------------------------------------------------

def test_basic_with_the_urls_credentials_never_printed(fresh, squid_basic, sim, tmp_path):
    cfg, state = write_config(tmp_path, sim, proxy=squid_basic.url_with_credentials, proxy_auth="basic")
    r = outpost(cfg, "-vv", "check")
    assert r.returncode == 10, r.stderr
    assert f"proxy for https://localhost:{sim.port}: {squid_basic.url} (the configuration's `proxy`" in r.stderr
    assert "authenticated with Basic with the proxy URL's credentials" in r.stderr, r.stderr
    through(squid_basic, sim, user=BASIC_USER)
    assert_nothing_secret_written(r, state, [BASIC_PASSWORD.encode()])


def test_a_restriction_the_proxy_does_not_offer_is_exit_3(fresh, squid_basic, sim, tmp_path):
    cfg, state = write_config(tmp_path, sim, proxy=squid_basic.url_with_credentials, proxy_auth="negotiate")
    r = outpost(cfg, "check")
    lines = error_lines(r)
    if not GSS:  # a restriction this libcurl cannot keep: never Basic instead
        assert r.returncode == 2, r.stderr
        assert len(lines) == 1 and '"negotiate"' in lines[0] and "GSS-API" in lines[0], r.stderr
        assert sim.log()["summary"]["total"] == 0
    else:
        assert r.returncode == 3, r.stderr
        assert len(lines) == 1 and squid_basic.url in lines[0] and '"negotiate"' in lines[0], r.stderr
    assert BASIC_PASSWORD not in r.stderr


# ---- "system" and "direct" ------------------------------------------------------------------------

def test_system_takes_https_proxy_and_no_proxy(fresh, squid_basic, sim, tmp_path):
    cfg, state = write_config(tmp_path, sim)
    squid_basic.clear_log()
    r = outpost(cfg, "-v", "check", env_extra={"HTTPS_PROXY": squid_basic.url_with_credentials})
    assert r.returncode == 10, r.stderr
    assert "(the system's setting: HTTPS_PROXY)" in r.stderr, r.stderr
    through(squid_basic, sim, user=BASIC_USER)
    assert BASIC_PASSWORD not in r.stdout + r.stderr

    squid_basic.clear_log()
    r = outpost(cfg, "-v", "check",
                env_extra={"HTTPS_PROXY": squid_basic.url_with_credentials, "NO_PROXY": "example.com,localhost"})
    assert r.returncode == 10, r.stderr
    assert f"proxy for https://localhost:{sim.port}: direct (the setting's bypass list names the host: " \
           "HTTPS_PROXY)" in r.stderr, r.stderr
    assert squid_basic.access_log() == []


def test_direct_ignores_https_proxy(fresh, sim, tmp_path):
    cfg, state = write_config(tmp_path, sim, proxy="direct")
    r = outpost(cfg, "-v", "check", env_extra={"HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": None})
    assert r.returncode == 10, r.stderr
    assert f"proxy for https://localhost:{sim.port}: direct (`proxy` is \"direct\")" in r.stderr, r.stderr
    # and "system" with the same variable goes to the dead proxy: not reachable, not exit 0
    cfg, state = write_config(tmp_path, sim, proxy="system")
    r = outpost(cfg, "check", env_extra={"HTTPS_PROXY": "http://127.0.0.1:9"})
    assert r.returncode not in (0, 10), r.stderr
    assert "127.0.0.1:9" in r.stderr or "proxy" in r.stderr.lower(), r.stderr
