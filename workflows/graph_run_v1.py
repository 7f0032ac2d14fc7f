"""GraphRun (v1): runs started before ``GraphRunV2`` drain to their end on this code.

Frozen: its history shape must not change, or those runs fail to replay
(``tests/histories/v1``). It runs on the main task queue and reaches the store through a
remote activity per call (about nine per spec); nothing starts it any more, and it goes
once no run of this type is left (``temporal workflow list --query
"WorkflowType='GraphRun' AND ExecutionStatus='Running'"``).
"""

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from canopy.activities.legacy import LegacyRunRecords
    from canopy.activities.nodes import NodeActivities
    from canopy.contracts.graph_run import (
        LEGACY_GRAPH_RUN_WORKFLOW,
        NextSpec,
        NodeLaunch,
        NodeResult,
        NodeStep,
        RunInput,
        RunStatus,
    )
    from canopy.graphs.nodemodels import AgentNode, CommandNode, EnsembleNode
    from canopy.workflows import blockers
    from canopy.workflows.graph_run_core import (
        NODE_RETRY,
        TAKEN,
        Answer,
        GraphRunCore,
        HarnessSession,
        Plan,
        Request,
        SpecEnd,
        node_activity_timeout,
        where_next,
    )
    from canopy.workflows.timeouts import BOOKKEEPING_TIMEOUT

Params = ParamSpec("Params")
Returned = TypeVar("Returned")


@workflow.defn(name=LEGACY_GRAPH_RUN_WORKFLOW)
class LegacyGraphRun(GraphRunCore):
    """Drain specs through the graph's nodes, record everything, then settle."""

    @workflow.run
    async def run(self, start: RunInput) -> str:
        """Run every runnable spec, then settle ``completed`` or ``failed``."""
        self._status = RunStatus(run_id=start.run_id, counts=start.counts.model_copy())
        specs_this_execution = 0
        # a fresh run passed the launch guard; a continued one is between two specs
        plan = Plan(guarded=start.continued)
        while not self._reset_requested:
            if plan.guarded or self._pause_requested:
                plan = await self._boundary(start, plan)
                if self._reset_requested:
                    break
            spec = plan.spec or await self._legacy(LegacyRunRecords.next_spec, start.run_id)
            if spec is None:
                return await self._settle_drained(start)
            if plan.skip:
                end = await self._skip(start, spec)
            else:
                end = await self._run_spec(start, spec, plan.node, plan.harness_session)
            if end.outcome == TAKEN:
                plan = Plan()
                continue
            specs_this_execution += 1
            after = await self._spec_ended(start, spec, end, specs_this_execution)
            if isinstance(after, str):
                return after
            plan = after
        await self._legacy(LegacyRunRecords.reset_run, start.run_id)
        self._set_details("reset")
        return "reset"

    async def _boundary(self, start: RunInput, plan: Plan) -> Plan:
        """Between specs: honour a pause request, then run the dirty-tree guard."""
        upcoming = plan.spec or await self._legacy(LegacyRunRecords.next_spec, start.run_id)
        if upcoming is None:
            return Plan(guarded=False)
        if self._pause_requested:
            self._pause_requested = False
            await self._park(start, blockers.paused(start.graph_name, upcoming))
            return await self._wait_for_continue(start, upcoming, None)
        if not plan.guarded:
            return plan
        blocker = await self._guard(start, upcoming)
        if blocker is None:
            return Plan(
                spec=upcoming, node=plan.node, harness_session=plan.harness_session, guarded=False
            )
        await self._park(start, blocker)
        return await self._wait_for_continue(start, upcoming, plan.node, plan.harness_session)

    async def _skip(self, start: RunInput, spec: NextSpec) -> SpecEnd:
        """Mark a spec skipped (``continue --mode skip_next_spec``)."""
        passage = await self._legacy(LegacyRunRecords.begin_spec, start.run_id, spec)
        if passage is None:
            return SpecEnd(TAKEN)
        await self._legacy(LegacyRunRecords.finish_spec, passage, "skipped", None)
        return SpecEnd("skipped")

    async def _run_spec(
        self,
        start: RunInput,
        spec: NextSpec,
        first_node: str | None,
        harness_session: HarnessSession | None,
    ) -> SpecEnd:
        """Walk the nodes for one spec from ``first_node``; how the passage ended."""
        self._show(spec, None)
        passage = await self._legacy(LegacyRunRecords.begin_spec, start.run_id, spec)
        if passage is None:
            self._show(None, None)
            return SpecEnd(TAKEN)
        visits: dict[str, int] = {}
        node_name = first_node
        end = SpecEnd("failed")
        while True:
            step = await self._legacy(LegacyRunRecords.load_node, start.graph_id, node_name)
            if step is None:
                end = SpecEnd("failed", node_name)
                break
            visits[step.name] = visits.get(step.name, 0) + 1
            if visits[step.name] > step.max_visits:
                end = SpecEnd("failed", step.name)
                break
            result = await self._launch_step(start, spec, step, visits[step.name], harness_session)
            harness_session = None
            after = where_next(step, result)
            if isinstance(after, SpecEnd):
                end = after
                break
            node_name = after
        has_hooks = await self._legacy(LegacyRunRecords.finish_spec, passage, end.outcome, end.node)
        self._show(None, None)
        if end.outcome == "completed" and has_hooks:
            await self._fire_spec_completed(start, spec, passage)
        return end

    async def _run_node(
        self,
        start: RunInput,
        spec: NextSpec,
        step: NodeStep,
        visit: int,
        resume_session_id: str | None,
        member: int | None,
    ) -> NodeResult:
        """Record, launch and record the end of one node run (stoppable by signal)."""
        node_run_id = await self._legacy(
            LegacyRunRecords.start_node_run, start.run_id, spec.spec_id, step.name, visit
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
            ensemble_members=step.ensemble_members,
            resume_session_id=resume_session_id,
            member=member,
        )
        match step.definition:
            case CommandNode():
                runner = NodeActivities.run_command_node
            case AgentNode() | EnsembleNode():
                runner = NodeActivities.run_agent_node
        handle = workflow.start_activity_method(
            runner,
            launch,
            task_queue=start.agents_task_queue,
            start_to_close_timeout=node_activity_timeout(step),
            heartbeat_timeout=timedelta(seconds=start.heartbeat_timeout_seconds),
            retry_policy=NODE_RETRY,
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            summary=f"{spec.name} · {step.name} (visit {visit})",
        )
        result, stopping = await self._await_node(handle)
        await self._legacy(LegacyRunRecords.finish_node_run, node_run_id, result)
        return self._stopped(result, stopping)

    async def _store(self, call: Callable[[Any, Request], Answer], request: Request) -> Answer:
        """A shared store call, as the legacy activity of the same name: its arguments are
        ``request``'s fields in order (see :mod:`canopy.activities.legacy`)."""
        legacy: Callable[..., Answer] = getattr(LegacyRunRecords, call.__name__)
        fields = [getattr(request, name) for name in type(request).model_fields]
        return await self._legacy(legacy, *fields)

    async def _legacy(
        self,
        call: Callable[Concatenate[LegacyRunRecords, Params], Returned],
        *args: Params.args,
        **kwargs: Params.kwargs,
    ) -> Returned:
        """A store activity on the main queue (retried until the store answers); its
        arguments are positional, as the recorded histories hold them."""
        assert not kwargs, "legacy store activities take positional arguments only"
        return await workflow.execute_activity_method(
            call, args=list(args), start_to_close_timeout=BOOKKEEPING_TIMEOUT
        )
