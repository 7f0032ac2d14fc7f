"""What ``graph info`` shows: one graph's definition and its readable run record, typed.

:class:`GraphInfo` is read from the store in one transaction (:func:`stored_graph_info`,
:func:`read_graph_info`); the CLI's views and the consistency check read its fields, and
its JSON form (:meth:`GraphInfo.as_json`) is ``graph info --json`` and the MCP ``graph
get`` answer. Its JSON schema is published as ``docs/graph-info.schema.json``. It is read
with portable SQL (:func:`~canopy.ops.common.sql_transaction`), so the CLI's fast lane
builds the same model without SQLAlchemy.

The stored parts (nodes, ensembles, hooks, blocker, hook configs) come back exactly as
stored: the JSON form leaves out only what the store did not have.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from canopy.errors import Refused
from canopy.graphs.model import AgentConfig, Hook, Node, stored_hook, stored_node
from canopy.ops.common import sql_transaction
from canopy.ops.usage import USAGE_COUNTS, usage_by
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.queries import resolve_id, stored_json
from canopy.timefmt import to_iso

if TYPE_CHECKING:
    from canopy.store.engine import Store
    from canopy.store.queries import Row, Rows


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
    input_tokens: int | None
    """This field and the six after it: the run's totals, over its node runs and hook
    runs that reported usage (none: nothing reported)."""
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    cost_usd: float | None
    turns: int | None
    duration_ms: int | None


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
    input_tokens: int | None
    """This field and the seven after it: what the harness reported the node run used
    (none: it did not say; a command node never does)."""
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    cost_usd: float | None
    turns: int | None
    duration_ms: int | None
    model: str | None


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
    platform: str | None
    """An agent hook's platform; this field and the eight after it are what its harness
    reported the hook run used (none for command and interactive hooks, and for hook
    runs recorded before the usage ledger)."""
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    cost_usd: float | None
    turns: int | None
    duration_ms: int | None
    model: str | None


class SpecUsage(BaseModel):
    """What one spec's node runs and hook runs in the latest run used, summed."""

    spec_id: str
    spec_name: str | None
    runs: int
    """How many node runs and hook runs reported usage."""
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    cost_usd: float | None
    turns: int | None
    duration_ms: int | None


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
    running or paused, the ``consistency_warning`` checked against Temporal (None
    otherwise)."""

    id: str
    name: str
    status: str
    workdir: str | None
    host: str | None
    """The machine holding the workdir, where ``graph run`` sends the run unless told
    otherwise; none: the machine that starts the run."""
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
    spec_usage: list[SpecUsage]
    """What each spec used in the latest run (its node runs and hook runs), in the order
    the run first launched it; specs whose runs reported nothing are left out."""
    completion_hook_runs: list[HookRunInfo]
    """Every hook run of the graph, oldest first (the name predates per-event hooks)."""
    queue_progress: QueueProgress | None
    scheduled_resume_at: str | None
    consistency_warning: str | None
    created_at: str | None
    updated_at: str | None

    def asks_temporal(self) -> bool:
        """Whether its consistency is checked against Temporal: a graph the store calls
        running or paused has a run whose workflow must be alive and able to move."""
        return self.status in ("running", "paused")

    def as_json(self) -> dict[str, Any]:
        """The JSON form: every field, and the stored parts with exactly their stored keys."""
        return self.model_dump(mode="json", exclude_unset=True)


def stored_graph_info(store: Store | Rows, graph: str) -> GraphInfo:
    """The graph ``graph`` (a name, id or unique id prefix) names, as the store has it:
    everything ``graph info`` shows but the consistency warning, which asks Temporal."""
    with sql_transaction(store) as rows:
        return read_graph_info(rows, resolve_id(rows, "graph", graph), graph)


def read_graph_info(rows: Rows, graph_id: str, ref: str | None = None) -> GraphInfo:
    """The graph ``graph_id`` with its run record, in the caller's transaction; refused,
    naming ``ref`` (what the user typed), if it does not exist."""
    found = rows(
        "SELECT id, name, status, workdir, host, allow_dirty_start,"
        " CAST(blocker AS TEXT) AS blocker, CAST(hooks AS TEXT) AS hooks,"
        " CAST(nodes AS TEXT) AS nodes, CAST(ensembles AS TEXT) AS ensembles,"
        " created_at, updated_at"
        " FROM graphs WHERE id = :id",
        {"id": graph_id},
    )
    if not found:
        raise Refused(f"no graph matches {ref or graph_id!r}")
    row = found[0]
    run_rows = _run_rows(rows, graph_id)
    used = usage_by(rows, "run_id", "graph_id = :graph_id", {"graph_id": graph_id})
    runs = [_run_info(run, used.get(run["id"], {})) for run in run_rows]
    active = first_active(runs)
    resume_at = {run["id"]: run["scheduled_resume_at"] for run in run_rows}
    blocker = stored_json(row["blocker"])
    hooks: dict[str, list[dict[str, Any]]] = stored_json(row["hooks"])
    node_runs = _node_runs(rows, runs[0].id) if runs else []
    ensembles: dict[str, list[dict[str, Any]]] = stored_json(row["ensembles"])
    return GraphInfo(
        id=row["id"],
        name=row["name"],
        status=row["status"],
        workdir=row["workdir"],
        host=row["host"],
        allow_dirty_start=bool(row["allow_dirty_start"]),
        blocker=Blocker.model_validate(blocker) if blocker is not None else None,
        hooks={event: [stored_hook(hook) for hook in listed] for event, listed in hooks.items()},
        nodes=[stored_node(node) for node in stored_json(row["nodes"])],
        ensembles={
            name: [AgentConfig.model_validate(member) for member in members]
            for name, members in ensembles.items()
        },
        specs=bound_specs(rows, graph_id),
        active_run=active,
        runs=runs,
        node_runs=node_runs,
        spec_usage=_spec_usage(rows, runs[0].id, node_runs) if runs else [],
        completion_hook_runs=_hook_runs(rows, graph_id),
        queue_progress=_queue_progress(rows, runs),
        scheduled_resume_at=to_iso(resume_at[active.id]) if active else None,
        consistency_warning=None,
        created_at=to_iso(row["created_at"]),
        updated_at=to_iso(row["updated_at"]),
    )


def bound_specs(rows: Rows, graph_id: str) -> list[BoundSpec]:
    """The specs bound to the graph, in binding order."""
    found = rows(
        "SELECT s.id, s.name, s.status FROM specs s JOIN graph_specs b ON b.spec_id = s.id"
        " WHERE b.graph_id = :graph_id ORDER BY b.position",
        {"graph_id": graph_id},
    )
    return [BoundSpec(id=spec["id"], name=spec["name"], status=spec["status"]) for spec in found]


def graph_runs(rows: Rows, graph_id: str) -> list[RunInfo]:
    """The graph's runs, newest first."""
    return [_run_info(run, {}) for run in _run_rows(rows, graph_id)]


