"""GraphRunV2: one run of a graph over its bound specs or a queue; a long run
is a chain of workflow executions (continue-as-new), one workflow id. The class is named
for its workflow type, the one graph-run type there is.

One round trip per node. The workflow runs on the agents task queue of the host
holding the workdir, so each node activity is handed to that host's worker with the
workflow task that schedules it (eager dispatch). The node activity does the bookkeeping
around the node itself (dirty-tree guard, the spec's claim, the node run's record and its
end); the rest are local activities in the workflow's worker: closing a spec and reading
what runs next is one of them. A one-node spec costs one activity and one workflow task.

What runs next is still read right before it is used: after a spec closes (unless hooks
fire first, or the run waits), or fresh after any wait, so reorders and graph edits take
effect at the next spec / node launch.

Between specs the dirty-tree guard runs (in the next node's activity); a dirty tree, a
``pause``, a ``stop`` or, before any node, a reached budget parks the run (graph
``paused`` with a blocker) until a ``continue_run`` signal says how to go on. A usage
limit waits on a durable timer instead (graph stays ``running``), and an ensemble node
fails over to its next member. A spec another run claimed first is passed over.

Deterministic orchestration only. This class walks the specs, parks, waits and settles;
a node launch is :mod:`~canopy.workflows.node_launch`'s, what the signals ask is kept by
:mod:`~canopy.workflows.steering`, what the run shows by :mod:`~canopy.workflows.progress`,
and the rules of one spec's walk are :mod:`~canopy.workflows.spec_walk`'s.
"""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from canopy.activities import worktree
    from canopy.activities.bookkeeping import RunRecords
    from canopy.activities.hooks import HookActivities
    from canopy.activities.run_state import RunControl
    from canopy.contracts.graph_run import (
        GRAPH_RUN_WORKFLOW,
        Ahead,
        DirectedSpec,
        GraphRef,
        HookFiring,
        NextSpec,
        ReadAhead,
        ResumeSchedule,
        RunInput,
        RunPause,
        RunRef,
        RunSettlement,
        RunState,
        RunStatus,
        SpecClose,
        SpecClosed,
        SpecOutcome,
        SteerOutcome,
        WorkdirRef,
    )
    from canopy.contracts.graph_run_blocker import (
        Blocker,
        Budget,
        DirtyTree,
        QueueFailed,
        SpecFailed,
    )
    from canopy.graphs.hooks import HookEvent
    from canopy.lanes import Closed
    from canopy.workflows import blockers, details
    from canopy.workflows.lanes import LaneDrain
    from canopy.workflows.node_launch import NodeLauncher
    from canopy.workflows.progress import RunProgress
    from canopy.workflows.spec_walk import (
        BUDGET,
        DIRTY,
        NODE_RETRY,
        TAKEN,
        HarnessSession,
        Plan,
        SpecEnd,
        continue_as_new_due,
    )
    from canopy.workflows.steering import Steering
    from canopy.workflows.store_calls import store
    from canopy.workflows.timeouts import GIT_TIMEOUT
    from canopy.workflows.walk import walk


STEERING_BEFORE_CONTINUE_AS_NEW = "steering-before-continue-as-new"
"""The patch under which a pending pause, stop or reset keeps the run from continuing as
new until it has acted on it (see :meth:`GraphRunV2._steered_before_continuing`)."""


