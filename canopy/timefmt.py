"""Timestamps: stored as UTC, shown as ISO 8601 with a ``Z``.

SQLite hands back naive strings, Postgres aware datetimes; :func:`to_iso` gives both the
same shape so JSON output does not depend on the backend.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time in UTC (never used inside workflows)."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """A stored time as timezone-aware UTC (SQLite hands back naive UTC datetimes)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def sqlite_text(value: datetime) -> str:
    """``2026-12-03 07:55:00.123456``: a timestamp as the store keeps it in SQLite.

    That is the layout the SQLite store has always kept (UTC wall time, always with
    microseconds, as SQLAlchemy's SQLite dialect wrote it when Canopy used it), which
    :func:`to_iso` reads without a parse and which sorts in time order.
    """
    return as_utc(value).astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


def stored_time(value: datetime | str) -> datetime:
    """A stored timestamp as a datetime: SQLite's text parsed (naive, in UTC), Postgres's
    aware value as it is; for the code that computes with the time rather than show it."""
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def to_iso(value: datetime | str | None) -> str | None:
    """``2026-12-03T07:55:00.123456Z`` for a stored timestamp, ``None`` for none."""
    if value is None:
        return None
    if isinstance(value, str) and len(value) == 26 and value[10] == " ":
        return f"{value[:10]}T{value[11:]}Z"  # SQLite's fixed layout: skip the parse
    parsed = datetime.fromisoformat(value) if isinstance(value, str) else value
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed.isoformat(timespec="microseconds") + "Z"