def first_active(runs: list[RunInfo]) -> RunInfo | None:
    """The run that still owns the graph (running or paused), if any."""
    return next((run for run in runs if run.status in ACTIVE_RUN_STATUSES), None)


def _run_rows(rows: Rows, graph_id: str) -> list[Row]:
    """The graph's runs as stored, newest first."""
    return rows(
        "SELECT id, number, status, queue_id, workdir, workflow_id,"
        " CAST(summary AS TEXT) AS summary, started_at, ended_at, scheduled_resume_at"
        " FROM runs WHERE graph_id = :graph_id ORDER BY number DESC",
        {"graph_id": graph_id},
    )


def _run_info(run: Row, used: Row) -> RunInfo:
    """A run as stored, with the totals of what it used (``used``; empty: none known)."""
    return RunInfo(
        id=run["id"],
        number=run["number"],
        status=run["status"],
        queue_id=run["queue_id"],
        workdir=run["workdir"],
        workflow_id=run["workflow_id"],
        summary=stored_json(run["summary"]),
        started_at=to_iso(run["started_at"]),
        ended_at=to_iso(run["ended_at"]),
        **{column: used.get(column) for column in USAGE_COUNTS},
    )


def _hook_runs(rows: Rows, graph_id: str) -> list[HookRunInfo]:
    """Every hook run of the graph, oldest first, with the exact config that fired."""
    found = rows(
        "SELECT id, run_id, event, hook_index, CAST(hook_config AS TEXT) AS hook_config,"
        f" spec_id, status, output, error, log_path, started_at, ended_at, platform, {_USED}"
        " FROM hook_runs WHERE graph_id = :graph_id ORDER BY id",
        {"graph_id": graph_id},
    )
    return [
        HookRunInfo(
            id=hook_run["id"],
            run_id=hook_run["run_id"],
            event=hook_run["event"],
            hook_index=hook_run["hook_index"],
            hook_config=stored_json(hook_run["hook_config"]),
            spec_id=hook_run["spec_id"],
            status=hook_run["status"],
            output=hook_run["output"],
            error=hook_run["error"],
            log_path=hook_run["log_path"],
            started_at=to_iso(hook_run["started_at"]),
            ended_at=to_iso(hook_run["ended_at"]),
            platform=hook_run["platform"],
            **{column: hook_run[column] for column in _USED_COLUMNS},
        )
        for hook_run in found
    ]


