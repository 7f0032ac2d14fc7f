"""What ``canopy graph logs`` shows: the node runs of a graph's latest run, each with its
output as a person reads it.

A node run's output is the ``output.log`` its process writes, read from disk: as stored
(``raw``, and always for a command node), or rendered by the adapter of the platform that
ran it (:meth:`~canopy.platforms.base.Platform.render`), with what the run came to once it
has ended (:meth:`~canopy.platforms.base.Platform.render_end`). :class:`GraphLogs` reads
the node runs from the store (the rows ``graph info`` shows) and each log from where its
last look stopped, so one reader serves a single look and ``--follow`` alike
(:func:`follow`). Only files under the data dir's ``logs`` directory are read: the store
is not trusted to say where a file is. :class:`LogLines` words what the looks read as the
lines a person reads, headers and all, for both front ends that show them: the CLI and
the TUI's log view.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from canopy.errors import Refused
from canopy.limits import LOG_LINES_LIMIT, check_range
from canopy.ops.graph_info import NodeRunInfo, RunInfo, graph_runs, node_runs_of
from canopy.paths import OUTPUT_LOG, canopy_home, run_log_dir
from canopy.platforms import Platform, get_platform
from canopy.platforms.view import LogContext
from canopy.store.queries import resolve_id
from canopy.temporal.client import this_host

if TYPE_CHECKING:
    from collections.abc import Callable

    from canopy.store.engine import Store


@dataclass(frozen=True)
class NodeLog:
    """A node run and the lines of its log read by one look, as they are shown."""

    node_run: NodeRunInfo
    lines: list[str]
    first: bool
    """The node run's first lines (its header goes before them)."""
    last: bool
    """Its last: the node run has ended and its log is read to the end."""


def log_record(run: RunInfo, node_run: NodeRunInfo, lines: list[str]) -> dict[str, Any]:
    """A node run's ``graph logs --json`` object: the node run as ``graph info --json``
    has it, its run's id and number, and its lines."""
    return {"run_id": run.id, "run_number": run.number, **asdict(node_run), "lines": lines}


def header(node_run: NodeRunInfo) -> str:
    """The line ``graph logs`` shows before a node run's lines, in the CLI and the TUI:
    ``implement · Login page (spec-xemw44rs26) · visit 1 · claude · succeeded``."""
    spec = f"{node_run.spec_name} ({node_run.spec_id})" if node_run.spec_name else node_run.spec_id
    runs = node_run.platform or "command"
    return f"{node_run.node} · {spec} · visit {node_run.visit} · {runs} · {outcome(node_run)}"


def outcome(node_run: NodeRunInfo) -> str:
    """``running``, ``succeeded``, or ``failed: exit code 3``: its status and why (a
    header's last part, and the closing line of a node run whose header said running)."""
    return f"{node_run.status}: {node_run.error}" if node_run.error else node_run.status


class Line(NamedTuple):
    """One line ``graph logs`` shows."""

    text: str
    output: bool
    """A line of a node run's output, shown with its tabs and any newline a platform put
    in it; else a line of ``graph logs``' own (a header, the blank line between node runs,
    a closing line), shown as one line."""


class LogLines:
    """What successive looks read, as the lines a person reads them in the CLI and the
    TUI alike: a header before each node run's first lines (after a blank line, but for
    the first), then its output, and for a node run whose header said ``running``, a
    closing line with how it ended once it has."""

    def __init__(self) -> None:
        self.headers = 0
        """How many node runs were shown so far."""
        self._running: set[int] = set()
        """Node runs whose header said ``running``."""

    def lines(self, piece: NodeLog) -> list[Line]:
        """The lines for one node run's piece of a look."""
        node_run, shown = piece.node_run, []
        if piece.first:
            if self.headers:
                shown.append(Line("", output=False))
            self.headers += 1
            shown.append(Line(f"── {header(node_run)}", output=False))
            if not piece.last:
                self._running.add(node_run.id)
        shown += [Line(line, output=True) for line in piece.lines]
        if piece.last and node_run.id in self._running:
            self._running.discard(node_run.id)
            shown.append(Line(f"── {node_run.node}: {outcome(node_run)}", output=False))
        return shown


