"""Delivering a session's messages (DESIGN §8): one resume-with-prompt turn per message.

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

from sqlalchemy import select
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
from canopy.ops.sessions import LIVE, SESSION_NOT_FOUND, message_json
from canopy.paths import session_path
from canopy.permissions import Permissions, nearest, stored_permissions
from canopy.platforms import Platform, get_platform, limit_wait, platform_permissions
from canopy.sessions.transcripts import append_turn
from canopy.store.engine import Store
from canopy.store.models import InteractiveSession, Message
from canopy.store.queries import UNDELIVERED_STATUSES
from canopy.temporal import client as temporal_client
from canopy.timefmt import as_utc, to_iso, utcnow

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
        with self._store.transaction() as db:
            found = db.execute(
                select(Message.id, Message.retry_at, InteractiveSession.host)
                .join(InteractiveSession, InteractiveSession.id == Message.session_id)
                .where(
                    Message.session_id == session.session_id,
                    Message.status.in_(UNDELIVERED_STATUSES),
                )
                .order_by(Message.seq)
                .limit(1)
            ).first()
        if found is None:
            return None
        message_id, retry_at, host = found
        return NextMessage(
            message_id=message_id,
            agents_task_queue=temporal_client.agents_task_queue(host),
            retry_at=as_utc(retry_at) if retry_at else None,
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
        with self._store.transaction() as db:
            message = db.scalar(select(Message).where(Message.id == message_id))
            if message is None or message.status not in UNDELIVERED_STATUSES:
                return
            message.status, message.error = FAILED, f"delivery kept failing: {failure.error}"
            notify(
                db,
                DELIVERY_FAILED,
                f"{message_id}: {message.error}",
                message.session_id,
                message_id,
            )

    def begin_delivery(self, message_id: str) -> TurnPlan | DeliveryOutcome:
        """Start (or resume) an attempt: a plan, or the outcome if there is nothing to run.

        A new attempt needs a live session; an attempt already ``delivering`` (its worker
        was lost) goes on regardless, since its turn may already be running.
        """
        with self._store.transaction() as db:
            message = db.scalar(select(Message).where(Message.id == message_id))
            if message is None or message.status not in UNDELIVERED_STATUSES:
                status = cast(DeliveryStatus, message.status) if message else FAILED
                return DeliveryOutcome(status=status)
            target = db.get(InteractiveSession, message.session_id or "")
            if message.status != "delivering":
                if target is None or target.status != LIVE:
                    why = "no longer exists" if target is None else "was closed"
                    message.status = SESSION_NOT_FOUND
                    message.error = f"session {message.session_id} {why} before delivery"
                    notify(
                        db,
                        SESSION_NOT_FOUND,
                        f"{message_id}: {message.error}; {KEPT}",
                        message.session_id,
                        message_id,
                    )
                    return DeliveryOutcome(status="session_not_found")
                message.attempts += 1
                message.status, message.retry_at = "delivering", None
            assert target is not None
            files = ProcessFiles(
                session_path(target.id, "turns", f"{message.id}-{message.attempts}")
            )
            message.log_path = str(files.output)
            return TurnPlan(
                message_id=message.id,
                session_id=target.id,
                platform=target.platform,
                workdir=target.workdir,
                prompt=message.prompt,
                resume_conversation_id=target.harness_conversation_id,
                permissions=stored_permissions(target.permissions),
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
        with self._store.transaction() as db:
            message = db.scalars(select(Message).where(Message.id == plan.message_id)).one()
            message.status, message.retry_at, message.error = "waiting", retry_at, reason
            if conversation is not None:
                db.get_one(
                    InteractiveSession, plan.session_id
                ).harness_conversation_id = conversation
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
        with self._store.transaction() as db:
            message = db.scalars(select(Message).where(Message.id == plan.message_id)).one()
            target = db.get_one(InteractiveSession, plan.session_id)
            if conversation is not None:
                target.harness_conversation_id = conversation
            target.updated_at = now
            message.status, message.error, message.reply = status, error, reply
            if status == DELIVERED:
                message.delivered_session_id, message.delivered_at = target.id, now
            else:
                notify(
                    db,
                    DELIVERY_FAILED,
                    f"{message.id} to session {target.id}: {error}",
                    target.id,
                    message.id,
                )
            append_turn(
                Path(target.transcript_path), _transcript_entry(message, target, reply, now)
            )
        return DeliveryOutcome(status=status)


def _conversation_id(platform: Platform, output: str) -> str | None:
    """The harness conversation the turn ran in (the latest id the output announced)."""
    found = None
    for line in output.splitlines():
        found = platform.session_id_from_line(line) or found
    return found


def _transcript_entry(
    message: Message, target: InteractiveSession, reply: str | None, at: datetime
) -> dict[str, Any]:
    shaped = message_json(message)
    return {
        "message_id": message.id,
        "at": to_iso(at),
        "status": message.status,
        "session_id": target.id,
        "harness_conversation_id": target.harness_conversation_id,
        "provenance": shaped["provenance"],
        "prompt": message.prompt,
        "reply": reply,
        "error": message.error,
        "log_path": message.log_path,
    }
