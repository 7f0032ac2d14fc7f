"""Notifications: what went wrong while nobody watched (``canopy notifications``).

Written where the trouble is found (a message whose session is gone, a delivery that
failed) in the same transaction as the record it explains, and read newest first.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as Db

from canopy.limits import NOTIFICATIONS_LIMIT, check_range
from canopy.store.engine import Store
from canopy.store.models import Notification
from canopy.timefmt import to_iso, utcnow

DEFAULT_LIMIT = 50


def notify(
    db: Db, kind: str, text: str, session_id: str | None = None, message_id: str | None = None
) -> None:
    """Record a notification inside the caller's transaction."""
    db.add(
        Notification(
            kind=kind,
            text=text,
            session_id=session_id,
            message_id=message_id,
            created_at=utcnow(),
        )
    )


def notifications_list(store: Store, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """The ``limit`` most recent notifications, newest first.

    ``limit`` is bounded above too: SQLite cannot bind an integer beyond 64 bits.
    """
    check_range(limit, NOTIFICATIONS_LIMIT, "limit")
    with store.transaction() as db:
        found = db.scalars(
            select(Notification)
            .order_by(Notification.created_at.desc(), Notification.id.desc())
            .limit(limit)
        )
        return {
            "notifications": [
                {
                    "id": n.id,
                    "kind": n.kind,
                    "text": n.text,
                    "session_id": n.session_id,
                    "message_id": n.message_id,
                    "created_at": to_iso(n.created_at),
                }
                for n in found
            ]
        }
