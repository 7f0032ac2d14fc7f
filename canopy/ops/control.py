"""Steering a run from outside: continue, pause, stop, reset (``graph_control``, DESIGN §6).

The GraphRun workflow owns what a run does; these functions only ask it. Each one first
validates against the store and refuses with one line naming the current state, so
nothing is sent that the workflow would have to ignore. Then it signals the run's
workflow and polls the store for a few seconds for the change the workflow writes through
its activities. Temporal accepts a signal even while no worker is running, so when the
change does not show in time the result explains why, in ``note``: either it lands later
by design (a pause waits for the spec boundary, a stop for the node to die) or no worker
serves the run's task queue and it takes effect when one starts.

``consistency_warning`` (DESIGN §6.7) lives here as well: it is the other place that
compares the store with Temporal. temporalio is imported only inside the functions that
talk to Temporal, so store-only commands that import this module never load the SDK.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

from sqlalchemy import select
from sqlalchemy.orm import Session

from canopy.contracts.graph_run import (
    QUERY_STATUS,
    SIGNAL_CONTINUE,
    SIGNAL_PAUSE,
    SIGNAL_RESET,
    SIGNAL_STOP,
    ContinueMode,
    ContinueRequest,
    RunStatus,
)
from canopy.errors import Refused
from canopy.ops.common import rows_of
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store import queries
from canopy.store.engine import Store
from canopy.store.graph_reset import reset_graph_record
from canopy.store.models import Graph, GraphSpec, Queue, QueueMember, Run, Spec
from canopy.temporal import client as temporal_client
from canopy.timefmt import utcnow

if TYPE_CHECKING:
    from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse
    from temporalio.client import Client, WorkflowHandle

    from canopy.ops.graph_info import GraphInfo

CONTINUE_MODES: tuple[str, ...] = get_args(ContinueMode)

ANSWER_WAIT_SECONDS = 5.0
"""How long a command polls the store for the workflow's answer before explaining the delay."""
POLL_SECONDS = 0.1
STUCK_TASK_SECONDS = 1.0
"""A live worker finishes a workflow task in milliseconds; one pending this long is stuck."""
POLLER_FRESH_SECONDS = 75.0
"""A live worker re-polls at least once a minute (a long poll lasts up to 60 s), while the
server lists a gone poller for 5 minutes; older sightings do not count as a worker."""
CONNECT_TIMEOUT_SECONDS = 5.0
QUERY_TIMEOUT_SECONDS = 3.0
FAILURE_SEARCH_EVENTS = 50
"""How far back from a history's end a failing workflow task's error is looked for."""
"""Bound on the ``status`` query: with no worker up it would otherwise wait a long time."""
RESAMPLE_SECONDS = 0.5
"""Pause between two ``status`` samples, so a run caught between two activities (a few
milliseconds with nothing in flight) is not reported as stuck."""

T = TypeVar("T")


# --------------------------------------------------------------------------- store views


@dataclass(frozen=True)
class ActiveRun:
    """The run that owns a graph (``running`` or ``paused``) and its workflow."""

    id: str
    workflow_id: str
    queue_id: str | None


@dataclass(frozen=True)
class GraphState:
    """What the store says about a graph: enough to validate a command and see it land."""

    id: str
    name: str
    status: str
    blocker: dict[str, Any] | None
    updated_at: datetime
    nodes: tuple[str, ...]
    run: ActiveRun | None

    @property
    def shell_name(self) -> str:
        """The name as typed on a command line, for the hints in messages."""
        return shlex.quote(self.name)


def _read(db: Session, graph_id: str) -> GraphState:
    row = db.get_one(Graph, graph_id)
    run = db.scalars(
        select(Run)
        .where(Run.graph_id == graph_id, Run.status.in_(ACTIVE_RUN_STATUSES))
        .order_by(Run.number.desc())
    ).first()
    return GraphState(
        id=row.id,
        name=row.name,
        status=row.status,
        blocker=row.blocker,
        updated_at=row.updated_at,
        nodes=tuple(node["name"] for node in row.nodes),
        run=ActiveRun(run.id, run.workflow_id, run.queue_id) if run is not None else None,
    )


