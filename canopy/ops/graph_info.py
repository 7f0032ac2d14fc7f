"""What ``graph info`` shows: one graph's definition and its readable run record, typed.

:class:`GraphInfo` is read from the store in one transaction (:func:`read_graph_info`);
the CLI's views and the consistency check read its fields, and its JSON form
(:meth:`GraphInfo.as_json`) is ``graph info --json`` and the MCP ``graph get`` answer.
Its JSON schema is published as ``docs/graph-info.schema.json``.

The stored parts (nodes, ensembles, hooks, blocker, hook configs) come back exactly as
stored: the JSON form leaves out only what the store did not have.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import select
from sqlalchemy.orm import Session

from canopy.graphs.model import AgentConfig, Hook, Node, stored_hook, stored_node
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.models import Graph, GraphSpec, HookRun, NodeRun, Queue, Run, RunSpec, Spec
from canopy.timefmt import to_iso


class BoundSpec(BaseModel):
    """A spec bound to the graph, in binding order."""

    id: str
    name: str
    status: str


class SpecRef(BaseModel):
    """A spec a blocker points at."""

    id: str
    name: str


class Blocker(BaseModel):
    """Why a graph stopped (DESIGN §6): what a person reads, and the ways out to type.

    Each kind carries the fields it needs (``dirty_tree``: ``workdir``, ``dirty_paths``,
    ``dirty_count``, ``next_spec``; ``queue_failed``: ``failed_specs``, …); fields this
    model does not name are kept as stored.
    """

    model_config = ConfigDict(extra="allow")

    kind: str
    message: str
    spec_id: str | None = None
    node: str | None = None
    workdir: str | None = None
    dirty_paths: list[str] | None = None
    dirty_count: int | None = None
    next_spec: SpecRef | None = None
    failed_specs: list[str] | None = None
    held_elsewhere: list[str] | None = None
    ways_out: list[str] | None = None


class RunInfo(BaseModel):
    """One run of the graph."""

    id: str
    number: int
    status: str
    queue_id: str | None
    workdir: str | None
    workflow_id: str | None
    summary: dict[str, Any] | None
    started_at: str | None
    ended_at: str | None


class NodeRunInfo(BaseModel):
    """One launch of one node for one spec, with how it ended and where its log is."""

    id: int
    spec_id: str
    spec_name: str | None
    node: str
    visit: int
    platform: str | None
    status: str
    exit_code: int | None
    log_path: str | None
    harness_session_id: str | None
    host: str | None
    """The machine whose worker ran the node (none for node runs recorded before hosts)."""
    error: str | None
    started_at: str | None
    ended_at: str | None


class HookRunInfo(BaseModel):
    """One firing of one hook, with the exact config that fired (as stored then)."""

    id: int
    run_id: str | None
    event: str
    hook_index: int
    hook_config: dict[str, Any]
    spec_id: str | None
    status: str
    output: str | None
    error: str | None
    log_path: str | None
    started_at: str | None
    ended_at: str | None


class QueueMemberProgress(BaseModel):
    """One spec the latest queue run reached: its latest outcome and every node it ran."""

    spec_id: str
    name: str | None
    nodes: list[str]
    group: str | None
    outcome: str | None


class QueueProgress(BaseModel):
    """What the latest queue-driven run did, in the order it reached the specs."""

    run_id: str
    run_number: int
    run_status: str
    queue_id: str
    queue_name: str | None
    members: list[QueueMemberProgress]


class GraphInfo(BaseModel):
    """One graph: definition, bound specs, run record and, for a graph the store calls
    running, the ``consistency_warning`` checked against Temporal (None otherwise)."""

    id: str
    name: str
    status: str
    workdir: str | None
    allow_dirty_start: bool
    blocker: Blocker | None
    hooks: dict[str, list[Hook]]
    nodes: list[Node]
    ensembles: dict[str, list[AgentConfig]]
    specs: list[BoundSpec]
    active_run: RunInfo | None
    runs: list[RunInfo]
    """Newest first."""
    node_runs: list[NodeRunInfo]
    """The latest run's, in launch order."""
    completion_hook_runs: list[HookRunInfo]
    """Every hook run of the graph, oldest first (the name predates per-event hooks)."""
    queue_progress: QueueProgress | None
    scheduled_resume_at: str | None
    consistency_warning: str | None
    created_at: str | None
    updated_at: str | None

    def as_json(self) -> dict[str, Any]:
        """The JSON form: every field, and the stored parts with exactly their stored keys."""
        return self.model_dump(mode="json", exclude_unset=True)


def read_graph_info(db: Session, row: Graph) -> GraphInfo:
    """The graph ``row`` with its run record, as the store has it now."""
    run_rows = graph_runs(db, row.id)
    active = first_active(run_rows)
    runs = [_run_info(run) for run in run_rows]
    return GraphInfo(
        id=row.id,
        name=row.name,
        status=row.status,
        workdir=row.workdir,
        allow_dirty_start=row.allow_dirty_start,
        blocker=Blocker.model_validate(row.blocker) if row.blocker is not None else None,
        hooks={event: [stored_hook(hook) for hook in hooks] for event, hooks in row.hooks.items()},
        nodes=[stored_node(node) for node in row.nodes],
        ensembles={
            name: [AgentConfig.model_validate(member) for member in members]
            for name, members in row.ensembles.items()
        },
        specs=bound_specs(db, row.id),
        active_run=_run_info(active) if active is not None else None,
        runs=runs,
        node_runs=_node_runs(db, runs[0].id) if runs else [],
        completion_hook_runs=_hook_runs(db, row.id),
        queue_progress=_queue_progress(db, runs),
        scheduled_resume_at=to_iso(active.scheduled_resume_at) if active else None,
        consistency_warning=None,
        created_at=to_iso(row.created_at),
        updated_at=to_iso(row.updated_at),
    )


