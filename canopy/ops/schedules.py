"""Schedules: a graph's runs started on a cron, by a Temporal Schedule (``graph
schedule``, ``schedule list|pause|unpause|delete``).

Each schedule is a row in the store (which graph, which queue, the cron, the latest
fire's outcome) and a Temporal Schedule, ``canopy-schedule-<graph id>-<schedule id>``,
which shows on the Temporal UI's Schedules page and fires while no Canopy command runs.
Its action starts a ``ScheduledRun`` workflow on the main task queue, whose activity
calls :func:`canopy.activities.schedules.fire_schedule`: the graph's run is started by
:func:`canopy.ops.runs.graph_run`, the function ``graph run`` calls, so a fire passes the
same launch guard. The store is the record of which schedules Canopy made (so ``graph
delete`` finds them without scanning Temporal) and of how each fire went; Temporal is the
truth for whether one is paused and when it fires next, which ``schedule list`` asks it.

temporalio is imported inside the functions that talk to Temporal, so ``graph delete``
of a graph without schedules never loads it.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from canopy.errors import Refused
from canopy.ids import new_id
from canopy.ops import graphs
from canopy.ops.schedule_checks import check_cron, check_timezone
from canopy.store import queries
from canopy.store.engine import Store
from canopy.temporal import client as temporal_client
from canopy.timefmt import to_iso, utcnow

if TYPE_CHECKING:
    from temporalio.client import Client, ScheduleDescription

    from canopy.store.queries import Row

CATCHUP_WINDOW = timedelta(hours=1)
"""How late a fire may still run after Temporal (or the machine it runs on) was down or
asleep when it was due. A laptop that wakes within the hour starts the missed run; later
than that the fire is dropped and the next one on the cron runs, so nobody finds a run
started hours after its time, in the middle of their day's work."""
DEFAULT_TIMEZONE = "UTC"

_COLUMNS = (
    "s.id, s.graph_id, g.name AS graph_name, s.queue_id, q.name AS queue_name, s.host,"
    " s.temporal_id, s.cron, s.timezone, s.created_at, s.last_fired_at, s.last_outcome,"
    " s.last_line, s.last_run_id FROM schedules s JOIN graphs g ON g.id = s.graph_id"
    " LEFT JOIN queues q ON q.id = s.queue_id"
)


def temporal_schedule_id(graph_id: str, schedule_id: str) -> str:
    """The Temporal Schedule's id: Canopy's prefix and the graph's id, so the UI's
    Schedules page groups a graph's schedules and says whose they are."""
    return f"canopy-schedule-{graph_id}-{schedule_id}"


async def schedule_create(
    store: Store, graph: str, cron: str, queue: str | None = None, timezone: str | None = None
) -> dict[str, Any]:
    """Schedule runs of ``graph`` (over ``queue``, else its bound specs) on ``cron`` in
    ``timezone`` (default UTC); refused, with nothing written, on a bad cron, timezone,
    graph or queue, or when Temporal is unreachable or rejects the schedule."""
    cron = check_cron(cron)
    zone = check_timezone(DEFAULT_TIMEZONE if timezone is None else timezone)
    row = await asyncio.to_thread(_new_row, store, graph, queue, cron, zone)
    client = await temporal_client.connect()
    await asyncio.to_thread(_insert, store, row)
    try:
        await _create_in_temporal(client, row)
    except BaseException:
        await asyncio.to_thread(_forget, store, row["id"])
        raise
    (created,) = await asyncio.to_thread(listed_rows, store, row["id"])
    return {**created, **await _state(client, row["temporal_id"])}


def _new_row(store: Store, graph: str, queue: str | None, cron: str, zone: str) -> Row:
    """The row a new schedule is written as, its graph and queue resolved (refused if
    either is unknown). A graph without a host runs where the schedule was made."""
    with store.transaction() as rows:
        graph_id = queries.resolve_id(rows, "graph", graph)
        queue_id = queries.resolve_id(rows, "queue", queue) if queue is not None else None
        record = queries.graph_record(rows, graph_id)
    schedule_id = new_id("sched")
    return {
        "id": schedule_id,
        "graph_id": graph_id,
        "graph_name": record["name"],
        "queue_id": queue_id,
        "host": None if record["host"] else temporal_client.this_host(),
        "temporal_id": temporal_schedule_id(graph_id, schedule_id),
        "cron": cron,
        "timezone": zone,
        "created_at": utcnow(),
    }


