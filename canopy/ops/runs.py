"""Starting a graph run (``graph_control run``) and waiting for it to settle.

The launch guard runs before anything is written: one active run per graph,
a git work tree, and a clean tree unless the graph allows a dirty start. Then a worker
must be serving the run's host (the machine holding the workdir, whose agents task queue
runs every node): without one the run would wait forever, so the start is refused
instead. The run is recorded, then the GraphRunV2 workflow is started; if Temporal refuses
the start, the record is rolled back, so a refused start leaves nothing behind.

One active run per graph holds twice over: the store refuses a second active run (row lock
plus a partial unique index), and every run of a graph uses the graph's one workflow id,
which Temporal lets only one running workflow hold.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from canopy import search_attributes
from canopy.contracts.graph_run import GRAPH_RUN_WORKFLOW, RUN_SEARCH_ATTRIBUTES, RunInput
from canopy.errors import Refused, store_errors
from canopy.graphs.agents import agent_platforms
from canopy.ids import new_id
from canopy.limits import LANES, check_range
from canopy.ops import control, run_metadata, start_checks
from canopy.ops.tuning import run_tuning
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store import queries
from canopy.store.engine import Store
from canopy.temporal import client as temporal_client
from canopy.timefmt import stored_time, utcnow
from canopy.workdir import describe_dirty, normalize_workdir, require_work_tree, worktree_state

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

    from canopy.store.queries import Row, Rows

LIVENESS_CHECK_SECONDS = 2.0
"""While waiting, how often ``graph wait`` checks that the run's workflow still exists."""

WORKER_WAIT_SECONDS = 10.0
"""How long a start waits for a worker to poll the host's agents task queue before it is
refused: a worker started a moment ago (by ``canopy up`` at the same time, or a container
coming up) takes a few seconds to import, connect and poll."""
WORKER_POLL_SECONDS = 0.25
"""How often a start waiting for a worker asks Temporal again."""


CLOSING_WAIT_SECONDS = 10.0
"""How long a start waits for the graph's previous workflow to close. A run writes its end
to the store (a reset, a settle) a moment before its workflow closes, so a start right
after it finds the workflow still there; a settled run firing slow hooks stays longer."""


def workflow_id_for(graph_id: str) -> str:
    """``canopy-graph-…``: the same workflow id for every run of a graph.

    Temporal allows one running workflow per id, so it refuses a second running workflow
    of a graph even if the store were wrong; continue-as-new keeps the id. Runs recorded
    before this id scheme keep theirs in ``runs.workflow_id``, which control signals use.
    """
    return f"canopy-{graph_id}"


class ActiveRunRefusal(Refused):
    """A start refused because the graph already has an active run (or its workflow is
    still open): a scheduled fire records it as skipped, not as a failure."""


@dataclass(frozen=True)
class CheckedStart:
    """A start that passed the launch guard: what the run record is written from."""

    graph_id: str
    graph_name: str
    queue_id: str | None
    queue_name: str | None
    workdir: str
    host: str
    """The machine holding the workdir: the run's agent work goes to its task queue."""
    tree_checked: bool
    """Whether the git checks ran here; if not, the run's first spec is guarded on the host."""
    lanes: int = 1
    lanes_fixed: bool = False
    """Whether ``lanes`` was given for the run (else it follows the graph's)."""
    target: str | None = None
    """For a run of lanes: the branch checked out in the workdir, which it integrates into."""


@dataclass(frozen=True)
class GraphBefore:
    """The graph's fields a recorded run changes, as they were before it."""

    status: str
    blocker: dict[str, Any] | None
    updated_at: datetime


@dataclass(frozen=True)
class PreparedRun:
    """A recorded run, ready for its workflow to start."""

    start: RunInput
    workflow_id: str
    number: int
    graph_before: GraphBefore
    queue_name: str | None = None
    """The queue's name, for the Temporal UI's summary (the workflow input keeps its id)."""
    """What :func:`forget_run` restores if the workflow cannot be started."""


def prepare_run(
    store: Store,
    graph: str,
    queue: str | None = None,
    workdir: str | None = None,
    host: str | None = None,
    lanes: int | None = None,
) -> PreparedRun:
    """Validate a start and record the run (graph ``running``), race-free; without the
    check that a worker serves the host, which :func:`graph_run` makes between the two."""
    return _record_checked(store, _check_start(store, graph, queue, workdir, host, lanes))


