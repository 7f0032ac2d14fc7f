"""Tables printed to a pipe: drawn without rich, in the box rich draws on a terminal."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pytest
from rich.console import Console
from rich.table import Table

from canopy.cli.render import print_table

if TYPE_CHECKING:
    from collections.abc import Sequence

COLUMNS = ["name", "kind", "note"]
ROWS: list[list[object]] = [
    ["build", "agent", None],
    ["日本語の名前", "command", 3],
    ["e\u0301t\u0301e\u0301", "", "a cell wider than its header"],
    ["tab\tand\x1b[31m", "interactive", "x"],
]


def drawn_by_rich(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines rich prints for the table (no title) with room for every cell."""
    table = Table()
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    out = io.StringIO()
    Console(file=out, width=1_000, markup=False, emoji=False).print(table)
    return out.getvalue().splitlines()


def printed(
    capsys: pytest.CaptureFixture[str], title: str | None, rows: Sequence[Sequence[object]]
) -> list[str]:
    print_table(title, COLUMNS, rows)
    return capsys.readouterr().out.splitlines()


def test_a_piped_table_is_the_box_rich_draws(capsys: pytest.CaptureFixture[str]) -> None:
    shown = [
        ["build", "agent", ""],
        ["日本語の名前", "command", "3"],
        ["e\u0301t\u0301e\u0301", "", "a cell wider than its header"],
        ["tab\\tand\\x1b[31m", "interactive", "x"],  # escaped, as on a terminal
    ]
    assert printed(capsys, None, ROWS) == drawn_by_rich(COLUMNS, shown)


def test_a_long_title_stays_whole_on_its_own_line(capsys: pytest.CaptureFixture[str]) -> None:
    """Rich wraps a title at the table's width; piped, the title is one line, unpadded."""
    title = "Hook runs of a-graph-whose-name-is-far-wider-than-its-table (latest run)"
    lines = printed(capsys, title, [["a", "b", "c"]])
    assert lines[0] == title
    assert lines[1:] == drawn_by_rich(COLUMNS, [["a", "b", "c"]])


def test_a_title_cannot_forge_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    lines = printed(capsys, "Runs\n┏ forged", [["a", "b", "c"]])
    assert lines[0] == "Runs\\n┏ forged"


def test_an_empty_table_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert printed(capsys, "Node runs", []) == ["Node runs: (none)"]
    assert printed(capsys, None, []) == ["(none)"]


def test_ascii_only_output_gets_rich_s_ascii_box(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr("sys.stdout", out)
    print_table(None, ["id"], [["a"]])
    out.seek(0)
    assert out.read().splitlines() == ["+----+", "| id |", "|----|", "| a  |", "+----+"]