@workflow.defn(name=GRAPH_RUN_WORKFLOW)
class GraphRunV2:
    """Drain specs through the graph's nodes, record everything, then settle."""

    @workflow.init
    def __init__(self, start: RunInput) -> None:
        self._steering = Steering(start.graph_name)
        self._progress = RunProgress()
        self._launcher = NodeLauncher(self._steering, self._progress)
        self._parked = False
        """Whether the run is parked now (a re-check that stays paused is the same pause)."""
        self._parks = 0
        """Parks so far in this execution: with its run id, an ``on_blocked`` occurrence."""
        self._recording: asyncio.Task[None] | None = None
        """The task recording ignored signals (held so it is not collected)."""
        self._ignored_recorded = 0

    @workflow.query(name="status")
    def status(self) -> RunStatus:
        """Current spec and node, scheduled resume, what the run waits for, counts."""
        return self._progress.status

    @workflow.signal(dynamic=True)
    def control(self, name: str, inputs: Sequence[RawValue]) -> None:
        """Every signal, by name (see :class:`Steering`). One the run ignores shows in its
        details now and is recorded in the store by :meth:`_record_ignored`."""
        ignored = self._steering.receive(self._progress.status.run_id, name, inputs)
        if ignored is not None:
            self._progress.ignored(ignored)

    @workflow.update(dynamic=True)
    async def steer(self, name: str, inputs: Sequence[RawValue]) -> SteerOutcome:
        """Every signal as an update of the same name: applied as the signal is, answered
        once the run has acted on it (see :meth:`Steering.answer`)."""
        return await self._steering.answer(name, inputs)

    @steer.validator
    def refuse(self, name: str, inputs: Sequence[RawValue]) -> None:
        """Refuse, before it is accepted, an update that does not fit or does not apply to
        the run's state now (see :meth:`Steering.validate`)."""
        self._steering.validate(name, inputs)

    @workflow.run
    async def run(self, start: RunInput) -> str:
        """Run every runnable spec, then settle ``completed`` or ``failed``."""
        self._progress.start(start)
        self._recording = asyncio.create_task(self._record_ignored())
        if start.lanes > 1:
            self._launcher.lanes = True
            settled = await LaneDrain(self, start).run()
            return settled if settled is not None else await self._reset(start)
        steering = self._steering
        specs_this_execution = 0
        # a fresh run passed the launch guard; a continued one is between two specs
        plan = Plan(guarded=start.continued)
        # what runs next, when it was read as the last spec closed (and nothing since)
        ahead: Ahead | None = None
        while not steering.reset_requested:
            if ahead is None or plan.spec is not None or plan.node is not None:
                ahead = await self._read_ahead(start, plan.spec, plan.node)
            spec = ahead.spec
            if spec is None:
                return await self._settle_drained(start)
            starts_at = ahead.step.name if ahead.step else plan.node  # {{node}} of a block
            if steering.pause_requested:
                steering.pause_requested = False
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
                end = await self._run_spec(start, spec, ahead, plan, guard, read_ahead)
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
            if end.outcome == BUDGET:
                plan = await self._pause_for_budget(start, spec, end)
                continue
            specs_this_execution += 1
            after = await self._spec_ended(start, spec, end, specs_this_execution)
            if isinstance(after, str):
                return after
            plan = after
        return await self._reset(start)

    async def _reset(self, start: RunInput) -> str:
        """End the run on a ``reset``: the graph idle again, its specs reopened."""
        steering = self._steering
        steering.graph_status = "idle"
        await store(RunControl.reset_run, RunRef(run_id=start.run_id))
        steering.moved()
        self._progress.set_details("**Reset**: the graph is idle again")
        self._progress.mark("reset", None)
        await self._end_execution()
        return "reset"

    async def _end_execution(self) -> None:
        """Before this execution returns or continues as new: every update still waiting
        is answered (with the status as it stands) rather than left unfinished."""
        self._steering.ended = True
        await workflow.wait_condition(workflow.all_handlers_finished)

    async def _record_ignored(self) -> None:
        """Record each signal the run ignored (see :meth:`control`), as it comes."""
        ignored = self._steering.ignored
        while True:
            await workflow.wait_condition(lambda: len(ignored) > self._ignored_recorded)
            await store(RunControl.record_ignored_signal, ignored[self._ignored_recorded])
            self._ignored_recorded += 1

    # --- one spec: its nodes, one launch at a time ----------------------------------------

    async def _run_spec(
        self,
        start: RunInput,
        spec: NextSpec,
        first: Ahead,
        plan: Plan,
        guard: bool,
        read_ahead: bool,
    ) -> SpecEnd:
        """Walk the nodes for one spec from ``first``'s step (the dirty-tree guard in the
        first launch when ``guard``), each launched only while the graph's budget, read with
        the step, allows it; how the passage ended, with what runs next if it was read as
        the spec closed."""
        self._progress.show(spec, None)
        self._launcher.guard_next = guard
        first_step = (first.step, first.budget)
        end = await walk(
            self._launcher, self._read_node, start, spec, first_step, plan.node,
            plan.harness_session,
        )  # fmt: skip
        if end.outcome in (TAKEN, DIRTY) or (end.outcome == BUDGET and not end.opened):
            self._progress.show(None, None)
            return end  # nothing launched: no passage to close
        # a failed bound-spec run settles, a waiting or parked one reads afresh after
        goes_on = end.outcome == "completed" or (
            end.outcome == "failed" and start.queue_id is not None
        )
        # every end above is a spec outcome; a budget's leaves the spec pending, as a stop
        outcome = "interrupted" if end.outcome == BUDGET else cast(SpecOutcome, end.outcome)
        closed = await self._close(start, spec, outcome, end.node, read_ahead and goes_on)
        self._progress.show(None, None)
        if closed.taken:
            return SpecEnd(TAKEN)
        if end.outcome == "completed" and closed.spec_completed_hooks:
            await self._fire_spec_completed(start, spec, closed.passage_id)
        end.ahead = closed.ahead if closed.ahead.read else None
        return end

    # --- what runs next, and closing a spec ---------------------------------------------

    async def _read_ahead(
        self,
        start: RunInput,
        spec: NextSpec | None,
        node: str | None,
        count_pending: bool = True,
        passing_over: Sequence[str] = (),
        groups_in_flight: Sequence[str] = (),
    ) -> Ahead:
        """What runs next, read now (see :class:`ReadAhead`; a run of lanes passes over
        what it has in flight)."""
        request = ReadAhead(
            run_id=start.run_id,
            graph_id=start.graph_id,
            spec=spec,
            node=node,
            count_pending=count_pending,
            passing_over=list(passing_over),
            groups_in_flight=list(groups_in_flight),
        )
        ahead = await store(RunRecords.read_ahead, request)
        self._progress.keep_pending(ahead)
        return ahead

    async def _read_node(self, start: RunInput, spec: NextSpec, node: str) -> Ahead:
        """Node ``node`` as stored now, for a spec in progress (whose pending count would
        leave it out, so none is asked for)."""
        return await self._read_ahead(start, spec, node, count_pending=False)

    async def _close(
        self,
        start: RunInput,
        spec: NextSpec,
        outcome: SpecOutcome,
        node: str | None,
        read_ahead: bool,
        lane: Closed | None = None,
    ) -> SpecClosed:
        """Close the spec's passage, reading what runs next in the same call if asked; for
        a run of lanes, with what became of the spec's ``lane``."""
        request = SpecClose(
            run_id=start.run_id,
            graph_id=start.graph_id,
            spec=spec,
            outcome=outcome,
            ended_node=node,
            read_ahead=read_ahead,
            count_pending=self._progress.recount_due(),
            lane_closed=lane is not None,
            kept_branch=lane.kept_branch if lane is not None else None,
        )
        closed = await store(RunRecords.close_spec, request)
        if closed.ahead.read:
            self._progress.keep_pending(closed.ahead, closed_one=True)
        return closed

    # --- between specs: parking, continuing, usage-limit waits -----------------------------

    async def _spec_ended(
        self, start: RunInput, spec: NextSpec, end: SpecEnd, specs_this_execution: int
    ) -> Plan | str:
        """Count a spec's outcome. A bound-spec run settles at its first failed spec (the
        status it settled with is returned); otherwise the plan after it (usage-limit
        waits, stops), continuing as new when this execution has run its share of specs."""
        counts = self._progress.status.counts
        counts.specs_started += 1
        if end.outcome == "completed":
            counts.completed += 1
        elif end.outcome == "skipped":
            counts.skipped += 1
        elif end.outcome == "failed":
            counts.failed += 1
            if start.queue_id is None:
                return await self._settle(start, "failed", blockers.spec_failed(spec, end.node))
        plan = await self._after(start, spec, end)
        between_specs = plan.spec is None and not plan.skip
        due = between_specs and continue_as_new_due(start, specs_this_execution)
        if due and not self._steered_before_continuing():
            await self._end_execution()
            workflow.continue_as_new(start.model_copy(update={"counts": counts, "continued": True}))
        return plan

    def _steered_before_continuing(self) -> bool:
        """Whether a ``pause``, ``stop`` or ``reset`` waits: the run acts on it in this
        execution (and continues as new after the next spec), since a new execution starts
        with no request pending. Runs recorded before this rule continued as new and
        dropped it; their histories replay without the marker."""
        return self._steering.pending() and workflow.patched(STEERING_BEFORE_CONTINUE_AS_NEW)

    async def _after(self, start: RunInput, spec: NextSpec, end: SpecEnd) -> Plan:
        """The plan after a spec's outcome: usage-limit waits, stops, or the next spec."""
        if end.outcome == "limit_blocked":
            assert end.resume_at is not None
            if not await self._wait_out_limit(start, end.resume_at, end.limit):
                return Plan(spec=spec, node=end.node, harness_session=end.harness_session)
        if end.outcome in ("interrupted", "limit_blocked") and not self._steering.reset_requested:
            await self._park(start, blockers.stopped(start.graph_name, spec, end.node))
            return await self._wait_for_continue(start, spec, None)
        return Plan()

    async def _pause_for_budget(self, start: RunInput, spec: NextSpec, end: SpecEnd) -> Plan:
        """Park on the budget reached before ``end.node``; a continue checks the budget
        again (still reached: parked again, ``on_blocked`` not fired again) and then goes
        on at that node, the dirty-tree guard first if no node of the spec ran yet."""
        assert end.budget is not None
        await self._park(start, end.budget)
        return await self._wait_for_continue(
            start,
            spec,
            end.node,
            recheck=lambda: self._over_budget(start, spec, end.node),
            guarded=end.guarded,
        )

    async def _over_budget(
        self, start: RunInput, upcoming: NextSpec, node: str | None
    ) -> Budget | None:
        """The budget blocker before ``node`` of ``upcoming``, as stored and spent now."""
        ahead = await self._read_ahead(start, upcoming, node, count_pending=False)
        return blockers.over_budget(start.graph_name, upcoming, node, ahead.budget)

    async def _guard(self, start: RunInput, upcoming: NextSpec) -> DirtyTree | None:
        """The dirty-tree blocker for ``upcoming``, or ``None`` when the run may go on."""
        if await store(RunControl.allows_dirty_start, GraphRef(graph_id=start.graph_id)):
            return None
        state = await workflow.execute_activity(
            worktree.check_worktree,
            WorkdirRef(workdir=start.workdir),
            task_queue=start.agents_task_queue,
            start_to_close_timeout=GIT_TIMEOUT,
            summary=f"git status before {upcoming.name}",
        )
        if state.clean:
            return None
        return blockers.dirty_tree(start.graph_name, start.workdir, state, upcoming)

    async def _park(self, start: RunInput, blocker: Blocker) -> None:
        """Graph ``paused`` with ``blocker`` stored (not failed).

        Pending ``pause``/``stop`` requests are spent: the run is paused now.
        """
        self._steering.parking()
        self._progress.status.waiting_for = f"continue ({blocker.kind})"
        self._progress.set_details(details.blocked(blocker))
        self._progress.mark("paused", blocker.kind)
        await store(RunControl.pause_run, RunPause(run_id=start.run_id, blocker=blocker))
        self._steering.moved(blocker.message)
        if not self._parked:
            self._parked = True
            self._parks += 1
            await self._fire(
                start,
                "on_blocked",
                f"pause-{workflow.info().run_id}-{self._parks}",
                blocker=blocker.message,
                node=blocker.node,
            )

    async def _wait_for_continue(
        self,
        start: RunInput,
        upcoming: NextSpec,
        node: str | None,
        harness_session: HarnessSession | None = None,
        recheck: Callable[[], Awaitable[Blocker | None]] | None = None,
        guarded: bool = False,
    ) -> Plan:
        """Wait for ``continue_run`` (or ``reset``) and turn it into a plan.

        A ``recheck`` continue asks ``recheck`` (default: the dirty-tree guard) whether the
        run is still blocked, and parks again if so; else it goes on, with the dirty-tree
        guard still to run in its first launch when ``guarded``."""
        steering = self._steering
        while True:
            await workflow.wait_condition(
                lambda: steering.continue_request is not None or steering.reset_requested
            )
            if steering.reset_requested:
                return Plan(guarded=False)
            request = steering.continue_request
            assert request is not None
            steering.continue_request = None
            if request.mode == "run_from_node":
                spec = upcoming
                if request.spec_id is not None and request.spec_id != upcoming.spec_id:
                    directed = DirectedSpec(run_id=start.run_id, spec_id=request.spec_id)
                    spec = await store(RunControl.spec_for_run, directed)
                    harness_session = None
                plan = Plan(
                    spec=spec,
                    node=request.node or node,
                    harness_session=harness_session,
                    guarded=False,
                )
            elif request.mode == "skip_next_spec":
                plan = Plan(spec=None, skip=True, guarded=False)
            else:
                blocker = await (recheck() if recheck else self._guard(start, upcoming))
                if blocker is not None:
                    await self._park(start, blocker)
                    continue
                plan = Plan(
                    spec=upcoming, node=node, harness_session=harness_session, guarded=guarded
                )
            plan.mode = request.mode
            self._progress.status.waiting_for = None
            self._parked = False
            self._progress.mark("running", None)
            steering.graph_status = "running"
            await store(RunControl.resume_run, RunRef(run_id=start.run_id))
            steering.moved()
            return plan

    async def _wait_out_limit(
        self, start: RunInput, resume_at: datetime, limit: str | None = None
    ) -> bool:
        """Sleep on a durable timer until the usage limit resets (graph stays running).

        ``True`` when a ``stop`` or ``reset`` cut the wait short.
        """
        status, steering = self._progress.status, self._steering
        status.scheduled_resume_at = resume_at
        status.waiting_for = "usage limit reset"
        self._progress.set_details(details.usage_limit(resume_at, status.counts, limit))
        self._progress.mark("usage_limit", None)
        await self._schedule_resume(start, resume_at)
        delay = max(resume_at - workflow.now(), timedelta(seconds=1))
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(
                lambda: steering.reset_requested or steering.stop_requested, timeout=delay
            )
        status.scheduled_resume_at = None
        status.waiting_for = None
        self._progress.mark("running", None)
        await self._schedule_resume(start, None)
        return steering.reset_requested or steering.stop_requested

    async def _schedule_resume(self, start: RunInput, resume_at: datetime | None) -> None:
        """Record when the usage-limit wait ends (``None``: it ended), for ``graph info``."""
        schedule = ResumeSchedule(run_id=start.run_id, resume_at=resume_at)
        await store(RunControl.schedule_resume, schedule)

    # --- the end: settling and hooks --------------------------------------------------------

    async def _settle_drained(self, start: RunInput) -> str:
        """No runnable spec is left: settle by the queue's members, or complete."""
        if start.queue_id is None:
            return await self._settle(start, "completed", None)
        unfinished = await store(RunRecords.queue_settlement, RunRef(run_id=start.run_id))
        return await self._settle(start, "failed" if unfinished else "completed", unfinished)

    async def _settle(self, start: RunInput, status: str, blocker: Blocker | None) -> str:
        """Write the final status of the run and the graph."""
        counts = self._progress.status.counts
        settlement = RunSettlement(
            run_id=start.run_id, status=status, blocker=blocker, counts=counts
        )
        self._steering.graph_status = status
        await store(RunRecords.settle_run, settlement)
        self._steering.moved(blocker.message if blocker else None)
        self._progress.set_details(details.settled(status, counts, blocker))
        self._progress.mark(cast(RunState, status), blocker.kind if blocker else None)
        if status == "completed" and counts.completed > 0:
            await self._fire(start, "on_completed", "settled")
        elif status == "failed" and blocker is not None:
            await self._fire(
                start,
                "on_failed",
                "settled",
                spec_id=blocker.spec_id if isinstance(blocker, SpecFailed) else None,
                failed_specs=blocker.failed_specs if isinstance(blocker, QueueFailed) else [],
                blocker=blocker.message,
                node=blocker.node,
            )
        self._progress.set_details(details.settled(status, counts, blocker))  # + hooks
        await self._end_execution()
        return status

    async def _fire_spec_completed(
        self, start: RunInput, spec: NextSpec, passage_id: int | None
    ) -> None:
        """Fire ``on_spec_completed`` once per passage (its id names the occurrence)."""
        await self._fire(
            start,
            "on_spec_completed",
            f"passage-{passage_id}",
            spec_id=spec.spec_id,
            spec_name=spec.name,
        )

    async def _fire(
        self, start: RunInput, event: HookEvent, occurrence: str, **context: Any
    ) -> None:
        """Fire ``event``'s hooks (read from the store now) on the run's host; what agent
        hooks used joins the running total."""
        firing = HookFiring(
            run_id=start.run_id,
            graph_id=start.graph_id,
            graph_name=start.graph_name,
            workdir=start.workdir,
            event=event,
            occurrence=occurrence,
            **context,
        )
        fired = await workflow.execute_activity_method(
            HookActivities.fire_hooks,
            firing,
            task_queue=start.agents_task_queue,
            start_to_close_timeout=timedelta(hours=24),
            heartbeat_timeout=timedelta(seconds=start.heartbeat_timeout_seconds),
            retry_policy=NODE_RETRY,
            summary=f"hooks: {event}",
        )
        self._progress.add_usage(fired.usage)
