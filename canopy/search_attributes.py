"""The custom search attributes Canopy sets on its workflows, for list filters in the
Temporal UI and CLI (``CanopyGraphId = '…'``, ``CanopyStatus = 'paused'``). The embedded
server registers them at start; on any other server ``canopy up`` registers the missing
ones, or names the command that does where it may not (Temporal Cloud)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from temporalio.client import Client

SEARCH_ATTRIBUTE_GRAPH_ID = "CanopyGraphId"
SEARCH_ATTRIBUTE_GRAPH_NAME = "CanopyGraphName"
SEARCH_ATTRIBUTE_QUEUE_ID = "CanopyQueueId"
SEARCH_ATTRIBUTE_STATUS = "CanopyStatus"
"""Where a graph run stands, kept current by the run: ``running``, ``paused``,
``usage_limit`` (waiting for a limit to reset), ``completed``, ``failed`` or ``reset``."""
SEARCH_ATTRIBUTE_BLOCKER = "CanopyBlocker"
"""The kind of the blocker of a paused or failed run (``dirty_tree``, ``paused``,
``stopped``, ``budget``, ``spec_failed``, ``queue_failed``); unset while the run moves."""
SEARCH_ATTRIBUTES: dict[str, str] = {
    SEARCH_ATTRIBUTE_GRAPH_ID: "Keyword",
    SEARCH_ATTRIBUTE_GRAPH_NAME: "Keyword",
    SEARCH_ATTRIBUTE_QUEUE_ID: "Keyword",
    SEARCH_ATTRIBUTE_STATUS: "Keyword",
    SEARCH_ATTRIBUTE_BLOCKER: "Keyword",
}
"""Each attribute's Temporal type, as registered on the server."""


async def missing(client: Client) -> list[str]:
    """Canopy's search attributes the client's namespace does not have."""
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest

    response = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    known = set(response.custom_attributes) | set(response.system_attributes)
    return [name for name in SEARCH_ATTRIBUTES if name not in known]


async def register_missing(client: Client) -> str | None:
    """Register Canopy's missing search attributes on the client's namespace; ``None``
    when all are there, else one line saying what was done, or which command does it
    where this client may not (Temporal Cloud registers them through ``tcld``)."""
    from temporalio.api.enums.v1 import IndexedValueType
    from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
    from temporalio.service import RPCError

    absent = await missing(client)
    if not absent:
        return None
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=client.namespace,
                search_attributes={
                    name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for name in absent
                },
            )
        )
    except RPCError as error:
        names = " ".join(f"--name {name}" for name in absent)
        command = (
            f"temporal operator search-attribute create --namespace "
            f"{shlex.quote(client.namespace)} {names} --type Keyword"
        )
        return (
            f"search attributes {', '.join(absent)} are missing and could not be registered "
            f"({error.message}); register them: {command} (Temporal Cloud: tcld namespace "
            "search-attributes add)"
        )
    return f"registered search attributes {', '.join(absent)}"
