"""Interactive sessions and their messages: the operations behind
``canopy session …``, the MCP ``session_list`` tool and interactive hooks.

A session is live (open in Canopy: its messages are delivered) or finished (closed, and
resumable under the same id). Messages are stored before anything else happens, so a
prompt is never lost: one that cannot reach its session stays recallable. Delivery
itself is the daemon's job (``workflows/session_delivery.py``); these operations only
write the store, and the front ends then wake the session's delivery workflow.

The platforms are imported only inside the operations that need them, so the CLI's fast
lane, which serves ``session new``, ``close``, ``send`` and ``resume``, does not load
them by importing this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from canopy.errors import Refused
from canopy.ids import new_id
from canopy.limits import (
    SESSION_NAME_MAX_LENGTH,
    TEXT_MAX_LENGTH,
    check_text,
    clean_name,
    clean_path_safe_name,
)
from canopy.ops.notifications import notify
from canopy.paths import session_path
from canopy.permissions import checked_permissions
from canopy.sessions.names import generated_name
from canopy.store import queries
from canopy.timefmt import to_iso, utcnow
from canopy.workdir import normalize_workdir

if TYPE_CHECKING:
    from canopy.store.engine import Store
    from canopy.store.queries import Row, Rows

LIVE = "live"
FINISHED = "finished"
SOURCE_HOOK = "hook"
SOURCE_PROMPTBUILDER = "promptbuilder"
SESSION_NOT_FOUND = "session_not_found"
RECALLABLE_STATUSES = (SESSION_NOT_FOUND, "failed")
"""Messages that could not be delivered: what ``session recall`` shows."""


def session_new(
    store: Store,
    platform: str,
    name: str | None = None,
    workdir: str | None = None,
    permissions: str | None = None,
) -> dict[str, Any]:
    """A live session on ``platform`` in ``workdir`` (default: the current directory).

    Its harness conversation starts with the first delivered message. Without a name,
    one is generated that no live session holds. ``permissions`` is what its turns may
    do (:mod:`canopy.permissions`); unset: the platform's level, else ``workspace``.
    """
    from canopy.platforms import get_platform

    get_platform(platform)
    level = checked_permissions(permissions)
    clean_workdir = _existing_workdir(workdir)
    checked_name = _clean_name(name) if name is not None else None
    with store.transaction() as rows:
        return _create(
            rows, platform, clean_workdir, checked_name, conversation_id=None, permissions=level
        )


def session_list(store: Store, include_finished: bool = False) -> dict[str, Any]:
    """The live sessions (the set name-targeted hooks resolve against), or all of them."""
    with store.transaction() as rows:
        return {"sessions": queries.list_sessions(rows, include_finished=include_finished)}


def session_get(store: Store, ref: str) -> dict[str, Any]:
    """One session, live or finished, by id, id prefix or name."""
    with store.transaction() as rows:
        return queries.find_session(rows, ref, live_only=False)


def session_close(store: Store, ref: str) -> dict[str, Any]:
    """Finish a live session. A turn already running completes; messages still queued
    for it are kept and end up recallable (``session_not_found``) at delivery."""
    with store.transaction() as rows:
        target = queries.find_session(rows, ref, live_only=True)
        rows(
            "UPDATE sessions SET status = :status, closed_at = :now, updated_at = :now"
            " WHERE id = :id",
            {"status": FINISHED, "now": utcnow(), "id": target["id"]},
        )
        return _json(rows, target["id"])


def session_resume(store: Store, ref: str) -> dict[str, Any]:
    """Relaunch a finished session: the same id, and the same name unless another live
    session holds it (then a fresh generated one), so hooks aimed at either still reach it.
    """
    with store.transaction() as rows:
        target = queries.find_session(rows, ref, live_only=False)
        if target["status"] == LIVE:
            raise Refused(f"session {target['id']} ({target['name']}) is already live")
        _reopen(rows, target)
        return _json(rows, target["id"])


def session_resume_either(
    store: Store,
    ref: str | None,
    conversation_id: str | None,
    platform: str | None,
    workdir: str | None = None,
) -> dict[str, Any]:
    """``session resume``: a finished session, or a harness conversation — exactly one."""
    if (ref is None) == (conversation_id is None):
        raise Refused("resume needs exactly one of a session or a harness conversation id")
    if ref is not None:
        if platform is not None or workdir is not None:
            raise Refused(
                "resuming a session takes no platform or workdir: it keeps its own "
                "(they are for resuming a harness conversation)"
            )
        return session_resume(store, ref)
    if platform is None:
        raise Refused("resuming a harness conversation needs its platform")
    assert conversation_id is not None
    return session_resume_conversation(store, conversation_id, platform, workdir)


def session_resume_conversation(
    store: Store, conversation_id: str, platform: str, workdir: str | None = None
) -> dict[str, Any]:
    """Resume a harness conversation by the harness's own id.

    A conversation a Canopy session already drove resumes that session (same id). One
    Canopy never saw becomes a new session with a fresh id and a fresh generated name:
    hooks aimed at an old id do not follow it, by design.
    """
    from canopy.platforms import get_platform

    # The id goes into the harness's argv and its history's file names: path-safe.
    clean_id = clean_path_safe_name(
        conversation_id, "harness conversation id", SESSION_NAME_MAX_LENGTH
    )
    adapter = get_platform(platform)
    clean_workdir = _existing_workdir(workdir)
    with store.transaction() as rows:
        driven = rows(
            "SELECT id, name, workdir, status FROM sessions"
            " WHERE harness_conversation_id = :conversation AND platform = :platform"
            " ORDER BY created_at DESC",
            {"conversation": clean_id, "platform": platform},
        )
        if driven:
            known = driven[0]
            if workdir is not None and known["workdir"] != clean_workdir:
                raise Refused(
                    f"conversation {clean_id} belongs to session {known['id']} "
                    f"({known['name']}), which works in {known['workdir']}, not {clean_workdir}"
                )
            if known["status"] == LIVE:
                raise Refused(
                    f"conversation {clean_id} is already live as session {known['id']} "
                    f"({known['name']})"
                )
            _reopen(rows, known)
            return _json(rows, known["id"])
        listed = adapter.conversations(Path(clean_workdir))
        if listed is not None and clean_id not in {c.conversation_id for c in listed}:
            raise Refused(
                f"{platform} has no conversation {clean_id!r} in {clean_workdir}; "
                f"`canopy session conversations --platform {platform}` lists them"
            )
        return _create(rows, platform, clean_workdir, None, conversation_id=clean_id)


def harness_conversations(
    store: Store, platform: str, workdir: str | None = None
) -> dict[str, Any]:
    """The harness's own conversations in ``workdir``, newest first, each with the Canopy
    session that drives it (``None``: one Canopy never saw)."""
    from canopy.platforms import get_platform

    adapter = get_platform(platform)
    clean_workdir = _existing_workdir(workdir)
    listed = adapter.conversations(Path(clean_workdir))
    if listed is None:
        raise Refused(f"platform {platform!r} cannot list its conversations")
    owners: dict[str, str] = {}
    if listed:  # ``IN ()`` is not SQL
        conversations, params = queries.bound_list(
            "conversation", [c.conversation_id for c in listed]
        )
        with store.transaction() as rows:
            found = rows(
                "SELECT harness_conversation_id, id FROM sessions WHERE platform = :platform"
                f" AND harness_conversation_id IN {conversations}",
                {**params, "platform": platform},
            )
        owners = {row["harness_conversation_id"]: row["id"] for row in found}
    return {
        "platform": platform,
        "workdir": clean_workdir,
        "conversations": [
            {
                "conversation_id": c.conversation_id,
                "workdir": c.workdir,
                "started_at": to_iso(c.started_at),
                "updated_at": to_iso(c.updated_at),
                "title": c.title,
                "session_id": owners.get(c.conversation_id),
            }
            for c in listed
        ],
    }


def session_send(store: Store, ref: str, prompt: str) -> dict[str, Any]:
    """Queue a prompt for a live session, as the prompt builder does; delivery follows.

    The message is committed when this returns, which must come before the daemon is
    woken.
    """
    clean_prompt = _clean_prompt(prompt)
    with store.transaction() as rows:
        target = queries.find_session(rows, ref, live_only=True)
        message_id = _add_message(
            rows,
            clean_prompt,
            session_id=target["id"],
            status="queued",
            source=SOURCE_PROMPTBUILDER,
        )
        message = find_message(rows, message_id)
        assert message is not None  # stored in this transaction
        return message


def session_recall(store: Store, ref: str | None = None) -> dict[str, Any]:
    """Messages that could not be delivered, oldest first (all, or one session's)."""
    recallable, params = queries.bound_list("recallable", RECALLABLE_STATUSES)
    with store.transaction() as rows:
        where = f"status IN {recallable}"
        if ref is not None:
            target = queries.find_session(rows, ref, live_only=False)
            where += " AND session_id = :session_id"
            params["session_id"] = target["id"]
        found = rows(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE {where} ORDER BY seq", params)
        return {"messages": [message_json(row) for row in found]}


def message_get(store: Store, message_id: str) -> dict[str, Any]:
    """One message with its provenance and delivery record."""
    with store.transaction() as rows:
        found = find_message(rows, message_id)
        if found is None:
            raise Refused(f"no message {message_id!r}")
        return found


# ----------------------------------------------------------------- interactive hooks


def enqueue_hook_message(
    rows: Rows,
    prompt: str,
    *,
    target_session_id: str | None,
    target_session_name: str | None,
    graph_id: str,
    run_id: str,
    event: str,
    hook_run_id: int,
) -> dict[str, Any]:
    """Queue a rendered hook prompt for its target, resolved now against the live set;
    the stored message (:func:`message_json`).

    A target that does not resolve gives a message with status ``session_not_found``
    and the reason in ``error`` (the hook run fails with that reason); the prompt is
    kept, recallable, with a notification, so nothing a hook meant to say is lost.
    """
    provenance: dict[str, Any] = {
        "source": SOURCE_HOOK,
        "graph_id": graph_id,
        "run_id": run_id,
        "event": event,
        "target_name": target_session_name,
        "hook_run_id": hook_run_id,
    }
    try:
        session_id = (
            live_session_by_id(rows, target_session_id)
            if target_session_id is not None
            else live_session_by_name(rows, target_session_name or "")
        )
    except Refused as refusal:
        kept = _add_message(
            rows,
            prompt,
            session_id=target_session_id,
            status=SESSION_NOT_FOUND,
            error=refusal.message,
            **provenance,
        )
        notify(
            rows,
            SESSION_NOT_FOUND,
            f"{kept} from an {event} hook of {graph_id}: {refusal.message}; the prompt is "
            "kept (canopy session recall)",
            target_session_id,
            kept,
        )
        message_id = kept
    else:
        message_id = _add_message(
            rows, prompt, session_id=session_id, status="queued", **provenance
        )
    stored = find_message(rows, message_id)
    assert stored is not None  # stored in this transaction
    return stored


def live_session_by_id(rows: Rows, session_id: str) -> str:
    """The live session with exactly this id; refuses naming the id otherwise."""
    found = rows("SELECT id, status FROM sessions WHERE id = :id", {"id": session_id})
    if not found:
        raise Refused(
            f"session {session_id} not found: no session has this id (a harness conversation "
            "resumed outside Canopy's sessions gets a new id; target the session by name to "
            "follow it)"
        )
    if found[0]["status"] != LIVE:
        raise Refused(
            f"session {session_id} is finished; resume it with `canopy session resume {session_id}`"
        )
    return str(found[0]["id"])


def live_session_by_name(rows: Rows, name: str) -> str:
    """The one live session called ``name``, resolved fresh against the live set."""
    matches = [row["id"] for row in queries.list_sessions(rows, name=name)]
    if not matches:
        raise Refused(f"no live session is named {name!r}")
    if len(matches) > 1:
        raise Refused(
            f"{len(matches)} live sessions are named {name!r}: {', '.join(matches)}; "
            "target one by id"
        )
    return str(matches[0])


# ------------------------------------------------------------------------ shapes


_MESSAGE_COLUMNS = (
    "id, session_id, prompt, status, error, source, graph_id, run_id, event, target_name,"
    " hook_run_id, delivered_session_id, delivered_at, reply, attempts, retry_at, log_path,"
    " created_at"
)
"""The columns :func:`message_json` shapes, as portable SQL selects them."""


def message_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """A message (a row of :data:`_MESSAGE_COLUMNS`): its prompt, provenance (as
    structure) and delivery record."""
    return {
        "id": row["id"],
        "session_id": row["session_id"],
        "prompt": row["prompt"],
        "status": row["status"],
        "error": row["error"],
        "provenance": {
            "source": row["source"],
            "graph_id": row["graph_id"],
            "run_id": row["run_id"],
            "event": row["event"],
            "target_name": row["target_name"],
            "hook_run_id": row["hook_run_id"],
        },
        "delivery": {
            "session_id": row["delivered_session_id"],
            "delivered_at": to_iso(row["delivered_at"]),
            "reply": row["reply"],
            "attempts": row["attempts"],
            "retry_at": to_iso(row["retry_at"]),
            "log_path": row["log_path"],
        },
        "created_at": to_iso(row["created_at"]),
    }


# ----------------------------------------------------------------------- helpers


def _json(rows: Rows, session_id: str) -> dict[str, Any]:
    found = queries.session_by_id(rows, session_id)
    assert found is not None
    return found


def _live_names(rows: Rows) -> set[str]:
    return {row["name"] for row in queries.list_sessions(rows)}


def _reopen(rows: Rows, target: Row) -> None:
    """Make a finished session live again, renaming it only if its name is taken."""
    live_names = _live_names(rows)
    name = generated_name(live_names) if target["name"] in live_names else target["name"]
    rows(
        "UPDATE sessions SET name = :name, status = :status, closed_at = NULL,"
        " updated_at = :now WHERE id = :id",
        {"name": name, "status": LIVE, "now": utcnow(), "id": target["id"]},
    )


_INSERT_SESSION = (
    "INSERT INTO sessions (id, name, platform, workdir, host, harness_conversation_id,"
    " permissions, status, transcript_path, created_at, updated_at, closed_at)"
    " VALUES (:id, :name, :platform, :workdir, :host, :conversation_id, :permissions,"
    " :status, :transcript_path, :now, :now, NULL)"
)


def _create(
    rows: Rows,
    platform: str,
    workdir: str,
    name: str | None,
    *,
    conversation_id: str | None,
    permissions: str | None = None,
) -> dict[str, Any]:
    """A new live session; its JSON shape."""
    from canopy.temporal.client import this_host  # only here: it loads the dev server's paths

    session_id = new_id("sess")
    rows(
        _INSERT_SESSION,
        {
            "id": session_id,
            "name": name or generated_name(_live_names(rows)),
            "platform": platform,
            "workdir": workdir,
            "host": this_host(),
            "conversation_id": conversation_id,
            "permissions": permissions,
            "status": LIVE,
            "transcript_path": str(session_path(session_id, "transcript.jsonl")),
            "now": utcnow(),
        },
    )
    return _json(rows, session_id)


_INSERT_MESSAGE = (
    "INSERT INTO messages (id, session_id, prompt, source, graph_id, run_id, event,"
    " target_name, hook_run_id, status, error, attempts, created_at)"
    " VALUES (:id, :session_id, :prompt, :source, :graph_id, :run_id, :event,"
    " :target_name, :hook_run_id, :status, :error, 0, :now)"
)


def _add_message(
    rows: Rows,
    prompt: str,
    *,
    session_id: str | None,
    status: str,
    source: str,
    error: str | None = None,
    graph_id: str | None = None,
    run_id: str | None = None,
    event: str | None = None,
    target_name: str | None = None,
    hook_run_id: int | None = None,
) -> str:
    """Store a new message; its id."""
    message_id = new_id("msg")
    rows(
        _INSERT_MESSAGE,
        {
            "id": message_id,
            "session_id": session_id,
            "prompt": prompt,
            "source": source,
            "graph_id": graph_id,
            "run_id": run_id,
            "event": event,
            "target_name": target_name,
            "hook_run_id": hook_run_id,
            "status": status,
            "error": error,
            "now": utcnow(),
        },
    )
    return message_id


def find_message(rows: Rows, message_id: str) -> dict[str, Any] | None:
    """One message's JSON shape (:func:`message_json`), or ``None``."""
    found = rows(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = :id", {"id": message_id})
    return message_json(found[0]) if found else None


def _existing_workdir(workdir: str | None) -> str:
    """An absolute path to an existing directory (default: the current one)."""
    clean = normalize_workdir(workdir if workdir is not None else ".")
    if not Path(clean).is_dir():
        raise Refused(f"workdir {clean} is not an existing directory")
    return clean


def _clean_name(name: str) -> str:
    return clean_name(name, "session name", SESSION_NAME_MAX_LENGTH)


def _clean_prompt(prompt: str) -> str:
    if not prompt.strip():
        raise Refused("prompt must not be empty")
    return check_text(prompt, "prompt", TEXT_MAX_LENGTH)
