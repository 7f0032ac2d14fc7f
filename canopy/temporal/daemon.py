"""``canopy up`` / ``canopy down``: the embedded server plus a background worker.

``up`` starts the dev server if needed (unless the connection settings name a server:
``TEMPORAL_ADDRESS`` or a ``temporal.toml`` profile, in which case that server is someone
else's to manage), then the worker daemon detached in its own session, and returns only
once the server has seen that very worker process polling both its task queues, so "up"
means "serving". It asks the server about the queues' pollers rather than running a
workflow through them: a health check must not leave a workflow in the list users read
every morning. ``down`` stops the worker gracefully first (so
in-flight activities can finish against a live server), then the embedded server. Both
are idempotent. temporalio is imported only inside the readiness check and the reading
of the connection settings.
"""

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from canopy import search_attributes
from canopy.errors import Refused
from canopy.paths import canopy_home
from canopy.temporal import client as temporal_client
from canopy.temporal import devserver
from canopy.temporal.devserver import Stage

if TYPE_CHECKING:
    from temporalio.client import Client

WORKER_MODULE = "canopy.worker"
"""Run as ``python -m canopy.worker``; also the argument that identifies worker processes."""

READY_TIMEOUT = 60.0
POLL_SECONDS = 0.1
"""How often ``up`` asks the server whether the new worker polls yet."""
STOP_TIMEOUT = 30.0
"""Longer than the worker's own graceful shutdown, so SIGKILL is a last resort."""


def pid_file() -> Path:
    """Where the background worker's pid is recorded."""
    return canopy_home() / "worker.pid"


def log_file() -> Path:
    """The background worker's stdout/stderr, appended to across restarts."""
    return devserver.logs_dir() / "worker.log"


def server_managed() -> bool:
    """Whether up/down manage the embedded server: not when the connection settings name
    an address (``TEMPORAL_ADDRESS``, a ``temporal.toml`` profile)."""
    return temporal_client.configured_address() is None


def worker_pid() -> int | None:
    """The live background worker's pid; a stale pid file is removed."""
    path = pid_file()
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        pid = None
    if pid is not None and devserver.process_alive(pid, WORKER_MODULE):
        return pid
    path.unlink(missing_ok=True)
    return None


def worker_status() -> dict[str, Any]:
    """Whether the background worker runs, with its pid and log."""
    pid = worker_pid()
    return {"running": pid is not None, "pid": pid, "log_file": str(log_file())}


def _spawn_worker() -> int:
    """Start ``python -m canopy.worker`` detached, logging to the worker log; record its pid.

    It runs in the data dir, with ``CANOPY_HOME`` made absolute: a relative one, taken
    from where ``canopy up`` ran, would name another directory from there."""
    home = canopy_home()
    with log_file().open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=home,
            env={**os.environ, "CANOPY_HOME": str(home)},
        )
    pid_file().write_text(f"{process.pid}\n")
    return process.pid


async def _serving(pid: int, timeout: float) -> list[str]:
    """The task queues worker ``pid`` polls, once the server has seen it poll the main
    queue for workflow tasks and this host's agents queue for activity tasks; refused if
    the worker dies or does not poll both in time."""
    client = await temporal_client.connect()
    queues = [temporal_client.MAIN_TASK_QUEUE, temporal_client.agents_task_queue()]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await polled_by_worker(client, pid, queues):
        if not devserver.process_alive(pid, WORKER_MODULE):
            problem = "the worker exited during start"
        elif loop.time() >= deadline:
            problem = f"the worker did not poll {' and '.join(queues)} within {timeout:g}s"
        else:
            await asyncio.sleep(POLL_SECONDS)
            continue
        raise Refused(f"{problem} (log: {log_file()})")
    return queues


async def polled_by_worker(client: "Client", pid: int, queues: list[str]) -> bool:
    """Whether the server lists the worker process ``pid`` (the SDK's default identity
    is ``pid@hostname``) among the pollers of the main queue's workflow tasks and of the
    agents queue's activity tasks: a worker serves both or neither."""
    main, agents = queues
    mine = f"{pid}@"
    workflows = await temporal_client.task_queue_pollers(client, main, "workflow")
    if not any(poller.identity.startswith(mine) for poller in workflows):
        return False
    activities = await temporal_client.task_queue_pollers(client, agents, "activity")
    return any(poller.identity.startswith(mine) for poller in activities)


def _ensure_worker(timeout: float, stage: Stage) -> dict[str, Any]:
    """Start the worker unless it runs, then prove it serves: the server saw it poll."""
    with devserver.exclusive("worker"):
        pid = worker_pid()
        started = pid is None
        if pid is None:
            stage("starting the worker")
            pid = _spawn_worker()
        stage(f"waiting for the worker (pid {pid}) to poll its task queues")
        try:
            queues = asyncio.run(_serving(pid, timeout))
        except Refused:
            if started:
                devserver.terminate(pid, WORKER_MODULE, STOP_TIMEOUT)
                pid_file().unlink(missing_ok=True)
            raise
        return {"started": started, "pid": pid, "log_file": str(log_file()), "task_queues": queues}


def up(
    port: int | None = None,
    ui_port: int | None = None,
    timeout: float = READY_TIMEOUT,
    stage: Stage = devserver.quietly,
) -> dict[str, Any]:
    """Bring server (if managed) and worker up; return what was started and where.

    ``stage`` hears what is being started or waited for, as it begins (``canopy up``
    shows it on a terminal: starting everything can take ten seconds)."""
    if server_managed():
        server = devserver.start(port, ui_port, stage=stage)
    else:
        server = _external_server()
        server["search_attributes"] = asyncio.run(_register_search_attributes())
    return {"server": server, "worker": _ensure_worker(timeout, stage)}


async def _register_search_attributes() -> str | None:
    """On a server Canopy did not start, register its missing search attributes (the
    embedded server registers them at start); what was done or is left to do, or
    ``None`` when all were there."""
    from temporalio.service import RPCError

    try:
        client = await temporal_client.connect()
        return await search_attributes.register_missing(client)
    except Refused as refusal:
        return f"search attributes not checked: {refusal}"
    except RPCError as error:
        return f"search attributes not checked: {error.message}"


def down(timeout: float = STOP_TIMEOUT) -> dict[str, Any]:
    """Stop the worker (graceful, SIGKILL after ``timeout``), then the managed server."""
    with devserver.exclusive("worker"):
        pid = worker_pid()
        forced = pid is not None and devserver.terminate(pid, WORKER_MODULE, timeout)
        pid_file().unlink(missing_ok=True)
    worker = {"stopped": pid is not None, "pid": pid, "forced": forced}
    server = devserver.stop() if server_managed() else _external_server()
    return {"worker": worker, "server": server}


def _external_server() -> dict[str, Any]:
    """The server the connection settings name, which up and down leave alone: its
    address and the setting that named it (``TEMPORAL_ADDRESS``, a ``temporal.toml``
    profile)."""
    return {
        "external": True,
        "address": temporal_client.address(),
        "source": temporal_client.address_source(),
    }
