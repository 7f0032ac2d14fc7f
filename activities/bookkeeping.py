"""The store records of a graph run: spec passages, node runs and settling.

Every write a run makes to the readable record goes through an activity, so the workflow
stays deterministic and a retried activity finds its earlier write instead of doubling it
where that matters (spec passages, launches, settling). :class:`RunRecords` holds the
activities ``GraphRunV2`` calls, bound to the store they write.

Runs of different graphs may drain queues that share specs. A spec is claimed with a
compare-and-set when its passage opens, so one run at a time has it; the others pass it
over, and at settle time a spec another active run holds is named, never blamed.
"""

from collections.abc import Callable, Mapping
from itertools import takewhile
from typing import Any

from temporalio import activity

from canopy.activities.ledger import usage_columns
from canopy.budget import BudgetState, Spent, budget_limits
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
from canopy.contracts.graph_run_blocker import QueueFailed, blocker_json
from canopy.graphs.nodemodels import EnsembleNode, stored_node
from canopy.graphs.transitions import default_next
from canopy.limits import DEFAULT_MAX_VISITS
from canopy.ops.usage import budget_spent
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.engine import Store
from canopy.store.queries import Row, Rows, bound_list, graph_record
from canopy.store.run_records import IGNORED_SIGNALS, run_record, set_run_status
from canopy.temporal.client import this_host
from canopy.timefmt import utcnow
from canopy.workdir import WorktreeState


def _scope(run: Row) -> tuple[str, dict[str, Any]]:
    """The specs a run drains, as a subquery and its parameters: its queue's members, else
    its graph's bound specs."""
    if run["queue_id"] is not None:
        return "SELECT spec_id FROM queue_members WHERE queue_id = :scope", {
            "scope": run["queue_id"]
        }
    return "SELECT spec_id FROM graph_specs WHERE graph_id = :scope", {"scope": run["graph_id"]}


def _pending_count(rows: Rows, run_id: str) -> int:
    """How many specs of the run's scope (queue members, else bound specs) are pending."""
    scope, params = _scope(run_record(rows, run_id))
    (found,) = rows(
        f"SELECT COUNT(*) AS n FROM specs WHERE id IN ({scope}) AND status = 'pending'", params
    )
    return int(found["n"])


def _next_pending(rows: Rows, run_id: str, request: ReadAhead | None = None) -> NextSpec | None:
    """The next pending spec: queue members in queue order, else bound specs in order,
    passing over what a run of lanes has in flight (``request``).

    Read fresh before every spec, so a reorder or an added member during the run counts.
    """
    found = rows(*next_pending_query(rows, run_id, request))
    if not found:
        return None
    return NextSpec(spec_id=found[0]["id"], name=found[0]["name"], group=found[0]["group_name"])


def next_pending_query(
    rows: Rows, run_id: str, request: ReadAhead | None = None
) -> tuple[str, dict[str, Any]]:
    """The query :func:`_next_pending` runs, and its parameters: its id, name and queue
    group."""
    run = run_record(rows, run_id)
    passing, params = _passing_over(request)
    if run["queue_id"] is not None:
        if request is not None and request.groups_in_flight:
            held, groups = bound_list("group", request.groups_in_flight)
            passing += (
                f" AND (queue_members.group_name IS NULL OR queue_members.group_name NOT IN {held})"
            )
            params.update(groups)
        return (
            "SELECT specs.id, specs.name, queue_members.group_name FROM specs"
            " JOIN queue_members ON queue_members.spec_id = specs.id"
            f" WHERE queue_members.queue_id = :queue AND specs.status = 'pending'{passing}"
            " ORDER BY queue_members.position LIMIT 1",
            {**params, "queue": run["queue_id"]},
        )
    return (
        "SELECT specs.id, specs.name, NULL AS group_name FROM specs"
        " JOIN graph_specs ON graph_specs.spec_id = specs.id"
        f" WHERE graph_specs.graph_id = :graph AND specs.status = 'pending'{passing}"
        " ORDER BY graph_specs.position LIMIT 1",
        {**params, "graph": run["graph_id"]},
    )