class GraphLogs:
    """The node runs of graph ``graph``'s latest run in launch order, optionally only one
    spec's (``spec``: an id or id prefix) or one node's, each with its log read so far.

    ``run`` is ``None`` for a graph that never ran. Each :meth:`look` gives what was
    written since the last one.
    """

    def __init__(
        self,
        store: Store,
        graph: str,
        *,
        spec: str | None = None,
        node: str | None = None,
        raw: bool = False,
    ) -> None:
        with store.transaction() as rows:
            self.graph_id = resolve_id(rows, "graph", graph)
            named = rows("SELECT name FROM graphs WHERE id = :id", {"id": self.graph_id})
            self.graph_name: str = named[0]["name"]
            self.spec_id = resolve_id(rows, "spec", spec) if spec is not None else None
            runs = graph_runs(rows, self.graph_id)
        self.run: RunInfo | None = runs[0] if runs else None
        self._store, self._node, self._raw = store, node, raw
        self._done = 0
        """How many of the selected node runs were read to their end."""
        self._reading: _Log | None = None

    def look(self, *, to_the_end: bool = False) -> list[NodeLog]:
        """What was written since the last look, node run by node run: the rest of the one
        being read, then each one after it, stopping at one still running (its next lines
        come at the next look) unless ``to_the_end``, which reads each as far as it goes.

        The store is read before the files: a node run it calls ended has all its output
        in its log.
        """
        if self.run is None:
            return []
        with self._store.transaction() as rows:
            node_runs = [n for n in node_runs_of(rows, self.run.id) if self._selects(n)]
        read: list[NodeLog] = []
        for node_run in node_runs[self._done :]:
            log = self._reading
            if log is None or log.node_run.id != node_run.id:
                log = _Log(node_run, self.run, self._raw)
            ended = node_run.status != "running"
            lines = log.read(to_the_end=ended or to_the_end)
            if ended:
                lines += log.end()
            read.append(NodeLog(node_run, lines, first=log is not self._reading, last=ended))
            if not (ended or to_the_end):
                self._reading = log
                break
            self._done, self._reading = self._done + 1, None
        return read

    def _selects(self, node_run: NodeRunInfo) -> bool:
        """Whether the node run is one asked for (its spec and its node, when given)."""
        spec = self.spec_id is None or node_run.spec_id == self.spec_id
        return spec and (self._node is None or node_run.node == self._node)


DEFAULT_TAIL_LINES = 200
"""How many lines MCP ``graph`` ``logs`` answers unless told (its ``limit``)."""


def log_tail(
    store: Store,
    graph: str,
    *,
    spec: str | None = None,
    node: str | None = None,
    raw: bool = False,
    limit: int = DEFAULT_TAIL_LINES,
) -> dict[str, Any]:
    """What MCP ``graph`` ``logs`` answers: the graph's latest run (``None`` for one that
    never ran) and its node runs as ``graph logs --json`` prints them, with only the last
    ``limit`` lines of all: what an agent asks a log for, in a size it can read.

    The cut comes after the last line left out (``lines_omitted`` counts them): the node
    runs wholly before it are left out, the one it falls in keeps its lines after it.
    """
    check_range(limit, LOG_LINES_LIMIT, "limit")
    found = GraphLogs(store, graph, spec=spec, node=node, raw=raw)
    tail: dict[str, Any] = {"graph_id": found.graph_id, "graph_name": found.graph_name}
    run = found.run
    if run is None:
        return {**tail, "run_id": None, "run_number": None, "node_runs": [], "lines_omitted": 0}
    read = found.look(to_the_end=True)
    omitted = max(0, sum(len(piece.lines) for piece in read) - limit)
    records, skip = [], omitted
    for piece in read:
        if skip and skip >= len(piece.lines):
            skip -= len(piece.lines)
            continue
        records.append(log_record(run, piece.node_run, piece.lines[skip:]))
        skip = 0
    return {
        **tail,
        "run_id": run.id,
        "run_number": run.number,
        "node_runs": records,
        "lines_omitted": omitted,
    }


