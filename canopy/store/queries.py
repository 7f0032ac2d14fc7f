"""Read queries shared by every caller (and the graph's write lock), written once as
portable SQL, on the runner a store transaction gives (:data:`Rows`). Only stdlib
imports here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from canopy.errors import Refused
from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.timefmt import to_iso

Row: TypeAlias = dict[str, Any]
Rows: TypeAlias = Callable[[str, Mapping[str, Any]], list[Row]]
"""Runs one SQL statement with named parameters, inside a store transaction
(:meth:`~canopy.store.engine.Store.transaction`), and returns its rows as dicts."""

_TABLE_OF_KIND = {
    "spec": "specs",
    "queue": "queues",
    "graph": "graphs",
    "run": "runs",
    "session": "sessions",
    "schedule": "schedules",
}
_ID_PREFIX_OF_KIND = {"session": "sess", "schedule": "sched"}
"""Kinds whose ids use a shorter prefix than the kind's name."""
_NAMED_KINDS = ("queue", "graph")
"""Kinds people name for reuse, so their exact name works wherever an id does."""
_ID_PREFIX = re.compile(r"[a-z0-9-]+")
_MAX_CANDIDATES_SHOWN = 10


def bound_list(name: str, values: Sequence[str]) -> tuple[str, dict[str, str]]:
    """``(:name0, :name1, …)`` and its parameters: an ``IN`` list both drivers bind."""
    params = {f"{name}{index}": value for index, value in enumerate(values)}
    return f"({', '.join(':' + key for key in params)})", params


def stored_json(text: str | None) -> Any:
    """A JSON column read as ``CAST(column AS TEXT)``, decoded (``None`` for SQL NULL).

    Casting makes both drivers hand over the text: SQLite keeps JSON as text anyway,
    psycopg would decode a Postgres ``json`` value itself.
    """
    return None if text is None else json.loads(text)


def normalized_prefix(kind: str, prefix: str) -> str:
    """``prefix`` lower-cased, with ``kind-`` added when the user left it out.

    ``4k2m`` means ``spec-4k2m`` for a spec; ``sp`` stays ``sp``. A prefix that cannot
    be part of an id is refused as matching nothing.
    """
    wanted = prefix.strip().lower()
    if not wanted or not _ID_PREFIX.fullmatch(wanted):
        raise Refused(f"no {kind} matches {prefix!r}")
    id_prefix = _ID_PREFIX_OF_KIND.get(kind, kind)
    if not wanted.startswith(f"{id_prefix}-") and not f"{id_prefix}-".startswith(wanted):
        wanted = f"{id_prefix}-{wanted}"
    return wanted


def resolve_id(rows: Rows, kind: str, prefix: str) -> str:
    """The one id of ``kind`` that ``prefix`` names; refuses none or several.

    For queues and graphs an exact name is tried first (``canopy queue list nightly``);
    otherwise ``prefix`` is a unique id prefix.
    """
    table = _TABLE_OF_KIND[kind]
    if kind in _NAMED_KINDS:
        named = [
            str(row["id"])
            for row in rows(
                f"SELECT id FROM {table} WHERE name = :name ORDER BY id", {"name": prefix}
            )
        ]
        if len(named) == 1:
            return named[0]
        if named:
            raise Refused(f"{kind} name {prefix!r} is ambiguous: {', '.join(named)}; use an id")
    wanted = normalized_prefix(kind, prefix)
    found = rows(
        f"SELECT id FROM {table} WHERE id LIKE :pattern ORDER BY id LIMIT :limit",
        {"pattern": wanted + "%", "limit": _MAX_CANDIDATES_SHOWN + 1},
    )
    ids = [str(row["id"]) for row in found]
    if len(ids) == 1 or wanted in ids:
        return wanted if wanted in ids else ids[0]
    if not ids:
        raise Refused(f"no {kind} matches {prefix!r}")
    shown = ", ".join(ids[:_MAX_CANDIDATES_SHOWN])
    more = " and more" if len(ids) > _MAX_CANDIDATES_SHOWN else ""
    raise Refused(f"ambiguous {kind} id {prefix!r}: matches {shown}{more}")


