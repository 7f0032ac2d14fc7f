"""Activity inputs: one model per activity, and the bare values older code sent.

Runs in flight across an upgrade reach activities with the payloads their code sent: an
activity task scheduled before an activity took a model carries the bare value it took
then.
"""

import inspect
from pathlib import Path

import pytest
from pydantic import BaseModel
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter

from canopy.activities.delivery import DeliveryActivities
from canopy.contracts.graph_run import HooksFired, WorkdirRef
from canopy.contracts.session_delivery import DeliveryFailure, MessageRef, SessionRef
from canopy.ops import notifications, sessions
from canopy.store.engine import Store
from canopy.worker import activities


def test_every_activity_takes_at_most_one_model(store: Store) -> None:
    hosted = activities(store)
    for activity in [*hosted.main, *hosted.agents, *hosted.host_local]:
        parameters = list(inspect.signature(activity, eval_str=True).parameters.values())
        assert len(parameters) <= 1, activity
        for parameter in parameters:
            assert issubclass(parameter.annotation, BaseModel), activity


@pytest.mark.parametrize(
    ("model", "bare", "expected"),
    [
        (SessionRef, "ses-1", SessionRef(session_id="ses-1")),
        (MessageRef, "msg-1", MessageRef(message_id="msg-1")),
        (WorkdirRef, "/src/app", WorkdirRef(workdir="/src/app")),
        (HooksFired, [3, 4], HooksFired(hook_run_ids=[3, 4])),  # a recorded result
    ],
)
def test_a_value_recorded_bare_still_decodes(
    model: type[BaseModel], bare: str | list[int], expected: BaseModel
) -> None:
    converter = pydantic_data_converter.payload_converter
    (old_payload,) = converter.to_payloads([bare])
    assert converter.from_payloads([old_payload], [model]) == [expected]
    (new_payload,) = converter.to_payloads([expected])
    assert isinstance(new_payload, Payload)
    assert converter.from_payloads([new_payload], [model]) == [expected]


def test_a_delivery_given_up_is_failed_recallable_and_notified(
    store: Store, tmp_path: Path
) -> None:
    session = sessions.session_new(store, "claude", workdir=str(tmp_path))
    message = sessions.session_send(store, session["id"], "hello")
    DeliveryActivities(store).fail_delivery(DeliveryFailure(message_id=message["id"], error="boom"))
    failed = sessions.message_get(store, message["id"])
    assert (failed["status"], failed["error"]) == ("failed", "delivery kept failing: boom")
    (notice,) = notifications.notifications_list(store)["notifications"]
    assert (notice["kind"], notice["message_id"]) == ("delivery_failed", message["id"])
