"""``canopy tui``: the Textual application, its keys and its text boxes.

:class:`CanopyApp` binds the keys to the actions of :mod:`canopy.tui.actions`, offers
each only when it applies to the selection, and handles the filter and prompt boxes; the
view it builds on (:mod:`canopy.tui.view`) reads and shows, the actions act.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Input

from canopy.tui.actions import ActionsApp
from canopy.tui.logview import LogScreen
from canopy.tui.screens import HelpScreen
from canopy.tui.sections import Section

GRAPH_ACTIONS = frozenset(
    {"continue_run", "run_from_node", "skip_next", "pause", "stop", "reset", "toggle_dirty", "logs"}
)
"""Actions on the selected graph: offered only while a graph is selected."""
QUEUE_ACTIONS = frozenset({"queue_add", "queue_remove", "queue_move", "queue_group"})
"""Actions on the selected queue's members: offered only while a queue is selected."""


class CanopyApp(ActionsApp):
    """The Canopy terminal UI."""

    TITLE = "Canopy"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("g", "run_graph", "Run"),
        Binding("c", "continue_run", "Continue"),
        Binding("n", "run_from_node", "From node"),
        Binding("k", "skip_next", "Skip"),
        Binding("p", "pause", "Pause"),
        Binding("s", "stop", "Stop"),
        Binding("r", "reset", "Reset"),
        Binding("a", "toggle_dirty", "Dirty ok"),
        Binding("l", "logs", "Logs"),
        Binding("e", "edit_spec", "Edit spec"),
        Binding("plus", "new_spec", "New spec", key_display="+"),
        Binding("i", "queue_add", "Add to queue"),
        Binding("x", "queue_remove", "Remove"),
        Binding("m", "queue_move", "Move"),
        Binding("t", "queue_group", "Group"),
        Binding("o", "new_session", "Session"),
        Binding("f", "toggle_finished", "Finished"),
        Binding("D", "doctor", "Doctor"),
    ]
    HELP_EXTRA = (
        ("tab / shift+tab", "move between the project picker, the lists and the prompt box"),
        ("up / down", "move in a list; the detail pane follows"),
        ("enter", "in the prompt box: send the message to the session"),
        ("escape", "close a dialog, the log view or the filter"),
    )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Graph actions are offered only while a graph is selected, editing a spec only
        while a spec is."""
        if action in GRAPH_ACTIONS or action == "run_graph":
            return self.selected_graph() is not None
        if action == "edit_spec":
            return self.selected is not None and self.selected[0] == "spec"
        if action in QUEUE_ACTIONS:
            return self.selected is not None and self.selected[0] == "queue"
        return True

    def action_help(self) -> None:
        """Every key, in a dialog."""
        keys = [(b.key_display or b.key, b.description) for b in self._bindings_list()]
        self.push_screen(HelpScreen([*keys, *self.HELP_EXTRA]))

    def _bindings_list(self) -> list[Binding]:
        return [b for b in self.BINDINGS if isinstance(b, Binding)]

    def action_logs(self) -> None:
        """What the selected graph's latest run printed, live, in a view of its own."""
        graph = self.selected_graph()
        if graph is not None:
            self.push_screen(LogScreen(graph, self.store))

    def action_toggle_finished(self) -> None:
        """Show finished sessions too, or live ones only."""
        self.finished_sessions = not self.finished_sessions
        self.reread_sidebar()

    def action_filter(self) -> None:
        """Show the filter box: lists keep only rows containing its text."""
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        """The filter applies as it is typed."""
        if event.input.id == "filter":
            self.filter_text = event.value.strip().lower()
            self.reread_sidebar()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the prompt box sends the message; in the filter, back to the lists."""
        if event.input.id == "filter":
            self.query_one("#backlog", Section).focus()
            return
        if self.selected is None or self.selected[0] != "session" or not event.value.strip():
            return
        session, prompt = self.selected[1], event.value
        event.input.clear()
        self.act("send", "send", session, prompt)

    def on_key(self, event: Any) -> None:
        """Escape in the filter box clears and hides it."""
        box = self.query_one("#filter", Input)
        if event.key == "escape" and box.has_focus:
            box.value = ""
            box.remove_class("shown")
            self.query_one("#backlog", Section).focus()


def run(workdir: str | None) -> None:
    """Run the TUI until the user quits."""
    CanopyApp(workdir=workdir).run()
