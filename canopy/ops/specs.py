"""The spec backlog: list, get, create, update, delete, set_status, section."""

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from canopy.backlog import specformat
from canopy.errors import Refused
from canopy.ids import new_id
from canopy.limits import clean_name
from canopy.ops.common import rows_of
from canopy.ops.queues import remove_member_row
from canopy.statuses import ACTIVE_RUN_STATUSES, SET_STATUS_ACTIONS, check_spec_status
from canopy.store import queries
from canopy.store.engine import Store
from canopy.store.models import Graph, GraphSpec, Queue, QueueMember, Run, Spec
from canopy.timefmt import to_iso, utcnow
from canopy.workdir import normalize_workdir


def spec_list(
    store: Store, workdir: str | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """Specs in creation order, filtered by workdir tag and/or status."""
    wanted_workdir = normalize_workdir(workdir) if workdir is not None else None
    wanted_status = check_spec_status(status) if status is not None else None
    with store.transaction() as db:
        return queries.list_specs(rows_of(db), wanted_workdir, wanted_status)


def spec_get(store: Store, spec: str) -> dict[str, Any]:
    """One spec with its full body, parsed sections and where it is used."""
    with store.transaction() as db:
        return _spec_json(db, _load(db, spec))


def spec_create(store: Store, name: str, body: str, workdir: str | None = None) -> dict[str, Any]:
    """A new standalone, pending spec; the body must be in the tagged format."""
    checked_name = clean_name(name, "spec name")
    specformat.validate_for_write(body)
    tag = normalize_workdir(workdir) if workdir is not None else None
    now = utcnow()
    with store.transaction() as db:
        spec = Spec(
            id=new_id("spec"),
            name=checked_name,
            body=body,
            workdir=tag,
            status="pending",
            created_at=now,
            updated_at=now,
        )
        db.add(spec)
        db.flush()
        return _spec_json(db, spec)


def spec_update(
    store: Store,
    spec: str,
    name: str | None = None,
    body: str | None = None,
    workdir: str | None = None,
    clear_workdir: bool = False,
) -> dict[str, Any]:
    """Replace a spec's name, body and/or workdir tag; fields not given are kept."""
    if name is None and body is None and workdir is None and not clear_workdir:
        raise Refused("spec update needs at least one of name, body, workdir or clear_workdir")
    if workdir is not None and clear_workdir:
        raise Refused("spec update takes either workdir or clear_workdir, not both")
    checked_name = clean_name(name, "spec name") if name is not None else None
    if body is not None:
        specformat.validate_for_write(body)
    tag = normalize_workdir(workdir) if workdir is not None else None
    with store.transaction() as db:
        row = _load(db, spec)
        if checked_name is not None:
            row.name = checked_name
        if body is not None:
            row.body = body
        if tag is not None or clear_workdir:
            row.workdir = tag
        row.updated_at = utcnow()
        db.flush()
        return _spec_json(db, row)


def spec_delete(store: Store, spec: str) -> dict[str, Any]:
    """Delete an unbound spec, taking it out of every queue it was in.

    Refused for a spec bound to a graph and for one an active run is draining.
    """
    with store.transaction() as db:
        row = _load(db, spec)
        _refuse_if_bound(db, row, "delete")
        _refuse_if_in_progress(row)
        active = _active_runs_draining(db, row.id)
        if active:
            raise Refused(
                f"spec {row.id} cannot be deleted: active run {', '.join(active)} is draining "
                "a queue it belongs to"
            )
        queue_ids = _queue_ids_of(db, row.id)
        for queue_id in queue_ids:
            remove_member_row(db, queue_id, row.id)
        db.delete(row)
        return {"id": row.id, "deleted": True, "removed_from_queues": queue_ids}


def spec_set_status(store: Store, spec: str, action: str) -> dict[str, Any]:
    """Admin transition of a standalone spec: complete, skip or reopen."""
    if action not in SET_STATUS_ACTIONS:
        raise Refused(
            f"unknown set_status action {action!r}; one of {', '.join(SET_STATUS_ACTIONS)}"
        )
    with store.transaction() as db:
        row = _load(db, spec)
        _refuse_if_bound(db, row, action)
        _refuse_if_in_progress(row)
        row.status = SET_STATUS_ACTIONS[action]
        row.updated_at = utcnow()
        db.flush()
        return _spec_json(db, row)


def spec_section(store: Store, spec: str, section: str) -> dict[str, Any]:
    """One canonical section of a spec body, as markdown."""
    with store.transaction() as db:
        row = _load(db, spec)
        markdown = specformat.section(row.body, section)
        return {"id": row.id, "section": specformat.section_name(section), "markdown": markdown}


def _load(db: Session, spec: str) -> Spec:
    spec_id = queries.resolve_id(rows_of(db), "spec", spec)
    row = db.get(Spec, spec_id)
    if row is None:
        raise Refused(f"no spec matches {spec!r}")
    return row


def _bound_graphs(db: Session, spec_id: str) -> list[str]:
    return list(
        db.scalars(
            select(Graph.id)
            .join(GraphSpec, GraphSpec.graph_id == Graph.id)
            .where(GraphSpec.spec_id == spec_id)
        )
    )


def _refuse_if_bound(db: Session, spec: Spec, verb: str) -> None:
    graphs = _bound_graphs(db, spec.id)
    if graphs:
        raise Refused(
            f"spec {spec.id} is bound to graph {', '.join(graphs)}; "
            f"{verb} applies to standalone specs only"
        )


def _refuse_if_in_progress(spec: Spec) -> None:
    if spec.status == "in_progress":
        raise Refused(f"spec {spec.id} is in_progress in a run; stop or reset the run first")


def _queue_ids_of(db: Session, spec_id: str) -> list[str]:
    return list(
        db.scalars(
            select(QueueMember.queue_id)
            .where(QueueMember.spec_id == spec_id)
            .order_by(QueueMember.queue_id)
        )
    )


def _active_runs_draining(db: Session, spec_id: str) -> list[str]:
    return list(
        db.scalars(
            select(Run.id)
            .join(QueueMember, QueueMember.queue_id == Run.queue_id)
            .where(QueueMember.spec_id == spec_id, Run.status.in_(ACTIVE_RUN_STATUSES))
        )
    )


def _spec_json(db: Session, spec: Spec) -> dict[str, Any]:
    parsed = specformat.read_body(spec.body)
    memberships = db.execute(
        select(Queue.id, Queue.name)
        .join(QueueMember, QueueMember.queue_id == Queue.id)
        .where(QueueMember.spec_id == spec.id)
        .order_by(Queue.id)
    ).all()
    return {
        "id": spec.id,
        "name": spec.name,
        "status": spec.status,
        "workdir": spec.workdir,
        "summary": specformat.summary_line(spec.body),
        "needs_conversion": parsed.needs_conversion,
        "sections": parsed.sections,
        "body": spec.body,
        "graphs": _bound_graphs(db, spec.id),
        "queues": [{"id": queue_id, "name": name} for queue_id, name in memberships],
        "created_at": to_iso(spec.created_at),
        "updated_at": to_iso(spec.updated_at),
    }
