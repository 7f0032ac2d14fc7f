"""Printing conventions shared by every command (no typer import: the entry point uses it).

``--json`` prints machine output on stdout; human output uses tables. Refusals are one
line on stderr and exit code 1 (usage errors are typer's exit 2); with ``--json``
they are also a JSON object ``{"error": …}`` on stdout, so a script reading stdout never
has to parse the text. Tables printed to a pipe or file are as wide as their cells:
cutting ids down to the width of a terminal that is not there would lose them. They are
drawn here, in the same box rich draws, without importing rich: there is nothing to fit,
and rich's layout of a few hundred cells was most of ``graph info``'s time.

Human output shows what users and agents typed, and what a store written by an older
Canopy still holds: names with escape sequences, NULs, lone surrogates. Every human
printer here passes its text through :func:`~canopy.printable.printable`, so a name
such as ``\\x1b]0;title\\x07`` is shown as those characters instead of retitling the
terminal, and a newline inside a one-line field cannot forge another line. Rich markup and emoji
codes are off for the same reason: ``[/x]`` in a name is text, not a broken tag. JSON
output needs none of this (json escapes control characters).
"""

from __future__ import annotations

import json
import os
import sys
import time
import unicodedata
from contextlib import nullcontext
from typing import TYPE_CHECKING, TextIO

from canopy.printable import printable as printable

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager
    from typing import Any

    from rich.text import Text

_HEAVY_HEAD = ("┏━┳┓", "┃┃┃", "┡━╇┩", "│││", "└─┴┘")
_ASCII = ("+--+", "|||", "|-+|", "|||", "+--+")
"""The top, header, header rule, row and bottom of rich's default table box (``left,
fill or divider, between columns, right``), and rich's stand-in where only ASCII prints."""


def print_json(data: Any) -> None:
    """Write ``data`` as one line of JSON (unindented keeps json's C encoder; pipe to jq)."""
    sys.stdout.write(json.dumps(data, default=str) + "\n")


def emit(data: Any, as_json: bool, human: Callable[[], None]) -> None:
    """Print ``data`` as JSON when asked, else call ``human`` to render it for people."""
    if as_json:
        print_json(data)
    else:
        human()


def print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Render a table on stdout; an empty table prints a short '(none)' line instead.

    Cells and the title are one-line fields: :func:`printable` escapes their newlines too.
    On a terminal rich draws the table to fit its width (wrapping or cutting long cells);
    elsewhere every cell is printed whole, in the same box.
    """
    shown_title = printable(title) if title else None
    if not rows:
        print_line(f"{shown_title + ': ' if shown_title else ''}(none)")
        return
    cells = [["" if cell is None else printable(str(cell)) for cell in row] for row in rows]
    if _on_terminal(sys.stdout):
        _print_rich_table(shown_title, columns, cells)
    else:
        sys.stdout.write(_plain_table(shown_title, [printable(c) for c in columns], cells))


def _on_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal, as rich decides it (``TTY_COMPATIBLE``,
    ``FORCE_COLOR``)."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    if "FORCE_COLOR" in os.environ:
        return os.environ["FORCE_COLOR"] != ""
    return stream.isatty()


def _print_rich_table(title: str | None, columns: Sequence[str], rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    Console(markup=False, emoji=False).print(table)


def _plain_table(title: str | None, columns: Sequence[str], rows: list[list[str]]) -> str:
    """The table as rich draws it at an unbounded width, title on its own whole line."""
    encoding = (getattr(sys.stdout, "encoding", None) or "utf-8").lower()
    top, head, head_rule, row_line, bottom = _HEAVY_HEAD if encoding.startswith("utf") else _ASCII
    widths = [
        max(_cell_width(text) for text in column) for column in zip(columns, *rows, strict=True)
    ]

    def rule(line: str) -> str:
        return line[0] + line[2].join(line[1] * (width + 2) for width in widths) + line[3]

    def cells(line: str, texts: Sequence[str]) -> str:
        padded = (
            text + " " * (width - _cell_width(text))
            for text, width in zip(texts, widths, strict=True)
        )
        return f"{line[0]} " + f" {line[1]} ".join(padded) + f" {line[2]}"

    lines = [title] if title else []
    lines += [rule(top), cells(head, columns), rule(head_rule)]
    lines += [cells(row_line, row) for row in rows]
    lines.append(rule(bottom))
    return "\n".join(lines) + "\n"


def _cell_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: East Asian wide characters two, marks none."""
    if text.isascii():
        return len(text)
    return sum(
        0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1
        for char in text
    )


def print_line(text: str) -> None:
    """A plain human line on stdout; anything in it that would break the line is escaped."""
    sys.stdout.write(printable(text) + "\n")


def print_block(text: str) -> None:
    """Multi-line human text on stdout (a body, a reply): newlines and tabs are kept."""
    sys.stdout.write(printable(text, multiline=True) + "\n")


def spinner(text: str | Callable[[], str]) -> AbstractContextManager[Any]:
    """A status line on stderr while a command waits, shown only on a terminal (piped or
    redirected, nothing): a spinner, ``text`` escaped, and the time elapsed. A function
    is asked for the text at every refresh, so the line can follow what is waited for.

    Off a terminal it is an empty context, without importing rich: rich would show
    nothing there either, and loading it costs more than the rest of a refused command.
    """
    if not _on_terminal(sys.stderr):
        return nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(_Status(text))


class _Status:
    """The text of a :func:`spinner`, rendered afresh at each refresh."""

    def __init__(self, text: str | Callable[[], str]) -> None:
        self.text = text
        self.started = time.monotonic()

    def __rich__(self) -> Text:
        # A str status would be parsed as markup whatever the console says; Text is not.
        from rich.text import Text

        text = self.text() if callable(self.text) else self.text
        return Text(f"{printable(text)} ({elapsed(time.monotonic() - self.started)})")


def elapsed(seconds: float) -> str:
    """A duration as people read it on a status line: ``7s``, ``2m05s``, ``1h02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def json_requested(args: Sequence[str]) -> bool:
    """Whether the command line asks for ``--json`` (before any ``--``), read from the raw
    arguments so that a refusal raised before or while parsing them is answered in JSON."""
    options = args[: args.index("--")] if "--" in args else args
    return "--json" in options


def refuse(message: str, as_json: bool = False) -> None:
    """Print a refusal as one line on stderr (the caller exits 1 or 2); with ``as_json``
    also as ``{"error": message}`` on stdout."""
    if as_json:
        print_json({"error": message})
    sys.stderr.write(f"error: {printable(message)}\n")
