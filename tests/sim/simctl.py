"""Start, drive and stop the platform simulator (sim.py) from Python tests.

    from simctl import Sim
    with Sim.start(tls=True, incidents=50, rate_limit=10, rate_window=2) as sim:
        sim.fault("incidents", "status", status=503, retry_after=1)
        ...  # run outpost against sim.url with sim.ca_file
        assert sim.log()["summary"]["count_429"] == 0

Sim.start(**options) turns each keyword into a sim.py option (underscores
become dashes; True is a bare flag; False and None are left out; a list
repeats the option), runs sim.py with this interpreter, and waits for its
ready line. The simulator watches its stdin, so it also exits if the test
process dies. The control calls (log, fault, config, ...) are thin wrappers
of the /_sim/ API documented in sim.py; request() is a small HTTP client for
the API routes themselves.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading

SIM_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sim.py")
DEFAULT_API_KEY = "sim-api-key"


class LoopbackHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1 while verifying the certificate for `server_name`
    (so storage.localhost needs no resolver entry)."""

    def __init__(self, port: int, server_name: str, context: ssl.SSLContext, timeout: float):
        super().__init__(server_name, port, context=context, timeout=timeout)

    def connect(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class Reply:
    """A finished HTTP exchange: status, headers (case-insensitive), body."""

    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"Reply({self.status}, {self.body[:120]!r})"


class Sim:
    def __init__(self, process: subprocess.Popen, info: dict, stderr_file):
        self.process = process
        self.info = info
        self.port: int = info["port"]
        self.url: str = info["url"]
        self.ca_file: str | None = info["ca_file"]
        self.storage_port: int = info["storage_port"]
        self.storage_url: str = info["storage_url"]
        self.tls = self.url.startswith("https:")
        self._stderr = stderr_file
        self._token: str | None = None

    # -- life cycle ----------------------------------------------------------

    @classmethod
    def start(cls, timeout: float = 20.0, **options) -> "Sim":
        argv = [sys.executable, SIM_PY, "--watch-stdin", *options_to_argv(options)]
        stderr_file = tempfile.TemporaryFile()
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=stderr_file)
        line = _read_line(process.stdout, timeout)
        if not line:
            process.kill()
            process.wait(5)
            stderr_file.seek(0)
            detail = stderr_file.read().decode(errors="replace").strip()
            raise RuntimeError(f"sim.py did not start within {timeout} s: {detail}")
        return cls(process, json.loads(line), stderr_file)

    def stop(self, timeout: float = 5.0) -> int:
        """Terminate (then kill after `timeout`); returns the exit status."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe:
                pipe.close()
        self._stderr.close()
        return self.process.returncode

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def __enter__(self) -> "Sim":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- HTTP ----------------------------------------------------------------

    def ssl_context(self) -> ssl.SSLContext | None:
        """A client context trusting only the simulator's CA (None in plain mode)."""
        if not self.tls:
            return None
        return ssl.create_default_context(cafile=self.ca_file)

    def connection(self, storage: bool = False, timeout: float = 10.0,
                   server_name: str | None = None) -> http.client.HTTPConnection:
        """A new keep-alive connection to the API (or the storage) listener."""
        port = self.storage_port if storage else self.port
        if not self.tls:
            return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        name = server_name or ("storage.localhost" if storage else "localhost")
        return LoopbackHTTPSConnection(port, name, self.ssl_context(), timeout)

    def request(self, method: str, path: str, body=None, headers: dict | None = None,
                token: str | bool | None = True, storage: bool = False,
                connection: http.client.HTTPConnection | None = None,
                timeout: float = 10.0) -> Reply:
        """One request. `body` may be bytes or a JSON document; token=True uses
        an access token for the default key (fetched once), a string uses that
        token, False/None sends no Authorization header."""
        headers = dict(headers or {})
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        if token is True:
            token = self.access_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn = connection or self.connection(storage=storage, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            return Reply(response.status, response.headers, data)
        finally:
            if connection is None:
                conn.close()

    def access_token(self, api_key: str = DEFAULT_API_KEY, fresh: bool = False) -> str:
        """An access token for `api_key` (cached for the default key)."""
        if api_key == DEFAULT_API_KEY and self._token and not fresh:
            return self._token
        reply = self.request("POST", "/v2/auth/token/access", {"refresh_token": api_key},
                             token=False)
        if reply.status != 200:
            raise RuntimeError(f"token exchange failed: {reply.status} {reply.body!r}")
        token = reply.json()["access_token"]
        if api_key == DEFAULT_API_KEY:
            self._token = token
        return token

    # -- control API ---------------------------------------------------------

    def _control(self, method: str, path: str, document=None):
        body = None if document is None else json.dumps(document).encode()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        # The control API is test plumbing: a large data set on a loaded machine
        # must not fail a test because the simulator took its time to dump it.
        reply = self.request(method, path, body, headers, token=False, timeout=120.0)
        if reply.status != 200:
            raise RuntimeError(f"{method} {path}: {reply.status} {reply.body!r}")
        return reply.json()

    def log(self) -> dict:
        return self._control("GET", "/_sim/log")

    def clear_log(self) -> None:
        self._control("POST", "/_sim/log/clear")

    def fault(self, route: str, kind: str, **params) -> dict:
        """Add a fault (count=1, after=0 unless given); see sim.py for kinds."""
        spec = dict(params, route=route, kind=kind)
        return self._control("POST", "/_sim/faults", spec)["added"][0]

    def faults(self) -> list:
        return self._control("GET", "/_sim/faults")["faults"]

    def clear_faults(self) -> None:
        self._control("DELETE", "/_sim/faults")

    def config(self, **changes) -> dict:
        """Change settings (none: just read them); returns the new settings."""
        if not changes:
            return self._control("GET", "/_sim/config")["config"]
        return self._control("POST", "/_sim/config", changes)["config"]

    def add_incidents(self, count: int, trigger_time: str | None = None, fields: dict | None = None) -> list:
        document = {"count": count}
        if trigger_time:
            document["trigger_time"] = trigger_time
        if fields:
            document["fields"] = fields
        return self._control("POST", "/_sim/incidents/add", document)["added"]

    def expire_tokens(self) -> int:
        return self._control("POST", "/_sim/tokens/expire")["expired"]

    def dataset(self) -> dict:
        return self._control("GET", "/_sim/dataset")

    def installer(self) -> dict:
        return self._control("GET", "/_sim/installer")


def options_to_argv(options: dict) -> list:
    argv = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv


def _read_line(stream, timeout: float) -> bytes:
    """The first line of `stream`, or b"" if none arrives within `timeout`."""
    result = []
    reader = threading.Thread(target=lambda: result.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0] if result else b""
