"""Runs racing each other on the real dev server, on SQLite and on Postgres: one active run
per graph however many starts arrive at once, one run per spec when queues share specs,
and the start that finds the graph's previous workflow still closing.
"""

import asyncio
import shlex
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from canopy.activities.bookkeeping import RunRecords
from canopy.activities.run_state import RunControl
from canopy.contracts.graph_run import (
    DispatchOutcome,
    NextSpec,
    NodeDispatch,
    RunCounts,
    RunInput,
    RunRef,
    RunSettlement,
    SpecClose,
    SpecOutcome,
)
from canopy.contracts.graph_run_blocker import blocker_json
from canopy.errors import Refused
from canopy.graphs.nodemodels import CommandNode
from canopy.ops import queues, runs
from canopy.paths import configured_db_url
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.engine import Store
from canopy.store.queries import bound_list
from canopy.store.run_records import run_record
from canopy.temporal import client as temporal_client
from canopy.workdir import worktree_state
from tests.cli_helpers import canopy_env
from tests.conftest import graph_state, make_specs, snapshot, update
from tests.engine import make_graph, make_queue, worker_for

pytestmark = pytest.mark.server
SETTLE_TIMEOUT = 120.0
RACERS = 10
SHARED_SPECS = 5
TRIES = 5
"""Times the shared-specs race is run per backend: before the claim, every try ran all
five specs twice (the two runs read the same next spec in lockstep)."""


@pytest.fixture
def store(run_store: Store) -> Store:
    """Every race here runs on SQLite and on Postgres."""
    return run_store


@pytest_asyncio.fixture
async def serving(
    temporal_env: WorkflowEnvironment,
    canopy_home: Path,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Client]:
    """The workers, writing the backend this test runs on."""
    async with worker_for(temporal_env.client, canopy_home, monkeypatch, store):
        yield temporal_env.client


def counting_node(log: Path, gate: Path | None = None) -> dict[str, Any]:
    """A command node that appends its spec's id to ``log``: one line per execution; with
    a ``gate``, it then waits for that file (so the run stays active while racers race:
    a run drains three specs in a fraction of a second)."""
    command = f'echo "$CANOPY_SPEC_ID" >> {shlex.quote(str(log))}'
    if gate is not None:
        command += f"; while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.05; done"
    return {"name": "work", "command": command}


def executions(log: Path) -> Counter[str]:
    """How many times each spec was executed."""
    return Counter(log.read_text().split()) if log.exists() else Counter()


def active_runs(store: Store, graph: str) -> list[str]:
    active, statuses = bound_list("active", ACTIVE_RUN_STATUSES)
    with store.transaction() as rows:
        found = rows(
            f"SELECT id FROM runs WHERE graph_id = :graph AND status IN {active}",
            {**statuses, "graph": graph},
        )
    return [row["id"] for row in found]


