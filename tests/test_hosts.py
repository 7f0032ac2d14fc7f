"""Hosts by name: ``CANOPY_HOST`` names the agents task queue a worker serves, and a run
goes to the host it names (``graph run --host``), on the real dev server with real workers.

Every host name carries a fresh suffix: the dev server remembers a queue's pollers for
minutes, so a name shared between tests would find the previous test's worker.
"""

import asyncio
import contextlib
import os
import signal
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from canopy.errors import Refused
from canopy.ops import control, graphs, runs, sessions
from canopy.store.engine import Store
from canopy.temporal import client as temporal_client
from tests import engine
from tests.cli_helpers import run_canopy
from tests.conftest import make_specs, snapshot
from tests.engine import (
    SETTLE_TIMEOUT,
    eventually,
    git,
    git_repo,
    make_graph,
    make_queue,
    running_workers,
)

pytestmark = pytest.mark.server

store = engine.home_store

NODE = {"name": "work", "command": "true"}


def a_host(name: str) -> str:
    """``name`` made unique to this test."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def dev_server(temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch) -> Client:
    """The dev server as the connection settings' address; this test's own main queue."""
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_env.client.service_client.config.target_host)
    monkeypatch.setattr(temporal_client, "MAIN_TASK_QUEUE", f"canopy-{uuid.uuid4().hex}")
    return temporal_env.client


async def agent_queues_of(handle: WorkflowHandle[object, object]) -> set[tuple[str, str]]:
    """(activity type, task queue) of every node activity the workflow scheduled."""
    scheduled = set()
    async for event in handle.fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            attributes = event.activity_task_scheduled_event_attributes
            scheduled.add((attributes.activity_type.name, attributes.task_queue.name))
    return {pair for pair in scheduled if pair[0] == "dispatch_node"}


# --------------------------------------------------------------------------- CANOPY_HOST


@contextlib.asynccontextmanager
async def canopy_worker(host: str) -> AsyncIterator[None]:
    """``canopy worker`` with ``CANOPY_HOST=host``, serving this test's data dir and main
    queue, from the moment it logged the queues it serves."""
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
        yield
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.communicate(), SETTLE_TIMEOUT)


@pytest_asyncio.fixture
async def worker_process(dev_server: Client, canopy_home: Path) -> AsyncIterator[str]:
    """A :func:`canopy_worker` of a host of its own; its host."""
    host = a_host("alpha")
    async with canopy_worker(host):
        yield host


def watch_worker_checks(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """An event set once a start has asked Temporal whether a worker serves its host (the
    launch guard is behind it then)."""
    looked = asyncio.Event()
    recently_polled = control.recently_polled

    async def spy(
        client: Client, task_queue: str, tasks: Literal["workflow", "activity"] = "workflow"
    ) -> bool:
        polled = await recently_polled(client, task_queue, tasks)
        looked.set()
        return polled

    monkeypatch.setattr(control, "recently_polled", spy)
    return looked


async def test_canopy_host_names_the_queue_the_worker_serves(
    worker_process: str, dev_server: Client
) -> None:
    host = worker_process

    async def polled(queue: str) -> bool:
        return await control.recently_polled(dev_server, queue, "activity")

    await eventually(lambda: polled(f"canopy-agents@{host}"), "the host's queue polled")
    assert not await polled(f"canopy-agents@{a_host('beta')}"), "no other host's"


async def test_a_run_on_a_named_host_runs_its_nodes_on_that_hosts_worker(
    worker_process: str,
    dev_server: Client,
    store: Store,
    repo: Path,
) -> None:
    host = worker_process
    assert temporal_client.this_host() != host, "the run names a host other than this one"
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [NODE], specs=[spec])
    started = await runs.graph_run(store, graph, host=host)
    handle = dev_server.get_workflow_handle(started["workflow_id"])
    await asyncio.wait_for(handle.result(), SETTLE_TIMEOUT)
    settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert await agent_queues_of(handle) == {("dispatch_node", f"canopy-agents@{host}")}


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


# --------------------------------------------------------------------------- graph run


def test_graph_run_passes_its_host_option_on(canopy_home: Path, store: Store, repo: Path) -> None:
    make_graph(store, repo, [NODE])
    result = run_canopy(canopy_home, "graph", "run", "build", "--host", "../etc")
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr == (
        "error: host may use letters, digits, '_', '-', '.' and spaces only, starting with a "
        "letter, digit or '_' (found '.' at offset 0)\n"
    )


async def test_a_run_on_a_host_no_worker_serves_is_refused_and_writes_nothing(
    dev_server: Client, store: Store, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "WORKER_WAIT_SECONDS", 0.5)
    host = a_host("nowhere")
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [NODE], specs=[spec])
    before = snapshot(store)
    with pytest.raises(Refused) as refusal:
        await runs.graph_run(store, graph, host=host)
    assert str(refusal.value) == (
        f"no worker serves host {host} (nothing polled task queue canopy-agents@{host} "
        f"within 0.5 s); start one on the machine that holds the workdir: "
        f"CANOPY_HOST={host} canopy worker"
    )
    assert snapshot(store) == before, "the refused start left nothing behind"


async def test_a_start_waits_for_a_worker_that_is_starting(
    dev_server: Client, store: Store, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of a fresh ``canopy up``: the run is started while the host's worker is
    still starting, and goes ahead once it polls."""
    host = a_host("late")
    monkeypatch.setenv("CANOPY_HOST", host)
    looked = watch_worker_checks(monkeypatch)
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [NODE], specs=[spec])
    start = asyncio.create_task(runs.graph_run(store, graph))
    await asyncio.wait_for(looked.wait(), SETTLE_TIMEOUT)
    assert not start.done()
    async with running_workers(dev_server):
        started = await start
        handle = dev_server.get_workflow_handle(started["workflow_id"])
        await asyncio.wait_for(handle.result(), SETTLE_TIMEOUT)
    assert await agent_queues_of(handle) == {("dispatch_node", f"canopy-agents@{host}")}


