"""Steering a run from outside: continue, pause, stop, reset (``graph_control``).

The GraphRunV2 workflow owns what a run does and decides whether a command applies; these
functions only ask it. Each command is first checked against the store
(:mod:`canopy.ops.control_checks`), which refuses with one line naming the current state
without talking to Temporal. Then :func:`steer` asks the run's workflow: by update while
a worker serves it, so the run refuses from its own state (in the same line) or answers
once it has acted; else by signal, which Temporal keeps until a worker runs the workflow,
and then the store is polled for a few seconds for the change the workflow writes. When
the change does not show in time the result explains why, in ``note``: either it lands
later by design (a pause waits for the spec boundary, a stop for the node to die) or no
worker serves the run's task queue and it takes effect when one starts.

``consistency_warning`` lives here as well: it is the other place that
compares the store with Temporal. temporalio is imported only inside the functions that
talk to Temporal, so store-only commands that import this module never load the SDK.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from canopy.contracts.graph_run_blocker import stored_blocker
from canopy.contracts.graph_run_signals import (
    QUERY_STATUS,
    SIGNAL_CONTINUE,
    SIGNAL_RESET,
    STEERING_REFUSED,
)
from canopy.errors import Refused
from canopy.ops import control_checks as checks
from canopy.store import queries
from canopy.store.graph_reset import reset_graph_record
from canopy.temporal import client as temporal_client
from canopy.timefmt import utcnow

if TYPE_CHECKING:
    from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse
    from temporalio.client import Client, WorkflowExecutionDescription, WorkflowHandle

    from canopy.contracts.graph_run import RunStatus
    from canopy.ops.control_checks import Control, GraphState, Steering
    from canopy.ops.graph_info import GraphInfo
    from canopy.store.engine import Store

ANSWER_WAIT_SECONDS = 5.0
"""How long a command polls the store for the workflow's answer before explaining the delay."""
POLL_SECONDS = 0.1
ACCEPT_SECONDS = 3.0
"""How long a steering update may wait for a worker that seemed to serve the run to accept
(or refuse) it; beyond that the command signals instead (a worker just gone, or stuck)."""
MIN_RPC_SECONDS = 0.01
"""A call bounded by a wait of 0 s still gets this long (a zero timeout means none)."""
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


# --------------------------------------------------------------------------- commands


async def graph_continue(
    store: Store,
    graph: str,
    mode: str = "recheck",
    node: str | None = None,
    spec: str | None = None,
    wait: float = ANSWER_WAIT_SECONDS,
) -> dict[str, Any]:
    """Resume a paused run (:func:`~canopy.ops.control_checks.check_continue`)."""
    return await steer(store, checks.check_continue(store, graph, mode, node, spec), wait)


async def graph_pause(
    store: Store, graph: str, wait: float = ANSWER_WAIT_SECONDS
) -> dict[str, Any]:
    """Pause a running graph at the next spec boundary (the spec in flight finishes)."""
    return await steer(store, checks.check_pause(store, graph), wait)


async def graph_stop(store: Store, graph: str, wait: float = ANSWER_WAIT_SECONDS) -> dict[str, Any]:
    """Cancel the node in flight and pause (:func:`~canopy.ops.control_checks.check_stop`)."""
    return await steer(store, checks.check_stop(store, graph), wait)


async def graph_reset(
    store: Store, graph: str, wait: float = ANSWER_WAIT_SECONDS
) -> dict[str, Any]:
    """Return the graph to ``idle`` (:func:`~canopy.ops.control_checks.check_reset`)."""
    return await steer(store, checks.check_reset(store, graph), wait)


async def steer(
    store: Store, steering: Steering, wait: float = ANSWER_WAIT_SECONDS
) -> dict[str, Any]:
    """Carry out a checked command: signal the run's workflow and wait up to ``wait``
    seconds for the store to show the effect; a reset with no workflow to ask (none, or
    one gone from Temporal) is done in the store."""
    state, control = steering.state, steering.control
    if control is None:
        return _reset_in_store(store, state, None)
    try:
        result = await _send(store, state, control, wait)
    except _WorkflowGone as gone:
        workflow_id = checks.require_run(state).workflow_id
        note = f"workflow {workflow_id} {gone}; reset the store record only"
        return _reset_in_store(store, state, note)
    still_paused = result["status"] == "paused" and result["note"] is None and result["blocker"]
    if control.signal == SIGNAL_CONTINUE and still_paused:
        result["note"] = f"still paused: {stored_blocker(result['blocker']).message}"
    return result


# --------------------------------------------------------------------------- signalling


class _WorkflowGone(Exception):
    """The run's workflow cannot take signals: it has ended or Temporal does not know it."""


async def _send(store: Store, state: GraphState, control: Control, wait: float) -> dict[str, Any]:
    """Ask the active run's workflow, never through another Temporal than the one the run
    was started on: by update while a worker serves it (the run refuses or answers once it
    has acted), else by signal, then the store is polled for the effect."""
    run = checks.require_run(state)
    problem = checks.elsewhere(state.name, run.id, run.temporal_address)
    if problem is not None:
        raise Refused(problem)
    client = await temporal_client.connect()
    handle = client.get_workflow_handle(run.workflow_id)
    deadline = asyncio.get_running_loop().time() + wait
    try:
        answered = await _update(handle, control, wait) if await _served(client, handle) else None
        if answered is None:
            await _signal(handle, control)
    except _WorkflowGone as gone:
        if control.signal == SIGNAL_RESET:
            raise
        raise Refused(
            f"run {run.id} of graph {state.name} cannot be steered: workflow "
            f"{run.workflow_id} {gone}; reset the graph: canopy graph reset {state.shell_name}"
        ) from gone
    if answered is not None:  # the run wrote its answer before it gave it
        with store.transaction() as rows:
            after = checks.read_state(rows, state.id)
        note = None if answered and control.landed(state, after) else control.late
        return checks.result(after, run, control.signal, note)
    left = max(deadline - asyncio.get_running_loop().time(), 0.0)
    after, landed = await _await_store(store, state, control.landed, left)
    note = None if landed else await _late_note(client, handle, control.late)
    return checks.result(after, run, control.signal, note)


