"""Graphs: create, list, get, edit, delete (``graph`` / ``graph_edit``, DESIGN §5, §9).

A definition is validated by :mod:`canopy.graphs.model` before anything is written; the
spec references it binds are resolved here, against the store, in the same transaction
that writes the graph. A spec is bound to one graph at most (the graph's runs change its
status, so two graphs owning it would race). Edits are allowed during a run: the run
reads nodes, ensembles and prompts from the store at every dispatch, so an edit takes
effect at the next node launch. Deleting a graph is refused while a run of it is active.

``graph_info`` answers with a typed :class:`~canopy.ops.graph_info.GraphInfo` (the
definition, the bound specs, the run record and, for a graph the store calls running, a
``consistency_warning`` computed against Temporal by :mod:`canopy.ops.control`);
``graph_get`` is its JSON form, ``graph info --json``.
"""

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from canopy.errors import Refused
from canopy.graphs.hooks import (
    HOOK_EVENTS,
    edited_events,
    remaining_events,
    remaining_events_note,
    resolve_spec_ids,
)
from canopy.graphs.model import GraphDefinition, validate_definition
from canopy.ids import new_id
from canopy.ops.common import rows_of
from canopy.ops.graph_info import (
    GraphInfo,
    RunInfo,
    bound_specs,
    first_active,
    graph_runs,
    read_graph_info,
    stored_graph_info,
)
from canopy.store import queries
from canopy.store.engine import Store
from canopy.store.models import (
    Graph,
    GraphSpec,
    QueueMember,
    Spec,
)
from canopy.store.run_records import lock_graph
from canopy.timefmt import utcnow


def graph_create(store: Store, definition: Mapping[str, Any]) -> dict[str, Any]:
    """A new, idle graph from a whole definition, binding the specs it lists.

    Hooks' ``spec_ids`` resolve against the specs it binds (a new graph has no run).
    """
    graph = validate_definition(definition)
    now = utcnow()
    with store.transaction() as db:
        row = Graph(id=new_id("graph"), status="idle", blocker=None, created_at=now)
        _write_definition(row, graph, now)
        db.add(row)
        db.flush()
        _bind_specs(db, row.id, graph.specs)
        _resolve_hook_spec_ids(db, row, HOOK_EVENTS)
        return read_graph_info(rows_of(db), row.id).as_json()


def graph_list(store: Store) -> list[dict[str, Any]]:
    """Every graph, oldest first, with its status, blocker and counts."""
    with store.transaction() as db:
        return queries.list_graphs(rows_of(db))


def graph_info(store: Store, graph: str) -> GraphInfo:
    """One graph: its definition, bound specs and run record (``graph info``).

    For a graph the store calls ``running`` or ``paused``, ``consistency_warning`` is
    computed against Temporal on every call (DESIGN §6.7), which blocks for a moment;
    async callers use :func:`graph_info_async`. Other graphs are answered from the store
    alone, without loading the Temporal SDK.
    """
    return with_consistency_warning(stored_graph_info(store, graph))


def with_consistency_warning(info: GraphInfo) -> GraphInfo:
    """``info`` with its ``consistency_warning`` when the store calls the graph running or
    paused (asking Temporal, blocking); other graphs are returned as they are."""
    if info.asks_temporal():
        from canopy.ops import control

        info.consistency_warning = control.run_blocking(control.consistency_warning(info))
    return info


async def graph_info_async(store: Store, graph: str) -> GraphInfo:
    """:func:`graph_info` for callers inside an event loop (MCP, tests with a worker)."""
    info = stored_graph_info(store, graph)
    if info.asks_temporal():
        from canopy.ops import control

        info.consistency_warning = await control.consistency_warning(info)
    return info


def graph_get(store: Store, graph: str) -> dict[str, Any]:
    """:func:`graph_info` in its JSON form (``graph info --json``)."""
    return graph_info(store, graph).as_json()


