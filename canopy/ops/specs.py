"""The spec backlog: list, count, get, create, update, delete, set_status, section."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from canopy.backlog import specformat
from canopy.errors import Refused
from canopy.ids import new_id
from canopy.limits import SPEC_LIST_LIMIT, check_range, clean_name
from canopy.ops.queues import remove_member_row
from canopy.statuses import ACTIVE_RUN_STATUSES, SET_STATUS_ACTIONS, check_spec_status
from canopy.store import queries
from canopy.timefmt import to_iso, utcnow
from canopy.workdir import normalize_workdir

if TYPE_CHECKING:
    from canopy.store.engine import Store
    from canopy.store.queries import Row, Rows


def spec_list(
    store: Store,
    workdir: str | None = None,
    status: str | None = None,
    standalone: bool = False,
    contains: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Specs in creation order, filtered by workdir tag, status and name, and to the
    standalone ones (bound to no graph: the TUI's Backlog) when asked; the first
    ``limit`` of them when given."""
    if limit is not None:
        check_range(limit, SPEC_LIST_LIMIT, "limit")
    which = _spec_filter(workdir, status, standalone, contains)
    with store.transaction() as rows:
        return queries.list_specs(rows, which, limit)


def spec_count(
    store: Store,
    workdir: str | None = None,
    status: str | None = None,
    standalone: bool = False,
    contains: str | None = None,
) -> dict[str, int]:
    """How many specs :func:`spec_list` would list with the same filters and no limit
    (the TUI's Backlog heading, while it reads only the rows it shows)."""
    which = _spec_filter(workdir, status, standalone, contains)
    with store.transaction() as rows:
        return {"count": queries.count_specs(rows, which)}


def _spec_filter(
    workdir: str | None, status: str | None, standalone: bool, contains: str | None
) -> queries.SpecFilter:
    """The filters of a listing, checked and normalised as the specs store them."""
    return queries.SpecFilter(
        workdir=normalize_workdir(workdir) if workdir is not None else None,
        status=check_spec_status(status) if status is not None else None,
        standalone=standalone,
        contains=contains,
    )


def spec_get(store: Store, spec: str) -> dict[str, Any]:
    """One spec with its full body, parsed sections and where it is used."""
    with store.transaction() as rows:
        return _spec_json(rows, _load(rows, spec))


def spec_create(store: Store, name: str, body: str, workdir: str | None = None) -> dict[str, Any]:
    """A new standalone, pending spec; the body must be in the tagged format."""
    checked_name = clean_name(name, "spec name")
    specformat.validate_for_write(body)
    tag = normalize_workdir(workdir) if workdir is not None else None
    spec_id = new_id("spec")
    with store.transaction() as rows:
        rows(
            "INSERT INTO specs (id, name, body, workdir, status, created_at, updated_at)"
            " VALUES (:id, :name, :body, :workdir, 'pending', :now, :now)",
            {"id": spec_id, "name": checked_name, "body": body, "workdir": tag, "now": utcnow()},
        )
        return _spec_json(rows, _load(rows, spec_id))


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
    changes: dict[str, Any] = {}
    if name is not None:
        changes["name"] = clean_name(name, "spec name")
    if body is not None:
        specformat.validate_for_write(body)
        changes["body"] = body
    if workdir is not None or clear_workdir:
        changes["workdir"] = normalize_workdir(workdir) if workdir is not None else None
    with store.transaction() as rows:
        spec_id = _load(rows, spec)["id"]
        _write(rows, spec_id, changes)
        return _spec_json(rows, _load(rows, spec_id))


def spec_delete(store: Store, spec: str) -> dict[str, Any]:
    """Delete an unbound spec, taking it out of every queue it was in.

    Refused for a spec bound to a graph and for one an active run is draining.
    """
    with store.transaction() as rows:
        row = _load(rows, spec)
        spec_id = row["id"]
        _refuse_if_bound(rows, spec_id, "delete")
        _refuse_if_in_progress(row)
        active = _active_runs_draining(rows, spec_id)
        if active:
            raise Refused(
                f"spec {spec_id} cannot be deleted: active run {', '.join(active)} is "
                "draining a queue it belongs to"
            )
        queue_ids = [queue["id"] for queue in _queues_of(rows, spec_id)]
        for queue_id in queue_ids:
            remove_member_row(rows, queue_id, spec_id)
        rows("DELETE FROM specs WHERE id = :id", {"id": spec_id})
        return {"id": spec_id, "deleted": True, "removed_from_queues": queue_ids}