def _node_runs(rows: Rows, run_id: str) -> list[NodeRunInfo]:
    """One run's node runs in launch order, with the spec's name when it still exists."""
    found = rows(
        "SELECT n.id, n.spec_id, s.name AS spec_name, n.node, n.visit, n.platform, n.status,"
        " n.exit_code, n.log_path, n.harness_session_id, n.host, n.error, n.started_at,"
        f" n.ended_at, n.{_USED.replace(', ', ', n.')}"
        " FROM node_runs n LEFT JOIN specs s ON s.id = n.spec_id"
        " WHERE n.run_id = :run_id ORDER BY n.id",
        {"run_id": run_id},
    )
    return [
        NodeRunInfo(
            id=node_run["id"],
            spec_id=node_run["spec_id"],
            spec_name=node_run["spec_name"],
            node=node_run["node"],
            visit=node_run["visit"],
            platform=node_run["platform"],
            status=node_run["status"],
            exit_code=node_run["exit_code"],
            log_path=node_run["log_path"],
            harness_session_id=node_run["harness_session_id"],
            host=node_run["host"],
            error=node_run["error"],
            started_at=to_iso(node_run["started_at"]),
            ended_at=to_iso(node_run["ended_at"]),
            **{column: node_run[column] for column in _USED_COLUMNS},
        )
        for node_run in found
    ]


_USED_COLUMNS = (*USAGE_COUNTS, "model")
"""What a node run's or hook run's harness reported it used, as recorded."""
_USED = ", ".join(_USED_COLUMNS)


def _spec_usage(rows: Rows, run_id: str, node_runs: list[NodeRunInfo]) -> list[SpecUsage]:
    """What each spec used in run ``run_id``, in the order its node runs were launched
    (a spec only hooks used for last); specs whose records reported nothing are left out."""
    used = usage_by(rows, "spec_id", "run_id = :run_id", {"run_id": run_id})
    names = {node_run.spec_id: node_run.spec_name for node_run in node_runs}
    order = {spec_id: index for index, spec_id in enumerate(names)}
    return [
        SpecUsage(spec_id=spec_id, spec_name=names.get(spec_id), **totals)
        for spec_id, totals in sorted(used.items(), key=lambda item: order.get(item[0], len(order)))
        if spec_id is not None
    ]


def _queue_progress(rows: Rows, runs: list[RunInfo]) -> QueueProgress | None:
    """What the latest queue-driven run did, rebuilt from its ``run_specs`` and ``node_runs``.

    One entry per spec in the order the run reached it; a spec that passed through the
    run more than once (e.g. resumed after a usage limit) shows its latest outcome and
    every node it ran, in launch order.
    """
    run = next((run for run in runs if run.queue_id is not None), None)
    if run is None or run.queue_id is None:
        return None
    members: dict[str, QueueMemberProgress] = {}
    passages = rows(
        "SELECT p.spec_id, p.group_name, p.outcome, s.name"
        " FROM run_specs p LEFT JOIN specs s ON s.id = p.spec_id"
        " WHERE p.run_id = :run_id ORDER BY p.id",
        {"run_id": run.id},
    )
    for passage in passages:
        spec_id, group, outcome = passage["spec_id"], passage["group_name"], passage["outcome"]
        member = members.get(spec_id)
        if member is None:
            member = QueueMemberProgress(
                spec_id=spec_id, name=passage["name"], nodes=[], group=group, outcome=outcome
            )
            members[spec_id] = member
        member.group, member.outcome = group, outcome
    launched = rows(
        "SELECT spec_id, node FROM node_runs WHERE run_id = :run_id ORDER BY id",
        {"run_id": run.id},
    )
    for node_run in launched:
        if node_run["spec_id"] in members:
            members[node_run["spec_id"]].nodes.append(node_run["node"])
    queue = rows("SELECT name FROM queues WHERE id = :id", {"id": run.queue_id})
    return QueueProgress(
        run_id=run.id,
        run_number=run.number,
        run_status=run.status,
        queue_id=run.queue_id,
        queue_name=queue[0]["name"] if queue else None,
        members=list(members.values()),
    )
