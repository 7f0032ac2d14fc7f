"""The activity of a scheduled fire: start the graph's run and record how that went.

It runs on the main task queue (any worker): the run it starts goes to its host's agents
queue as any run does. It is an ``async def`` whose store calls go to threads, like the
start path it calls (:func:`canopy.ops.runs.graph_run`).
"""

from temporalio import activity

from canopy.contracts.scheduled_run import FireResult, ScheduledRunInput
from canopy.ops import schedules
from canopy.store.engine import Store


class ScheduleActivities:
    """The schedule activities, bound to the store they read and write."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @activity.defn
    async def start_scheduled_run(self, fire: ScheduledRunInput) -> FireResult:
        """Start the scheduled graph's run; ``skipped`` or ``refused`` (with the refusal's
        line, recorded on the schedule) are answers, not failures, so they are not retried."""
        return await schedules.fire(self._store, fire.schedule_id)