def spec_set_status(store: Store, spec: str, action: str) -> dict[str, Any]:
    """Admin transition of a standalone spec: complete, skip or reopen."""
    if action not in SET_STATUS_ACTIONS:
        raise Refused(
            f"unknown set_status action {action!r}; one of {', '.join(SET_STATUS_ACTIONS)}"
        )
    with store.transaction() as rows:
        row = _load(rows, spec)
        _refuse_if_bound(rows, row["id"], action)
        _refuse_if_in_progress(row)
        _write(rows, row["id"], {"status": SET_STATUS_ACTIONS[action]})
        return _spec_json(rows, _load(rows, row["id"]))


def spec_section(store: Store, spec: str, section: str) -> dict[str, Any]:
    """One canonical section of a spec body, as markdown."""
    with store.transaction() as rows:
        row = _load(rows, spec)
        markdown = specformat.section(row["body"], section)
        return {"id": row["id"], "section": specformat.section_name(section), "markdown": markdown}


_COLUMNS = "id, name, body, workdir, status, created_at, updated_at"


def _load(rows: Rows, spec: str) -> Row:
    """The stored spec ``spec`` (an id or unique id prefix) names; refuses none or several."""
    found = rows(
        f"SELECT {_COLUMNS} FROM specs WHERE id = :id",
        {"id": queries.resolve_id(rows, "spec", spec)},
    )
    if not found:
        raise Refused(f"no spec matches {spec!r}")
    return found[0]


def _write(rows: Rows, spec_id: str, changes: dict[str, Any]) -> None:
    """Set the columns ``changes`` names (and ``updated_at``) on one spec."""
    values = {**changes, "updated_at": utcnow()}
    assignments = ", ".join(f"{column} = :{column}" for column in values)
    rows(f"UPDATE specs SET {assignments} WHERE id = :id", {**values, "id": spec_id})


def _bound_graphs(rows: Rows, spec_id: str) -> list[str]:
    found = rows(
        "SELECT g.id FROM graphs g JOIN graph_specs b ON b.graph_id = g.id"
        " WHERE b.spec_id = :spec_id ORDER BY g.id",
        {"spec_id": spec_id},
    )
    return [str(row["id"]) for row in found]


def _refuse_if_bound(rows: Rows, spec_id: str, verb: str) -> None:
    graphs = _bound_graphs(rows, spec_id)
    if graphs:
        raise Refused(
            f"spec {spec_id} is bound to graph {', '.join(graphs)}; "
            f"{verb} applies to standalone specs only"
        )


def _refuse_if_in_progress(spec: Row) -> None:
    if spec["status"] == "in_progress":
        raise Refused(f"spec {spec['id']} is in_progress in a run; stop or reset the run first")


def _queues_of(rows: Rows, spec_id: str) -> list[Row]:
    """The queues holding the spec, by id: each one's ``id`` and ``name``."""
    return rows(
        "SELECT q.id, q.name FROM queues q JOIN queue_members m ON m.queue_id = q.id"
        " WHERE m.spec_id = :spec_id ORDER BY q.id",
        {"spec_id": spec_id},
    )


def _active_runs_draining(rows: Rows, spec_id: str) -> list[str]:
    active, statuses = queries.bound_list("active", ACTIVE_RUN_STATUSES)
    found = rows(
        "SELECT r.id FROM runs r JOIN queue_members m ON m.queue_id = r.queue_id"
        f" WHERE m.spec_id = :spec_id AND r.status IN {active} ORDER BY r.id",
        {"spec_id": spec_id, **statuses},
    )
    return [str(row["id"]) for row in found]


def _spec_json(rows: Rows, spec: Row) -> Row:
    """The JSON shape of one spec: its fields, parsed body, graph and queues."""
    parsed = specformat.read_body(spec["body"])
    return {
        "id": spec["id"],
        "name": spec["name"],
        "status": spec["status"],
        "workdir": spec["workdir"],
        "summary": specformat.summary_line(spec["body"]),
        "needs_conversion": parsed.needs_conversion,
        "sections": parsed.sections,
        "body": spec["body"],
        "graphs": _bound_graphs(rows, spec["id"]),
        "queues": [{"id": q["id"], "name": q["name"]} for q in _queues_of(rows, spec["id"])],
        "created_at": to_iso(spec["created_at"]),
        "updated_at": to_iso(spec["updated_at"]),
    }
