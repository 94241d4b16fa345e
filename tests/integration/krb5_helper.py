"""A real MIT Kerberos realm on loopback for the proxy tests (issue 33):
Debian's krb5kdc with its own configuration and database in a fresh
temporary directory, no system file touched.

    from krb5_helper import Realm, require_krb5
    with Realm.start() as realm:
        realm.add_service("HTTP/localhost", keytab)       # squid's key
        realm.add_client("host/endpoint.test", keytab)    # outpost's key
        env = realm.env()     # KRB5_CONFIG for a process of the realm

What it runs: `kdb5_util create` (a database with a random master
password), `kadmin.local` for principals and keytabs (each `ktadd` makes
new keys, so a keytab written before the last one holds an old key
version), and `krb5kdc -n` in the foreground in its own process group,
listening on a free loopback TCP port (udp_preference_limit = 1: every
request over TCP, which wait_port can see). Host names are not
canonicalised (dns_canonicalize_hostname = false, rdns = false), so the
proxy's name as outpost writes it ("localhost") is the one in its
principal. stop() ends the KDC by its own handle and removes the directory.
"""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import time

import pytest

from servers import free_port, stop_process, wait_port

REALM = "OUTPOST.TEST"
KDB5_UTIL = "/usr/sbin/kdb5_util"
KADMIN_LOCAL = "/usr/sbin/kadmin.local"
KRB5KDC = "/usr/sbin/krb5kdc"
PROGRAMS = (KDB5_UTIL, KADMIN_LOCAL, KRB5KDC)

KRB5_CONF = """[libdefaults]
    default_realm = {realm}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
    ticket_lifetime = 1h
[realms]
    {realm} = {{
        kdc = 127.0.0.1:{port}
    }}
[domain_realm]
    localhost = {realm}
    .test = {realm}
"""

KDC_CONF = """[kdcdefaults]
    kdc_ports = {port}
    kdc_tcp_listen = 127.0.0.1:{port}
    kdc_listen = 127.0.0.1:{port}
[realms]
    {realm} = {{
        database_name = {dir}/principal
        key_stash_file = {dir}/stash
        acl_file = {dir}/kadm5.acl
        kdc_ports = {port}
        kdc_tcp_ports = {port}
        kdc_listen = 127.0.0.1:{port}
        kdc_tcp_listen = 127.0.0.1:{port}
        max_life = 1h
    }}
[logging]
    kdc = FILE:{dir}/kdc.log
"""


def require_krb5() -> None:
    """The realm's programs are test dependencies (scripts/setup installs
    krb5-kdc, krb5-admin-server, krb5-user): in CI a missing one fails the
    test instead of skipping it silently."""
    missing = [p for p in PROGRAMS if not os.access(p, os.X_OK)]
    if not missing:
        return
    message = (f"MIT Kerberos is not installed ({', '.join(missing)} missing); run scripts/setup "
               "(Debian packages krb5-kdc, krb5-admin-server; krb5-user for klist when debugging)")
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(message)
    pytest.skip(message)


class Realm:
    def __init__(self, directory: str, port: int, process: subprocess.Popen | None):
        self.dir = directory
        self.port = port
        self.process = process
        self.realm = REALM
        self.krb5_conf = os.path.join(directory, "krb5.conf")

    def env(self) -> dict:
        """What a process of the realm needs: its krb5.conf, nothing else."""
        return {"KRB5_CONFIG": self.krb5_conf}

    def _admin_env(self) -> dict:
        return {**os.environ, "KRB5_CONFIG": self.krb5_conf,
                "KRB5_KDC_PROFILE": os.path.join(self.dir, "kdc.conf")}

    def kadmin(self, query: str) -> str:
        r = subprocess.run([KADMIN_LOCAL, "-r", REALM, "-q", query], env=self._admin_env(), capture_output=True,
                           text=True, timeout=30)
        if r.returncode != 0 or "error" in r.stderr.lower() or "not found" in r.stderr.lower():
            raise RuntimeError(f"kadmin.local {query!r}: {r.stdout}{r.stderr}")
        return r.stdout

    def add_principal(self, name: str) -> None:
        self.kadmin(f"addprinc -randkey {name}")

    def write_keytab(self, name: str, keytab: str) -> None:
        """New keys for name (its key version goes up by one), written to keytab."""
        self.kadmin(f"ktadd -k {keytab} {name}")

    def kvno(self, name: str) -> int:
        out = self.kadmin(f"getprinc {name}")
        for line in out.splitlines():
            if "vno" in line and "Key:" in line:
                return int(line.split("vno")[1].split(",")[0])
        raise RuntimeError(f"no key version for {name}: {out}")

    @classmethod
    def start(cls, timeout: float = 20.0) -> "Realm":
        require_krb5()
        directory = tempfile.mkdtemp(prefix="outpost-krb5-")
        os.chmod(directory, 0o755)  # squid's helpers (user proxy) read krb5.conf here
        last = ""
        for _ in range(3):  # the free port may be taken before the KDC binds it
            port = free_port()
            realm = cls(directory, port, None)
            with open(realm.krb5_conf, "w") as f:
                f.write(KRB5_CONF.format(realm=REALM, port=port))
            os.chmod(realm.krb5_conf, 0o644)
            with open(os.path.join(directory, "kdc.conf"), "w") as f:
                f.write(KDC_CONF.format(realm=REALM, port=port, dir=directory))
            with open(os.path.join(directory, "kadm5.acl"), "w") as f:
                f.write("")
            if not os.path.exists(os.path.join(directory, "principal")):
                r = subprocess.run([KDB5_UTIL, "create", "-s", "-r", REALM, "-P", secrets.token_hex(16)],
                                   env=realm._admin_env(), capture_output=True, text=True, timeout=60)
                if r.returncode != 0:
                    shutil.rmtree(directory, ignore_errors=True)
                    raise RuntimeError(f"kdb5_util create failed: {r.stdout}{r.stderr}")
            realm.process = subprocess.Popen([KRB5KDC, "-n", "-r", REALM], env=realm._admin_env(),
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=open(os.path.join(directory, "kdc.stderr"), "w"),
                                             start_new_session=True)
            try:
                wait_port("127.0.0.1", port, time.monotonic() + timeout, "krb5kdc", realm.process)
                return realm
            except RuntimeError:
                last = realm.diagnostics()
                stop_process(realm.process)
        shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"krb5kdc did not start: {last}")

    def diagnostics(self) -> str:
        out = []
        for name in ("kdc.stderr", "kdc.log"):
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    out.append(f.read()[-2000:])
        return "\n".join(out)

    def log(self) -> str:
        path = os.path.join(self.dir, "kdc.log")
        if not os.path.exists(path):
            return ""
        with open(path, errors="replace") as f:
            return f.read()

    def stop(self) -> None:
        if self.process:
            stop_process(self.process)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Realm":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
