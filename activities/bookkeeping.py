"""The store records of a graph run: spec passages, node runs and settling.

Every write a run makes to the readable record goes through an activity, so the workflow
stays deterministic and a retried activity finds its earlier write instead of doubling it
where that matters (spec passages, launches, settling). :class:`RunRecords` holds the
activities ``GraphRunV2`` calls, bound to the store they write.

Runs of different graphs may drain queues that share specs. A spec is claimed with a
compare-and-set when its passage opens, so one run at a time has it; the others pass it
over, and at settle time a spec another active run holds is named, never blamed.
"""

from collections.abc import Callable
from itertools import takewhile
from typing import Any, cast

from sqlalchemy import CursorResult, Select, func, null, select, update
from sqlalchemy.orm import Session
from temporalio import activity

from canopy.activities.ledger import record_usage
from canopy.contracts.graph_run import (
    Ahead,
    DispatchOutcome,
    LaunchEnd,
    NextSpec,
    NodeDispatch,
    NodeLaunch,
    NodeResult,
    NodeStep,
    ReadAhead,
    RunRef,
    RunSettlement,
    SpecClose,
    SpecClosed,
    node_timeout_minutes,
)
from canopy.graphs.nodemodels import EnsembleNode, stored_node
from canopy.graphs.transitions import default_next
from canopy.limits import DEFAULT_MAX_VISITS
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.engine import Store
from canopy.store.models import Graph, GraphSpec, NodeRun, QueueMember, Run, RunSpec, Spec
from canopy.store.run_records import IGNORED_SIGNALS, set_run_status
from canopy.temporal.client import this_host
from canopy.timefmt import utcnow
from canopy.workdir import WorktreeState


def _pending_count(db: Session, run_id: str) -> int:
    """How many specs of the run's scope (queue members, else bound specs) are pending."""
    run = db.get_one(Run, run_id)
    scope = _scope_query(run)
    return (
        db.scalar(
            select(func.count())
            .select_from(Spec)
            .where(Spec.id.in_(scope), Spec.status == "pending")
        )
        or 0
    )


def _next_pending(db: Session, run_id: str) -> NextSpec | None:
    """The next pending spec: queue members in queue order, else bound specs in order.

    Read fresh before every spec, so a reorder or an added member during the run counts.
    """
    row = db.execute(next_pending_query(db, run_id)).first()
    if row is None:
        return None
    return NextSpec(spec_id=row[0], name=row[1], group=row[2])


def next_pending_query(db: Session, run_id: str) -> Select[str, str, str | None]:
    """The query :func:`_next_pending` runs: its id, name and queue group."""
    run = db.get_one(Run, run_id)
    if run.queue_id is not None:
        query = (
            select(Spec.id, Spec.name, QueueMember.group)
            .join(QueueMember, QueueMember.spec_id == Spec.id)
            .where(QueueMember.queue_id == run.queue_id, Spec.status == "pending")
            .order_by(QueueMember.position)
        )
    else:
        query = (
            select(Spec.id, Spec.name, null())
            .join(GraphSpec, GraphSpec.spec_id == Spec.id)
            .where(GraphSpec.graph_id == run.graph_id, Spec.status == "pending")
            .order_by(GraphSpec.position)
        )
    return query.limit(1)


def _claim(db: Session, run_id: str, spec: NextSpec) -> int | None:
    """Claim the spec for this run and open its passage; ``None`` if the run did not get it.

    The claim is a compare-and-set (``pending`` to ``in_progress``): of two runs reaching
    for one spec at once, exactly one gets it, and the other passes it over. A retried
    attempt finds the passage its first attempt opened.
    """
    open_passage = _open_passage(db, run_id, spec.spec_id)
    if open_passage is not None:
        return open_passage
    claim = update(Spec).where(Spec.id == spec.spec_id, Spec.status == "pending")
    claimed = cast(CursorResult[Any], db.execute(claim.values(status="in_progress")))
    if claimed.rowcount != 1:
        return None
    passage = RunSpec(run_id=run_id, spec_id=spec.spec_id, group=spec.group, started_at=utcnow())
    db.add(passage)
    db.flush()
    return passage.id


def _open_passage(db: Session, run_id: str, spec_id: str) -> int | None:
    return db.scalar(
        select(RunSpec.id).where(
            RunSpec.run_id == run_id, RunSpec.spec_id == spec_id, RunSpec.outcome.is_(None)
        )
    )