def _resolve(db: Session, graph: str) -> GraphState:
    return _read(db, queries.resolve_id(rows_of(db), "graph", graph))


def _state_of(store: Store, graph: str) -> GraphState:
    with store.transaction() as db:
        return _resolve(db, graph)


def _result(
    after: GraphState, run: ActiveRun | None, signal: str | None, note: str | None
) -> dict[str, Any]:
    """The JSON answer of every command: the graph as it stands now and what was done."""
    return {
        "graph_id": after.id,
        "name": after.name,
        "status": after.status,
        "blocker": after.blocker,
        "run_id": run.id if run is not None else None,
        "workflow_id": run.workflow_id if run is not None else None,
        "signal": signal,
        "note": note,
    }


# --------------------------------------------------------------------------- validation


def _require_run(state: GraphState) -> ActiveRun:
    """The active run, or a refusal: a graph marked active without one needs a reset."""
    if state.run is None:
        raise Refused(
            f"graph {state.name} is {state.status} but has no active run; "
            f"reset it: canopy graph reset {state.shell_name}"
        )
    return state.run


def _check_mode(mode: str, node: str | None, spec: str | None) -> None:
    if mode not in CONTINUE_MODES:
        raise Refused(f"unknown continue mode {mode!r}; one of {', '.join(CONTINUE_MODES)}")
    if mode != "run_from_node" and (node is not None or spec is not None):
        raise Refused(f"node and spec apply only to mode run_from_node, not {mode}")


def _check_node(state: GraphState, node: str) -> None:
    if node not in state.nodes:
        raise Refused(
            f"graph {state.name} has no node {node!r}; its nodes are {', '.join(state.nodes)}"
        )


def _directed_spec(db: Session, state: GraphState, run: ActiveRun, spec: str) -> str:
    """The full id of ``spec`` (a unique prefix), which must be pending in the run's scope:
    the queue it drains, or the graph's bound specs for a bound-spec run."""
    spec_id = queries.resolve_id(rows_of(db), "spec", spec)
    if run.queue_id is not None:
        in_scope = db.get(QueueMember, (run.queue_id, spec_id)) is not None
        queue_name = db.scalar(select(Queue.name).where(Queue.id == run.queue_id))
        scope = f"in queue {queue_name}, which run {run.id} drains"
    else:
        in_scope = db.get(GraphSpec, (state.id, spec_id)) is not None
        scope = f"bound to graph {state.name}"
    if not in_scope:
        raise Refused(f"spec {spec_id} is not {scope}")
    status = db.get_one(Spec, spec_id).status
    if status != "pending":
        raise Refused(
            f"spec {spec_id} is {status}, not pending; run_from_node starts a pending spec"
        )
    return spec_id


def _continue_request(
    store: Store, graph: str, mode: str, node: str | None, spec: str | None
) -> tuple[GraphState, ContinueRequest]:
    """Validate a continue against the store; the graph and the signal's payload."""
    _check_mode(mode, node, spec)
    with store.transaction() as db:
        state = _resolve(db, graph)
        if state.status != "paused":
            raise Refused(
                f"graph {state.name} is {state.status}, not paused; "
                "continue applies to a paused graph"
            )
        run = _require_run(state)
        if node is not None:
            _check_node(state, node)
        spec_id = _directed_spec(db, state, run, spec) if spec is not None else None
    request = ContinueRequest.model_validate({"mode": mode, "node": node, "spec_id": spec_id})
    return state, request


def _check_running(state: GraphState, verb: str, when_paused: str) -> None:
    """Pause and stop act on a running graph only."""
    if state.status == "paused":
        raise Refused(f"graph {state.name} is already paused{when_paused}")
    if state.status != "running":
        raise Refused(f"graph {state.name} is {state.status}; nothing to {verb}")
    _require_run(state)


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class Control:
    """One control message: its signal and payload, how its effect shows in the store,
    and what to say when that effect is late although a worker is serving the run."""

    signal: str
    payload: ContinueRequest | None
    landed: Callable[[GraphState, GraphState], bool]
    late: str