def lock_graph(rows: Rows, graph_id: str) -> None:
    """Take the graph row's write lock for the rest of the transaction.

    A write lock on SQLite, a row lock on Postgres: transactions that start, edit, delete
    or reset one graph then run one after the other, each reading what the previous one
    committed, instead of deciding from a stale read.
    """
    rows("UPDATE graphs SET name = name WHERE id = :id", {"id": graph_id})


def graph_record(rows: Rows, graph_id: str) -> Row:
    """A graph's row as a run reads it: its JSON documents (nodes, ensembles, hooks,
    blocker, budget) decoded and ``allow_dirty_start`` a bool. Raises if there is no such
    graph."""
    (row,) = rows(
        "SELECT id, name, workdir, host, allow_dirty_start, lanes, integration,"
        " conflict_resolver, permissions,"
        " status, updated_at,"
        " CAST(budget AS TEXT) AS budget, CAST(nodes AS TEXT) AS nodes,"
        " CAST(ensembles AS TEXT) AS ensembles, CAST(hooks AS TEXT) AS hooks,"
        " CAST(blocker AS TEXT) AS blocker"
        " FROM graphs WHERE id = :id",
        {"id": graph_id},
    )
    return {
        **row,
        "allow_dirty_start": bool(row["allow_dirty_start"]),
        "nodes": stored_json(row["nodes"]) or [],
        "ensembles": stored_json(row["ensembles"]) or {},
        "hooks": stored_json(row["hooks"]) or {},
        "blocker": stored_json(row["blocker"]),
        "budget": stored_json(row["budget"]),
    }


def spec_row_json(row: Row) -> Row:
    """The JSON shape of a spec in listings."""
    return {
        "id": row["id"],
        "name": row["name"],
        "status": row["status"],
        "workdir": row["workdir"],
        "created_at": to_iso(row["created_at"]),
        "updated_at": to_iso(row["updated_at"]),
    }


@dataclass(frozen=True)
class SpecFilter:
    """Which specs a listing or a count takes: one workdir tag, one status, only the
    standalone ones (bound to no graph), only those whose name contains a text (ASCII
    letters in either case). ``None``/``False``: no such condition."""

    workdir: str | None = None
    status: str | None = None
    standalone: bool = False
    contains: str | None = None

    def where(self) -> tuple[str, dict[str, Any]]:
        """The ``WHERE`` clause (or nothing) and its parameters."""
        clauses = []
        params: dict[str, Any] = {}
        if self.standalone:
            clauses.append("NOT EXISTS (SELECT 1 FROM graph_specs b WHERE b.spec_id = specs.id)")
        if self.workdir is not None:
            clauses.append("workdir = :workdir")
            params["workdir"] = self.workdir
        if self.status is not None:
            clauses.append("status = :status")
            params["status"] = self.status
        if self.contains:
            clauses.append("LOWER(name) LIKE :contains ESCAPE '\\'")
            escaped = re.sub(r"([\\%_])", r"\\\1", self.contains.lower())
            params["contains"] = f"%{escaped}%"
        return (f" WHERE {' AND '.join(clauses)}" if clauses else ""), params


def list_specs(rows: Rows, which: SpecFilter, limit: int | None = None) -> list[Row]:
    """The specs ``which`` takes, in creation order; the first ``limit`` of them when
    given (the TUI reads only the rows it shows)."""
    where, params = which.where()
    sql = (
        "SELECT id, name, status, workdir, created_at, updated_at FROM specs"
        f"{where} ORDER BY created_at, id"
    )
    if limit is not None:
        sql += " LIMIT :limit"
        params["limit"] = limit
    return [spec_row_json(row) for row in rows(sql, params)]


def count_specs(rows: Rows, which: SpecFilter) -> int:
    """How many specs ``which`` takes."""
    where, params = which.where()
    (found,) = rows(f"SELECT COUNT(*) AS n FROM specs{where}", params)
    return int(found["n"])


