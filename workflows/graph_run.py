"""GraphRunV2: one run of a graph over its bound specs or a queue (DESIGN §6); a long run
is a chain of workflow executions (continue-as-new), one workflow id.

One round trip per node (issue 13). The workflow runs on the agents task queue of the host
holding the workdir, so each node activity is handed to that host's worker with the
workflow task that schedules it (eager dispatch). The node activity does the bookkeeping
around the node itself (dirty-tree guard, the spec's claim, the node run's record and its
end); the rest are local activities in the workflow's worker: closing a spec and reading
what runs next is one of them. A one-node spec costs one activity and one workflow task.

What runs next is still read right before it is used: after a spec closes (unless hooks
fire first, or the run waits), or fresh after any wait, so reorders and graph edits take
effect at the next spec / node launch.

Between specs the dirty-tree guard runs (in the next node's activity); a dirty tree, a
``pause`` or a ``stop`` parks the run (graph ``paused`` with a blocker) until a
``continue_run`` signal says how to go on. A usage limit waits on a durable timer instead
(graph stays ``running``). A spec another run claimed first is passed over.
"""

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, cast

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from canopy.activities.bookkeeping import RunRecords
    from canopy.activities.nodes import NodeActivities
    from canopy.activities.run_state import RunControl
    from canopy.contracts.graph_run import (
        GRAPH_RUN_WORKFLOW,
        RUN_SEARCH_ATTRIBUTES,
        Ahead,
        DispatchOutcome,
        LaunchEnd,
        NextSpec,
        NodeDispatch,
        NodeResult,
        NodeStep,
        ReadAhead,
        RunInput,
        RunRef,
        RunState,
        RunStatus,
        SpecClose,
        SpecClosed,
        SpecOutcome,
    )
    from canopy.workflows import blockers
    from canopy.workflows.graph_run_core import (
        DIRTY,
        NODE_RETRY,
        TAKEN,
        Answer,
        GraphRunCore,
        Plan,
        Request,
        SpecEnd,
        continue_as_new_due,
        node_activity_timeout,
        where_next,
    )
    from canopy.workflows.timeouts import BOOKKEEPING_TIMEOUT, PENDING_RECOUNT


STATUS_KEY, BLOCKER_KEY = (SearchAttributeKey.for_keyword(name) for name in RUN_SEARCH_ATTRIBUTES)


class NotLaunched(Exception):
    """A node activity that did not launch the node (dirty tree, spec taken): the spec's
    walk ends there, before any node ran."""

    def __init__(self, outcome: DispatchOutcome) -> None:
        super().__init__("node not launched")
        self.outcome = outcome