def load_step(graph: Graph, node_name: str | None) -> NodeStep | None:
    """A node as stored now (``None``: the first node), transitions resolved.

    Nodes are read at each dispatch, so a ``graph edit`` during a run takes effect at the
    next node launch. ``None`` is returned when the named node no longer exists. An absurd
    stored timeout is clamped (:func:`node_timeout_minutes`) in the definition too, since
    the node's activity reads its process timeout from there.
    """
    stored: list[dict[str, Any]] = list(graph.nodes)
    ensembles: dict[str, Any] = dict(graph.ensembles)
    nodes = [stored_node(_clamped_timeout(node)) for node in stored]
    names = [node.name for node in nodes]
    if not nodes or (node_name is not None and node_name not in names):
        return None
    index = 0 if node_name is None else names.index(node_name)
    node = nodes[index]
    members = ensembles.get(node.ensemble, []) if isinstance(node, EnsembleNode) else []
    return NodeStep(
        name=node.name,
        definition=node,
        ensemble_members=members,
        next_node=node.next or default_next(stored, index),
        on_failure=node.on_failure,
        max_visits=node.max_visits or DEFAULT_MAX_VISITS,
        timeout_minutes=node.timeout_minutes,
    )


def _clamped_timeout(node: dict[str, Any]) -> dict[str, Any]:
    """A stored node with its ``timeout_minutes`` as the engine may use it."""
    timeout = node_timeout_minutes(node.get("timeout_minutes"))
    return {**node, "timeout_minutes": timeout}


def _recorded_launch(db: Session, key: str) -> int | None:
    """The node run an earlier attempt of launch ``key`` recorded."""
    return db.scalar(select(NodeRun.id).where(NodeRun.launch_key == key))


def _record_launch(
    db: Session,
    key: str,
    run_id: str,
    spec_id: str,
    node: str,
    visit: int,
    *,
    platform: str | None,
    host: str,
) -> int:
    """A new node run, ``running`` from now; its id. ``platform`` and ``host`` are
    recorded from the start, so the output of a node still running is read as its
    harness prints it (``graph logs``), from the machine that has it."""
    node_run = NodeRun(
        launch_key=key,
        run_id=run_id,
        spec_id=spec_id,
        node=node,
        visit=visit,
        platform=platform,
        host=host,
        status="running",
        started_at=utcnow(),
    )
    db.add(node_run)
    db.flush()
    return node_run.id


def _launched_platform(dispatch: NodeDispatch) -> str | None:
    """The platform a launch runs: an agent node's, or the chosen ensemble member's; none
    for a command node."""
    try:
        return dispatch.agent().platform
    except ValueError:  # a command node launches no agent
        return None


def _record_end(node_run: NodeRun, result: NodeResult) -> None:
    node_run.status = result.status
    node_run.exit_code = result.exit_code
    node_run.log_path = result.log_path
    node_run.harness_session_id = result.harness_session_id
    node_run.platform = result.platform
    node_run.host = result.host
    node_run.error = result.error
    node_run.denial_count = result.denial_count
    node_run.denials = result.denials
    record_usage(node_run, result.usage)
    node_run.ended_at = utcnow()


RATE_LIMIT_STREAK_READ = 8
"""Node runs read back for :meth:`RunRecords.limit_streak`: the backoff stops growing
at an hour, well before."""

FINAL_OUTCOMES = ("completed", "failed", "skipped")
"""Outcomes that end a spec for good; it is also its status. Any other goes back to
``pending``."""


def _close_passage(db: Session, passage: RunSpec, outcome: str, ended_node: str | None) -> None:
    """Close ``passage`` and set its spec's status from the outcome."""
    passage.outcome = outcome
    passage.ended_node = ended_node
    passage.ended_at = utcnow()
    db.get_one(Spec, passage.spec_id).status = outcome if outcome in FINAL_OUTCOMES else "pending"


def _has_spec_completed_hooks(graph: Graph) -> bool:
    return bool((graph.hooks or {}).get("on_spec_completed"))


def _ended_node(db: Session, spec_id: str) -> str | None:
    """The node at which the spec's latest failed passage ended."""
    return db.scalar(
        select(RunSpec.ended_node)
        .where(RunSpec.spec_id == spec_id, RunSpec.outcome == "failed")
        .order_by(RunSpec.id.desc())
        .limit(1)
    )


def _scope(db: Session, run: Run) -> list[str]:
    """The specs a run drains: its queue's members, else its graph's bound specs."""
    return list(db.scalars(_scope_query(run)))


def _scope_query(run: Run) -> Select[str]:
    if run.queue_id is not None:
        return select(QueueMember.spec_id).where(QueueMember.queue_id == run.queue_id)
    return select(GraphSpec.spec_id).where(GraphSpec.graph_id == run.graph_id)


