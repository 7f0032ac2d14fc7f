"""Handing queued messages to the daemon: signal-with-start of a session's delivery workflow.

Whoever enqueues a message (``session send``, an interactive hook) wakes the session's
workflow. The daemon also sweeps: at start and then every minute it wakes each session
that has undelivered messages but no delivery workflow running, so a message queued while
Temporal was unreachable still goes out on the next tick. temporalio is imported lazily,
as in :mod:`canopy.temporal.client`, and the workflow's contract (pydantic) only to wake
one: the CLI stores a message or resumes a session and then hands over from here.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from canopy.errors import Refused
from canopy.ops.sessions import message_get, session_resume_either, session_send
from canopy.ops.tuning import run_tuning
from canopy.store.queries import UNDELIVERED_STATUSES, bound_list
from canopy.temporal import client as temporal_client

if TYPE_CHECKING:
    from temporalio.client import Client

    from canopy.store.engine import Store

POLL_SECONDS = 0.2


async def wake_session(client: Client, session_id: str) -> None:
    """Start the session's delivery workflow, or signal it if it is already running."""
    from canopy.contracts.session_delivery import (
        SESSION_DELIVERY_WORKFLOW,
        SIGNAL_WAKE,
        SessionDeliveryInput,
        session_workflow_id,
    )

    start = SessionDeliveryInput(
        session_id=session_id,
        **{k: v for k, v in run_tuning().items() if k == "heartbeat_timeout_seconds"},
    )
    await client.start_workflow(
        SESSION_DELIVERY_WORKFLOW,
        start,
        id=session_workflow_id(session_id),
        task_queue=temporal_client.MAIN_TASK_QUEUE,
        start_signal=SIGNAL_WAKE,
        static_summary=f"messages of session {session_id}",
    )


async def wake_stalled_sessions(client: Client, store: Store) -> list[str]:
    """Wake each session with undelivered messages whose delivery workflow is not running
    (a running one reads the store itself, so it is left alone); their ids."""
    undelivered, params = bound_list("undelivered", UNDELIVERED_STATUSES)
    with store.transaction() as rows:
        found = rows(
            "SELECT DISTINCT session_id FROM messages"
            f" WHERE status IN {undelivered} AND session_id IS NOT NULL",
            params,
        )
    session_ids = [str(row["session_id"]) for row in found]
    woken = []
    for session_id in session_ids:
        if not await _delivering(client, session_id):
            await wake_session(client, session_id)
            woken.append(session_id)
    return woken


async def _delivering(client: Client, session_id: str) -> bool:
    """Whether the session's delivery workflow is running."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError, RPCStatusCode

    from canopy.contracts.session_delivery import session_workflow_id

    handle = client.get_workflow_handle(session_workflow_id(session_id))
    try:
        description = await handle.describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return description.status == WorkflowExecutionStatus.RUNNING


async def send_message(store: Store, ref: str, prompt: str) -> dict[str, Any]:
    """``session send``: store the message, then hand it to the daemon.

    The message is stored first; if Temporal cannot be reached it stays queued (a
    ``warning`` says so) and goes out when the daemon next starts.
    """
    message = session_send(store, ref, prompt)
    return await hand_over(message, message["session_id"])


async def resume_session(
    store: Store,
    ref: str | None,
    conversation_id: str | None,
    platform: str | None,
    workdir: str | None,
) -> dict[str, Any]:
    """``session resume``: reopen the session, then hand the daemon any messages still
    queued for it from before it was closed."""
    return await wake_resumed(session_resume_either(store, ref, conversation_id, platform, workdir))


async def wake_resumed(resumed: dict[str, Any]) -> dict[str, Any]:
    """A committed resume's answer, after handing the daemon the messages still queued for
    the session (nothing to do when none are)."""
    if not resumed["queued_messages"]:
        return resumed
    return await hand_over(resumed, resumed["id"])


async def hand_over(answer: dict[str, Any], session_id: str) -> dict[str, Any]:
    """``answer``, after waking the session's delivery; with a ``warning`` if Temporal
    could not be reached (the messages stay queued until the daemon next starts).

    The messages must be committed first: a woken workflow reads them from the store.
    """
    try:
        await wake_session(await temporal_client.connect(), session_id)
    except Refused as unreachable:
        return {
            **answer,
            "warning": (
                f"stored as queued, but not handed to the daemon yet ({unreachable}); it is "
                "delivered when the worker starts"
            ),
        }
    return answer


async def wait_for_delivery(store: Store, message_id: str, timeout: float) -> dict[str, Any]:
    """Wait until the message has left the queue (delivered or not); refuse on timeout.

    Each poll must read the latest commit: on a :class:`Store` each is a transaction of
    its own, so it reads what the delivery committed last.
    """
    deadline = time.monotonic() + timeout
    while True:
        message = message_get(store, message_id)
        if message["status"] not in UNDELIVERED_STATUSES:
            return message
        if time.monotonic() >= deadline:
            raise Refused(f"message {message_id} is still {message['status']} after {timeout:g} s")
        await asyncio.sleep(POLL_SECONDS)
