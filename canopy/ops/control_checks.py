"""Steering commands checked against the store, before anything is sent.

Every command (``graph continue|pause|stop|reset``) first reads the graph and its active
run and refuses, in one line naming the current state, what does not apply; only then
does :mod:`canopy.ops.control` ask the run's workflow, which judges the command again by
its own state, with the same rule
(:func:`~canopy.contracts.graph_run_signals.refusal`). This module imports neither
pydantic nor asyncio: a refused command costs no more than its store read.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from canopy.contracts.graph_run_signals import (
    CONTINUE_MODES,
    SIGNAL_CONTINUE,
    SIGNAL_PAUSE,
    SIGNAL_RESET,
    SIGNAL_STOP,
    refusal,
)
from canopy.errors import Refused
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store import queries
from canopy.timefmt import to_iso

if TYPE_CHECKING:
    from collections.abc import Callable

    from canopy.store.engine import Store
    from canopy.store.queries import Rows


# --------------------------------------------------------------------------- store views


@dataclass(frozen=True)
class ActiveRun:
    """The run that owns a graph (``running`` or ``paused``) and its workflow."""

    id: str
    workflow_id: str
    queue_id: str | None
    temporal_address: str | None = None
    """Where its workflow was started (none: a run recorded before addresses were)."""


@dataclass(frozen=True)
class GraphState:
    """What the store says about a graph: enough to validate a command and see it land."""

    id: str
    name: str
    status: str
    blocker: dict[str, Any] | None
    updated_at: str | None
    """ISO 8601, as :func:`~canopy.timefmt.to_iso` gives it on either backend."""
    nodes: tuple[str, ...]
    run: ActiveRun | None

    @property
    def shell_name(self) -> str:
        """The name as typed on a command line, for the hints in messages."""
        return shlex.quote(self.name)


def read_state(rows: Rows, graph_id: str) -> GraphState:
    """The graph ``graph_id`` and its active run as the store has them now."""
    found = rows(
        "SELECT id, name, status, CAST(blocker AS TEXT) AS blocker,"
        " CAST(nodes AS TEXT) AS nodes, updated_at FROM graphs WHERE id = :id",
        {"id": graph_id},
    )
    if not found:
        raise Refused(f"graph {graph_id} was deleted")
    (graph,) = found
    active, statuses = queries.bound_list("active", ACTIVE_RUN_STATUSES)
    runs = rows(
        "SELECT id, workflow_id, queue_id, temporal_address FROM runs"
        f" WHERE graph_id = :id AND status IN {active} ORDER BY number DESC LIMIT 1",
        {"id": graph_id, **statuses},
    )
    return GraphState(
        id=graph["id"],
        name=graph["name"],
        status=graph["status"],
        blocker=queries.stored_json(graph["blocker"]),
        updated_at=to_iso(graph["updated_at"]),
        nodes=tuple(node["name"] for node in queries.stored_json(graph["nodes"])),
        run=ActiveRun(**runs[0]) if runs else None,
    )


def _state_of(store: Store, graph: str) -> GraphState:
    with store.transaction() as rows:
        return read_state(rows, queries.resolve_id(rows, "graph", graph))


def result(
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


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class Control:
    """One control message: its name (a signal's and an update's), its payload, how its
    effect shows in the store, and what to say when that effect is late although a worker
    is serving the run."""

    signal: str
    payload: dict[str, str | None] | None
    """The continue request's fields (``mode``, ``node``, ``spec_id``); none for the rest."""
    landed: Callable[[GraphState, GraphState], bool]
    late: str


@dataclass(frozen=True)
class Steering:
    """A command that applies: the graph as validated, and the message for its run's
    workflow; none for a reset of a graph that has no run to ask (done in the store)."""

    state: GraphState
    control: Control | None


def elsewhere(name: str, run_id: str, started_on: str | None) -> str | None:
    """Why run ``run_id`` cannot be reached here: its workflow lives on another Temporal
    than this data dir now talks to (one line naming both), or ``None``."""
    from canopy.temporal.client import address

    here = address()
    if started_on is None or started_on == here:
        return None
    return (
        f"run {run_id} of graph {name} was started on Temporal at {started_on}, but this "
        f"data dir now talks to {here}; to reach it there: TEMPORAL_ADDRESS={started_on} "
        "canopy …"
    )


