"""Opening the store and running each operation's transaction on it.

This is the one way to the store: every operation, activity, command, TUI read and MCP
tool runs its SQL through :meth:`Store.transaction`, on the stdlib ``sqlite3`` driver or
psycopg (:mod:`canopy.store.drivers`). Opening a store that is missing or behind this
version's schema migrates it first (:mod:`canopy.store.migrate`, the only code that loads
alembic and SQLAlchemy); a store already at head opens with the driver alone.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

from canopy.errors import Refused
from canopy.paths import configured_db_url, sqlite_path
from canopy.store import drivers
from canopy.store.schema_version import HEAD_REVISION

if TYPE_CHECKING:
    from collections.abc import Iterator

    from canopy.store.drivers import Connection, Dialect
    from canopy.store.queries import Rows


def database_url() -> str:
    """``CANOPY_DB_URL`` when set, else the SQLite file under ``CANOPY_HOME``."""
    return configured_db_url() or f"sqlite:///{sqlite_path()}"


ANALYSIS_LIMIT = 1000
"""Rows SQLite's ``ANALYZE`` samples per index: enough for the planner's choices."""

IDLE_CONNECTIONS = 16
"""Connections kept open between transactions: one per thread of a worker's activity pool
(``SYNC_ACTIVITY_THREADS``), so a busy worker does not reconnect per store call (a
Postgres connection costs milliseconds). More may be open at once; the rest close."""


class Store:
    """A migrated database and the transactions that work on it.

    Connections are opened on demand and kept for reuse (:data:`IDLE_CONNECTIONS`), each
    used by one transaction, on one thread, at a time.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._generation = 0
        try:
            self._target = drivers.target_of(url)
            if self.revision() != HEAD_REVISION:
                from canopy.store.migrate import upgrade

                upgrade(self._target)
        except Exception as error:
            if not isinstance(error, (ValueError, ImportError, *drivers.driver_errors())):
                raise
            lines = str(error).strip().splitlines() or [type(error).__name__]
            raise Refused(
                f"cannot open the store at {drivers.shown_url(url)}: {lines[0]}"
            ) from error

    @property
    def dialect(self) -> Dialect:
        """``sqlite`` or ``postgresql``: for the few things only one of them has."""
        return self._target.dialect

    @contextmanager
    def transaction(self) -> Iterator[Rows]:
        """One operation's transaction, as a runner of portable SQL: committed if the block
        returns, rolled back if it raises."""
        generation = self._generation
        connection = self._checkout()
        try:
            yield drivers.runner(connection, self.dialect)
            connection.commit()
        except BaseException:
            self._checkin(connection, generation, healthy=_rolled_back(connection))
            raise
        self._checkin(connection, generation, healthy=True)

    def revision(self) -> str | None:
        """The alembic revision the database is at; ``None`` for a fresh database.

        A database that cannot be reached raises; one without Canopy's tables does not.
        """
        generation = self._generation
        connection = self._checkout()
        try:
            found = drivers.runner(connection, self.dialect)(
                "SELECT version_num FROM alembic_version", {}
            )
        except drivers.driver_errors():
            found = []
        self._checkin(connection, generation, healthy=_rolled_back(connection))
        return str(found[0]["version_num"]) if found else None

    def refresh_statistics(self) -> None:
        """Let SQLite's query planner see the tables as they are now (``ANALYZE``, bounded
        by ``analysis_limit`` so it costs milliseconds on any size).

        Without statistics SQLite guesses, and for a run's next-spec read it guesses wrong
        on a big queue (``bench/read_ahead.py``); a run's start refreshes them, since that
        is when a big queue begins to drain. Postgres keeps its own (autovacuum).
        """
        if self.dialect != "sqlite":
            return
        with self.transaction() as rows:
            rows(f"PRAGMA analysis_limit={ANALYSIS_LIMIT}", {})
            rows("ANALYZE", {})

    def close(self) -> None:
        """Close the idle connections (tests open many stores). The store stays usable:
        a later transaction connects again, and a connection in use now is closed when
        its transaction ends."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._generation += 1
        for connection in idle:
            connection.close()

    def _checkout(self) -> Connection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return drivers.connect(self._target)

    def _checkin(self, connection: Connection, generation: int, *, healthy: bool) -> None:
        """Keep ``connection`` for the next transaction, unless it failed, the store was
        closed since it was taken, or enough are idle already."""
        with self._lock:
            kept = healthy and generation == self._generation
            if kept and len(self._idle) < IDLE_CONNECTIONS:
                self._idle.append(connection)
                return
        connection.close()


def _rolled_back(connection: Connection) -> bool:
    """Roll back whatever ``connection`` has open; whether it is still fit to reuse (a
    connection the database dropped cannot even roll back)."""
    try:
        connection.rollback()
    except Exception:
        return False
    return True


@cache
def _store_for(url: str) -> Store:
    return Store(url)


def open_store() -> Store:
    """The process-wide store for the configured database."""
    return _store_for(database_url())
