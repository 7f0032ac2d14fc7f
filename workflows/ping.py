"""The ``Ping`` workflow: an end-to-end readiness check for the worker daemon.

It runs on the main task queue and calls the ``ping`` activity on the agents task queue it
is given (the host is chosen by the caller, since a workflow may not look it up itself), so
its completion proves a worker serves both queues.
"""

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from canopy.activities.ping import ping
    from canopy.contracts.ping import PING_WORKFLOW


@workflow.defn(name=PING_WORKFLOW)
class PingWorkflow:
    """Round trip main queue -> agents queue -> main queue."""

    @workflow.run
    async def run(self, agents_task_queue: str) -> str:
        """Return the ``ping`` activity's reply from the worker serving ``agents_task_queue``."""
        return await workflow.execute_activity(
            ping, task_queue=agents_task_queue, start_to_close_timeout=timedelta(seconds=10)
        )
