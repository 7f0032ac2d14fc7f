"""Processes the CLI starts in the background: free ports, and cleaning up after a test."""

import json
import socket
from pathlib import Path

from canopy.temporal import daemon, devserver


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
