"""Hosts by name: ``CANOPY_HOST`` names the agents task queue a worker serves, on the real
dev server with a real worker process.

Every host name carries a fresh suffix: the dev server remembers a queue's pollers for
minutes, so a name shared between tests would find the previous test's worker.
"""

import asyncio
import os
import signal
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from canopy.contracts.ping import PING_WORKFLOW
from canopy.errors import Refused
from canopy.ops import sessions
from canopy.store.engine import Store
from canopy.temporal import client as temporal_client
from tests import engine
from tests.engine import SETTLE_TIMEOUT

pytestmark = pytest.mark.server

store = engine.home_store


def a_host(name: str) -> str:
    """``name`` made unique to this test."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def dev_server(temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch) -> Client:
    """The dev server as the connection settings' address; this test's own main queue."""
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_env.client.service_client.config.target_host)
    monkeypatch.setattr(temporal_client, "MAIN_TASK_QUEUE", f"canopy-{uuid.uuid4().hex}")
    return temporal_env.client


# --------------------------------------------------------------------------- CANOPY_HOST


@pytest_asyncio.fixture
async def worker_process(dev_server: Client, canopy_home: Path) -> AsyncIterator[str]:
    """``canopy worker`` with ``CANOPY_HOST`` set to a host of its own, serving this test's
    data dir; its host, once it logged the queues it serves."""
    host = a_host("alpha")
    env = {**os.environ, "CANOPY_HOST": host}
    boot = (
        "import sys; from canopy.temporal import client; "
        "client.MAIN_TASK_QUEUE = sys.argv.pop(1); "
        "from canopy.cli.main import main; main()"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        boot,
        temporal_client.MAIN_TASK_QUEUE,
        "worker",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    try:
        lines: list[str] = []
        while not any("serving task queues" in line for line in lines):
            line = await asyncio.wait_for(process.stdout.readline(), SETTLE_TIMEOUT)
            assert line, "".join(lines)
            lines.append(line.decode())
        assert f"canopy-agents@{host} at " in lines[-1]
        yield host
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.communicate(), SETTLE_TIMEOUT)


async def test_canopy_host_names_the_queue_the_worker_serves(
    worker_process: str, dev_server: Client
) -> None:
    host = worker_process
    reply = await dev_server.execute_workflow(
        PING_WORKFLOW,
        f"canopy-agents@{host}",
        id=f"ping-{uuid.uuid4()}",
        task_queue=temporal_client.MAIN_TASK_QUEUE,
        execution_timeout=timedelta(seconds=SETTLE_TIMEOUT),
        result_type=str,
    )
    assert reply == f"pong from {socket.gethostname()}"


def test_sessions_record_the_canopy_host(
    store: Store, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANOPY_HOST", "build-box")
    session = sessions.session_new(store, "claude", workdir=str(repo))
    assert session["host"] == "build-box"


def test_an_unusable_host_name_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANOPY_HOST", "two\nlines")
    with pytest.raises(Refused, match=r"^CANOPY_HOST must be a single line$"):
        temporal_client.this_host()
    monkeypatch.setenv("CANOPY_HOST", " ")
    assert temporal_client.this_host() == socket.gethostname(), "blank means unset"
    with pytest.raises(Refused, match=r"^host may use letters"):
        temporal_client.check_host("../etc")
