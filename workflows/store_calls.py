"""A graph run's calls to the store: local activities in the workflow's own worker.

Each runs within the workflow task that makes it and is recorded as one marker event,
with no task round trip (which is why the run's worker registers them, beside it on the
agents queue). Retried until the store answers.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from canopy.workflows.timeouts import BOOKKEEPING_TIMEOUT

Request = TypeVar("Request", bound=BaseModel)
Answer = TypeVar("Answer")


async def store(call: Callable[[Any, Request], Answer], request: Request) -> Answer:
    """What ``call`` (a method of :class:`~canopy.activities.run_state.RunControl` or
    :class:`~canopy.activities.bookkeeping.RunRecords`) answers to ``request``."""
    return await workflow.execute_local_activity_method(
        call,
        request,
        start_to_close_timeout=BOOKKEEPING_TIMEOUT,
        summary=f"store: {call.__name__}",
    )
