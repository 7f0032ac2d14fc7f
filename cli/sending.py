"""The bodies of ``canopy session send`` and ``session resume``, the session commands that
send work to the daemon, imported when one runs (:mod:`canopy.cli.session_cmds`).

Each runs in two steps because nothing a user entered may be lost: the store step
(:func:`store_message`, or the resume operation) checks the command and writes, and only
once that is committed does the second (:func:`deliver`, :func:`wake_resumed`) load
asyncio and, if there is a message to hand over, the Temporal SDK to wake the session's
delivery. A refused command costs no more than the store read; a message whose daemon
cannot be reached stays queued and says so (see docs/sessions.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from canopy.cli.render import emit
from canopy.cli.session_views import show_message, show_session
from canopy.limits import WAIT_SECONDS, check_range
from canopy.ops.sessions import session_send

if TYPE_CHECKING:
    from canopy.store.engine import Store


def store_message(store: Store, session: str, prompt: str, wait: float | None) -> dict[str, Any]:
    """Check ``--wait`` (a refused one must not leave a message behind), then queue the
    prompt; the stored message, committed."""
    if wait is not None:
        check_range(wait, WAIT_SECONDS, "--wait")
    return session_send(store, session, prompt)


def deliver(store: Store, message: dict[str, Any], wait: float | None, as_json: bool) -> None:
    """Wake the session's delivery for a committed message, wait up to ``wait`` seconds for
    it to leave the queue if asked, and print it."""
    import asyncio

    from canopy.ops.session_wake import hand_over, wait_for_delivery

    result = asyncio.run(hand_over(message, message["session_id"]))
    if wait is not None and "warning" not in result:  # no daemon has it: nothing to wait for
        result = asyncio.run(wait_for_delivery(store, result["id"], wait))
    emit(result, as_json, lambda: show_message(result))


def wake_resumed(resumed: dict[str, Any], as_json: bool) -> None:
    """Hand the daemon the messages still queued for a committed resume, and print it."""
    import asyncio

    from canopy.ops import session_wake

    result = asyncio.run(session_wake.wake_resumed(resumed))
    emit(result, as_json, lambda: show_session(result))
