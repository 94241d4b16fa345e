"""nginx on loopback for the installer benchmarks (scripts/bench).

One nginx serves the same installer file over plain HTTP and over HTTPS (a
test CA and certificate made by the simulator's make_certificates), as the
platform's installer route, /v2/installer/windows/latest, with the headers
the API document names (X-Installer-Version, Content-Disposition). The token
route is a static JSON answer, so outpost's one token exchange costs a few
hundred bytes and no server-side work: the benchmark measures the download,
not the simulator's Python HTTP stack. sendfile is on for HTTP, so the server
is never the bottleneck on loopback.

The access log is one JSON object per request with the body bytes nginx
handed to the kernel ($body_bytes_sent) and the Range asked, which is what the
resume benchmark counts, and the TLS protocol and cipher suite negotiated
($ssl_protocol and $ssl_cipher, OpenSSL's names; empty over HTTP), which the
HTTPS rows report per tool. HTTPS offers TLS 1.2 and 1.3 (nginx 1.22 offers
1.3 only when told), so each tool negotiates what it prefers.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time

from nginx_helper import PLATFORM_ROUTES, start_nginx
from servers import free_port, stop_process

TOKEN = "bench-token-x"

# What the installer benchmarks serve: the rest of the http block after
# nginx_helper.HEAD (the test nginx's foreground set-up, shared).
BODY = """
    log_format bench escape=json '{{"path":"$request_uri","status":$status,'
                                 '"bytes":$body_bytes_sent,"range":"$http_range",'
                                 '"scheme":"$scheme","protocol":"$ssl_protocol","cipher":"$ssl_cipher"}}';
    access_log {dir}/access.log bench;
    sendfile on;
    keepalive_timeout 30;
    server {{
        listen 127.0.0.1:{http_port};
        listen 127.0.0.1:{https_port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
{routes}
    }}
}}
"""


class Nginx:
    """nginx serving `installer` as `version`; stop() when done."""

    def __init__(self, installer: str, version: str, cert: str, key: str, timeout: float = 10.0):
        self.dir = tempfile.mkdtemp(prefix="outpost-bench-nginx-")
        self.http_port, self.https_port = free_port(), free_port()
        self.http_url = f"http://127.0.0.1:{self.http_port}"
        # A host name, not the address: the name outpost's users give.
        self.https_url = f"https://localhost:{self.https_port}"
        routes = PLATFORM_ROUTES.format(token=TOKEN, installer=installer, version=version)
        body = BODY.format(dir=self.dir, http_port=self.http_port, https_port=self.https_port,
                           cert=cert, key=key, routes=routes)
        try:
            self.process = start_nginx(self.dir, body, [("127.0.0.1", self.http_port),
                                                        ("127.0.0.1", self.https_port)], timeout)
        except Exception:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def url(self, tls: bool) -> str:
        return self.https_url if tls else self.http_url

    def access_log(self) -> list:
        path = os.path.join(self.dir, "access.log")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def installer_ciphers(self, since: int) -> list:
        """The protocol and cipher suite ("TLSv1.3 TLS_AES_256_GCM_SHA384") of
        the installer requests logged after the first `since` entries (the
        HTTPS update rows: what each tool negotiated)."""
        return sorted({f'{e.get("protocol") or "-"} {e.get("cipher") or "none"}' for e in self.access_log()[since:]
                       if e["path"].startswith("/v2/installer/")})

    def clear_log(self) -> None:
        path = os.path.join(self.dir, "access.log")
        if os.path.exists(path):
            os.truncate(path, 0)

    def installer_bytes(self, settle: float = 2.0) -> list:
        """Body bytes of every installer request so far. nginx logs a request
        when it ends; an aborted transfer ends a little after the client died,
        so wait (bounded) until the log stops growing."""
        deadline = time.monotonic() + settle
        previous = None
        while True:
            entries = [e for e in self.access_log() if e["path"].startswith("/v2/installer/")]
            if entries == previous or time.monotonic() > deadline:
                return entries
            previous = entries
            time.sleep(0.3)

    def stop(self) -> None:
        stop_process(self.process)
        shutil.rmtree(self.dir, ignore_errors=True)
