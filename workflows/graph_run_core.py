"""The graph run's signals and query, pausing and continuing, usage-limit waits,
ensemble failover, hooks and settling (DESIGN §6).

Deterministic orchestration only. ``GraphRunV2`` (:mod:`canopy.workflows.graph_run`)
says how it reaches the store and launches a node (:meth:`GraphRunCore._store`,
:meth:`GraphRunCore._run_node`) and how it walks the specs.
"""

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, CancelledError

with workflow.unsafe.imports_passed_through():
    from canopy.activities import worktree
    from canopy.activities.bookkeeping import RunRecords
    from canopy.activities.hooks import HookActivities
    from canopy.activities.run_state import RunControl
    from canopy.contracts.graph_run import (
        SIGNAL_CONTINUE,
        SIGNAL_PAUSE,
        SIGNAL_RESET,
        SIGNAL_SKIP_NEXT_SPEC,
        SIGNAL_STOP,
        Ahead,
        ContinueRequest,
        DirectedSpec,
        GraphRef,
        GroupSessionQuery,
        HarnessUsage,
        HookFiring,
        IgnoredSignal,
        IgnoredSignalRecord,
        NextSpec,
        NodeResult,
        NodeStep,
        ResumeSchedule,
        RunInput,
        RunPause,
        RunRef,
        RunSettlement,
        RunState,
        RunStatus,
        WorkdirRef,
        node_timeout_minutes,
        read_control,
    )
    from canopy.graphs.hooks import HookEvent
    from canopy.graphs.nodemodels import AgentConfig, AgentNode, CommandNode, EnsembleNode
    from canopy.workdir import WorktreeState
    from canopy.workflows import blockers, details

GIT_TIMEOUT = timedelta(minutes=2)
DEFAULT_NODE_TIMEOUT_MINUTES = 24 * 60
"""Activity deadline for a node without ``timeout_minutes`` (the node itself runs unbounded)."""
NODE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
    non_retryable_error_types=["Refused"],
)
"""Retries cover lost workers (heartbeat timeouts); an agent's own failure is a result."""


T = TypeVar("T")
Request = TypeVar("Request", bound=BaseModel)
Answer = TypeVar("Answer")


@dataclass
class Plan:
    """What to do with the next spec: run it (from ``node``, resuming ``harness_session``)
    or skip it. ``spec`` ``None`` means: read the next spec fresh from the store."""

    spec: NextSpec | None = None
    node: str | None = None
    harness_session: "HarnessSession | None" = None
    skip: bool = False
    guarded: bool = True
    """Whether the dirty-tree guard still has to pass (a directed start skips it)."""


@dataclass(frozen=True)
class HarnessSession:
    """The harness's own conversation (its session id, e.g. Claude Code's ``session_id``)
    and the platform that owns it: only that platform can resume it. Not an interactive
    session of Canopy's."""

    id: str
    platform: str


TAKEN = "taken"
"""The :class:`SpecEnd` outcome of a spec another run claimed first: no passage opened."""
DIRTY = "dirty"
"""The :class:`SpecEnd` outcome of a spec the dirty-tree guard kept from starting."""


@dataclass
class SpecEnd:
    """How one spec's passage ended."""

    outcome: str
    node: str | None = None
    harness_session: HarnessSession | None = None
    resume_at: datetime | None = None
    limit: str | None = None
    """For a usage limit: the harness's message and the reset chosen from it."""
    dirty: WorktreeState | None = None
    """The tree the guard found dirty (:data:`DIRTY`)."""
    ahead: Ahead | None = None
    """What runs next, when it was read as the spec closed."""