def _resumed(before: GraphState, after: GraphState) -> bool:
    """Any answer to a continue: not paused any more, or paused again with a fresh blocker
    (a re-check that found the tree still dirty rewrites the blocker and ``updated_at``)."""
    return (
        after.status != "paused"
        or after.blocker != before.blocker
        or after.updated_at != before.updated_at
    )


def _not_running(before: GraphState, after: GraphState) -> bool:
    return after.status != "running"


def _run_ended(before: GraphState, after: GraphState) -> bool:
    return after.run is None or before.run is None or after.run.id != before.run.id


async def graph_continue(
    store: Store,
    graph: str,
    mode: str = "recheck",
    node: str | None = None,
    spec: str | None = None,
    wait: float = ANSWER_WAIT_SECONDS,
) -> dict[str, Any]:
    """Resume a paused run: ``recheck`` the dirty-tree guard, ``run_from_node`` (a directed
    start of ``spec`` at ``node``, not refused by the guard) or ``skip_next_spec``."""
    state, request = _continue_request(store, graph, mode, node, spec)
    late = (
        f"continue sent; the run has not resumed yet (watch: canopy graph info {state.shell_name})"
    )
    result = await _send(store, state, Control(SIGNAL_CONTINUE, request, _resumed, late), wait)
    if result["status"] == "paused" and result["note"] is None and result["blocker"]:
        result["note"] = f"still paused: {result['blocker'].get('message')}"
    return result


async def graph_pause(
    store: Store, graph: str, wait: float = ANSWER_WAIT_SECONDS
) -> dict[str, Any]:
    """Pause a running graph at the next spec boundary (the spec in flight finishes)."""
    state = _state_of(store, graph)
    _check_running(state, "pause", "")
    late = "pause requested; the run pauses after the current spec"
    return await _send(store, state, Control(SIGNAL_PAUSE, None, _not_running, late), wait)


async def graph_stop(store: Store, graph: str, wait: float = ANSWER_WAIT_SECONDS) -> dict[str, Any]:
    """Cancel the node in flight (its process group is killed), mark the spec interrupted
    and pause; ``continue`` runs the spec again."""
    state = _state_of(store, graph)
    _check_running(state, "stop", "; nothing is in flight to stop")
    late = "stop requested; the run pauses once the node in flight has been cancelled"
    return await _send(store, state, Control(SIGNAL_STOP, None, _not_running, late), wait)


async def graph_reset(
    store: Store, graph: str, wait: float = ANSWER_WAIT_SECONDS
) -> dict[str, Any]:
    """Return the graph to ``idle``: blocker cleared, bound specs reopened to pending.

    An active run is asked to end (it stops its node and marks its spec interrupted).
    Without one — a settled graph, or a run whose workflow is gone from Temporal — the
    reset is done in the store alone.
    """
    state = _state_of(store, graph)
    if state.status == "idle" and state.blocker is None and state.run is None:
        raise Refused(f"graph {state.name} is idle; nothing to reset")
    if state.run is None:
        return _reset_in_store(store, state, None)
    late = "reset requested; the run ends once the node in flight has been cancelled"
    try:
        return await _send(store, state, Control(SIGNAL_RESET, None, _run_ended, late), wait)
    except _WorkflowGone as gone:
        note = f"workflow {state.run.workflow_id} {gone}; reset the store record only"
        return _reset_in_store(store, state, note)


# --------------------------------------------------------------------------- signalling


class _WorkflowGone(Exception):
    """The run's workflow cannot take signals: it has ended or Temporal does not know it."""


