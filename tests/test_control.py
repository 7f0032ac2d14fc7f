"""Run control from the front (``graph continue|pause|stop|reset``).

Refusals and the store-only reset need no Temporal. On the real dev server: the commands
against the real GraphRunV2 workflow, the note when no worker serves the run, and
``consistency_warning`` — for the query branch a stub workflow stands in for GraphRunV2, so
the test controls what its ``status`` query answers.
"""

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio import workflow
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from canopy import worker
from canopy.contracts.graph_run import RunStatus
from canopy.errors import Refused
from canopy.ids import new_id
from canopy.ops import control, graphs, queues, runs, specs
from canopy.store.engine import Store
from canopy.store.queries import Row
from canopy.temporal import client as temporal_client
from canopy.timefmt import utcnow
from canopy.workflows.progress import RunProgress
from tests.cli_helpers import run_canopy
from tests.conftest import insert, make_specs, snapshot, update
from tests.engine import eventually, make_graph, node_run_of, running_workers

WORKDIR = "/srv/app"
"""The workdir of graphs these tests never run: creating a graph does not look at it."""
NODES = [{"name": "implement", "command": "true"}, {"name": "check", "command": "true"}]
WAIT = 60.0
server = pytest.mark.server


def force(
    store: Store,
    graph: str,
    status: str,
    blocker: dict[str, Any] | None = None,
    run_status: str | None = None,
    queue_id: str | None = None,
    workflow_id: str = "canopy-test-run-1",
) -> str | None:
    """Put a graph (and optionally an active run) into a state without running anything."""
    with store.transaction() as rows:
        update(rows, "graphs", graph, status=status, blocker=blocker)
        if run_status is None:
            return None
        run_id = new_id("run")
        insert(
            rows,
            "runs",
            id=run_id,
            graph_id=graph,
            number=1,
            queue_id=queue_id,
            workdir=WORKDIR,
            workflow_id=workflow_id,
            status=run_status,
            started_at=utcnow(),
        )
        return run_id


def set_spec_status(store: Store, spec_id: str, status: str) -> None:
    with store.transaction() as rows:
        update(rows, "specs", spec_id, status=status)


Command = Callable[[Store, str], Awaitable[dict[str, Any]]]
CONTINUE: Command = control.graph_continue
PAUSE: Command = control.graph_pause
STOP: Command = control.graph_stop
RESET: Command = control.graph_reset


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("status", "run_status", "command", "message"),
    [
        (
            "idle",
            None,
            CONTINUE,
            "graph build is idle, not paused; continue applies to a paused graph",
        ),
        (
            "running",
            "running",
            CONTINUE,
            "graph build is running, not paused; continue applies to a paused graph",
        ),
        (
            "paused",
            None,
            CONTINUE,
            "graph build is paused but has no active run; reset it: canopy graph reset build",
        ),
        ("idle", None, PAUSE, "graph build is idle; nothing to pause"),
        ("completed", None, PAUSE, "graph build is completed; nothing to pause"),
        ("paused", "paused", PAUSE, "graph build is already paused"),
        (
            "running",
            None,
            PAUSE,
            "graph build is running but has no active run; reset it: canopy graph reset build",
        ),
        ("failed", None, STOP, "graph build is failed; nothing to stop"),
        ("paused", "paused", STOP, "graph build is already paused; nothing is in flight to stop"),
        ("idle", None, RESET, "graph build is idle; nothing to reset"),
    ],
)
async def test_commands_that_do_not_apply_are_refused_naming_the_state(
    store: Store, status: str, run_status: str | None, command: Command, message: str
) -> None:
    graph = make_graph(store, WORKDIR, NODES)
    force(store, graph, status, run_status=run_status)
    before = snapshot(store)
    with pytest.raises(Refused) as refusal:
        await command(store, "build")
    assert str(refusal.value) == message
    assert snapshot(store) == before


