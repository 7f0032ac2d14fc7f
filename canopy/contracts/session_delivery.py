"""The SessionDelivery workflow's contract: type name, wake signal and payloads.

Ids and outcomes only: prompts and replies stay in the store and the transcript.
"""

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from canopy.contracts.inputs import BareValueAccepted

DeliveryStatus = Literal["delivered", "failed", "session_not_found", "waiting"]
SIGNAL_WAKE = "wake"
"""Signal (with start) to a session's delivery workflow: a message may be waiting."""
SESSION_DELIVERY_WORKFLOW = "SessionDelivery"


def session_workflow_id(session_id: str) -> str:
    """The delivery workflow of one session (at most one runs per session)."""
    return f"session-delivery-{session_id}"


class SessionDeliveryInput(BaseModel):
    """Everything a session's delivery workflow needs (also across continue-as-new)."""

    session_id: str
    heartbeat_timeout_seconds: int = 30


class NextMessage(BaseModel):
    """The next message to deliver; ``retry_at`` when a usage limit holds it until then.

    ``agents_task_queue`` is that of the session's host, where its workdir is: whoever
    woke the workflow, the turn runs there.
    """

    message_id: str
    agents_task_queue: str
    retry_at: datetime | None = None


class DeliveryOutcome(BaseModel):
    """How one delivery attempt ended; ``waiting`` comes with the time to try again."""

    status: DeliveryStatus
    retry_at: datetime | None = None


class SessionRef(BareValueAccepted):
    """The session whose next message is asked for."""

    session_id: str


class MessageRef(BareValueAccepted):
    """The message to deliver."""

    message_id: str


class DeliveryFailure(BaseModel):
    """A message whose delivery kept failing, and the last error."""

    message_id: str
    error: str
