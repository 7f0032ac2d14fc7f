"""Delivering a session's messages: one resume-with-prompt turn per message.

:class:`DeliveryActivities`: ``next_message`` (main queue) reads the session's oldest
undelivered message. ``deliver_message`` (the agents queue of the session's host) runs
the turn through the platform adapter — resuming the harness conversation once one is
known — appends it to the transcript and writes the delivery record. A session that is
no longer live gets nothing: the message becomes ``session_not_found`` (recallable) and
a notification is written. ``fail_delivery`` records a message whose delivery kept
failing. Turns run detached (:mod:`canopy.activities.detached`), so a worker crash
mid-turn neither kills the turn nor sends the prompt twice.
"""

import asyncio
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, cast

from temporalio import activity

from canopy.activities.detached import Command, LaunchError, ProcessEnd, ProcessFiles, run_once
from canopy.contracts.session_delivery import (
    DeliveryFailure,
    DeliveryOutcome,
    DeliveryStatus,
    MessageRef,
    NextMessage,
    SessionRef,
)
from canopy.errors import Refused
from canopy.ops.notifications import notify
from canopy.ops.sessions import LIVE, SESSION_NOT_FOUND, find_message
from canopy.paths import session_path
from canopy.permissions import Permissions, nearest, stored_permissions
from canopy.platforms import Platform, get_platform, limit_wait, platform_permissions
from canopy.sessions.transcripts import append_turn
from canopy.store.engine import Store
from canopy.store.queries import UNDELIVERED_STATUSES, Row, Rows, bound_list
from canopy.temporal import client as temporal_client
from canopy.timefmt import as_utc, stored_time, to_iso, utcnow

TURN_TIMEOUT_MINUTES = 6 * 60.0
"""A turn still running after this long is stopped and its message recorded as failed."""
FAILED: DeliveryStatus = "failed"
DELIVERED: DeliveryStatus = "delivered"
KEPT = "the prompt is kept (canopy session recall)"
DELIVERY_FAILED = "delivery_failed"
"""The notification kind of a message that was not delivered (its session was there)."""


@dataclass(frozen=True)
class TurnPlan:
    """What one delivery attempt needs, read from the store when it begins."""

    message_id: str
    session_id: str
    platform: str
    workdir: str
    prompt: str
    resume_conversation_id: str | None
    permissions: Permissions | None
    """The session's own level; unset: the platform's, else the default."""
    files: ProcessFiles


