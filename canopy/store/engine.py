"""Opening the store: engine, pragmas, migrations, one transaction per operation."""

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from canopy.errors import Refused
from canopy.paths import configured_db_url, sqlite_path
from canopy.store.schema_version import HEAD_REVISION

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def database_url() -> str:
    """``CANOPY_DB_URL`` when set, else the SQLite file under ``CANOPY_HOME``."""
    return configured_db_url() or f"sqlite:///{sqlite_path()}"


def _enable_sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """WAL lets the CLI read while the worker writes; foreign keys keep members honest."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for ``url`` with Canopy's SQLite pragmas applied to every connection."""
    engine = create_engine(url, future=True)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _enable_sqlite_pragmas)
    return engine


def current_revision(engine: Engine) -> str | None:
    """The alembic revision the database is at, or ``None`` for a fresh database."""
    with engine.connect() as connection:
        try:
            row = connection.execute(text("SELECT version_num FROM alembic_version")).first()
        except Exception:
            return None
    return None if row is None else str(row[0])


def migrate(engine: Engine) -> None:
    """Bring the schema to head; alembic is imported only when there is work to do."""
    if current_revision(engine) == HEAD_REVISION:
        return
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


ANALYSIS_LIMIT = 1000
"""Rows SQLite's ``ANALYZE`` samples per index: enough for the planner's choices."""


class Store:
    """A migrated database and the sessions that work on it."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            self.engine = make_engine(url)
            migrate(self.engine)
        except (SQLAlchemyError, ImportError) as error:
            where = make_url(url).render_as_string(hide_password=True)
            reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
            raise Refused(f"cannot open the store at {where}: {reason}") from error
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One operation's transaction: commit on success, roll back on any error."""
        with self._sessions() as db, db.begin():
            yield db

    def refresh_statistics(self) -> None:
        """Let SQLite's query planner see the tables as they are now (``ANALYZE``, bounded
        by ``analysis_limit`` so it costs milliseconds on any size).

        Without statistics SQLite guesses, and for a run's next-spec read it guesses wrong
        on a big queue (``bench/read_ahead.py``); a run's start refreshes them, since that
        is when a big queue begins to drain. Postgres keeps its own (autovacuum).
        """
        if self.engine.dialect.name != "sqlite":
            return
        with self.engine.begin() as connection:
            connection.exec_driver_sql(f"PRAGMA analysis_limit={ANALYSIS_LIMIT}")
            connection.exec_driver_sql("ANALYZE")

    def close(self) -> None:
        """Release pooled connections (tests open many stores)."""
        self.engine.dispose()


@cache
def _store_for(url: str) -> Store:
    return Store(url)


def open_store() -> Store:
    """The process-wide store for the configured database."""
    return _store_for(database_url())
