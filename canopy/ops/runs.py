"""Starting a graph run (``graph_control run``) and waiting for it to settle.

The launch guard (DESIGN §6.1) runs before anything is written: one active run per graph,
a git work tree, and a clean tree unless the graph allows a dirty start. The run is
recorded, then the GraphRun workflow is started; if Temporal cannot be reached the record
is rolled back, so a refused start leaves nothing behind.
"""

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from canopy import temporal_client
from canopy.errors import Refused
from canopy.ids import new_id
from canopy.ops import control
from canopy.ops.common import rows_of
from canopy.runmodels import RunInput
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store import queries
from canopy.store.engine import Store
from canopy.store.models import Graph, Run
from canopy.timefmt import utcnow
from canopy.workdirs import normalize_workdir
from canopy.worktree import describe_dirty, require_work_tree, worktree_state

WORKFLOW_NAME = "GraphRun"
LIVENESS_CHECK_SECONDS = 2.0
"""While waiting, how often ``graph wait`` checks that the run's workflow still exists."""


def run_tuning() -> dict[str, int]:
    """Per-run knobs from the environment: ``CANOPY_HEARTBEAT_TIMEOUT`` (seconds a node may
    go silent before its worker counts as lost; default 30) and
    ``CANOPY_SPECS_PER_EXECUTION`` (specs before continue-as-new; default 100)."""
    knobs = {
        "heartbeat_timeout_seconds": "CANOPY_HEARTBEAT_TIMEOUT",
        "specs_per_execution": "CANOPY_SPECS_PER_EXECUTION",
    }
    tuning = {}
    for field, variable in knobs.items():
        raw = os.environ.get(variable)
        if raw is None:
            continue
        if not raw.isdigit() or int(raw) < 1:
            raise Refused(f"{variable} must be a positive whole number, not {raw!r}")
        tuning[field] = int(raw)
    return tuning


def workflow_id_for(graph_id: str, number: int) -> str:
    """``canopy-graph-…-run-3``: derived from the graph and its run number."""
    return f"canopy-{graph_id}-run-{number}"


@dataclass(frozen=True)
class PreparedRun:
    """A recorded run, ready for its workflow to start."""

    start: RunInput
    workflow_id: str
    number: int
    graph_status_before: str
    """What :func:`forget_run` restores if the workflow cannot be started."""


def prepare_run(
    store: Store, graph: str, queue: str | None = None, workdir: str | None = None
) -> PreparedRun:
    """Validate a start and record the run (graph ``running``)."""
    with store.transaction() as session:
        rows = rows_of(session)
        graph_id = queries.resolve_id(rows, "graph", graph)
        queue_id = queries.resolve_id(rows, "queue", queue) if queue is not None else None
        row = session.get_one(Graph, graph_id)
        active = session.scalar(
            select(Run.id).where(Run.graph_id == graph_id, Run.status.in_(ACTIVE_RUN_STATUSES))
        )
        if active is not None:
            raise Refused(f"graph {row.name} ({graph_id}) already has an active run {active}")
        run_workdir = normalize_workdir(workdir) if workdir is not None else row.workdir
        if run_workdir is None:
            raise Refused(f"graph {row.name} has no workdir; pass one with --workdir")
        require_work_tree(run_workdir)
        if not row.allow_dirty_start:
            state = worktree_state(run_workdir)
            if not state.clean:
                raise Refused(
                    f"workdir {run_workdir} is dirty ({describe_dirty(state)}); commit or "
                    "stash, or set allow_dirty_start on the graph"
                )
        latest = session.scalar(select(func.max(Run.number)).where(Run.graph_id == graph_id))
        number = 1 + (latest or 0)
        run = Run(
            id=new_id("run"),
            graph_id=graph_id,
            number=number,
            queue_id=queue_id,
            workdir=run_workdir,
            workflow_id=workflow_id_for(graph_id, number),
            status="running",
            started_at=utcnow(),
        )
        session.add(run)
        status_before = row.status
        row.status = "running"
        row.blocker = None
        row.updated_at = utcnow()
        start = RunInput(
            run_id=run.id,
            graph_id=graph_id,
            graph_name=row.name,
            queue_id=queue_id,
            workdir=run_workdir,
            agents_task_queue=temporal_client.agents_task_queue(),
        ).model_copy(update=run_tuning())
        return PreparedRun(
            start=start,
            workflow_id=run.workflow_id,
            number=number,
            graph_status_before=status_before,
        )


def forget_run(store: Store, run_id: str, graph_status: str) -> None:
    """Undo :func:`prepare_run` when the workflow could not be started."""
    with store.transaction() as session:
        run = session.get_one(Run, run_id)
        graph = session.get_one(Graph, run.graph_id)
        graph.status = graph_status
        session.delete(run)