def _record_checked(store: Store, checked: CheckedStart) -> PreparedRun:
    """Record a start that passed the launch guard.

    The launch guard's git checks ran before anything is locked. The record is written
    under the graph's row lock with the active-run check repeated, so simultaneous starts
    of one graph queue up and all but the first are refused. The partial unique index on
    active runs backs this up against any writer; its violation, or two starts taking the
    same run number, becomes the same one-line refusal. The store's planner statistics
    are refreshed then, for the run's reads of its queue (``Store.refresh_statistics``).
    """
    try:
        recorded = _record_run(store, checked)
    except store_errors("IntegrityError") as error:
        raise _conflict_refusal(store, checked, error) from error
    store.refresh_statistics()
    return recorded


def _check_start(
    store: Store,
    graph: str,
    queue: str | None,
    workdir: str | None,
    host: str | None,
    lanes: int | None = None,
) -> CheckedStart:
    """The launch guard: no active run, a git work tree, clean unless allowed.

    The run goes to ``host``, else the graph's host, else this machine. The git checks run
    on this machine: for a run on another host whose workdir is not here they are left to
    that host's worker (:func:`~canopy.ops.start_checks.checks_tree_here`). Such a run
    starts as a continued one does, with the dirty-tree guard before its first spec, so a
    dirty tree on the host parks it with the usual blocker. ``lanes`` overrides the
    graph's for this run."""
    if lanes is not None:
        check_range(lanes, LANES, "lanes")
    named_host = temporal_client.check_host(host) if host is not None else None
    with store.transaction() as rows:
        graph_id = queries.resolve_id(rows, "graph", graph)
        queue_id = queries.resolve_id(rows, "queue", queue) if queue is not None else None
        queue_name = queries.queue_name(rows, queue_id) if queue_id is not None else None
        row = queries.graph_record(rows, graph_id)
        _refuse_if_active(rows, row)
        run_workdir = normalize_workdir(workdir) if workdir is not None else row["workdir"]
        name, allow_dirty_start, graph_host = row["name"], row["allow_dirty_start"], row["host"]
        run_lanes = row["lanes"] if lanes is None else lanes
        platforms = agent_platforms(row["nodes"], row["ensembles"], row["hooks"])
        nothing_to_do = queue_id is None and not rows(
            "SELECT spec_id FROM graph_specs WHERE graph_id = :id LIMIT 1", {"id": graph_id}
        )
    run_host = named_host or graph_host or temporal_client.this_host()
    if run_workdir is None:
        raise Refused(f"graph {name} has no workdir; pass one with --workdir")
    if run_host == temporal_client.this_host():
        start_checks.refuse_missing_platforms(name, platforms)
    tree_checked = start_checks.checks_tree_here(run_host, run_workdir)
    target = start_checks.lanes_target(run_lanes, run_workdir, tree_checked)
    if tree_checked:
        require_work_tree(run_workdir)
        if not allow_dirty_start:
            state = worktree_state(run_workdir)
            if not state.clean:
                raise Refused(
                    f"workdir {run_workdir} is dirty ({describe_dirty(state)}); commit or "
                    "stash, or set allow_dirty_start on the graph"
                )
    if nothing_to_do:
        raise Refused(
            f"graph {name} has no bound specs, so a run without a queue has nothing to do; "
            f"run it over a queue (canopy graph run {name} --queue QUEUE) or bind specs "
            "(graph edit, specs)"
        )
    return CheckedStart(
        graph_id,
        name,
        queue_id,
        queue_name,
        run_workdir,
        run_host,
        tree_checked,
        run_lanes,
        lanes is not None,
        target,
    )


def _refuse_if_active(rows: Rows, graph: Row) -> None:
    """The one-line refusal when the graph already has a running or paused run."""
    active, statuses = queries.bound_list("active", ACTIVE_RUN_STATUSES)
    found = rows(
        f"SELECT id FROM runs WHERE graph_id = :id AND status IN {active} LIMIT 1",
        {**statuses, "id": graph["id"]},
    )
    if found:
        raise ActiveRunRefusal(
            f"graph {graph['name']} ({graph['id']}) already has an active run {found[0]['id']}"
        )


_INSERT_RUN = (
    "INSERT INTO runs (id, graph_id, number, queue_id, workdir, workflow_id, temporal_address,"
    " status, started_at) VALUES (:id, :graph_id, :number, :queue_id, :workdir, :workflow_id,"
    " :temporal_address, 'running', :now)"
)


