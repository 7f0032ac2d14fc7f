"""Sidebar rows: one line of styled text per spec, queue, graph and session.

The rows are built from what the operations return, as the CLI's tables are; only the
look is decided here (a mark per status, a blocked graph first and in red, the time left
of a usage-limit wait).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.text import Text

Row = tuple[str, Text]
"""An option's id (the spec, queue, graph or session id) and the line shown for it."""

SHOWN_ROWS = 500
"""At most this many rows per section; a last line says how many more there are. Textual
measures every option of a list when it is set, so 10,000 rows would take a second to
show, and nobody scrolls through them: ``/`` filters instead."""

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


@dataclass(frozen=True)
class Listing:
    """What one sidebar section shows: the rows of the first :data:`SHOWN_ROWS` items
    that match the filter, and how many matched in all (the heading's count)."""

    rows: list[Row]
    total: int


def listing(
    items: list[dict[str, Any]], row: Callable[[dict[str, Any]], Row], text: str = ""
) -> Listing:
    """The items whose name contains ``text`` (already lower-case, as ``spec list
    --contains`` matches the Backlog's), as rows; only the rows shown are built."""
    matched = [item for item in items if text in item["name"].lower()] if text else items
    return Listing([row(item) for item in matched[:SHOWN_ROWS]], len(matched))


def spec_row(spec: dict[str, Any]) -> Row:
    """A Backlog row: status mark and name."""
    return spec["id"], _status(spec["status"]) + Text(spec["name"])


def queue_row(queue: dict[str, Any]) -> Row:
    """A queue row: name and pending / total members."""
    return queue["id"], Text(queue["name"]) + Text(
        f" · {queue['pending']}/{queue['members']}", style="dim"
    )


def blocked_first(graphs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Graphs with the blocked ones first, otherwise in the store's order."""
    return sorted(graphs, key=lambda g: not is_blocked(g))


def graph_row(graph: dict[str, Any], now: datetime) -> Row:
    """A graph row: a blocked graph in red with its flag, the others with their status;
    a usage-limit wait with the time left."""
    if is_blocked(graph):
        line = Text(f"{BLOCKED} ", style="bold red") + Text(graph["name"], style="bold red")
    else:
        line = _status(graph["status"]) + Text(graph["name"])
        line.append(f" · {graph['status']}", style="dim")
    left = countdown(graph["scheduled_resume_at"], now)
    if left is not None:
        line.append(f" · ⏳ {left}", style="magenta")
    return graph["id"], line


def session_row(session: dict[str, Any]) -> Row:
    """A session row: status mark, name, platform and messages still to deliver."""
    line = _status(session["status"]) + Text(session["name"])
    line.append(f" · {session['platform']}", style="dim")
    if session["queued_messages"]:
        line.append(f" · ✉ {session['queued_messages']}", style="yellow")
    return session["id"], line
