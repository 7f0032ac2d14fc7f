"""``canopy graph logs``: the output of a graph's node runs, rendered for a person.

The reading (which node runs, which files, how each platform's output reads) is
:mod:`canopy.ops.logs`, imported when the command runs, not when ``canopy graph`` is built
for its help. Here is only the printing: a header per node run, then its lines, each
escaped (:func:`~canopy.cli.render.printable`), since an agent's output may hold anything.
"""

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from canopy.cli.options import JsonFlag
from canopy.cli.render import print_block, print_json, print_line
from canopy.cli.store import open_store

if TYPE_CHECKING:
    from canopy.ops.graph_info import NodeRunInfo, RunInfo
    from canopy.ops.logs import NodeLog

INTERRUPTED = 130
"""The exit status of a ``--follow`` stopped with Ctrl-C, as a shell reports SIGINT."""


def logs(
    graph: Annotated[str, typer.Argument(help="Graph name or id prefix.")],
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", help="Keep printing as the run goes on, until it settles (Ctrl-C stops)."
        ),
    ] = False,
    spec: Annotated[
        str | None, typer.Option("--spec", help="Only this spec's node runs (id or id prefix).")
    ] = None,
    node: Annotated[str | None, typer.Option("--node", help="Only this node's runs.")] = None,
    raw: Annotated[
        bool, typer.Option("--raw", help="Print each log as stored instead of rendered.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Print the output of the latest run's node runs: the agent's text, tool calls, errors,
    denials, limits and usage."""
    from canopy.ops.logs import GraphLogs

    store = open_store()
    found = GraphLogs(store, graph, spec=spec, node=node, raw=raw)
    if found.run is None:
        if not as_json:
            print_line(f"graph {found.graph_name} has no runs yet")
        return
    of = "".join(f" of {what} {name}" for what, name in (("spec", spec), ("node", node)) if name)
    nothing = f"run {found.run.number} of {found.graph_name} has no node runs{of}"
    printer = _Printer(found.run, as_json, nothing)
    try:
        if follow:
            import asyncio

            from canopy.ops.logs import follow as follow_logs

            asyncio.run(follow_logs(store, found, printer.show))
        else:
            printer.show(found.look(to_the_end=True))
        printer.close()
    except KeyboardInterrupt:
        raise typer.Exit(INTERRUPTED) from None


class _Printer:
    """Prints node runs' lines as they are read: a header before each node run's first
    lines (and a closing line for one that was running when its header was printed), as
    :class:`~canopy.ops.logs.LogLines` words them; with ``--json``, one object per node
    run once its last lines are in. ``nothing`` is what it says when there was no node run
    to show."""

    def __init__(self, run: "RunInfo", as_json: bool, nothing: str) -> None:
        from canopy.ops.logs import LogLines

        self._run = run
        self._as_json = as_json
        self._nothing = nothing
        self._lines = LogLines()
        self._unfinished: dict[int, tuple[NodeRunInfo, list[str]]] = {}
        """``--json``: each node run's latest record and its lines read so far."""

    def show(self, read: "list[NodeLog]") -> None:
        """Print what one look read, at once: a pipe reader sees each line as it comes."""
        for piece in read:
            if self._as_json:
                self._collect(piece)
            else:
                self._print(piece)
        sys.stdout.flush()

    def close(self) -> None:
        """After the last look: with ``--json``, the node runs still running, as they are;
        without, a line saying there was nothing to show, if there was not."""
        for node_run, lines in self._unfinished.values():
            print_json(_record(self._run, node_run, lines))
        self._unfinished.clear()
        if not (self._as_json or self._lines.headers):
            print_line(self._nothing)

    def _print(self, piece: "NodeLog") -> None:
        for line in self._lines.lines(piece):
            (print_block if line.output else print_line)(line.text)

    def _collect(self, piece: "NodeLog") -> None:
        _, lines = self._unfinished.pop(piece.node_run.id, (piece.node_run, []))
        lines += piece.lines
        if piece.last:
            print_json(_record(self._run, piece.node_run, lines))
        else:
            self._unfinished[piece.node_run.id] = (piece.node_run, lines)


def _record(run: "RunInfo", node_run: "NodeRunInfo", lines: list[str]) -> dict[str, Any]:
    """One node run's ``--json`` object (:func:`~canopy.ops.logs.log_record`)."""
    from canopy.ops.logs import log_record

    return log_record(run, node_run, lines)


def register(graph_app: typer.Typer) -> None:
    """Add ``logs`` to the ``graph`` sub-app."""
    graph_app.command("logs")(logs)