def _record_run(store: Store, checked: CheckedStart) -> PreparedRun:
    """Write the run and mark the graph ``running``, holding the graph's row lock."""
    with store.transaction() as rows:
        queries.lock_graph(rows, checked.graph_id)
        row = queries.graph_record(rows, checked.graph_id)
        _refuse_if_active(rows, row)
        (latest,) = rows(
            "SELECT MAX(number) AS number FROM runs WHERE graph_id = :id", {"id": row["id"]}
        )
        number = 1 + (latest["number"] or 0)
        run_id = new_id("run")
        workflow_id = workflow_id_for(row["id"])
        rows(
            "UPDATE graphs SET status = 'running', blocker = NULL, updated_at = :now"
            " WHERE id = :id",
            {"now": utcnow(), "id": row["id"]},
        )
        rows(
            _INSERT_RUN,
            {
                "id": run_id,
                "graph_id": row["id"],
                "number": number,
                "queue_id": checked.queue_id,
                "workdir": checked.workdir,
                "workflow_id": workflow_id,
                "temporal_address": temporal_client.address(),
                "now": utcnow(),
            },
        )
        return PreparedRun(
            start=RunInput(
                run_id=run_id,
                graph_id=row["id"],
                graph_name=row["name"],
                queue_id=checked.queue_id,
                workdir=checked.workdir,
                agents_task_queue=temporal_client.agents_task_queue(checked.host),
                continued=not checked.tree_checked,  # then the host guards the first spec
                lanes=checked.lanes,
                lanes_fixed=checked.lanes_fixed,
                target=checked.target,
            ).model_copy(update=run_tuning()),
            workflow_id=workflow_id,
            number=number,
            graph_before=GraphBefore(row["status"], row["blocker"], stored_time(row["updated_at"])),
            queue_name=checked.queue_name,
        )


def _conflict_refusal(store: Store, checked: CheckedStart, error: Exception) -> Refused:
    """The refusal for a start that lost a race the lock did not settle."""
    with store.transaction() as rows:
        row = queries.graph_record(rows, checked.graph_id)
        try:
            _refuse_if_active(rows, row)
        except Refused as refusal:
            return refusal
    reason = str(error).strip().splitlines()[0]
    return Refused(f"graph {checked.graph_name} could not record its run ({reason}); try again")


def forget_run(store: Store, prepared: PreparedRun) -> None:
    """Undo :func:`prepare_run` when the workflow could not be started."""
    before = prepared.graph_before
    with store.transaction() as rows:
        rows(
            "UPDATE graphs SET status = :status, blocker = :blocker, updated_at = :updated_at"
            " WHERE id = :id",
            {
                "status": before.status,
                "blocker": before.blocker,
                "updated_at": before.updated_at,
                "id": prepared.start.graph_id,
            },
        )
        rows("DELETE FROM runs WHERE id = :id", {"id": prepared.start.run_id})


async def graph_run(
    store: Store,
    graph: str,
    queue: str | None = None,
    workdir: str | None = None,
    host: str | None = None,
    lanes: int | None = None,
) -> dict[str, Any]:
    """Start a run of ``graph`` over its bound specs or ``queue`` in ``workdir`` on
    ``host`` (default: this machine), with ``lanes`` instead of the graph's; refused per
    the guard, or when no worker serves the host.

    The store and git work runs on a thread: it blocks, and callers that start runs from
    an event loop (the MCP server) keep serving meanwhile.
    """
    checked = await asyncio.to_thread(_check_start, store, graph, queue, workdir, host, lanes)
    client = await temporal_client.connect()
    await require_worker_on(client, checked.host)
    prepared = await asyncio.to_thread(_record_checked, store, checked)
    try:
        await start_workflow(client, prepared)
    except BaseException:
        forget_run(store, prepared)
        raise
    start = prepared.start
    return {
        "run_id": start.run_id,
        "number": prepared.number,
        "graph_id": start.graph_id,
        "graph_name": start.graph_name,
        "queue_id": start.queue_id,
        "workdir": start.workdir,
        "host": checked.host,
        "workflow_id": prepared.workflow_id,
        "status": "running",
    }