class DeliveryActivities:
    """The SessionDelivery activities, bound to the store holding the messages."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @activity.defn
    def next_message(self, session: SessionRef) -> NextMessage | None:
        """The session's oldest message not yet delivered, if any, with the time it waits
        for when a usage limit held it back (the workflow's timer does the waiting)."""
        undelivered, params = bound_list("undelivered", UNDELIVERED_STATUSES)
        with self._store.transaction() as rows:
            found = rows(
                "SELECT m.id, m.retry_at, s.host FROM messages m"
                " JOIN sessions s ON s.id = m.session_id"
                f" WHERE m.session_id = :session_id AND m.status IN {undelivered}"
                " ORDER BY m.seq LIMIT 1",
                {**params, "session_id": session.session_id},
            )
        if not found:
            return None
        retry_at = found[0]["retry_at"]
        return NextMessage(
            message_id=found[0]["id"],
            agents_task_queue=temporal_client.agents_task_queue(found[0]["host"]),
            retry_at=as_utc(stored_time(retry_at)) if retry_at else None,
        )

    @activity.defn
    async def deliver_message(self, message: MessageRef) -> DeliveryOutcome:
        """Deliver one message as a turn of its session; how it went. Store work runs on a
        thread, so a slow store never stalls the heartbeats of the worker's other activities."""
        plan = await asyncio.to_thread(self.begin_delivery, message.message_id)
        if isinstance(plan, DeliveryOutcome):
            return plan
        try:
            platform = get_platform(plan.platform)
            invocation = platform.build_invocation(
                plan.prompt,
                model=None,
                effort=None,
                resume_session_id=plan.resume_conversation_id,
                permissions=nearest(plan.permissions, platform_permissions(plan.platform)),
            )
            end = await run_once(
                plan.files,
                lambda: Command(invocation.argv, plan.workdir, stdin=invocation.stdin),
                timeout_minutes=TURN_TIMEOUT_MINUTES,
            )
        except (Refused, LaunchError) as error:
            return await asyncio.to_thread(partial(self.finish, plan, FAILED, error=str(error)))
        return await asyncio.to_thread(self.record_turn, plan, platform, end)

    @activity.defn
    def fail_delivery(self, failure: DeliveryFailure) -> None:
        """Record a message whose delivery kept failing as failed (recallable), with a
        notification, so the messages behind it can go."""
        message_id = failure.message_id
        with self._store.transaction() as rows:
            message = _message(rows, message_id)
            if message is None or message["status"] not in UNDELIVERED_STATUSES:
                return
            error = f"delivery kept failing: {failure.error}"
            _update_message(rows, message_id, status=FAILED, error=error)
            notify(
                rows, DELIVERY_FAILED, f"{message_id}: {error}", message["session_id"], message_id
            )

    def begin_delivery(self, message_id: str) -> TurnPlan | DeliveryOutcome:
        """Start (or resume) an attempt: a plan, or the outcome if there is nothing to run.

        A new attempt needs a live session; an attempt already ``delivering`` (its worker
        was lost) goes on regardless, since its turn may already be running.
        """
        with self._store.transaction() as rows:
            message = _message(rows, message_id)
            if message is None or message["status"] not in UNDELIVERED_STATUSES:
                status = cast(DeliveryStatus, message["status"]) if message else FAILED
                return DeliveryOutcome(status=status)
            target = _session(rows, message["session_id"])
            attempts = message["attempts"]
            if message["status"] != "delivering":
                if target is None or target["status"] != LIVE:
                    why = "no longer exists" if target is None else "was closed"
                    error = f"session {message['session_id']} {why} before delivery"
                    _update_message(rows, message_id, status=SESSION_NOT_FOUND, error=error)
                    notify(
                        rows,
                        SESSION_NOT_FOUND,
                        f"{message_id}: {error}; {KEPT}",
                        message["session_id"],
                        message_id,
                    )
                    return DeliveryOutcome(status="session_not_found")
                attempts += 1
                _update_message(
                    rows, message_id, attempts=attempts, status="delivering", retry_at=None
                )
            assert target is not None
            files = ProcessFiles(session_path(target["id"], "turns", f"{message_id}-{attempts}"))
            _update_message(rows, message_id, log_path=str(files.output))
            return TurnPlan(
                message_id=message_id,
                session_id=target["id"],
                platform=target["platform"],
                workdir=target["workdir"],
                prompt=message["prompt"],
                resume_conversation_id=target["harness_conversation_id"],
                permissions=stored_permissions(target["permissions"]),
                files=files,
            )

    def record_turn(self, plan: TurnPlan, platform: Platform, end: ProcessEnd) -> DeliveryOutcome:
        """Read what the turn printed and record the delivery (or the wait, or the failure)."""
        output = plan.files.output.read_text(errors="replace") if plan.files.output.exists() else ""
        if end.exit_code is None:
            return self.finish(
                plan, FAILED, error=f"the turn {end.problem}" if end.timed_out else end.problem
            )
        if end.exit_code != 0:
            now = utcnow()
            limit = platform.usage_limit(output, now)
            if limit is not None:
                wait = limit_wait(limit, now)
                conversation = _conversation_id(platform, output)
                return self.wait_for_limit(plan, wait.retry_at, wait.reason, conversation)
            error = f"the turn exited with code {end.exit_code}"
            return self.finish(plan, FAILED, error=error, output=output, platform=platform)
        return self.finish(plan, DELIVERED, output=output, platform=platform)

    def wait_for_limit(
        self, plan: TurnPlan, retry_at: datetime, reason: str, conversation: str | None
    ) -> DeliveryOutcome:
        """The harness hit a usage limit: the same message is tried again at ``retry_at``,
        resuming the conversation the limited turn opened, if it opened one."""
        with self._store.transaction() as rows:
            _update_message(
                rows, plan.message_id, status="waiting", retry_at=retry_at, error=reason
            )
            if conversation is not None:
                rows(
                    "UPDATE sessions SET harness_conversation_id = :conversation WHERE id = :id",
                    {"conversation": conversation, "id": plan.session_id},
                )
        return DeliveryOutcome(status="waiting", retry_at=retry_at)

    def finish(
        self,
        plan: TurnPlan,
        status: DeliveryStatus,
        *,
        error: str | None = None,
        output: str = "",
        platform: Platform | None = None,
    ) -> DeliveryOutcome:
        """Append the turn to the transcript and write the delivery record."""
        conversation = _conversation_id(platform, output) if platform is not None else None
        reply = platform.reply_text(output) if platform is not None and output else None
        now = utcnow()
        with self._store.transaction() as rows:
            target = _session(rows, plan.session_id)
            assert target is not None  # sessions are never deleted
            if conversation is not None:
                target["harness_conversation_id"] = conversation
            rows(
                "UPDATE sessions SET harness_conversation_id = :conversation, updated_at = :now"
                " WHERE id = :id",
                {"conversation": target["harness_conversation_id"], "now": now, "id": target["id"]},
            )
            delivered = {"delivered_session_id": target["id"], "delivered_at": now}
            _update_message(
                rows,
                plan.message_id,
                status=status,
                error=error,
                reply=reply,
                **(delivered if status == DELIVERED else {}),
            )
            if status != DELIVERED:
                notify(
                    rows,
                    DELIVERY_FAILED,
                    f"{plan.message_id} to session {target['id']}: {error}",
                    target["id"],
                    plan.message_id,
                )
            message = find_message(rows, plan.message_id)
            assert message is not None  # it was just updated
            append_turn(
                Path(target["transcript_path"]), _transcript_entry(message, target, reply, now)
            )
        return DeliveryOutcome(status=status)


def _conversation_id(platform: Platform, output: str) -> str | None:
    """The harness conversation the turn ran in (the latest id the output announced)."""
    found = None
    for line in output.splitlines():
        found = platform.session_id_from_line(line) or found
    return found


def _transcript_entry(message: Row, target: Row, reply: str | None, at: datetime) -> dict[str, Any]:
    """A turn as the transcript keeps it: the message (:func:`message_json`) and the
    session it went to."""
    return {
        "message_id": message["id"],
        "at": to_iso(at),
        "status": message["status"],
        "session_id": target["id"],
        "harness_conversation_id": target["harness_conversation_id"],
        "provenance": message["provenance"],
        "prompt": message["prompt"],
        "reply": reply,
        "error": message["error"],
        "log_path": message["delivery"]["log_path"],
    }


def _message(rows: Rows, message_id: str) -> Row | None:
    """The delivery fields of a message, or ``None``."""
    found = rows(
        "SELECT id, session_id, status, attempts, prompt FROM messages WHERE id = :id",
        {"id": message_id},
    )
    return found[0] if found else None


def _session(rows: Rows, session_id: str | None) -> Row | None:
    """The session fields a turn needs, or ``None`` (no such session, or no id)."""
    found = rows(
        "SELECT id, status, platform, workdir, harness_conversation_id, permissions,"
        " transcript_path FROM sessions WHERE id = :id",
        {"id": session_id or ""},
    )
    return found[0] if found else None


_MESSAGE_FIELDS = frozenset(
    {"status", "error", "reply", "attempts", "retry_at", "log_path"}
    | {"delivered_session_id", "delivered_at"}
)
"""The fields of a message delivery writes."""


def _update_message(rows: Rows, message_id: str, **fields: Any) -> None:
    """Write ``fields`` (of :data:`_MESSAGE_FIELDS`) of the message."""
    assert fields.keys() <= _MESSAGE_FIELDS, fields
    assigned = ", ".join(f"{name} = :{name}" for name in fields)
    rows(f"UPDATE messages SET {assigned} WHERE id = :id", {**fields, "id": message_id})
