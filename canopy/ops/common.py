"""Helpers shared by the operations modules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from canopy.errors import Refused

if TYPE_CHECKING:
    from canopy.store.queries import Row, Rows


def rows_of(session: Session) -> Rows:
    """Run the shared SQL of :mod:`canopy.store.queries` inside ``session``."""

    def run(sql: str, params: Mapping[str, Any]) -> list[Row]:
        return [dict(row._mapping) for row in session.execute(text(sql), params)]

    return run


NAME_MAX_LENGTH = 400
GROUP_MAX_LENGTH = 200


def one_line(value: str, what: str, max_length: int = NAME_MAX_LENGTH) -> str:
    """``value`` stripped, refusing an empty, multi-line or too long value for ``what``."""
    cleaned = value.strip()
    if not cleaned:
        raise Refused(f"{what} must not be empty")
    if "\n" in cleaned or "\r" in cleaned:
        raise Refused(f"{what} must be a single line")
    if len(cleaned) > max_length:
        raise Refused(f"{what} is {len(cleaned)} characters long; the limit is {max_length}")
    return cleaned
