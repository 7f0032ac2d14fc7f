"""The embedded Temporal dev server and the worker daemon, driven through the real CLI.

Each test gets its own ``CANOPY_HOME`` and free ports, runs ``python -m cli.main`` in a
subprocess like a user would, and kills whatever it started (by recorded pid) even when an
assertion fails. Synchronisation is by polling conditions with timeouts, never by sleeping.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus

from canopy.temporal import client as temporal_client
from canopy.temporal import daemon, devserver
from tests.cli_helpers import Terminal
from tests.conftest import without_temporal_settings
from tests.daemons import free_ports, stop_recorded_daemons
from tests.engine import TEMPORAL_BIN

pytestmark = pytest.mark.server

CLI_TIMEOUT = 90.0


def cli_env(home: Path) -> dict[str, str]:
    """The environment of a CLI subprocess: this home, the embedded server's address."""
    env = without_temporal_settings(os.environ)
    env["CANOPY_HOME"] = str(home)
    return env


def canopy(home: Path, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    """Run ``canopy ARGS`` against ``home`` and check its exit code."""
    result = subprocess.run(
        [sys.executable, "-m", "canopy.cli.main", *args],
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
    )
    assert result.returncode == expect, result.stdout + result.stderr
    return result


def canopy_json(home: Path, *args: str) -> Any:
    """Run ``canopy ARGS --json`` and parse its output."""
    return json.loads(canopy(home, *args, "--json").stdout)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh CANOPY_HOME (also for in-process clients); its daemons are killed afterwards."""
    monkeypatch.setenv("CANOPY_HOME", str(tmp_path))
    monkeypatch.delenv("TEMPORAL_ADDRESS", raising=False)
    monkeypatch.delenv("TEMPORAL_NAMESPACE", raising=False)
    try:
        yield tmp_path
    finally:
        stop_recorded_daemons(tmp_path)


async def start_unserved(workflow_id: str) -> None:
    """Start a workflow of a type no worker serves (the server accepts it all the same)."""
    client = await temporal_client.connect()
    await client.start_workflow("Unserved", id=workflow_id, task_queue="nobody-polls")


async def still_running(workflow_id: str) -> bool:
    """Whether the workflow ``workflow_id`` is open on the server."""
    client = await temporal_client.connect()
    description = await client.get_workflow_handle(workflow_id).describe()
    return description.status == WorkflowExecutionStatus.RUNNING


async def serving(pid: int) -> None:
    """Wait (bounded) until the server lists worker ``pid`` polling both its queues."""
    client = await temporal_client.connect()
    queues = [temporal_client.MAIN_TASK_QUEUE, temporal_client.agents_task_queue()]
    deadline = asyncio.get_running_loop().time() + 30
    while not await daemon.polled_by_worker(client, pid, queues):
        assert asyncio.get_running_loop().time() < deadline, "the worker polls"
        await asyncio.sleep(0.1)


def test_start_status_restart_stop_keeps_workflows(home: Path) -> None:
    port, ui_port = free_ports(2)
    ports = ("--port", str(port), "--ui-port", str(ui_port))

    started = canopy_json(home, "server", "start", *ports)
    assert started["started"] is True
    status = canopy_json(home, "server", "status")
    assert status["running"] is True
    assert status["pid"] == started["pid"]
    assert (status["port"], status["ui_port"]) == (port, ui_port)
    assert status["address"] == f"127.0.0.1:{port}"
    assert status["ui_url"] == f"http://localhost:{ui_port}"
    assert status["db_file"] == str(home / "temporal.db")
    assert status["worker"]["running"] is False

    again = canopy(home, "server", "start", *ports)
    assert "already running" in again.stdout
    assert canopy_json(home, "server", "start", *ports)["started"] is False

    asyncio.run(start_unserved("survives-restart"))
    stopped = canopy_json(home, "server", "stop")
    assert stopped == {
        "stopped": True,
        "pid": started["pid"],
        "forced": False,
        "stale_record_removed": False,
    }
    assert not devserver.process_alive(started["pid"], devserver.SERVER_MARKER)
    assert canopy_json(home, "server", "status")["running"] is False
    assert canopy_json(home, "server", "stop")["stopped"] is False

    restarted = canopy_json(home, "server", "start", *ports)
    assert restarted["started"] is True
    assert restarted["db_file"] == status["db_file"]

    worker = subprocess.Popen(
        [sys.executable, "-m", "canopy.cli.main", "worker"],
        env=cli_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert asyncio.run(still_running("survives-restart")), "kept across the restart"
        asyncio.run(serving(worker.pid))
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=30)
    finally:
        worker.kill()
        worker.wait()
    assert worker.returncode == 0, output
    assert "received SIGTERM" in output
    assert "worker shut down cleanly" in output
    canopy(home, "server", "stop")


def test_stale_records_are_detected_and_removed(home: Path) -> None:
    port, ui_port = free_ports(2)
    # A live pid that is not a dev server (this test process, as after pid reuse): it
    # must be reported as stale and never signalled.
    (home / "server.json").write_text(
        json.dumps({"pid": os.getpid(), "port": port, "ui_port": ui_port, "db_file": "x"})
    )
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    (home / "worker.pid").write_text(f"{exited.pid}\n")

    status = canopy_json(home, "server", "status")
    assert status["running"] is False
    assert status["stale_record_removed"] is True
    assert status["worker"]["running"] is False
    assert not (home / "server.json").exists()
    assert not (home / "worker.pid").exists()

    (home / "server.json").write_text(
        json.dumps({"pid": os.getpid(), "port": port, "ui_port": ui_port, "db_file": "x"})
    )
    assert canopy_json(home, "server", "stop")["stopped"] is False

    (home / "server.json").write_text("not json")
    started = canopy_json(home, "server", "start", "--port", str(port), "--ui-port", str(ui_port))
    assert started["started"] is True
    assert started["stale_record_removed"] is True
    canopy(home, "server", "stop")


def test_start_refuses_a_port_in_use(home: Path) -> None:
    port, ui_port = free_ports(2)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        result = canopy(
            home, "server", "start", "--port", str(port), "--ui-port", str(ui_port), expect=1
        )
    assert result.stderr.startswith(f"error: port {port} on 127.0.0.1 is already in use")
    assert "--port" in result.stderr
    assert not (home / "server.json").exists()


def test_up_serves_and_down_stops_everything(home: Path) -> None:
    port, ui_port = free_ports(2)

    argv = [sys.executable, "-m", "canopy.cli.main", "up", "--port", str(port)]
    watched = Terminal([*argv, "--ui-port", str(ui_port), "--json"], cli_env(home)).finish()
    assert watched.code == 0, watched.stderr
    up = json.loads(watched.stdout)
    # on a terminal, what it is starting and waiting for, with the time elapsed
    assert f"starting the Temporal dev server on port {port} (" in watched.stderr
    assert f"waiting for the worker (pid {up['worker']['pid']}) to poll its task queues (" in (
        watched.stderr
    )
    assert up["server"]["started"] is True
    assert up["server"]["port"] == port
    assert up["worker"]["started"] is True
    agents = temporal_client.agents_task_queue()
    assert up["worker"]["task_queues"] == [temporal_client.MAIN_TASK_QUEUE, agents]
    worker_pid = up["worker"]["pid"]
    status = canopy_json(home, "server", "status")
    assert status["running"] is True
    assert status["worker"] == {
        "running": True,
        "pid": worker_pid,
        "log_file": str(home / "logs" / "worker.log"),
    }

    piped = canopy(home, "up", "--port", str(port), "--ui-port", str(ui_port), "--json")
    assert piped.stderr == ""  # nobody to show progress to
    again = json.loads(piped.stdout)
    assert again["server"]["started"] is False
    assert (again["worker"]["started"], again["worker"]["pid"]) == (False, worker_pid)

    listed = subprocess.run(
        [str(TEMPORAL_BIN), "workflow", "list", "--address", f"127.0.0.1:{port}", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert json.loads(listed.stdout or "[]") == [], "checking health leaves no workflow behind"

    down = canopy_json(home, "down")
    assert down["worker"] == {"stopped": True, "pid": worker_pid, "forced": False}
    assert down["server"]["stopped"] is True
    assert not devserver.process_alive(worker_pid, daemon.WORKER_MODULE)
    log = (home / "logs" / "worker.log").read_text()
    assert "received SIGTERM" in log
    assert "worker shut down cleanly" in log

    status = canopy_json(home, "server", "status")
    assert status["running"] is False
    assert status["worker"]["running"] is False
    idle = canopy(home, "down")
    assert "Worker was not running" in idle.stdout
    assert "Temporal dev server was not running" in idle.stdout