@workflow.defn(name=GRAPH_RUN_WORKFLOW)
class GraphRun(GraphRunCore):
    """Drain specs through the graph's nodes, record everything, then settle."""

    def __init__(self) -> None:
        super().__init__()
        self._launches = 0
        """Node launches so far in this execution: with its run id, a launch's key."""
        self._guard_first_launch = False
        """Whether the next launch runs the dirty-tree guard (a spec's first, after a boundary)."""
        self._marked: tuple[RunState, str | None] = ("running", None)
        """The search attributes as last set (a start sets ``running``; continue-as-new
        carries them over)."""
        self._recording: asyncio.Task[None] | None = None
        """The task recording ignored signals (held so it is not collected)."""
        self._counted_at: datetime | None = None
        """When the pending specs were last counted (see :data:`PENDING_RECOUNT`)."""
        self._ignored_recorded = 0

    @workflow.run
    async def run(self, start: RunInput) -> str:
        """Run every runnable spec, then settle ``completed`` or ``failed``."""
        self._status = RunStatus(run_id=start.run_id, counts=start.counts.model_copy())
        self._recording = asyncio.create_task(self._record_ignored())
        specs_this_execution = 0
        # a fresh run passed the launch guard; a continued one is between two specs
        plan = Plan(guarded=start.continued)
        # what runs next, when it was read as the last spec closed (and nothing since)
        ahead: Ahead | None = None
        while not self._reset_requested:
            if ahead is None or plan.spec is not None or plan.node is not None:
                ahead = await self._read_ahead(start, plan.spec, plan.node)
            spec = ahead.spec
            if spec is None:
                return await self._settle_drained(start)
            starts_at = ahead.step.name if ahead.step else plan.node  # {{node}} of a block
            if self._pause_requested:
                self._pause_requested = False
                await self._park(start, blockers.paused(start.graph_name, spec, starts_at))
                plan, ahead = await self._wait_for_continue(start, spec, None), None
                continue
            read_ahead = not continue_as_new_due(start, specs_this_execution + 1)
            if plan.skip:
                closed = await self._close(start, spec, "skipped", None, read_ahead)
                end = SpecEnd(TAKEN) if closed.taken else SpecEnd("skipped")
                end.ahead = closed.ahead if closed.ahead.read else None
            else:
                guard = plan.guarded and not ahead.allow_dirty_start
                end = await self._run_spec(start, spec, ahead.step, plan, guard, read_ahead)
            ahead = end.ahead
            if end.outcome == TAKEN:
                plan = Plan()
                continue
            if end.outcome == DIRTY:
                assert end.dirty is not None
                blocker = blockers.dirty_tree(
                    start.graph_name, start.workdir, end.dirty, spec, starts_at
                )
                await self._park(start, blocker)
                plan = await self._wait_for_continue(start, spec, plan.node, plan.harness_session)
                continue
            specs_this_execution += 1
            after = await self._spec_ended(start, spec, end, specs_this_execution)
            if isinstance(after, str):
                return after
            plan = after
        await self._store(RunControl.reset_run, RunRef(run_id=start.run_id))
        self._set_details("**Reset**: the graph is idle again")
        self._mark(start, "reset", None)
        return "reset"

    def _mark(self, start: RunInput, state: RunState, blocker_kind: str | None) -> None:
        """Upsert ``CanopyStatus`` and ``CanopyBlocker`` when they change, if the server
        has them (``start.status_attributes``)."""
        if not start.status_attributes or self._marked == (state, blocker_kind):
            return
        self._marked = (state, blocker_kind)
        workflow.upsert_search_attributes(
            [
                STATUS_KEY.value_set(state),
                BLOCKER_KEY.value_set(blocker_kind) if blocker_kind else BLOCKER_KEY.value_unset(),
            ]
        )

    async def _record_ignored(self) -> None:
        """Record each signal the run ignored (see :meth:`control`), as it comes."""
        while True:
            await workflow.wait_condition(lambda: len(self._ignored) > self._ignored_recorded)
            ignored = self._ignored[self._ignored_recorded]
            await self._store(RunControl.record_ignored_signal, ignored)
            self._ignored_recorded += 1

    async def _run_spec(
        self,
        start: RunInput,
        spec: NextSpec,
        first: NodeStep | None,
        plan: Plan,
        guard: bool,
        read_ahead: bool,
    ) -> SpecEnd:
        """Walk the nodes for one spec from ``first`` (the dirty-tree guard in the first
        launch when ``guard``); how the passage ended, with what runs next if it was read
        as the spec closed."""
        self._show(spec, None)
        self._guard_first_launch = guard
        harness_session = plan.harness_session
        step, node_name = first, plan.node
        visits: dict[str, int] = {}
        while True:
            if step is None:
                end = SpecEnd("failed", node_name)
                break
            visits[step.name] = visits.get(step.name, 0) + 1
            if visits[step.name] > step.max_visits:
                end = SpecEnd("failed", step.name)
                break
            try:
                result = await self._launch_step(
                    start, spec, step, visits[step.name], harness_session
                )
            except NotLaunched as not_launched:
                self._show(None, None)
                if not_launched.outcome.taken:
                    return SpecEnd(TAKEN)
                return SpecEnd(DIRTY, dirty=not_launched.outcome.dirty)
            harness_session = None
            after = where_next(step, result)
            if isinstance(after, SpecEnd):
                end = after
                break
            node_name = after
            # the spec is in progress, so the count of pending specs would leave it out
            step = (await self._read_ahead(start, spec, node_name, count_pending=False)).step
        # a failed bound-spec run settles, a waiting or parked one reads afresh after
        goes_on = end.outcome == "completed" or (
            end.outcome == "failed" and start.queue_id is not None
        )
        outcome = cast(SpecOutcome, end.outcome)  # every end above is a spec outcome
        closed = await self._close(start, spec, outcome, end.node, read_ahead and goes_on)
        self._show(None, None)
        if closed.taken:
            return SpecEnd(TAKEN)
        if end.outcome == "completed" and closed.spec_completed_hooks:
            await self._fire_spec_completed(start, spec, closed.passage_id)
        end.ahead = closed.ahead if closed.ahead.read else None
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
        """One node launch, its bookkeeping done by the node activity itself (stoppable by
        signal); :class:`NotLaunched` when the guard or another run's claim kept it back.

        When the activity fails or is cancelled it could not record the node run's end,
        and a local activity does.
        """
        self._launches += 1
        launch_key = f"{workflow.info().run_id}/{self._launches}"
        guard, self._guard_first_launch = self._guard_first_launch, False
        self._show(spec, step.name)
        dispatch = NodeDispatch(
            run_id=start.run_id,
            graph_id=start.graph_id,
            graph_name=start.graph_name,
            spec_id=spec.spec_id,
            workdir=start.workdir,
            node=step.definition,
            ensemble_members=step.ensemble_members,
            resume_session_id=resume_session_id,
            member=member,
            launch_key=launch_key,
            spec=spec,
            visit=visit,
            guard=guard,
        )
        handle = workflow.start_activity_method(
            NodeActivities.dispatch_node,
            dispatch,
            task_queue=start.agents_task_queue,
            start_to_close_timeout=node_activity_timeout(step),
            heartbeat_timeout=timedelta(seconds=start.heartbeat_timeout_seconds),
            retry_policy=NODE_RETRY,
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            summary=f"{spec.name} · {step.name} (visit {visit})",
        )
        done, stopping = await self._await_node(handle)
        if isinstance(done, DispatchOutcome):
            if done.result is None:
                raise NotLaunched(done)
            return self._stopped(done.result, stopping)
        await self._store(
            RunRecords.record_launch_end, LaunchEnd(launch_key=launch_key, result=done)
        )
        return self._stopped(done, stopping)

    async def _read_ahead(
        self, start: RunInput, spec: NextSpec | None, node: str | None, count_pending: bool = True
    ) -> Ahead:
        """What runs next, read now (see :class:`ReadAhead`)."""
        request = ReadAhead(
            run_id=start.run_id,
            graph_id=start.graph_id,
            spec=spec,
            node=node,
            count_pending=count_pending,
        )
        ahead = await self._store(RunRecords.read_ahead, request)
        self._keep_pending(ahead)
        return ahead

    async def _close(
        self,
        start: RunInput,
        spec: NextSpec,
        outcome: SpecOutcome,
        node: str | None,
        read_ahead: bool,
    ) -> SpecClosed:
        """Close the spec's passage, reading what runs next in the same call if asked."""
        request = SpecClose(
            run_id=start.run_id,
            graph_id=start.graph_id,
            spec=spec,
            outcome=outcome,
            ended_node=node,
            read_ahead=read_ahead,
            count_pending=self._counted_at is None
            or workflow.now() - self._counted_at >= PENDING_RECOUNT,
        )
        closed = await self._store(RunRecords.close_spec, request)
        if closed.ahead.read:
            self._keep_pending(closed.ahead, closed_one=True)
        return closed

    def _keep_pending(self, ahead: Ahead, closed_one: bool = False) -> None:
        """Keep the pending count the progress shows: as counted, else as it was (less the
        spec just closed, which was pending when last counted)."""
        if ahead.pending is not None:
            self._pending, self._counted_at = ahead.pending, workflow.now()
        elif ahead.spec is None:
            self._pending = 0
        elif closed_one and self._pending is not None:
            self._pending = max(self._pending - 1, 1)

    async def _store(self, call: Callable[[Any, Request], Answer], request: Request) -> Answer:
        """A store call as a local activity: in this worker, within the workflow task,
        recorded as one marker (retried until the store answers)."""
        return await workflow.execute_local_activity_method(
            call,
            request,
            start_to_close_timeout=BOOKKEEPING_TIMEOUT,
            summary=f"store: {call.__name__}",
        )
