"""Graphs: create, list, get, edit, delete (``graph`` / ``graph_edit``).

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

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from canopy.errors import Refused
from canopy.graphs.hooks import (
    HOOK_EVENTS,
    edited_events,
    remaining_events,
    remaining_events_note,
    resolve_spec_ids,
)
from canopy.ids import new_id
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
from canopy.timefmt import utcnow

if TYPE_CHECKING:
    from datetime import datetime

    from canopy.graphs.model import GraphDefinition
    from canopy.store.engine import Store
    from canopy.store.queries import Rows

_INSERT_GRAPH = (
    "INSERT INTO graphs (id, name, workdir, host, allow_dirty_start, lanes, integration,"
    " conflict_resolver, permissions, budget, nodes, ensembles, hooks, status, blocker,"
    " created_at, updated_at) VALUES (:id, :name, :workdir, :host, :allow_dirty_start, :lanes,"
    " :integration, :conflict_resolver, :permissions, :budget, :nodes, :ensembles, :hooks,"
    " 'idle', 'null', :created_at, :updated_at)"
)
"""A new graph's row; ``blocker`` is JSON ``null``, as new graphs have always had it."""


def graph_create(store: Store, definition: Mapping[str, Any]) -> dict[str, Any]:
    """A new, idle graph from a whole definition, binding the specs it lists.

    Hooks' ``spec_ids`` resolve against the specs it binds (a new graph has no run).
    """
    # The graph model (pydantic, jinja2, the platforms) is imported by the writes that
    # validate a definition, not by reads or deletes, which must start fast.
    from canopy.graphs.model import validate_definition

    graph = validate_definition(definition)
    now = utcnow()
    columns = _definition_columns(graph, now)
    graph_id = new_id("graph")
    with store.transaction() as rows:
        rows(_INSERT_GRAPH, {**columns, "id": graph_id, "created_at": now})
        _bind_specs(rows, graph_id, graph.specs)
        hooks = _resolved_hooks(rows, graph_id, columns["hooks"], HOOK_EVENTS)
        if hooks != columns["hooks"]:
            params = {"hooks": hooks, "id": graph_id}
            rows("UPDATE graphs SET hooks = :hooks WHERE id = :id", params)
        return read_graph_info(rows, graph_id).as_json()


def graph_list(store: Store) -> list[dict[str, Any]]:
    """Every graph, oldest first, with its status, blocker and counts."""
    with store.transaction() as rows:
        return queries.list_graphs(rows)


