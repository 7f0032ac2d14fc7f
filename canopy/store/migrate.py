"""Migrating the store to this version's schema with alembic.

Alembic runs on SQLAlchemy, so this module (with the migrations and the schema of record
they are compared to, :mod:`canopy.store.models`) is the only place Canopy uses it, and
:class:`~canopy.store.engine.Store` imports it only when a store is missing or behind:
a store at head opens, and runs, without loading either.
"""

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import SQLAlchemyError

from canopy.store.drivers import SQLITE_PRAGMAS, Target

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_url(target: Target) -> str:
    """SQLAlchemy's URL for ``target``, with the driver the store itself uses."""
    if target.dialect == "sqlite":
        return f"sqlite:///{target.address}"
    return "postgresql+psycopg://" + target.address.removeprefix("postgresql://")


def make_engine(target: Target) -> Engine:
    """An engine on ``target`` whose SQLite connections get the store's pragmas, as
    every store connection does (the migrations run with foreign keys on)."""
    engine = create_engine(alembic_url(target))
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    for pragma in SQLITE_PRAGMAS:
        cursor.execute(pragma)
    cursor.close()


def upgrade(target: Target, revision: str = "head") -> None:
    """Bring the schema at ``target`` to ``revision``, in one transaction.

    A database error surfaces as the driver raised it (SQLAlchemy's wrapper taken off),
    so opening the store refuses it in the same words as any other driver error.
    """
    engine = make_engine(target)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    except SQLAlchemyError as error:
        driver_error = getattr(error, "orig", None)
        if isinstance(driver_error, Exception):
            raise driver_error from error
        raise
    finally:
        engine.dispose()