async def _send(store: Store, state: GraphState, control: Control, wait: float) -> dict[str, Any]:
    """Signal the active run's workflow, then wait for the store to show the effect."""
    run = _require_run(state)
    client = await temporal_client.connect()
    handle = client.get_workflow_handle(run.workflow_id)
    try:
        await _signal(handle, control)
    except _WorkflowGone as gone:
        if control.signal == SIGNAL_RESET:
            raise
        raise Refused(
            f"run {run.id} of graph {state.name} cannot be steered: workflow "
            f"{run.workflow_id} {gone}; reset the graph: canopy graph reset {state.shell_name}"
        ) from gone
    after, landed = await _await_store(store, state, control.landed, wait)
    note = None if landed else await _late_note(client, handle, control.late)
    return _result(after, run, control.signal, note)


async def _signal(handle: WorkflowHandle[Any, Any], control: Control) -> None:
    from temporalio.service import RPCError, RPCStatusCode

    try:
        if control.payload is None:
            await handle.signal(control.signal)
        else:
            await handle.signal(control.signal, control.payload)
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise _WorkflowGone(f"is not running in Temporal ({error.message})") from error
        raise


async def _await_store(
    store: Store,
    before: GraphState,
    landed: Callable[[GraphState, GraphState], bool],
    wait: float,
) -> tuple[GraphState, bool]:
    """Poll the store until ``landed`` holds or ``wait`` seconds pass; the last state seen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        with store.transaction() as db:
            after = _read(db, before.id)
        if landed(before, after):
            return after, True
        if loop.time() >= deadline:
            return after, False
        await asyncio.sleep(POLL_SECONDS)


async def _late_note(client: Client, handle: WorkflowHandle[Any, Any], late: str) -> str:
    """Why the store has not changed yet: a workflow whose task keeps failing, no worker
    at all, or the expected delay."""
    failing = await _failing_task(client, handle)
    if failing is not None:
        return (
            f"signal queued, but workflow {handle.id} {failing}; it takes effect once a "
            "worker can run it"
        )
    queue = await _unserved_task_queue(client, handle)
    if queue is None:
        return late
    return (
        f"signal queued: no worker is serving task queue {queue}; "
        "it takes effect when a worker starts (canopy up)"
    )


async def _unserved_task_queue(client: Client, handle: WorkflowHandle[Any, Any]) -> str | None:
    """The workflow's task queue when no worker serves it, else ``None``.

    Two signs, because the second alone is slow: a workflow task (the signal schedules one)
    that no worker has finished, and no worker seen polling the queue lately — the server
    keeps listing a stopped worker's poller for minutes, so only fresh sightings count.
    """
    from temporalio.service import RPCError

    try:
        description = await handle.describe()
        if _workflow_task_stuck(description.raw_description):
            return description.task_queue
        if not await recently_polled(client, description.task_queue):
            return description.task_queue
    except RPCError:
        return None
    return None


async def _failing_task(client: Client, handle: WorkflowHandle[Any, Any]) -> str | None:
    """How the workflow's task keeps failing (``fails its workflow task at every attempt
    (attempt N): <error>``), or ``None``: a task on its second attempt or later, with
    the error of the latest failure from the history's end."""
    from temporalio.api.common.v1 import WorkflowExecution
    from temporalio.api.enums.v1 import EventType
    from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
    from temporalio.service import RPCError

    try:
        raw = (await handle.describe()).raw_description
        if not raw.HasField("pending_workflow_task") or raw.pending_workflow_task.attempt < 2:
            return None
        response = await client.workflow_service.get_workflow_execution_history_reverse(
            GetWorkflowExecutionHistoryReverseRequest(
                namespace=client.namespace,
                execution=WorkflowExecution(workflow_id=handle.id),
                maximum_page_size=FAILURE_SEARCH_EVENTS,
            )
        )
    except RPCError:
        return None
    attempt = raw.pending_workflow_task.attempt
    failed = EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    for event in response.history.events:
        if event.event_type == failed:
            failure = event.workflow_task_failed_event_attributes.failure
            message = (failure.message.splitlines() or ["(no message)"])[0][:300]
            return f"fails its workflow task at every attempt (attempt {attempt}): {message}"
    return None


