"""Store bookkeeping for GraphRun, on the shared main task queue.

Every write a run makes to the readable record goes through one of these activities, so
the workflow stays deterministic and a retried activity finds its earlier write instead of
doubling it where that matters (spec passages, settling).
"""

from collections.abc import Callable
from typing import Any

from sqlalchemy import null, select
from temporalio import activity

from canopy.graphs.transitions import default_next
from canopy.runmodels import NextSpec, NodeResult, NodeStep, RunCounts
from canopy.store.engine import open_store
from canopy.store.models import Graph, GraphSpec, NodeRun, QueueMember, Run, RunSpec, Spec
from canopy.store.run_records import set_run_status
from canopy.timefmt import utcnow

DEFAULT_MAX_VISITS = 5


@activity.defn
async def next_spec(run_id: str) -> NextSpec | None:
    """The next pending spec: queue members in queue order, else bound specs in order.

    Read fresh before every spec, so a reorder or an added member during the run counts.
    """
    with open_store().transaction() as session:
        run = session.get_one(Run, run_id)
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
        row = session.execute(query.limit(1)).first()
    if row is None:
        return None
    return NextSpec(spec_id=row[0], name=row[1], group=row[2])


@activity.defn
async def begin_spec(run_id: str, spec: NextSpec) -> int:
    """Mark the spec in progress and open its passage record (idempotent on retry)."""
    with open_store().transaction() as session:
        open_passage = session.scalar(
            select(RunSpec.id).where(
                RunSpec.run_id == run_id, RunSpec.spec_id == spec.spec_id, RunSpec.outcome.is_(None)
            )
        )
        session.get_one(Spec, spec.spec_id).status = "in_progress"
        if open_passage is not None:
            return open_passage
        passage = RunSpec(
            run_id=run_id, spec_id=spec.spec_id, group=spec.group, started_at=utcnow()
        )
        session.add(passage)
        session.flush()
        return passage.id


@activity.defn
async def load_node(graph_id: str, node_name: str | None) -> NodeStep | None:
    """A node as stored now (``None``: the first node), transitions resolved.

    Nodes are read at each dispatch, so a ``graph edit`` during a run takes effect at the
    next node launch. ``None`` is returned when the named node no longer exists.
    """
    with open_store().transaction() as session:
        graph = session.get_one(Graph, graph_id)
        nodes: list[dict[str, Any]] = list(graph.nodes)
        ensembles: dict[str, Any] = dict(graph.ensembles)
    names = [node["name"] for node in nodes]
    if not nodes or (node_name is not None and node_name not in names):
        return None
    index = 0 if node_name is None else names.index(node_name)
    node = dict(nodes[index])
    if node.get("ensemble"):
        node["ensemble_members"] = ensembles.get(node["ensemble"], [])
    following = default_next(nodes, index)
    return NodeStep(
        name=node["name"],
        definition=node,
        next_node=node.get("next") or following,
        on_failure=node.get("on_failure"),
        max_visits=node.get("max_visits") or DEFAULT_MAX_VISITS,
        timeout_minutes=node.get("timeout_minutes"),
    )


@activity.defn
async def start_node_run(run_id: str, spec_id: str, node: str, visit: int) -> int:
    """Record a node launch before it happens, so ``graph info`` shows it running."""
    with open_store().transaction() as session:
        node_run = NodeRun(
            run_id=run_id,
            spec_id=spec_id,
            node=node,
            visit=visit,
            status="running",
            started_at=utcnow(),
        )
        session.add(node_run)
        session.flush()
        return node_run.id


@activity.defn
async def finish_node_run(node_run_id: int, result: NodeResult) -> None:
    """Record how a node run ended: status, exit code, log, harness session."""
    with open_store().transaction() as session:
        node_run = session.get_one(NodeRun, node_run_id)
        node_run.status = result.status
        node_run.exit_code = result.exit_code
        node_run.log_path = result.log_path
        node_run.harness_session_id = result.harness_session_id
        node_run.platform = result.platform
        node_run.ended_at = utcnow()


@activity.defn
async def finish_spec(passage_id: int, outcome: str, ended_node: str | None) -> bool:
    """Close a spec's passage and set the spec's status from its outcome.

    Returns whether the graph has ``on_spec_completed`` hooks right now, so a run whose
    graph has none skips the firing activity (a round trip to the agents host) per spec.
    """
    spec_status = {"completed": "completed", "failed": "failed", "skipped": "skipped"}
    with open_store().transaction() as session:
        passage = session.get_one(RunSpec, passage_id)
        passage.outcome = outcome
        passage.ended_node = ended_node
        passage.ended_at = utcnow()
        spec = session.get_one(Spec, passage.spec_id)
        spec.status = spec_status.get(outcome, "pending")
        graph_id = session.get_one(Run, passage.run_id).graph_id
        hooks = session.get_one(Graph, graph_id).hooks or {}
    return bool(hooks.get("on_spec_completed"))


@activity.defn
async def settle_run(
    run_id: str, status: str, blocker: dict[str, Any] | None, counts: RunCounts
) -> None:
    """Write the run's and the graph's final status (and blocker) together."""
    with open_store().transaction() as session:
        run = set_run_status(session, run_id, status, blocker)
        run.ended_at = utcnow()
        run.summary = counts.model_dump()


@activity.defn
async def queue_settlement(run_id: str) -> dict[str, Any] | None:
    """For a drained queue run: ``None`` if every member completed or was skipped, else
    the blocker naming the members that did not (DESIGN §6.6)."""
    with open_store().transaction() as session:
        run = session.get_one(Run, run_id)
        rows = session.execute(
            select(Spec.id, Spec.name, Spec.status)
            .join(QueueMember, QueueMember.spec_id == Spec.id)
            .where(QueueMember.queue_id == run.queue_id)
            .order_by(QueueMember.position)
        ).all()
    unfinished = [
        (spec_id, name, status)
        for spec_id, name, status in rows
        if status not in ("completed", "skipped")
    ]
    if not unfinished:
        return None
    names = ", ".join(f"{name} ({spec_id}: {status})" for spec_id, name, status in unfinished)
    return {
        "kind": "queue_failed",
        "message": f"{len(unfinished)} queue member(s) did not complete: {names}",
        "failed_specs": [spec_id for spec_id, _, _ in unfinished],
    }


ALL: list[Callable[..., Any]] = [
    next_spec,
    begin_spec,
    load_node,
    start_node_run,
    finish_node_run,
    finish_spec,
    settle_run,
    queue_settlement,
]
