"""A run of lanes: up to N specs at once, each in a git worktree of its own, integrated
into the target branch one at a time, in the order they started (docs/lanes.md).

``GraphRunV2`` hands a run whose input asks for more than one lane to :class:`LaneDrain`;
a run of one lane never comes here, so its history is the one it always had. Each spec
in flight is a :class:`Flight`: an asyncio task of this workflow execution that opens
the spec's lane (an activity on the workdir's host), walks its nodes there with
:func:`~canopy.workflows.walk.walk`, as the sequential loop does, and waits out usage
limits on a durable timer. The drain starts flights while lanes are free, takes in the
walks that ended, integrates the completed ones in order, and parks the run on what it
cannot get past (a conflict, a dirty tree, a budget, a ``stop``, a ``pause``) with the
run's own parking and continuing. So steering, hooks, records and settling are the
sequential run's, and what is new here is the order of things.
"""

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol, cast

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from canopy.activities.lanes import (
        close_lane_worktree,
        integrate_lane_branch,
        open_lane_worktree,
    )
    from canopy.budget import BudgetState
    from canopy.contracts.graph_run import (
        Ahead,
        NextSpec,
        NodeStep,
        RunInput,
        SpecClosed,
        SpecOutcome,
    )
    from canopy.contracts.graph_run_blocker import Blocker
    from canopy.contracts.lanes import LaneIntegration, LaneRef
    from canopy.lanes import Closed, Integration, IntegrationMode, branch_name
    from canopy.workdir import WorktreeState
    from canopy.workflows import blockers
    from canopy.workflows.node_launch import NodeLauncher
    from canopy.workflows.progress import RunProgress
    from canopy.workflows.spec_walk import (
        BUDGET,
        TAKEN,
        HarnessSession,
        Plan,
        SpecEnd,
        continue_as_new_due,
    )
    from canopy.workflows.steering import Steering
    from canopy.workflows.timeouts import GIT_TIMEOUT
    from canopy.workflows.walk import walk

FirstStep = tuple["NodeStep | None", "BudgetState | None"]
"""The node a spec's walk starts at, and the graph's budget read with it."""
GIT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=10,
    non_retryable_error_types=["Refused"],
)
"""A lane's git work is retried (each step is idempotent) unless it was refused."""


class LaneHost(Protocol):
    """What the drain uses of the run (:class:`~canopy.workflows.graph_run.GraphRunV2`)."""

    _launcher: NodeLauncher
    _steering: Steering
    _progress: RunProgress

    async def _read_node(self, start: RunInput, spec: NextSpec, node: str) -> Ahead: ...

    async def _read_ahead(
        self,
        start: RunInput,
        spec: NextSpec | None,
        node: str | None,
        count_pending: bool = True,
        passing_over: Sequence[str] = (),
        groups_in_flight: Sequence[str] = (),
    ) -> Ahead: ...

    async def _close(
        self,
        start: RunInput,
        spec: NextSpec,
        outcome: SpecOutcome,
        node: str | None,
        read_ahead: bool,
        lane: Closed | None = None,
    ) -> SpecClosed: ...

    async def _park(self, start: RunInput, blocker: Blocker) -> None: ...

    async def _wait_for_continue(
        self,
        start: RunInput,
        upcoming: NextSpec,
        node: str | None,
        harness_session: HarnessSession | None = None,
    ) -> Plan: ...

    async def _wait_out_limit(self, start: RunInput, resume_at: Any, limit: str | None) -> bool: ...

    async def _fire_spec_completed(
        self, start: RunInput, spec: NextSpec, passage_id: int | None
    ) -> None: ...

    async def _pause_for_budget(self, start: RunInput, spec: NextSpec, end: SpecEnd) -> Plan: ...

    async def _end_execution(self) -> None: ...

    async def _settle_drained(self, start: RunInput) -> str: ...

    async def _settle(self, start: RunInput, status: str, blocker: Blocker | None) -> str: ...


