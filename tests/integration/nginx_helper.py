"""Start nginx on loopback with a generated configuration, for outpost's
installer tests and benchmarks.

    from nginx_helper import Nginx
    with Nginx.start(installer="/tmp/x.exe", version="24.3.1") as ng:
        ... outpost with base_url = ng.url ...
        ng.access_log()   # [{"listener", "path", "status", "bytes", "auth", "range", "if_range"}]

What it serves (plain HTTP on 127.0.0.1, which outpost accepts for loopback):
  POST /v2/auth/token/access       a fixed token answer (nginx `return`)
  GET  /v2/installer/windows/latest  the installer file, with
       X-Installer-Version and Content-Disposition headers; ETag and
       Last-Modified unless validators=False; Range unless ranges=False;
       with redirect=True a 302 to a second loopback host (127.0.0.2, a
       different host for outpost, so it must not get the Authorization
       header), which serves the file.
The access log records, per request, whether an Authorization header was
present (never its value), the Range / If-Range sent and the body bytes.
nginx runs in the foreground (daemon off) and is stopped with SIGTERM.
start_nginx and HEAD also serve test_mirror's MirrorServer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time

from servers import free_port, stop_process, wait_port

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
TOKEN = "nginx-test-token"

# The part of every test nginx configuration that is not about what it
# serves: foreground, its files in one directory, no system paths. Format
# with dir; an `http {{ ... }}` block follows, opened here.
HEAD = """
worker_processes 1;
daemon off;
user root root;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;
"""

# The two platform routes an installer check needs, served statically (no
# simulator): the token answer and the installer file with the headers the
# API document names. For a server block; format with token, installer and
# version. The benchmarks' nginx and test_tls_session's serve these.
PLATFORM_ROUTES = """\
        location = /v2/auth/token/access {{
            default_type application/json;
            return 200 '{{"access_token":"{token}","expires_in":900}}';
        }}
        location = /v2/installer/windows/latest {{
            alias {installer};
            default_type application/octet-stream;
            add_header X-Installer-Version "{version}" always;
            add_header Content-Disposition 'attachment; filename="SensorSetup.exe"' always;
        }}"""


def start_nginx(directory: str, body: str, listens: list[tuple[str, int]], timeout: float = 10.0) -> subprocess.Popen:
    """Writes HEAD + body (the rest of the http block, closed) as
    directory/nginx.conf, starts nginx on it and waits until every
    (host, port) of listens accepts connections; stops it on failure."""
    os.makedirs(os.path.join(directory, "tmp"), exist_ok=True)
    conf_path = os.path.join(directory, "nginx.conf")
    with open(conf_path, "w") as f:
        f.write(HEAD.format(dir=directory) + body)
    process = subprocess.Popen([NGINX, "-p", directory, "-c", conf_path, "-e", os.path.join(directory, "error.log")],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        for host, port in listens:
            wait_port(host, port, deadline, "nginx", process)
    except Exception:
        stop_process(process)
        raise
    return process


CONFIG = """
    map $http_authorization $auth_state {{ "" absent; default present; }}
    log_format outpost escape=json '{{"listener":"$listener","path":"$request_uri","status":$status,'
                                   '"bytes":$body_bytes_sent,"auth":"$auth_state","range":"$http_range",'
                                   '"if_range":"$http_if_range"}}';
    sendfile on;
    keepalive_timeout 30;
    server {{
        listen 127.0.0.1:{port};
        set $listener api;
        access_log {dir}/access.log outpost;
        location = /v2/auth/token/access {{
            default_type application/json;
            return 200 '{{"access_token":"{token}","token_type":"Bearer","expires_in":900}}';
        }}
        location = /v2/installer/windows/latest {{
            add_header X-Installer-Version "{version}" always;
            {installer_location}
        }}
    }}
    server {{
        listen 127.0.0.2:{storage_port};
        set $listener storage;
        access_log {dir}/access.log outpost;
        location = /files/installer {{
            add_header X-Installer-Version "{version}" always;
            {file_location}
        }}
    }}
}}
"""


class Nginx:
    def __init__(self, process, directory, port, storage_port):
        self.process = process
        self.dir = directory
        self.port = port
        self.storage_port = storage_port
        self.url = f"http://127.0.0.1:{port}"

    @classmethod
    def start(cls, installer: str, version: str, name: str = "SensorSetup.exe",
              disposition: str | None = None, validators: bool = True, ranges: bool = True,
              redirect: bool = False, timeout: float = 10.0) -> "Nginx":
        directory = tempfile.mkdtemp(prefix="outpost-nginx-")
        port, storage_port = free_port(), free_port("127.0.0.2")
        if disposition is None:
            disposition = f'attachment; filename="{name}"'
        file_directives = [
            f"alias {installer};",
            "default_type application/octet-stream;",
            f"add_header Content-Disposition '{disposition}' always;",
        ]
        if not validators:
            file_directives += ["etag off;", 'add_header Last-Modified "";']
        if not ranges:
            file_directives.append("max_ranges 0;")
        file_location = "\n            ".join(file_directives)
        installer_location = (f"return 302 http://127.0.0.2:{storage_port}/files/installer;"
                              if redirect else file_location)
        body = CONFIG.format(dir=directory, port=port, storage_port=storage_port, token=TOKEN,
                             version=version, installer_location=installer_location,
                             file_location=file_location)
        try:
            process = start_nginx(directory, body, [("127.0.0.1", port), ("127.0.0.2", storage_port)], timeout)
        except Exception:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return cls(process, directory, port, storage_port)

    def access_log(self) -> list:
        """Every request so far, oldest first (nginx writes a line when a
        request ends; wait a little for a transfer outpost aborted)."""
        path = os.path.join(self.dir, "access.log")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def clear_log(self) -> None:
        path = os.path.join(self.dir, "access.log")
        if os.path.exists(path):
            os.truncate(path, 0)

    def stop(self) -> None:
        stop_process(self.process)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Nginx":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