async def test_continue_validates_mode_node_and_spec_against_the_store(store: Store) -> None:
    a, b, loose = make_specs(store, "alpha", "beta", "loose")
    graph = make_graph(store, WORKDIR, NODES, specs=[a, b])
    run_id = force(store, graph, "paused", {"kind": "paused", "message": "p"}, "paused")
    set_spec_status(store, a, "completed")
    cases = {
        ("again", None, None): (
            "unknown continue mode 'again'; one of recheck, run_from_node, skip_next_spec"
        ),
        ("recheck", "check", None): "node and spec apply only to mode run_from_node, not recheck",
        ("skip_next_spec", None, b): (
            "node and spec apply only to mode run_from_node, not skip_next_spec"
        ),
        ("run_from_node", "deploy", None): (
            "graph build has no node 'deploy'; its nodes are implement, check"
        ),
        ("run_from_node", None, loose): f"spec {loose} is not bound to graph build",
        ("run_from_node", None, a): (
            f"spec {a} is completed, not pending; run_from_node starts a pending spec"
        ),
        ("run_from_node", None, "spec-zzzz"): "no spec matches 'spec-zzzz'",
    }
    before = snapshot(store)
    for (mode, node, spec), message in cases.items():
        with pytest.raises(Refused) as refusal:
            await control.graph_continue(store, graph, mode, node, spec)
        assert str(refusal.value) == message
    assert snapshot(store) == before
    assert run_id is not None


async def test_a_directed_spec_of_a_queue_run_must_be_a_pending_member(store: Store) -> None:
    member, outsider = make_specs(store, "member", "outsider")
    queue = queues.queue_create(store, "nightly")["id"]
    queues.queue_add_spec(store, queue, member)
    graph = make_graph(store, WORKDIR, NODES)
    run_id = force(store, graph, "paused", {"kind": "paused", "message": "p"}, "paused", queue)
    with pytest.raises(Refused) as refusal:
        await control.graph_continue(store, graph, "run_from_node", spec=outsider[:9])
    assert (
        str(refusal.value) == f"spec {outsider} is not in queue nightly, which run {run_id} drains"
    )


# --------------------------------------------------------------------------- store-only reset


async def test_reset_without_an_active_run_is_done_in_the_store(store: Store) -> None:
    a, b = make_specs(store, "alpha", "beta")
    graph = make_graph(store, WORKDIR, NODES, specs=[a, b])
    blocker = {"kind": "spec_failed", "message": "spec alpha failed at node check"}
    force(store, graph, "failed", blocker)
    set_spec_status(store, a, "failed")
    set_spec_status(store, b, "completed")
    result = await control.graph_reset(store, "build")
    assert result == {
        "graph_id": graph,
        "name": "build",
        "status": "idle",
        "blocker": None,
        "run_id": None,
        "workflow_id": None,
        "signal": None,
        "note": None,
    }
    assert [s["status"] for s in graphs.graph_get(store, graph)["specs"]] == ["pending"] * 2


async def test_an_idle_graph_left_with_a_blocker_can_be_reset(store: Store) -> None:
    graph = make_graph(store, WORKDIR, NODES)
    force(store, graph, "idle", {"kind": "paused", "message": "left over"})
    assert (await control.graph_reset(store, graph))["blocker"] is None
    assert graphs.graph_get(store, graph)["blocker"] is None


def test_the_cli_refuses_and_resets_in_the_store_without_loading_temporal(
    canopy_home: Path, home_store: Store
) -> None:
    (spec,) = make_specs(home_store, "alpha")
    graph = make_graph(home_store, WORKDIR, NODES, specs=[spec])
    flags = ("-X", "importtime")
    paused = run_canopy(canopy_home, "graph", "pause", "build", python_flags=flags)
    assert paused.code == 1
    assert "error: graph build is idle; nothing to pause\n" in paused.stderr
    assert "| temporalio" not in paused.stderr
    force(home_store, graph, "completed")
    set_spec_status(home_store, spec, "completed")
    reset = run_canopy(canopy_home, "graph", "reset", "build", "--json", python_flags=flags)
    assert reset.code == 0, reset.stderr
    assert (reset.json()["status"], reset.json()["signal"]) == ("idle", None)
    assert "| temporalio" not in reset.stderr
    assert specs.spec_get(home_store, spec)["status"] == "pending"
    human = run_canopy(canopy_home, "graph", "stop", "build")
    assert human.stderr == "error: graph build is idle; nothing to stop\n"


# --------------------------------------------------------------------------- real workflow


async def node_running(store: Store, graph: str, spec_id: str) -> int:
    """Wait until a node run of ``spec_id`` is in progress; its id."""
    return await eventually(
        lambda: node_run_of(store, spec_id, "running"), f"a node run of {spec_id} in {graph}", WAIT
    )


SLEEPER = [{"name": "wait", "command": "sleep 30"}]


