"""Store writes for run control: pausing with a blocker, resuming, usage-limit waits,
reset, and the facts the workflow needs to steer (dirty-start policy, warm sessions)."""

from typing import Any

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
from canopy.contracts.graph_run_blocker import blocker_json
from canopy.ops.notifications import notify
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.engine import Store
from canopy.store.graph_reset import reset_graph_record
from canopy.store.run_records import IGNORED_SIGNALS, run_record, set_run_status
from canopy.timefmt import to_iso


class RunControl:
    """The run-control store writes, as activities bound to the store: ``GraphRunV2``
    runs them as local activities."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def _set_status(self, run_id: str, status: str, blocker: dict[str, Any] | None) -> None:
        with self._store.transaction() as rows:
            set_run_status(rows, run_id, status, blocker)

    @activity.defn
    def pause_run(self, pause: RunPause) -> None:
        """Run and graph ``paused`` with the blocker stored on the graph (not failed)."""
        self._set_status(pause.run_id, "paused", blocker_json(pause.blocker))

    @activity.defn
    def resume_run(self, request: RunRef) -> None:
        """Run and graph back to ``running``; a resume clears the blocker."""
        self._set_status(request.run_id, "running", None)

    @activity.defn
    def schedule_resume(self, schedule: ResumeSchedule) -> None:
        """Record (or clear, ``None``) when a usage-limit wait ends, for ``graph info``."""
        with self._store.transaction() as rows:
            rows(
                "UPDATE runs SET scheduled_resume_at = :at WHERE id = :id",
                {"at": schedule.resume_at, "id": schedule.run_id},
            )

    @activity.defn
    def reset_run(self, request: RunRef) -> None:
        """End the run as ``reset``: graph ``idle``, blocker cleared, bound specs reopened.

        Only while the run is still active: once the graph is idle the next run may start
        (while this workflow closes), and a retried attempt must not reset that run too.
        """
        with self._store.transaction() as rows:
            run = run_record(rows, request.run_id)
            if run["status"] in ACTIVE_RUN_STATUSES:
                reset_graph_record(rows, run["graph_id"])

    @activity.defn
    def allows_dirty_start(self, request: GraphRef) -> bool:
        """The graph's ``allow_dirty_start``, read fresh (it may be edited while paused)."""
        with self._store.transaction() as rows:
            (graph,) = rows(
                "SELECT allow_dirty_start FROM graphs WHERE id = :id", {"id": request.graph_id}
            )
        return bool(graph["allow_dirty_start"])

    @activity.defn
    def spec_for_run(self, request: DirectedSpec) -> NextSpec:
        """A directed start's spec with its queue group (``continue --spec``)."""
        with self._store.transaction() as rows:
            run = run_record(rows, request.run_id)
            (spec,) = rows("SELECT id, name FROM specs WHERE id = :id", {"id": request.spec_id})
            group = None
            if run["queue_id"] is not None:
                member = rows(
                    "SELECT group_name FROM queue_members"
                    " WHERE queue_id = :queue_id AND spec_id = :spec_id",
                    {"queue_id": run["queue_id"], "spec_id": request.spec_id},
                )
                group = member[0]["group_name"] if member else None
            return NextSpec(spec_id=spec["id"], name=spec["name"], group=group)

    @activity.defn
    def group_session(self, query: GroupSessionQuery) -> str | None:
        """The harness session node ``node`` captured for the group's latest completed sibling.

        Grouped queue members share a warm session: only siblings whose
        passage *completed* count, so a failed sibling's session is never reused; and only
        sessions of ``platform``, the only harness that can resume them.
        """
        with self._store.transaction() as rows:
            queue_id = run_record(rows, query.run_id)["queue_id"]
            same_queue = "r.queue_id IS NULL" if queue_id is None else "r.queue_id = :queue_id"
            found = rows(
                "SELECT n.harness_session_id FROM node_runs n"
                " JOIN run_specs p ON p.run_id = n.run_id AND p.spec_id = n.spec_id"
                f" JOIN runs r ON r.id = p.run_id WHERE {same_queue}"
                " AND p.group_name = :group AND p.outcome = 'completed' AND n.node = :node"
                " AND n.platform = :platform AND n.status = 'succeeded'"
                " AND n.harness_session_id IS NOT NULL"
                " ORDER BY p.ended_at DESC, n.id DESC LIMIT 1",
                {
                    "queue_id": queue_id,
                    "group": query.group,
                    "node": query.node,
                    "platform": query.platform,
                },
            )
        return found[0]["harness_session_id"] if found else None

    @activity.defn
    def record_ignored_signal(self, ignored: IgnoredSignalRecord) -> None:
        """Keep a signal the run ignored where the user looks: in the run's summary
        (``ignored_signals``, in ``graph info`` and ``graph get``) and as a notification.
        A retried attempt finds its entry and writes nothing more."""
        entry = {"signal": ignored.signal, "reason": ignored.reason, "at": to_iso(ignored.at)}
        with self._store.transaction() as rows:
            run = run_record(rows, ignored.run_id)
            summary = dict(run["summary"] or {})
            kept = list(summary.get(IGNORED_SIGNALS, []))
            if entry in kept:
                return
            summary[IGNORED_SIGNALS] = [*kept, entry]
            rows(
                "UPDATE runs SET summary = :summary WHERE id = :id",
                {"summary": summary, "id": run["id"]},
            )
            (graph,) = rows("SELECT name FROM graphs WHERE id = :id", {"id": run["graph_id"]})
            what = f"run {run['id']} ignored signal {ignored.signal}: {ignored.reason}"
            notify(rows, "signal_ignored", f"graph {graph['name']}: {what}")
