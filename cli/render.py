"""Printing conventions shared by every command (no typer import: the fast lane uses it).

``--json`` prints machine output on stdout; human output uses rich tables. Refusals are
one line on stderr and exit code 1 (usage errors are typer's exit 2).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any


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
    """Render a rich table on stdout; an empty table prints a short '(none)' line instead."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not rows:
        console.print(f"{title + ': ' if title else ''}(none)")
        return
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    console.print(table)


def print_line(text: str) -> None:
    """A plain human line on stdout."""
    sys.stdout.write(text + "\n")


def refuse(message: str) -> None:
    """Print a refusal as one line on stderr (the caller exits 1)."""
    sys.stderr.write(f"error: {message}\n")
