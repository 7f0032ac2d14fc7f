"""GraphRun: one execution of a graph over its bound specs or a queue (DESIGN §6).

Deterministic orchestration only. The next spec and each node are read from the store
through activities right before they are used, so reorders and graph edits during a run
take effect at the next spec / node launch. Agent and command nodes run on the agents
task queue of the host holding the workdir; bookkeeping runs on the main queue.
"""

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities import bookkeeping, nodes
    from canopy.runmodels import (
        NextSpec,
        NodeLaunch,
        NodeResult,
        NodeStep,
        RunInput,
        RunStatus,
    )

BOOKKEEPING_TIMEOUT = timedelta(minutes=1)
DEFAULT_NODE_TIMEOUT_MINUTES = 24 * 60
"""Activity deadline for a node without ``timeout_minutes`` (the node itself runs unbounded)."""
NODE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
    non_retryable_error_types=["Refused"],
)
"""Retries cover lost workers (heartbeat timeouts); an agent's own failure is a result."""


def spec_failed(spec: NextSpec, node: str | None) -> dict[str, Any]:
    """The blocker of a bound-spec run that ended at a failed spec (DESIGN §6.6)."""
    return {
        "kind": "spec_failed",
        "message": f"spec {spec.name} ({spec.spec_id}) failed at node {node}",
        "spec_id": spec.spec_id,
        "node": node,
    }


@workflow.defn(name="GraphRun")
class GraphRun:
    """Drain specs through the graph's nodes, record everything, then settle."""

    def __init__(self) -> None:
        self._status = RunStatus(run_id="")

    @workflow.query(name="status")
    def status(self) -> RunStatus:
        """Current spec and node, node run in flight, scheduled resume, counts."""
        return self._status

    @workflow.run
    async def run(self, start: RunInput) -> str:
        """Run every runnable spec, then settle ``completed`` or ``failed``."""
        self._status = RunStatus(run_id=start.run_id, counts=start.counts.model_copy())
        counts = self._status.counts
        specs_this_execution = 0
        while True:
            spec = await self._bookkeeping(bookkeeping.next_spec, start.run_id)
            if spec is None:
                break
            outcome, ended_node = await self._run_spec(start, spec)
            counts.specs_started += 1
            if outcome == "completed":
                counts.completed += 1
            elif outcome == "skipped":
                counts.skipped += 1
            elif outcome == "failed":
                counts.failed += 1
                if start.queue_id is None:
                    return await self._settle(start, "failed", spec_failed(spec, ended_node))
            specs_this_execution += 1
            if (
                specs_this_execution >= start.specs_per_execution
                or workflow.info().is_continue_as_new_suggested()
            ):
                workflow.continue_as_new(start.model_copy(update={"counts": counts}))
        if start.queue_id is None:
            return await self._settle(start, "completed", None)
        unfinished = await self._bookkeeping(bookkeeping.queue_settlement, start.run_id)
        return await self._settle(start, "failed" if unfinished else "completed", unfinished)

    async def _run_spec(self, start: RunInput, spec: NextSpec) -> tuple[str, str | None]:
        """Walk the nodes for one spec; the outcome and the node that ended it."""
        self._show(spec, None)
        passage = await self._bookkeeping(bookkeeping.begin_spec, start.run_id, spec)
        visits: dict[str, int] = {}
        node_name: str | None = None
        outcome, ended_node = "failed", None
        while True:
            step = await self._bookkeeping(bookkeeping.load_node, start.graph_id, node_name)
            if step is None:
                ended_node = node_name
                break
            visits[step.name] = visits.get(step.name, 0) + 1
            ended_node = step.name
            if visits[step.name] > step.max_visits:
                break
            result = await self._run_node(start, spec, step, visits[step.name])
            if result.status == "succeeded":
                if step.next_node is None:
                    outcome = "completed"
                    break
                node_name = step.next_node
            elif step.on_failure is not None:
                node_name = step.on_failure
            else:
                break
        await self._bookkeeping(bookkeeping.finish_spec, passage, outcome, ended_node)
        self._show(None, None)
        return outcome, ended_node

    async def _run_node(
        self, start: RunInput, spec: NextSpec, step: NodeStep, visit: int
    ) -> NodeResult:
        """Record, launch and record the end of one node run."""
        node_run_id = await self._bookkeeping(
            bookkeeping.start_node_run, start.run_id, spec.spec_id, step.name, visit
        )
        self._show(spec, step.name, node_run_id)
        launch = NodeLaunch(
            run_id=start.run_id,
            node_run_id=node_run_id,
            graph_id=start.graph_id,
            graph_name=start.graph_name,
            spec_id=spec.spec_id,
            workdir=start.workdir,
            node=step.definition,
        )
        runner = nodes.run_command_node if step.definition.get("command") else nodes.run_agent_node
        timeout_minutes = step.timeout_minutes or DEFAULT_NODE_TIMEOUT_MINUTES
        try:
            result = await workflow.execute_activity(
                runner,
                launch,
                task_queue=start.agents_task_queue,
                start_to_close_timeout=timedelta(minutes=timeout_minutes + 1),
                heartbeat_timeout=timedelta(seconds=start.heartbeat_timeout_seconds),
                retry_policy=NODE_RETRY,
                summary=f"{spec.name} · {step.name} (visit {visit})",
            )
        except ActivityError as error:
            cause = error.cause or error
            result = NodeResult(status="failed", error=str(cause))
        await self._bookkeeping(bookkeeping.finish_node_run, node_run_id, result)
        return result

    async def _settle(self, start: RunInput, status: str, blocker: dict[str, Any] | None) -> str:
        """Write the final status of the run and the graph."""
        await self._bookkeeping(
            bookkeeping.settle_run, start.run_id, status, blocker, self._status.counts
        )
        workflow.set_current_details(f"settled {status}")
        return status

    def _show(
        self, spec: NextSpec | None, node: str | None, node_run_id: int | None = None
    ) -> None:
        """Keep the status query and the Temporal UI's current details in step."""
        self._status.spec_id = spec.spec_id if spec else None
        self._status.spec_name = spec.name if spec else None
        self._status.node = node
        self._status.node_run_id = node_run_id
        if spec is not None:
            where = f" · node {node}" if node else ""
            workflow.set_current_details(f"spec {spec.name} ({spec.spec_id}){where}")

    async def _bookkeeping(self, activity: Any, *args: Any) -> Any:
        """A store activity on the main queue (retried until the store answers)."""
        return await workflow.execute_activity(
            activity,
            args=list(args),
            start_to_close_timeout=BOOKKEEPING_TIMEOUT,
        )