def test_a_run_goes_to_the_named_host_else_the_graphs_else_this_one(
    store: Store, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANOPY_HOST", "this-box")
    alpha, beta = make_specs(store, "alpha", "beta")
    anywhere = make_graph(store, repo, [NODE], name="anywhere", specs=[alpha])
    pinned = make_graph(store, repo, [NODE], name="pinned", host="graph-box", specs=[beta])

    def queue_of(graph: str, host: str | None = None) -> str:
        prepared = runs.prepare_run(store, graph, host=host)
        runs.forget_run(store, prepared)
        return prepared.start.agents_task_queue

    assert queue_of(anywhere) == "canopy-agents@this-box"
    assert queue_of(pinned) == "canopy-agents@graph-box"
    assert queue_of(pinned, host="run-box") == "canopy-agents@run-box"


def test_the_git_checks_run_here_unless_the_workdir_is_only_on_another_host(
    store: Store, repo: Path, tmp_path: Path
) -> None:
    """A tree that is here is checked whatever the host; a workdir that is not here is
    refused for this host, and left to the worker of the other host it names."""
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [NODE], specs=[spec])
    (repo / "scratch.txt").write_text("not committed\n")
    for host in (None, "elsewhere-box"):
        with pytest.raises(Refused, match=r"^workdir \S+ is dirty \(1 dirty path: scratch.txt\)"):
            runs.prepare_run(store, graph, host=host)
    missing = str(tmp_path / "not-here")
    before = snapshot(store)
    with pytest.raises(Refused, match=rf"^workdir {missing} is not a git work tree$"):
        runs.prepare_run(store, graph, workdir=missing)
    assert snapshot(store) == before
    prepared = runs.prepare_run(store, graph, workdir=missing, host="elsewhere-box")
    assert (prepared.start.workdir, prepared.start.agents_task_queue) == (
        missing,
        "canopy-agents@elsewhere-box",
    )


async def test_the_hosts_worker_checks_a_workdir_that_was_not_here_at_the_start(
    dev_server: Client, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph names its host, and its workdir is not on this machine when the run
    starts: the start skips the local git checks, and the host's worker checks the tree
    before the first spec. Dirty there, the run parks with the usual blocker.

    Host and launcher share this machine here, so the host's tree appears (dirty) while
    the start waits for the host's worker, after its launch guard."""
    monkeypatch.setattr(runs, "WORKER_WAIT_SECONDS", SETTLE_TIMEOUT)
    host = a_host("far")
    workdir = tmp_path / "on-the-host"
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, workdir, [NODE], specs=[spec], host=host)
    looked = watch_worker_checks(monkeypatch)
    start = asyncio.create_task(runs.graph_run(store, graph))
    await asyncio.wait_for(looked.wait(), SETTLE_TIMEOUT)
    staging = git_repo(tmp_path / "staging")
    (staging / "scratch.txt").write_text("not committed\n")
    staging.rename(workdir)
    async with canopy_worker(host):
        started = await start
        assert (started["host"], started["workdir"]) == (host, str(workdir))
        settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
        blocker = settled["blocker"]
        assert (settled["status"], blocker["kind"], blocker["dirty_paths"]) == (
            "paused",
            "dirty_tree",
            ["scratch.txt"],
        )
        assert graphs.graph_get(store, graph)["node_runs"] == [], "no node ran on it"
        await control.graph_reset(store, graph)


async def test_a_run_of_lanes_started_away_from_its_workdir_integrates_on_its_host(
    dev_server: Client, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of lanes whose workdir is not on this machine at the start: the host's worker
    reads the target branch as it opens the first lane, and every spec lands there in
    queue order, with no lane left behind."""
    monkeypatch.setattr(runs, "WORKER_WAIT_SECONDS", SETTLE_TIMEOUT)
    host = a_host("far")
    workdir = tmp_path / "on-the-host"
    specs = make_specs(store, "one", "two", "three")
    commit = 'printf x > "done-$CANOPY_SPEC_ID.txt" && git add -A'
    commit += ' && git commit -q -m "$CANOPY_SPEC_NAME"'
    node = {"name": "work", "command": commit}
    graph = make_graph(store, workdir, [node], host=host, lanes=2)
    looked = watch_worker_checks(monkeypatch)
    start = asyncio.create_task(runs.graph_run(store, graph, queue=make_queue(store, specs)))
    await asyncio.wait_for(looked.wait(), SETTLE_TIMEOUT)
    git_repo(tmp_path / "staging").rename(workdir)
    async with canopy_worker(host):
        started = await start
        assert started["host"] == host
        settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
        assert settled["status"] == "completed", settled
    subjects = git(workdir, "log", "--reverse", "--format=%s", "main").splitlines()
    assert subjects[1:] == ["one", "two", "three"]
    assert git(workdir, "worktree", "list", "--porcelain").count("worktree ") == 1
