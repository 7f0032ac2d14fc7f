"""ScheduledRun: one fire of a Canopy schedule, started by its Temporal Schedule.

The schedule's action cannot call Canopy's start path itself, so it starts this workflow
on the main task queue, whose one activity starts the graph's run through the same
function as ``graph run`` and records the fire's outcome. A start refused because the
graph is running is an outcome (``skipped``), not a failure: the workflow completes with
it, and its result is what the Temporal UI shows for the fire.
"""

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from canopy.activities.schedules import ScheduleActivities
    from canopy.contracts.scheduled_run import (
        SCHEDULED_RUN_WORKFLOW,
        FireResult,
        ScheduledRunInput,
    )
    from canopy.workflows.timeouts import SCHEDULED_START_TIMEOUT

START_RETRY = RetryPolicy(maximum_attempts=3)
"""A start that failed unexpectedly (Temporal or the store briefly unreachable) is tried
again a few times; refusals are outcomes, never retried."""


@workflow.defn(name=SCHEDULED_RUN_WORKFLOW)
class ScheduledRun:
    """Starts the scheduled graph's run, or records why not."""

    @workflow.run
    async def run(self, fire: ScheduledRunInput) -> FireResult:
        """The fire's outcome, also set as the workflow's current details."""
        result: FireResult = await workflow.execute_activity_method(
            ScheduleActivities.start_scheduled_run,
            fire,
            start_to_close_timeout=SCHEDULED_START_TIMEOUT,
            retry_policy=START_RETRY,
        )
        workflow.set_current_details(f"{result.outcome}: {result.line}")
        return result