class GraphRunCore:
    """Signals, query and the parts of a run every GraphRun type walks the same way."""

    def __init__(self) -> None:
        self._status = RunStatus(run_id="")
        self._continue: ContinueRequest | None = None
        self._pause_requested = False
        self._stop_requested = False
        self._reset_requested = False
        self._parked = False
        self._parks = 0
        self._limited_until: dict[str, datetime] = {}
        """Platforms that reported a usage limit, and when it resets (ensemble failover)."""
        self._details = ""
        self._pending: int | None = None
        """Specs still pending in the run's scope, as last read (for the details)."""
        self._ignored: list[IgnoredSignalRecord] = []
        """Signals the run did not act on, oldest first (see :meth:`control`)."""

    @workflow.query(name="status")
    def status(self) -> RunStatus:
        """Current spec and node, node run in flight, scheduled resume, counts."""
        return self._status

    @workflow.signal(dynamic=True)
    def control(self, name: str, inputs: Sequence[RawValue]) -> None:
        """Every signal, by name (``continue_run``, ``skip_next_spec``, ``pause``, ``stop``,
        ``reset``; see :func:`read_control`).

        One dynamic handler so that no signal can fail a workflow task: a named handler's
        input is decoded before it is called, and a signal whose input does not fit (none
        where one is required, a wrong shape, a name nobody handles) failed every task
        from then on, wedging the run. Here anything that does not fit is ignored, shown
        in the run's details and kept for :meth:`_record_ignored`, and the next valid
        signal steers the run as usual.
        """
        try:
            converter = workflow.payload_converter()
            decoded = [converter.from_payload(value.payload) for value in inputs]
        except Exception as error:  # whatever the payload, the task must not fail
            message = str(error.args[0]) if error.args else type(error).__name__
            why = (message.splitlines() or [""])[0][:200]
            self._ignore(name, f"{name}: its input could not be decoded ({why})")
            return
        try:
            request = read_control(name, decoded)
        except IgnoredSignal as ignored:
            self._ignore(name, str(ignored))
            return
        if name == SIGNAL_CONTINUE:
            self._continue = request
        elif name == SIGNAL_SKIP_NEXT_SPEC:
            self._continue = ContinueRequest(mode="skip_next_spec")
        elif name == SIGNAL_PAUSE:
            self._pause_requested = True  # at the next spec boundary
        elif name == SIGNAL_STOP:
            self._stop_requested = True  # cancel the node in flight, then pause
        elif name == SIGNAL_RESET:
            self._reset_requested = True  # end the run: graph idle, bound specs reopened

    def _ignore(self, name: str, reason: str) -> None:
        """Keep an ignored signal: in the run's details now, in the store soon."""
        workflow.logger.warning("ignored signal %s: %s", name, reason)
        self._ignored.append(
            IgnoredSignalRecord(
                run_id=self._status.run_id,
                signal=name[:100],
                reason=reason,
                at=workflow.now(),
            )
        )
        self._set_details(self._details)

    def _set_details(self, details: str) -> None:
        """The run's current details in the Temporal UI, with the last ignored signal."""
        self._details = details
        if self._ignored:
            last = self._ignored[-1]
            at = last.at.strftime("%Y-%m-%dT%H:%M:%SZ")  # workflow.now() is UTC
            details += f"\n\nignored signal {last.signal} at {at}: {last.reason}"
        workflow.set_current_details(details)

    async def _spec_ended(
        self, start: RunInput, spec: NextSpec, end: SpecEnd, specs_this_execution: int
    ) -> Plan | str:
        """Count a spec's outcome. A bound-spec run settles at its first failed spec (the
        status it settled with is returned); otherwise the plan after it (usage-limit
        waits, stops), continuing as new when this execution has run its share of specs."""
        counts = self._status.counts
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
        if plan.spec is None and not plan.skip and continue_as_new_due(start, specs_this_execution):
            workflow.continue_as_new(start.model_copy(update={"counts": counts, "continued": True}))
        return plan

    async def _after(self, start: RunInput, spec: NextSpec, end: SpecEnd) -> Plan:
        """The plan after a spec's outcome: usage-limit waits, stops, or the next spec."""
        if end.outcome == "limit_blocked":
            assert end.resume_at is not None
            if not await self._wait_out_limit(start, end.resume_at, end.limit):
                return Plan(spec=spec, node=end.node, harness_session=end.harness_session)
        if end.outcome in ("interrupted", "limit_blocked") and not self._reset_requested:
            await self._park(start, blockers.stopped(start.graph_name, spec, end.node))
            return await self._wait_for_continue(start, spec, None)
        return Plan()

    async def _guard(self, start: RunInput, upcoming: NextSpec) -> dict[str, Any] | None:
        """The dirty-tree blocker for ``upcoming``, or ``None`` when the run may go on."""
        if await self._store(RunControl.allows_dirty_start, GraphRef(graph_id=start.graph_id)):
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

    async def _park(self, start: RunInput, blocker: dict[str, Any]) -> None:
        """Graph ``paused`` with ``blocker`` stored (not failed).

        Pending ``pause``/``stop`` requests are spent: the run is paused now.
        """
        self._pause_requested = False
        self._stop_requested = False
        self._continue = None  # only a continue sent while paused resumes this pause
        self._status.waiting_for = f"continue ({blocker['kind']})"
        self._set_details(details.blocked(blocker))
        self._mark(start, "paused", blocker["kind"])
        await self._store(RunControl.pause_run, RunPause(run_id=start.run_id, blocker=blocker))
        if not self._parked:  # a re-check that stays paused is the same pause
            self._parked = True
            self._parks += 1
            await self._fire(
                start,
                "on_blocked",
                f"pause-{workflow.info().run_id}-{self._parks}",
                blocker=blocker["message"],
                node=blocker.get("node"),
            )

    async def _wait_for_continue(
        self,
        start: RunInput,
        upcoming: NextSpec,
        node: str | None,
        harness_session: HarnessSession | None = None,
    ) -> Plan:
        """Wait for ``continue_run`` (or ``reset``) and turn it into a plan."""
        while True:
            await workflow.wait_condition(
                lambda: self._continue is not None or self._reset_requested
            )
            if self._reset_requested:
                return Plan(guarded=False)
            request = self._continue
            assert request is not None
            self._continue = None
            if request.mode == "run_from_node":
                spec = upcoming
                if request.spec_id is not None and request.spec_id != upcoming.spec_id:
                    directed = DirectedSpec(run_id=start.run_id, spec_id=request.spec_id)
                    spec = await self._store(RunControl.spec_for_run, directed)
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
                blocker = await self._guard(start, upcoming)
                if blocker is not None:
                    await self._park(start, blocker)
                    continue
                plan = Plan(
                    spec=upcoming, node=node, harness_session=harness_session, guarded=False
                )
            self._status.waiting_for = None
            self._parked = False
            self._mark(start, "running", None)
            await self._store(RunControl.resume_run, RunRef(run_id=start.run_id))
            return plan

    async def _wait_out_limit(
        self, start: RunInput, resume_at: datetime, limit: str | None = None
    ) -> bool:
        """Sleep on a durable timer until the usage limit resets (graph stays running).

        ``True`` when a ``stop`` or ``reset`` cut the wait short.
        """
        self._status.scheduled_resume_at = resume_at
        self._status.waiting_for = "usage limit reset"
        self._set_details(details.usage_limit(resume_at, self._status.counts, limit))
        self._mark(start, "usage_limit", None)
        await self._schedule_resume(start, resume_at)
        delay = max(resume_at - workflow.now(), timedelta(seconds=1))
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(
                lambda: self._reset_requested or self._stop_requested, timeout=delay
            )
        self._status.scheduled_resume_at = None
        self._status.waiting_for = None
        self._mark(start, "running", None)
        await self._schedule_resume(start, None)
        return self._reset_requested or self._stop_requested

    async def _schedule_resume(self, start: RunInput, resume_at: datetime | None) -> None:
        """Record when the usage-limit wait ends (``None``: it ended), for ``graph info``."""
        schedule = ResumeSchedule(run_id=start.run_id, resume_at=resume_at)
        await self._store(RunControl.schedule_resume, schedule)

    async def _launch_step(
        self,
        start: RunInput,
        spec: NextSpec,
        step: NodeStep,
        visit: int,
        harness_session: HarnessSession | None,
    ) -> NodeResult:
        """Run a node; an ensemble fails over to its next member on a usage limit.

        Members whose platform is still limited are passed over; when every member is
        limited the node ends ``limit_blocked`` with the earliest reset.
        """
        members: list[AgentConfig]
        match step.definition:
            case CommandNode():
                return self._counted(await self._run_node(start, spec, step, visit, None, None))
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
            result = self._counted(
                await self._run_node(start, spec, step, visit, resume, index if ensemble else None)
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

    def _counted(self, result: NodeResult) -> NodeResult:
        """``result``, its usage and permission denials added to the run's running totals."""
        self._add_usage(result.usage)
        if result.denial_count:
            counts = self._status.counts
            counts.denials += result.denial_count
            counts.last_denial = (result.denials or [counts.last_denial or ""])[-1] or None
        return result

    def _add_usage(self, usage: HarnessUsage | None) -> None:
        """Add what a harness reported it used to the run's running total (:class:`RunCounts`)."""
        if usage is not None:
            counts = self._status.counts
            counts.usage = usage.plus(counts.usage)

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
        left at this node (DESIGN §6.9); ungrouped specs start cold."""
        if harness_session is not None:
            return harness_session.id if harness_session.platform == platform else None
        if spec.group is None or start.queue_id is None:
            return None
        query = GroupSessionQuery(
            run_id=start.run_id, group=spec.group, node=step.name, platform=platform
        )
        return await self._store(RunControl.group_session, query)

    async def _settle_drained(self, start: RunInput) -> str:
        """No runnable spec is left: settle by the queue's members, or complete."""
        if start.queue_id is None:
            return await self._settle(start, "completed", None)
        unfinished = await self._store(RunRecords.queue_settlement, RunRef(run_id=start.run_id))
        return await self._settle(start, "failed" if unfinished else "completed", unfinished)

    async def _settle(self, start: RunInput, status: str, blocker: dict[str, Any] | None) -> str:
        """Write the final status of the run and the graph."""
        settlement = RunSettlement(
            run_id=start.run_id, status=status, blocker=blocker, counts=self._status.counts
        )
        await self._store(RunRecords.settle_run, settlement)
        self._set_details(details.settled(status, self._status.counts, blocker))
        self._mark(start, cast(RunState, status), blocker["kind"] if blocker else None)
        if status == "completed" and self._status.counts.completed > 0:
            await self._fire(start, "on_completed", "settled")
        elif status == "failed" and blocker is not None:
            await self._fire(
                start,
                "on_failed",
                "settled",
                spec_id=blocker.get("spec_id"),
                failed_specs=blocker.get("failed_specs", []),
                blocker=blocker["message"],
                node=blocker.get("node"),
            )
        self._set_details(details.settled(status, self._status.counts, blocker))  # + hooks
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
        self._add_usage(fired.usage)

    def _show(
        self, spec: NextSpec | None, node: str | None, node_run_id: int | None = None
    ) -> None:
        """Keep the status query and the Temporal UI's current details in step."""
        self._status.spec_id = spec.spec_id if spec else None
        self._status.spec_name = spec.name if spec else None
        self._status.node = node
        self._status.node_run_id = node_run_id
        if spec is not None:
            self._set_details(
                details.running(spec, node, workflow.now(), self._status.counts, self._pending)
            )

    async def _await_node(self, handle: workflow.ActivityHandle[T]) -> tuple[T | NodeResult, bool]:
        """The node activity's value, or the result its error amounts to; and whether a
        ``stop`` or ``reset`` came meanwhile (the node is cancelled then)."""
        await workflow.wait_condition(
            lambda: handle.done() or self._stop_requested or self._reset_requested
        )
        stopping = self._stop_requested or self._reset_requested
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
        self._stop_requested = False
        return result.model_copy(update={"status": "interrupted"})

    async def _run_node(
        self,
        start: RunInput,
        spec: NextSpec,
        step: NodeStep,
        visit: int,
        resume_session_id: str | None,
        member: int | None,
    ) -> NodeResult:
        """Launch one node run and record it (stoppable by signal)."""
        raise NotImplementedError

    async def _store(self, call: Callable[[Any, Request], Answer], request: Request) -> Answer:
        """What the store call ``call`` (a method of :class:`RunControl` or
        :class:`RunRecords`) answers to ``request``."""
        raise NotImplementedError

    def _mark(self, start: RunInput, state: RunState, blocker_kind: str | None) -> None:
        """Keep the run's ``CanopyStatus`` and ``CanopyBlocker`` current, for list
        filters in the Temporal UI and CLI."""


def node_activity_timeout(step: NodeStep) -> timedelta:
    """The node activity's deadline: the node's own timeout (clamped here too: a timedelta
    of an absurd float raises, failing every task), plus a minute to report."""
    minutes = node_timeout_minutes(step.timeout_minutes) or DEFAULT_NODE_TIMEOUT_MINUTES
    return timedelta(minutes=minutes + 1)


def continue_as_new_due(start: RunInput, specs_this_execution: int) -> bool:
    """Whether the execution continues as new after ``specs_this_execution`` specs."""
    return (
        specs_this_execution >= start.specs_per_execution
        or workflow.info().is_continue_as_new_suggested()
    )


def where_next(step: NodeStep, result: NodeResult) -> SpecEnd | str:
    """After a node ran: how the spec's passage ends there, or the name of the node it goes
    on to (``next`` on success, ``on_failure`` on failure). An interrupted or limited node
    hands its harness session over, so the spec can resume it."""
    produced = (
        HarnessSession(result.harness_session_id, result.platform)
        if result.harness_session_id and result.platform
        else None
    )
    if result.status == "interrupted":
        return SpecEnd("interrupted", step.name, produced)
    if result.status == "limit_blocked":
        return SpecEnd(
            "limit_blocked", step.name, produced, result.limit_reset_at, limit=result.error
        )
    if result.status == "succeeded":
        return step.next_node if step.next_node is not None else SpecEnd("completed", step.name)
    return step.on_failure if step.on_failure is not None else SpecEnd("failed", step.name)
