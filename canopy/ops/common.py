"""Helpers shared by the operations modules.

Operations that the CLI's fast lane also serves are written in portable SQL against a
:data:`~canopy.store.queries.Rows` runner, and take either a :class:`Store` or such a
runner (:func:`sql_transaction`): the MCP server and the typer commands pass the store
(SQLAlchemy), the fast lane its own runner on the stdlib ``sqlite3`` module. So
SQLAlchemy is imported only inside these helpers, never when this module loads.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from sqlalchemy.orm import Session

    from canopy.store.engine import Store
    from canopy.store.queries import Row, Rows


def rows_of(db: Session) -> Rows:
    """Run portable SQL inside the transaction ``db``.

    Like an ORM query, each statement first flushes the transaction's pending ORM writes
    (unless autoflush is off), so it sees them. Timestamps are bound as the models'
    ``DateTime`` columns and dicts and lists as their ``JSON`` columns, so they are stored
    exactly as the ORM stores them; a statement that returns no rows (a write) gives ``[]``.
    """
    from sqlalchemy import JSON, DateTime, bindparam, text

    def run(sql: str, params: Mapping[str, Any]) -> list[Row]:
        if db.autoflush:
            db.flush()
        typed = [
            bindparam(name, type_=DateTime(timezone=True))
            if isinstance(value, datetime)
            else bindparam(name, type_=JSON)
            for name, value in params.items()
            if isinstance(value, datetime | dict | list)
        ]
        result = db.connection().execute(text(sql).bindparams(*typed), params)
        return [dict(row._mapping) for row in result] if result.returns_rows else []

    return run


@contextmanager
def sql_transaction(store: Store | Rows) -> Iterator[Rows]:
    """One operation's transaction on ``store`` (:meth:`Store.transaction`) as a runner of
    portable SQL, committed if the operation returns and rolled back if it raises; or
    ``store`` itself when it is a runner already inside its caller's transaction."""
    if callable(store):
        yield store
        return
    with store.transaction() as db:
        yield rows_of(db)