def graph_info(store: Store, graph: str) -> GraphInfo:
    """One graph: its definition, bound specs and run record (``graph info``).

    For a graph the store calls ``running`` or ``paused``, ``consistency_warning`` is
    computed against Temporal on every call, which blocks for a moment;
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
    with store.transaction() as rows:
        graph_id = _locked(rows, graph)
        stored = _stored_definition(rows, graph_id)
        merged = {**stored, **changes}
        if isinstance(changes.get("hooks"), Mapping):
            merged["hooks"] = {**stored["hooks"], **changes["hooks"]}
        from canopy.graphs.model import validate_definition  # see graph_create

        checked = validate_definition(merged)
        columns = _definition_columns(checked, utcnow())
        if "specs" in changes:
            rows("DELETE FROM graph_specs WHERE graph_id = :id", {"id": graph_id})
            _bind_specs(rows, graph_id, checked.specs)
        columns["hooks"] = _resolved_hooks(rows, graph_id, columns["hooks"], edited_events(changes))
        assigned = ", ".join(f"{column} = :{column}" for column in columns)
        rows(f"UPDATE graphs SET {assigned} WHERE id = :id", {**columns, "id": graph_id})
        edited = read_graph_info(rows, graph_id).as_json()
        if edited_events(changes):
            edited.update(_remaining_hook_events(rows, graph_id))
        return edited


def graph_delete(store: Store, graph: str) -> dict[str, Any]:
    """Delete a graph and its run record; its bound specs become standalone again.

    The run record (runs, their specs and node runs, hook runs), the bindings and the
    schedules' rows go with the graph's row: their foreign keys cascade, on both paths.
    Front ends call :func:`canopy.ops.schedules.graph_delete`, which deletes the graph's
    Temporal schedules first.
    """
    with store.transaction() as rows:
        graph_id = _locked(rows, graph)
        _refuse_if_active(rows, graph_id)
        released = [spec.id for spec in bound_specs(rows, graph_id)]
        rows("DELETE FROM graphs WHERE id = :id", {"id": graph_id})
        return {"id": graph_id, "deleted": True, "released_specs": released}


def refuse_delete_while_active(store: Store, graph: str) -> None:
    """The refusal :func:`graph_delete` would give for a graph with an active run, asked
    before anything outside the store (its schedules) is deleted."""
    with store.transaction() as rows:
        _refuse_if_active(rows, queries.resolve_id(rows, "graph", graph))


def _refuse_if_active(rows: Rows, graph_id: str) -> None:
    active = first_active(graph_runs(rows, graph_id))
    if active is not None:
        raise Refused(
            f"graph {graph_id} has an active run {active.id} ({active.status}); "
            "stop or reset it before deleting the graph"
        )


# --------------------------------------------------------------------------- writing


def _locked(rows: Rows, graph: str) -> str:
    """The id of the graph ``graph`` names, after taking its write lock.

    Locking before reading makes edits, deletes and run starts of one graph serialise
    (a write lock on SQLite, a row lock on Postgres) instead of working from a stale row.
    """
    graph_id = queries.resolve_id(rows, "graph", graph)
    queries.lock_graph(rows, graph_id)
    if not rows("SELECT id FROM graphs WHERE id = :id", {"id": graph_id}):
        raise Refused(f"no graph matches {graph!r}")  # deleted since it was resolved
    return graph_id


def _definition_columns(graph: GraphDefinition, now: datetime) -> dict[str, Any]:
    """The graph row's columns a checked definition sets (not its bound specs), as of
    ``now``: what creating inserts and editing assigns."""
    return {
        "name": graph.name,
        "workdir": graph.workdir,
        "host": graph.host,
        "allow_dirty_start": graph.allow_dirty_start,
        "lanes": graph.lanes,
        "integration": graph.integration,
        "conflict_resolver": graph.conflict_resolver,
        "permissions": graph.permissions,
        "budget": graph.budget.stored() if graph.budget is not None else None,
        "nodes": [node.model_dump(exclude_none=True) for node in graph.nodes],
        "ensembles": {
            name: [member.model_dump(exclude_none=True) for member in members]
            for name, members in graph.ensembles.items()
        },
        "hooks": graph.stored_hooks(),
        "updated_at": now,
    }


def _stored_definition(rows: Rows, graph_id: str) -> dict[str, Any]:
    """The stored graph as a definition, the base an edit's changes are merged into."""
    row = rows(
        "SELECT name, workdir, host, allow_dirty_start, lanes, integration, conflict_resolver,"
        " permissions,"
        " CAST(budget AS TEXT) AS budget, CAST(nodes AS TEXT) AS nodes,"
        " CAST(ensembles AS TEXT) AS ensembles, CAST(hooks AS TEXT) AS hooks"
        " FROM graphs WHERE id = :id",
        {"id": graph_id},
    )[0]
    return {
        "name": row["name"],
        "workdir": row["workdir"],
        "host": row["host"],
        "allow_dirty_start": bool(row["allow_dirty_start"]),
        "lanes": row["lanes"],
        "integration": row["integration"],
        "conflict_resolver": row["conflict_resolver"],
        "permissions": row["permissions"],
        "budget": queries.stored_json(row["budget"]),
        "nodes": queries.stored_json(row["nodes"]),
        "ensembles": queries.stored_json(row["ensembles"]),
        "hooks": queries.stored_json(row["hooks"]),
        "specs": [spec.id for spec in bound_specs(rows, graph_id)],
    }