async def graph_run(
    store: Store, graph: str, queue: str | None = None, workdir: str | None = None
) -> dict[str, Any]:
    """Start a run of ``graph`` over its bound specs or ``queue``; refused per the guard."""
    prepared = prepare_run(store, graph, queue, workdir)
    try:
        await start_workflow(prepared)
    except BaseException:
        forget_run(store, prepared.start.run_id, prepared.graph_status_before)
        raise
    start = prepared.start
    return {
        "run_id": start.run_id,
        "number": prepared.number,
        "graph_id": start.graph_id,
        "graph_name": start.graph_name,
        "queue_id": start.queue_id,
        "workdir": start.workdir,
        "workflow_id": prepared.workflow_id,
        "status": "running",
    }


async def start_workflow(prepared: PreparedRun) -> None:
    """Start GraphRun with search attributes for graph id/name and queue id."""
    from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

    start = prepared.start
    client = await temporal_client.connect()
    values = {
        temporal_client.SEARCH_ATTRIBUTE_GRAPH_ID: start.graph_id,
        temporal_client.SEARCH_ATTRIBUTE_GRAPH_NAME: start.graph_name,
        temporal_client.SEARCH_ATTRIBUTE_QUEUE_ID: start.queue_id,
    }
    pairs = [
        SearchAttributePair(SearchAttributeKey.for_keyword(name), value)
        for name, value in values.items()
        if value is not None
    ]
    await client.start_workflow(
        WORKFLOW_NAME,
        start,
        id=prepared.workflow_id,
        task_queue=temporal_client.MAIN_TASK_QUEUE,
        search_attributes=TypedSearchAttributes(pairs),
        static_summary=f"{start.graph_name}: run {prepared.number}",
    )


async def wait_until_settled(store: Store, graph: str, timeout: float) -> dict[str, Any]:
    """Wait until the graph is no longer ``running``; refuse on timeout.

    A settled run fires its terminal hooks after writing the graph's status, so once the
    store says completed/failed this also waits for the run's workflow to close: when it
    returns, ``on_completed``/``on_failed`` hooks have run.
    """
    with store.transaction() as session:
        graph_id = queries.resolve_id(rows_of(session), "graph", graph)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    next_liveness_check = loop.time() + LIVENESS_CHECK_SECONDS
    while True:
        status, blocker, name = _graph_state(store, graph_id)
        if status != "running":
            latest = _latest_workflow_id(store, graph_id)
            if status in ("completed", "failed") and latest is not None:
                await _workflow_closed(latest, max(deadline - loop.time(), 0.1), name, timeout)
            return {"graph_id": graph_id, "name": name, "status": status, "blocker": blocker}
        if loop.time() >= deadline:
            raise Refused(f"graph {name} is still running after {timeout:g} s")
        if loop.time() >= next_liveness_check:
            await _refuse_if_workflow_gone(store, graph_id)
            next_liveness_check = loop.time() + LIVENESS_CHECK_SECONDS
        await asyncio.sleep(0.2)


def _graph_state(store: Store, graph_id: str) -> tuple[str, dict[str, Any] | None, str]:
    """The graph's status, blocker and name, read fresh."""
    with store.transaction() as session:
        row = session.get_one(Graph, graph_id)
        return row.status, row.blocker, row.name


async def _refuse_if_workflow_gone(store: Store, graph_id: str) -> None:
    """Refuse the wait when the run's workflow is gone (terminated, lost) while the store
    still says running: nothing would ever settle it, so waiting out the timeout is moot."""
    latest = _latest_workflow_id(store, graph_id)
    gone = await control.workflow_gone(latest) if latest is not None else None
    if gone is None:
        return
    status, _, name = _graph_state(store, graph_id)  # it may have settled meanwhile
    if status == "running" and latest is not None:
        raise Refused(control.gone_warning(name, latest, gone))


def _latest_workflow_id(store: Store, graph_id: str) -> str | None:
    """The workflow id of the graph's latest run, if it has run."""
    with store.transaction() as session:
        return session.scalar(
            select(Run.workflow_id).where(Run.graph_id == graph_id).order_by(Run.number.desc())
        )


async def _workflow_closed(workflow_id: str, seconds: float, name: str, timeout: float) -> None:
    """Wait (bounded) for a settled run's workflow to finish firing its terminal hooks.

    Without a reachable Temporal there is nothing to wait for: the store has the verdict.
    """
    try:
        client = await temporal_client.connect()
    except Refused:
        return
    try:
        await asyncio.wait_for(client.get_workflow_handle(workflow_id).result(), seconds)
    except TimeoutError as error:
        raise Refused(
            f"graph {name} settled but its hooks still run after {timeout:g} s"
        ) from error
    except Exception:  # terminated or failed behind Canopy's back: the store has the verdict
        return
