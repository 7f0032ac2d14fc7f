"""SessionDelivery: one session's queued messages, delivered one at a time, in order.

Woken by a ``wake`` signal (sent with start by whoever enqueues a message, and by the
daemon's sweep, at start-up and every minute, for messages no workflow is delivering).
The next message is read from the store each time, so the store's order is the delivery
order and a message enqueued while no workflow ran is never skipped. When nothing is left
the workflow ends; the next message starts it again. A usage limit waits on a durable
timer and retries the same message.
"""

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from canopy.activities.delivery import DeliveryActivities
    from canopy.contracts.session_delivery import (
        SESSION_DELIVERY_WORKFLOW,
        SIGNAL_WAKE,
        DeliveryFailure,
        DeliveryOutcome,
        MessageRef,
        NextMessage,
        SessionDeliveryInput,
        SessionRef,
    )
    from canopy.workflows.timeouts import BOOKKEEPING_TIMEOUT

TURN_TIMEOUT = timedelta(hours=24)
"""Activity deadline of one turn; the turn's own limit is enforced inside the activity."""
TURN_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=10,
)
"""Retries cover lost workers: a retried delivery adopts the turn already running."""
TYPED_DELIVERY_FAILURE = "typed-delivery-failure"
"""The patch from ``give_up_message(message_id, error)`` to ``fail_delivery(DeliveryFailure)``,
deprecated: a run that gave a message up since recorded its marker, which replay must
still meet (see :meth:`SessionDelivery._give_up`)."""
MESSAGES_PER_EXECUTION = 50
"""Continue as new after this many deliveries, keeping each history small."""


@workflow.defn(name=SESSION_DELIVERY_WORKFLOW)
class SessionDelivery:
    """Delivers a session's messages until none is left."""

    def __init__(self) -> None:
        self._woken = False

    @workflow.signal(name=SIGNAL_WAKE)
    def wake(self) -> None:
        """A message may have been enqueued: look again before finishing."""
        self._woken = True

    @workflow.run
    async def run(self, start: SessionDeliveryInput) -> int:
        """Deliver until the session has nothing queued; the number delivered."""
        handled = 0
        while True:
            self._woken = False
            upcoming: NextMessage | None = await workflow.execute_activity_method(
                DeliveryActivities.next_message,
                SessionRef(session_id=start.session_id),
                start_to_close_timeout=BOOKKEEPING_TIMEOUT,
            )
            if upcoming is None:
                if self._woken:
                    continue
                return handled
            await self._deliver(start, upcoming)
            handled += 1
            if handled >= MESSAGES_PER_EXECUTION or workflow.info().is_continue_as_new_suggested():
                workflow.continue_as_new(start)

    async def _deliver(self, start: SessionDeliveryInput, upcoming: NextMessage) -> None:
        """Deliver one message, waiting out usage limits (from ``retry_at`` when one held
        it already); a delivery that keeps failing is recorded as failed (recallable) so
        the messages behind it still go."""
        message_id, retry_at = upcoming.message_id, upcoming.retry_at
        while True:
            if retry_at is not None:
                workflow.set_current_details(
                    f"{message_id} waits for a usage limit until {retry_at.isoformat()}"
                )
                await workflow.sleep(max(retry_at - workflow.now(), timedelta(seconds=1)))
            workflow.set_current_details(f"delivering {message_id}")
            try:
                outcome: DeliveryOutcome = await workflow.execute_activity_method(
                    DeliveryActivities.deliver_message,
                    MessageRef(message_id=message_id),
                    task_queue=upcoming.agents_task_queue,
                    start_to_close_timeout=TURN_TIMEOUT,
                    heartbeat_timeout=timedelta(seconds=start.heartbeat_timeout_seconds),
                    retry_policy=TURN_RETRY,
                    summary=f"deliver {message_id}",
                )
            except ActivityError as error:
                await self._give_up(message_id, str(error.cause or error))
                return
            if outcome.status != "waiting" or outcome.retry_at is None:
                return
            retry_at = outcome.retry_at

    async def _give_up(self, message_id: str, error: str) -> None:
        """Record the message as failed.

        The patch marker stays deprecated, not removed, while a run that gave a message up
        under ``workflow.patched`` may be open: its history holds the marker, and replay
        fails on a marker the code no longer asks for. A run that gave one up before the
        patch (``give_up_message``) no longer replays: Canopy had no release then.
        """
        workflow.deprecate_patch(TYPED_DELIVERY_FAILURE)
        await workflow.execute_activity_method(
            DeliveryActivities.fail_delivery,
            DeliveryFailure(message_id=message_id, error=error),
            start_to_close_timeout=BOOKKEEPING_TIMEOUT,
        )