def _bind_specs(rows: Rows, graph_id: str, refs: list[str]) -> None:
    """Resolve ``refs`` and bind them in order; refuses duplicates and specs bound elsewhere."""
    spec_ids = [queries.resolve_id(rows, "spec", ref) for ref in refs]
    seen: set[str] = set()
    for spec_id in spec_ids:
        if spec_id in seen:
            raise Refused(f"spec {spec_id} is listed twice in specs")
        seen.add(spec_id)
    if not spec_ids:
        return
    listed, params = queries.bound_list("spec", spec_ids)
    # Lock the specs first so two graphs cannot both bind one spec concurrently.
    rows(f"UPDATE specs SET name = name WHERE id IN {listed}", params)
    taken = rows(
        "SELECT b.spec_id, g.id, g.name FROM graph_specs b JOIN graphs g ON g.id = b.graph_id"
        f" WHERE b.spec_id IN {listed} AND b.graph_id != :graph_id ORDER BY b.spec_id LIMIT 1",
        {**params, "graph_id": graph_id},
    )
    if taken:
        found = taken[0]
        raise Refused(
            f"spec {found['spec_id']} is already bound to graph {found['id']} ({found['name']}); "
            "a spec belongs to one graph at most"
        )
    for position, spec_id in enumerate(spec_ids):
        rows(
            "INSERT INTO graph_specs (graph_id, spec_id, position)"
            " VALUES (:graph_id, :spec_id, :position)",
            {"graph_id": graph_id, "spec_id": spec_id, "position": position},
        )


# --------------------------------------------------------------------------- hooks

_STILL_TO_COMPLETE = ("pending", "in_progress")
"""Spec statuses that can still reach ``completed`` in the current run."""


def _resolved_hooks(
    rows: Rows, graph_id: str, hooks: dict[str, Any], events: Iterable[str]
) -> dict[str, Any]:
    """``hooks`` with the ``spec_ids`` of ``events``' hooks as the full ids they name.

    Called after the specs are bound, so an edit that rebinds specs and names them in a
    hook at once resolves against the new binding; the active run's queue members count
    too, since its ``on_spec_completed`` fires for them.
    """
    named = [event for event in events if event in hooks]
    if not any("spec_ids" in hook for event in named for hook in hooks[event]):
        return hooks
    active = first_active(graph_runs(rows, graph_id))
    bound = [spec.id for spec in bound_specs(rows, graph_id)]
    return resolve_spec_ids(hooks, named, bound + _queue_member_ids(rows, active))


def _queue_member_ids(rows: Rows, run: RunInfo | None) -> list[str]:
    """The specs of the queue ``run`` drains, in queue order (none without a queue)."""
    if run is None or run.queue_id is None:
        return []
    found = rows(
        "SELECT spec_id FROM queue_members WHERE queue_id = :queue_id ORDER BY position",
        {"queue_id": run.queue_id},
    )
    return [row["spec_id"] for row in found]


def _remaining_hook_events(rows: Rows, graph_id: str) -> dict[str, Any]:
    """``remaining_events`` and ``hooks_note`` when a run is active, else nothing.

    The engine reads the stored hooks as each event fires, so an edit during a run takes
    effect at that run's events still to come; saying which avoids expecting a re-fire.
    """
    active = first_active(graph_runs(rows, graph_id))
    if active is None:
        return {}
    left = _specs_left(rows, graph_id, active)
    events = remaining_events(left)
    return {
        "remaining_events": events,
        "hooks_note": remaining_events_note(active.id, events, left),
    }


def _specs_left(rows: Rows, graph_id: str, run: RunInfo) -> int:
    """How many of ``run``'s specs (its queue's members, else the bound specs) may still
    complete."""
    if run.queue_id is None:
        bound = bound_specs(rows, graph_id)
        return sum(spec.status in _STILL_TO_COMPLETE for spec in bound)
    still, params = queries.bound_list("status", _STILL_TO_COMPLETE)
    found = rows(
        "SELECT COUNT(*) AS left_count FROM queue_members m JOIN specs s ON s.id = m.spec_id"
        f" WHERE m.queue_id = :queue_id AND s.status IN {still}",
        {**params, "queue_id": run.queue_id},
    )
    return int(found[0]["left_count"])
