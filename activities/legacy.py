"""Activities with the signatures runs started by older code use: the legacy ``GraphRun``
(v1) and ``SessionDelivery`` before its failures took a model.

Runs started before ``GraphRunV2`` still drain on the main task queue, and their
histories (and any activity task scheduled when a worker stopped) carry these
activities' arguments positionally. So they keep their names and parameter lists, frozen,
and each one only unpacks its arguments into the request model of the same store call in
:class:`~canopy.activities.run_state.RunControl` or
:class:`~canopy.activities.bookkeeping.RunRecords`: a shared call's parameters are that
model's fields, in order, which is how ``GraphRun`` sends a shared call
(``tests/test_activity_contracts.py`` holds them to it). The v1-only calls (a passage and
a node run opened and closed one activity at a time) read the store here.

:class:`LegacyRunRecords` goes with ``canopy/workflows/graph_run_v1.py`` once no run of
that type is left; :class:`LegacyDelivery` once no ``SessionDelivery`` started before
the ``typed-delivery-failure`` patch is.
"""

from datetime import datetime
from typing import Any

from temporalio import activity

from canopy.activities import bookkeeping
from canopy.activities.bookkeeping import RunRecords
from canopy.activities.delivery import DeliveryActivities
from canopy.activities.run_state import RunControl
from canopy.contracts.graph_run import (
    DirectedSpec,
    GraphRef,
    GroupSessionQuery,
    NextSpec,
    NodeResult,
    NodeStep,
    ResumeSchedule,
    RunCounts,
    RunPause,
    RunRef,
    RunSettlement,
)
from canopy.contracts.session_delivery import DeliveryFailure
from canopy.store.engine import Store
from canopy.store.models import Graph, Run, RunSpec


class LegacyRunRecords:
    """Every store activity ``GraphRun`` v1 calls, bound to the store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._records = RunRecords(store)
        self._control = RunControl(store)

    # --- v1 only: one activity per step of a passage ---------------------------------

    @activity.defn
    def next_spec(self, run_id: str) -> NextSpec | None:
        """The next pending spec (:func:`~canopy.activities.bookkeeping.next_pending`)."""
        with self._store.transaction() as db:
            return bookkeeping.next_pending(db, run_id)

    @activity.defn
    def begin_spec(self, run_id: str, spec: NextSpec) -> int | None:
        """Claim the spec and open its passage (:func:`~canopy.activities.bookkeeping.claim`)."""
        with self._store.transaction() as db:
            return bookkeeping.claim(db, run_id, spec)

    @activity.defn
    def load_node(self, graph_id: str, node_name: str | None) -> NodeStep | None:
        """A node as stored now (:func:`~canopy.activities.bookkeeping.load_step`)."""
        with self._store.transaction() as db:
            return bookkeeping.load_step(db.get_one(Graph, graph_id), node_name)

    @activity.defn
    def start_node_run(self, run_id: str, spec_id: str, node: str, visit: int) -> int:
        """Record a node launch before it happens, keyed by this workflow execution and
        activity (which a retry keeps), so a retried attempt finds its own record."""
        info = activity.info()
        key = f"{info.workflow_run_id}/{info.activity_id}"
        with self._store.transaction() as db:
            recorded = bookkeeping.recorded_launch(db, key)
            return recorded or bookkeeping.record_launch(db, key, run_id, spec_id, node, visit)

    @activity.defn
    def finish_node_run(self, node_run_id: int, result: NodeResult) -> None:
        """Record how a node run ended."""
        self._records.record_node_end(node_run_id, result)

    @activity.defn
    def finish_spec(self, passage_id: int, outcome: str, ended_node: str | None) -> bool:
        """Close a spec's passage; whether the graph has ``on_spec_completed`` hooks now."""
        with self._store.transaction() as db:
            passage = db.get_one(RunSpec, passage_id)
            bookkeeping.close_passage(db, passage, outcome, ended_node)
            graph = db.get_one(Graph, db.get_one(Run, passage.run_id).graph_id)
            return bookkeeping.has_spec_completed_hooks(graph)

    # --- shared with GraphRunV2: the arguments of its request models, positionally ----

    @activity.defn
    def settle_run(
        self, run_id: str, status: str, blocker: dict[str, Any] | None, counts: RunCounts
    ) -> None:
        """:meth:`RunRecords.settle_run`."""
        settlement = RunSettlement(run_id=run_id, status=status, blocker=blocker, counts=counts)
        self._records.settle_run(settlement)

    @activity.defn
    def queue_settlement(self, run_id: str) -> dict[str, Any] | None:
        """:meth:`RunRecords.queue_settlement`."""
        return self._records.queue_settlement(RunRef(run_id=run_id))

    @activity.defn
    def pause_run(self, run_id: str, blocker: dict[str, Any]) -> None:
        """:meth:`RunControl.pause_run`."""
        self._control.pause_run(RunPause(run_id=run_id, blocker=blocker))

    @activity.defn
    def resume_run(self, run_id: str) -> None:
        """:meth:`RunControl.resume_run`."""
        self._control.resume_run(RunRef(run_id=run_id))

    @activity.defn
    def schedule_resume(self, run_id: str, resume_at: datetime | None) -> None:
        """:meth:`RunControl.schedule_resume`."""
        self._control.schedule_resume(ResumeSchedule(run_id=run_id, resume_at=resume_at))

    @activity.defn
    def reset_run(self, run_id: str) -> None:
        """:meth:`RunControl.reset_run`."""
        self._control.reset_run(RunRef(run_id=run_id))

    @activity.defn
    def allows_dirty_start(self, graph_id: str) -> bool:
        """:meth:`RunControl.allows_dirty_start`."""
        return self._control.allows_dirty_start(GraphRef(graph_id=graph_id))

    @activity.defn
    def spec_for_run(self, run_id: str, spec_id: str) -> NextSpec:
        """:meth:`RunControl.spec_for_run`."""
        return self._control.spec_for_run(DirectedSpec(run_id=run_id, spec_id=spec_id))

    @activity.defn
    def group_session(self, run_id: str, group: str, node: str, platform: str) -> str | None:
        """:meth:`RunControl.group_session`."""
        query = GroupSessionQuery(run_id=run_id, group=group, node=node, platform=platform)
        return self._control.group_session(query)


class LegacyDelivery:
    """The delivery failure record as ``SessionDelivery`` called it before it sent a
    :class:`DeliveryFailure` (``give_up_message``, two positional arguments)."""

    def __init__(self, store: Store) -> None:
        self._delivery = DeliveryActivities(store)

    @activity.defn
    def give_up_message(self, message_id: str, error: str) -> None:
        """:meth:`DeliveryActivities.fail_delivery`."""
        self._delivery.fail_delivery(DeliveryFailure(message_id=message_id, error=error))
