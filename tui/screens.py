"""Dialogs over the main screen: confirm a destructive action, pick one of a few
choices, and the key help."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

DIALOG_CSS = """
ModalScreen { align: center middle; }
ModalScreen > Vertical {
    width: 72; height: auto; max-height: 80%;
    border: thick $accent; background: $surface; padding: 1 2;
}
"""


class ConfirmScreen(ModalScreen[bool]):
    """Yes or no to one action that destroys something (stop, reset)."""

    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Label("[b]y[/b] yes   [b]n[/b] no")

    def action_answer(self, answer: bool) -> None:
        """Close with the answer."""
        self.dismiss(answer)


class PickScreen(ModalScreen[str | None]):
    """One of a few choices (a queue to run over, a node to start from); escape cancels."""

    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: Sequence[tuple[str, str]]) -> None:
        """``choices`` are (value, label) pairs."""
        super().__init__()
        self.title_text = title
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text)
            yield OptionList(*(Option(label, id=value) for value, label in self.choices))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """The highlighted choice, on enter or click."""
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        """Close without a choice."""
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key of the main screen, from its own bindings."""

    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, keys: Sequence[tuple[str, str]]) -> None:
        """``keys`` are (key, what it does) pairs."""
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        from textual.widgets import Markdown  # loads markdown-it: not before the first paint

        rows = "\n".join(f"| `{key}` | {what} |" for key, what in self.keys)
        with Vertical():
            yield Markdown(f"## Keys\n\n| key | does |\n|---|---|\n{rows}")
            yield Label("escape closes")

    def action_close(self) -> None:
        """Back to the main screen."""
        self.dismiss(None)


class ReportScreen(ModalScreen[None]):
    """A report to read, line by line as the CLI prints it (``canopy doctor``'s)."""

    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "Close")]

    def __init__(self, title: str, lines: Sequence[str]) -> None:
        super().__init__()
        self.title_text = title
        self.lines = lines

    def compose(self) -> ComposeResult:
        from textual.widgets import Markdown  # loads markdown-it: not before the first paint

        body = "\n".join(self.lines)
        with Vertical():
            yield Markdown(f"## {self.title_text}\n\n```\n{body}\n```")
            yield Label("escape closes")

    def action_close(self) -> None:
        """Back to the main screen."""
        self.dismiss(None)


class AskScreen(ModalScreen[str | None]):
    """One line of text (a new spec's name); enter answers, escape cancels."""

    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Input(id="answer")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """The text typed, on enter."""
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        """Close without an answer."""
        self.dismiss(None)
