"""Human rendering of ``graph info``: facts, then tables (the listing is in
:mod:`canopy.cli.views`).

Nodes, ensembles and hook configs are shown from the JSON the store keeps, their kind read
by :mod:`canopy.graphs.kinds`, so ``graph info`` draws them without the graph model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from canopy.budget import standing_text
from canopy.cli.render import print_line, print_table
from canopy.graphs.kinds import (
    AGENT_HOOK,
    COMMAND_HOOK,
    COMMAND_NODE,
    ENSEMBLE_NODE,
    hook_mode,
    node_kind,
)
from canopy.graphs.transitions import default_next
from canopy.limits import DEFAULT_MAX_VISITS
from canopy.usagefmt import cost_text, used_text

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from canopy.ops.graph_info import (
        GraphInfo,
        HookRunInfo,
        NodeRunInfo,
        QueueProgress,
        SpecUsage,
        StoredNode,
    )

_STEP_EXCERPT = 50


def show_graph(info: GraphInfo) -> None:
    """``graph info``: facts, nodes, ensembles, bound specs, runs, node runs, what each spec
    used, hook runs, queue progress."""
    _show_facts(info)
    _show_nodes(info)
    if info.ensembles:
        print_table(
            "Ensembles",
            ["name", "members (in failover order)"],
            [[name, ", ".join(map(_agent, members))] for name, members in info.ensembles.items()],
        )
    print_table(
        "Bound specs",
        ["#", "id", "name", "status"],
        [[i, s.id, s.name, s.status] for i, s in enumerate(info.specs, start=1)],
    )
    print_table(
        "Runs",
        ["#", "id", "status", "queue", "started", "ended", "used"],
        [
            [r.number, r.id, r.status, r.queue_id or "", r.started_at, r.ended_at, used_text(r)]
            for r in info.runs
        ],
    )
    _show_node_runs(info.node_runs)
    if info.spec_usage:
        _show_spec_usage(info.spec_usage)
    _show_hook_runs(info.completion_hook_runs)
    if info.queue_progress is not None:
        _show_queue_progress(info.queue_progress)
    if info.lanes_in_flight:
        _show_lanes(info)
    if info.kept_branches:
        print_table(
            "Kept branches (they hold work the target does not have)",
            ["spec", "branch"],
            [[kept.spec_id, kept.branch] for kept in info.kept_branches],
        )


def _show_lanes(info: GraphInfo) -> None:
    """The active run's lanes: each spec in flight, its node and since when, its worktree."""
    print_table(
        f"Lanes: {len(info.lanes_in_flight)} of {info.lanes} busy",
        ["spec", "name", "node", "since", "worktree"],
        [
            [lane.spec_id, lane.spec_name or "", lane.node or "(between nodes)", lane.since,
             lane.worktree]
            for lane in info.lanes_in_flight
        ],
    )  # fmt: skip


def _lanes(info: GraphInfo) -> str:
    """``4 (merge, conflicts to resolve)``: the lanes, and how a run of lanes lands its
    specs (and the node it sends a conflict to) when it may."""
    lands = info.lanes > 1 or info.integration != "rebase" or info.conflict_resolver
    resolver = f", conflicts to {info.conflict_resolver}" if info.conflict_resolver else ""
    return f"{info.lanes} ({info.integration}{resolver})" if lands else str(info.lanes)


def _show_facts(info: GraphInfo) -> None:
    print_line(f"{info.id}  {info.name}")
    dirty = "yes" if info.allow_dirty_start else "no"
    host = f"   host: {info.host}" if info.host is not None else ""
    print_line(
        f"status: {info.status}   workdir: {info.workdir or '(none)'}{host}   "
        f"allow_dirty_start: {dirty}   lanes: {_lanes(info)}   "
        f"permissions: {info.permissions or '(platform default)'}"
    )
    if info.budget is not None:
        print_line(f"budget: {standing_text(info.budget, info.budget_spent)}")
    blocker = info.blocked()
    if blocker is not None:
        print_line(f"blocker: {blocker.message}")
    active = info.active_run
    if active is not None:
        print_line(f"active run: {active.id} (#{active.number}, {active.status})")
    if info.scheduled_resume_at is not None:
        print_line(f"scheduled resume: {info.scheduled_resume_at}")
    if info.consistency_warning is not None:
        print_line(f"warning: {info.consistency_warning}")


def _show_nodes(info: GraphInfo) -> None:
    """Nodes with their transitions spelled out, defaults included."""
    rows = []
    for index, node in enumerate(info.nodes):
        following = default_next(info.nodes, index, info.conflict_resolver) or "(spec completes)"
        timeout = node.get("timeout_minutes")
        rows.append(
            [
                index + 1,
                node["name"],
                _runs(node),
                _excerpt(node["command"] if node_kind(node) == COMMAND_NODE else node["prompt"]),
                node.get("next") or following,
                node.get("on_failure") or "(spec fails)",
                node.get("max_visits", DEFAULT_MAX_VISITS),
                f"{timeout:g}" if timeout is not None else "",
                _stall(node),
            ]
        )
    print_table(
        "Nodes",
        ["#", "name", "runs", "step", "next", "on failure", "visits", "timeout", "stall"],
        rows,
    )


