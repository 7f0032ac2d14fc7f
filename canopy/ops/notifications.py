"""Notifications: what went wrong while nobody watched (``canopy notifications``).

Written where the trouble is found (a message whose session is gone, a delivery that
failed) in the same transaction as the record it explains, and read newest first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from canopy.limits import NOTIFICATIONS_LIMIT, check_range
from canopy.timefmt import to_iso, utcnow

if TYPE_CHECKING:
    from canopy.store.engine import Store
    from canopy.store.queries import Rows

DEFAULT_LIMIT = 50


def notify(
    rows: Rows, kind: str, text: str, session_id: str | None = None, message_id: str | None = None
) -> None:
    """Record a notification inside the caller's transaction, so it is written exactly when
    the record it explains is."""
    rows(
        "INSERT INTO notifications (kind, text, session_id, message_id, created_at)"
        " VALUES (:kind, :text, :session_id, :message_id, :now)",
        {
            "kind": kind,
            "text": text,
            "session_id": session_id,
            "message_id": message_id,
            "now": utcnow(),
        },
    )


def notifications_list(store: Store, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """The ``limit`` most recent notifications, newest first.

    ``limit`` is bounded above too: SQLite cannot bind an integer beyond 64 bits.
    """
    check_range(limit, NOTIFICATIONS_LIMIT, "limit")
    with store.transaction() as rows:
        found = rows(
            "SELECT id, kind, text, session_id, message_id, created_at FROM notifications"
            " ORDER BY created_at DESC, id DESC LIMIT :limit",
            {"limit": limit},
        )
    return {
        "notifications": [
            {
                "id": n["id"],
                "kind": n["kind"],
                "text": n["text"],
                "session_id": n["session_id"],
                "message_id": n["message_id"],
                "created_at": to_iso(n["created_at"]),
            }
            for n in found
        ]
    }