def _workflow_task_stuck(raw: DescribeWorkflowExecutionResponse) -> bool:
    """A workflow task pending for longer than any live worker takes to finish one.

    Either state counts: ``scheduled`` (nobody picked it up) and ``started`` (a worker took
    it and then went away; the server only notices when the task times out).
    """
    if not raw.HasField("pending_workflow_task"):
        return False
    task = raw.pending_workflow_task
    stamp = task.original_scheduled_time if task.HasField("original_scheduled_time") else None
    scheduled = (stamp or task.scheduled_time).ToDatetime(tzinfo=UTC)
    return utcnow() - scheduled > timedelta(seconds=STUCK_TASK_SECONDS)


async def recently_polled(
    client: Client, task_queue: str, tasks: Literal["workflow", "activity"] = "workflow"
) -> bool:
    """Whether a worker polled ``task_queue`` for ``tasks`` within the freshness window."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    task_queue_type = (
        TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
        if tasks == "workflow"
        else TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
    )
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=task_queue_type,
        )
    )
    horizon = utcnow() - timedelta(seconds=POLLER_FRESH_SECONDS)
    return any(p.last_access_time.ToDatetime(tzinfo=UTC) > horizon for p in response.pollers)


async def daemon_check() -> dict[str, Any]:
    """Whether a daemon would act on a run or a message now (``canopy server check``):
    ``serving``, and when it would not, ``problem`` in one line (Temporal cannot be
    reached, or no worker polls the main task queue).

    The TUI shows it; everything that only reads the store works either way.
    """
    problem = await _daemon_problem()
    return {"serving": problem is None, "problem": problem}


async def _daemon_problem() -> str | None:
    try:
        client = await asyncio.wait_for(temporal_client.connect(), CONNECT_TIMEOUT_SECONDS)
    except Refused as refusal:
        return str(refusal)
    except TimeoutError:
        return f"Temporal did not answer within {CONNECT_TIMEOUT_SECONDS:g} s"
    task_queue = temporal_client.MAIN_TASK_QUEUE
    if not await recently_polled(client, task_queue):
        return f"no worker polls task queue {task_queue}: start one with canopy up"
    return None


# --------------------------------------------------------------------------- store-only reset


def _reset_in_store(store: Store, state: GraphState, note: str | None) -> dict[str, Any]:
    """Reset with no workflow to ask; refused if a run started since ``state`` was read."""
    with store.transaction() as db:
        queries.lock_graph(rows_of(db), state.id)
        current = _read(db, state.id)
        if current.run != state.run:
            started = current.run.id if current.run is not None else "none"
            raise Refused(
                f"graph {state.name} changed while resetting (active run now {started}); try again"
            )
        reset_graph_record(rows_of(db), state.id)
        db.expire_all()  # the reset wrote around the ORM
        return _result(_read(db, state.id), state.run, None, note)


# --------------------------------------------------------------------------- consistency


async def consistency_warning(info: GraphInfo) -> str | None:
    """Why a graph the store calls ``running`` or ``paused`` cannot move, or ``None``
    (§6.7).

    Checked in order: the workflow must exist and be running (a terminated or lost
    workflow will never move the run on), and its workflow task must not keep failing
    (a wedged run takes no signal either). For a running graph then: a node run in
    progress or a scheduled resume in the store means all is well; otherwise the
    workflow's ``status`` query must show a node in flight or a scheduled resume. A
    resume counts as scheduled when either the store column or the query reports one.
    """
    if not info.asks_temporal():
        return None
    ahead = f"graph {info.name} is {info.status} in the store, but"
    reset = f"reset it: canopy graph reset {shlex.quote(info.name)}"
    run = info.active_run
    if run is None or run.workflow_id is None:
        return f"{ahead} has no active run; {reset}"
    try:
        client = await asyncio.wait_for(temporal_client.connect(), CONNECT_TIMEOUT_SECONDS)
    except (Refused, TimeoutError) as error:
        return f"{ahead} its run {run.id} cannot be checked: {error or 'Temporal is silent'}"
    handle = client.get_workflow_handle(run.workflow_id)
    gone = await _workflow_gone(handle)
    if gone is not None:
        return gone_warning(info.name, info.status, run.workflow_id, gone)
    failing = await _failing_task(client, handle)
    if failing is not None:
        return (
            f"{ahead} its workflow {run.workflow_id} {failing}; it moves again once a worker "
            f"can run it (fix or upgrade the worker), or {reset}"
        )
    if info.status == "paused" or _store_shows_progress(info, run.id):
        return None
    return await _query_warning(handle, ahead, run.workflow_id)


def gone_warning(name: str, status: str, workflow_id: str, gone: str) -> str:
    """The warning for a graph whose workflow is gone while the store says it runs."""
    return (
        f"graph {name} is {status} in the store, but its workflow {workflow_id} {gone}; "
        f"nothing will move it on: reset it: canopy graph reset {shlex.quote(name)}"
    )


async def workflow_gone(workflow_id: str) -> str | None:
    """How the workflow is gone, or ``None`` if it runs or Temporal cannot be asked."""
    try:
        client = await asyncio.wait_for(temporal_client.connect(), CONNECT_TIMEOUT_SECONDS)
    except (Refused, TimeoutError):
        return None
    return await _workflow_gone(client.get_workflow_handle(workflow_id))


async def _workflow_gone(handle: WorkflowHandle[Any, Any]) -> str | None:
    """How the workflow is gone (``is terminated``, ``was not found``), or ``None``."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError, RPCStatusCode

    try:
        description = await handle.describe(rpc_timeout=timedelta(seconds=QUERY_TIMEOUT_SECONDS))
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return "was not found in Temporal"
        return f"cannot be described ({error.message})"
    status = description.status
    if status == WorkflowExecutionStatus.RUNNING:
        return None
    return f"is {status.name.lower() if status else 'in an unknown state'} in Temporal"