async def workflows_under(client: Client, workflow_id: str) -> list[WorkflowExecutionStatus]:
    """The status of every execution Temporal ever had under ``workflow_id``, once its
    visibility lists them all closed (it catches up a moment after a workflow closes)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_TIMEOUT
    while loop.time() < deadline:
        listed = [e.status async for e in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
        statuses = [status for status in listed if status is not None]
        if statuses and WorkflowExecutionStatus.RUNNING not in statuses:
            return statuses
        await asyncio.sleep(0.05)
    pytest.fail(f"Temporal still lists {workflow_id} running after {SETTLE_TIMEOUT:g} s")


async def test_ten_simultaneous_starts_leave_one_run_and_nine_one_line_refusals(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    log, gate = tmp_path / "executions.txt", tmp_path / "gate"
    spec_ids = make_specs(store, "alpha", "beta", "gamma")
    queue = make_queue(store, spec_ids, "nightly")
    graph = make_graph(store, repo, [counting_node(log, gate)])
    results = await asyncio.gather(
        *(runs.graph_run(store, graph, queue=queue) for _ in range(RACERS)),
        return_exceptions=True,
    )
    started = [result for result in results if isinstance(result, dict)]
    refused = [str(result) for result in results if isinstance(result, Refused)]
    assert (len(started), len(refused)) == (1, RACERS - 1), results
    (winner,) = started
    assert set(refused) == {f"graph build ({graph}) already has an active run {winner['run_id']}"}
    assert active_runs(store, graph) == [winner["run_id"]]
    assert winner["workflow_id"] == f"canopy-{graph}"
    gate.touch()
    settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert executions(log) == Counter(spec_ids)
    completed = [WorkflowExecutionStatus.COMPLETED]
    assert await workflows_under(serving, winner["workflow_id"]) == completed, "one workflow"


BOOT = (
    "import sys; from canopy.temporal import client as t; "
    "t.MAIN_TASK_QUEUE = sys.argv.pop(1); agents = sys.argv.pop(1); "
    "t.agents_task_queue = lambda host=None: agents; "
    "from canopy.cli.main import main; main()"
)
"""``canopy`` as installed, but on this test's task queues (the in-process worker's)."""


async def test_ten_simultaneous_cli_starts_print_one_line_each(
    serving: Client, store: Store, repo: Path, tmp_path: Path, canopy_home: Path
) -> None:
    log, gate = tmp_path / "executions.txt", tmp_path / "gate"
    spec_ids = make_specs(store, "alpha", "beta", "gamma")
    make_queue(store, spec_ids, "nightly")
    graph = make_graph(store, repo, [counting_node(log, gate)])
    env = canopy_env(canopy_home, TEMPORAL_ADDRESS=serving.service_client.config.target_host)
    db_url = configured_db_url()
    if db_url is not None:  # the Postgres variant
        env["CANOPY_DB_URL"] = db_url
    queues_of_test = [temporal_client.MAIN_TASK_QUEUE, temporal_client.agents_task_queue()]
    argv = [sys.executable, "-c", BOOT, *queues_of_test, "graph", "run", "build"]
    began = time.monotonic()
    racers = [
        subprocess.Popen(
            [*argv, "--queue", "nightly"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(RACERS)
    ]
    outputs = await asyncio.gather(*(asyncio.to_thread(p.communicate, None, 120) for p in racers))
    print(f"{RACERS} CLI starts took {time.monotonic() - began:.1f} s")
    codes = [p.returncode for p in racers]
    assert sorted(codes) == [0] + [1] * (RACERS - 1), outputs
    (run_id,) = active_runs(store, graph)
    for code, (stdout, stderr) in zip(codes, outputs, strict=True):
        if code == 0:
            assert stdout.decode().startswith(f"started {run_id} of build in {repo}")
            continue
        expected = f"error: graph build ({graph}) already has an active run {run_id}\n"
        assert (stdout, stderr.decode()) == (b"", expected)
    gate.touch()
    settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert executions(log) == Counter(spec_ids)
    completed = [WorkflowExecutionStatus.COMPLETED]
    assert await workflows_under(serving, f"canopy-{graph}") == completed, "one workflow"


async def test_two_graphs_draining_queues_that_share_specs_run_each_spec_once(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    began = time.monotonic()
    for attempt in range(TRIES):
        log = tmp_path / f"executions-{attempt}.txt"
        spec_ids = make_specs(store, *(f"spec{attempt}-{i}" for i in range(SHARED_SPECS)))
        first = make_graph(store, repo, [counting_node(log)], f"first{attempt}")
        second = make_graph(store, repo, [counting_node(log)], f"second{attempt}")
        started = await asyncio.gather(
            runs.graph_run(store, first, queue=make_queue(store, spec_ids, f"a{attempt}")),
            runs.graph_run(store, second, queue=make_queue(store, spec_ids, f"b{attempt}")),
        )
        settled = [await runs.wait_until_settled(store, g, SETTLE_TIMEOUT) for g in (first, second)]
        assert executions(log) == Counter(spec_ids), f"try {attempt}"
        assert [s["status"] for s in settled] == ["completed", "completed"], settled
        ran = node_runs_by_run(store, [r["run_id"] for r in started])
        assert sorted(spec for specs in ran.values() for spec in specs) == sorted(spec_ids)
        for other, mine in ((started[1], started[0]), (started[0], started[1])):
            held = run_summary(store, mine["run_id"]).get("held_elsewhere", [])
            assert all(f"is being run by {other['run_id']} of graph" in line for line in held)
    print(f"{TRIES} shared-spec races took {time.monotonic() - began:.1f} s")


def node_runs_by_run(store: Store, run_ids: list[str]) -> dict[str, list[str]]:
    """The specs each run launched a node for, in launch order."""
    runs_in, params = bound_list("run", run_ids)
    with store.transaction() as rows:
        launched = rows(
            f"SELECT run_id, spec_id FROM node_runs WHERE run_id IN {runs_in} ORDER BY id", params
        )
    found: dict[str, list[str]] = {run_id: [] for run_id in run_ids}
    for row in launched:
        found[row["run_id"]].append(row["spec_id"])
    return found


def run_summary(store: Store, run_id: str) -> dict[str, Any]:
    with store.transaction() as rows:
        return dict(run_record(rows, run_id)["summary"] or {})


async def lingering_workflow(client: Client, graph: str) -> str:
    """A workflow under the graph's workflow id that no worker serves: it stays running,
    like a previous run's workflow that has not closed yet."""
    workflow_id = runs.workflow_id_for(graph)
    await client.start_workflow(
        "Lingering", id=workflow_id, task_queue=f"nobody-{uuid.uuid4().hex}"
    )
    return workflow_id


