"""The detail pane's text: one markdown page per spec, queue, graph and session.

Each page is made from what an operation returned (``spec get``, ``queue list``,
``graph info``, the session with its transcript), the same data the CLI prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from canopy.backlog.specformat import SECTION_NAMES
from canopy.budget import standing_text
from canopy.contracts.graph_run_blocker import DirtyTree, MergeConflict, ways_out

if TYPE_CHECKING:
    from canopy.ops.graph_info import GraphInfo


def _cell(value: Any) -> str:
    """A table cell: one line, no column separators, a dash for nothing."""
    if value is None or value == "":
        return "-"
    return " ".join(str(value).split()).replace("|", "\\|")


def _table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = [f"| {' | '.join(columns)} |", f"|{'---|' * len(columns)}"]
    lines += [f"| {' | '.join(_cell(v) for v in row)} |" for row in rows]
    return "\n".join(lines)


def _quote(text: str) -> str:
    """``text`` as a fenced block, so a prompt or reply shows as written."""
    fence = "~~~~" if "```" in text else "```"
    return f"{fence}\n{text}\n{fence}"


def spec_page(spec: dict[str, Any]) -> str:
    """A spec: its fields, then its seven sections rendered as markdown."""
    head = [
        f"# {spec['name']}",
        f"`{spec['id']}` · **{spec['status']}** · workdir `{spec['workdir'] or '(none)'}`",
    ]
    if spec["graphs"]:
        head.append(f"bound to {', '.join(spec['graphs'])}")
    if spec["queues"]:
        head.append(f"in queues {', '.join(q['name'] for q in spec['queues'])}")
    if spec["needs_conversion"]:
        head.append(
            "> **needs conversion**: this body is in the old heading format; rewrite it "
            "into the tagged format (see docs/specs.md)."
        )
        return "\n\n".join([*head, _quote(spec["body"])])
    sections = [
        f"## {name.replace('_', ' ').capitalize()}\n\n{spec['sections'][name]}"
        for name in SECTION_NAMES
    ]
    return "\n\n".join(head + sections)


def queue_page(queue: dict[str, Any]) -> str:
    """A queue: its members in order, with groups, spec status and the outcome of the
    latest run over the queue (a dash while none: not reached, or under way)."""
    run = queue["latest_run"]
    outcomes: dict[str, str | None] = {} if run is None else run["outcomes"]
    rows = [
        (m["position"], m["name"], m["group"], m["status"], outcomes.get(m["spec_id"]))
        for m in queue["members"]
    ]
    columns = ("#", "spec", "group", "status", "latest run")
    members = _table(columns, rows) if rows else "(empty)"
    if run is None:
        latest = "Latest run: none yet."
    else:
        ended = f", ended {run['ended_at']}" if run["ended_at"] else ""
        latest = (
            f"Latest run: **{run['status']}** · graph **{run['graph']}** run {run['number']} "
            f"(`{run['id']}`) · started {run['started_at']}{ended}"
        )
    return f"# {queue['name']}\n\n`{queue['id']}`\n\n{latest}\n\n{members}"


def _elapsed(since: str | None, now: datetime) -> str:
    if since is None:
        return ""
    seconds = max(0, int((now - datetime.fromisoformat(since)).total_seconds()))
    minutes, seconds = divmod(seconds, 60)
    return f" for {minutes}m{seconds:02d}s" if minutes else f" for {seconds}s"


def graph_page(info: GraphInfo, now: datetime, ui_url: str | None) -> str:
    """A graph: status, blocker and ways out, what runs now, node and hook runs, queue
    progress, the consistency warning and where to watch the run in Temporal's UI."""
    dirty = "yes" if info.allow_dirty_start else "no"
    permissions = info.permissions or "platform default"
    parts = [
        f"# {info.name}",
        f"`{info.id}` · **{info.status}** · workdir `{info.workdir or '(none)'}` · "
        f"allow_dirty_start: **{dirty}** · lanes: **{info.lanes}** · "
        f"permissions: **{permissions}**",
    ]
    if info.budget is not None:
        parts.append(f"budget: {standing_text(info.budget, info.budget_spent)}")
    stored = info.blocked()
    if stored is not None:
        blocker = [f"## ⚠ Blocked\n\n{stored.message}"]
        if isinstance(stored, DirtyTree) and stored.dirty_paths:
            shown = "\n".join(f"- `{path}`" for path in stored.dirty_paths)
            blocker.append(f"Dirty paths ({stored.dirty_count}):\n\n{shown}")
        if isinstance(stored, MergeConflict) and stored.conflict_paths:
            shown = "\n".join(f"- `{path}`" for path in stored.conflict_paths)
            blocker.append(f"Conflicting paths ({stored.conflict_count}):\n\n{shown}")
        if ways_out(stored):
            ways = "\n".join(f"- {way}" for way in ways_out(stored))
            blocker.append(f"Ways out:\n\n{ways}")
        parts.append("\n\n".join(blocker))
    if info.consistency_warning:
        parts.append(f"> **consistency warning**: {info.consistency_warning}")
    if info.scheduled_resume_at:
        parts.append(f"Waiting out a usage limit until {info.scheduled_resume_at}.")
    if info.lanes_in_flight:
        flying = [
            (lane.spec_name or lane.spec_id, lane.node or "(between nodes)", lane.worktree)
            for lane in info.lanes_in_flight
        ]
        parts.append(
            f"## Lanes: {len(flying)} of {info.lanes} busy\n\n"
            + _table(("spec", "node", "worktree"), flying)
        )
    running = [n for n in info.node_runs if n.status == "running"]
    for node_run in running:
        parts.append(
            f"Now: spec **{node_run.spec_name or node_run.spec_id}**, node "
            f"**{node_run.node}**{_elapsed(node_run.started_at, now)}"
        )
    if info.active_run is not None and info.active_run.workflow_id:
        workflow = info.active_run.workflow_id
        link = f"{ui_url}/namespaces/default/workflows/{workflow}" if ui_url else None
        parts.append(
            f"Run {info.active_run.id} · workflow `{workflow}`" + (f" · {link}" if link else "")
        )
    if info.queue_progress is not None:
        progress = info.queue_progress
        reached = [
            (m.name or m.spec_id, m.group, " → ".join(m.nodes), m.outcome) for m in progress.members
        ]
        parts.append(
            f"## Queue {progress.queue_name or progress.queue_id} (run {progress.run_number}, "
            f"{progress.run_status})\n\n" + _table(("spec", "group", "nodes", "outcome"), reached)
        )
    if info.node_runs:
        launched = [
            (
                n.spec_name or n.spec_id,
                n.node,
                n.status,
                n.exit_code,
                n.started_at,
                n.denied(),
                n.error,
            )
            for n in info.node_runs
        ]
        columns = ("spec", "node", "status", "exit", "started", "denied", "error")
        parts.append("## Node runs\n\n" + _table(columns, launched))
    if info.completion_hook_runs:
        fired = [
            (h.event, h.hook_index, h.status, h.started_at, h.error)
            for h in info.completion_hook_runs
        ]
        parts.append(
            "## Hook runs\n\n" + _table(("event", "hook", "status", "started", "error"), fired)
        )
    return "\n\n".join(parts)


def session_page(session: dict[str, Any]) -> str:
    """A session: its fields and the latest turns of its transcript."""
    parts = [
        f"# {session['name']}",
        f"`{session['id']}` · **{session['status']}** · {session['platform']} · "
        f"workdir `{session['workdir']}`",
    ]
    if session["queued_messages"]:
        parts.append(f"{session['queued_messages']} message(s) waiting for delivery.")
    shown, total = len(session["turns"]), session["turns_total"]
    if total > shown:
        parts.append(f"(the last {shown} of {total} turns)")
    if not session["turns"]:
        parts.append("No turns yet.")
    for turn in session["turns"]:
        source = turn.get("provenance", {}).get("source", "?")
        parts.append(f"### {turn.get('at', '')} · {source} · {turn.get('status', '')}")
        parts.append(_quote(turn.get("prompt") or ""))
        if turn.get("reply"):
            parts.append(_quote(turn["reply"]))
        if turn.get("error"):
            parts.append(f"error: {turn['error']}")
    return "\n\n".join(parts)