def _stall(node: StoredNode) -> str:
    """An agent node's ``stall_minutes``: ``off`` for 0, blank for the config default (a
    command node has none)."""
    stall = node.get("stall_minutes")
    if stall is None:
        return ""
    return "off" if stall == 0 else f"{stall:g}"


def _show_node_runs(node_runs: list[NodeRunInfo]) -> None:
    """The latest run's node runs, each failure with the reason it was given."""
    print_table(
        "Node runs (latest run)",
        [
            "spec",
            "node",
            "visit",
            "platform",
            "host",
            "status",
            "exit",
            "used",
            "model",
            "denied",
            "error",
            "started",
            "ended",
            "log",
        ],
        [
            [
                n.spec_name or n.spec_id,
                n.node,
                n.visit,
                n.platform or "",
                n.host or "",
                n.status,
                n.exit_code,
                used_text(n),
                n.model or "",
                n.denied(),
                n.error or "",
                n.started_at,
                n.ended_at,
                n.log_path or "",
            ]
            for n in node_runs
        ],
    )


def _show_spec_usage(specs: list[SpecUsage]) -> None:
    """What each spec used in the latest run, summed over its node runs and hook runs."""
    print_table(
        "Usage by spec (latest run)",
        ["spec", "runs", "input", "output", "cache read", "cache write", "cost", "turns", "time"],
        [
            [
                s.spec_name or s.spec_id,
                s.runs,
                *("" if count is None else f"{count:,}" for count in s.tokens()),
                "" if s.cost_usd is None else cost_text(s.cost_usd),
                "" if s.turns is None else s.turns,
                "" if s.duration_ms is None else f"{s.duration_ms / 1000:.1f}s",
            ]
            for s in specs
        ],
    )


def _show_hook_runs(hook_runs: list[HookRunInfo]) -> None:
    print_table(
        "Hook runs",
        ["event", "#", "mode", "spec", "status", "used", "error", "started", "log"],
        [
            [
                h.event,
                h.hook_index,
                _hook_mode(h.hook_config),
                h.spec_id or "",
                h.status,
                used_text(h),
                h.error or "",
                h.started_at,
                h.log_path or "",
            ]
            for h in hook_runs
        ],
    )


def _hook_mode(hook: Mapping[str, Any]) -> str:
    """``command``, ``agent (claude)`` or ``interactive``: a stored hook's mode."""
    mode = hook_mode(hook)
    if mode == COMMAND_HOOK:
        return "command"
    if mode == AGENT_HOOK:
        return f"agent ({hook['platform']})"
    return "interactive"


def _show_queue_progress(progress: QueueProgress) -> None:
    queue = progress.queue_name or progress.queue_id
    print_table(
        f"Queue progress: {queue}, run #{progress.run_number} ({progress.run_status})",
        ["spec", "name", "group", "outcome", "nodes run"],
        [
            [
                m.spec_id,
                m.name or "",
                m.group or "",
                m.outcome or "(in progress)",
                " → ".join(m.nodes),
            ]
            for m in progress.members
        ],
    )


def _runs(node: StoredNode) -> str:
    """What runs the node: its command, its ensemble, or its agent (with its permission
    level and ``on_denial`` when set)."""
    kind = node_kind(node)
    if kind == COMMAND_NODE:
        return "command"
    denial = ["fails on denial"] if node.get("on_denial") == "fail" else []
    if kind == ENSEMBLE_NODE:
        details = [*_details(node, ("permissions",)), *denial]
        return _with_details(f"ensemble {node['ensemble']}", details)
    return _with_details(node["platform"], [*_details(node, _AGENT_DETAILS), *denial])


_AGENT_DETAILS = ("model", "effort", "permissions")


def _agent(config: Mapping[str, Any]) -> str:
    """``claude (sonnet, high, read-only)``: a platform with the model, effort and
    permission level it was given (an ensemble member, or an agent node, which carries
    the same fields)."""
    return _with_details(config["platform"], _details(config, _AGENT_DETAILS))


def _details(config: Mapping[str, Any], names: tuple[str, ...]) -> list[str]:
    return [str(config[name]) for name in names if config.get(name) is not None]


def _with_details(what: str, details: list[str]) -> str:
    return f"{what} ({', '.join(details)})" if details else what


def _excerpt(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= _STEP_EXCERPT else first[: _STEP_EXCERPT - 1] + "…"
