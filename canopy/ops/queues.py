"""Spec queues: create, add_spec, list, remove_spec, reorder, set_group.

Ordering rules live in :mod:`canopy.backlog.queue_rules`; this module loads members, applies a
rule and writes positions back. Every mutation first touches the queue's row, which
takes the write lock on SQLite and a row lock on Postgres, so concurrent edits of one
queue serialise instead of computing positions from a stale read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from canopy.backlog.queue_rules import Member, grouped_add_index, regrouped, reordered
from canopy.errors import Refused
from canopy.ids import new_id
from canopy.limits import GROUP_MAX_LENGTH, clean_name
from canopy.store import queries
from canopy.timefmt import utcnow

if TYPE_CHECKING:
    from canopy.store.engine import Store
    from canopy.store.queries import Rows


def queue_create(store: Store, name: str) -> dict[str, Any]:
    """An empty queue; names are unique so they can stand in for ids."""
    checked_name = clean_name(name, "queue name")
    with store.transaction() as rows:
        taken = rows("SELECT id FROM queues WHERE name = :name", {"name": checked_name})
        if taken:
            raise Refused(f"queue name {checked_name!r} is taken by {taken[0]['id']}")
        queue_id = new_id("queue")
        rows(
            "INSERT INTO queues (id, name, created_at) VALUES (:id, :name, :now)",
            {"id": queue_id, "name": checked_name, "now": utcnow()},
        )
        return queries.queue_listing(rows, queue_id)


def queue_list(store: Store, queue: str | None = None) -> dict[str, Any]:
    """One queue's members in order with the outcome of its latest run, or every queue
    with its counts."""
    with store.transaction() as rows:
        if queue is None:
            return {"queues": queries.list_queues(rows)}
        return queries.queue_listing(rows, queue)


def queue_add_spec(store: Store, queue: str, spec: str, group: str | None = None) -> dict[str, Any]:
    """Add a spec: after its group's last pending member when grouped, else at the end."""
    clean_group = _clean_group(group)
    with store.transaction() as rows:
        queue_id, spec_id = _resolve_pair(rows, queue, spec, member=False)
        members = _lock_and_load(rows, queue_id)
        if any(m.spec_id == spec_id for m in members):
            raise Refused(f"spec {spec_id} is already in queue {queue_id}")
        index = grouped_add_index(members, clean_group)
        rows(
            "UPDATE queue_members SET position = position + 1"
            " WHERE queue_id = :queue_id AND position >= :index",
            {"queue_id": queue_id, "index": index},
        )
        rows(
            "INSERT INTO queue_members (queue_id, spec_id, position, group_name)"
            " VALUES (:queue_id, :spec_id, :position, :group)",
            {"queue_id": queue_id, "spec_id": spec_id, "position": index, "group": clean_group},
        )
        return queries.queue_listing(rows, queue_id)


def queue_remove_spec(store: Store, queue: str, spec: str) -> dict[str, Any]:
    """Take a spec out of a queue (the spec itself stays in the backlog)."""
    with store.transaction() as rows:
        queue_id, spec_id = _resolve_pair(rows, queue, spec, member=True)
        _lock_and_load(rows, queue_id)
        remove_member_row(rows, queue_id, spec_id)
        return queries.queue_listing(rows, queue_id)


def queue_reorder(store: Store, queue: str, order: list[str]) -> dict[str, Any]:
    """Replace the queue's order; refused unless it lists every member once, unsplit."""
    with store.transaction() as rows:
        queue_id = queries.resolve_id(rows, "queue", queue)
        members = _lock_and_load(rows, queue_id)
        proposed = [_match_member(members, entry) for entry in order]
        _write_order(rows, queue_id, members, reordered(members, proposed))
        return queries.queue_listing(rows, queue_id)


def queue_set_group(store: Store, queue: str, spec: str, group: str | None) -> dict[str, Any]:
    """Set (moving the member next to its group) or clear (``None``) a member's group."""
    clean_group = _clean_group(group)
    with store.transaction() as rows:
        queue_id, spec_id = _resolve_pair(rows, queue, spec, member=True)
        members = _lock_and_load(rows, queue_id)
        _write_order(rows, queue_id, members, regrouped(members, spec_id, clean_group))
        return queries.queue_listing(rows, queue_id)


def remove_member_row(rows: Rows, queue_id: str, spec_id: str) -> None:
    """Delete one membership and close the gap it leaves in the queue's positions."""
    found = rows(
        "SELECT position FROM queue_members WHERE queue_id = :queue_id AND spec_id = :spec_id",
        {"queue_id": queue_id, "spec_id": spec_id},
    )
    if not found:
        raise Refused(f"spec {spec_id} is not in queue {queue_id}")
    params = {"queue_id": queue_id, "spec_id": spec_id, "position": found[0]["position"]}
    rows("DELETE FROM queue_members WHERE queue_id = :queue_id AND spec_id = :spec_id", params)
    rows(
        "UPDATE queue_members SET position = position - 1"
        " WHERE queue_id = :queue_id AND position > :position",
        params,
    )


def _clean_group(group: str | None) -> str | None:
    return None if group is None else clean_name(group, "group", GROUP_MAX_LENGTH)


def _resolve_pair(rows: Rows, queue: str, spec: str, member: bool) -> tuple[str, str]:
    """Resolve a queue and a spec; with ``member`` the spec must already be in the queue."""
    queue_id = queries.resolve_id(rows, "queue", queue)
    spec_id = queries.resolve_id(rows, "spec", spec)
    if member and not rows(
        "SELECT 1 AS found FROM queue_members WHERE queue_id = :queue_id AND spec_id = :spec_id",
        {"queue_id": queue_id, "spec_id": spec_id},
    ):
        raise Refused(f"spec {spec_id} is not in queue {queue_id}")
    return queue_id, spec_id


def _lock_and_load(rows: Rows, queue_id: str) -> list[Member]:
    """Take the queue's write lock, then read its members in order."""
    rows("UPDATE queues SET name = name WHERE id = :id", {"id": queue_id})
    found = rows(
        "SELECT m.spec_id, m.group_name, s.status FROM queue_members m"
        " JOIN specs s ON s.id = m.spec_id WHERE m.queue_id = :queue_id ORDER BY m.position",
        {"queue_id": queue_id},
    )
    return [Member(row["spec_id"], row["group_name"], row["status"] == "pending") for row in found]


def _match_member(members: list[Member], entry: str) -> str:
    """Resolve a reorder entry (full id or unique prefix) against the queue's members.

    An entry matching no member is returned as given so the refusal can name it extra.
    """
    try:
        wanted = queries.normalized_prefix("spec", entry)
    except Refused:
        return entry
    matches = [m.spec_id for m in members if m.spec_id.startswith(wanted)]
    if len(matches) > 1 and wanted not in matches:
        raise Refused(f"ambiguous spec id {entry!r}: matches {', '.join(matches)}")
    return matches[0] if len(matches) == 1 else (wanted if wanted in matches else entry)


def _write_order(rows: Rows, queue_id: str, before: list[Member], after: list[Member]) -> None:
    """Write positions (and groups) for the members whose place or group changed."""
    old = {m.spec_id: (i, m.group) for i, m in enumerate(before)}
    for position, member in enumerate(after):
        if old[member.spec_id] != (position, member.group):
            rows(
                "UPDATE queue_members SET position = :position, group_name = :group"
                " WHERE queue_id = :queue_id AND spec_id = :spec_id",
                {
                    "position": position,
                    "group": member.group,
                    "queue_id": queue_id,
                    "spec_id": member.spec_id,
                },
            )