@server
async def test_stop_continue_pause_and_reset_steer_the_real_workflow(
    serving: Client, home_store: Store, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANOPY_HEARTBEAT_TIMEOUT", "2")  # cancellation rides on heartbeats
    store = home_store
    a, b = make_specs(store, "alpha", "beta")
    graph = make_graph(store, repo, SLEEPER, specs=[a, b])
    started = await runs.graph_run(store, graph)
    await node_running(store, graph, a)

    stopped = await control.graph_stop(store, graph, wait=WAIT)
    assert (stopped["status"], stopped["blocker"]["kind"], stopped["note"]) == (
        "paused",
        "stopped",
        None,
    )
    assert (stopped["signal"], stopped["workflow_id"]) == ("stop", started["workflow_id"])
    assert specs.spec_get(store, a)["status"] == "pending"

    resumed = await control.graph_continue(store, graph, "run_from_node", "wait", b[:10])
    assert (resumed["status"], resumed["blocker"], resumed["note"]) == ("running", None, None)
    await node_running(store, graph, b)

    paused = await control.graph_pause(store, graph, wait=1)
    assert paused["status"] == "running"
    assert paused["note"] == "pause requested; the run pauses after the current spec"

    reset = await control.graph_reset(store, graph, wait=WAIT)
    assert (reset["status"], reset["blocker"], reset["signal"]) == ("idle", None, "reset")
    assert [specs.spec_get(store, s)["status"] for s in (a, b)] == ["pending", "pending"]
    assert graphs.graph_get(store, graph)["runs"][0]["status"] == "reset"


@server
async def test_a_terminated_workflow_is_flagged_refused_and_reset_in_the_store(
    serving: Client, home_store: Store, repo: Path
) -> None:
    store = home_store
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, SLEEPER, specs=[spec])
    started = await runs.graph_run(store, graph)
    workflow_id = started["workflow_id"]
    await node_running(store, graph, spec)
    healthy = await graphs.graph_get_async(store, graph)
    assert (healthy["consistency_warning"], healthy["scheduled_resume_at"]) == (None, None)
    assert graphs.graph_get(store, graph)["consistency_warning"] is None, "sync entry point"

    await serving.get_workflow_handle(workflow_id).terminate("behind canopy's back")
    warning = graphs.graph_get(store, graph)["consistency_warning"]
    assert warning == (
        f"graph build is running in the store, but its workflow {workflow_id} is terminated "
        "in Temporal; nothing will move it on: reset it: canopy graph reset build"
    )
    assert graphs.graph_list(store)[0]["status"] == "running", "list stays store-only"
    with pytest.raises(Refused) as waited:  # at once, not after the timeout
        await asyncio.wait_for(runs.wait_until_settled(store, graph, 600), 30)
    assert str(waited.value) == warning

    with pytest.raises(Refused) as refusal:
        await control.graph_pause(store, graph)
    assert str(refusal.value).startswith(
        f"run {started['run_id']} of graph build cannot be steered: workflow {workflow_id} "
        "is not running in Temporal ("
    )
    reset = await control.graph_reset(store, graph)
    assert (reset["status"], reset["signal"], reset["run_id"]) == ("idle", None, started["run_id"])
    assert reset["note"].startswith(f"workflow {workflow_id} is not running in Temporal (")
    assert reset["note"].endswith("; reset the store record only")
    info = graphs.graph_get(store, graph)
    assert (info["runs"][0]["status"], info["node_runs"][0]["status"]) == ("reset", "interrupted")
    assert specs.spec_get(store, spec)["status"] == "pending"


@pytest_asyncio.fixture
async def stoppable(
    temporal_env: WorkflowEnvironment, canopy_home: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """Like ``serving``, but the test can shut the workers down (no grace for activities)."""
    client = temporal_env.client
    monkeypatch.setenv("TEMPORAL_ADDRESS", client.service_client.config.target_host)
    suffix = f"{canopy_home.parent.name}-stoppable"
    monkeypatch.setattr(temporal_client, "MAIN_TASK_QUEUE", f"canopy-{suffix}")
    monkeypatch.setattr(temporal_client, "agents_task_queue", lambda host=None: f"agents-{suffix}")
    monkeypatch.setattr(worker, "GRACEFUL_SHUTDOWN", timedelta(0))
    async with running_workers(client) as stop:
        yield stop


@server
async def test_a_signal_with_no_worker_serving_the_run_says_so(
    stoppable: Callable[[], Awaitable[None]], home_store: Store, repo: Path
) -> None:
    store = home_store
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, SLEEPER, specs=[spec])
    started = await runs.graph_run(store, graph)
    await node_running(store, graph, spec)
    await stoppable()
    try:
        result = await control.graph_pause(store, graph, wait=2)
        assert (result["status"], result["signal"]) == ("running", "pause")
        assert result["note"] == (
            "signal queued: no worker is serving task queue "
            f"{temporal_client.agents_task_queue()}; "
            "it takes effect when a worker starts (canopy up)"
        )
    finally:
        client = await temporal_client.connect()
        await client.get_workflow_handle(started["workflow_id"]).terminate("test over")