def bound_specs(db: Session, graph_id: str) -> list[BoundSpec]:
    """The specs bound to the graph, in binding order."""
    result = db.execute(
        select(Spec.id, Spec.name, Spec.status)
        .join(GraphSpec, GraphSpec.spec_id == Spec.id)
        .where(GraphSpec.graph_id == graph_id)
        .order_by(GraphSpec.position)
    )
    return [BoundSpec(id=spec_id, name=name, status=status) for spec_id, name, status in result]


def graph_runs(db: Session, graph_id: str) -> list[Run]:
    """The graph's runs, newest first."""
    return list(db.scalars(select(Run).where(Run.graph_id == graph_id).order_by(Run.number.desc())))


def first_active(runs: list[Run]) -> Run | None:
    """The run that still owns the graph (running or paused), if any."""
    return next((run for run in runs if run.status in ACTIVE_RUN_STATUSES), None)


def _run_info(run: Run) -> RunInfo:
    return RunInfo(
        id=run.id,
        number=run.number,
        status=run.status,
        queue_id=run.queue_id,
        workdir=run.workdir,
        workflow_id=run.workflow_id,
        summary=run.summary,
        started_at=to_iso(run.started_at),
        ended_at=to_iso(run.ended_at),
    )


def _hook_runs(db: Session, graph_id: str) -> list[HookRunInfo]:
    """Every hook run of the graph, oldest first, with the exact config that fired."""
    hook_runs = db.scalars(select(HookRun).where(HookRun.graph_id == graph_id).order_by(HookRun.id))
    return [
        HookRunInfo(
            id=hook_run.id,
            run_id=hook_run.run_id,
            event=hook_run.event,
            hook_index=hook_run.hook_index,
            hook_config=hook_run.hook_config,
            spec_id=hook_run.spec_id,
            status=hook_run.status,
            output=hook_run.output,
            error=hook_run.error,
            log_path=hook_run.log_path,
            started_at=to_iso(hook_run.started_at),
            ended_at=to_iso(hook_run.ended_at),
        )
        for hook_run in hook_runs
    ]


def _node_runs(db: Session, run_id: str) -> list[NodeRunInfo]:
    """One run's node runs in launch order, with the spec's name when it still exists."""
    result = db.execute(
        select(NodeRun, Spec.name)
        .outerjoin(Spec, Spec.id == NodeRun.spec_id)
        .where(NodeRun.run_id == run_id)
        .order_by(NodeRun.id)
    )
    return [
        NodeRunInfo(
            id=node_run.id,
            spec_id=node_run.spec_id,
            spec_name=spec_name,
            node=node_run.node,
            visit=node_run.visit,
            platform=node_run.platform,
            status=node_run.status,
            exit_code=node_run.exit_code,
            log_path=node_run.log_path,
            harness_session_id=node_run.harness_session_id,
            host=node_run.host,
            error=node_run.error,
            started_at=to_iso(node_run.started_at),
            ended_at=to_iso(node_run.ended_at),
        )
        for node_run, spec_name in result
    ]


def _queue_progress(db: Session, runs: list[RunInfo]) -> QueueProgress | None:
    """What the latest queue-driven run did, rebuilt from its ``run_specs`` and ``node_runs``.

    One entry per spec in the order the run reached it; a spec that passed through the
    run more than once (e.g. resumed after a usage limit) shows its latest outcome and
    every node it ran, in launch order.
    """
    run = next((run for run in runs if run.queue_id is not None), None)
    if run is None or run.queue_id is None:
        return None
    members: dict[str, QueueMemberProgress] = {}
    passages = db.execute(
        select(RunSpec.spec_id, RunSpec.group, RunSpec.outcome, Spec.name)
        .outerjoin(Spec, Spec.id == RunSpec.spec_id)
        .where(RunSpec.run_id == run.id)
        .order_by(RunSpec.id)
    )
    for spec_id, group, outcome, name in passages:
        member = members.get(spec_id)
        if member is None:
            member = QueueMemberProgress(
                spec_id=spec_id, name=name, nodes=[], group=group, outcome=outcome
            )
            members[spec_id] = member
        member.group, member.outcome = group, outcome
    launched = db.execute(
        select(NodeRun.spec_id, NodeRun.node).where(NodeRun.run_id == run.id).order_by(NodeRun.id)
    )
    for spec_id, node in launched:
        if spec_id in members:
            members[spec_id].nodes.append(node)
    return QueueProgress(
        run_id=run.id,
        run_number=run.number,
        run_status=run.status,
        queue_id=run.queue_id,
        queue_name=db.scalar(select(Queue.name).where(Queue.id == run.queue_id)),
        members=list(members.values()),
    )
