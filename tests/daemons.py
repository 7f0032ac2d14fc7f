"""Processes the CLI starts in the background: free ports, and cleaning up after a test."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from canopy.temporal import daemon, devserver

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 90.0
MARKER = devserver.SERVER_MARKER


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def recorded_pids(home: Path) -> list[tuple[int, str]]:
    """The (pid, marker) of every daemon recorded in ``home``."""
    pids: list[tuple[int, str]] = []
    server = home / "server.json"
    if server.exists():
        pids.append((int(json.loads(server.read_text())["pid"]), devserver.SERVER_MARKER))
    worker = home / "worker.pid"
    if worker.exists():
        pids.append((int(worker.read_text()), daemon.WORKER_MODULE))
    return pids


def stop_recorded_daemons(home: Path) -> None:
    """Stop the server and worker recorded in ``home`` (even when a test failed)."""
    for pid, marker in recorded_pids(home):
        if devserver.process_alive(pid, marker):
            devserver.terminate(pid, marker, timeout=10)


class Daemons:
    """The dev server and worker processes of one test's ``CANOPY_HOME``."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port, self.ui_port = free_ports(2)
        self.workers: dict[str | None, subprocess.Popen[bytes]] = {}
        """Worker processes by the ``CANOPY_HOST`` they serve (``None``: this machine's)."""

    def cli(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "canopy.cli.main", *args],
            env=os.environ.copy(),
            check=True,
            capture_output=True,
            timeout=TIMEOUT,
        )

    def start_server(self) -> None:
        self.cli("server", "start", "--port", str(self.port), "--ui-port", str(self.ui_port))

    def stop_server(self) -> None:
        self.cli("server", "stop")

    def kill_server(self) -> None:
        """SIGKILL the dev server: no shutdown, as when its host loses power."""
        pid = int(json.loads((self.home / "server.json").read_text())["pid"])
        os.kill(pid, signal.SIGKILL)
        if not devserver.wait_until(lambda: not devserver.process_alive(pid, MARKER), TIMEOUT):
            pytest.fail(f"the dev server {pid} did not die")

    def start_worker(self, host: str | None = None) -> None:
        """``python worker.py`` as users run it; with ``host``, as ``CANOPY_HOST=host``."""
        log = (self.home / f"worker-{host or 'here'}-{time.monotonic_ns()}.log").open("wb")
        env = os.environ.copy() if host is None else {**os.environ, "CANOPY_HOST": host}
        self.workers[host] = subprocess.Popen(
            [sys.executable, str(ROOT / "worker.py")], env=env, stdout=log, stderr=subprocess.STDOUT
        )

    def kill_worker(self, host: str | None = None) -> None:
        """SIGKILL the worker: no graceful shutdown, as when its machine loses power."""
        worker = self.workers[host]
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)

    def stop(self) -> None:
        for worker in self.workers.values():
            if worker.poll() is None:
                worker.kill()
                worker.wait(timeout=10)
        stop_recorded_daemons(self.home)