async def follow(store: Store, logs: GraphLogs, show: Callable[[list[NodeLog]], None]) -> None:
    """Show what the node runs print as they print it, and the node runs after them as
    they start, until the graph settles (``graph wait``'s test, which also refuses a run
    whose workflow is gone), then the rest."""
    from canopy.ops.runs import wait_until_settled

    show(logs.look())
    await wait_until_settled(store, logs.graph_id, None, lambda _node: show(logs.look()))
    show(logs.look(to_the_end=True))


class _Log:
    """One node run's log as read so far, and how its lines are shown."""

    def __init__(self, node_run: NodeRunInfo, run: RunInfo, raw: bool) -> None:
        self.node_run = node_run
        self._path, self._problem = _log_file(node_run, run)
        self._platform = None if raw else _platform(node_run.platform)
        self._seen = LogContext(cwd=run.workdir)
        self._offset = 0
        self._partial = b""
        self._output: list[str] = []
        self._written_at: float | None = None

    def read(self, *, to_the_end: bool) -> list[str]:
        """The lines written since the last read, shown; a last line without its newline
        only ``to_the_end`` (it may still be being written)."""
        if self._path is None:
            return []
        try:
            with self._path.open("rb") as log:
                log.seek(self._offset)
                chunk = log.read()
                self._written_at = os.fstat(log.fileno()).st_mtime
        except FileNotFoundError:
            return []  # not started yet, or the node ran where this log is not
        except OSError as error:
            self._path, self._problem = None, f"cannot read {self._path}: {error.strerror}"
            return []
        self._offset += len(chunk)
        *complete, self._partial = (self._partial + chunk).split(b"\n")
        if to_the_end and self._partial:
            complete.append(self._partial)
            self._partial = b""
        lines = [raw.decode("utf-8", errors="replace").removesuffix("\r") for raw in complete]
        self._output += lines
        return [shown for line in lines for shown in self._show(line)]

    def _show(self, line: str) -> list[str]:
        """A line as stored (raw, a command node's), else as its platform shows it."""
        return [line] if self._platform is None else self._platform.render(line, self._seen)

    def end(self) -> list[str]:
        """After the last line: why there is no log to show, or what the run came to."""
        if self._problem is not None:
            return [f"({self._problem})"]
        if self._written_at is None:
            return [self._missing()]
        if self._platform is None:
            return []
        written = datetime.fromtimestamp(self._written_at, UTC)
        return self._platform.render_end("\n".join(self._output), self._seen, written)

    def _missing(self) -> str:
        """Why a node run that ended has no log here: it ran on another machine, or its
        process never started (a refused template, an unknown platform)."""
        host = self.node_run.host
        if host is not None and host != this_host():
            return f"(its log is on {host}: {self._path})"
        return "(no output)"


def _log_file(node_run: NodeRunInfo, run: RunInfo) -> tuple[Path | None, str | None]:
    """Where the node run's log is: as recorded, or, for one still running (recorded when
    it ends), where its process writes it. Refused (``None`` and why) unless it lies under
    this data dir's ``logs`` directory."""
    if node_run.log_path is None:
        return run_log_dir(run.id, "nodes", node_run.id) / OUTPUT_LOG, None
    logs = canopy_home() / "logs"
    path = Path(node_run.log_path)
    if not path.resolve().is_relative_to(logs.resolve()):
        return None, f"not shown: {path} is not under {logs}"
    return path, None


def _platform(name: str | None) -> Platform | None:
    """The adapter that reads the node run's output; none for a command node, or for a
    platform no longer configured (its output is then shown as stored)."""
    if name is None:
        return None
    try:
        return get_platform(name)
    except Refused:
        return None