def _held_elsewhere(db: Session, run: Run, spec_ids: list[str]) -> dict[str, str]:
    """Which of ``spec_ids`` another active run holds (an open passage), each with the line
    that says so: ``spec alpha (spec-…) is being run by run-… of graph build``."""
    rows = db.execute(
        select(RunSpec.spec_id, Spec.name, Run.id, Graph.name)
        .join(Run, Run.id == RunSpec.run_id)
        .join(Graph, Graph.id == Run.graph_id)
        .join(Spec, Spec.id == RunSpec.spec_id)
        .where(
            RunSpec.spec_id.in_(spec_ids),
            RunSpec.outcome.is_(None),
            Run.id != run.id,
            Run.status.in_(ACTIVE_RUN_STATUSES),
        )
        .order_by(RunSpec.id)
    )
    return {
        spec_id: f"spec {name} ({spec_id}) is being run by {holder} of graph {graph}"
        for spec_id, name, holder, graph in rows
    }


def _ahead(
    db: Session,
    run_id: str,
    graph_id: str,
    spec: NextSpec | None,
    node: str | None,
    count_pending: bool,
) -> Ahead:
    upcoming = spec or _next_pending(db, run_id)
    if upcoming is None:
        return Ahead(pending=0)
    graph = db.get_one(Graph, graph_id)
    return Ahead(
        spec=upcoming,
        step=load_step(graph, node),
        allow_dirty_start=graph.allow_dirty_start,
        pending=_pending_count(db, run_id) if count_pending else None,
    )


def _closed_passage(db: Session, request: SpecClose) -> int | None:
    """The passage of this spec an earlier attempt of the same close already closed."""
    return db.scalar(
        select(RunSpec.id)
        .where(
            RunSpec.run_id == request.run_id,
            RunSpec.spec_id == request.spec.spec_id,
            RunSpec.outcome == request.outcome,
        )
        .order_by(RunSpec.id.desc())
        .limit(1)
    )


