"""The raw Temporal floor: a workflow that runs one trivial activity per item, nothing else.

``bench/dispatch_overhead.py`` runs this against the dev server ``canopy up`` started, in
the same run as the engine (before and after it), and reports Canopy's per-spec cost as a
multiple of the per-item cost here. A bash loop tells what the work costs; this tells what
Temporal itself cannot make cheaper on this machine and server: one activity (scheduled,
dispatched eagerly on the workflow's own task queue, run, completed) and the workflow task
that follows it, with payloads going through the pydantic data converter as Canopy's do.
Whatever Canopy costs above this is its own choice (activities per spec, task queues,
store work), which is what the engine's per-spec targets are about.

The worker runs in the benchmark's process, on a task queue of its own so Canopy's worker
never sees these tasks, and only while the floor is measured: during the engine run it
does not poll the server.
"""

import asyncio
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

FLOOR_TASK_QUEUE = "bench-floor"
FLOOR_WORKFLOW = "BenchFloor"
STEP_TIMEOUT = timedelta(seconds=60)


class Step(BaseModel):
    """One item's activity input: the command, as Canopy's command node runs it."""

    index: int
    argv: list[str]


class StepResult(BaseModel):
    """One item's activity output."""

    index: int
    returncode: int


@dataclass(frozen=True)
class FloorRun:
    """One timed floor workflow: how many items, how long start → result, and its id (for
    counting its history events like the engine's)."""

    items: int
    seconds: float
    workflow_id: str

    @property
    def per_item(self) -> float:
        """Seconds per item."""
        return self.seconds / self.items


@activity.defn
async def run_step(step: Step) -> StepResult:
    """Run the command and return its exit code: the least an activity per spec can do."""
    process = await asyncio.create_subprocess_exec(*step.argv)
    return StepResult(index=step.index, returncode=await process.wait())


@workflow.defn(name=FLOOR_WORKFLOW)
class FloorLoop:
    """A loop over ``items`` items, one activity each, strictly one after the other (as
    GraphRunV2 works through a queue); returns how many exited 0."""

    @workflow.run
    async def run(self, items: int, argv: list[str]) -> int:
        """Await each item's activity before starting the next."""
        succeeded = 0
        for index in range(items):
            result = await workflow.execute_activity(
                run_step, Step(index=index, argv=argv), start_to_close_timeout=STEP_TIMEOUT
            )
            succeeded += result.returncode == 0
        return succeeded


async def floor_run(address: str, items: int, command: str) -> FloorRun:
    """Start a worker for the floor, warm it up with one item (the sandbox loads this
    module on its first workflow task, a one-off cost the engine's long-lived worker does
    not pay per run either), then time one workflow of ``items`` items running
    ``/bin/sh -c COMMAND``."""
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    argv = ["/bin/sh", "-c", command]
    async with Worker(
        client, task_queue=FLOOR_TASK_QUEUE, workflows=[FloorLoop], activities=[run_step]
    ):
        await execute_floor(client, 1, argv)
        started = time.perf_counter()
        workflow_id = await execute_floor(client, items, argv)
        seconds = time.perf_counter() - started
    return FloorRun(items=items, seconds=seconds, workflow_id=workflow_id)


async def execute_floor(client: Client, items: int, argv: list[str]) -> str:
    """Run one floor workflow to the end; its id. Refuses a run where any item failed."""
    workflow_id = f"bench-floor-{uuid.uuid4().hex[:12]}"
    succeeded = await client.execute_workflow(
        FloorLoop.run, args=[items, argv], id=workflow_id, task_queue=FLOOR_TASK_QUEUE
    )
    if succeeded != items:
        raise RuntimeError(f"floor workflow {workflow_id}: {succeeded} of {items} items exited 0")
    return workflow_id