def _store_shows_progress(info: GraphInfo, run_id: str) -> bool:
    """A resume scheduled, or a node run of the active run (the latest run) in progress."""
    if info.scheduled_resume_at is not None:
        return True
    latest = info.runs[0].id if info.runs else None
    return latest == run_id and any(node_run.status == "running" for node_run in info.node_runs)


async def _query_warning(
    handle: WorkflowHandle[Any, Any], ahead: str, workflow_id: str
) -> str | None:
    """Ask the workflow twice what it is doing; a warning if both answers show it idle."""
    from temporalio.client import WorkflowQueryFailedError
    from temporalio.service import RPCError

    waiting_for = None
    for sample in range(2):
        if sample:
            await asyncio.sleep(RESAMPLE_SECONDS)
        try:
            status = await _query_status(handle)
        except (RPCError, WorkflowQueryFailedError, TimeoutError):
            return (
                f"{ahead} its run cannot be checked: no worker answered the status query of "
                f"workflow {workflow_id} within {QUERY_TIMEOUT_SECONDS:g} s (start one: canopy up)"
            )
        if status.node is not None or status.scheduled_resume_at is not None:
            return None
        waiting_for = status.waiting_for
    waiting = f" (it is waiting for {waiting_for})" if waiting_for else ""
    return (
        f"{ahead} workflow {workflow_id} has no node run in progress "
        f"and no resume scheduled{waiting}"
    )


async def _query_status(handle: WorkflowHandle[Any, Any]) -> RunStatus:
    """The ``status`` query, bounded: with no worker up it would otherwise hang."""
    timeout = timedelta(seconds=QUERY_TIMEOUT_SECONDS)
    query = handle.query(QUERY_STATUS, result_type=RunStatus, rpc_timeout=timeout)
    status: RunStatus = await asyncio.wait_for(query, QUERY_TIMEOUT_SECONDS + 1)
    return status


def run_blocking(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` to the end from synchronous code (the CLI's ``graph info``).

    Inside a running event loop ``asyncio.run`` is not allowed, so the work then runs on a
    helper thread with its own loop; async callers should await the coroutine instead
    (``graph_get_async``), which also lets an in-process worker answer the query.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, work).result()