async def require_worker_on(client: Client, host: str) -> None:
    """Refuse unless a worker polls ``host``'s agents task queue, waiting up to
    :data:`WORKER_WAIT_SECONDS` for one that is starting.

    Temporal accepts a start that no worker will ever serve: every node of the run would
    sit scheduled on the agents queue, and ``graph wait`` would wait forever. Main-queue
    workers are interchangeable, so only the host's own queue is checked. A server that
    cannot list pollers (the time-skipping test server) lets the start through unchecked.
    """
    from temporalio.service import RPCError, RPCStatusCode

    task_queue = temporal_client.agents_task_queue(host)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WORKER_WAIT_SECONDS
    try:
        while not await control.recently_polled(client, task_queue, "activity"):
            if loop.time() >= deadline:
                raise Refused(
                    f"no worker serves host {host} (nothing polled task queue {task_queue} "
                    f"within {WORKER_WAIT_SECONDS:g} s); start one on the machine that holds "
                    f"the workdir: CANOPY_HOST={shlex.quote(host)} canopy worker"
                )
            await asyncio.sleep(WORKER_POLL_SECONDS)
    except RPCError as error:
        if error.status == RPCStatusCode.UNIMPLEMENTED:
            return
        raise Refused(f"cannot check the workers of task queue {task_queue}: {error}") from error


async def start_workflow(client: Client, prepared: PreparedRun) -> None:
    """Start GraphRunV2 under the graph's workflow id, refused while one is running.

    A workflow still running under the id is usually the previous run closing (it wrote
    its end to the store a moment ago): the start waits up to
    :data:`CLOSING_WAIT_SECONDS` for it to close, then tries again.
    """
    from temporalio.exceptions import WorkflowAlreadyStartedError

    loop = asyncio.get_running_loop()
    deadline = loop.time() + CLOSING_WAIT_SECONDS
    while True:
        try:
            await _start(client, prepared)
            return
        except WorkflowAlreadyStartedError as running:
            left = deadline - loop.time()
            handle = client.get_workflow_handle(prepared.workflow_id, run_id=running.run_id)
            if left <= 0 or not await _closes_within(handle, left):
                raise ActiveRunRefusal(_still_running(prepared)) from running


async def _start(client: Client, prepared: PreparedRun) -> None:
    """One start of GraphRunV2 with search attributes for graph id/name and queue id, and
    ``CanopyStatus`` (which the run then keeps current) where the server has it; with a
    static summary and details for the Temporal UI."""
    from temporalio.common import (
        SearchAttributeKey,
        SearchAttributePair,
        TypedSearchAttributes,
        WorkflowIDConflictPolicy,
        WorkflowIDReusePolicy,
    )
    from temporalio.service import RPCError

    try:
        absent = await search_attributes.missing(client)
    except RPCError:  # a server that cannot list them (the time-skipping test server)
        absent = list(RUN_SEARCH_ATTRIBUTES)
    status_attributes = not set(RUN_SEARCH_ATTRIBUTES) & set(absent)
    start = prepared.start.model_copy(update={"status_attributes": status_attributes})
    values = {
        search_attributes.SEARCH_ATTRIBUTE_GRAPH_ID: start.graph_id,
        search_attributes.SEARCH_ATTRIBUTE_GRAPH_NAME: start.graph_name,
        search_attributes.SEARCH_ATTRIBUTE_QUEUE_ID: start.queue_id,
        search_attributes.SEARCH_ATTRIBUTE_STATUS: "running" if status_attributes else None,
    }
    pairs = [
        SearchAttributePair(SearchAttributeKey.for_keyword(name), value)
        for name, value in values.items()
        if value is not None
    ]
    await client.start_workflow(
        GRAPH_RUN_WORKFLOW,
        start,
        id=prepared.workflow_id,
        task_queue=start.agents_task_queue,  # the run lives with its workdir's host
        search_attributes=TypedSearchAttributes(pairs),
        static_summary=run_metadata.summary(prepared.start, prepared.number, prepared.queue_name),
        static_details=run_metadata.details(
            prepared.start, prepared.number, prepared.workflow_id, prepared.queue_name
        ),
        id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
    )


async def _closes_within(handle: WorkflowHandle[Any, Any], seconds: float) -> bool:
    """Whether this execution closes within ``seconds``; one that continues as new lives
    on, so it does not count as closed."""
    from temporalio.client import WorkflowContinuedAsNewError, WorkflowFailureError

    try:
        await asyncio.wait_for(handle.result(follow_runs=False), seconds)
    except (TimeoutError, WorkflowContinuedAsNewError):
        return False
    except WorkflowFailureError:
        pass  # failed, terminated, cancelled or timed out: closed all the same
    return True