def _passing_over(request: ReadAhead | None) -> tuple[str, dict[str, Any]]:
    """The condition leaving out the specs a run of lanes has in flight (none: nothing)."""
    if request is None or not request.passing_over:
        return "", {}
    listed, params = bound_list("flying", request.passing_over)
    return f" AND specs.id NOT IN {listed}", params


def _claim(rows: Rows, run_id: str, spec: NextSpec, lane: NodeDispatch | None = None) -> int | None:
    """Claim the spec for this run and open its passage; ``None`` if the run did not get it.

    The claim is a compare-and-set (``pending`` to ``in_progress``): of two runs reaching
    for one spec at once, exactly one gets it, and the other passes it over. A retried
    attempt finds the passage its first attempt opened.
    """
    open_passage = _open_passage(rows, run_id, spec.spec_id)
    if open_passage is not None:
        return open_passage
    claimed = rows(
        "UPDATE specs SET status = 'in_progress' WHERE id = :id AND status = 'pending'"
        " RETURNING id",
        {"id": spec.spec_id},
    )
    if len(claimed) != 1:
        return None
    branch = lane.branch if lane is not None else None
    (passage,) = rows(
        "INSERT INTO run_specs (run_id, spec_id, group_name, started_at, worktree, branch)"
        " VALUES (:run_id, :spec_id, :group, :now, :worktree, :branch) RETURNING id",
        {
            "run_id": run_id,
            "spec_id": spec.spec_id,
            "group": spec.group,
            "now": utcnow(),
            "worktree": lane.workdir if lane is not None and branch is not None else None,
            "branch": branch,
        },
    )
    return int(passage["id"])


def _open_passage(rows: Rows, run_id: str, spec_id: str) -> int | None:
    found = rows(
        "SELECT id FROM run_specs WHERE run_id = :run_id AND spec_id = :spec_id"
        " AND outcome IS NULL",
        {"run_id": run_id, "spec_id": spec_id},
    )
    return int(found[0]["id"]) if found else None


def load_step(graph: Mapping[str, Any], node_name: str | None) -> NodeStep | None:
    """A node of the graph as stored now (:func:`~canopy.store.queries.graph_record`;
    ``None``: the first node), transitions resolved.

    Nodes are read at each dispatch, so a ``graph edit`` during a run takes effect at the
    next node launch. ``None`` is returned when the named node no longer exists. An absurd
    stored timeout is clamped (:func:`node_timeout_minutes`) in the definition too, since
    the node's activity reads its process timeout from there.
    """
    stored: list[dict[str, Any]] = list(graph["nodes"])
    ensembles: dict[str, Any] = dict(graph["ensembles"])
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
        next_node=node.next or default_next(stored, index, graph.get("conflict_resolver")),
        on_failure=node.on_failure,
        max_visits=node.max_visits or DEFAULT_MAX_VISITS,
        timeout_minutes=node.timeout_minutes,
    )


def _clamped_timeout(node: dict[str, Any]) -> dict[str, Any]:
    """A stored node with its ``timeout_minutes`` as the engine may use it."""
    timeout = node_timeout_minutes(node.get("timeout_minutes"))
    return {**node, "timeout_minutes": timeout}


def _recorded_launch(rows: Rows, key: str) -> int | None:
    """The node run an earlier attempt of launch ``key`` recorded."""
    found = rows("SELECT id FROM node_runs WHERE launch_key = :key", {"key": key})
    return int(found[0]["id"]) if found else None


