"""Helpers shared by the operations modules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.orm import Session

if TYPE_CHECKING:
    from canopy.store.queries import Row, Rows


def rows_of(db: Session) -> Rows:
    """Run the shared SQL of :mod:`canopy.store.queries` inside the transaction ``db``."""

    def run(sql: str, params: Mapping[str, Any]) -> list[Row]:
        return [dict(row._mapping) for row in db.execute(text(sql), params)]

    return run