def _still_running(prepared: PreparedRun) -> str:
    """The refusal when the graph's workflow outlived the wait for it to close."""
    start = prepared.start
    return (
        f"graph {start.graph_name} ({start.graph_id}) cannot start a run: its workflow "
        f"{prepared.workflow_id} is still running in Temporal after {CLOSING_WAIT_SECONDS:g} s "
        f"(a settled run may still be firing hooks: canopy graph wait "
        f"{shlex.quote(start.graph_name)}); try again when it has closed"
    )


async def wait_until_settled(
    store: Store,
    graph: str,
    timeout: float | None,
    watch: Callable[[dict[str, Any] | None], None] | None = None,
) -> dict[str, Any]:
    """Wait until the graph is no longer ``running``; refuse on timeout (``None``: wait as
    long as it runs, as ``graph logs --follow`` does).

    A settled run fires its terminal hooks after writing the graph's status, so once the
    store says completed/failed this also waits for the run's workflow to close: when it
    returns, ``on_completed``/``on_failed`` hooks have run. ``watch`` hears, at every look
    at the store while the graph runs, the node in flight (:func:`node_in_flight`).
    """
    with store.transaction() as rows:
        graph_id = queries.resolve_id(rows, "graph", graph)
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    next_liveness_check = loop.time() + LIVENESS_CHECK_SECONDS
    while True:
        status, blocker, name = _graph_state(store, graph_id)
        if status != "running":
            latest = _latest_workflow_id(store, graph_id)
            if status in ("completed", "failed") and latest is not None:
                left = None if deadline is None else max(deadline - loop.time(), 0.1)
                await _workflow_closed(latest, left, name, timeout)
            return {"graph_id": graph_id, "name": name, "status": status, "blocker": blocker}
        if watch is not None:
            watch(node_in_flight(store, graph_id))
        if deadline is not None and loop.time() >= deadline:
            raise Refused(f"graph {name} is still running after {timeout:g} s")
        if loop.time() >= next_liveness_check:
            await _refuse_if_workflow_gone(store, graph_id)
            next_liveness_check = loop.time() + LIVENESS_CHECK_SECONDS
        await asyncio.sleep(0.2)


def _graph_state(store: Store, graph_id: str) -> tuple[str, dict[str, Any] | None, str]:
    """The graph's status, blocker and name, read fresh."""
    with store.transaction() as rows:
        row = queries.graph_record(rows, graph_id)
    return row["status"], row["blocker"], row["name"]


def node_in_flight(store: Store, graph_id: str) -> dict[str, Any] | None:
    """The node the graph's run is running now: ``spec_id``, ``spec_name``, ``node`` and
    ``started_at``; ``None`` between nodes (a hook, the next spec being picked)."""
    with store.transaction() as rows:
        found = rows(
            "SELECT n.spec_id, s.name AS spec_name, n.node, n.started_at FROM node_runs n"
            " JOIN runs r ON r.id = n.run_id LEFT JOIN specs s ON s.id = n.spec_id"
            " WHERE r.graph_id = :graph_id AND n.status = 'running' ORDER BY n.id DESC LIMIT 1",
            {"graph_id": graph_id},
        )
    if not found:
        return None
    return {**found[0], "started_at": stored_time(found[0]["started_at"])}


async def _refuse_if_workflow_gone(store: Store, graph_id: str) -> None:
    """Refuse the wait when the run's workflow is gone (terminated, lost) while the store
    still says running: nothing would ever settle it, so waiting out the timeout is moot."""
    latest = _latest_workflow_id(store, graph_id)
    gone = await control.workflow_gone(latest) if latest is not None else None
    if gone is None:
        return
    status, _, name = _graph_state(store, graph_id)  # it may have settled meanwhile
    if status == "running" and latest is not None:
        raise Refused(control.gone_warning(name, status, latest, gone))


def _latest_workflow_id(store: Store, graph_id: str) -> str | None:
    """The workflow id of the graph's latest run, if it has run."""
    with store.transaction() as rows:
        found = rows(
            "SELECT workflow_id FROM runs WHERE graph_id = :graph_id ORDER BY number DESC LIMIT 1",
            {"graph_id": graph_id},
        )
    return found[0]["workflow_id"] if found else None


async def _workflow_closed(
    workflow_id: str, seconds: float | None, name: str, timeout: float | None
) -> None:
    """Wait (bounded by ``seconds``, unless ``None``) for a settled run's workflow to
    finish firing its terminal hooks.

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
