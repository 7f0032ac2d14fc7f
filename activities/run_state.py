"""Store writes for run control: pausing with a blocker, resuming, usage-limit waits,
reset, and the facts the workflow needs to steer (dirty-start policy, warm sessions)."""

from typing import Any

from sqlalchemy import select
from temporalio import activity

from canopy.contracts.graph_run import (
    DirectedSpec,
    GraphRef,
    GroupSessionQuery,
    IgnoredSignalRecord,
    NextSpec,
    ResumeSchedule,
    RunPause,
    RunRef,
)
from canopy.ops.common import rows_of
from canopy.ops.notifications import notify
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.engine import Store
from canopy.store.graph_reset import reset_graph_record
from canopy.store.models import Graph, NodeRun, QueueMember, Run, RunSpec, Spec
from canopy.store.run_records import IGNORED_SIGNALS, set_run_status
from canopy.timefmt import to_iso

SAME_PASSAGE = (RunSpec.run_id == NodeRun.run_id) & (RunSpec.spec_id == NodeRun.spec_id)
"""A node run's passage: the run's passage of the node run's spec."""


class RunControl:
    """The run-control store writes, as activities bound to the store: ``GraphRunV2``
    runs them as local activities."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def _set_status(self, run_id: str, status: str, blocker: dict[str, Any] | None) -> None:
        with self._store.transaction() as db:
            set_run_status(db, run_id, status, blocker)

    @activity.defn
    def pause_run(self, pause: RunPause) -> None:
        """Run and graph ``paused`` with the blocker stored on the graph (not failed)."""
        self._set_status(pause.run_id, "paused", pause.blocker)

    @activity.defn
    def resume_run(self, request: RunRef) -> None:
        """Run and graph back to ``running``; a resume clears the blocker."""
        self._set_status(request.run_id, "running", None)

    @activity.defn
    def schedule_resume(self, schedule: ResumeSchedule) -> None:
        """Record (or clear, ``None``) when a usage-limit wait ends, for ``graph info``."""
        with self._store.transaction() as db:
            db.get_one(Run, schedule.run_id).scheduled_resume_at = schedule.resume_at

    @activity.defn
    def reset_run(self, request: RunRef) -> None:
        """End the run as ``reset``: graph ``idle``, blocker cleared, bound specs reopened.

        Only while the run is still active: once the graph is idle the next run may start
        (while this workflow closes), and a retried attempt must not reset that run too.
        """
        with self._store.transaction() as db:
            run = db.get_one(Run, request.run_id)
            if run.status in ACTIVE_RUN_STATUSES:
                reset_graph_record(rows_of(db), run.graph_id)

    @activity.defn
    def allows_dirty_start(self, request: GraphRef) -> bool:
        """The graph's ``allow_dirty_start``, read fresh (it may be edited while paused)."""
        with self._store.transaction() as db:
            return db.get_one(Graph, request.graph_id).allow_dirty_start

    @activity.defn
    def spec_for_run(self, request: DirectedSpec) -> NextSpec:
        """A directed start's spec with its queue group (``continue --spec``)."""
        with self._store.transaction() as db:
            run = db.get_one(Run, request.run_id)
            spec = db.get_one(Spec, request.spec_id)
            group = None
            if run.queue_id is not None:
                member = db.get(QueueMember, (run.queue_id, request.spec_id))
                group = member.group if member is not None else None
            return NextSpec(spec_id=spec.id, name=spec.name, group=group)

    @activity.defn
    def group_session(self, query: GroupSessionQuery) -> str | None:
        """The harness session node ``node`` captured for the group's latest completed sibling.

        Grouped queue members share a warm session (DESIGN §6.9): only siblings whose
        passage *completed* count, so a failed sibling's session is never reused; and only
        sessions of ``platform``, the only harness that can resume them.
        """
        with self._store.transaction() as db:
            queue_id = db.get_one(Run, query.run_id).queue_id
            found = db.scalar(
                select(NodeRun.harness_session_id)
                .join(
                    RunSpec,
                    (RunSpec.run_id == NodeRun.run_id) & (RunSpec.spec_id == NodeRun.spec_id),
                )
                .join(Run, Run.id == RunSpec.run_id)
                .where(
                    Run.queue_id == queue_id,
                    RunSpec.group == query.group,
                    RunSpec.outcome == "completed",
                    NodeRun.node == query.node,
                    NodeRun.platform == query.platform,
                    NodeRun.status == "succeeded",
                    NodeRun.harness_session_id.is_not(None),
                )
                .order_by(RunSpec.ended_at.desc(), NodeRun.id.desc())
                .limit(1)
            )
        return found

    @activity.defn
    def record_ignored_signal(self, ignored: IgnoredSignalRecord) -> None:
        """Keep a signal the run ignored where the user looks: in the run's summary
        (``ignored_signals``, in ``graph info`` and ``graph get``) and as a notification.
        A retried attempt finds its entry and writes nothing more."""
        entry = {"signal": ignored.signal, "reason": ignored.reason, "at": to_iso(ignored.at)}
        with self._store.transaction() as db:
            run = db.get_one(Run, ignored.run_id)
            summary = dict(run.summary or {})
            kept = list(summary.get(IGNORED_SIGNALS, []))
            if entry in kept:
                return
            summary[IGNORED_SIGNALS] = [*kept, entry]
            run.summary = summary
            graph = db.get_one(Graph, run.graph_id)
            what = f"run {run.id} ignored signal {ignored.signal}: {ignored.reason}"
            notify(db, "signal_ignored", f"graph {graph.name}: {what}")