@server
async def test_a_paused_graph_is_steered_while_no_worker_runs_and_goes_on_when_one_returns(
    stoppable: Callable[[], Awaitable[None]],
    temporal_env: WorkflowEnvironment,
    home_store: Store,
    repo: Path,
) -> None:
    store = home_store
    a, b = make_specs(store, "alpha", "beta")
    dirty = {"name": "work", "command": f"test {{{{spec_id}}}} != {a} || echo x > scratch.txt"}
    graph = make_graph(store, repo, [dirty], specs=[a, b])
    await runs.graph_run(store, graph)
    await until(store, graph, lambda row: row["status"] == "paused")
    await stoppable()
    (repo / "scratch.txt").unlink()
    result = await control.graph_continue(store, graph, wait=1)
    assert result["status"] == "paused"
    assert result["note"].startswith("signal queued: no worker is serving")
    async with running_workers(temporal_env.client):  # the same task queues
        await until(store, graph, lambda row: row["status"] == "completed")
    assert specs.spec_get(store, b)["status"] == "completed"


async def until(store: Store, graph: str, predicate: Callable[[Row], bool]) -> None:
    """Wait until the graph's store row satisfies ``predicate``."""

    def satisfied() -> bool:
        with store.transaction() as rows:
            (row,) = rows("SELECT * FROM graphs WHERE id = :id", {"id": graph})
        return predicate(row)

    await eventually(satisfied, "the graph", WAIT)


# --------------------------------------------------------------------------- status query


@workflow.defn(name="StubRun")
class StubRun:
    """Stands in for GraphRunV2: answers ``status`` with whatever the test last set."""

    def __init__(self) -> None:
        self._status = RunStatus(run_id="")

    @workflow.run
    async def run(self, status: RunStatus) -> None:
        self._status = status
        await workflow.wait_condition(lambda: False)

    @workflow.query(name="status")
    def status(self) -> RunStatus:
        return self._status

    @workflow.signal(name="answer")
    def answer(self, status: RunStatus) -> None:
        self._status = status