def list_queues(rows: Rows) -> list[Row]:
    """Every queue with its member and pending-member counts, oldest first."""
    sql = (
        "SELECT q.id, q.name, q.created_at, COUNT(m.spec_id) AS members,"
        " COALESCE(SUM(CASE WHEN s.status = 'pending' THEN 1 ELSE 0 END), 0) AS pending"
        " FROM queues q"
        " LEFT JOIN queue_members m ON m.queue_id = q.id"
        " LEFT JOIN specs s ON s.id = m.spec_id"
        " GROUP BY q.id, q.name, q.created_at ORDER BY q.created_at, q.id"
    )
    return [
        {
            "id": row["id"],
            "name": row["name"],
            "members": int(row["members"]),
            "pending": int(row["pending"]),
            "created_at": to_iso(row["created_at"]),
        }
        for row in rows(sql, {})
    ]


def queue_members(rows: Rows, queue_id: str) -> list[Row]:
    """One queue's members in order: 1-based position, spec, group and spec status."""
    sql = (
        "SELECT m.position, m.spec_id, s.name, m.group_name, s.status"
        " FROM queue_members m JOIN specs s ON s.id = m.spec_id"
        " WHERE m.queue_id = :queue_id ORDER BY m.position"
    )
    return [
        {
            "position": int(row["position"]) + 1,
            "spec_id": row["spec_id"],
            "name": row["name"],
            "group": row["group_name"],
            "status": row["status"],
        }
        for row in rows(sql, {"queue_id": queue_id})
    ]


def queue_name(rows: Rows, queue_id: str) -> str:
    """The name of the queue ``queue_id`` (which exists)."""
    (queue,) = rows("SELECT name FROM queues WHERE id = :id", {"id": queue_id})
    return str(queue["name"])


def queue_listing(rows: Rows, queue_prefix: str) -> Row:
    """``queue list Q``, and every queue write's answer: the queue's id and name with its
    members in order and the outcome of its latest run."""
    queue_id = resolve_id(rows, "queue", queue_prefix)
    (queue,) = rows("SELECT id, name FROM queues WHERE id = :id", {"id": queue_id})
    return {
        "id": queue["id"],
        "name": queue["name"],
        "members": queue_members(rows, queue_id),
        "latest_run": queue_latest_run(rows, queue_id),
    }


def queue_latest_run(rows: Rows, queue_id: str) -> Row | None:
    """The run that started last over the queue, whichever graph ran it, with each spec's
    outcome in it (the latest, for a spec it reached twice; ``null`` while its spec is
    under way), or ``None`` when no run ever drained the queue."""
    found = rows(
        "SELECT r.id, r.number, r.status, r.started_at, r.ended_at, r.graph_id,"
        " g.name AS graph_name FROM runs r JOIN graphs g ON g.id = r.graph_id"
        " WHERE r.queue_id = :queue_id ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
        {"queue_id": queue_id},
    )
    if not found:
        return None
    run = found[0]
    passages = rows(
        "SELECT spec_id, outcome FROM run_specs WHERE run_id = :run_id ORDER BY id",
        {"run_id": run["id"]},
    )
    return {
        "id": run["id"],
        "graph_id": run["graph_id"],
        "graph": run["graph_name"],
        "number": int(run["number"]),
        "status": run["status"],
        "started_at": to_iso(run["started_at"]),
        "ended_at": to_iso(run["ended_at"]),
        "outcomes": {passage["spec_id"]: passage["outcome"] for passage in passages},
    }


def list_graphs(rows: Rows) -> list[Row]:
    """Every graph, oldest first, with its status, blocker, node and bound-spec counts and
    active run (a graph has at most one: a unique index sees to it)."""
    active, statuses = bound_list("active", ACTIVE_RUN_STATUSES)
    sql = (
        "SELECT g.id, g.name, g.status, CAST(g.blocker AS TEXT) AS blocker, g.workdir,"
        " CAST(g.nodes AS TEXT) AS nodes, g.updated_at,"
        " (SELECT COUNT(*) FROM graph_specs b WHERE b.graph_id = g.id) AS specs,"
        f" (SELECT MIN(r.id) FROM runs r WHERE r.graph_id = g.id AND r.status IN {active})"
        " AS active_run,"
        " (SELECT MIN(r.scheduled_resume_at) FROM runs r"
        f" WHERE r.graph_id = g.id AND r.status IN {active}) AS scheduled_resume_at"
        " FROM graphs g ORDER BY g.created_at, g.id"
    )
    return [
        {
            "id": row["id"],
            "name": row["name"],
            "status": row["status"],
            "blocker": stored_json(row["blocker"]),
            "workdir": row["workdir"],
            "nodes": len(stored_json(row["nodes"])),
            "specs": int(row["specs"]),
            "active_run": row["active_run"],
            "scheduled_resume_at": to_iso(row["scheduled_resume_at"]),
            "updated_at": to_iso(row["updated_at"]),
        }
        for row in rows(sql, statuses)
    ]


