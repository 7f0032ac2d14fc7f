"""What a graph run shows of itself while it runs: the ``status`` query's answer, its
current details in the Temporal UI and its ``CanopyStatus`` and ``CanopyBlocker`` search
attributes, with the running totals they carry (specs pending, usage, denials).

The workflow (:mod:`canopy.workflows.graph_run`) tells :class:`RunProgress` what happens;
the text of the details comes from :mod:`canopy.workflows.details`.
"""

from datetime import datetime

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from canopy.contracts.graph_run import (
        RUN_SEARCH_ATTRIBUTES,
        Ahead,
        HarnessUsage,
        IgnoredSignalRecord,
        LaneStatus,
        NextSpec,
        NodeResult,
        RunInput,
        RunState,
        RunStatus,
    )
    from canopy.workflows import details
    from canopy.workflows.timeouts import PENDING_RECOUNT

STATUS_KEY, BLOCKER_KEY = (SearchAttributeKey.for_keyword(name) for name in RUN_SEARCH_ATTRIBUTES)


class RunProgress:
    """The run's status, details and search attributes, kept in step."""

    def __init__(self) -> None:
        self.status = RunStatus(run_id="")
        """The ``status`` query's answer: current spec and node, scheduled resume, counts."""
        self._attributes = False
        """Whether the server has the status search attributes (``start.status_attributes``)."""
        self._marked: tuple[RunState, str | None] = ("running", None)
        """The search attributes as last set (a start sets ``running``; continue-as-new
        carries them over)."""
        self._details = ""
        self._last_ignored: IgnoredSignalRecord | None = None
        self._pending: int | None = None
        """Specs still pending in the run's scope, as last read (for the details)."""
        self._counted_at: datetime | None = None
        """When the pending specs were last counted (see :data:`PENDING_RECOUNT`)."""
        self._lanes: dict[str, LaneStatus] | None = None
        """A run of lanes: each spec in flight, by id, in the order they started."""
        self._capacity = 1

    def start(self, start: RunInput) -> None:
        """Begin this execution with the counts the previous one carried over."""
        self.status = RunStatus(run_id=start.run_id, counts=start.counts.model_copy())
        self._attributes = start.status_attributes

    def show(self, spec: NextSpec | None, node: str | None) -> None:
        """The spec and node in progress (``None``: between them); in a run of lanes, the
        node of that spec's lane."""
        if self._lanes is not None:
            lane = self._lanes.get(spec.spec_id) if spec is not None else None
            if lane is not None and lane.node != node:
                lane.node, lane.since = node, workflow.now()
            self._show_lanes()
            return
        self.status.spec_id = spec.spec_id if spec else None
        self.status.spec_name = spec.name if spec else None
        self.status.node = node
        if spec is not None:
            self.set_details(
                details.running(spec, node, workflow.now(), self.status.counts, self._pending)
            )

    def lanes(self, capacity: int) -> None:
        """Show lanes from now on: up to ``capacity`` specs in flight at once."""
        if self._lanes is None:
            self._lanes = {}
        self._capacity = capacity

    def lane(
        self,
        spec: NextSpec,
        state: str,
        worktree: str | None = None,
        branch: str | None = None,
    ) -> None:
        """A spec in flight in a lane, in ``state`` (see :class:`LaneStatus`)."""
        assert self._lanes is not None
        known = self._lanes.get(spec.spec_id)
        if known is None:
            known = LaneStatus(spec_id=spec.spec_id, spec_name=spec.name, since=workflow.now())
            self._lanes[spec.spec_id] = known
        known.state = state  # type: ignore[assignment]  # one of LaneStatus's states
        known.worktree, known.branch = worktree or known.worktree, branch or known.branch
        if state != "running":
            known.node, known.since = None, workflow.now()
        self._show_lanes()

    def lane_gone(self, spec_id: str) -> None:
        """A spec no longer in flight (integrated, skipped, failed, stopped)."""
        assert self._lanes is not None
        self._lanes.pop(spec_id, None)
        self._show_lanes()

    def _show_lanes(self) -> None:
        assert self._lanes is not None
        self.status.lanes = list(self._lanes.values())
        self.set_details(
            details.lanes(self.status.lanes, self._capacity, self.status.counts, self._pending)
        )

    def set_details(self, text: str) -> None:
        """The run's current details in the Temporal UI, with the last ignored signal."""
        self._details = text
        if self._last_ignored is not None:
            text += details.ignored(self._last_ignored)
        workflow.set_current_details(text)

    def ignored(self, record: IgnoredSignalRecord) -> None:
        """Show a signal the run ignored, under the current details."""
        self._last_ignored = record
        self.set_details(self._details)

    def mark(self, state: RunState, blocker_kind: str | None) -> None:
        """Upsert ``CanopyStatus`` and ``CanopyBlocker`` when they change, if the server
        has them: list filters in the Temporal UI and CLI read them."""
        if not self._attributes or self._marked == (state, blocker_kind):
            return
        self._marked = (state, blocker_kind)
        workflow.upsert_search_attributes(
            [
                STATUS_KEY.value_set(state),
                BLOCKER_KEY.value_set(blocker_kind) if blocker_kind else BLOCKER_KEY.value_unset(),
            ]
        )

    def recount_due(self) -> bool:
        """Whether the pending specs are to be counted again (see :data:`PENDING_RECOUNT`)."""
        return self._counted_at is None or workflow.now() - self._counted_at >= PENDING_RECOUNT

    def keep_pending(self, ahead: Ahead, closed_one: bool = False) -> None:
        """Keep the pending count the details show: as counted, else as it was (less the
        spec just closed, which was pending when last counted)."""
        if ahead.pending is not None:
            self._pending, self._counted_at = ahead.pending, workflow.now()
        elif ahead.spec is None:
            self._pending = 0
        elif closed_one and self._pending is not None:
            self._pending = max(self._pending - 1, 1)

    def counted(self, result: NodeResult) -> NodeResult:
        """``result``, its usage and permission denials added to the run's running totals."""
        self.add_usage(result.usage)
        if result.denial_count:
            counts = self.status.counts
            counts.denials += result.denial_count
            counts.last_denial = (result.denials or [counts.last_denial or ""])[-1] or None
        return result

    def add_usage(self, usage: HarnessUsage | None) -> None:
        """Add what a harness reported it used to the run's running total."""
        if usage is not None:
            self.status.counts.usage = usage.plus(self.status.counts.usage)
