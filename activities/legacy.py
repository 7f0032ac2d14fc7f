"""The activity ``SessionDelivery`` called before its failures took a model.

A ``SessionDelivery`` started before the ``typed-delivery-failure`` patch recorded a
delivery that kept failing as ``give_up_message(message_id, error)``, two positional
arguments; its history (and an activity task scheduled when a worker stopped) still
carries that call. So it keeps its name and parameters, and only unpacks them into
:class:`~canopy.contracts.session_delivery.DeliveryFailure`. It goes once no such run is
left.
"""

from temporalio import activity

from canopy.activities.delivery import DeliveryActivities
from canopy.contracts.session_delivery import DeliveryFailure
from canopy.store.engine import Store


class LegacyDelivery:
    """The delivery failure record as ``SessionDelivery`` called it before it sent a
    :class:`DeliveryFailure` (``give_up_message``, two positional arguments)."""

    def __init__(self, store: Store) -> None:
        self._delivery = DeliveryActivities(store)

    @activity.defn
    def give_up_message(self, message_id: str, error: str) -> None:
        """:meth:`DeliveryActivities.fail_delivery`."""
        self._delivery.fail_delivery(DeliveryFailure(message_id=message_id, error=error))
