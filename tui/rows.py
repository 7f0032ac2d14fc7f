"""Sidebar rows: one line of styled text per spec, queue, graph and session.

The rows are built from what the operations return, as the CLI's tables are; only the
look is decided here (a mark per status, a blocked graph first and in red, the time left
of a usage-limit wait).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.text import Text

Row = tuple[str, Text]
"""An option's id (the spec, queue, graph or session id) and the line shown for it."""

BLOCKED = "⚠ BLOCKED"
STATUS_MARKS = {
    "pending": ("○", "yellow"),
    "in_progress": ("◐", "cyan"),
    "completed": ("●", "green"),
    "failed": ("✗", "red"),
    "skipped": ("-", "dim"),
    "idle": ("·", "dim"),
    "running": ("▶", "cyan"),
    "paused": ("‖", "yellow"),
    "live": ("●", "green"),
    "finished": ("○", "dim"),
}
"""A mark and a colour per status, so the state of a row reads at a glance."""


def is_blocked(graph: dict[str, Any]) -> bool:
    """Paused with a blocker (the dirty-tree guard, a failed node…): the graph waits for a
    person, and a resume (``continue``) or a reset clears the blocker."""
    return graph["status"] == "paused" and graph["blocker"] is not None


def countdown(resume_at: str | None, now: datetime) -> str | None:
    """``h:mm:ss`` left until a usage-limit wait ends, or ``None`` when none is set."""
    if resume_at is None:
        return None
    left = max(0, int((datetime.fromisoformat(resume_at) - now).total_seconds()))
    hours, rest = divmod(left, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def _status(status: str) -> Text:
    mark, style = STATUS_MARKS.get(status, ("?", ""))
    return Text(f"{mark} ", style=style)


def spec_rows(specs: list[dict[str, Any]]) -> list[Row]:
    """Backlog rows: status mark and name."""
    return [(s["id"], _status(s["status"]) + Text(s["name"])) for s in specs]


def queue_rows(queues: list[dict[str, Any]]) -> list[Row]:
    """Queue rows: name and pending / total members."""
    return [
        (q["id"], Text(q["name"]) + Text(f" · {q['pending']}/{q['members']}", style="dim"))
        for q in queues
    ]


def graph_rows(graphs: list[dict[str, Any]], now: datetime) -> list[Row]:
    """Graph rows, blocked ones first (otherwise in the store's order): a blocked graph
    in red with its flag, the others with their status; a usage-limit wait with the time
    left."""
    rows = []
    for graph in sorted(graphs, key=lambda g: not is_blocked(g)):
        if is_blocked(graph):
            line = Text(f"{BLOCKED} ", style="bold red") + Text(graph["name"], style="bold red")
        else:
            line = _status(graph["status"]) + Text(graph["name"])
            line.append(f" · {graph['status']}", style="dim")
        left = countdown(graph["scheduled_resume_at"], now)
        if left is not None:
            line.append(f" · ⏳ {left}", style="magenta")
        rows.append((graph["id"], line))
    return rows


def session_rows(sessions: list[dict[str, Any]]) -> list[Row]:
    """Session rows: status mark, name, platform and messages still to deliver."""
    rows = []
    for session in sessions:
        line = _status(session["status"]) + Text(session["name"])
        line.append(f" · {session['platform']}", style="dim")
        if session["queued_messages"]:
            line.append(f" · ✉ {session['queued_messages']}", style="yellow")
        rows.append((session["id"], line))
    return rows