@dataclass
class Flight:
    """One spec in flight: its place in the integration order, its lane, its walk and,
    once the walk is taken in, how it ended."""

    seq: int
    spec: NextSpec
    lane: LaneRef
    walk: "asyncio.Task[SpecEnd]"
    end: SpecEnd | None = None
    resolving: bool = False
    """Whether the spec was sent to the graph's conflict resolver (it is, once)."""


class LaneDrain:
    """The lanes loop of one workflow execution."""

    def __init__(self, host: LaneHost, start: RunInput) -> None:
        self._host = host
        self._start = start
        self._flights: dict[int, Flight] = {}
        self._seq = 0
        self._lanes_started = start.lanes_started
        self._capacity = start.lanes
        self._integration: IntegrationMode = "rebase"
        """The graph's ``integration`` as read at the latest spec start."""
        self._resolver: str | None = None
        """The graph's ``conflict_resolver`` as read at the latest spec start."""
        self._group_lanes: dict[str, str] = {}
        """Each context group's lane id: its members run one after another at one path."""
        self._directed: Plan | None = None
        """A spec ``continue --mode run_from_node`` named, started before any other."""
        self._failed: tuple[NextSpec, str | None] | None = None
        """A bound-spec run's first failed spec: no new starts, then it settles failed."""
        self._interrupted: list[tuple[NextSpec, str | None]] = []
        self._over_budget: tuple[NextSpec, SpecEnd] | None = None
        """The first spec whose next node the budget kept back: no new starts, then the
        run parks on it."""
        self._started_this_execution = 0
        """Specs this execution started: it starts at most ``specs_per_execution``, then
        continues as new once they are done."""
        host._progress.lanes(self._capacity)

    async def run(self) -> str | None:
        """Drain the run's specs through its lanes; how it settled, or ``None`` on a reset
        (every lane removed, for the run to reset)."""
        steering = self._host._steering
        while True:
            if steering.reset_requested:
                await self._end_every_walk()
                return None
            if steering.stop_requested:
                await self._stopped()
                continue
            await self._take_in()
            if await self._integrate():
                continue
            if not self._holding():
                await self._start_free_lanes()
            if not self._flights:
                settled = await self._idle()
                if settled is not None:
                    return settled
                continue
            await workflow.wait_condition(self._news)

    def _news(self) -> bool:
        """Something for the loop: a walk ended, or a stop or reset came."""
        steering = self._host._steering
        ended = any(f.walk.done() and f.end is None for f in self._flights.values())
        return ended or steering.stop_requested or steering.reset_requested

    def _holding(self) -> bool:
        """Whether no new spec may start now: a pause asked for, a bound-spec run that
        failed, or this execution due to continue as new."""
        return (
            self._host._steering.pause_requested
            or self._failed is not None
            or self._over_budget is not None
            or continue_as_new_due(self._start, self._started_this_execution)
        )

    async def _idle(self) -> str | None:
        """Nothing in flight: settle, park on a pause, or continue as new; ``None`` when
        the loop goes on."""
        start, host = self._start, self._host
        if self._failed is not None:
            spec, node = self._failed
            return await host._settle(start, "failed", blockers.spec_failed(spec, node))
        if self._over_budget is not None:
            spec, end = self._over_budget
            self._over_budget = None
            plan = await host._pause_for_budget(start, spec, end)
            if plan.skip and not host._steering.reset_requested:
                await self._close(spec, "skipped", None, None)
            elif plan.spec is not None:
                self._directed = plan  # at the node the budget kept back, or as directed
            return None
        directed = self._directed.spec if self._directed is not None else None
        upcoming = directed or (await host._read_ahead(start, None, None)).spec
        if upcoming is None:
            return await host._settle_drained(start)
        if host._steering.pause_requested:
            host._steering.pause_requested = False
            await host._park(start, blockers.paused(start.graph_name, upcoming))
            await self._continued(upcoming, None)
            return None
        if continue_as_new_due(start, self._started_this_execution):
            counts = host._progress.status.counts
            update = {
                "counts": counts,
                "continued": True,
                "lanes_started": self._lanes_started,
                "lanes": self._capacity,
            }
            await host._end_execution()
            workflow.continue_as_new(start.model_copy(update=update))
        return None

    async def _continued(self, spec: NextSpec, node: str | None) -> Plan:
        """Wait for ``continue_run`` after a park about ``spec``; a directed start is taken
        up (as the spec's rerun when it names ``spec``), a skip skips ``spec``."""
        plan = await self._host._wait_for_continue(self._start, spec, node)
        if plan.skip and not self._host._steering.reset_requested:
            await self._close(spec, "skipped", None, None)
        elif plan.mode == "run_from_node" and plan.spec is not None:
            self._directed = plan
        return plan

    # --- starting specs ---------------------------------------------------------------------

    async def _start_free_lanes(self) -> None:
        """Start the next specs, in queue order, while lanes are free."""
        host, start = self._host, self._start
        while len(self._flights) < self._capacity:
            directed, self._directed = self._directed, None
            flying = [flight.spec for flight in self._flights.values()]
            if directed is not None and directed.spec is not None:
                ahead = await host._read_ahead(start, directed.spec, directed.node, False)
            else:
                ahead = await host._read_ahead(
                    start,
                    None,
                    None,
                    host._progress.recount_due(),
                    [spec.spec_id for spec in flying],
                    sorted({spec.group for spec in flying if spec.group is not None}),
                )
            if ahead.spec is None:  # nothing to start (and no graph read)
                return
            self._integration, self._resolver = ahead.integration, ahead.conflict_resolver
            if not start.lanes_fixed:
                self._capacity = ahead.lanes
                host._progress.lanes(self._capacity)
            node = directed.node if directed is not None else None
            self._launch(ahead.spec, (ahead.step, ahead.budget), node, None, self._next_seq())
            self._started_this_execution += 1
            if len(self._flights) >= self._capacity or self._holding():
                return

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _launch(
        self,
        spec: NextSpec,
        first: FirstStep,
        node: str | None,
        harness_session: HarnessSession | None,
        seq: int,
    ) -> None:
        """A flight for ``spec`` at ``seq`` in the integration order: its lane (a group's
        members share one lane id, so one path), then its walk from ``step``."""
        start = self._start
        lane_id = self._group_lanes.get(spec.group) if spec.group is not None else None
        if lane_id is None:
            self._lanes_started += 1
            lane_id = f"{start.run_id}-{self._lanes_started}"
            if spec.group is not None:
                self._group_lanes[spec.group] = lane_id
        lane = LaneRef(
            graph_id=start.graph_id,
            run_id=start.run_id,
            spec_id=spec.spec_id,
            lane_id=lane_id,
            branch=branch_name(start.graph_name, spec.name, spec.spec_id, lane_id),
            workdir=start.workdir,
            target=start.target or "",
        )
        self._host._progress.lane(spec, "running", branch=lane.branch)
        walk = asyncio.create_task(self._fly(spec, lane, first, node, harness_session, seq))
        self._flights[seq] = Flight(seq, spec, lane, walk)

    async def _fly(
        self,
        spec: NextSpec,
        lane: LaneRef,
        first: FirstStep,
        node: str | None,
        harness_session: HarnessSession | None,
        seq: int,
    ) -> SpecEnd:
        """Open the spec's lane and walk its nodes there, waiting out usage limits."""
        host, start = self._host, self._start
        try:
            opened = await workflow.execute_activity(
                open_lane_worktree,
                lane,
                task_queue=start.agents_task_queue,
                start_to_close_timeout=GIT_TIMEOUT,
                retry_policy=GIT_RETRY,
                summary=f"lane for {spec.name}",
            )
        except ActivityError as error:
            workflow.logger.warning("lane for %s not opened: %s", spec.spec_id, error.cause)
            return SpecEnd("failed", node)
        self._flights[seq].lane = opened
        if not self._start.target:  # the host read it: the lanes after this one use it too
            self._start = self._start.model_copy(update={"target": opened.target})
        host._progress.lane(spec, "running", opened.tree, opened.branch)
        return await self._walk_in(spec, opened, first, node, harness_session)

    async def _walk_in(
        self,
        spec: NextSpec,
        lane: LaneRef,
        first: FirstStep,
        node: str | None,
        harness_session: HarnessSession | None,
    ) -> SpecEnd:
        """Walk the spec's nodes from ``first`` in its lane, waiting out usage limits."""
        host, start = self._host, self._start
        launcher, read = host._launcher, host._read_node
        end = await walk(launcher, read, start, spec, first, node, harness_session, lane)
        while end.outcome == "limit_blocked" and end.resume_at is not None:
            host._progress.lane(spec, "usage limit")
            if await host._wait_out_limit(start, end.resume_at, end.limit):
                return SpecEnd("interrupted", end.node)
            host._progress.lane(spec, "running")
            assert end.node is not None  # a limit is reported by the node it stopped
            ahead = await host._read_node(start, spec, end.node)
            again = (ahead.step, ahead.budget)
            end = await walk(
                launcher, read, start, spec, again, end.node, end.harness_session, lane
            )
        return end

    # --- walks that ended, and integrating ------------------------------------------------

    async def _take_in(self) -> None:
        """Take in the walks that ended, in start order: a completed one waits for its
        turn to integrate; any other is closed now, its lane removed."""
        for seq in sorted(self._flights):
            flight = self._flights[seq]
            if not flight.walk.done() or flight.end is not None:
                continue
            end = flight.walk.result()
            if flight.resolving and end.outcome == "failed":  # the resolver gave up:
                end = SpecEnd("completed", end.node)  # integrating again says what is left
            if end.outcome == "completed":
                flight.end = end
                self._host._progress.lane(flight.spec, "waiting to integrate")
                continue
            outcome: SpecOutcome | None
            if end.outcome == BUDGET:  # pending again: a launch's passage closes, as a stop's
                self._over_budget = self._over_budget or (flight.spec, end)
                outcome = "interrupted" if end.opened else None
            elif end.outcome == TAKEN:
                outcome = None
            else:
                outcome = cast(SpecOutcome, end.outcome)
            if end.outcome == "interrupted":
                self._interrupted.append((flight.spec, end.node))
            elif end.outcome == "failed" and self._start.queue_id is None:
                self._failed = self._failed or (flight.spec, end.node)
            await self._close(flight.spec, outcome, end.node, flight)

    async def _integrate(self) -> bool:
        """Integrate the completed specs at the head of the order, one at a time.
        ``True`` when the run parked on one and the loop is to look again."""
        while self._flights:
            flight = self._flights[min(self._flights)]
            if flight.end is None:
                return False
            self._host._progress.lane(flight.spec, "integrating")
            try:
                answer = await workflow.execute_activity(
                    integrate_lane_branch,
                    LaneIntegration(lane=flight.lane, mode=self._integration),
                    task_queue=self._start.agents_task_queue,
                    start_to_close_timeout=GIT_TIMEOUT,
                    retry_policy=GIT_RETRY,
                    summary=f"integrate {flight.spec.name}",
                )
            except ActivityError as error:
                workflow.logger.warning("%s not integrated: %s", flight.spec.spec_id, error.cause)
                await self._close(flight.spec, "failed", flight.end.node, flight)
                continue
            if answer.outcome == "conflict" and self._resolver and not flight.resolving:
                await self._send_to_resolver(flight, self._resolver)
                return True
            if answer.outcome == "integrated":
                await self._close(flight.spec, "completed", flight.end.node, flight)
                if not self._holding():  # the lane is free: fill it before the next lands
                    await self._start_free_lanes()
                continue
            await self._blocked(flight, answer)
            return True
        return False

    async def _send_to_resolver(self, flight: Flight, resolver: str) -> None:
        """Walk a conflicting spec again in its lane, from the graph's conflict resolver;
        it keeps its place in the order, and is integrated again once that walk ends."""
        host = self._host
        flight.resolving, flight.end = True, None
        ahead = await host._read_node(self._start, flight.spec, resolver)
        first = (ahead.step, ahead.budget)
        host._progress.lane(flight.spec, "running")
        walking = self._walk_in(flight.spec, flight.lane, first, resolver, None)
        flight.walk = asyncio.create_task(walking)

    async def _blocked(self, flight: Flight, answer: Integration) -> None:
        """Park on a spec that could not be integrated (a conflict, a dirty tree), then
        go on as ``continue`` says: integrate again, rerun the spec on the target's new
        tip (keeping its place in the order), or skip it."""
        start, spec = self._start, flight.spec
        blocker: Blocker
        if answer.outcome == "conflict":
            node = flight.end.node if flight.end is not None else None
            blocker = blockers.merge_conflict(start.graph_name, spec, flight.lane, answer, node)
        else:
            where = answer.where or start.workdir
            state = WorktreeState(dirty_paths=list(answer.paths), dirty_count=answer.count)
            blocker = blockers.dirty_tree(start.graph_name, where, state, spec)
        await self._host._park(start, blocker)
        plan = await self._host._wait_for_continue(start, spec, None)
        if self._host._steering.reset_requested:
            return
        if plan.skip:
            await self._close(spec, "skipped", None, flight)
        elif plan.mode == "run_from_node" and plan.spec is not None:
            lane = await self._remove_lane(flight.lane)
            del self._flights[flight.seq]
            if lane.kept_branch:
                workflow.logger.info("kept %s, rerunning %s", lane.kept_branch, spec.spec_id)
            ahead = await self._host._read_ahead(start, plan.spec, plan.node, False)
            assert ahead.spec is not None
            self._launch(ahead.spec, (ahead.step, ahead.budget), plan.node, None, flight.seq)

    async def _close(
        self,
        spec: NextSpec,
        outcome: SpecOutcome | None,
        node: str | None,
        flight: Flight | None,
    ) -> None:
        """A spec ended: its lane removed (its branch kept when it holds work), its
        passage closed (none for a spec another run took), counted, and for a completed
        one ``on_spec_completed`` fired."""
        lane = await self._remove_lane(flight.lane) if flight is not None else None
        if flight is not None:
            del self._flights[flight.seq]
        self._host._progress.lane_gone(spec.spec_id)
        if outcome is None:
            return
        closed = await self._host._close(self._start, spec, outcome, node, False, lane)
        if closed.taken:
            return
        counts = self._host._progress.status.counts
        if outcome in ("completed", "failed", "skipped"):
            counts.specs_started += 1
            setattr(counts, outcome, getattr(counts, outcome) + 1)
        if outcome == "completed" and closed.spec_completed_hooks:
            await self._host._fire_spec_completed(self._start, spec, closed.passage_id)

    async def _remove_lane(self, lane: LaneRef) -> Closed:
        """Remove a lane's worktree (and its branch unless it holds work)."""
        if not lane.tree:  # never opened
            return Closed(kept_branch=None)
        return await workflow.execute_activity(
            close_lane_worktree,
            lane,
            task_queue=self._start.agents_task_queue,
            start_to_close_timeout=GIT_TIMEOUT,
            retry_policy=GIT_RETRY,
            summary=f"remove lane {lane.lane_id}",
        )

    # --- stop and reset ---------------------------------------------------------------------

    async def _stopped(self) -> None:
        """A ``stop``: every lane's node is cancelled (by its launcher); once every walk
        ended, the interrupted specs are pending again, their lanes removed, and the run
        parks on the first of them until ``continue``."""
        steering = self._host._steering
        await workflow.wait_condition(lambda: all(f.walk.done() for f in self._flights.values()))
        steering.stop_requested = False
        await self._take_in()
        interrupted, self._interrupted = self._interrupted, []
        if not interrupted or steering.reset_requested:
            return
        spec, node = interrupted[0]
        await self._host._park(self._start, blockers.stopped(self._start.graph_name, spec, node))
        await self._continued(spec, node)

    async def _end_every_walk(self) -> None:
        """A ``reset``: every node is cancelled; once every walk ended, every lane is
        removed (a branch holding work is kept), for the run to reset its records."""
        flights = self._flights.values()
        await workflow.wait_condition(lambda: all(f.walk.done() for f in flights))
        for seq in sorted(self._flights):
            flight = self._flights.pop(seq)
            await self._remove_lane(flight.lane)