class RunRecords:
    """GraphRunV2's store calls, as activities bound to the store they write: the
    workflow runs them as local activities (so they are registered where it runs), except
    :meth:`open_launch` and :meth:`record_node_end`, which the node activity calls
    itself (on the agents host, in the same attempt as the node)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def limit_streak(self, launch: NodeLaunch) -> int:
        """How many of this run's node runs of the spec's node, just before ``launch``'s,
        ended usage-limited: how far an API rate limit's backoff has grown."""
        with self._store.transaction() as db:
            statuses = db.scalars(
                select(NodeRun.status)
                .where(
                    NodeRun.run_id == launch.run_id,
                    NodeRun.spec_id == launch.spec_id,
                    NodeRun.node == launch.node.name,
                    NodeRun.id < launch.node_run_id,
                )
                .order_by(NodeRun.id.desc())
                .limit(RATE_LIMIT_STREAK_READ)
            )
            return sum(1 for _ in takewhile(lambda status: status == "limit_blocked", statuses))

    @activity.defn
    def read_ahead(self, request: ReadAhead) -> Ahead:
        """What runs next, read now: the spec (given, or the next pending one), the node it
        starts at (transitions resolved), and the graph's ``allow_dirty_start``."""
        with self._store.transaction() as db:
            return _ahead(
                db,
                request.run_id,
                request.graph_id,
                request.spec,
                request.node,
                request.count_pending,
            )

    @activity.defn
    def close_spec(self, request: SpecClose) -> SpecClosed:
        """Close the spec's passage, then read ahead when asked, unless ``on_spec_completed``
        hooks fire first (they may take long, and what runs next is read after them).

        A spec that ends for good (completed, failed, skipped) with no passage open is
        claimed first: a skip, a spec whose first node is gone, or a launch that failed
        before it claimed; ``taken`` if another run holds it. An interrupted or limited spec
        with no passage open was never claimed, and stays pending with nothing to close.

        Idempotent: a retried attempt finds the passage its first attempt closed (the spec
        is no longer pending, so it is not claimed again).
        """
        with self._store.transaction() as db:
            passage_id = _open_passage(db, request.run_id, request.spec.spec_id)
            if passage_id is None and request.outcome in FINAL_OUTCOMES:
                claimed = _claim(db, request.run_id, request.spec)
                passage_id = claimed or _closed_passage(db, request)
                if passage_id is None:
                    return SpecClosed(passage_id=None, taken=True)
            if passage_id is not None:
                passage = db.get_one(RunSpec, passage_id)
                if passage.outcome is None:
                    _close_passage(db, passage, request.outcome, request.ended_node)
            graph = db.get_one(Graph, request.graph_id)
            hooks = request.outcome == "completed" and _has_spec_completed_hooks(graph)
            closed = SpecClosed(passage_id=passage_id, spec_completed_hooks=hooks)
            if request.read_ahead and not hooks:
                closed.ahead = _ahead(
                    db, request.run_id, request.graph_id, None, None, request.count_pending
                )
            return closed

    @activity.defn
    def record_launch_end(self, end: LaunchEnd) -> None:
        """Record how a launch ended when its activity could not (it was cancelled by a stop,
        or failed): nothing to do if it never recorded a node run."""
        with self._store.transaction() as db:
            node_run = db.scalar(select(NodeRun).where(NodeRun.launch_key == end.launch_key))
            if node_run is not None and node_run.status == "running":
                _record_end(node_run, end.result)

    @activity.defn
    def queue_settlement(self, request: RunRef) -> dict[str, Any] | None:
        """For a drained queue run: ``None`` if every member completed, was skipped or is held
        by another active run, else the blocker naming the members that did not complete
        (DESIGN §6.6). A member another run holds is not this run's failure; the blocker
        names the run that has it. Its ``node`` is the node that ended the first failed
        member (``{{node}}`` of ``on_failed``).

        Who holds what is read before the members' statuses: SQLite's reads here are not
        one snapshot, so a member another run completes in between is then held or
        completed, never blamed (read the other way round, it was neither).
        """
        with self._store.transaction() as db:
            run = db.get_one(Run, request.run_id)
            held = _held_elsewhere(db, run, _scope(db, run))
            rows = db.execute(
                select(Spec.id, Spec.name, Spec.status)
                .join(QueueMember, QueueMember.spec_id == Spec.id)
                .where(QueueMember.queue_id == run.queue_id)
                .order_by(QueueMember.position)
            ).all()
            unfinished = [
                (spec_id, name, status)
                for spec_id, name, status in rows
                if status not in ("completed", "skipped") and spec_id not in held
            ]
            failed = [spec_id for spec_id, _, status in unfinished if status == "failed"]
            node = _ended_node(db, failed[0]) if failed else None
        if not unfinished:
            return None
        names = ", ".join(f"{name} ({spec_id}: {status})" for spec_id, name, status in unfinished)
        elsewhere = "".join(f"; {message}" for message in held.values())
        blocker: dict[str, Any] = {
            "kind": "queue_failed",
            "message": f"{len(unfinished)} queue member(s) did not complete: {names}{elsewhere}",
            "failed_specs": [spec_id for spec_id, _, _ in unfinished],
        }
        if node is not None:
            blocker["node"] = node
        if held:
            blocker["held_elsewhere"] = list(held.values())
        return blocker

    @activity.defn
    def settle_run(self, settlement: RunSettlement) -> None:
        """Write the run's and the graph's final status (and blocker) together.

        The summary carries the run's counts and, under ``held_elsewhere``, which of its specs
        another run is still running, so a run that passed specs over says where they went;
        the signals it ignored (``ignored_signals``) stay.
        """
        with self._store.transaction() as db:
            run = set_run_status(db, settlement.run_id, settlement.status, settlement.blocker)
            run.ended_at = utcnow()
            summary = settlement.counts.model_dump()
            held = _held_elsewhere(db, run, _scope(db, run))
            if held:
                summary["held_elsewhere"] = list(held.values())
            ignored = (run.summary or {}).get(IGNORED_SIGNALS)
            if ignored:
                summary[IGNORED_SIGNALS] = ignored
            run.summary = summary

    def open_launch(
        self, dispatch: NodeDispatch, guard: Callable[[str], WorktreeState]
    ) -> DispatchOutcome | int:
        """Before a node runs: the node run an earlier attempt of this launch recorded; else,
        unless the dirty-tree guard (when asked, ``guard(workdir)``) finds the tree dirty, the
        spec's claim and a new node run record. The node run's id, or why the node does not
        launch.

        One transaction: the guard runs first, and its answer counts only for a launch not
        recorded yet (a retried one finds the node's own edits in the tree).
        """
        state = guard(dispatch.workdir) if dispatch.guard else None
        with self._store.transaction() as db:
            recorded = _recorded_launch(db, dispatch.launch_key)
            if recorded is not None:
                return recorded
            if state is not None and not state.clean:
                return DispatchOutcome(dirty=state)
            if _claim(db, dispatch.run_id, dispatch.spec) is None:
                return DispatchOutcome(taken=True)
            return _record_launch(
                db,
                dispatch.launch_key,
                dispatch.run_id,
                dispatch.spec_id,
                dispatch.node.name,
                dispatch.visit,
                platform=_launched_platform(dispatch),
                host=this_host(),
            )

    def record_node_end(self, node_run_id: int, result: NodeResult) -> None:
        """Record how a node run ended (the node activity, right after the node)."""
        with self._store.transaction() as db:
            _record_end(db.get_one(NodeRun, node_run_id), result)