async def graph_get_async(store: Store, graph: str) -> dict[str, Any]:
    """:func:`graph_info_async` in its JSON form (the MCP ``graph get``)."""
    return (await graph_info_async(store, graph)).as_json()


def graph_edit(store: Store, graph: str, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Replace the fields ``changes`` names, keep the rest, and re-validate the whole.

    ``hooks`` replaces the hook list of each event it names (other events are kept; the
    ``spec_ids`` of the named events are stored as full ids); a top-level ``on_completed``
    object (the legacy shape) is appended to the on_completed hooks; ``specs`` replaces
    the bound specs, in the new order. An edit of hooks while a run is active answers
    with ``remaining_events`` and ``hooks_note``: where the edit still takes effect.
    """
    if not changes:
        raise Refused("graph edit needs at least one field to change")
    with store.transaction() as db:
        row = _load(db, graph, lock=True)
        merged = {**_definition_of(db, row), **changes}
        if isinstance(changes.get("hooks"), Mapping):
            merged["hooks"] = {**row.hooks, **changes["hooks"]}
        checked = validate_definition(merged)
        _write_definition(row, checked, utcnow())
        if "specs" in changes:
            db.execute(delete(GraphSpec).where(GraphSpec.graph_id == row.id))
            _bind_specs(db, row.id, checked.specs)
        _resolve_hook_spec_ids(db, row, edited_events(changes))
        db.flush()
        edited = read_graph_info(rows_of(db), row.id).as_json()
        if edited_events(changes):
            edited.update(_remaining_hook_events(db, row))
        return edited


def graph_delete(store: Store, graph: str) -> dict[str, Any]:
    """Delete a graph and its run record; its bound specs become standalone again."""
    with store.transaction() as db:
        row = _load(db, graph, lock=True)
        active = first_active(graph_runs(rows_of(db), row.id))
        if active is not None:
            raise Refused(
                f"graph {row.id} has an active run {active.id} ({active.status}); "
                "stop or reset it before deleting the graph"
            )
        released = [spec.id for spec in bound_specs(rows_of(db), row.id)]
        db.delete(row)
        return {"id": row.id, "deleted": True, "released_specs": released}


# --------------------------------------------------------------------------- writing


def _load(db: Session, graph: str, lock: bool = False) -> Graph:
    """The graph ``graph`` names; with ``lock``, after taking its write lock.

    Locking before reading makes edits, deletes and run starts of one graph serialise
    (a write lock on SQLite, a row lock on Postgres) instead of working from a stale row.
    """
    graph_id = queries.resolve_id(rows_of(db), "graph", graph)
    if lock:
        lock_graph(db, graph_id)
    row = db.get(Graph, graph_id)
    if row is None:
        raise Refused(f"no graph matches {graph!r}")
    return row


def _write_definition(row: Graph, graph: GraphDefinition, now: datetime) -> None:
    """Copy a checked definition onto the graph's row (not its bound specs)."""
    row.name = graph.name
    row.workdir = graph.workdir
    row.host = graph.host
    row.allow_dirty_start = graph.allow_dirty_start
    row.nodes = [node.model_dump(exclude_none=True) for node in graph.nodes]
    row.ensembles = {
        name: [member.model_dump(exclude_none=True) for member in members]
        for name, members in graph.ensembles.items()
    }
    row.hooks = graph.stored_hooks()
    row.updated_at = now


def _definition_of(db: Session, row: Graph) -> dict[str, Any]:
    """The stored graph as a definition, the base an edit's changes are merged into."""
    return {
        "name": row.name,
        "workdir": row.workdir,
        "host": row.host,
        "allow_dirty_start": row.allow_dirty_start,
        "nodes": row.nodes,
        "ensembles": row.ensembles,
        "hooks": row.hooks,
        "specs": [spec.id for spec in bound_specs(rows_of(db), row.id)],
    }


def _bind_specs(db: Session, graph_id: str, refs: list[str]) -> None:
    """Resolve ``refs`` and bind them in order; refuses duplicates and specs bound elsewhere."""
    rows = rows_of(db)
    spec_ids = [queries.resolve_id(rows, "spec", ref) for ref in refs]
    seen: set[str] = set()
    for spec_id in spec_ids:
        if spec_id in seen:
            raise Refused(f"spec {spec_id} is listed twice in specs")
        seen.add(spec_id)
    if spec_ids:
        # Lock the specs first so two graphs cannot both bind one spec concurrently.
        db.execute(update(Spec).where(Spec.id.in_(spec_ids)).values(name=Spec.name))
    taken = db.execute(
        select(GraphSpec.spec_id, Graph.id, Graph.name)
        .join(Graph, Graph.id == GraphSpec.graph_id)
        .where(GraphSpec.spec_id.in_(spec_ids), GraphSpec.graph_id != graph_id)
        .order_by(GraphSpec.spec_id)
    ).first()
    if taken is not None:
        spec_id, other_id, other_name = taken
        raise Refused(
            f"spec {spec_id} is already bound to graph {other_id} ({other_name}); "
            "a spec belongs to one graph at most"
        )
    db.add_all(
        GraphSpec(graph_id=graph_id, spec_id=spec_id, position=position)
        for position, spec_id in enumerate(spec_ids)
    )


# --------------------------------------------------------------------------- hooks

_STILL_TO_COMPLETE = ("pending", "in_progress")
"""Spec statuses that can still reach ``completed`` in the current run."""


def _resolve_hook_spec_ids(db: Session, row: Graph, events: Iterable[str]) -> None:
    """Store the ``spec_ids`` of ``events``' hooks as the full ids they name.

    Called after the specs are bound, so an edit that rebinds specs and names them in a
    hook at once resolves against the new binding; the active run's queue members count
    too, since its ``on_spec_completed`` fires for them.
    """
    named = [event for event in events if event in row.hooks]
    if not any("spec_ids" in hook for event in named for hook in row.hooks[event]):
        return
    active = first_active(graph_runs(rows_of(db), row.id))
    bound = [spec.id for spec in bound_specs(rows_of(db), row.id)]
    row.hooks = resolve_spec_ids(row.hooks, named, bound + _queue_member_ids(db, active))


def _queue_member_ids(db: Session, run: RunInfo | None) -> list[str]:
    """The specs of the queue ``run`` drains, in queue order (none without a queue)."""
    if run is None or run.queue_id is None:
        return []
    return list(
        db.scalars(
            select(QueueMember.spec_id)
            .where(QueueMember.queue_id == run.queue_id)
            .order_by(QueueMember.position)
        )
    )


def _remaining_hook_events(db: Session, row: Graph) -> dict[str, Any]:
    """``remaining_events`` and ``hooks_note`` when a run is active, else nothing.

    The engine reads the stored hooks as each event fires, so an edit during a run takes
    effect at that run's events still to come; saying which avoids expecting a re-fire.
    """
    active = first_active(graph_runs(rows_of(db), row.id))
    if active is None:
        return {}
    left = _specs_left(db, row.id, active)
    events = remaining_events(left)
    return {
        "remaining_events": events,
        "hooks_note": remaining_events_note(active.id, events, left),
    }


def _specs_left(db: Session, graph_id: str, run: RunInfo) -> int:
    """How many of ``run``'s specs (its queue's members, else the bound specs) may still
    complete."""
    if run.queue_id is None:
        bound = bound_specs(rows_of(db), graph_id)
        return sum(spec.status in _STILL_TO_COMPLETE for spec in bound)
    left = db.scalar(
        select(func.count())
        .select_from(QueueMember)
        .join(Spec, Spec.id == QueueMember.spec_id)
        .where(QueueMember.queue_id == run.queue_id, Spec.status.in_(_STILL_TO_COMPLETE))
    )
    return left or 0
