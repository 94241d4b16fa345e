"""Start squid on loopback with a generated configuration, for outpost's
proxy tests (PRODUCT.md sections 6 and 9: through a proxy every command
behaves as without one).

    from squid_helper import Squid, require_squid
    require_squid()                       # fails under CI=true, skips otherwise
    with Squid.start(auth=("user", "secret")) as proxy:
        ... outpost with "proxy": proxy.url_with_credentials ...
        proxy.access_log()   # [{"method", "url", "status", "user", "bytes"}]

What it runs: the Debian package's /usr/sbin/squid in the foreground
(`squid -N`), as its own process group, with a configuration, log and pid
file in a fresh temporary directory (no system service, no disk cache:
`cache deny all`, so every request, Range ones included, reaches the
origin). It listens on 127.0.0.1 on a free port and only forwards to
loopback: CONNECT to any loopback port (the simulator's TLS listeners) and
plain HTTP to any loopback port. Host names come from a generated hosts file
(localhost and storage.localhost are 127.0.0.1, as the simulator's
certificate expects). With auth=(user, password), Basic proxy
authentication through squid's basic_ncsa_auth helper and a generated
password file (MD5-crypt, written with `openssl passwd -1`). With
scheme="ntlm", NTLM through ntlm_fake_auth (a real NTLM handshake; any
user and password accepted, the user logged). With scheme="negotiate" and
kerberos=(realm, keytab), Negotiate through negotiate_kerberos_auth with
the service key HTTP/localhost from keytab (krb5_helper.Realm): the proxy
is then reached by its name, url_named (http://localhost:port), as
Kerberos names it.

stop() ends squid and every process of its group (the auth helpers) and
checks that none is left; the tests call it in fixture teardown.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from servers import free_port, stop_process, wait_port

SQUID = shutil.which("squid") or "/usr/sbin/squid"
NCSA_AUTH = "/usr/lib/squid/basic_ncsa_auth"


def require_squid() -> None:
    """Squid is a test dependency (scripts/setup installs it): in CI a
    missing squid fails the test instead of skipping it silently."""
    missing = [p for p in (SQUID, NCSA_AUTH) if not os.access(p, os.X_OK)]
    if not missing:
        return
    message = f"squid is not installed ({', '.join(missing)} missing); run scripts/setup (Debian package squid)"
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(message)
    pytest.skip(message)


CONFIG = """
http_port 127.0.0.1:{port}
visible_hostname outpost-test-proxy
pid_filename {dir}/squid.pid
cache_log {dir}/cache.log
logformat outpost %rm %ru %>Hs %un %<st
access_log stdio:{dir}/access.log outpost
cache_store_log none
logfile_rotate 0
coredump_dir {dir}
cache deny all
cache_mem 4 MB
hosts_file {dir}/hosts
dns_nameservers 127.0.0.1
icp_port 0
htcp_port 0
pinger_enable off
netdb_filename none
shutdown_lifetime 1 seconds
forwarded_for delete
via off
acl loopback_dst dst 127.0.0.0/8
acl CONNECT method CONNECT
{auth}
http_access deny !loopback_dst
{access}
http_access deny all
"""

AUTH = """
auth_param basic program {helper} {dir}/passwd
auth_param basic realm outpost-test
auth_param basic children 2 startup=1 idle=1
acl authenticated proxy_auth REQUIRED
"""

NTLM_AUTH = """
auth_param ntlm program /usr/lib/squid/ntlm_fake_auth
auth_param ntlm children 2 startup=1 idle=1
acl authenticated proxy_auth REQUIRED
"""

NEGOTIATE_AUTH = """
auth_param negotiate program /usr/lib/squid/negotiate_kerberos_auth -s GSS_C_NO_NAME -k {keytab}
auth_param negotiate children 2 startup=1 idle=1
auth_param negotiate keep_alive on
acl authenticated proxy_auth REQUIRED
"""


class Squid:
    def __init__(self, process: subprocess.Popen, directory: str, port: int, auth):
        self.process = process
        self.dir = directory
        self.port = port
        self.auth = auth
        self.url = f"http://127.0.0.1:{port}"
        self.url_named = f"http://localhost:{port}"

    @property
    def url_with_credentials(self) -> str:
        if not self.auth:
            return self.url
        user, password = self.auth
        return f"http://{user}:{password}@127.0.0.1:{self.port}"

    @classmethod
    def start(cls, auth: tuple[str, str] | None = None, timeout: float = 20.0, scheme: str = "basic",
              kerberos=None, parent: str | None = None) -> "Squid":
        """parent: where squid's temporary directory goes (default: TMPDIR);
        as root, squid's own user must be able to reach it."""
        require_squid()
        directory = tempfile.mkdtemp(prefix="outpost-squid-", dir=parent)
        env = dict(os.environ)
        auth_conf = AUTH.format(helper=NCSA_AUTH, dir=directory) if auth else ""
        if scheme == "ntlm":
            auth_conf = NTLM_AUTH
        elif scheme == "negotiate":
            realm, keytab = kerberos
            own = os.path.join(directory, "squid.keytab")
            shutil.copyfile(keytab, own)
            auth_conf = NEGOTIATE_AUTH.format(keytab=own)
            # The helpers inherit squid's environment: the realm's
            # krb5.conf, no replay cache on disk.
            env.update(realm.env())
            env["KRB5RCACHETYPE"] = "none"
        protected = bool(auth) or scheme != "basic"
        with open(os.path.join(directory, "hosts"), "w") as f:
            f.write("127.0.0.1 localhost storage.localhost\n")
        if auth:
            hashed = subprocess.run(["openssl", "passwd", "-1", "-stdin"], input=auth[1], capture_output=True,
                                    text=True, check=True).stdout.strip()
            with open(os.path.join(directory, "passwd"), "w") as f:
                f.write(f"{auth[0]}:{hashed}\n")
        if os.geteuid() == 0:
            # squid refuses to run as root and switches to its own user
            # (Debian: proxy), which must be able to write its logs here.
            try:
                entry = pwd.getpwnam("proxy")
                for name in [directory] + [os.path.join(directory, n) for n in os.listdir(directory)]:
                    os.chown(name, entry.pw_uid, entry.pw_gid)
            except KeyError:
                os.chmod(directory, 0o777)
        last_error = ""
        for _ in range(3):  # the free port may be taken between bind and squid's bind
            port = free_port()
            conf_path = os.path.join(directory, "squid.conf")
            access = "http_access allow authenticated" if protected else "http_access allow all"
            with open(conf_path, "w") as f:
                f.write(CONFIG.format(port=port, dir=directory, access=access, auth=auth_conf))
            if os.geteuid() == 0:
                try:
                    entry = pwd.getpwnam("proxy")
                    os.chown(conf_path, entry.pw_uid, entry.pw_gid)
                except KeyError:
                    pass
            process = subprocess.Popen([SQUID, "-N", "-f", conf_path], stdin=subprocess.DEVNULL, env=env,
                                       stdout=subprocess.DEVNULL, stderr=open(os.path.join(directory, "stderr"), "w"),
                                       start_new_session=True)
            instance = cls(process, directory, port, auth)
            try:
                wait_port("127.0.0.1", port, time.monotonic() + timeout, "squid", process)
                return instance
            except RuntimeError:
                pass
            last_error = instance.diagnostics()
            instance.stop(remove=False)
        shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"squid did not start: {last_error}")

    def diagnostics(self) -> str:
        out = []
        for name in ("stderr", "cache.log"):
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    out.append(f.read()[-2000:])
        return "\n".join(out)

    def access_log(self) -> list[dict]:
        """Every request squid finished so far, oldest first. CONNECT
        requests have url "host:port"; user is "-" without authentication."""
        path = os.path.join(self.dir, "access.log")
        if not os.path.exists(path):
            return []
        entries = []
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 5:
                    method, url, status, user, size = parts
                    entries.append({"method": method, "url": url, "status": int(status), "user": user,
                                    "bytes": int(size) if size.isdigit() else 0})
        return entries

    def wait_log(self, predicate, timeout: float = 5.0) -> list[dict]:
        """The access log once predicate(log) holds (squid writes a line when
        a request or tunnel ends), or as it is after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            log = self.access_log()
            if predicate(log) or time.monotonic() > deadline:
                return log
            time.sleep(0.05)

    def clear_log(self) -> None:
        path = os.path.join(self.dir, "access.log")
        if os.path.exists(path):
            os.truncate(path, 0)

    def group_alive(self) -> bool:
        """Whether any process of squid's process group is still running."""
        try:
            os.killpg(self.process.pid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True

    def stop(self, remove: bool = True) -> None:
        """Ends squid and its helpers (its process group, which only it and
        its children belong to) and checks that nothing is left behind."""
        stop_process(self.process)
        deadline = time.monotonic() + 5
        while self.group_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.group_alive():
            os.killpg(self.process.pid, signal.SIGKILL)
            time.sleep(0.2)
        left = self.group_alive()
        if remove:
            shutil.rmtree(self.dir, ignore_errors=True)
        assert not left, f"squid's process group {self.process.pid} outlived the test"

    def __enter__(self) -> "Squid":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