UNDELIVERED_STATUSES = ("queued", "delivering", "waiting")
"""Message statuses still on their way to a session (delivery picks the oldest first)."""

_SESSION_COLUMNS = (
    "s.id, s.name, s.platform, s.workdir, s.host, s.harness_conversation_id, s.permissions,"
    " s.status, s.transcript_path, s.created_at, s.updated_at, s.closed_at"
)


def session_row_json(row: Row) -> Row:
    """The JSON shape of a session in listings and answers."""
    return {
        "id": row["id"],
        "name": row["name"],
        "platform": row["platform"],
        "workdir": row["workdir"],
        "host": row["host"],
        "harness_conversation_id": row["harness_conversation_id"],
        "permissions": row["permissions"],
        "status": row["status"],
        "transcript_path": row["transcript_path"],
        "queued_messages": int(row["queued_messages"]),
        "created_at": to_iso(row["created_at"]),
        "updated_at": to_iso(row["updated_at"]),
        "closed_at": to_iso(row["closed_at"]),
    }


def _sessions(rows: Rows, clauses: list[str], params: Mapping[str, Any]) -> list[Row]:
    """Sessions matching every clause, oldest first, with their undelivered-message count."""
    undelivered, statuses = bound_list("undelivered", UNDELIVERED_STATUSES)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    sql = (
        f"SELECT {_SESSION_COLUMNS}, COUNT(m.seq) AS queued_messages FROM sessions s"
        f" LEFT JOIN messages m ON m.session_id = s.id AND m.status IN {undelivered}"
        f"{where} GROUP BY {_SESSION_COLUMNS} ORDER BY s.created_at, s.id"
    )
    return [session_row_json(row) for row in rows(sql, {**params, **statuses})]


def list_sessions(
    rows: Rows, *, include_finished: bool = False, name: str | None = None
) -> list[Row]:
    """The live set, oldest first — what ``session list``, the MCP ``session_list`` tool
    and name-targeted hooks all read — or every session; optionally one name only."""
    clauses = [] if include_finished else ["s.status = 'live'"]
    if name is not None:
        clauses.append("s.name = :name")
    return _sessions(rows, clauses, {"name": name})


def session_by_id(rows: Rows, session_id: str) -> Row | None:
    """One session's JSON shape, or ``None``."""
    found = _sessions(rows, ["s.id = :id"], {"id": session_id})
    return found[0] if found else None


def find_session(rows: Rows, ref: str, *, live_only: bool) -> Row:
    """The session ``ref`` names: an exact id, a name, or a unique id prefix.

    A name must pick one candidate: the live sessions when ``live_only`` (a finished one
    is found, to be refused by name, only when no live session has the name), else any.
    With ``live_only`` a finished session is refused, saying how to resume it.
    """
    wanted = ref.strip()
    found = session_by_id(rows, wanted) or _session_named(rows, wanted, live_only)
    if found is None:
        found = session_by_id(rows, resolve_id(rows, "session", wanted))
        assert found is not None  # resolve_id found its id in this transaction
    if live_only and found["status"] != "live":
        raise Refused(
            f"session {found['id']} ({found['name']}) is finished; resume it with "
            f"`canopy session resume {found['id']}`"
        )
    return found


def _session_named(rows: Rows, name: str, live_only: bool) -> Row | None:
    """The one candidate session called ``name`` (see :func:`find_session`), or ``None``."""
    if live_only:
        live = list_sessions(rows, name=name)
        named = live or list_sessions(rows, include_finished=True, name=name)[-1:]
    else:
        named = list_sessions(rows, include_finished=True, name=name)
    if len(named) > 1:
        ids = ", ".join(row["id"] for row in named)
        raise Refused(f"session name {name!r} is ambiguous: {ids}; use an id")
    return named[0] if named else None
