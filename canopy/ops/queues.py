"""Spec queues: create, add_spec, list, remove_spec, reorder, set_group.

Ordering rules live in :mod:`canopy.backlog.queue_rules`; this module loads members, applies a
rule and writes positions back. Every mutation first touches the queue's row, which
takes the write lock on SQLite and a row lock on Postgres, so concurrent edits of one
queue serialise instead of computing positions from a stale read.
"""

from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from canopy.backlog.queue_rules import Member, grouped_add_index, regrouped, reordered
from canopy.errors import Refused
from canopy.ids import new_id
from canopy.limits import GROUP_MAX_LENGTH, clean_name
from canopy.ops.common import rows_of
from canopy.store import queries
from canopy.store.engine import Store
from canopy.store.models import Queue, QueueMember, Spec
from canopy.timefmt import utcnow


def queue_create(store: Store, name: str) -> dict[str, Any]:
    """An empty queue; names are unique so they can stand in for ids."""
    checked_name = clean_name(name, "queue name")
    with store.transaction() as db:
        taken = db.scalar(select(Queue.id).where(Queue.name == checked_name))
        if taken is not None:
            raise Refused(f"queue name {checked_name!r} is taken by {taken}")
        queue = Queue(id=new_id("queue"), name=checked_name, created_at=utcnow())
        db.add(queue)
        db.flush()
        return queries.queue_listing(rows_of(db), queue.id)


def queue_list(store: Store, queue: str | None = None) -> dict[str, Any]:
    """One queue's members in order, or every queue with its counts."""
    with store.transaction() as db:
        rows = rows_of(db)
        if queue is None:
            return {"queues": queries.list_queues(rows)}
        return queries.queue_listing(rows, queue)


def queue_add_spec(store: Store, queue: str, spec: str, group: str | None = None) -> dict[str, Any]:
    """Add a spec: after its group's last pending member when grouped, else at the end."""
    clean_group = _clean_group(group)
    with store.transaction() as db:
        queue_id, spec_id = _resolve_pair(db, queue, spec, member=False)
        members = _lock_and_load(db, queue_id)
        if any(m.spec_id == spec_id for m in members):
            raise Refused(f"spec {spec_id} is already in queue {queue_id}")
        index = grouped_add_index(members, clean_group)
        db.execute(
            update(QueueMember)
            .where(QueueMember.queue_id == queue_id, QueueMember.position >= index)
            .values(position=QueueMember.position + 1)
        )
        db.add(QueueMember(queue_id=queue_id, spec_id=spec_id, position=index, group=clean_group))
        db.flush()
        return queries.queue_listing(rows_of(db), queue_id)


def queue_remove_spec(store: Store, queue: str, spec: str) -> dict[str, Any]:
    """Take a spec out of a queue (the spec itself stays in the backlog)."""
    with store.transaction() as db:
        queue_id, spec_id = _resolve_pair(db, queue, spec, member=True)
        _lock_and_load(db, queue_id)
        remove_member_row(db, queue_id, spec_id)
        return queries.queue_listing(rows_of(db), queue_id)


def queue_reorder(store: Store, queue: str, order: list[str]) -> dict[str, Any]:
    """Replace the queue's order; refused unless it lists every member once, unsplit."""
    with store.transaction() as db:
        queue_id = queries.resolve_id(rows_of(db), "queue", queue)
        members = _lock_and_load(db, queue_id)
        proposed = [_match_member(members, entry) for entry in order]
        _write_order(db, queue_id, members, reordered(members, proposed))
        return queries.queue_listing(rows_of(db), queue_id)


def queue_set_group(store: Store, queue: str, spec: str, group: str | None) -> dict[str, Any]:
    """Set (moving the member next to its group) or clear (``None``) a member's group."""
    clean_group = _clean_group(group)
    with store.transaction() as db:
        queue_id, spec_id = _resolve_pair(db, queue, spec, member=True)
        members = _lock_and_load(db, queue_id)
        _write_order(db, queue_id, members, regrouped(members, spec_id, clean_group))
        return queries.queue_listing(rows_of(db), queue_id)


def remove_member_row(db: Session, queue_id: str, spec_id: str) -> None:
    """Delete one membership and close the gap it leaves in the queue's positions."""
    position = db.scalar(
        select(QueueMember.position).where(
            QueueMember.queue_id == queue_id, QueueMember.spec_id == spec_id
        )
    )
    if position is None:
        raise Refused(f"spec {spec_id} is not in queue {queue_id}")
    db.execute(
        delete(QueueMember).where(QueueMember.queue_id == queue_id, QueueMember.spec_id == spec_id)
    )
    db.execute(
        update(QueueMember)
        .where(QueueMember.queue_id == queue_id, QueueMember.position > position)
        .values(position=QueueMember.position - 1)
    )


def _clean_group(group: str | None) -> str | None:
    return None if group is None else clean_name(group, "group", GROUP_MAX_LENGTH)


def _resolve_pair(db: Session, queue: str, spec: str, member: bool) -> tuple[str, str]:
    """Resolve a queue and a spec; with ``member`` the spec must already be in the queue."""
    rows = rows_of(db)
    queue_id = queries.resolve_id(rows, "queue", queue)
    spec_id = queries.resolve_id(rows, "spec", spec)
    if member and db.get(QueueMember, (queue_id, spec_id)) is None:
        raise Refused(f"spec {spec_id} is not in queue {queue_id}")
    return queue_id, spec_id


def _lock_and_load(db: Session, queue_id: str) -> list[Member]:
    """Take the queue's write lock, then read its members in order."""
    db.execute(update(Queue).where(Queue.id == queue_id).values(name=Queue.name))
    result = db.execute(
        select(QueueMember.spec_id, QueueMember.group, Spec.status)
        .join(Spec, Spec.id == QueueMember.spec_id)
        .where(QueueMember.queue_id == queue_id)
        .order_by(QueueMember.position)
    )
    return [Member(spec_id, group, status == "pending") for spec_id, group, status in result]


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


def _write_order(db: Session, queue_id: str, before: list[Member], after: list[Member]) -> None:
    """Write positions (and groups) for the members whose place or group changed."""
    old = {m.spec_id: (i, m.group) for i, m in enumerate(before)}
    for position, member in enumerate(after):
        if old[member.spec_id] != (position, member.group):
            db.execute(
                update(QueueMember)
                .where(QueueMember.queue_id == queue_id, QueueMember.spec_id == member.spec_id)
                .values(position=position, group=member.group)
            )
