"""The SQLite store through the stdlib ``sqlite3`` module, for readers that must start
fast: the CLI's fast lane and the TUI's first paint.

Importing SQLAlchemy costs about ten interpreter starts. The operations written in
portable SQL (:mod:`canopy.ops.common`) run on a :data:`~canopy.store.queries.Rows`
runner that either driver can be, so these callers hand them a runner on a plain
``sqlite3`` connection instead of the :class:`~canopy.store.engine.Store`. Postgres, a
missing store and one that needs migrating are left to the full path, which opens,
creates and migrates.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from canopy.paths import configured_db_url, sqlite_path
from canopy.store.schema_version import HEAD_REVISION
from canopy.timefmt import sqlite_text

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from canopy.store.queries import Row, Rows


def connect() -> sqlite3.Connection | None:
    """The SQLite store, or ``None`` if it is missing or not migrated to this version.

    Foreign keys are enforced and a busy database is waited for up to 10 s, as on every
    connection of the full path (:func:`canopy.store.engine.make_engine`).
    """
    path = sqlite_path()
    if not os.path.exists(path):
        return None
    connection = sqlite3.connect(path, timeout=10)
    connection.row_factory = sqlite3.Row
    try:
        connection.execute("PRAGMA foreign_keys=ON")
        revision = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:
        revision = []
    if [row["version_num"] for row in revision] != [HEAD_REVISION]:
        connection.close()
        return None
    return connection


def runner(connection: sqlite3.Connection) -> Rows:
    """Portable SQL on ``connection``; timestamps and JSON documents (dicts and lists) are
    written as the ORM writes them."""

    def run(sql: str, params: Mapping[str, Any]) -> list[Row]:
        values = {name: _stored(value) for name, value in params.items()}
        return [dict(row) for row in connection.execute(sql, values)]

    return run


def _stored(value: Any) -> Any:
    """``value`` as the ORM's column types store it in SQLite (``DateTime``, ``JSON``)."""
    if isinstance(value, datetime):
        return sqlite_text(value)
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value


@contextmanager
def transaction() -> Iterator[Rows | None]:
    """One transaction on the SQLite store, committed if the block returns; ``None``
    when this module cannot serve (``CANOPY_DB_URL`` is set, or :func:`connect` found
    no store it can read) and the caller must open the store the full way."""
    connection = None if configured_db_url() else connect()
    if connection is None:
        yield None
        return
    try:
        with connection:
            yield runner(connection)
    finally:
        connection.close()