def _insert(store: Store, row: Row) -> None:
    with store.transaction() as rows:
        rows(
            "INSERT INTO schedules (id, graph_id, queue_id, host, temporal_id, cron, timezone,"
            " created_at) VALUES (:id, :graph_id, :queue_id, :host, :temporal_id, :cron,"
            " :timezone, :created_at)",
            row,
        )


def _forget(store: Store, schedule_id: str) -> None:
    with store.transaction() as rows:
        rows("DELETE FROM schedules WHERE id = :id", {"id": schedule_id})


async def _create_in_temporal(client: Client, row: Row) -> None:
    """Create the Temporal Schedule: cron in the timezone, catch-up per
    :data:`CATCHUP_WINDOW`, a fire skipped while the previous fire's ScheduledRun is still
    open (a fire waiting for a worker is enough: it starts the run when one comes). The
    graph's run outlives its ScheduledRun, so the launch guard's one active run per graph
    is what turns an overlapping fire into a skip."""
    from temporalio.client import (
        Schedule,
        ScheduleActionStartWorkflow,
        ScheduleAlreadyRunningError,
        ScheduleOverlapPolicy,
        SchedulePolicy,
        ScheduleSpec,
        ScheduleState,
    )
    from temporalio.service import RPCError

    from canopy.contracts.scheduled_run import SCHEDULED_RUN_WORKFLOW, ScheduledRunInput

    drains = f"queue {row['queue_id']}" if row["queue_id"] else "its bound specs"
    summary = f"{row['graph_name']}: scheduled run over {drains} ({row['cron']} {row['timezone']})"
    schedule = Schedule(
        action=ScheduleActionStartWorkflow(
            SCHEDULED_RUN_WORKFLOW,
            ScheduledRunInput(schedule_id=row["id"]),
            id=row["temporal_id"],
            task_queue=temporal_client.MAIN_TASK_QUEUE,
            static_summary=summary,
        ),
        spec=ScheduleSpec(cron_expressions=[row["cron"]], time_zone_name=row["timezone"]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=CATCHUP_WINDOW),
        state=ScheduleState(note=f"Canopy schedule {row['id']} of graph {row['graph_name']}"),
    )
    memo = {"canopy_schedule_id": row["id"], "canopy_graph_id": row["graph_id"]}
    try:
        await client.create_schedule(row["temporal_id"], schedule, memo=memo)
    except (RPCError, ScheduleAlreadyRunningError) as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise Refused(f"Temporal refused the schedule {row['cron']!r}: {reason}") from error


async def schedule_list(store: Store, graph: str | None = None) -> list[dict[str, Any]]:
    """Every schedule (or ``graph``'s), oldest first, with its latest fire and, asked of
    Temporal, whether it is paused and when it fires next. When Temporal cannot be
    reached the store's record is listed all the same, ``temporal`` saying why."""
    listed = await asyncio.to_thread(listed_rows, store, None, graph)
    if not listed:
        return []
    try:
        client = await temporal_client.connect()
    except Refused as refusal:
        return [
            {**row, "paused": None, "next_fire": None, "temporal": refusal.message}
            for row in listed
        ]
    states = await asyncio.gather(*(_state(client, row["temporal_id"]) for row in listed))
    return [{**row, **state} for row, state in zip(listed, states, strict=True)]


def listed_rows(
    store: Store, schedule_id: str | None = None, graph: str | None = None
) -> list[Row]:
    """The stored schedules (one, a graph's or all), as listings show them."""
    with store.transaction() as rows:
        where, params = "", {}
        if schedule_id is not None:
            where, params = " WHERE s.id = :id", {"id": schedule_id}
        elif graph is not None:
            where = " WHERE s.graph_id = :graph_id"
            params = {"graph_id": queries.resolve_id(rows, "graph", graph)}
        found = rows(f"SELECT {_COLUMNS}{where} ORDER BY s.created_at, s.id", params)
    return [
        {
            **row,
            "created_at": to_iso(row["created_at"]),
            "last_fired_at": to_iso(row["last_fired_at"]),
        }
        for row in found
    ]


