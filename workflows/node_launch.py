"""Launching one node of a graph run: the node activity, which does the bookkeeping around
the node itself on the workdir's host, an ensemble's failover to its next member on a
usage limit, the harness session a launch resumes, and a ``stop`` or ``reset`` that
cancels the node in flight.

The workflow (:mod:`canopy.workflows.graph_run`) walks a spec's nodes and hands each to
:meth:`NodeLauncher.launch`; what a launch shows and counts goes to the run's
:class:`~canopy.workflows.progress.RunProgress`.
"""

from datetime import datetime, timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError

with workflow.unsafe.imports_passed_through():
    from canopy.activities.bookkeeping import RunRecords
    from canopy.activities.nodes import NodeActivities
    from canopy.activities.run_state import RunControl
    from canopy.contracts.graph_run import (
        DispatchOutcome,
        GroupSessionQuery,
        LaunchEnd,
        NextSpec,
        NodeDispatch,
        NodeResult,
        NodeStep,
        RunInput,
    )
    from canopy.contracts.lanes import LaneRef
    from canopy.graphs.nodemodels import AgentConfig, AgentNode, CommandNode, EnsembleNode
    from canopy.workflows.progress import RunProgress
    from canopy.workflows.spec_walk import NODE_RETRY, HarnessSession, node_activity_timeout
    from canopy.workflows.steering import Steering
    from canopy.workflows.store_calls import store

T = TypeVar("T")


class NotLaunched(Exception):
    """A node activity that did not launch the node (dirty tree, spec taken): the spec's
    walk ends there, before any node ran."""

    def __init__(self, outcome: DispatchOutcome) -> None:
        super().__init__("node not launched")
        self.outcome = outcome


class NodeLauncher:
    """The node launches of one workflow execution."""

    def __init__(self, steering: Steering, progress: RunProgress) -> None:
        self._steering = steering
        self._progress = progress
        self.guard_next = False
        """Whether the next launch runs the dirty-tree guard (a spec's first, after a boundary)."""
        self.lanes = False
        """A run of lanes: a ``stop`` cancels the node of every lane, so a launch leaves it
        for the run to clear once every lane has ended, instead of spending it."""
        self._launches = 0
        """Launches so far in this execution: with its run id, a launch's key."""
        self._limited_until: dict[str, datetime] = {}
        """Platforms that reported a usage limit, and when it resets (ensemble failover)."""

    async def launch(
        self,
        start: RunInput,
        spec: NextSpec,
        step: NodeStep,
        visit: int,
        harness_session: HarnessSession | None,
        budget_usd: float | None = None,
        lane: LaneRef | None = None,
    ) -> NodeResult:
        """Run a node (in ``lane``'s worktree, for a run of lanes); an ensemble fails over
        to its next member on a usage limit. ``budget_usd`` is what it may still spend
        (:attr:`NodeDispatch.budget_usd`).

        Members whose platform is still limited are passed over; when every member is
        limited the node ends ``limit_blocked`` with the earliest reset.
        :class:`NotLaunched` when the guard or another run's claim kept the node back.
        """
        members: list[AgentConfig]
        match step.definition:
            case CommandNode():
                result = await self._run_node(
                    start, spec, step, visit, None, None, budget_usd, lane
                )
                return self._progress.counted(result)
            case AgentNode():
                members, ensemble = [step.definition.agent], False
            case EnsembleNode():
                members, ensemble = step.ensemble_members, True
        assert members
        for index, member in enumerate(members):
            platform = member.platform
            until = self._limited_until.get(platform)
            if ensemble and until is not None and until > workflow.now():
                continue
            resume = await self._resume_for(start, spec, step, platform, harness_session)
            result = self._progress.counted(
                await self._run_node(
                    start, spec, step, visit, resume, index if ensemble else None, budget_usd, lane
                )
            )
            if result.status != "limit_blocked":
                return result
            self._limited_until[platform] = result.limit_reset_at or workflow.now()
            if not ensemble:
                return result
        return NodeResult(
            status="limit_blocked",
            limit_reset_at=min(self._limited_until[m.platform] for m in members),
            error="every ensemble member is usage-limited",
        )

    async def _resume_for(
        self,
        start: RunInput,
        spec: NextSpec,
        step: NodeStep,
        platform: str,
        harness_session: HarnessSession | None,
    ) -> str | None:
        """The harness session a launch on ``platform`` resumes: the one handed over (a re-run
        after a usage limit), else for a grouped spec the one its last completed sibling
        left at this node; ungrouped specs start cold."""
        if harness_session is not None:
            return harness_session.id if harness_session.platform == platform else None
        if spec.group is None or start.queue_id is None:
            return None
        query = GroupSessionQuery(
            run_id=start.run_id, group=spec.group, node=step.name, platform=platform
        )
        return await store(RunControl.group_session, query)

    async def _run_node(
        self,
        start: RunInput,
        spec: NextSpec,
        step: NodeStep,
        visit: int,
        resume_session_id: str | None,
        member: int | None,
        budget_usd: float | None,
        lane: LaneRef | None = None,
    ) -> NodeResult:
        """One node launch, its bookkeeping done by the node activity itself (stoppable by
        signal); :class:`NotLaunched` when the guard or another run's claim kept it back.

        When the activity fails or is cancelled it could not record the node run's end,
        and a local activity does.
        """
        self._launches += 1
        launch_key = f"{workflow.info().run_id}/{self._launches}"
        guard, self.guard_next = self.guard_next, False
        self._progress.show(spec, step.name)
        dispatch = NodeDispatch(
            run_id=start.run_id,
            graph_id=start.graph_id,
            graph_name=start.graph_name,
            spec_id=spec.spec_id,
            workdir=lane.tree if lane is not None else start.workdir,
            node=step.definition,
            ensemble_members=step.ensemble_members,
            resume_session_id=resume_session_id,
            member=member,
            budget_usd=budget_usd,
            launch_key=launch_key,
            spec=spec,
            visit=visit,
            guard=guard,
            branch=lane.branch if lane is not None else None,
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
        await store(RunRecords.record_launch_end, LaunchEnd(launch_key=launch_key, result=done))
        return self._stopped(done, stopping)

    async def _await_node(self, handle: workflow.ActivityHandle[T]) -> tuple[T | NodeResult, bool]:
        """The node activity's value, or the result its error amounts to; and whether a
        ``stop`` or ``reset`` came meanwhile (the node is cancelled then)."""
        steering = self._steering
        await workflow.wait_condition(
            lambda: handle.done() or steering.stop_requested or steering.reset_requested
        )
        stopping = steering.stop_requested or steering.reset_requested
        if not handle.done():
            handle.cancel()
        try:
            return await handle, stopping
        except ActivityError as error:
            if isinstance(error.cause, CancelledError):
                return NodeResult(status="interrupted", error="stopped by request"), stopping
            return NodeResult(status="failed", error=str(error.cause or error)), stopping

    def _stopped(self, result: NodeResult, stopping: bool) -> NodeResult:
        """The node's result as the spec sees it: a stop ends the spec here, interrupted,
        even if the node finished before the cancel reached it."""
        if not stopping:
            return result
        if not self.lanes:
            self._steering.stop_requested = False
        return result.model_copy(update={"status": "interrupted"})