async def _served(client: Client, handle: WorkflowHandle[Any, Any]) -> bool:
    """Whether a worker serves the run now, so that an update is answered: its workflow
    runs, its workflow task is neither failing nor stuck, and a worker polled its task
    queue lately. Otherwise the command signals: Temporal keeps a signal in the history
    until a worker runs the workflow, but drops an update no worker accepted."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError

    try:
        description = await handle.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            return False  # the signal says how it is gone
        if _task_failing(description.raw_description):
            return False
        return not await _unserved(client, description)
    except RPCError:
        return False


async def _update(handle: WorkflowHandle[Any, Any], control: Control, wait: float) -> bool | None:
    """Send ``control`` as the update of the same name: ``True`` once the run answered
    (it has acted), ``False`` when it did not answer within ``wait`` seconds, ``None`` when
    no worker accepted it within :data:`ACCEPT_SECONDS` or the run took it otherwise than
    Canopy's workers do (a worker older than the update): the signal is sent then. A
    refusal is raised as the run's one line."""
    from temporalio.client import (
        WorkflowUpdateFailedError,
        WorkflowUpdateRPCTimeoutOrCancelledError,
        WorkflowUpdateStage,
    )
    from temporalio.exceptions import ApplicationError
    from temporalio.service import RPCError, RPCStatusCode

    try:
        update = await handle.start_update(
            control.signal,
            args=_arguments(control),
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            rpc_timeout=timedelta(seconds=ACCEPT_SECONDS),
        )
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        return None
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise _WorkflowGone(f"is not running in Temporal ({error.message})") from error
        return None  # a server without updates
    try:  # a refusal is known at once; an answer is polled for up to ``wait``
        await update.result(rpc_timeout=timedelta(seconds=max(wait, MIN_RPC_SECONDS)))
    except WorkflowUpdateFailedError as failed:
        cause = failed.cause
        if isinstance(cause, ApplicationError) and cause.type == STEERING_REFUSED:
            raise Refused(cause.message) from None
        return None
    except (WorkflowUpdateRPCTimeoutOrCancelledError, RPCError):
        return False  # it lands later, or the execution ended first: the store tells
    return True


async def _signal(handle: WorkflowHandle[Any, Any], control: Control) -> None:
    """Send ``control`` as a signal."""
    from temporalio.service import RPCError, RPCStatusCode

    try:
        await handle.signal(control.signal, args=_arguments(control))
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise _WorkflowGone(f"is not running in Temporal ({error.message})") from error
        raise


def _arguments(control: Control) -> list[Any]:
    """``control``'s payload as the contract's model, loaded only for the message that has
    one (the contract imports the graph model and the platforms)."""
    if control.payload is None:
        return []
    from canopy.contracts.graph_run import ContinueRequest

    return [ContinueRequest.model_validate(control.payload)]


async def _await_store(
    store: Store,
    before: GraphState,
    landed: Callable[[GraphState, GraphState], bool],
    wait: float,
) -> tuple[GraphState, bool]:
    """Poll the store until ``landed`` holds or ``wait`` seconds pass; the last state seen.

    Every poll reads what the workflow committed last: each one is a transaction of its
    own.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        with store.transaction() as rows:
            after = checks.read_state(rows, before.id)
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
    """The workflow's task queue when no worker serves it (:func:`_unserved`), else
    ``None``."""
    from temporalio.service import RPCError

    try:
        description = await handle.describe()
        return description.task_queue if await _unserved(client, description) else None
    except RPCError:
        return None


async def _unserved(client: Client, description: WorkflowExecutionDescription) -> bool:
    """Whether no worker serves the workflow now. Two signs, because the second alone is
    slow: a workflow task (a signal or an update schedules one) that no worker has
    finished, and no worker seen polling the queue lately — the server keeps listing a
    stopped worker's poller for minutes, so only fresh sightings count."""
    if _workflow_task_stuck(description.raw_description):
        return True
    return not await recently_polled(client, description.task_queue)


def _task_failing(raw: DescribeWorkflowExecutionResponse) -> bool:
    """Whether the workflow's task has failed at least once and is being retried."""
    return raw.HasField("pending_workflow_task") and raw.pending_workflow_task.attempt >= 2


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
        if not _task_failing(raw):
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
    pollers = await temporal_client.task_queue_pollers(client, task_queue, tasks)
    horizon = utcnow() - timedelta(seconds=POLLER_FRESH_SECONDS)
    return any(p.last_access_time.ToDatetime(tzinfo=UTC) > horizon for p in pollers)


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
    with store.transaction() as rows:
        queries.lock_graph(rows, state.id)
        current = checks.read_state(rows, state.id)
        if current.run != state.run:
            started = current.run.id if current.run is not None else "none"
            raise Refused(
                f"graph {state.name} changed while resetting (active run now {started}); try again"
            )
        reset_graph_record(rows, state.id)
        return checks.result(checks.read_state(rows, state.id), state.run, None, note)


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
    elsewhere = checks.elsewhere(info.name, run.id, run.temporal_address)
    if elsewhere is not None:
        return elsewhere
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
    from canopy.contracts.graph_run import RunStatus

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
