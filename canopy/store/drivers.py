"""The two database drivers under the store, and the one row runner over both.

SQLite goes through the standard library's ``sqlite3`` module, Postgres through psycopg 3.
Every statement Canopy runs is written once, in SQL both databases read, with ``:name``
parameters; the runner (:func:`runner`) translates them for psycopg and binds values as
the store has always kept them, so databases written by earlier versions read the same:

- a timestamp, in SQLite, as the text ``2026-12-03 07:55:00.123456`` (UTC wall time,
  :func:`~canopy.timefmt.sqlite_text`); Postgres takes the aware datetime itself
  (``timestamp with time zone``);
- a dict or a list as its JSON text (``json.dumps``); ``None`` as SQL ``NULL``;
- a bool as SQLite's ``1``/``0``, or a Postgres ``boolean``.

Rows come back as dicts, with what the driver hands over: SQLite's timestamps as that
text, Postgres's as aware datetimes (:func:`~canopy.timefmt.to_iso` reads both, and
:func:`~canopy.timefmt.stored_time` makes a datetime of either). JSON columns are read
as ``CAST(column AS TEXT)`` and decoded with :func:`~canopy.store.queries.stored_json`,
so both drivers hand over the same text.

Only stdlib imports at load: psycopg is imported when a Postgres store is opened, so a
command on the SQLite store never loads it.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, Literal, TypeAlias
from urllib.parse import urlsplit, urlunsplit

from canopy.timefmt import sqlite_text

if TYPE_CHECKING:
    from collections.abc import Mapping

    import psycopg

    from canopy.store.queries import Row, Rows

    Connection: TypeAlias = sqlite3.Connection | psycopg.Connection[dict[str, Any]]

Dialect = Literal["sqlite", "postgresql"]

SQLITE_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA foreign_keys=ON", "PRAGMA busy_timeout=10000")
"""Run on every SQLite connection: WAL lets the CLI read while the worker writes, foreign
keys keep members and run records honest, and a busy database is waited for up to 10 s."""

_POSTGRES_SCHEMES = ("postgresql", "postgresql+psycopg")


@dataclass(frozen=True)
class Target:
    """Where a store URL points: the database kind, and what its driver connects to (the
    SQLite file's path, or the libpq URI psycopg takes)."""

    dialect: Dialect
    address: str


def target_of(url: str) -> Target:
    """The database ``url`` names: ``sqlite:///PATH`` (``sqlite:////abs/path.db`` for an
    absolute path), or ``postgresql+psycopg://USER[:PASSWORD]@HOST[:PORT]/DATABASE``
    (``postgresql://`` too), the forms ``CANOPY_DB_URL`` has always taken. Anything else
    is refused with a :class:`ValueError` naming the forms."""
    scheme, separator, rest = url.partition("://")
    if separator and scheme == "sqlite" and rest.startswith("/") and rest[1:]:
        return Target("sqlite", rest[1:])
    if separator and scheme in _POSTGRES_SCHEMES:
        return Target("postgresql", f"postgresql://{rest}")
    raise ValueError(
        "not a store URL Canopy can open: use sqlite:///PATH or "
        "postgresql+psycopg://USER@HOST:PORT/DATABASE"
    )


def shown_url(url: str) -> str:
    """``url`` with its password, if it has one, as ``***``: how messages name a store."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def connect(target: Target) -> Connection:
    """A new connection to ``target``, set up as every store connection is.

    SQLite: :data:`SQLITE_PRAGMAS`, usable from any thread (the store hands a connection
    to one thread at a time), and the driver's own transactions (it opens one before the
    first write, so reads before it see each commit as it lands, as they always have).
    Postgres: rows as dicts, one transaction from the first statement to the commit.
    """
    if target.dialect == "sqlite":
        connection = sqlite3.connect(target.address, timeout=10, check_same_thread=False)
        try:
            for pragma in SQLITE_PRAGMAS:
                connection.execute(pragma)
        except BaseException:
            connection.close()
            raise
        return connection
    import psycopg
    from psycopg.rows import dict_row

    return psycopg.connect(target.address, row_factory=dict_row)


def driver_errors() -> tuple[type[Exception], ...]:
    """The base error classes of the drivers this process has loaded: what a connection
    or a statement raises when the database, not the code, is at fault."""
    errors: list[type[Exception]] = [sqlite3.Error]
    if "psycopg" in sys.modules:
        errors.append(sys.modules["psycopg"].Error)
    return tuple(errors)


def runner(connection: Connection, dialect: Dialect) -> Rows:
    """Portable SQL on ``connection``, inside its current transaction: one statement with
    ``:name`` parameters, its rows as dicts (``[]`` for a write without ``RETURNING``)."""
    if isinstance(connection, sqlite3.Connection):
        return partial(_sqlite_rows, connection)
    return partial(_postgres_rows, connection)


def _sqlite_rows(connection: sqlite3.Connection, sql: str, params: Mapping[str, Any]) -> list[Row]:
    cursor = connection.execute(sql, {name: _sqlite_value(v) for name, v in params.items()})
    if cursor.description is None:
        return []
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _sqlite_value(value: Any) -> Any:
    """``value`` as the SQLite store keeps it (see the module's docstring)."""
    if isinstance(value, datetime):
        return sqlite_text(value)
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value


def _postgres_rows(
    connection: psycopg.Connection[dict[str, Any]], sql: str, params: Mapping[str, Any]
) -> list[Row]:
    from psycopg.types.json import Json

    values = {
        name: Json(value) if isinstance(value, dict | list) else value
        for name, value in params.items()
    }
    with connection.cursor() as cursor:
        cursor.execute(pyformat(sql), values)
        return cursor.fetchall() if cursor.description is not None else []


_TOKENS = re.compile(r"'(?:[^']|'')*'|::|:([A-Za-z_][A-Za-z0-9_]*)|%")
"""A quoted literal, a ``::`` cast, a ``:name`` parameter, or a ``%``."""


@lru_cache(maxsize=1024)
def pyformat(sql: str) -> str:
    """``sql`` with psycopg's placeholders: ``:name`` becomes ``%(name)s`` and a literal
    ``%`` becomes ``%%`` (psycopg reads ``%`` anywhere, quotes included); quoted text and
    ``::`` casts are left alone."""

    def placeholder(match: re.Match[str]) -> str:
        token = match.group(0)
        if match.group(1) is not None:
            return f"%({match.group(1)})s"
        return token.replace("%", "%%")

    return _TOKENS.sub(placeholder, sql)