async def _state(client: Client, temporal_id: str) -> dict[str, Any]:
    """Whether the Temporal Schedule is paused and its next fire; ``temporal`` says so
    when it is gone (deleted behind Canopy's back)."""
    from temporalio.service import RPCError, RPCStatusCode

    try:
        described = await client.get_schedule_handle(temporal_id).describe()
    except RPCError as error:
        if error.status != RPCStatusCode.NOT_FOUND:
            raise
        return {"paused": None, "next_fire": None, "temporal": "no such Temporal schedule"}
    return _shown_state(described)


def _shown_state(described: ScheduleDescription) -> dict[str, Any]:
    upcoming = described.info.next_action_times
    return {
        "paused": described.schedule.state.paused,
        "next_fire": to_iso(upcoming[0]) if upcoming else None,
        "temporal": None,
    }


async def schedule_pause(store: Store, schedule: str) -> dict[str, Any]:
    """Pause the schedule in Temporal: no fire until it is unpaused."""
    return await _set_paused(store, schedule, True)


async def schedule_unpause(store: Store, schedule: str) -> dict[str, Any]:
    """Unpause the schedule: it fires on its cron again (missed fires are not run)."""
    return await _set_paused(store, schedule, False)


async def _set_paused(store: Store, schedule: str, paused: bool) -> dict[str, Any]:
    row = await asyncio.to_thread(_resolved, store, schedule)
    client = await temporal_client.connect()
    handle = client.get_schedule_handle(row["temporal_id"])
    note = f"{'paused' if paused else 'unpaused'} with canopy schedule"
    await _refuse_if_gone(row, handle.pause(note=note) if paused else handle.unpause(note=note))
    return {**row, **_shown_state(await handle.describe())}


async def _refuse_if_gone(row: Row, call: Any) -> None:
    """Await a call on the Temporal Schedule; one line when Temporal has no such schedule."""
    from temporalio.service import RPCError, RPCStatusCode

    try:
        await call
    except RPCError as error:
        if error.status != RPCStatusCode.NOT_FOUND:
            raise
        raise Refused(
            f"schedule {row['id']} has no Temporal schedule {row['temporal_id']} (deleted "
            f"outside Canopy?); delete it with canopy schedule delete {row['id']}"
        ) from error


def _resolved(store: Store, schedule: str) -> Row:
    with store.transaction() as rows:
        schedule_id = queries.resolve_id(rows, "schedule", schedule)
    (row,) = listed_rows(store, schedule_id)
    return row


async def schedule_delete(store: Store, schedule: str) -> dict[str, Any]:
    """Delete the Temporal Schedule, then the row; a Temporal schedule already gone only
    leaves the row to delete. Refused, keeping both, when Temporal is unreachable."""
    row = await asyncio.to_thread(_resolved, store, schedule)
    client = await temporal_client.connect()
    await _delete_in_temporal(client, row["temporal_id"])
    await asyncio.to_thread(_forget, store, row["id"])
    return {"id": row["id"], "graph_id": row["graph_id"], "deleted": True}


async def _delete_in_temporal(client: Client, temporal_id: str) -> None:
    from temporalio.service import RPCError, RPCStatusCode

    try:
        await client.get_schedule_handle(temporal_id).delete()
    except RPCError as error:
        if error.status != RPCStatusCode.NOT_FOUND:
            raise


async def graph_delete(store: Store, graph: str) -> dict[str, Any]:
    """``graph delete``: the graph's schedules first (in Temporal, then with the graph's
    row), so a deleted graph leaves nothing firing. A graph with schedules is not deleted
    while Temporal is unreachable: its schedules would go on firing, unseen."""
    found = await asyncio.to_thread(listed_rows, store, None, graph)
    if found:
        await asyncio.to_thread(graphs.refuse_delete_while_active, store, graph)
        try:
            client = await temporal_client.connect()
        except Refused as refusal:
            name, count = found[0]["graph_name"], len(found)
            raise Refused(
                f"graph {name} was not deleted: its {count} schedule(s) live in Temporal, "
                f"which is unreachable ({refusal.message})"
            ) from refusal
        for row in found:
            await _delete_in_temporal(client, row["temporal_id"])
    result = await asyncio.to_thread(graphs.graph_delete, store, graph)
    return {**result, "deleted_schedules": [row["id"] for row in found]}
