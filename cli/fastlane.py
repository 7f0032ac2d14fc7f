"""The fast lane: ``spec list``, ``queue list`` and ``session list`` without typer or
SQLAlchemy.

These listings are what people and agents run most, so they answer straight from the
SQLite file with the stdlib ``sqlite3`` module, through the same SQL and JSON shaping
(:mod:`canopy.store.queries`) the full path uses. Anything this lane does not fully
understand (another command, ``--help``, an unknown option, Postgres, a database that
needs migrating) falls through to the typer app, which owns usage errors.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING

from canopy.cli import views
from canopy.cli.render import print_json
from canopy.paths import configured_db_url, sqlite_path
from canopy.statuses import check_spec_status
from canopy.store import queries
from canopy.store.schema_version import HEAD_REVISION
from canopy.workdir import normalize_workdir

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeAlias

    Parsed: TypeAlias = tuple[dict[str, str], list[str], bool]
    Command: TypeAlias = Callable[[queries.Rows, dict[str, str], list[str], bool], None]

_FLAG = "true"
"""The value a boolean flag (``--all``) gets in the parsed options."""


def try_run(args: list[str]) -> bool:
    """Serve ``args`` if this lane can; ``False`` means the caller must use typer."""
    if len(args) < 2 or (args[0], args[1]) not in _COMMANDS or configured_db_url():
        return False
    option_names, flag_names, max_positionals, command = _COMMANDS[(args[0], args[1])]
    parsed = _parse(args[2:], option_names, flag_names)
    if parsed is None or len(parsed[1]) > max_positionals:
        return False
    rows = _sqlite_rows()
    if rows is None:
        return False
    command(rows, *parsed)
    return True


def _parse(
    tokens: list[str], option_names: tuple[str, ...], flag_names: tuple[str, ...]
) -> Parsed | None:
    """``--name value``/``--name=value`` options, flags, positionals and ``--json``; else
    None."""
    options: dict[str, str] = {}
    positionals: list[str] = []
    as_json = False
    index = 0
    while index < len(tokens):
        token = tokens[index]
        name, _, inline = token.partition("=")
        if token == "--json":
            as_json = True
        elif token in flag_names:
            options[token] = _FLAG
        elif name in option_names and name not in options:
            if inline or "=" in token:
                options[name] = inline
            elif index + 1 < len(tokens):
                index += 1
                options[name] = tokens[index]
            else:
                return None
        elif token.startswith("-"):
            return None
        else:
            positionals.append(token)
        index += 1
    return options, positionals, as_json


def _sqlite_rows() -> queries.Rows | None:
    """A row runner on the SQLite store, or ``None`` if it is missing or not migrated."""
    path = sqlite_path()
    if not os.path.exists(path):
        return None
    connection = sqlite3.connect(path, timeout=10)
    connection.row_factory = sqlite3.Row

    def run(sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [dict(row) for row in connection.execute(sql, dict(params))]

    try:
        revision = run("SELECT version_num FROM alembic_version", {})
    except sqlite3.Error:
        return None
    if [row["version_num"] for row in revision] != [HEAD_REVISION]:
        return None
    return run


def _spec_list(
    rows: queries.Rows, options: dict[str, str], _positionals: list[str], as_json: bool
) -> None:
    workdir = options.get("--workdir")
    status = options.get("--status")
    specs = queries.list_specs(
        rows,
        normalize_workdir(workdir) if workdir is not None else None,
        check_spec_status(status) if status is not None else None,
    )
    print_json(specs) if as_json else views.show_spec_list(specs)


def _queue_list(
    rows: queries.Rows, _options: dict[str, str], positionals: list[str], as_json: bool
) -> None:
    result = (
        queries.queue_listing(rows, positionals[0])
        if positionals
        else {"queues": queries.list_queues(rows)}
    )
    print_json(result) if as_json else views.show_queue_list(result)


def _session_list(
    rows: queries.Rows, options: dict[str, str], _positionals: list[str], as_json: bool
) -> None:
    from canopy.cli import session_views

    result = {"sessions": queries.list_sessions(rows, include_finished="--all" in options)}
    print_json(result) if as_json else session_views.show_sessions(result)


_COMMANDS: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...], int, Command]] = {
    ("spec", "list"): (("--workdir", "--status"), (), 0, _spec_list),
    ("queue", "list"): ((), (), 1, _queue_list),
    ("session", "list"): ((), ("--all",), 0, _session_list),
}
"""Served commands: their valued options, flags, most positionals, and implementation."""