async def test_a_start_waits_for_the_previous_workflow_to_close(
    serving: Client, store: Store, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "executions.txt"
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [counting_node(log)])
    lingering = serving.get_workflow_handle(await lingering_workflow(serving, graph))
    waiting = asyncio.Event()
    closes_within = runs._closes_within

    async def spy(*args: Any) -> bool:
        waiting.set()
        return await closes_within(*args)

    monkeypatch.setattr(runs, "_closes_within", spy)
    start = asyncio.create_task(runs.graph_run(store, graph, queue=make_queue(store, [spec])))
    await asyncio.wait_for(waiting.wait(), SETTLE_TIMEOUT)
    await lingering.terminate("the previous run closes")
    started = await start
    settled = await runs.wait_until_settled(store, graph, SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert executions(log) == Counter([spec])
    assert started["workflow_id"] == lingering.id


async def test_a_start_is_refused_while_the_graphs_workflow_keeps_running(
    serving: Client, store: Store, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [counting_node(tmp_path / "executions.txt")], specs=[spec])
    with store.transaction() as rows:
        update(rows, "graphs", graph, blocker={"kind": "spec_failed", "message": "m"})
    workflow_id = await lingering_workflow(serving, graph)
    monkeypatch.setattr(runs, "CLOSING_WAIT_SECONDS", 0.5)
    before = snapshot(store)
    with pytest.raises(Refused) as refusal:
        await runs.graph_run(store, graph)
    assert str(refusal.value) == (
        f"graph build ({graph}) cannot start a run: its workflow {workflow_id} is still "
        "running in Temporal after 0.5 s (a settled run may still be firing hooks: canopy "
        "graph wait build); try again when it has closed"
    )
    assert snapshot(store) == before, "the refused start left nothing behind"
    await serving.get_workflow_handle(workflow_id).terminate("test over")


async def test_a_spec_another_run_holds_is_passed_over_and_named_never_blamed(
    store: Store, repo: Path, tmp_path: Path
) -> None:
    alpha, beta = make_specs(store, "alpha", "beta")
    nodes = [counting_node(tmp_path / "executions.txt")]
    mine_queue = make_queue(store, [alpha, beta], "mine")
    mine = runs.prepare_run(store, make_graph(store, repo, nodes, "mine"), queue=mine_queue)
    theirs_queue = make_queue(store, [alpha], "theirs")
    theirs = runs.prepare_run(store, make_graph(store, repo, nodes, "theirs"), queue=theirs_queue)
    mine_id, theirs_id = mine.start.run_id, theirs.start.run_id
    held = NextSpec(spec_id=alpha, name="alpha")
    records = RunRecords(store)

    def launch(run: RunInput, spec: NextSpec, key: str) -> DispatchOutcome | int:
        """The claim and node run record of a launch of ``spec`` (no node runs)."""
        dispatch = NodeDispatch(
            run_id=run.run_id,
            graph_id=run.graph_id,
            graph_name=run.graph_name,
            spec_id=spec.spec_id,
            workdir=run.workdir,
            node=CommandNode(name="work", command="true"),
            launch_key=key,
            spec=spec,
            visit=1,
        )
        return records.open_launch(dispatch, worktree_state)

    def close(run: RunInput, spec: NextSpec, outcome: SpecOutcome) -> None:
        records.close_spec(
            SpecClose(
                run_id=run.run_id,
                graph_id=run.graph_id,
                spec=spec,
                outcome=outcome,
                ended_node="work",
                read_ahead=False,
                count_pending=False,
            )
        )

    node_run = launch(theirs.start, held, "theirs/1")
    assert isinstance(node_run, int)
    assert launch(theirs.start, held, "theirs/1") == node_run, "a retry finds its launch"
    assert launch(mine.start, held, "mine/1") == DispatchOutcome(taken=True), "passed over"

    beta_spec = NextSpec(spec_id=beta, name="beta")
    assert isinstance(launch(mine.start, beta_spec, "mine/2"), int)
    close(mine.start, beta_spec, "completed")
    assert records.queue_settlement(RunRef(run_id=mine_id)) is None, "alpha is not mine to blame"

    (gamma,) = make_specs(store, "gamma")
    queues.queue_add_spec(store, mine_queue, gamma)
    gamma_spec = NextSpec(spec_id=gamma, name="gamma")
    assert isinstance(launch(mine.start, gamma_spec, "mine/3"), int)
    close(mine.start, gamma_spec, "failed")
    line = f"spec alpha ({alpha}) is being run by {theirs_id} of graph theirs"
    blocker = records.queue_settlement(RunRef(run_id=mine_id))
    assert blocker is not None
    assert blocker_json(blocker) == {
        "kind": "queue_failed",
        "message": f"1 queue member(s) did not complete: gamma ({gamma}: failed); {line}",
        "failed_specs": [gamma],
        "node": "work",  # where the failed member ended: on_failed's {{node}}
        "held_elsewhere": [line],
    }
    counts = RunCounts(completed=1, failed=1, specs_started=2)
    records.settle_run(
        RunSettlement(run_id=mine_id, status="failed", blocker=blocker, counts=counts)
    )
    assert run_summary(store, mine_id) == {**counts.model_dump(), "held_elsewhere": [line]}


async def test_a_retried_reset_leaves_the_next_run_alone(store: Store, repo: Path) -> None:
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [counting_node(repo.parent / "executions.txt")], specs=[spec])
    first = runs.prepare_run(store, graph).start.run_id
    control = RunControl(store)
    control.reset_run(RunRef(run_id=first))
    second = runs.prepare_run(store, graph).start.run_id
    control.reset_run(RunRef(run_id=first))  # the first attempt's answer was lost: a retry
    assert active_runs(store, graph) == [second]
    assert graph_state(store, graph)["status"] == "running"