def require_run(state: GraphState) -> ActiveRun:
    """The active run, or a refusal: a graph marked active without one needs a reset."""
    if state.run is None:
        raise Refused(
            f"graph {state.name} is {state.status} but has no active run; "
            f"reset it: canopy graph reset {state.shell_name}"
        )
    return state.run


def check_continue(
    store: Store, graph: str, mode: str, node: str | None, spec: str | None
) -> Steering:
    """Resume a paused run: ``recheck`` the dirty-tree guard, ``run_from_node`` (a directed
    start of ``spec`` at ``node``, not refused by the guard) or ``skip_next_spec``."""
    _check_mode(mode, node, spec)
    with store.transaction() as rows:
        state = read_state(rows, queries.resolve_id(rows, "graph", graph))
        _check_applies(state, SIGNAL_CONTINUE)
        run = require_run(state)
        if node is not None:
            _check_node(state, node)
        spec_id = _directed_spec(rows, state, run, spec) if spec is not None else None
    late = (
        f"continue sent; the run has not resumed yet (watch: canopy graph info {state.shell_name})"
    )
    payload = {"mode": mode, "node": node, "spec_id": spec_id}
    return Steering(state, Control(SIGNAL_CONTINUE, payload, _resumed, late))


def check_pause(store: Store, graph: str) -> Steering:
    """Pause a running graph at the next spec boundary (the spec in flight finishes)."""
    state = _state_of(store, graph)
    _check_applies(state, SIGNAL_PAUSE)
    require_run(state)
    late = "pause requested; the run pauses after the current spec"
    return Steering(state, Control(SIGNAL_PAUSE, None, _not_running, late))


def check_stop(store: Store, graph: str) -> Steering:
    """Cancel the node in flight (its process group is killed), mark the spec interrupted
    and pause; ``continue`` runs the spec again."""
    state = _state_of(store, graph)
    _check_applies(state, SIGNAL_STOP)
    require_run(state)
    late = "stop requested; the run pauses once the node in flight has been cancelled"
    return Steering(state, Control(SIGNAL_STOP, None, _not_running, late))


def check_reset(store: Store, graph: str) -> Steering:
    """Return the graph to ``idle``: blocker cleared, bound specs reopened to pending.

    An active run is asked to end (it stops its node and marks its spec interrupted).
    Without one — a settled graph, or a run whose workflow is gone from Temporal — the
    reset is done in the store alone.
    """
    state = _state_of(store, graph)
    if state.run is None:
        if state.blocker is None:  # an idle graph left with a blocker is reset in the store
            _check_applies(state, SIGNAL_RESET)
        return Steering(state, None)
    late = "reset requested; the run ends once the node in flight has been cancelled"
    return Steering(state, Control(SIGNAL_RESET, None, _run_ended, late))


# --------------------------------------------------------------------------- validation


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


def _directed_spec(rows: Rows, state: GraphState, run: ActiveRun, spec: str) -> str:
    """The full id of ``spec`` (a unique prefix), which must be pending in the run's scope:
    the queue it drains, or the graph's bound specs for a bound-spec run."""
    spec_id = queries.resolve_id(rows, "spec", spec)
    if run.queue_id is not None:
        in_scope = rows(
            "SELECT spec_id FROM queue_members WHERE queue_id = :scope AND spec_id = :spec",
            {"scope": run.queue_id, "spec": spec_id},
        )
        (queue,) = rows("SELECT name FROM queues WHERE id = :id", {"id": run.queue_id})
        scope = f"in queue {queue['name']}, which run {run.id} drains"
    else:
        in_scope = rows(
            "SELECT spec_id FROM graph_specs WHERE graph_id = :scope AND spec_id = :spec",
            {"scope": state.id, "spec": spec_id},
        )
        scope = f"bound to graph {state.name}"
    if not in_scope:
        raise Refused(f"spec {spec_id} is not {scope}")
    (found,) = rows("SELECT status FROM specs WHERE id = :id", {"id": spec_id})
    if found["status"] != "pending":
        raise Refused(
            f"spec {spec_id} is {found['status']}, not pending; run_from_node starts a pending spec"
        )
    return spec_id


def _check_applies(state: GraphState, command: str) -> None:
    """Refuse ``command`` where the store's status says it does not apply (the rule is
    :func:`~canopy.contracts.graph_run_signals.refusal`, which the run's update validator
    asks with the run's own state)."""
    problem = refusal(command, state.name, state.status)
    if problem is not None:
        raise Refused(problem)


# --------------------------------------------------------------------------- landing


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
