"""The activity of a scheduled fire: start the graph's run and record how that went.

It runs on the main task queue (any worker): the run it starts goes to its host's agents
queue as any run does. It is an ``async def`` whose store calls go to threads, like the
start path it calls (:func:`canopy.ops.runs.graph_run`). It lives on the worker's side,
apart from :mod:`canopy.ops.schedules`, so the commands that manage schedules (and
``graph delete``) load neither the start path nor the workflow's payload models.
"""

import asyncio

from temporalio import activity

from canopy.contracts.scheduled_run import FireResult, ScheduledRunInput
from canopy.errors import Refused
from canopy.ops import runs
from canopy.ops.schedules import listed_rows
from canopy.store.engine import Store
from canopy.store.queries import Row
from canopy.timefmt import utcnow


class ScheduleActivities:
    """The schedule activities, bound to the store they read and write."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @activity.defn
    async def start_scheduled_run(self, fire: ScheduledRunInput) -> FireResult:
        """Start the scheduled graph's run; ``skipped`` or ``refused`` (with the refusal's
        line, recorded on the schedule) are answers, not failures, so they are not retried."""
        return await fire_schedule(self._store, fire.schedule_id)


async def fire_schedule(store: Store, schedule_id: str) -> FireResult:
    """One fire of the schedule: start the graph's run as ``graph run`` does and record
    the outcome on the schedule's row. A graph with an active run is ``skipped``; any
    other refusal is ``refused`` with its line. Neither is an error."""
    rows = await asyncio.to_thread(listed_rows, store, schedule_id)
    if not rows:
        return FireResult(outcome="refused", line=f"no schedule {schedule_id} in the store")
    (row,) = rows
    host = await asyncio.to_thread(_fire_host, store, row)
    try:
        started = await runs.graph_run(store, row["graph_id"], queue=row["queue_id"], host=host)
    except runs.ActiveRunRefusal as refusal:
        result = FireResult(outcome="skipped", line=refusal.message)
    except Refused as refusal:
        result = FireResult(outcome="refused", line=refusal.message)
    else:
        line = f"started {started['run_id']} of {started['graph_name']} in {started['workdir']}"
        result = FireResult(outcome="started", line=line, run_id=started["run_id"])
    await asyncio.to_thread(_record_fire, store, schedule_id, result)
    return result


def _fire_host(store: Store, row: Row) -> str | None:
    """Where the run goes: the graph's host as it is now, else where the schedule was made."""
    with store.transaction() as rows:
        found = rows("SELECT host FROM graphs WHERE id = :id", {"id": row["graph_id"]})
    return None if found and found[0]["host"] else row["host"]


def _record_fire(store: Store, schedule_id: str, result: FireResult) -> None:
    with store.transaction() as rows:
        rows(
            "UPDATE schedules SET last_fired_at = :now, last_outcome = :outcome,"
            " last_line = :line, last_run_id = :run_id WHERE id = :id",
            {
                "now": utcnow(),
                "outcome": result.outcome,
                "line": result.line,
                "run_id": result.run_id,
                "id": schedule_id,
            },
        )
