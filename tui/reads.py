"""What the TUI reads, on a worker thread: the sidebar and the selected item's page.

Every read is an operation's (the ones ``canopy spec list``, ``queue list``,
``graph list``, ``graph info`` and ``session list`` run); the screen only shows them.
The graph and session operations load pydantic, the graph model and the platforms, so
they are imported by the reads that use them: the Backlog is drawn before they load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from canopy.ops import projects, queues, specs
from canopy.ops.transcripts import session_transcript
from canopy.temporal import devserver
from canopy.timefmt import utcnow
from canopy.tui import panes, rows
from canopy.workdir import normalize_workdir

if TYPE_CHECKING:
    from canopy.store.engine import Store

Kind = Literal["spec", "queue", "graph", "session"]


@dataclass(frozen=True)
class Sidebar:
    """The project picker's choices and the four sections for the selected project, or
    some of them (``None``: not part of this read)."""

    projects: list[str] | None = None
    backlog: rows.Listing | None = None
    queues: rows.Listing | None = None
    graphs: rows.Listing | None = None
    sessions: rows.Listing | None = None


@dataclass(frozen=True)
class Page:
    """The detail pane for one item: its markdown, and the node names of a graph (what
    ``continue`` from a node may name)."""

    kind: Kind
    item_id: str
    markdown: str
    nodes: tuple[str, ...] = ()


def start_project(store: Store, workdir: str | None, cwd: str) -> str | None:
    """The project to start on: ``--workdir`` when given, else the one ``cwd`` lies in,
    else ``None`` (all projects)."""
    if workdir is not None:
        return normalize_workdir(workdir)
    return projects.project_of(projects.project_list(store), cwd)


def read_backlog(store: Store, project: str | None, text: str = "") -> Sidebar:
    """The project picker's choices (``project list``), the standalone specs of
    ``project`` (a workdir, or ``None`` for all) and every queue, the lists filtered by
    ``text``. Of the Backlog, only the rows shown are read, and the count: ``spec list
    --standalone --limit`` and ``spec count``, so 10,000 specs cost what 500 do."""
    contains = text or None
    shown = specs.spec_list(store, project, None, True, contains, rows.SHOWN_ROWS)
    total = specs.spec_count(store, project, None, True, contains)["count"]
    return Sidebar(
        projects=projects.project_list(store),
        backlog=rows.Listing([rows.spec_row(spec) for spec in shown], total),
        queues=rows.listing(queues.queue_list(store)["queues"], rows.queue_row, text),
    )


def read_activity(store: Store, project: str | None, finished: bool, text: str = "") -> Sidebar:
    """The graphs and sessions of ``project`` (live sessions, or all when asked),
    filtered by ``text``."""
    from canopy.ops import graphs, sessions

    def in_project(workdir: str | None) -> bool:
        return project is None or workdir == project

    graph_list = [g for g in graphs.graph_list(store) if in_project(g["workdir"])]
    session_list = sessions.session_list(store, finished)["sessions"]
    now = utcnow()
    return Sidebar(
        graphs=rows.listing(rows.blocked_first(graph_list), lambda g: rows.graph_row(g, now), text),
        sessions=rows.listing(
            [s for s in session_list if in_project(s["workdir"])], rows.session_row, text
        ),
    )


def read_page(store: Store, kind: Kind, item_id: str) -> Page:
    """The page for one item, read as ``spec get``, ``queue list Q``, ``session get
    --transcript`` or ``graph info`` (with its consistency check against Temporal)."""
    if kind == "spec":
        return Page(kind, item_id, panes.spec_page(specs.spec_get(store, item_id)))
    if kind == "queue":
        return Page(kind, item_id, panes.queue_page(queues.queue_list(store, item_id)))
    if kind == "session":
        return Page(kind, item_id, panes.session_page(session_transcript(store, item_id)))
    from canopy.ops import graphs

    info = graphs.graph_info(store, item_id)
    ui_url = devserver.status()["ui_url"]
    page = panes.graph_page(info, utcnow(), ui_url)
    return Page(kind, item_id, page, tuple(node["name"] for node in info.nodes))


@dataclass(frozen=True)
class SessionChoice:
    """One line of the New Session dialog: its label, and the action of
    :mod:`canopy.tui.steering` (with its arguments after the store) that picking it
    runs."""

    label: str
    action: str
    args: tuple[str | None, ...]


def read_session_choices(store: Store, workdir: str) -> list[SessionChoice]:
    """The New Session dialog for ``workdir``: a new session on each platform, then the
    Resume step, newest first: the finished sessions that worked there (each comes back
    with its id and name, as ``session resume`` brings it) and the harness's own
    conversations there that no Canopy session drives (each becomes a new session).
    A platform that cannot list its conversations is left out of the Resume step."""
    from canopy.errors import Refused
    from canopy.ops import sessions
    from canopy.platforms import platform_names

    names = platform_names()
    choices = [
        SessionChoice(f"new {name} session", "new_session", (name, workdir)) for name in names
    ]
    listed = sessions.session_list(store, include_finished=True)["sessions"]
    finished = [s for s in listed if s["status"] == "finished" and s["workdir"] == workdir]
    choices += [
        SessionChoice(
            f"resume {s['name']} ({s['platform']}, {s['id']})",
            "resume",
            (s["id"], None, None, None),
        )
        for s in reversed(finished)
    ]
    for name in names:
        try:
            found = sessions.harness_conversations(store, name, workdir)["conversations"]
        except Refused:
            continue
        choices += [
            SessionChoice(
                f"resume {name} conversation {c['title'] or c['conversation_id']}",
                "resume",
                (None, c["conversation_id"], name, workdir),
            )
            for c in found
            if c["session_id"] is None
        ]
    return choices


def read_daemon() -> str | None:
    """Why no daemon serves now (one line), or ``None`` when one does (``server check``)."""
    import asyncio

    from canopy.ops import control

    problem: str | None = asyncio.run(control.daemon_check())["problem"]
    return problem