@pytest_asyncio.fixture
async def stub_queue(
    temporal_env: WorkflowEnvironment, canopy_home: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[str]:
    """A task queue served by a worker hosting :class:`StubRun`."""
    client = temporal_env.client
    monkeypatch.setenv("TEMPORAL_ADDRESS", client.service_client.config.target_host)
    queue = f"stub-{uuid.uuid4().hex}"
    stub_worker = Worker(
        client, task_queue=queue, workflows=[StubRun], workflow_runner=UnsandboxedWorkflowRunner()
    )
    task = asyncio.create_task(stub_worker.run())
    yield queue
    await stub_worker.shutdown()
    await task


async def running_stub(
    client: Client, store: Store, queue: str, answer: RunStatus
) -> tuple[str, str]:
    """A graph the store calls running whose run's workflow is a :class:`StubRun`."""
    graph = make_graph(store, WORKDIR, NODES)
    workflow_id = f"stub-{uuid.uuid4().hex}"
    force(store, graph, "running", run_status="running", workflow_id=workflow_id)
    await client.start_workflow(StubRun.run, answer, id=workflow_id, task_queue=queue)
    return graph, workflow_id


@server
async def test_a_run_that_reports_nothing_in_flight_gets_a_warning_unless_a_resume_is_due(
    temporal_env: WorkflowEnvironment, stub_queue: str, home_store: Store
) -> None:
    client = temporal_env.client
    idle = RunStatus(run_id="r", waiting_for="continue (paused)")
    graph, workflow_id = await running_stub(client, home_store, stub_queue, idle)
    handle = client.get_workflow_handle(workflow_id)
    try:
        info = await graphs.graph_get_async(home_store, graph)
        assert info["consistency_warning"] == (
            f"graph build is running in the store, but workflow {workflow_id} has no node run "
            "in progress and no resume scheduled (it is waiting for continue (paused))"
        )
        await handle.signal(StubRun.answer, RunStatus(run_id="r", node="check"))
        assert (await graphs.graph_get_async(home_store, graph))["consistency_warning"] is None

        resume_at = datetime(2031, 5, 4, 3, 2, 1, tzinfo=UTC)
        await handle.signal(StubRun.answer, RunStatus(run_id="r", scheduled_resume_at=resume_at))
        assert (await graphs.graph_get_async(home_store, graph))["consistency_warning"] is None

        await handle.signal(StubRun.answer, idle)
        with home_store.transaction() as rows:
            (run,) = rows("SELECT id FROM runs", {})
            update(rows, "runs", run["id"], scheduled_resume_at=resume_at)
        info = await graphs.graph_get_async(home_store, graph)
        assert info["consistency_warning"] is None, "the store's scheduled resume counts too"
        assert info["scheduled_resume_at"] == "2031-05-04T03:02:01.000000Z"
    finally:
        await handle.terminate("test over")


@server
async def test_a_run_no_worker_answers_for_is_flagged_as_unchecked(
    temporal_env: WorkflowEnvironment, canopy_home: Path, home_store: Store, monkeypatch: Any
) -> None:
    client = temporal_env.client
    monkeypatch.setenv("TEMPORAL_ADDRESS", client.service_client.config.target_host)
    unserved = f"nobody-{uuid.uuid4().hex}"
    graph, workflow_id = await running_stub(client, home_store, unserved, RunStatus(run_id="r"))
    try:
        started = asyncio.get_running_loop().time()
        warning = (await graphs.graph_get_async(home_store, graph))["consistency_warning"]
        assert asyncio.get_running_loop().time() - started < control.QUERY_TIMEOUT_SECONDS + 3
        assert warning == (
            "graph build is running in the store, but its run cannot be checked: no worker "
            f"answered the status query of workflow {workflow_id} within 3 s (start one: canopy up)"
        )
    finally:
        await client.get_workflow_handle(workflow_id).terminate("test over")


@server
async def test_a_workflow_whose_task_keeps_failing_is_reported_not_blamed_on_workers(
    serving: Client,
    home_store: Store,
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker polls, but every workflow task of the run fails (here: code the workflow
    calls raises): ``graph info`` names the error and a control command says so, instead
    of "no worker is serving"."""
    store = home_store
    alpha, beta = make_specs(store, "alpha", "beta")
    gate = tmp_path / "gate"
    hold = {"name": "hold", "command": f"while [ ! -e {gate} ]; do sleep 0.05; done"}
    graph = make_graph(store, repo, [hold], specs=[alpha, beta])
    started = await runs.graph_run(store, graph)
    await node_running(store, graph, alpha)

    def broken(*_args: object) -> None:
        raise RuntimeError("boom in the workflow")

    monkeypatch.setattr(RunProgress, "mark", broken)  # passed through into the sandbox
    await control.graph_pause(store, graph, wait=0)
    gate.touch()  # alpha ends; parking before beta now fails every workflow task

    async def warning() -> str | None:
        return (await graphs.graph_info_async(store, graph)).consistency_warning

    found = await eventually(warning, "the consistency warning", WAIT)
    failing = f"workflow {started['workflow_id']} fails its workflow task at every attempt"
    assert found.startswith(f"graph build is running in the store, but its {failing} (attempt ")
    assert found.endswith(
        "): boom in the workflow; it moves again once a worker can run it (fix or upgrade "
        "the worker), or reset it: canopy graph reset build"
    )
    result = await control.graph_stop(store, graph, wait=0)
    assert result["note"].startswith(f"signal queued, but {failing}")
    assert "no worker" not in result["note"]
    await serving.get_workflow_handle(started["workflow_id"]).terminate("test over")


@server
async def test_a_paused_graph_whose_workflow_is_gone_is_warned_about(
    serving: Client, home_store: Store, repo: Path, tmp_path: Path
) -> None:
    """A pause that nothing can end any more (the workflow was terminated behind Canopy's
    back) is no longer a quiet ``paused``."""
    store = home_store
    alpha, beta = make_specs(store, "alpha", "beta")
    gate = tmp_path / "gate"
    hold = {"name": "hold", "command": f"while [ ! -e {gate} ]; do sleep 0.05; done"}
    graph = make_graph(store, repo, [hold], specs=[alpha, beta])
    started = await runs.graph_run(store, graph)
    await node_running(store, graph, alpha)
    await control.graph_pause(store, graph, wait=0)
    gate.touch()
    assert (await runs.wait_until_settled(store, graph, WAIT))["status"] == "paused"
    assert (await graphs.graph_info_async(store, graph)).consistency_warning is None
    await serving.get_workflow_handle(started["workflow_id"]).terminate("behind canopy's back")
    assert (await graphs.graph_info_async(store, graph)).consistency_warning == (
        f"graph build is paused in the store, but its workflow {started['workflow_id']} is "
        "terminated in Temporal; nothing will move it on: reset it: canopy graph reset build"
    )
