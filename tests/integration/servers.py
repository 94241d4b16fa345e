"""What the helpers that run a real server for the tests share (nginx_helper,
squid_helper, test_mirror's MirrorServer): a free loopback port, waiting for
a listener, and stopping the process they started (by its own handle, never
by name: other tests run the same programs).
"""
from __future__ import annotations

import signal
import socket
import subprocess
import time


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the server binds it next)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_port(host: str, port: int, deadline: float, name: str = "the server",
              process: subprocess.Popen | None = None) -> None:
    """Returns once host:port accepts a connection; RuntimeError at the
    monotonic deadline, or as soon as process (when given) has exited."""
    while time.monotonic() < deadline and (process is None or process.poll() is None):
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{name} did not listen on {host}:{port}")


def stop_process(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if it has not ended within 5 s; reaped either way."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)
