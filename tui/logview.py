"""The log view: what the node runs of a graph's latest run printed, kept current.

The lines ``canopy graph logs --follow`` prints (:class:`~canopy.ops.logs.GraphLogs`
reads them, :class:`~canopy.ops.logs.LogLines` words them), scrolled to the end. A timer
of the screen asks for a look twice a second, on a worker thread as every read of the
TUI is; each look reads only what was written since the last one, so a long log costs
its length once. The timer belongs to the screen and stops when it closes.

An agent's output may hold anything, escape sequences included, so every line is escaped
as the CLI escapes it (:func:`~canopy.printable.printable`) before it reaches the screen.
The screen is modal: the main screen's keys do not reach through it, so text typed here
starts, pauses or changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Label, Log

from canopy.errors import Refused, unexpected_error_line
from canopy.printable import printable

if TYPE_CHECKING:
    from canopy.ops.logs import GraphLogs, Line, LogLines
    from canopy.store.engine import Store

LOOK_SECONDS = 0.5
"""How often the view looks for new lines: the pace of a person reading along."""
KEPT_LINES = 10_000
"""How many lines the view keeps; earlier ones scroll away for good (``canopy graph logs``
prints them all)."""


class LogScreen(ModalScreen[None]):
    """The log of graph ``graph``'s latest run, read from the store ``store`` gives (the
    app's, opened on first use, on a worker thread)."""

    DEFAULT_CSS = """
    LogScreen { background: $background; }
    LogScreen > #log-frame { width: 100%; height: 100%; }
    #log-title { text-style: bold; background: $boost; width: 100%; padding: 0 1; }
    #log { height: 1fr; padding: 0 1; }
    #log-hint { color: $text-muted; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close")]

    def __init__(self, graph: str, store: Callable[[], Store]) -> None:
        super().__init__()
        self.graph = graph
        self._store = store
        self._logs: GraphLogs | None = None
        self._lines: LogLines | None = None
        self._reading = False
        """A look is under way: the next one waits for it (a reader is not thread-safe)."""
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="log-frame"):
            yield Label(Text(f"Reading the logs of {printable(self.graph)}…"), id="log-title")
            yield Log(max_lines=KEPT_LINES, id="log")
            yield Label(
                "escape closes · up, down, page up, page down, home, end scroll", id="log-hint"
            )

    def on_mount(self) -> None:
        self.query_one(Log).focus()
        self._timer = self.set_interval(LOOK_SECONDS, self.look)
        self.look()

    def on_unmount(self) -> None:
        """Closed: no more looks."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    @property
    def looking(self) -> bool:
        """Whether the view still looks for new lines (until it is closed)."""
        return self._timer is not None

    def look(self) -> None:
        """Read what was written since the last look, unless a look is under way."""
        if not self._reading and self.looking:
            self._reading = True
            self.read()

    @work(thread=True, group="logs")
    def read(self) -> None:
        """One look, on a worker thread; then show what it read (or why it could not)."""
        try:
            title, lines = self._read()
        except Exception as error:
            line = str(error) if isinstance(error, Refused) else unexpected_error_line(error)
            self.app.call_from_thread(self.show, line, [])
        else:
            self.app.call_from_thread(self.show, title, lines)

    def _read(self) -> tuple[str, list[str]]:
        """The title and the new lines, escaped. The reader is made at the first look (its
        operations load here, not when the TUI starts), and again while the graph has
        never run, so a first run started meanwhile is shown."""
        from canopy.ops.logs import GraphLogs, LogLines

        if self._logs is None or self._logs.run is None:
            self._logs, self._lines = GraphLogs(self._store(), self.graph), LogLines()
        logs, lines = self._logs, self._lines
        assert lines is not None  # made with the reader
        name = printable(logs.graph_name)
        if logs.run is None:
            return f"graph {name} has no runs yet", []
        read = [
            shown for piece in logs.look() for line in lines.lines(piece) for shown in _shown(line)
        ]
        return f"Logs of {name}, run {logs.run.number}", read

    def show(self, title: str, lines: list[str]) -> None:
        """Show a look: its title, and its lines at the end, following them if the view
        was at the end (a person who scrolled back to read stays where they are)."""
        self._reading = False
        if not self.is_attached:
            return  # closed while the look was under way
        heading = self.query_one("#log-title", Label)
        if str(heading.content) != title:
            heading.update(Text(title))
        if lines:
            log = self.query_one(Log)
            log.write("".join(f"{line}\n" for line in lines), scroll_end=log.is_vertical_scroll_end)

    def action_close(self) -> None:
        """Back to the main screen; the looks stop."""
        self.dismiss(None)


def _shown(line: Line) -> list[str]:
    """A line as the CLI prints it, escaped, one screen line per line it holds: a line of
    output keeps its tabs and newlines, any other is one line."""
    return printable(line.text, multiline=line.output).split("\n")
