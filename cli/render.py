"""Printing conventions shared by every command (no typer import: the fast lane uses it).

``--json`` prints machine output on stdout; human output uses rich tables. Refusals are
one line on stderr and exit code 1 (usage errors are typer's exit 2); with ``--json``
they are also a JSON object ``{"error": …}`` on stdout, so a script reading stdout never
has to parse the text. Tables printed to a pipe or file are as wide as their cells:
cutting ids down to the width of a terminal that is not there would lose them.

Human output shows what users and agents typed, and what a store written by an older
Canopy still holds: names with escape sequences, NULs, lone surrogates. Every human
printer here passes its text through :func:`printable`, so a name such as
``\\x1b]0;title\\x07`` is shown as those characters instead of retitling the terminal,
and a newline inside a one-line field cannot forge another line. Rich markup and emoji
codes are off for the same reason: ``[/x]`` in a name is text, not a broken tag. JSON
output needs none of this (json escapes control characters).
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager
    from typing import Any

    from rich.text import Text

_ACTED_ON = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
"""What a terminal would act on rather than show: C0 but tab and newline, DEL, C1, the
line and paragraph separators, the bidirectional overrides (which reorder what follows,
"Trojan Source") and lone surrogates (which cannot even be encoded)."""
_UNPRINTABLE = f"[{_ACTED_ON}]"
_UNPRINTABLE_IN_LINE = f"[{_ACTED_ON}\t\n]"
"""The same plus tab and newline, for text that must stay on one line."""
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNBOUNDED_WIDTH = 1_000_000
"""The width tables are laid out in when stdout is not a terminal: rich sizes a table to
its cells, so this only stops it from cutting them (``graph-ms5…``) to fit 80 columns."""


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, multiline: bool = False) -> str:
    """``text`` with every character a terminal would act on shown as its escape.

    ``\\x1b`` for ESC, ``\\n`` for a newline. ``multiline`` keeps newlines and tabs, for
    bodies and replies that are meant to span lines.
    """
    if text.isprintable():  # the usual case; none of the characters above is printable
        return text
    return re.sub(_UNPRINTABLE if multiline else _UNPRINTABLE_IN_LINE, _escape, text)


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
    """Render a rich table on stdout; an empty table prints a short '(none)' line instead.

    Cells and the title are one-line fields: :func:`printable` escapes their newlines too.
    On a terminal the table fits its width (rich wraps or cuts long cells); elsewhere every
    cell is printed whole.
    """
    from rich.console import Console
    from rich.table import Table

    console = Console(markup=False, emoji=False)
    if not console.is_terminal:  # a pipe or a file: no width to fit, so cut nothing
        console.width = _UNBOUNDED_WIDTH
    shown_title = printable(title) if title else None
    if not rows:
        console.print(f"{shown_title + ': ' if shown_title else ''}(none)")
        return
    table = Table(title=shown_title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if cell is None else printable(str(cell)) for cell in row))
    console.print(table)


def print_line(text: str) -> None:
    """A plain human line on stdout; anything in it that would break the line is escaped."""
    sys.stdout.write(printable(text) + "\n")


def print_block(text: str) -> None:
    """Multi-line human text on stdout (a body, a reply): newlines and tabs are kept."""
    sys.stdout.write(printable(text, multiline=True) + "\n")


def spinner(text: str | Callable[[], str]) -> AbstractContextManager[Any]:
    """A status line on stderr while a command waits, shown only on a terminal (piped or
    redirected, nothing): a spinner, ``text`` escaped, and the time elapsed. A function
    is asked for the text at every refresh, so the line can follow what is waited for."""
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