def _record_launch(
    rows: Rows,
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
    (node_run,) = rows(
        "INSERT INTO node_runs (launch_key, run_id, spec_id, node, visit, platform, host,"
        " status, started_at) VALUES (:key, :run_id, :spec_id, :node, :visit, :platform,"
        " :host, 'running', :now) RETURNING id",
        {
            "key": key,
            "run_id": run_id,
            "spec_id": spec_id,
            "node": node,
            "visit": visit,
            "platform": platform,
            "host": host,
            "now": utcnow(),
        },
    )
    return int(node_run["id"])


def _launched_platform(dispatch: NodeDispatch) -> str | None:
    """The platform a launch runs: an agent node's, or the chosen ensemble member's; none
    for a command node."""
    try:
        return dispatch.agent().platform
    except ValueError:  # a command node launches no agent
        return None


def _record_end(rows: Rows, node_run_id: int, result: NodeResult) -> None:
    """Write how the node run ended, with what its harness reported it used."""
    columns = {
        "status": result.status,
        "exit_code": result.exit_code,
        "log_path": result.log_path,
        "harness_session_id": result.harness_session_id,
        "platform": result.platform,
        "host": result.host,
        "error": result.error,
        "denial_count": result.denial_count,
        "denials": result.denials,
        **usage_columns(result.usage),
        "ended_at": utcnow(),
    }
    assigned = ", ".join(f"{name} = :{name}" for name in columns)
    rows(f"UPDATE node_runs SET {assigned} WHERE id = :id", {**columns, "id": node_run_id})


RATE_LIMIT_STREAK_READ = 8
"""Node runs read back for :meth:`RunRecords.limit_streak`: the backoff stops growing
at an hour, well before."""

FINAL_OUTCOMES = ("completed", "failed", "skipped")
"""Outcomes that end a spec for good; it is also its status. Any other goes back to
``pending``."""


def _close_passage(rows: Rows, passage: Row, outcome: str, ended_node: str | None) -> None:
    """Close ``passage`` (its ``id`` and ``spec_id``) and set its spec's status from the
    outcome."""
    rows(
        "UPDATE run_specs SET outcome = :outcome, ended_node = :ended_node, ended_at = :now"
        " WHERE id = :id",
        {"outcome": outcome, "ended_node": ended_node, "now": utcnow(), "id": passage["id"]},
    )
    rows(
        "UPDATE specs SET status = :status WHERE id = :id",
        {
            "status": outcome if outcome in FINAL_OUTCOMES else "pending",
            "id": passage["spec_id"],
        },
    )


def _passage_record(rows: Rows, passage_id: int) -> Row:
    """A spec passage's ``id``, ``run_id``, ``spec_id`` and ``outcome``."""
    (passage,) = rows(
        "SELECT id, run_id, spec_id, outcome FROM run_specs WHERE id = :id", {"id": passage_id}
    )
    return passage


def _has_spec_completed_hooks(graph: Mapping[str, Any]) -> bool:
    """Whether the graph (:func:`~canopy.store.queries.graph_record`) has
    ``on_spec_completed`` hooks."""
    return bool(graph["hooks"].get("on_spec_completed"))


def _ended_node(rows: Rows, spec_id: str) -> str | None:
    """The node at which the spec's latest failed passage ended."""
    found = rows(
        "SELECT ended_node FROM run_specs WHERE spec_id = :spec_id AND outcome = 'failed'"
        " ORDER BY id DESC LIMIT 1",
        {"spec_id": spec_id},
    )
    return found[0]["ended_node"] if found else None


def _held_elsewhere(rows: Rows, run: Row) -> dict[str, str]:
    """Which of the specs ``run`` drains another active run holds (an open passage), each
    with the line that says so: ``spec alpha (spec-…) is being run by run-… of graph
    build``."""
    scope, params = _scope(run)
    active, statuses = bound_list("active", ACTIVE_RUN_STATUSES)
    found = rows(
        "SELECT p.spec_id, s.name, r.id AS holder, g.name AS graph FROM run_specs p"
        " JOIN runs r ON r.id = p.run_id JOIN graphs g ON g.id = r.graph_id"
        " JOIN specs s ON s.id = p.spec_id"
        f" WHERE p.spec_id IN ({scope}) AND p.outcome IS NULL AND r.id != :run"
        f" AND r.status IN {active} ORDER BY p.id",
        {**params, **statuses, "run": run["id"]},
    )
    return {
        row["spec_id"]: (
            f"spec {row['name']} ({row['spec_id']}) is being run by {row['holder']} "
            f"of graph {row['graph']}"
        )
        for row in found
    }


def _ahead(
    rows: Rows,
    run_id: str,
    graph_id: str,
    spec: NextSpec | None,
    node: str | None,
    count_pending: bool,
    request: ReadAhead | None = None,
) -> Ahead:
    upcoming = spec or _next_pending(rows, run_id, request)
    if upcoming is None:
        return Ahead(pending=0)
    graph = graph_record(rows, graph_id)
    return Ahead(
        spec=upcoming,
        step=load_step(graph, node),
        allow_dirty_start=graph["allow_dirty_start"],
        lanes=graph["lanes"],
        integration=graph["integration"],
        conflict_resolver=graph["conflict_resolver"],
        pending=_pending_count(rows, run_id) if count_pending else None,
        budget=_budget_state(rows, run_id, upcoming, graph),
    )


def _budget_state(
    rows: Rows, run_id: str, spec: NextSpec, graph: Mapping[str, Any]
) -> BudgetState | None:
    """The graph's budget as stored now, with what the run and ``spec`` in it have spent;
    ``None`` (and no ledger read) for a graph without one."""
    run, per_spec = budget_limits(graph["budget"])
    if run is None and per_spec is None:
        return None
    return BudgetState(
        run=run,
        spec=per_spec,
        run_spent=budget_spent(rows, run_id) if run is not None else Spent(),
        spec_spent=budget_spent(rows, run_id, spec.spec_id) if per_spec is not None else Spent(),
    )


def _closed_passage(rows: Rows, request: SpecClose) -> int | None:
    """The passage of this spec an earlier attempt of the same close already closed."""
    found = rows(
        "SELECT id FROM run_specs WHERE run_id = :run_id AND spec_id = :spec_id"
        " AND outcome = :outcome ORDER BY id DESC LIMIT 1",
        {"run_id": request.run_id, "spec_id": request.spec.spec_id, "outcome": request.outcome},
    )
    return int(found[0]["id"]) if found else None


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
        with self._store.transaction() as rows:
            found = rows(
                "SELECT status FROM node_runs WHERE run_id = :run_id AND spec_id = :spec_id"
                " AND node = :node AND id < :before ORDER BY id DESC LIMIT :limit",
                {
                    "run_id": launch.run_id,
                    "spec_id": launch.spec_id,
                    "node": launch.node.name,
                    "before": launch.node_run_id,
                    "limit": RATE_LIMIT_STREAK_READ,
                },
            )
        statuses = (row["status"] for row in found)
        return sum(1 for _ in takewhile(lambda status: status == "limit_blocked", statuses))

    @activity.defn
    def read_ahead(self, request: ReadAhead) -> Ahead:
        """What runs next, read now: the spec (given, or the next pending one), the node it
        starts at (transitions resolved), and the graph's ``allow_dirty_start``."""
        with self._store.transaction() as rows:
            return _ahead(
                rows,
                request.run_id,
                request.graph_id,
                request.spec,
                request.node,
                request.count_pending,
                request,
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
        with self._store.transaction() as rows:
            passage_id = _open_passage(rows, request.run_id, request.spec.spec_id)
            if passage_id is None and request.outcome in FINAL_OUTCOMES:
                claimed = _claim(rows, request.run_id, request.spec)
                passage_id = claimed or _closed_passage(rows, request)
                if passage_id is None:
                    return SpecClosed(passage_id=None, taken=True)
            if passage_id is not None:
                passage = _passage_record(rows, passage_id)
                if passage["outcome"] is None:
                    _close_passage(rows, passage, request.outcome, request.ended_node)
                if request.lane_closed:
                    rows(
                        "UPDATE run_specs SET worktree = NULL, branch = :branch WHERE id = :id",
                        {"branch": request.kept_branch, "id": passage_id},
                    )
            graph = graph_record(rows, request.graph_id)
            hooks = request.outcome == "completed" and _has_spec_completed_hooks(graph)
            closed = SpecClosed(passage_id=passage_id, spec_completed_hooks=hooks)
            if request.read_ahead and not hooks:
                closed.ahead = _ahead(
                    rows, request.run_id, request.graph_id, None, None, request.count_pending
                )
            return closed

    @activity.defn
    def record_launch_end(self, end: LaunchEnd) -> None:
        """Record how a launch ended when its activity could not (it was cancelled by a stop,
        or failed): nothing to do if it never recorded a node run."""
        with self._store.transaction() as rows:
            found = rows(
                "SELECT id, status FROM node_runs WHERE launch_key = :key", {"key": end.launch_key}
            )
            if found and found[0]["status"] == "running":
                _record_end(rows, found[0]["id"], end.result)

    @activity.defn
    def queue_settlement(self, request: RunRef) -> QueueFailed | None:
        """For a drained queue run: ``None`` if every member completed, was skipped or is held
        by another active run, else the blocker naming the members that did not complete.
        A member another run holds is not this run's failure; the blocker
        names the run that has it. Its ``node`` is the node that ended the first failed
        member (``{{node}}`` of ``on_failed``).

        Who holds what is read before the members' statuses: SQLite's reads here are not
        one snapshot, so a member another run completes in between is then held or
        completed, never blamed (read the other way round, it was neither).
        """
        with self._store.transaction() as rows:
            run = run_record(rows, request.run_id)
            held = _held_elsewhere(rows, run)
            members = rows(
                "SELECT s.id, s.name, s.status FROM specs s"
                " JOIN queue_members m ON m.spec_id = s.id"
                " WHERE m.queue_id = :queue ORDER BY m.position",
                {"queue": run["queue_id"]},
            )
            unfinished = [
                (member["id"], member["name"], member["status"])
                for member in members
                if member["status"] not in ("completed", "skipped") and member["id"] not in held
            ]
            failed = [spec_id for spec_id, _, status in unfinished if status == "failed"]
            node = _ended_node(rows, failed[0]) if failed else None
        if not unfinished:
            return None
        names = ", ".join(f"{name} ({spec_id}: {status})" for spec_id, name, status in unfinished)
        elsewhere = "".join(f"; {message}" for message in held.values())
        return QueueFailed(
            message=f"{len(unfinished)} queue member(s) did not complete: {names}{elsewhere}",
            failed_specs=[spec_id for spec_id, _, _ in unfinished],
            node=node,
            held_elsewhere=list(held.values()) or None,
        )

    @activity.defn
    def settle_run(self, settlement: RunSettlement) -> None:
        """Write the run's and the graph's final status (and blocker) together.

        The summary carries the run's counts and, under ``held_elsewhere``, which of its specs
        another run is still running, so a run that passed specs over says where they went;
        the signals it ignored (``ignored_signals``) stay.
        """
        with self._store.transaction() as rows:
            blocker = blocker_json(settlement.blocker)
            run = set_run_status(rows, settlement.run_id, settlement.status, blocker)
            summary = settlement.counts.model_dump()
            held = _held_elsewhere(rows, run)
            if held:
                summary["held_elsewhere"] = list(held.values())
            ignored = (run["summary"] or {}).get(IGNORED_SIGNALS)
            if ignored:
                summary[IGNORED_SIGNALS] = ignored
            rows(
                "UPDATE runs SET ended_at = :now, summary = :summary WHERE id = :id",
                {"now": utcnow(), "summary": summary, "id": run["id"]},
            )

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
        with self._store.transaction() as rows:
            recorded = _recorded_launch(rows, dispatch.launch_key)
            if recorded is not None:
                return recorded
            if state is not None and not state.clean:
                return DispatchOutcome(dirty=state)
            if _claim(rows, dispatch.run_id, dispatch.spec, dispatch) is None:
                return DispatchOutcome(taken=True)
            return _record_launch(
                rows,
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
        with self._store.transaction() as rows:
            _record_end(rows, node_run_id, result)
